/*
 * Single copy: a message larger than FI_XSHM_SCOPY_THRESHOLD (4 MiB by
 * default) travels as one RTS naming the sender's buffers; once the message
 * is matched the receiver copies it and acks, and only then does the send
 * complete.  From 2 chunks up (shm/scopy/split.h) the copy is split: the
 * receiver pulls chunks from the front (process_vm_readv) while the sender,
 * if it polls, pushes chunks from the back (process_vm_writev).  From
 * 512 KiB to the threshold, messages take it when the buffers of both
 * sides lie on huge pages, and from 128 KiB in a stream.
 *
 * Covered: sizes around the threshold, expected and unexpected, tagged and
 * untagged; iov shapes with page-unaligned buffers on both sides and
 * truncation, among them split copies whose length (and truncated length)
 * is not a multiple of a chunk, with the sender polling throughout; a
 * polling sender that pushes part of a 32 MiB message, seen in the claims of
 * the receiver's region header; a sender's next large send that pushes part
 * of its previous message; a receiver with a command waiting behind the one
 * it copies that leaves chunks to its sender; a sender that exits, unmaps
 * its buffers, or closes its endpoint before the pull; FI_XSHM_CMA=0
 * (bounce buffers instead); a moved threshold; the choice by pages, where
 * this kernel gives huge pages, for lone sends and sends in a stream;
 * ordering across protocols; FI_PEEK | FI_CLAIM of a held RTS;
 * FI_DELIVERY_COMPLETE and FI_MATCH_COMPLETE.
 *
 * Which protocol carried an unexpected message is observed from the sender:
 * through bounce buffers its send completes while the receive is not yet
 * posted; pulled, it completes only after the receive is posted.
 */
#include "harness.h"

#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shm/region.h"
#include "shm/scopy/split.h"
#include "test/huge_pages.h"

#define TAG		0x5c09e00000000a11ULL
#define THRESHOLD	32768		/* set by use_test_threshold() */
#define DEFAULT_THRESHOLD (4 << 20)	/* the documented default */
#define KiB		((size_t)1 << 10)
#define MiB		((size_t)1 << 20)
#define HUGE_PAGE	TEST_HUGE_PAGE
#define MAX_IOV		8
#define CANARY		0x5a
#define CANARY_TAIL	64
#define HELD_MS		150		/* how long an unexpected pulled send must stay pending */
#define EARLY_MS	8000		/* how long a bounced send may take to complete */
#define FAIL_MS		5000		/* a failed pull must be reported within this */
#define CHILD_WAIT_MS	8000		/* a child's wait for its send completion */

static int held_ms_override;	/* replaces HELD_MS when set */

/* ---- buffers: one mapping per iov entry, at an offset, canaries around ---- */

struct seg {
	unsigned char *map;		/* the entry, at off, then canaries */
	size_t maplen, off, len;
	void *unmap;			/* what to unmap, unmap_len bytes */
	size_t unmap_len;
};

struct segs {
	size_t n, total;
	struct seg s[MAX_IOV];
	struct iovec iov[MAX_IOV];
};

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/*
 * With huge, each entry's mapping starts at a huge page boundary and spans
 * whole huge pages, advised onto transparent huge pages.
 */
static void segs_alloc(struct segs *v, size_t n, const size_t *len, const size_t *off,
		       bool huge)
{
	size_t pg = huge ? HUGE_PAGE : page_size();

	XT_ASSERT(n >= 1 && n <= MAX_IOV, "%zu iov entries", n);
	memset(v, 0, sizeof(*v));
	v->n = n;
	for (size_t i = 0; i < n; i++) {
		struct seg *s = &v->s[i];

		s->off = off ? off[i] : 0;
		s->len = len[i];
		s->maplen = (s->off + s->len + CANARY_TAIL + pg - 1) / pg * pg;
		s->unmap_len = s->maplen + (huge ? HUGE_PAGE : 0);
		s->unmap = mmap(NULL, s->unmap_len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		XT_ASSERT(s->unmap != MAP_FAILED, "mmap of %zu bytes", s->unmap_len);
		s->map = huge ? test_huge_align(s->unmap) : s->unmap;
		XT_ASSERT(!huge || !madvise(s->map, s->maplen, MADV_HUGEPAGE),
			  "madvise(MADV_HUGEPAGE)");
		memset(s->map, CANARY, s->maplen);
		v->iov[i] = (struct iovec){ s->map + s->off, s->len };
		v->total += s->len;
	}
}

static void segs_free(struct segs *v)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->s[i].unmap)
			munmap(v->s[i].unmap, v->s[i].unmap_len);
	memset(v, 0, sizeof(*v));
}

/* The message is xt_fill(seed) over its whole length, split across entries. */
static void segs_fill(struct segs *v, uint64_t seed)
{
	size_t pos = 0;

	for (size_t i = 0; i < v->n; i++) {
		xt_fill(v->iov[i].iov_base, v->s[i].len, seed, pos);
		pos += v->s[i].len;
	}
}

/*
 * The first nbytes across the entries carry the message; nothing outside
 * the entries (offset bytes before, canary bytes after) was written.
 */
static void segs_check(const struct segs *v, size_t nbytes, uint64_t seed, const char *what)
{
	size_t pos = 0;

	for (size_t i = 0; i < v->n; i++) {
		const struct seg *s = &v->s[i];
		size_t n = nbytes - pos < s->len ? nbytes - pos : s->len;
		ssize_t bad = xt_mismatch(s->map + s->off, n, seed, pos);

		XT_ASSERT(bad < 0, "%s: data differs at byte %zu of the message (entry %zu, "
			  "byte %zd of %zu)", what, pos + (size_t)bad, i, bad, s->len);
		for (size_t b = 0; b < s->off; b++)
			XT_ASSERT(s->map[b] == CANARY, "%s: byte %zu before entry %zu written",
				  what, s->off - b, i);
		for (size_t b = s->off + s->len; b < s->maplen; b++)
			XT_ASSERT(s->map[b] == CANARY, "%s: byte %zu after entry %zu written",
				  what, b - s->off - s->len, i);
		pos += n;
	}
	XT_ASSERT(pos == nbytes, "%s: only %zu of %zu bytes fit the entries", what, pos, nbytes);
}

/* ---- a sending child with full control of its buffers and its fate ---- */

enum sc_mode {
	SC_SEND = 1,	/* post, report, wait for the completion, report */
	SC_EXIT,	/* post, report, _exit(0) without closing anything */
	SC_UNMAP,	/* post, unmap the buffers, report, wait, report */
	SC_CLOSE,	/* post, close the endpoint, overwrite the buffers, report,
			   then wait for a byte and return (the child exits) */
	SC_QUIT,
};

struct sc_cmd {
	enum sc_mode mode;
	bool tagged;
	uint64_t flags;		/* 0: fi_sendv / fi_tsendv; else (t)sendmsg with these */
	uint64_t seed, tag;
	size_t niov;
	size_t len[MAX_IOV], off[MAX_IOV];
	bool huge;		/* the buffers on huge pages */
	int early_ms;		/* > 0: first report whether it completes within this */
	bool asleep;		/* after posting, wait for the parent's go unprogressed */
};

struct sc_result {
	bool completed, is_err, context_ok;
	int err;
	uint64_t flags;
	uint64_t time_ms;	/* xt_now_ms() in the child when the completion was read */
};

struct sc_arg {
	struct xt_cfg cfg;
	bool deferred;		/* open the endpoint only when the parent says so */
};

static ssize_t sc_post_send(struct xt_ep *x, fi_addr_t dst, const struct sc_cmd *cmd,
			    struct segs *v, void *ctx)
{
	struct fi_msg_tagged tmsg = {
		.msg_iov = v->iov, .iov_count = v->n, .addr = dst, .tag = cmd->tag,
		.context = ctx,
	};
	struct fi_msg msg = {
		.msg_iov = v->iov, .iov_count = v->n, .addr = dst, .context = ctx,
	};

	if (!cmd->flags)
		return cmd->tagged ? fi_tsendv(x->ep, v->iov, NULL, v->n, dst, cmd->tag, ctx)
				   : fi_sendv(x->ep, v->iov, NULL, v->n, dst, ctx);
	return cmd->tagged ? fi_tsendmsg(x->ep, &tmsg, cmd->flags)
			   : fi_sendmsg(x->ep, &msg, cmd->flags);
}

static struct sc_result sc_outcome(struct xt_ep *x, int ms, void *ctx)
{
	struct sc_result r = { 0 };
	struct xt_comp c;

	if (xt_poll(x->tx, x->rx, ms, &c) != 0)
		return r;
	r.completed = true;
	r.is_err = c.is_err;
	r.err = c.is_err ? c.err.err : 0;
	r.flags = c.is_err ? c.err.flags : c.e.flags;
	r.context_ok = (c.is_err ? c.err.op_context : c.e.op_context) == ctx;
	r.time_ms = xt_now_ms();
	return r;
}

