/*
 * libFuzzer target: arbitrary command cells and region headers through the
 * receive path of a real xshm endpoint.
 *
 * The harness plays a misbehaving sender that shares the receiver's memory.
 * Each input opens an endpoint through the public libfabric API (the
 * provider is the instrumented build in FI_PROVIDER_PATH), maps the
 * endpoint's region with the shm/ core, creates a sender region whose
 * headers the input corrupts, pushes the input's cells into the endpoint's
 * ring, and drives fi_cq_read with receives posted before and after, so the
 * bytes go through validation, matching, bounce buffers, chunks, RTS pulls
 * and acks.  The endpoint is also an RMA and atomic target of one
 * registration (TARGET_KEY, named by offset), so RMA, atomic and read data
 * cells reach their target paths too.  Everything but the registration is
 * closed again and its bytes are zeroed, so inputs do not depend on each
 * other.
 *
 * Input: struct fuzz_prefix, then records of one control byte and the
 * bytes of a cell between its sequence number and its claim (the ring owns
 * those).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "shm/layout.h"
#include "shm/region.h"
#include "shm/ring.h"

#define NRECVS		8
#define MAX_CELLS	96
#define CELL_BODY	(XSHM_CELL_SIZE - sizeof(struct xshm_cell_seq) - \
			 XSHM_CELL_CLAIM_SIZE)
#define RECORD_SIZE	(1 + CELL_BODY)
#define ADDR_MAX	64

/* What the input says, in front of its cells. */
struct fuzz_prefix {
	/* XORed onto the sender region's header, ring and pool structs. */
	uint8_t hdr_xor[sizeof(struct xshm_region_hdr)];
	uint8_t ring_xor[16];
	uint8_t pool_xor[sizeof(struct xshm_pool)];
	/*
	 * Per receive: bit 0 post it, bit 1 tagged, bits 2-3 buffer
	 * (none, 64 B, 20000 B, two iovs 100 + 30000 B), bit 4 post it after
	 * the cells, bits 5-6 tag (0, 1, 0x1234, any), bit 7 FI_COMPLETION.
	 */
	uint8_t recv[NRECVS];
	/* Bit 0: the sender is in the AV before the cells; bit 1: after. */
	uint8_t av;
	/*
	 * Bit 0: a multi-receive buffer posted before the cells.  After them:
	 * bit 1 a peek that claims (bit 2: tagged), then the claiming receive
	 * (bit 3: with FI_DISCARD); bit 4 a peek that discards (bit 5: tagged).
	 */
	uint8_t mode;
};

#define MODE_MULTI_RECV		0x01
#define MODE_CLAIM		0x02
#define MODE_CLAIM_TAGGED	0x04
#define MODE_CLAIM_DISCARD	0x08
#define MODE_PEEK_DISCARD	0x10
#define MODE_PEEK_TAGGED	0x20
#define MULTI_RECV_SIZE		8192
#define CLAIM_SIZE		32768

/* Per-cell control byte. */
#define CELL_SRC_MASK		0x3	/* 0-1: the sender, 2: the endpoint
					   itself, 3: src_ep_id as given */
#define CELL_PROGRESS		0x4	/* fi_cq_read right after this cell */
#define CELL_FILL_BUF		0x8	/* put the cell's data in buf_index */
#define CELL_BORROW		0x10	/* buf_index: one the source borrowed
					   from the endpoint's pool, first */

/*
 * The registration RMA and atomic cells name: mr_mode 0, so by offset from
 * 0 under a key the application chose.
 */
#define TARGET_KEY		1
#define TARGET_SIZE		65536
static unsigned char target[TARGET_SIZE];
static struct fid_mr *target_mr;

