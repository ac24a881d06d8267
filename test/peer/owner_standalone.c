/*
 * The reference owner built against the installed interface alone: compiled
 * with only -I$(top_srcdir)/include and libfabric's flags, linked with
 * -lfabric, no xshm object.  One process: the owner with one xshm endpoint
 * as a peer, and a standalone xshm endpoint sending to it; tagged messages
 * with the receive posted first, then ones that arrive first; the owner in
 * each of its styles in turn.
 *
 * Exit status 0 on success, 1 with a message on failure; alarm() bounds it.
 */
#include "owner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TAG	0x5a11ULL
#define WAIT_MS	10000

struct sender {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	char name[OWNER_NAME_MAX];
	size_t namelen;
	fi_addr_t dest;
};

static struct owner owner;
static struct sender snd;
static bool sent;	/* the current transfer's send completed */
static void close_all(void);

static void close_all(void)
{
	if (snd.ep)
		fi_close(&snd.ep->fid);
	if (snd.av)
		fi_close(&snd.av->fid);
	if (snd.cq)
		fi_close(&snd.cq->fid);
	if (snd.domain)
		fi_close(&snd.domain->fid);
	if (snd.fabric)
		fi_close(&snd.fabric->fid);
	fi_freeinfo(snd.info);
	memset(&snd, 0, sizeof(snd));
	owner_close(&owner);
}

#define CHECK(cond, ...) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "owner_standalone:%d: ", __LINE__); \
			fprintf(stderr, __VA_ARGS__); \
			fprintf(stderr, "\n"); \
			close_all(); \
			exit(1); \
		} \
	} while (0)

#define CHECK_RC(call) \
	do { \
		long long _rc = (long long)(call); \
		CHECK(_rc == 0, "%s returned %lld (%s)", #call, _rc, fi_strerror((int)-_rc)); \
	} while (0)

/* Reads the sender's CQ once. */
static void sender_progress(void *send_ctx)
{
	struct fi_cq_tagged_entry e;
	ssize_t rc = fi_cq_read(snd.cq, &e, 1);

	if (rc == 1) {
		CHECK(e.op_context == send_ctx && !sent, "send completion context %p",
		      e.op_context);
		sent = true;
	} else {
		CHECK(rc == -FI_EAGAIN, "sender's fi_cq_read: %zd (%s)", rc,
		      fi_strerror((int)-rc));
	}
}

static void open_sender(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };

	CHECK(hints, "fi_allocinfo");
	hints->fabric_attr->prov_name = strdup("xshm");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED;
	hints->domain_attr->mr_mode = 0;
	CHECK_RC(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &snd.info));
	fi_freeinfo(hints);
	CHECK_RC(fi_fabric(snd.info->fabric_attr, &snd.fabric, NULL));
	CHECK_RC(fi_domain(snd.fabric, snd.info, &snd.domain, NULL));
	CHECK_RC(fi_av_open(snd.domain, &av_attr, &snd.av, NULL));
	CHECK_RC(fi_cq_open(snd.domain, &cq_attr, &snd.cq, NULL));
	CHECK_RC(fi_endpoint(snd.domain, snd.info, &snd.ep, NULL));
	CHECK_RC(fi_ep_bind(snd.ep, &snd.av->fid, 0));
	CHECK_RC(fi_ep_bind(snd.ep, &snd.cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK_RC(fi_enable(snd.ep));
	snd.namelen = sizeof(snd.name);
	CHECK_RC(fi_getname(&snd.ep->fid, snd.name, &snd.namelen));
}

/* Progresses both sides until the owner has a completion and the send completed. */
static void wait_both(struct owner_comp *c, void *send_ctx)
{
	uint64_t end = owner_now_ms() + WAIT_MS;
	bool received = false;

	while ((!sent || !received) && owner_now_ms() < end) {
		if (!sent)
			sender_progress(send_ctx);
		if (!received && owner_cq_read(&owner, c, 0) == 0)
			received = true;
	}
	CHECK(sent && received, "sent %d, received %d within %d ms", sent, received, WAIT_MS);
}

static void transfer(size_t len, bool unexpected)
{
	unsigned char *out = malloc(len), *in = calloc(1, len);
	uint64_t end = owner_now_ms() + WAIT_MS;
	struct owner_comp c;
	char send_ctx;
	ssize_t rc;

	CHECK(out && in, "malloc");
	sent = false;
	for (size_t i = 0; i < len; i++)
		out[i] = (unsigned char)(i * 7 + len);
	if (!unexpected)
		CHECK_RC(owner_post_trecv(&owner, in, len, FI_ADDR_UNSPEC, TAG, 0, in));
	while ((rc = fi_tsend(snd.ep, out, len, NULL, snd.dest, TAG, &send_ctx)) == -FI_EAGAIN &&
	       owner_now_ms() < end)
		owner_progress(&owner);
	CHECK_RC(rc);
	if (unexpected) {
		while (owner_unexpected_count(&owner, true) == 0 && owner_now_ms() < end) {
			owner_progress(&owner);
			if (!sent)
				sender_progress(&send_ctx);
		}
		CHECK(owner_unexpected_count(&owner, true) == 1, "message not queued");
		CHECK_RC(owner_post_trecv(&owner, in, len, FI_ADDR_UNSPEC, TAG, 0, in));
	}
	wait_both(&c, &send_ctx);
	CHECK(!c.is_err, "error completion %d", c.err.err);
	CHECK(c.e.op_context == in && c.e.len == len && c.e.tag == TAG,
	      "completion context %p len %zu tag 0x%llx", c.e.op_context, c.e.len,
	      (unsigned long long)c.e.tag);
	CHECK(memcmp(in, out, len) == 0, "data differs");
	free(out);
	free(in);
}

/* One owner of this style: two messages posted first, two that arrive first. */
static void run_style(enum owner_style style)
{
	/* xshm's default (FI_XSHM_PEER_ABI=auto): libfabric's get_tag for its style. */
	struct owner_cfg cfg = { .style = style,
				 .get_tag_no_size = style == OWNER_STYLE_UPSTREAM };
	char why[256];
	fi_addr_t src;

	CHECK(owner_open(&owner, &cfg) == 0, "owner_open (%s style) failed in %s",
	      owner_style_name[style], owner.failed_call ? owner.failed_call : "?");
	CHECK_RC(owner_av_insert(&owner, snd.name, &src));
	CHECK(fi_av_insert(snd.av, owner.name[0], 1, &snd.dest, 0, NULL) == 1, "fi_av_insert");
	transfer(1000, false);
	transfer(100000, false);
	transfer(1000, true);
	transfer(100000, true);
	CHECK(!*owner_violations(&owner, why, sizeof(why)), "violations (%s style): %s",
	      owner_style_name[style], why);
	CHECK(owner_entries_held(&owner) == 0 && owner.st.entries_given == 4 &&
	      owner.st.entries_freed == 4, "entries (%s style): given %llu freed %llu held %llu",
	      owner_style_name[style], (unsigned long long)owner.st.entries_given,
	      (unsigned long long)owner.st.entries_freed,
	      (unsigned long long)owner_entries_held(&owner));
	CHECK(owner_close(&owner) == 0, "owner_close");
}

int main(void)
{
	alarm(60);
	open_sender();
	for (int style = 0; style < OWNER_NSTYLES; style++)
		run_style(style);
	CHECK(snd.ep && fi_close(&snd.ep->fid) == 0, "closing the sender");
	snd.ep = NULL;
	close_all();
	printf("owner_standalone: PASS\n");
	return 0;
}