/* Waits for the parent's go, up to 30 s, without a fabric object open. */
static void sc_wait_go(int sock)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };

	XT_ASSERT(poll(&pfd, 1, 30000) == 1, "no go from the parent");
	xt_wait(sock);
}

static void sc_run(struct xt_ep *x, fi_addr_t dst, int sock, const struct sc_cmd *cmd)
{
	struct sc_result r = { 0 };
	struct segs v;
	char ctx;
	ssize_t rc;

	segs_alloc(&v, cmd->niov, cmd->len, cmd->off, cmd->huge);
	segs_fill(&v, cmd->seed);
	rc = XT_RETRY(x, sc_post_send(x, dst, cmd, &v, &ctx));
	if (rc == 0 && (cmd->flags & FI_INJECT))
		for (size_t i = 0; i < v.n; i++)
			memset(v.iov[i].iov_base, 0xee, v.s[i].len);
	if (rc == 0 && cmd->mode == SC_UNMAP)
		segs_free(&v);
	if (cmd->mode != SC_CLOSE || rc)
		xt_send_u64(sock, (uint64_t)rc);
	if (cmd->mode == SC_EXIT)
		_exit(0);	/* no close, no free: the receiver finds us gone */
	if (cmd->mode == SC_CLOSE && rc == 0) {
		/* The send is dropped with the endpoint: its buffers are ours again. */
		xt_close(x);
		for (size_t i = 0; i < v.n; i++)
			memset(v.iov[i].iov_base, 0xee, v.s[i].len);
		xt_send_u64(sock, 0);
		sc_wait_go(sock);
		segs_free(&v);
		return;
	}
	if (rc == 0) {
		if (cmd->asleep)
			sc_wait_go(sock);
		if (cmd->early_ms > 0) {
			r = sc_outcome(x, cmd->early_ms, &ctx);
			xt_write_bytes(sock, &r, sizeof(r));
		}
		if (!r.completed)
			r = sc_outcome(x, CHILD_WAIT_MS, &ctx);
		xt_write_bytes(sock, &r, sizeof(r));
	}
	segs_free(&v);
}

static void sc_child(int sock, void *arg)
{
	struct sc_arg dflt = { .cfg = xt_cfg_default() };
	struct sc_arg *a = arg ? arg : &dflt;
	struct sc_cmd cmd;
	struct xt_ep x;
	fi_addr_t dst;

	if (a->deferred)
		sc_wait_go(sock);
	xt_open(&x, &a->cfg);
	dst = xt_exchange(&x, sock);
	for (;;) {
		xt_read_progress(sock, &cmd, sizeof(cmd), &x);
		if (cmd.mode == SC_QUIT)
			break;
		sc_run(&x, dst, sock, &cmd);
		if (cmd.mode == SC_CLOSE)
			return;	/* closed by sc_run */
	}
	xt_close(&x);
}

/* Parent side.  progress: read the child's answer while progressing x. */
static void sc_post(struct xt_ep *x, struct xt_child *c, const struct sc_cmd *cmd, bool progress)
{
	size_t total = 0;
	int64_t rc;

	for (size_t i = 0; i < cmd->niov; i++)
		total += cmd->len[i];
	xt_write_bytes(c->sock, cmd, sizeof(*cmd));
	rc = (int64_t)(progress ? xt_recv_u64_progress(c->sock, x) : xt_recv_u64(c->sock));
	XT_ASSERT(rc == 0, "the child's send of %zu bytes in %zu entries returned %lld (%s)",
		  total, cmd->niov, (long long)rc, xt_strerror(rc));
}

static struct sc_result sc_result(struct xt_ep *x, struct xt_child *c)
{
	struct sc_result r;

	xt_read_progress(c->sock, &r, sizeof(r), x);
	return r;
}

static void sc_quit(struct xt_ep *x, struct xt_child *c)
{
	struct sc_cmd cmd = { .mode = SC_QUIT };

	xt_write_bytes(c->sock, &cmd, sizeof(cmd));
	xt_join(c);
	(void)x;
}

/* One receiver (the test process) and one sc_child. */
struct rig {
	struct xt_cfg cfg;
	struct sc_arg arg;
	struct xt_ep x;
	struct xt_child a;
	fi_addr_t fa;
};

static void rig_start(struct rig *r, uint64_t child_tx_op_flags)
{
	r->cfg = xt_cfg_default();
	r->arg = (struct sc_arg){ .cfg = xt_cfg_default() };
	r->arg.cfg.tx_op_flags = child_tx_op_flags;
	xt_spawn(&r->a, sc_child, &r->arg);
	xt_open(&r->x, &r->cfg);
	XT_ASSERT(xt_rx_iov_limit(&r->x) >= MAX_IOV, "rx iov_limit %zu",
		  xt_rx_iov_limit(&r->x));
	r->fa = xt_connect_sender(&r->x, &r->a, true);
}

static void rig_stop(struct rig *r)
{
	sc_quit(&r->x, &r->a);
	xt_close(&r->x);
}

/* ---- one transfer, checked from both ends ---- */

enum early {
	EARLY_ANY,	/* not checked: the receiver just progresses a moment */
	EARLY_DONE,	/* bounce buffers: the send completes before the receive is posted */
	EARLY_HELD,	/* pulled: the send stays pending until the receive is posted */
};

struct xfer {
	const char *name;
	size_t sniov, slen[MAX_IOV], soff[MAX_IOV];
	size_t rniov, rlen[MAX_IOV], roff[MAX_IOV];
	bool shuge, rhuge;	/* sender's, receiver's buffers on huge pages */
};

static void post_recvv(struct xt_ep *x, bool tagged, struct segs *v, void *ctx)
{
	if (tagged)
		XT_POST(x, fi_trecvv(x->ep, v->iov, NULL, v->n, FI_ADDR_UNSPEC, TAG, 0, ctx));
	else
		XT_POST(x, fi_recvv(x->ep, v->iov, NULL, v->n, FI_ADDR_UNSPEC, ctx));
}

static const char *early_name(enum early e)
{
	return e == EARLY_DONE ? "bounced" : e == EARLY_HELD ? "pulled" : "";
}

/*
 * The child sends t's sender entries; we receive into t's receiver entries,
 * posted before (expected) or after (unexpected) the send.  Checks the
 * receive completion (or the FI_ETRUNC error), every byte, the canaries, and
 * the send's completion.  send_flags: 0 for fi_(t)sendv.
 */
static void transfer(struct xt_ep *x, struct xt_child *child, const struct xfer *t,
		     bool tagged, bool unexpected, enum early early, uint64_t send_flags,
		     uint64_t seed)
{
	uint64_t kind = tagged ? FI_TAGGED : FI_MSG;
	struct sc_cmd cmd = {
		.mode = SC_SEND, .tagged = tagged, .flags = send_flags, .seed = seed,
		.tag = TAG, .niov = t->sniov, .huge = t->shuge,
	};
	struct sc_result res;
	uint64_t t_post = 0;
	struct segs v;
	size_t total = 0;
	struct xt_comp c;
	char what[160];

	for (size_t i = 0; i < t->sniov; i++) {
		cmd.len[i] = t->slen[i];
		cmd.off[i] = t->soff[i];
		total += t->slen[i];
	}
	snprintf(what, sizeof(what), "%s%s%zu bytes, %s, %s, %zu into %zu entries",
		 t->name ? t->name : "", t->name ? ": " : "", total,
		 tagged ? "tagged" : "untagged", unexpected ? "unexpected" : "expected",
		 t->sniov, t->rniov);
	segs_alloc(&v, t->rniov, t->rlen, t->roff, t->rhuge);
	if (unexpected && early != EARLY_ANY)
		cmd.early_ms = early == EARLY_DONE ? EARLY_MS
			       : held_ms_override ? held_ms_override : HELD_MS;
	if (!unexpected)
		post_recvv(x, tagged, &v, &v);
	sc_post(x, child, &cmd, true);
	if (unexpected) {
		if (early == EARLY_ANY) {
			xt_expect_none(x->rx, x->tx, 50);
		} else {
			res = sc_result(x, child);
			if (early == EARLY_DONE)
				XT_ASSERT(res.completed && !res.is_err,
					  "%s: the send did not complete before its receive was "
					  "posted (completed %d, err %d): not sent through bounce "
					  "buffers", what, res.completed, res.err);
			else
				XT_ASSERT(!res.completed,
					  "%s: the send completed (err %d) before its receive was "
					  "posted: not pulled by single copy (does this kernel "
					  "allow process_vm_readv between the test's processes?)",
					  what, res.err);
			xt_expect_none(x->rx, x->tx, 0);
		}
		t_post = xt_now_ms();
		post_recvv(x, tagged, &v, &v);
	}
	if (total <= v.total) {
		xt_expect_comp(x->rx, x->tx, &c);
		XT_ASSERT(c.e.op_context == &v, "%s: context %p", what, c.e.op_context);
		XT_ASSERT((c.e.flags & (FI_RECV | kind)) == (FI_RECV | kind) &&
			  !(c.e.flags & FI_SEND), "%s: flags 0x%llx", what,
			  (unsigned long long)c.e.flags);
		XT_ASSERT(c.e.len == total, "%s: completion len %zu", what, c.e.len);
		XT_ASSERT(!tagged || c.e.tag == TAG, "%s: tag 0x%llx", what,
			  (unsigned long long)c.e.tag);
		segs_check(&v, total, seed, what);
	} else {
		xt_expect_err(x->rx, x->tx, &c);
		XT_ASSERT(c.err.err == FI_ETRUNC, "%s: error %d (%s), expected FI_ETRUNC", what,
			  c.err.err, fi_strerror(c.err.err));
		XT_ASSERT(c.err.op_context == &v, "%s: context %p", what, c.err.op_context);
		XT_ASSERT(c.err.flags & FI_RECV, "%s: flags 0x%llx", what,
			  (unsigned long long)c.err.flags);
		XT_ASSERT(c.err.olen == total - v.total, "%s: olen %zu, expected %zu", what,
			  c.err.olen, total - v.total);
		segs_check(&v, v.total, seed, what);
	}
	res = sc_result(x, child);
	XT_ASSERT(res.completed && !res.is_err, "%s: send completed %d, err %d (%s)", what,
		  res.completed, res.err, fi_strerror(abs(res.err)));
	XT_ASSERT(res.context_ok, "%s: send completion with another context", what);
	XT_ASSERT((res.flags & (FI_SEND | kind)) == (FI_SEND | kind),
		  "%s: send flags 0x%llx", what, (unsigned long long)res.flags);
	if (early == EARLY_HELD && unexpected)
		XT_ASSERT(res.time_ms >= t_post, "%s: the %s send completed %llu ms before its "
			  "receive was posted", what, early_name(early),
			  (unsigned long long)(t_post - res.time_ms));
	segs_free(&v);
}