struct fuzz_recv {
	struct iovec iov[2];
	size_t count;
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;

struct endpoint {
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	uint64_t node_id;
	uint64_t ep_id;
	struct xshm_region region;	/* the endpoint's own, as a peer maps it */
};

static void die(const char *what, int ret)
{
	fprintf(stderr, "fuzz_recv: %s: %s\n", what, fi_strerror(-ret));
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	if (!getenv("FI_PROVIDER_PATH")) {
		fprintf(stderr, "fuzz_recv: set FI_PROVIDER_PATH to the "
			"instrumented build's .libs\n");
		exit(1);
	}
	hints->fabric_attr->prov_name = strdup("xshm");
	hints->ep_attr->type = FI_EP_RDM;
	/* RMA and atomics with every role: the endpoint is a target too. */
	hints->caps = FI_MSG | FI_TAGGED | FI_MULTI_RECV | FI_RMA | FI_ATOMIC;
	hints->mode = 0;
	hints->domain_attr->mr_mode = 0;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		die("fi_getinfo", ret);
	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (ret)
		die("fi_fabric", ret);
	ret = fi_domain(fabric, info, &domain, NULL);
	if (ret)
		die("fi_domain", ret);
	ret = fi_mr_reg(domain, target, sizeof(target),
			FI_REMOTE_READ | FI_REMOTE_WRITE, 0, TARGET_KEY, 0,
			&target_mr, NULL);
	if (ret)
		die("fi_mr_reg", ret);
	return 0;
}

static void parse_addr(const char *addr, uint64_t *node_id, uint64_t *ep_id)
{
	if (sscanf(addr, "fi_xshm://%16" SCNx64 "/%16" SCNx64, node_id, ep_id) != 2) {
		fprintf(stderr, "fuzz_recv: unexpected address %s\n", addr);
		abort();
	}
}

static void open_endpoint(struct endpoint *e)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	char addr[ADDR_MAX];
	size_t len = sizeof(addr);
	int ret;

	if ((ret = fi_av_open(domain, &av_attr, &e->av, NULL)) ||
	    (ret = fi_cq_open(domain, &cq_attr, &e->cq, NULL)) ||
	    (ret = fi_endpoint(domain, info, &e->ep, NULL)) ||
	    (ret = fi_ep_bind(e->ep, &e->av->fid, 0)) ||
	    (ret = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(e->ep)) ||
	    (ret = fi_getname(&e->ep->fid, addr, &len)))
		die("opening the endpoint", ret);
	addr[sizeof(addr) - 1] = '\0';
	parse_addr(addr, &e->node_id, &e->ep_id);
	ret = xshm_region_open(&e->region, e->ep_id);
	if (ret)
		die("mapping the endpoint's region", ret);
}

static void close_endpoint(struct endpoint *e)
{
	xshm_region_close(&e->region);
	fi_close(&e->ep->fid);
	fi_close(&e->cq->fid);
	fi_close(&e->av->fid);
}

static void xor_bytes(void *dst, const uint8_t *mask, size_t len)
{
	uint8_t *bytes = dst;

	for (size_t i = 0; i < len; i++)
		bytes[i] ^= mask[i];
}

/* The sender's region, valid until the input's masks corrupt it. */
static void create_sender(struct xshm_region *sender, uint64_t node_id,
			  const struct fuzz_prefix *prefix)
{
	struct xshm_region_geom geom = {
		.ring_cells = 64, .pool_bufs = 4, .buf_size = XSHM_BUF_SIZE,
		.features = XSHM_FEATURE_PULL,
	};
	/* Unique among live processes, never one the provider hands out. */
	uint64_t ep_id = ((uint64_t) getpid() << 24) | 0xffffff;
	unsigned char *base;
	int ret;

	ret = xshm_region_create(sender, node_id, ep_id, &geom);
	if (ret)
		die("creating the sender region", ret);
	base = sender->base;
	xor_bytes(base + sender->hdr->ring_offset, prefix->ring_xor,
		  sizeof(prefix->ring_xor));
	xor_bytes(base + sender->hdr->pool_offset, prefix->pool_xor,
		  sizeof(prefix->pool_xor));
	xor_bytes(sender->hdr, prefix->hdr_xor, sizeof(prefix->hdr_xor));
}

static void insert_sender(struct endpoint *e, const struct xshm_region *sender)
{
	char addr[ADDR_MAX];
	fi_addr_t fi_addr;

	snprintf(addr, sizeof(addr), "fi_xshm://%016" PRIx64 "/%016" PRIx64,
		 e->node_id, sender->ep_id);
	/* A corrupted sender region may be refused: both outcomes are fine. */
	fi_av_insert(e->av, addr, 1, &fi_addr, 0, NULL);
}

/* Acks the endpoint pushes into the sender's ring are read and dropped. */
static void drain_sender(struct xshm_region *sender)
{
	void *cell;

	while ((cell = xshm_ring_peek(&sender->ring)))
		xshm_ring_release(&sender->ring, cell);
}

