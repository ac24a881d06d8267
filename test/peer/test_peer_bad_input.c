/*
 * FI_PEER opens with a malformed peer context: a NULL context, a size field
 * smaller than the context struct, or a NULL object pointer must give
 * -FI_EINVAL and open nothing (the domain and fabric then close with 0).
 * For each object a well-formed context is accepted, so that the rejections
 * are about the malformed field and not about FI_PEER as a whole.  The
 * rejections are xshm's own care (fi_peer(3) asks the owner for well-formed
 * contexts): other peers run the control cases only.  In the UPSTREAM style
 * the owner's fi_ops_srx_peer holds its own callbacks, which must stay.
 */
#include "peer_common.h"

#include <stdlib.h>
#include <string.h>

enum obj { O_CQ, O_CNTR, O_SRX, O_AV, O_DOMAIN, O_EQ, NOBJ };
enum bad { B_NONE, B_NULL_CONTEXT, B_SMALL_SIZE, B_NULL_OBJECT, NBAD };

static const char *obj_name[NOBJ] = {
	"fi_cq_open", "fi_cntr_open", "fi_srx_context", "fi_av_open", "fi_domain2",
	"fi_eq_open",
};
static const char *bad_name[NBAD] = {
	"a well-formed context", "a NULL context", "a context whose size is too small",
	"a NULL object pointer",
};

/* Peer objects whose callbacks must not be called: they count. */
static int calls;

static ssize_t cq_write(struct fid_peer_cq *cq, void *context, uint64_t flags, size_t len,
			void *buf, uint64_t data, uint64_t tag, fi_addr_t src)
{
	calls++;
	return 0;
}

static ssize_t cq_writeerr(struct fid_peer_cq *cq, const struct fi_cq_err_entry *e)
{
	calls++;
	return 0;
}

static void cntr_inc(struct fid_peer_cntr *c)
{
	calls++;
}

static int srx_get_msg(struct fid_peer_srx *srx, fi_addr_t addr, size_t size,
		       struct fi_peer_rx_entry **entry)
{
	calls++;
	return -FI_ENOMEM;
}

static int srx_get_tag(struct fid_peer_srx *srx, fi_addr_t addr, size_t size, uint64_t tag,
		       struct fi_peer_rx_entry **entry)
{
	calls++;
	return -FI_ENOMEM;
}

static int srx_queue(struct fi_peer_rx_entry *entry)
{
	calls++;
	return -FI_EINVAL;
}

static void srx_foreach(struct fid_peer_srx *srx,
			fi_addr_t (*get_addr)(struct fi_peer_rx_entry *))
{
	calls++;
}

static void srx_free(struct fi_peer_rx_entry *entry)
{
	calls++;
}

/* UPSTREAM: the owner's own start/discard, which the peer must leave alone. */
static int srx_own(struct fi_peer_rx_entry *entry)
{
	calls++;
	return -FI_EINVAL;
}

static int av_query(struct fid_peer_av *av, struct fi_av_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->type = FI_AV_TABLE;
	attr->count = 16;
	return 0;
}

static fi_addr_t av_ep_addr(struct fid_peer_av *av, struct fid_ep *ep)
{
	return FI_ADDR_NOTAVAIL;
}

static struct fi_ops_cq_owner cq_ops = { sizeof(cq_ops), cq_write, cq_writeerr };
static struct fid_peer_cq peer_cq = { .fid.fclass = FI_CLASS_PEER_CQ, .owner_ops = &cq_ops };
static struct fi_ops_cntr_owner cntr_ops = { sizeof(cntr_ops), cntr_inc, cntr_inc };
static struct fid_peer_cntr peer_cntr = { .fid.fclass = FI_CLASS_CNTR, .owner_ops = &cntr_ops };
static struct fi_ops_srx_owner srx_ops = {
	sizeof(srx_ops), srx_get_msg, srx_get_tag, srx_queue, srx_queue, srx_foreach, srx_free,
};
static struct fi_ops_srx_peer srx_peer_ops = { .size = sizeof(srx_peer_ops) };
static struct fid_peer_srx peer_srx = {
	.ep_fid.fid.fclass = FI_CLASS_PEER_SRX, .owner_ops = &srx_ops, .peer_ops = &srx_peer_ops,
};
static struct fi_ops_av_owner av_ops = { sizeof(av_ops), av_query, av_ep_addr };
static struct fid_peer_av peer_av = { .fid.fclass = FI_CLASS_PEER_AV, .owner_ops = &av_ops };
static struct fid_domain owner_domain = { .fid.fclass = FI_CLASS_DOMAIN };
static struct fid_eq owner_eq = { .fid.fclass = FI_CLASS_EQ };