/* A message of size bytes in one entry at offset 0, into one entry of rsize. */
static struct xfer flat(size_t size, size_t rsize)
{
	return (struct xfer){ .sniov = 1, .slen = { size }, .rniov = 1, .rlen = { rsize } };
}

/* ---- sizes around the threshold ---- */

static const size_t sizes[] = {
	THRESHOLD - 1, THRESHOLD, THRESHOLD + 1, 65536, MiB + 3, 4 * MiB,
};

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static enum early early_for(size_t size, size_t threshold)
{
	return size > threshold ? EARLY_HELD : EARLY_DONE;
}

/* Expected and unexpected, untagged and tagged, one after the other. */
static void four_ways(const struct xfer *t, enum early unexpected_early, uint64_t seed)
{
	struct rig r;

	rig_start(&r, 0);
	for (int k = 0; k < 4; k++)
		transfer(&r.x, &r.a, t, k & 1, k & 2, k & 2 ? unexpected_early : EARLY_ANY, 0,
			 seed + (uint64_t)k);
	rig_stop(&r);
}

static void sizes_case(int i, bool cma)
{
	size_t size = sizes[i];
	struct xfer t = flat(size, size);

	four_ways(&t, cma ? early_for(size, THRESHOLD) : EARLY_DONE, size);
}

START_TEST(scopy_sizes_around_the_threshold_arrive_intact)
{
	sizes_case(_i, true);
}
END_TEST

/* ---- iov shapes, unaligned buffers, truncation ---- */

static const struct xfer shapes[] = {
	{ "1 entry into 2", 1, { 100003 }, { 1 }, 2, { 50000, 50003 }, { 7, 4095 } },
	{ "3 entries into 1", 3, { 1, 4095, 65537 }, { 1, 7, 4095 },
	  1, { 69633 }, { 4095 } },
	{ "3 entries into 8", 3, { 1, 4095, 65537 }, { 4095, 1, 7 },
	  8, { 1, 1, 4097, 3, 8191, 12289, 2, 45049 }, { 1, 7, 4095, 1, 7, 4095, 1, 7 } },
	{ "8 entries into 1", 8, { 1, 4095, 4097, 65537, 3, 8191, 12289, 2 },
	  { 1, 7, 4095, 1, 7, 4095, 1, 7 }, 1, { 94215 }, { 7 } },
	{ "8 entries into 2", 8, { 1, 4095, 4097, 65537, 3, 8191, 12289, 2 },
	  { 7, 4095, 1, 7, 4095, 1, 7, 4095 }, 2, { 4095, 90120 }, { 4095, 1 } },
	{ "8 entries into 8", 8, { 65537, 2, 12289, 1, 4097, 3, 8191, 4095 },
	  { 4095, 7, 1, 4095, 7, 1, 4095, 7 },
	  8, { 3, 70000, 1, 1, 9000, 4095, 4097, 7018 }, { 7, 1, 4095, 7, 1, 4095, 7, 1 } },
	{ "1 MiB in 8 entries into 3", 8,
	  { 131071, 131073, 1, 262143, 262145, 4095, 4097, 253951 },
	  { 1, 7, 4095, 1, 7, 4095, 1, 7 }, 3, { 524287, 3, 524286 }, { 4095, 7, 1 } },
	/* split copies whose last chunk is short (shm/scopy/split.h) */
	{ "4 chunks, the last short, in 5 entries into 3", 5, { 131071, 131075, 3, 262147, 90000 },
	  { 4095, 1, 7, 4095, 1 }, 3, { 300001, 7, 314288 }, { 7, 4095, 1 } },
	{ "256 KiB and 1 byte: 4 chunks, the last short", 1, { 262145 }, { 4095 }, 1, { 262145 }, { 1 } },
	{ "1 byte short of 2 chunks, 2 entries into 2", 2, { 131073, 131070 },
	  { 1, 4095 }, 2, { 7, 262136 }, { 4095, 7 } },
	{ "receiver larger than the message", 3, { 1, 4095, 65537 }, { 1, 7, 4095 },
	  3, { 40000, 40000, 40000 }, { 7, 1, 4095 } },
	/* truncated: the receiver's entries hold less than the message */
	{ "truncated, 1 entry into 1", 1, { MiB + 3 }, { 7 }, 1, { 40000 }, { 1 } },
	{ "truncated to 256 KiB and 6 bytes, 1 entry into 2", 1, { MiB + 3 }, { 4095 },
	  2, { 131073, 131077 }, { 1, 7 } },
	{ "truncated to 700003 bytes, 8 entries into 3", 8,
	  { 131071, 131073, 1, 262143, 262145, 4095, 4097, 253953 },
	  { 1, 7, 4095, 1, 7, 4095, 1, 7 }, 3, { 300000, 3, 400000 }, { 4095, 7, 1 } },
	{ "truncated below the threshold", 1, { 65537 }, { 1 }, 1, { 1000 }, { 4095 } },
	{ "truncated, 3 entries into 2", 3, { 1, 4095, 65537 }, { 1, 7, 4095 },
	  2, { 4095, 60000 }, { 7, 1 } },
	{ "truncated, 8 entries into 8", 8, { 1, 4095, 4097, 65537, 3, 8191, 12289, 2 },
	  { 1, 7, 4095, 1, 7, 4095, 1, 7 },
	  8, { 2, 4096, 4096, 4096, 4096, 4096, 4096, 4096 }, { 4095, 1, 7, 4095, 1, 7, 4095, 1 } },
};

static void shapes_case(int i, bool cma)
{
	const struct xfer *t = &shapes[i];
	size_t stotal = 0, rtotal = 0;

	for (size_t k = 0; k < t->sniov; k++)
		stotal += t->slen[k];
	for (size_t k = 0; k < t->rniov; k++)
		rtotal += t->rlen[k];
	XT_ASSERT(strncmp(t->name, "truncated", 9) == 0 ? rtotal < stotal :
		  strncmp(t->name, "receiver larger", 15) == 0 ? rtotal > stotal :
		  rtotal == stotal, "test table: %s: %zu bytes sent into %zu", t->name,
		  stotal, rtotal);
	four_ways(t, cma ? EARLY_HELD : EARLY_DONE, 0x1000 + 4 * (uint64_t)i);
}

START_TEST(scopy_iov_shapes_unaligned_and_truncated)
{
	shapes_case(_i, true);
}
END_TEST

/* ---- the sender pushes part of a split copy ---- */

#define SPLIT_TRIES	10
#define SPLIT_TRIES_MS	15000	/* on a loaded machine, more for this long */

/* Chunks of a split copy claimed from each end (shm/layout.h). */
struct split_claims {
	size_t front, back;
};

static struct split_claims split_claims(const struct xshm_region *receiver)
{
	uint64_t claims = atomic_load(&receiver->hdr->split.claims);

	return (struct split_claims){ (claims >> 16) & 0xffff, claims & 0xffff };
}

/*
 * The child polls its CQ from its post until the send completes: the
 * receive posted then is offered to it, and it pushes chunks from the back
 * while we pull from the front.  A child descheduled throughout pushes
 * nothing (other tests may hold both CPUs), so the message is large
 * enough that our part alone takes milliseconds, and up to SPLIT_TRIES
 * are sent, or more for up to SPLIT_TRIES_MS (a machine whose CPUs other
 * work holds), into one of which it must push.
 */