static void progress(struct endpoint *e)
{
	struct fi_cq_tagged_entry comp[8];
	struct fi_cq_err_entry err;
	ssize_t ret;

	for (int i = 0; i < 4; i++) {
		ret = fi_cq_read(e->cq, comp, 8);
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(e->cq, &err, 0);
		} else if (ret <= 0) {
			break;
		}
	}
}

static const uint64_t tags[] = { 0, 1, 0x1234, 0 };

static void post_recv(struct endpoint *e, struct fuzz_recv *r, uint8_t spec)
{
	static const size_t sizes[][2] = { { 0, 0 }, { 64, 0 }, { 20000, 0 },
					   { 100, 30000 } };
	const size_t *size = sizes[(spec >> 2) & 3];
	unsigned tag_sel = (spec >> 5) & 3;
	uint64_t flags = spec & 0x80 ? FI_COMPLETION : 0;
	struct fi_msg_tagged tmsg = { .iov_count = 0 };
	struct fi_msg msg = { .iov_count = 0 };

	r->count = 0;
	for (int i = 0; i < 2 && size[i]; i++) {
		r->iov[i].iov_base = malloc(size[i]);
		r->iov[i].iov_len = size[i];
		r->count++;
	}
	if (spec & 2) {
		tmsg.msg_iov = r->iov;
		tmsg.iov_count = r->count;
		tmsg.addr = FI_ADDR_UNSPEC;
		tmsg.tag = tags[tag_sel];
		tmsg.ignore = tag_sel == 3 ? ~0ULL : 0;
		tmsg.context = r;
		fi_trecvmsg(e->ep, &tmsg, flags);
	} else {
		msg.msg_iov = r->iov;
		msg.iov_count = r->count;
		msg.addr = FI_ADDR_UNSPEC;
		msg.context = r;
		fi_recvmsg(e->ep, &msg, flags);
	}
}

/* Untagged with tag_sel 0: fi_recvmsg; otherwise fi_trecvmsg matching any tag. */
static void post_special(struct endpoint *e, bool tagged, void *buf, size_t len,
			 void *context, uint64_t flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg_tagged tmsg = {
		.msg_iov = &iov, .iov_count = buf ? 1 : 0, .addr = FI_ADDR_UNSPEC,
		.ignore = ~0ULL, .context = context,
	};
	struct fi_msg msg = {
		.msg_iov = &iov, .iov_count = buf ? 1 : 0, .addr = FI_ADDR_UNSPEC,
		.context = context,
	};

	if (tagged)
		fi_trecvmsg(e->ep, &tmsg, flags);
	else
		fi_recvmsg(e->ep, &msg, flags);
}

/* Peeks, claims and discards of what the cells left held. */
static void peek_and_claim(struct endpoint *e, uint8_t mode, void *claim_buf)
{
	static struct fi_context claim_ctx, peek_ctx;
	bool tagged = mode & MODE_CLAIM_TAGGED;

	memset(&claim_ctx, 0, sizeof(claim_ctx));
	if (mode & MODE_CLAIM) {
		post_special(e, tagged, NULL, 0, &claim_ctx, FI_PEEK | FI_CLAIM);
		progress(e);
		/* Validated by the provider even when the peek found nothing. */
		post_special(e, tagged, claim_buf, CLAIM_SIZE, &claim_ctx,
			     FI_CLAIM | (mode & MODE_CLAIM_DISCARD ? FI_DISCARD : 0));
	}
	if (mode & MODE_PEEK_DISCARD)
		post_special(e, mode & MODE_PEEK_TAGGED, NULL, 0, &peek_ctx,
			     FI_PEEK | FI_DISCARD);
}

static void post_recvs(struct endpoint *e, struct fuzz_recv *recvs,
		       const struct fuzz_prefix *prefix, bool after)
{
	for (int i = 0; i < NRECVS; i++) {
		uint8_t spec = prefix->recv[i];

		if ((spec & 1) && !!(spec & 0x10) == after)
			post_recv(e, &recvs[i], spec);
	}
}

static uint64_t cell_src(uint8_t ctl, uint64_t given, const struct endpoint *e,
			 const struct xshm_region *sender)
{
	switch (ctl & CELL_SRC_MASK) {
	case 2:
		return e->ep_id;
	case 3:
		return given;
	default:
		return sender->ep_id;
	}
}