/* The peer context for obj, spoiled as bad says; NULL for B_NULL_CONTEXT. */
static void *make_context(enum obj obj, enum bad bad, void *storage)
{
	/* Every context is { size_t size; pointer }: the size field alone is too small. */
	size_t small = sizeof(size_t);
	bool null_obj = bad == B_NULL_OBJECT;

	if (bad == B_NULL_CONTEXT)
		return NULL;
	switch (obj) {
	case O_CQ:
		*(struct fi_peer_cq_context *)storage = (struct fi_peer_cq_context){
			sizeof(struct fi_peer_cq_context), null_obj ? NULL : &peer_cq };
		break;
	case O_CNTR:
		*(struct fi_peer_cntr_context *)storage = (struct fi_peer_cntr_context){
			sizeof(struct fi_peer_cntr_context), null_obj ? NULL : &peer_cntr };
		break;
	case O_SRX:
		*(struct fi_peer_srx_context *)storage = (struct fi_peer_srx_context){
			sizeof(struct fi_peer_srx_context), null_obj ? NULL : &peer_srx };
		break;
	case O_AV:
		*(struct fi_peer_av_context *)storage = (struct fi_peer_av_context){
			sizeof(struct fi_peer_av_context), null_obj ? NULL : &peer_av };
		break;
	case O_DOMAIN:
		*(struct fi_peer_domain_context *)storage = (struct fi_peer_domain_context){
			sizeof(struct fi_peer_domain_context), null_obj ? NULL : &owner_domain };
		break;
	default:
		*(struct fi_peer_eq_context *)storage = (struct fi_peer_eq_context){
			sizeof(struct fi_peer_eq_context), null_obj ? NULL : &owner_eq };
	}
	if (bad == B_SMALL_SIZE)
		*(size_t *)storage = small;
	return storage;
}

/* SPEC: fi_srx_context succeeded but gave no fid to bind. */
static bool returned_no_fid;

/* Opens obj with FI_PEER and ctx; on success *out is the opened fid. */
static int open_peer(enum obj obj, struct fid_fabric *fabric, struct fid_domain *domain,
		     struct fi_info *info, void *ctx, struct fid **out)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .flags = FI_PEER };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP, .flags = FI_PEER };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .flags = FI_PEER };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE, .flags = FI_PEER };
	struct fi_rx_attr rx_attr = *info->rx_attr;
	struct fid_domain *d = NULL;
	struct fid_cntr *cntr = NULL;
	struct fid_cq *cq = NULL;
	struct fid_ep *srx = NULL;
	struct fid_av *av = NULL;
	struct fid_eq *eq = NULL;
	int ret;

	rx_attr.op_flags = FI_PEER;
	switch (obj) {
	case O_CQ:
		ret = fi_cq_open(domain, &cq_attr, &cq, ctx);
		*out = ret ? NULL : &cq->fid;
		break;
	case O_CNTR:
		ret = fi_cntr_open(domain, &cntr_attr, &cntr, ctx);
		*out = ret ? NULL : &cntr->fid;
		break;
	case O_SRX:
		ret = fi_srx_context(domain, &rx_attr, &srx, ctx);
		/* UPSTREAM owners ignore the fid (the peer frees it with its domain) */
		*out = ret || !srx || pt_style == OWNER_STYLE_UPSTREAM ? NULL : &srx->fid;
		if (!ret && !srx && pt_style == OWNER_STYLE_SPEC)
			returned_no_fid = true;
		break;
	case O_AV:
		ret = fi_av_open(domain, &av_attr, &av, ctx);
		*out = ret ? NULL : &av->fid;
		break;
	case O_DOMAIN:
		ret = fi_domain2(fabric, info, &d, FI_PEER, ctx);
		*out = ret ? NULL : &d->fid;
		break;
	default:
		ret = fi_eq_open(fabric, &eq_attr, &eq, ctx);
		*out = ret ? NULL : &eq->fid;
	}
	return ret;
}