START_TEST(scopy_polling_sender_pushes_the_back_of_a_split_copy)
{
	const struct xfer t = {
		"split", 2, { 8 * MiB + 1, 24 * MiB + 4098 }, { 7, 4095 },
		2, { 16 * MiB + 3, 16 * MiB + 4096 }, { 1, 4095 },
	};
	const size_t nchunks = xshm_split_chunks(t.slen[0] + t.slen[1]);
	struct split_claims claims = { 0 };
	struct xshm_region receiver;
	uint64_t end = xt_now_ms() + SPLIT_TRIES_MS;
	struct rig r;
	int tries;

	rig_start(&r, 0);
	XT_ASSERT_RC(xshm_region_open(&receiver, xt_ep_id(&r.x)), 0);
	for (tries = 0; !claims.back &&
	     (tries < SPLIT_TRIES || xt_now_ms() < end); tries++) {
		/* unexpected: the child is polling when the receive is posted */
		transfer(&r.x, &r.a, &t, true, true, EARLY_HELD, 0, 0x2000 + tries);
		claims = split_claims(&receiver);
		XT_ASSERT(claims.front + claims.back == nchunks, "message %d: %zu "
			  "chunks pulled and %zu pushed of %zu", tries, claims.front,
			  claims.back, nchunks);
	}
	XT_ASSERT(claims.back > 0, "the polling sender pushed no chunk of %d "
		  "messages of %zu chunks", tries, nchunks);
	xshm_region_close(&receiver);
	rig_stop(&r);
}
END_TEST

/*
 * A sender that is not in libfabric while the receiver copies pushes
 * nothing: the receiver copies it all, after its first chunk the rest at
 * once (pull_front in rts.c), from an offset inside entries on both sides.
 * The send completes when the sender comes back.
 */
START_TEST(scopy_sleeping_sender_leaves_the_whole_copy_to_the_receiver)
{
	const struct xfer t = {
		"asleep", 3, { 3 * MiB + 7, 4095, 5 * MiB + 1 }, { 1, 7, 4095 },
		2, { 2 * MiB + 3, 6 * MiB + 4100 }, { 4095, 1 },
	};
	const size_t total = t.slen[0] + t.slen[1] + t.slen[2];
	struct sc_cmd cmd = {
		.mode = SC_SEND, .tagged = true, .seed = 91, .tag = TAG,
		.niov = t.sniov, .asleep = true,
	};
	struct split_claims claims;
	struct xshm_region receiver;
	struct sc_result res;
	struct xt_comp c;
	struct segs v;
	struct rig r;

	memcpy(cmd.len, t.slen, sizeof(t.slen));
	memcpy(cmd.off, t.soff, sizeof(t.soff));
	rig_start(&r, 0);
	XT_ASSERT_RC(xshm_region_open(&receiver, xt_ep_id(&r.x)), 0);
	segs_alloc(&v, t.rniov, t.rlen, t.roff, false);
	post_recvv(&r.x, true, &v, &v);
	sc_post(&r.x, &r.a, &cmd, true);
	xt_expect_comp(r.x.rx, r.x.tx, &c);
	XT_ASSERT(c.e.op_context == &v && c.e.len == total,
		  "receive context %p, len %zu", c.e.op_context, c.e.len);
	segs_check(&v, total, cmd.seed, t.name);
	claims = split_claims(&receiver);
	XT_ASSERT(claims.back == 0 && claims.front == xshm_split_chunks(total),
		  "%zu chunks pulled and %zu pushed of %zu by a sleeping sender",
		  claims.front, claims.back, xshm_split_chunks(total));
	xt_signal(r.a.sock, 1);
	res = sc_result(&r.x, &r.a);
	XT_ASSERT(res.completed && !res.is_err && res.context_ok,
		  "send completed %d, err %d", res.completed, res.err);
	segs_free(&v);
	xshm_region_close(&receiver);
	rig_stop(&r);
}
END_TEST

/* ---- a sender streaming large messages shares their copies ---- */

#define STREAM_LEN	(32 * MiB + 4097)	/* 18 chunks of 1.78 MiB */
#define CLAIM_WAIT_MS	5000

/* What the receiving child receives: n messages, tags TAG + i. */
struct rx_order {
	int n;
	size_t len[3];
	uint64_t seed;
	bool huge;		/* into buffers on huge pages */
};

/* Receives o's messages; the first is posted before the parent's go. */
static uint64_t rx_order_run(struct xt_ep *x, int sock, const struct rx_order *o)
{
	unsigned char *buf[3];
	uint64_t intact = 0;
	struct segs v[3];
	struct xt_comp c;

	for (int i = 0; i < o->n; i++) {
		segs_alloc(&v[i], 1, &o->len[i], NULL, o->huge);
		buf[i] = v[i].iov[0].iov_base;
	}
	xt_post_recv(x, true, buf[0], o->len[0], FI_ADDR_UNSPEC, TAG, 0, buf[0]);
	xt_send_u64(sock, 0);
	xt_wait_progress(sock, x);
	for (int i = 1; i < o->n; i++)
		xt_post_recv(x, true, buf[i], o->len[i], FI_ADDR_UNSPEC, TAG + i, 0, buf[i]);
	for (int done = 0; done < o->n; done++) {
		int i;

		xt_expect_comp(x->rx, x->tx, &c);
		for (i = 0; i < o->n - 1 && c.e.op_context != buf[i]; i++)
			;
		if (c.e.op_context == buf[i] && c.e.len == o->len[i] &&
		    xt_mismatch(buf[i], o->len[i], o->seed + i, 0) < 0)
			intact++;
	}
	for (int i = 0; i < o->n; i++)
		segs_free(&v[i]);
	return intact;
}

/* The receiving child: tells its endpoint id, then runs orders. */
static void rx_child(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct rx_order o;
	struct xt_ep x;

	(void)arg;
	xt_open(&x, &cfg);
	xt_exchange(&x, sock);
	xt_send_u64(sock, xt_ep_id(&x));
	for (;;) {
		xt_read_progress(sock, &o, sizeof(o), &x);
		if (!o.n)
			break;
		xt_send_u64(sock, rx_order_run(&x, sock, &o));
	}
	xt_close(&x);
}

/* We send to an rx_child, whose region we watch. */
struct stream_rig {
	struct xt_ep x;
	struct xt_child rx;
	fi_addr_t fa;
	struct xshm_region receiver;
	struct segs seg[3];
	unsigned char *buf[3];
};

static void stream_rig_start(struct stream_rig *r, const struct rx_order *o)
{
	struct xt_cfg cfg = xt_cfg_default();

	xt_spawn(&r->rx, rx_child, NULL);
	xt_open(&r->x, &cfg);
	r->fa = xt_exchange(&r->x, r->rx.sock);
	XT_ASSERT_RC(xshm_region_open(&r->receiver, xt_recv_u64(r->rx.sock)), 0);
	for (int i = 0; i < o->n; i++) {
		segs_alloc(&r->seg[i], 1, &o->len[i], NULL, o->huge);
		r->buf[i] = r->seg[i].iov[0].iov_base;
		xt_fill(r->buf[i], o->len[i], o->seed + i, 0);
	}
}

static void stream_rig_stop(struct stream_rig *r, const struct rx_order *o)
{
	struct rx_order end = { 0 };

	xt_write_bytes(r->rx.sock, &end, sizeof(end));
	xt_join(&r->rx);
	xshm_region_close(&r->receiver);
	xt_close(&r->x);
	for (int i = 0; i < o->n; i++)
		segs_free(&r->seg[i]);
}

static uint32_t split_gen(const struct xshm_region *receiver)
{
	return (uint32_t)(atomic_load(&receiver->hdr->split.claims) >> 32);
}

/*
 * Waits, without a call into libfabric, until the receiver has claimed at
 * least front chunks of a split copy of another generation than gen.
 */
static void wait_front_claims(const struct xshm_region *receiver, uint32_t gen,
			      size_t front)
{
	uint64_t end = xt_now_ms() + CLAIM_WAIT_MS;

	for (;;) {
		uint64_t word = atomic_load(&receiver->hdr->split.claims);
		size_t claimed = (word >> 16) & 0xffff;

		if ((uint32_t)(word >> 32) != gen && claimed >= front)
			return;
		XT_ASSERT(xt_now_ms() < end, "the receiver claimed %zu chunks in %d ms",
			  claimed, CLAIM_WAIT_MS);
	}
}

/* A send that must go out at once: a retry would progress. */
static void send_now(struct stream_rig *r, int i, size_t len)
{
	ssize_t rc = fi_tsend(r->x.ep, r->buf[i], len, NULL, r->fa, TAG + i, r->buf[i]);

	XT_ASSERT(rc == 0, "fi_tsend of %zu bytes: %zd (%s)", len, rc, xt_strerror(rc));
}

/*
 * Orders o from the child and sends its first two messages; returns the
 * split generation before them.
 */
static uint32_t stream_order_start(struct stream_rig *r, const struct rx_order *o)
{
	uint32_t gen = split_gen(&r->receiver);

	xt_write_bytes(r->rx.sock, o, sizeof(*o));
	xt_recv_u64(r->rx.sock);
	send_now(r, 0, o->len[0]);
	send_now(r, 1, o->len[1]);
	return gen;
}