/*
 * RTS cells name the sender's memory by address, which a stored input cannot
 * know: pid 0 becomes this process and bases below SOURCE_SIZE offsets into
 * source[], so pulls can succeed; anything else is used as given.
 */
#define SOURCE_SIZE	65536
static unsigned char source[SOURCE_SIZE];

static void place_rts(struct xshm_cmd *cmd)
{
	bool rma = cmd->op == XSHM_OP_WRITE || cmd->op == XSHM_OP_READ;
	struct xshm_rts *rts = (struct xshm_rts *)
		(cmd->data + (rma ? sizeof(struct xshm_rma) : 0));

	if (!rts->pid)
		rts->pid = getpid();
	for (int i = 0; i < XSHM_RTS_IOV_MAX; i++)
		if (rts->iov[i].base < SOURCE_SIZE)
			rts->iov[i].base += (uintptr_t) source;
}

/* Pushes one cell into the endpoint's ring, progressing while it is full. */
static void push_cell(struct endpoint *e, struct xshm_region *sender,
		      const uint8_t *record)
{
	uint8_t ctl = record[0];
	struct xshm_cmd *cmd = NULL;
	uint64_t pos;
	void *buf;

	for (int tries = 0; tries < 64 && !cmd; tries++) {
		cmd = xshm_ring_reserve(&e->region.ring, &pos);
		if (!cmd)
			progress(e);
	}
	if (!cmd)
		return;
	/* The record is the cell between what ring.c owns (seq, claim). */
	memcpy((unsigned char *) cmd + sizeof(struct xshm_cell_seq), record + 1,
	       CELL_BODY);
	cmd->src_ep_id = cell_src(ctl, cmd->src_ep_id, e, sender);
	if (cmd->proto == XSHM_PROTO_RTS)
		place_rts(cmd);
	if (ctl & CELL_BORROW)
		(void) xshm_pool_alloc(&e->region.pool, cmd->src_ep_id,
				       XSHM_POOL_ROUND, &cmd->buf_index);
	buf = xshm_pool_buf(&e->region.pool, cmd->buf_index);
	if ((ctl & CELL_FILL_BUF) && buf)
		memcpy(buf, cmd->data, XSHM_INLINE_MAX);
	xshm_ring_commit(&e->region.ring, cmd, pos);
	if (ctl & CELL_PROGRESS)
		progress(e);
	drain_sender(sender);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_prefix prefix;
	struct fuzz_recv recvs[NRECVS];
	struct xshm_region sender;
	struct endpoint e;
	size_t ncells;
	void *multi_buf = NULL, *claim_buf = NULL;

	if (size < sizeof(prefix))
		return 0;
	memcpy(&prefix, data, sizeof(prefix));
	data += sizeof(prefix);
	size -= sizeof(prefix);
	ncells = size / RECORD_SIZE;
	if (ncells > MAX_CELLS)
		ncells = MAX_CELLS;

	memset(recvs, 0, sizeof(recvs));
	memset(target, 0, sizeof(target));
	open_endpoint(&e);
	create_sender(&sender, e.node_id, &prefix);
	if (prefix.av & 1)
		insert_sender(&e, &sender);
	post_recvs(&e, recvs, &prefix, false);
	if (prefix.mode & MODE_MULTI_RECV) {
		multi_buf = malloc(MULTI_RECV_SIZE);
		post_special(&e, false, multi_buf, MULTI_RECV_SIZE, &e, FI_MULTI_RECV);
	}
	for (size_t i = 0; i < ncells; i++)
		push_cell(&e, &sender, data + i * RECORD_SIZE);
	progress(&e);
	if (prefix.av & 2)
		insert_sender(&e, &sender);
	if (prefix.mode & MODE_CLAIM)
		claim_buf = malloc(CLAIM_SIZE);
	peek_and_claim(&e, prefix.mode, claim_buf);
	post_recvs(&e, recvs, &prefix, true);
	for (int i = 0; i < 4; i++) {
		progress(&e);
		drain_sender(&sender);
	}
	close_endpoint(&e);
	xshm_region_close(&sender);
	free(multi_buf);
	free(claim_buf);
	for (int i = 0; i < NRECVS; i++)
		for (size_t j = 0; j < recvs[i].count; j++)
			free(recvs[i].iov[j].iov_base);
	return 0;
}