static void try_open(enum obj obj, enum bad bad)
{
	struct xt_cfg cfg = xt_cfg_default();
	union {
		struct fi_peer_cq_context cq;
		struct fi_peer_srx_context srx;
		char bytes[64];
	} storage;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fi_info *info;
	struct fid *opened = NULL;
	void *ctx;
	int ret;

	memset(&storage, 0, sizeof(storage));
	memset(&srx_peer_ops, 0, sizeof(srx_peer_ops));
	srx_peer_ops.size = sizeof(srx_peer_ops);
	peer_srx.ep_fid.fid.fclass = FI_CLASS_PEER_SRX;
	if (pt_style == OWNER_STYLE_UPSTREAM) {
		srx_peer_ops.start_msg = srx_peer_ops.start_tag = srx_own;
		srx_peer_ops.discard_msg = srx_peer_ops.discard_tag = srx_own;
		peer_srx.ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
	}
	returned_no_fid = false;
	calls = 0;
	XT_ASSERT_OK(xt_getinfo(&cfg, &info));
	XT_ASSERT_OK(fi_fabric(info->fabric_attr, &fabric, NULL));
	XT_ASSERT_OK(fi_domain(fabric, info, &domain, NULL));
	ctx = make_context(obj, bad, &storage);
	ret = open_peer(obj, fabric, domain, info, ctx, &opened);
	if (opened)
		fi_close(opened);
	if (bad == B_NONE && ret == 0 && obj == O_SRX && pt_style == OWNER_STYLE_SPEC) {
		XT_ASSERT(!returned_no_fid, "fi_srx_context returned no fid");
		XT_ASSERT(srx_peer_ops.start_msg && srx_peer_ops.start_tag &&
			  srx_peer_ops.discard_msg && srx_peer_ops.discard_tag,
			  "fi_srx_context did not fill in fi_ops_srx_peer");
	}
	if (bad == B_NONE && ret == 0 && obj == O_SRX && pt_style == OWNER_STYLE_UPSTREAM)
		XT_ASSERT(srx_peer_ops.start_msg == srx_own && srx_peer_ops.start_tag == srx_own &&
			  srx_peer_ops.discard_msg == srx_own &&
			  srx_peer_ops.discard_tag == srx_own,
			  "fi_srx_context overwrote the owner's own fi_ops_srx_peer");
	XT_ASSERT_OK(fi_close(&domain->fid));
	XT_ASSERT_OK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	/*
	 * fi_peer(3): "Providers that do not support peer domains must fail the
	 * fi_domain2() call with -FI_EINVAL" (and so for CQs and EQs): another
	 * peer may refuse a well-formed context so.  xshm supports them all.
	 */
	XT_ASSERT(bad == B_NONE ? ret == 0 || (ret == -FI_EINVAL && !pt_peer_is_xshm())
				: ret == -FI_EINVAL,
		  "%s with FI_PEER and %s returned %d (%s), expected %s", obj_name[obj],
		  bad_name[bad], ret, fi_strerror(-ret),
		  bad != B_NONE ? "-FI_EINVAL" : pt_peer_is_xshm() ? "0" : "0 or -FI_EINVAL");
	XT_ASSERT(calls == 0, "%s called %d owner callbacks", obj_name[obj], calls);
}

START_TEST(well_formed_peer_context_accepted)
{
	try_open(_i, B_NONE);
}
END_TEST

START_TEST(malformed_peer_context_rejected_nothing_opened)
{
	try_open(_i / (NBAD - 1), 1 + _i % (NBAD - 1));
}
END_TEST

static void add_cases(Suite *s)
{
	TCase *good = pt_tcase(s, "control", 20);
	TCase *bad = pt_tcase(s, "malformed", 20);

	/* Both open the peer alone, with peer contexts of their own: no owner. */
	pt_add_reference_owner_loop_test(good, well_formed_peer_context_accepted, 0, NOBJ,
					 "opens the peer alone with hand-made peer contexts, "
					 "without an owner");
	/* fi_peer(3) asks owners for well-formed contexts, not peers to check them. */
	pt_add_xshm_reference_owner_loop_test(bad, malformed_peer_context_rejected_nothing_opened,
					      0, NOBJ * (NBAD - 1),
					      "opens the peer alone with malformed peer contexts, "
					      "without an owner");
}

int main(void)
{
	return pt_run("peer_bad_input", add_cases);
}