/*
 * Lets the child post the rest and finish; checks both ends, the send
 * completions but the first read ones.
 */
static void stream_order_done(struct stream_rig *r, const struct rx_order *o, int read)
{
	struct xt_comp c;
	uint64_t intact;

	xt_signal(r->rx.sock, 1);
	intact = xt_recv_u64_progress(r->rx.sock, &r->x);
	XT_ASSERT(intact == (uint64_t)o->n, "%llu of %d messages arrived intact",
		  (unsigned long long)intact, o->n);
	for (int i = read; i < o->n; i++) {
		xt_expect_comp(r->x.tx, r->x.rx, &c);
		XT_ASSERT(c.e.flags & FI_SEND, "send completion flags 0x%llx",
			  (unsigned long long)c.e.flags);
	}
}

/*
 * A sender that calls into libfabric only to send, as one streaming
 * computed buffers does, shares the copy of its previous message in its
 * next large send: that send takes up the receiver's offer
 * (prov/xshm/data/send_queue.c).  We send a large message and a short one,
 * which keeps the receiver from taking all the rest of the first after
 * its first chunk (the next test); once it has claimed that chunk, we
 * send a large one, and find chunks of the first pushed when that send
 * returns, with no other call in between.
 */
START_TEST(scopy_next_large_send_shares_the_copy_of_the_previous)
{
	const struct rx_order o = { 3, { STREAM_LEN, 64, STREAM_LEN }, 0x5e9d };
	const size_t nchunks = xshm_split_chunks(STREAM_LEN);
	struct split_claims claims = { 0 };
	struct stream_rig r;
	int tries;

	stream_rig_start(&r, &o);
	for (tries = 0; tries < SPLIT_TRIES && !claims.back; tries++) {
		uint32_t gen = stream_order_start(&r, &o);

		wait_front_claims(&r.receiver, gen, 1);
		send_now(&r, 2, o.len[2]);
		claims = split_claims(&r.receiver);
		XT_ASSERT(claims.front + claims.back <= nchunks, "%zu + %zu chunks of %zu",
			  claims.front, claims.back, nchunks);
		stream_order_done(&r, &o, 0);
	}
	XT_ASSERT(claims.back > 0, "no send pushed a chunk of the message before "
		  "it in %d tries", tries);
	stream_rig_stop(&r, &o);
}
END_TEST

/*
 * A receiver with another command waiting behind the message it copies is
 * behind a sender that is still sending: past its first chunk it does not
 * take the rest, but leaves chunks to the sender's next call.  Here the
 * command behind is a short message, and the next call a poll of our CQ
 * once the receiver has claimed two chunks.
 */
START_TEST(scopy_receiver_behind_its_sender_leaves_it_chunks)
{
	const struct rx_order o = { 2, { STREAM_LEN, 64 }, 0xbe41 };
	struct split_claims claims = { 0 };
	struct stream_rig r;
	int tries;

	stream_rig_start(&r, &o);
	for (tries = 0; tries < SPLIT_TRIES && !claims.back; tries++) {
		wait_front_claims(&r.receiver, stream_order_start(&r, &o), 2);
		xt_progress(&r.x);
		claims = split_claims(&r.receiver);
		stream_order_done(&r, &o, 0);
	}
	XT_ASSERT(claims.back > 0, "the receiver left no chunk to its sender in %d "
		  "tries", tries);
	stream_rig_stop(&r, &o);
}
END_TEST

/* ---- the sender's buffers are gone when the receiver pulls ---- */

#define GONE_SIZE	MiB

/* Asserts the receive posted with context ctx fails with FI_EIO, promptly. */
static void expect_pull_error(struct xt_ep *x, void *ctx, const char *what)
{
	uint64_t start = xt_now_ms();
	struct xt_comp c;

	xt_expect_err_ms(x->rx, x->tx, FAIL_MS, &c);
	XT_ASSERT(c.err.err == FI_EIO, "%s: receive error %d (%s), expected FI_EIO", what,
		  c.err.err, fi_strerror(c.err.err));
	XT_ASSERT(c.err.op_context == ctx, "%s: error with context %p", what, c.err.op_context);
	XT_ASSERT((c.err.flags & (FI_RECV | FI_TAGGED)) == (FI_RECV | FI_TAGGED),
		  "%s: error flags 0x%llx", what, (unsigned long long)c.err.flags);
	XT_ASSERT(xt_now_ms() - start <= FAIL_MS, "%s: error after %llu ms", what,
		  (unsigned long long)(xt_now_ms() - start));
}

/*
 * _i 0: unexpected (the RTS is held when the receive is posted), 1: expected
 * (the receive is posted first and we do not progress until the child is
 * gone).  The child posts a 1 MiB send and _exits without closing; then a
 * second child, which opens its endpoint only now, sends on the same
 * endpoint: its messages arrive intact.
 */
START_TEST(scopy_sender_gone_before_the_pull_fails_the_receive)
{
	bool unexpected = _i == 0;
	struct sc_arg later = { .cfg = xt_cfg_default(), .deferred = true };
	struct sc_cmd cmd = {
		.mode = SC_EXIT, .tagged = true, .seed = 41, .tag = TAG, .niov = 1,
		.len = { GONE_SIZE }, .off = { 1 },
	};
	struct xfer t = flat(MiB + 3, MiB + 3);
	struct xt_cfg cfg = xt_cfg_default();
	unsigned char *buf = xt_alloc(GONE_SIZE);
	struct xt_child a, b;
	struct xt_ep x;

	xt_spawn(&a, sc_child, NULL);
	xt_spawn(&b, sc_child, &later);
	xt_open(&x, &cfg);
	xt_connect_sender(&x, &a, true);
	if (!unexpected)
		XT_POST(&x, fi_trecv(x.ep, buf, GONE_SIZE, NULL, FI_ADDR_UNSPEC, TAG, 0, buf));
	sc_post(&x, &a, &cmd, false);
	xt_join(&a);	/* gone, and reaped: its pid names no process */
	if (unexpected) {
		xt_expect_none(x.rx, x.tx, 100);	/* the RTS arrives and is held */
		XT_POST(&x, fi_trecv(x.ep, buf, GONE_SIZE, NULL, FI_ADDR_UNSPEC, TAG, 0, buf));
	}
	expect_pull_error(&x, buf, "sender gone");
	xt_expect_none(x.rx, x.tx, 50);

	/* The endpoint goes on: a new sender's messages arrive intact. */
	xt_signal(b.sock, 1);
	xt_connect_sender(&x, &b, true);
	transfer(&x, &b, &t, true, false, EARLY_ANY, 0, 42);
	transfer(&x, &b, &t, true, true, EARLY_HELD, 0, 43);
	sc_quit(&x, &b);
	xt_close(&x);
	free(buf);
}
END_TEST

/*
 * The sender unmaps its buffers after posting (_i 0: unexpected, 1:
 * expected, with no progress before the unmap): the receive fails with
 * FI_EIO, the send with an error completion; both endpoints go on.
 */
START_TEST(scopy_sender_buffers_gone_fails_both_ends)
{
	bool unexpected = _i == 0;
	struct sc_cmd cmd = {
		.mode = SC_UNMAP, .tagged = true, .seed = 51, .tag = TAG, .niov = 2,
		.len = { GONE_SIZE / 2, GONE_SIZE / 2 }, .off = { 7, 4095 },
	};
	struct xfer t = flat(MiB + 3, MiB + 3);
	unsigned char *buf = xt_alloc(GONE_SIZE);
	struct sc_result res;
	struct rig r;

	rig_start(&r, 0);
	if (!unexpected)
		XT_POST(&r.x, fi_trecv(r.x.ep, buf, GONE_SIZE, NULL, FI_ADDR_UNSPEC, TAG, 0, buf));
	sc_post(&r.x, &r.a, &cmd, false);
	if (unexpected) {
		xt_expect_none(r.x.rx, r.x.tx, 100);
		XT_POST(&r.x, fi_trecv(r.x.ep, buf, GONE_SIZE, NULL, FI_ADDR_UNSPEC, TAG, 0, buf));
	}
	expect_pull_error(&r.x, buf, "sender's buffers unmapped");
	res = sc_result(&r.x, &r.a);
	XT_ASSERT(res.completed, "the send whose buffers could not be pulled did not complete");
	XT_ASSERT(res.is_err, "the send whose buffers could not be pulled completed "
		  "successfully (flags 0x%llx)", (unsigned long long)res.flags);
	XT_ASSERT(res.context_ok, "send error with another context");
	XT_ASSERT(res.flags & FI_SEND, "send error flags 0x%llx", (unsigned long long)res.flags);
	xt_expect_none(r.x.rx, r.x.tx, 50);
	transfer(&r.x, &r.a, &t, true, true, EARLY_HELD, 0, 52);
	transfer(&r.x, &r.a, &t, false, false, EARLY_ANY, 0, 53);
	rig_stop(&r);
	free(buf);
}
END_TEST

/*
 * The sender closes its endpoint (dropping the send) and reuses its buffers
 * while its process lives on: the receive must fail, not deliver what the
 * buffers hold now.
 */
START_TEST(scopy_sender_closed_before_the_pull_fails_the_receive)
{
	struct sc_cmd cmd = {
		.mode = SC_CLOSE, .tagged = true, .seed = 81, .tag = TAG, .niov = 1,
		.len = { GONE_SIZE }, .off = { 7 },
	};
	struct xfer t = flat(MiB + 3, MiB + 3);
	unsigned char *buf = xt_alloc(GONE_SIZE);
	struct xt_comp c;
	struct rig r;

	rig_start(&r, 0);
	/* A message first: the receiver knows this sender already. */
	transfer(&r.x, &r.a, &t, true, false, EARLY_ANY, 0, 80);
	sc_post(&r.x, &r.a, &cmd, true);	/* posted, closed and overwritten */
	xt_expect_none(r.x.rx, r.x.tx, 100);
	XT_POST(&r.x, fi_trecv(r.x.ep, buf, GONE_SIZE, NULL, FI_ADDR_UNSPEC, TAG, 0, buf));
	if (xt_poll(r.x.rx, r.x.tx, FAIL_MS, &c) == 0 && !c.is_err)
		XT_ASSERT(false, "a receive matching a send its sender dropped by closing "
			  "completed with %zu bytes (data %s the sent message)", c.e.len,
			  xt_mismatch(buf, GONE_SIZE, 81, 0) < 0 ? "equal to" : "not");
	XT_ASSERT(c.is_err, "no completion within %d ms", FAIL_MS);
	XT_ASSERT(c.err.op_context == buf, "error with context %p", c.err.op_context);
	XT_ASSERT(c.err.flags & FI_RECV, "error flags 0x%llx", (unsigned long long)c.err.flags);
	xt_signal(r.a.sock, 1);
	xt_join(&r.a);
	xt_expect_none(r.x.rx, r.x.tx, 50);
	xt_close(&r.x);
	free(buf);
}
END_TEST

/*
 * FI_PEEK | FI_CLAIM on a held RTS message reports its length and leaves
 * the send pending; the claiming receive pulls it.
 */
START_TEST(scopy_peek_and_claim_pull_the_held_message)
{
	const size_t size = MiB + 3;
	struct sc_cmd cmd = {
		.mode = SC_SEND, .tagged = true, .seed = 91, .tag = TAG, .niov = 1,
		.len = { size }, .off = { 1 }, .early_ms = HELD_MS,
	};
	unsigned char *buf = xt_alloc(size);
	struct iovec iov = { buf, size };
	struct fi_context ctx;
	struct fi_msg_tagged peek = {
		.msg_iov = NULL, .iov_count = 0, .addr = FI_ADDR_UNSPEC, .tag = TAG,
		.context = &ctx,
	};
	struct fi_msg_tagged claim = {
		.msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .tag = TAG,
		.context = &ctx,
	};
	struct sc_result res;
	struct xt_comp c;
	struct rig r;

	rig_start(&r, 0);
	sc_post(&r.x, &r.a, &cmd, true);
	res = sc_result(&r.x, &r.a);
	XT_ASSERT(!res.completed, "the %zu-byte send completed before any receive", size);
	XT_POST(&r.x, fi_trecvmsg(r.x.ep, &peek, FI_PEEK | FI_CLAIM));
	xt_wait_rx(&r.x, &c);
	XT_ASSERT(c.e.op_context == &ctx, "peek context %p", c.e.op_context);
	XT_ASSERT(c.e.len == size, "peek len %zu, sent %zu", c.e.len, size);
	XT_ASSERT(c.e.tag == TAG, "peek tag 0x%llx", (unsigned long long)c.e.tag);
	xt_expect_none(r.x.rx, r.x.tx, 50);
	XT_POST(&r.x, fi_trecvmsg(r.x.ep, &claim, FI_CLAIM | FI_COMPLETION));
	xt_wait_rx(&r.x, &c);
	XT_ASSERT(c.e.op_context == &ctx, "claim context %p", c.e.op_context);
	XT_ASSERT(c.e.len == size, "claimed len %zu, sent %zu", c.e.len, size);
	XT_ASSERT_PATTERN(buf, size, 91, 0);
	res = sc_result(&r.x, &r.a);
	XT_ASSERT(res.completed && !res.is_err, "send completed %d, err %d", res.completed,
		  res.err);
	rig_stop(&r);
	free(buf);
}
END_TEST

/* ---- FI_XSHM_CMA=0: bounce buffers for every size ---- */

/* Before any libfabric call, so that this process and its children see it. */
static void set_env(const char *name, const char *value)
{
	XT_ASSERT(setenv(name, value, 1) == 0, "setenv %s", name);
}

/*
 * Most cases pull messages from 32 KiB up, to exercise iov shapes and
 * failures at sizes that fork and check quickly; "default" checks the
 * documented threshold itself.
 */
static void use_test_threshold(void)
{
	set_env("FI_XSHM_SCOPY_THRESHOLD", "32768");
}

static const size_t default_sizes[] = { DEFAULT_THRESHOLD, DEFAULT_THRESHOLD + 1 };

START_TEST(default_threshold_is_four_mib)
{
	size_t size = default_sizes[_i];
	struct xfer t = flat(size, size);
	char value[32];

	/* the threshold alone, whatever the pages: they have the "pages" tcase */
	snprintf(value, sizeof(value), "%zu", (size_t)DEFAULT_THRESHOLD);
	set_env("FI_XSHM_SCOPY_HUGE_MIN", value);
	set_env("FI_XSHM_SCOPY_HUGE_STREAM_MIN", value);
	four_ways(&t, early_for(size, DEFAULT_THRESHOLD), size);
}
END_TEST

START_TEST(fallback_sizes_arrive_intact)
{
	set_env("FI_XSHM_CMA", "0");
	sizes_case(_i, false);
}
END_TEST

/* Two shapes: 8 entries into 2, and truncated 3 entries into 2. */
static const int fallback_shapes[] = { 4, 10 };

START_TEST(fallback_iov_shapes_arrive_intact)
{
	set_env("FI_XSHM_CMA", "0");
	shapes_case(fallback_shapes[_i], false);
}
END_TEST

/* ---- FI_XSHM_SCOPY_THRESHOLD moved to 1024 ---- */

#define LOW_THRESHOLD	1024

static const size_t low_sizes[] = { LOW_THRESHOLD, LOW_THRESHOLD + 1, 2 * KiB, 100 * KiB };

START_TEST(threshold_moved_delivers_intact)
{
	size_t size = low_sizes[_i];
	struct xfer t = flat(size, size);

	set_env("FI_XSHM_SCOPY_THRESHOLD", "1024");
	four_ways(&t, early_for(size, LOW_THRESHOLD), size + 7);
}
END_TEST

/*
 * An inject above the moved threshold (but within inject_size) is copied
 * before the call returns: its buffer is overwritten at once, and the
 * message still arrives intact.
 */
START_TEST(threshold_moved_inject_is_still_copied)
{
	bool unexpected = _i;
	struct xfer t = { .sniov = 2, .slen = { 1, 2047 }, .soff = { 7, 4095 },
			  .rniov = 1, .rlen = { 2048 }, .roff = { 1 } };
	struct rig r;

	set_env("FI_XSHM_SCOPY_THRESHOLD", "1024");
	rig_start(&r, 0);
	XT_ASSERT(r.x.info->tx_attr->inject_size >= 2048, "inject_size %zu",
		  r.x.info->tx_attr->inject_size);
	transfer(&r.x, &r.a, &t, true, unexpected, unexpected ? EARLY_DONE : EARLY_ANY,
		 FI_INJECT | FI_COMPLETION, 61);
	rig_stop(&r);
}
END_TEST

/* ---- bounce buffers or single copy by the pages (data/large_path.c) ---- */

/*
 * Messages larger than FI_XSHM_SCOPY_HUGE_MIN (512 KiB by default; for a
 * send in a stream FI_XSHM_SCOPY_HUGE_STREAM_MIN, 128 KiB) and at
 * most the threshold take the single copy when the sender's buffers lie on
 * huge pages and the receiver's region says the buffers of its latest such
 * message did; bounce buffers otherwise.  The receiver says so once such a
 * message completes, so the first on huge pages still bounces.  The
 * child's sends follow one another with no receive between: in a stream,
 * whose minimum, FI_XSHM_SCOPY_HUGE_STREAM_MIN, is 128 KiB by default.  The
 * messages are unexpected, which shows from the sender which path they
 * took, and each is a few bytes longer than the one before, so that
 * neither side's memo (shm/scopy/huge.h) answers for a buffer mapped
 * anew at the same address.
 */
#define PAGES_SIZE	(MiB + 4099)

struct pages_step {
	size_t size;
	bool shuge, rhuge;
	enum early early;
	const char *name;
};

/* The pages choose only with FI_XSHM_PATH=static; auto measures instead. */
static void use_static_path(void)
{
	XT_ASSERT(setenv("FI_XSHM_PATH", "static", 1) == 0, "setenv");
}

static void pages_steps(const struct pages_step *steps, int n, uint64_t seed)
{
	struct rig r;

	rig_start(&r, 0);
	for (int k = 0; k < n; k++) {
		struct xfer t = flat(steps[k].size + 64 * k, steps[k].size + 64 * k);

		t.name = steps[k].name;
		t.shuge = steps[k].shuge;
		t.rhuge = steps[k].rhuge;
		transfer(&r.x, &r.a, &t, true, true, steps[k].early, 0, seed + k);
	}
	rig_stop(&r);
}

START_TEST(sizes_by_pages_take_the_single_copy_when_both_sides_are_huge)
{
	static const struct pages_step steps[] = {
		{ PAGES_SIZE, true, true, EARLY_DONE, "both huge, not said yet" },
		{ PAGES_SIZE, true, true, EARLY_HELD, "both huge" },
		{ PAGES_SIZE, true, true, EARLY_HELD, "both huge again" },
		{ PAGES_SIZE, false, true, EARLY_DONE, "the sender's small" },
		{ PAGES_SIZE, true, false, EARLY_HELD, "the receiver's small, not said yet" },
		{ PAGES_SIZE, true, false, EARLY_DONE, "the receiver's small" },
		{ PAGES_SIZE, true, true, EARLY_DONE, "both huge again, not said yet" },
		{ DEFAULT_THRESHOLD - 64 * 7, true, true, EARLY_HELD,
		  "both huge, the threshold" },
	};

	pages_steps(steps, N(steps), 0x3000);
}
END_TEST

/* Whether a send of ours completes within ms, while we progress. */
static bool send_completes(struct stream_rig *r, int ms)
{
	struct xt_comp c;

	if (xt_poll(r->x.tx, r->x.rx, ms, &c) != 0)
		return false;
	XT_ASSERT(!c.is_err && (c.e.flags & FI_SEND), "send completion: err %d, "
		  "flags 0x%llx", c.is_err ? c.err.err : 0,
		  (unsigned long long)c.e.flags);
	return true;
}

/* A receive of ours completes: a message to ourselves, at address self. */
static void receive_from_self(struct stream_rig *r, fi_addr_t self)
{
	unsigned char out = 1, in = 0;
	struct xt_comp c;

	xt_post_recv(&r->x, true, &in, 1, FI_ADDR_UNSPEC, TAG + 7, 0, &in);
	XT_POST(&r->x, fi_tsend(r->x.ep, &out, 1, NULL, self, TAG + 7, &out));
	xt_expect_comp(r->x.rx, r->x.tx, &c);
	XT_ASSERT(c.e.op_context == &in && in == 1, "the message to ourselves");
	xt_expect_comp(r->x.tx, r->x.rx, &c);
}

#define BY_PAGES_SEED	0x5a11

/*
 * Whether a message of len bytes went through bounce buffers: we order the
 * child to receive 64 B and it, on huge pages, and send it from the start
 * of our buffer 1, alone (after a receive of our own) or not.  Unexpected,
 * a bounced send completes at once, a pulled one only once the child posts
 * its receive.  Then we send the 64 B and check both ends.
 */
static bool sent_bounced(struct stream_rig *r, fi_addr_t self, size_t len, bool alone)
{
	const struct rx_order o = { 2, { 64, len }, BY_PAGES_SEED, true };
	bool bounced;

	xt_write_bytes(r->rx.sock, &o, sizeof(o));
	xt_recv_u64(r->rx.sock);
	if (alone)
		receive_from_self(r, self);
	send_now(r, 1, len);
	bounced = send_completes(r, HELD_MS);
	send_now(r, 0, o.len[0]);
	stream_order_done(r, &o, bounced);
	return bounced;
}

/* One send of the by-pages tests below, and the path it must take. */
struct by_pages_step {
	size_t len;
	bool alone, bounced;
	const char *what;
};

/* Sends the steps, in order, to a new child; buffer 1 holds them all. */
static void by_pages_steps(const struct by_pages_step *steps, int n)
{
	const struct rx_order most = { 2, { 64, 512 * KiB + 1 }, BY_PAGES_SEED, true };
	struct stream_rig r;
	fi_addr_t self;

	stream_rig_start(&r, &most);
	self = xt_av_insert(&r.x, r.x.name);
	for (int k = 0; k < n; k++) {
		bool bounced = sent_bounced(&r, self, steps[k].len, steps[k].alone);

		XT_ASSERT(bounced == steps[k].bounced, "%s, %zu bytes: %s", steps[k].what,
			  steps[k].len, bounced ? "bounced" : "pulled");
	}
	stream_rig_stop(&r, &most);
}

/*
 * 512 KiB is the default FI_XSHM_SCOPY_HUGE_MIN: a lone send, the first
 * to this receiver or made after a receive of ours completed, takes the
 * single copy above it only.  The first message bounces whatever its size:
 * the receiver has not said yet that its buffers are huge.
 */
START_TEST(sizes_by_pages_start_above_512_kib_alone)
{
	static const struct by_pages_step steps[] = {
		{ 512 * KiB + 1, true, true, "the first" },
		{ 512 * KiB, true, true, "alone" },
		{ 512 * KiB + 1, true, false, "alone" },
	};

	by_pages_steps(steps, N(steps));
}
END_TEST

/*
 * A send to the receiver of the endpoint's previous send of these sizes,
 * with no receive completed since, is in a stream, and takes the single
 * copy from above FI_XSHM_SCOPY_HUGE_STREAM_MIN (128 KiB by default).
 * After a receive of ours, the same send stands alone and bounces.
 */
START_TEST(sizes_by_pages_in_a_stream_start_above_128_kib)
{
	static const struct by_pages_step steps[] = {
		{ 128 * KiB + 1, true, true, "the first" },
		{ 128 * KiB + 1, true, true, "alone, after a receive" },
		{ 128 * KiB, false, true, "in a stream" },
		{ 128 * KiB + 1, false, false, "in a stream" },
	};

	by_pages_steps(steps, N(steps));
}
END_TEST

/*
 * FI_XSHM_SCOPY_HUGE_MIN and FI_XSHM_SCOPY_HUGE_STREAM_MIN at the
 * threshold: bounce buffers whatever the pages.
 */
START_TEST(scopy_huge_min_at_the_threshold_keeps_bounce_buffers)
{
	static const struct pages_step steps[] = {
		{ PAGES_SIZE, true, true, EARLY_DONE, "both huge, off" },
		{ PAGES_SIZE, true, true, EARLY_DONE, "both huge, off, said" },
		{ DEFAULT_THRESHOLD - 128, true, true, EARLY_DONE, "both huge, off, the threshold" },
	};

	set_env("FI_XSHM_SCOPY_HUGE_MIN", "4194304");
	set_env("FI_XSHM_SCOPY_HUGE_STREAM_MIN", "4194304");
	pages_steps(steps, N(steps), 0x3200);
}
END_TEST

/* ---- FI_DELIVERY_COMPLETE and FI_MATCH_COMPLETE ---- */

/*
 * _i: 0/1 FI_DELIVERY_COMPLETE / FI_MATCH_COMPLETE on fi_tsendmsg; 2/3 the
 * same as the sender endpoint's op_flags with fi_tsendv; 4/5 as 0/1 with
 * FI_XSHM_CMA=0.  The receiver progresses for HELD_DC_MS with nothing
 * posted, the send must still be pending; then it posts and both complete.
 */
#define HELD_DC_MS	300


START_TEST(completion_large_send_waits_for_the_receive)
{
	uint64_t flag = _i & 1 ? FI_MATCH_COMPLETE : FI_DELIVERY_COMPLETE;
	bool as_op_flags = _i == 2 || _i == 3, cma = _i < 4;
	struct xfer t = { .sniov = 3, .slen = { 1, 4095, MiB }, .soff = { 1, 7, 4095 },
			  .rniov = 2, .rlen = { 7, MiB + 4089 }, .roff = { 4095, 1 } };
	struct rig r;

	if (!cma)
		set_env("FI_XSHM_CMA", "0");
	held_ms_override = HELD_DC_MS;
	rig_start(&r, as_op_flags ? flag : 0);
	transfer(&r.x, &r.a, &t, true, true, EARLY_HELD,
		 as_op_flags ? 0 : flag | FI_COMPLETION, 71);
	transfer(&r.x, &r.a, &t, false, false, EARLY_ANY,
		 as_op_flags ? 0 : flag | FI_COMPLETION, 72);
	rig_stop(&r);
}
END_TEST

/* ---- ordering across protocols ---- */

static const size_t order_sizes[] = {
	100, MiB, 40000, 300, 2 * MiB + 1, THRESHOLD + 1, 5, THRESHOLD, 65536,
};

/* _i 0: unexpected, 1: expected.  One tag; receives match in send order. */
START_TEST(order_mixed_sizes_match_in_send_order)
{
	enum { COUNT = N(order_sizes) };
	bool unexpected = _i == 0;
	struct xt_burst_msg msgs[COUNT];
	struct xt_burst_result res[COUNT];
	struct xt_cfg cfg = xt_cfg_default();
	unsigned char *bufs[COUNT];
	bool seen[COUNT] = { false };
	const size_t cap = 2 * MiB + 1;
	struct xt_child c;
	struct xt_ep x;

	for (int k = 0; k < COUNT; k++) {
		msgs[k] = (struct xt_burst_msg){ .tagged = true, .plain = true,
						 .len = order_sizes[k], .seed = 300 + k,
						 .tag = TAG };
		bufs[k] = xt_alloc(cap);
	}
	xt_spawn(&c, xt_burst_child, NULL);
	xt_open(&x, &cfg);
	xt_connect_sender(&x, &c, true);
	if (!unexpected)
		for (int k = 0; k < COUNT; k++)
			xt_post_recv(&x, true, bufs[k], cap, FI_ADDR_UNSPEC, TAG, 0, bufs[k]);
	xt_burst_post(&x, &c, msgs, COUNT, CHILD_WAIT_MS);
	if (unexpected) {
		xt_expect_none(x.rx, x.tx, 100);
		for (int k = 0; k < COUNT; k++)
			xt_post_recv(&x, true, bufs[k], cap, FI_ADDR_UNSPEC, TAG, 0, bufs[k]);
	}
	for (int n = 0; n < COUNT; n++) {
		struct xt_comp comp;
		int k;

		xt_wait_rx(&x, &comp);
		for (k = 0; k < COUNT && bufs[k] != comp.e.op_context; k++)
			;
		XT_ASSERT(k < COUNT && !seen[k], "completion with context %p", comp.e.op_context);
		seen[k] = true;
		XT_ASSERT(comp.e.len == order_sizes[k], "receive %d got %zu bytes, message %d "
			  "has %zu", k, comp.e.len, k, order_sizes[k]);
		XT_ASSERT(xt_mismatch(bufs[k], order_sizes[k], 300 + k, 0) < 0,
			  "receive %d (%zu bytes) does not hold message %d", k, comp.e.len, k);
	}
	xt_burst_results(&x, &c, res, COUNT);
	for (int k = 0; k < COUNT; k++)
		XT_ASSERT(res[k].completed && !res[k].is_err, "send %d (%zu bytes): completed %d, "
			  "err %d", k, order_sizes[k], res[k].completed, res[k].err);
	xt_burst_quit(&x, &c);
	xt_close(&x);
	for (int k = 0; k < COUNT; k++)
		free(bufs[k]);
}
END_TEST

/* ---- the path measured (FI_XSHM_PATH=auto) or forced ---- */

/*
 * Unexpected messages of one size class to a fresh receiver: whether each
 * send completed before its receive was posted tells the path it took.
 */
#define PATH_SIZE	(64 * KiB + 4099)

static void path_steps(const enum early *early, int n, uint64_t seed)
{
	struct pages_step steps[6];

	for (int k = 0; k < n; k++)
		steps[k] = (struct pages_step) { PATH_SIZE, false, false, early[k],
						 "path" };
	pages_steps(steps, n, seed);
}

/*
 * While a class is young, it probes the path not chosen as often as it
 * takes the chosen one.  The first send stands alone (no large send before
 * it); the others join a stream (no receive completes at the sender), a
 * class of its own, which probes 4 in a row (XSHM_PATH_PROBE_RUN): its
 * first four take the bounce buffers chosen, the next ones the probed
 * single copy.
 */
START_TEST(auto_path_probes_the_single_copy_while_young)
{
	static const enum early early[] = { EARLY_DONE, EARLY_DONE, EARLY_DONE,
					    EARLY_DONE, EARLY_DONE, EARLY_HELD };

	set_env("FI_XSHM_PATH", "auto");
	path_steps(early, 6, 300);
}
END_TEST

/* The parameters that force a path override the measured choice. */
static const struct forced_path {
	const char *name, *value;	/* the variable that forces it */
	enum early early;		/* every send's path */
} forced_paths[] = {
	{ "FI_XSHM_PATH", "static", EARLY_DONE },	/* below the threshold */
	{ "FI_XSHM_SCOPY_THRESHOLD", "32768", EARLY_HELD },
	{ "FI_XSHM_CMA", "0", EARLY_DONE },		/* whatever the path */
};

START_TEST(forcing_parameters_override_the_measured_path)
{
	const struct forced_path *forced = &forced_paths[_i];
	enum early early[4];

	for (int k = 0; k < 4; k++)
		early[k] = forced->early;
	set_env(forced->name, forced->value);
	path_steps(early, 4, 310 + 10 * (uint64_t)_i);
}
END_TEST

static Suite *scopy_suite(void)
{
	Suite *s = suite_create("scopy");
	TCase *sz = tcase_create("sizes");
	TCase *iov = tcase_create("iov");
	TCase *fail = tcase_create("failure");
	TCase *fb = tcase_create("fallback");
	TCase *thr = tcase_create("threshold");
	TCase *comp = tcase_create("completion");
	TCase *ord = tcase_create("order");
	TCase *dflt = tcase_create("default");
	TCase *split = tcase_create("split");
	TCase *pages = tcase_create("pages");
	TCase *path = tcase_create("path");
	TCase *fixed[] = { sz, iov, split, fail, comp, ord };

	for (size_t i = 0; i < N(fixed); i++)
		tcase_add_checked_fixture(fixed[i], use_test_threshold, NULL);
	tcase_set_timeout(dflt, 60);
	tcase_add_loop_test(dflt, default_threshold_is_four_mib, 0, N(default_sizes));
	suite_add_tcase(s, dflt);

	tcase_set_timeout(sz, 60);
	tcase_add_loop_test(sz, scopy_sizes_around_the_threshold_arrive_intact, 0,
			    N(sizes));
	suite_add_tcase(s, sz);

	tcase_set_timeout(iov, 60);
	tcase_add_loop_test(iov, scopy_iov_shapes_unaligned_and_truncated, 0, N(shapes));
	suite_add_tcase(s, iov);

	tcase_set_timeout(split, 60);
	tcase_add_test(split, scopy_polling_sender_pushes_the_back_of_a_split_copy);
	tcase_add_test(split, scopy_sleeping_sender_leaves_the_whole_copy_to_the_receiver);
	tcase_add_test(split, scopy_next_large_send_shares_the_copy_of_the_previous);
	tcase_add_test(split, scopy_receiver_behind_its_sender_leaves_it_chunks);
	suite_add_tcase(s, split);

	tcase_set_timeout(fail, 60);
	tcase_add_loop_test(fail, scopy_sender_gone_before_the_pull_fails_the_receive, 0, 2);
	tcase_add_loop_test(fail, scopy_sender_buffers_gone_fails_both_ends, 0, 2);
	tcase_add_test(fail, scopy_sender_closed_before_the_pull_fails_the_receive);
	suite_add_tcase(s, fail);

	tcase_set_timeout(fb, 60);
	tcase_add_loop_test(fb, fallback_sizes_arrive_intact, 0, N(sizes));
	tcase_add_loop_test(fb, fallback_iov_shapes_arrive_intact, 0, N(fallback_shapes));
	suite_add_tcase(s, fb);

	tcase_set_timeout(thr, 60);
	tcase_add_loop_test(thr, threshold_moved_delivers_intact, 0, N(low_sizes));
	tcase_add_loop_test(thr, threshold_moved_inject_is_still_copied, 0, 2);
	suite_add_tcase(s, thr);

	tcase_set_timeout(path, 60);
	tcase_add_test(path, auto_path_probes_the_single_copy_while_young);
	tcase_add_loop_test(path, forcing_parameters_override_the_measured_path, 0,
			    N(forced_paths));
	suite_add_tcase(s, path);
	if (test_huge_pages_usable("test_scopy")) {
		tcase_set_timeout(pages, 60);
		tcase_add_checked_fixture(pages, use_static_path, NULL);
		tcase_add_test(pages, sizes_by_pages_take_the_single_copy_when_both_sides_are_huge);
		tcase_add_test(pages, sizes_by_pages_start_above_512_kib_alone);
		tcase_add_test(pages, sizes_by_pages_in_a_stream_start_above_128_kib);
		tcase_add_test(pages, scopy_huge_min_at_the_threshold_keeps_bounce_buffers);
		suite_add_tcase(s, pages);
	}

	tcase_set_timeout(comp, 60);
	tcase_add_loop_test(comp, completion_large_send_waits_for_the_receive, 0, 6);
	suite_add_tcase(s, comp);

	tcase_set_timeout(ord, 60);
	tcase_add_loop_test(ord, order_mixed_sizes_match_in_send_order, 0, 2);
	tcase_add_test(ord, scopy_peek_and_claim_pull_the_held_message);
	suite_add_tcase(s, ord);
	return s;
}

int main(void)
{
	if (!xt_wanted(XT_XSHM))	/* none of its cases is selected */
		return xt_run_suite(suite_create("scopy"));
	return xt_run_suite(scopy_suite());
}
