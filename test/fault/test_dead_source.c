/*
 * Receives directed at a source (FI_DIRECTED_RECV) whose process dies.
 *
 * The source sends a few messages, which complete (their data is in the
 * survivor's memory), then dies while the survivor, not progressing, still
 * has them in its ring.
 * (a) Receives directed at it, posted before the death: those its messages
 *     match complete whole, first; the others complete with FI_EIO within
 *     FAULT_DETECT_MS (_i: tagged, untagged, a multi-receive buffer), and
 *     its region file is removed.  The same when another process removed
 *     that file before the survivor ever looked at it.
 * (b) A receive from FI_ADDR_UNSPEC stays posted when one of its possible
 *     sources dies, and completes later from a live sender.
 * (c) Directed receives posted after the death: one that a message the dead
 *     source left unexpected matches gets it; one that none matches fails
 *     with FI_EIO at once, within the bound (_i: tagged, untagged).
 * (d) A source that closed its endpoint but still runs is waited for: its
 *     directed receive stays posted until its process exits, then fails.
 */
#include "fault.h"

#include <errno.h>
#include <stdlib.h>

#define TAG_EARLY	0x5dead00000000001ULL
#define TAG_DEAD	0x5dead00000000002ULL
#define TAG_ANY		0x5dead00000000003ULL
#define TAG_HELD	0x5dead00000000004ULL
#define KiB		((size_t)1 << 10)
#define SMALL		64
#define MEDIUM		(64 * KiB)
#define MULTI_LEN	(256 * KiB)
#define LIVE_LEN	(4 * KiB)
#define MAX_MSGS	4

enum kind { TAGGED, UNTAGGED, MULTI };

static const char *const kind_names[] = { "tagged", "untagged", "multi-recv" };

enum end { DIE, CLOSE_THEN_EXIT };

/* What the source sends, seeds 90 + i, before it ends. */
struct script {
	bool tagged;
	int count;
	size_t len[MAX_MSGS];
	uint64_t tag[MAX_MSGS];
	enum end end;
};

static void source_child(int sock, void *arg)
{
	const struct script *s = arg;
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_context ctx[MAX_MSGS];
	char *buf[MAX_MSGS];
	struct xt_comp c;
	struct xt_ep x;
	fi_addr_t dst;

	xt_open(&x, &cfg);
	dst = xt_exchange(&x, sock);
	xt_wait(sock);
	for (int i = 0; i < s->count; i++) {
		buf[i] = xt_alloc(s->len[i]);
		xt_fill(buf[i], s->len[i], 90 + (uint64_t)i, 0);
		if (s->tagged)
			XT_POST(&x, fi_tsend(x.ep, buf[i], s->len[i], NULL, dst, s->tag[i],
					     &ctx[i]));
		else
			XT_POST(&x, fi_send(x.ep, buf[i], s->len[i], NULL, dst, &ctx[i]));
	}
	/* Complete: the data is in the survivor's memory. */
	for (int i = 0; i < s->count; i++)
		xt_expect_comp_ms(x.tx, x.rx, 8000, &c);
	if (s->end == DIE)
		fault_die(sock, 1);
	xt_close(&x);
	xt_signal(sock, 1);
	xt_wait(sock);		/* then exits */
}

struct rig {
	struct xt_cfg cfg;
	struct xt_ep x;
	struct xt_child src, live;
	char src_name[XT_NAME_MAX];
	fi_addr_t fsrc;
};

static void rig_start(struct rig *r, struct script *s, uint64_t extra_caps)
{
	r->cfg = xt_cfg_default();
	r->cfg.caps |= FI_DIRECTED_RECV | extra_caps;
	xt_spawn(&r->src, source_child, s);
	xt_spawn(&r->live, xt_burst_child, NULL);
	xt_open(&r->x, &r->cfg);
	xt_send_name(r->src.sock, &r->x);
	xt_recv_name(r->src.sock, r->src_name);
	r->fsrc = xt_av_insert(&r->x, r->src_name);
	xt_connect_sender(&r->x, &r->live, true);
}

/*
 * The source sends its script and dies; the survivor does not progress
 * meanwhile, so the messages are still in its ring.  Returns the time of
 * the death as the survivor saw it.
 */
static uint64_t rig_run_source(struct rig *r)
{
	xt_signal(r->src.sock, 1);
	XT_ASSERT(xt_wait(r->src.sock) == 1, "the source's signal");
	xt_join_killed(&r->src);
	return xt_now_ms();
}

static void rig_stop(struct rig *r)
{
	xt_burst_quit(&r->x, &r->live);
	xt_close(&r->x);
}

static void post_kind(struct rig *r, enum kind k, void *buf, size_t len, fi_addr_t src,
		      uint64_t tag, void *ctx)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = src, .context = ctx };

	if (k == MULTI)
		XT_POST(&r->x, fi_recvmsg(r->x.ep, &msg, FI_MULTI_RECV));
	else
		xt_post_recv(&r->x, k == TAGGED, buf, len, src, tag, 0, ctx);
}

/* The next receive completion: message seed from the source, whole. */
static void expect_message(struct rig *r, void *ctx, void *buf, size_t len, uint64_t seed)
{
	struct xt_comp c;

	XT_ASSERT(xt_poll(r->x.rx, r->x.tx, FAULT_DETECT_MS, &c) == 0,
		  "no completion of the message the source sent before dying");
	XT_ASSERT(!c.is_err, "the message the source sent before dying failed: %d (%s)",
		  c.err.err, fi_strerror(c.err.err));
	XT_ASSERT(c.e.op_context == ctx, "context %p, expected %p", c.e.op_context, ctx);
	XT_ASSERT(c.e.len == len, "len %zu, expected %zu", c.e.len, len);
	XT_ASSERT_PATTERN(buf, len, seed, 0);
}

/*
 * The next receive entry: FI_EIO for the receive ctx, as a receive error
 * (flags, tag, buf), within FAULT_DETECT_MS of since; returns the delay.
 */
static uint64_t expect_eio(struct rig *r, enum kind k, void *ctx, void *buf, uint64_t tag,
			   uint64_t since)
{
	uint64_t want = FI_RECV | (k == TAGGED ? FI_TAGGED : FI_MSG) |
			(k == MULTI ? FI_MULTI_RECV : 0);
	uint64_t ms;
	struct xt_comp c;

	XT_ASSERT(xt_poll(r->x.rx, r->x.tx, FAULT_DETECT_MS, &c) == 0,
		  "%s receive directed at the dead source: no completion %d ms after its "
		  "death", kind_names[k], FAULT_DETECT_MS);
	ms = xt_now_ms() - since;
	XT_ASSERT(c.is_err, "%s receive directed at the dead source completed (context "
		  "%p, len %zu)", kind_names[k], c.e.op_context, c.e.len);
	XT_ASSERT(c.err.err == FI_EIO, "error %d (%s), expected FI_EIO", c.err.err,
		  fi_strerror(c.err.err));
	XT_ASSERT(c.err.op_context == ctx, "error for context %p, expected %p",
		  c.err.op_context, ctx);
	XT_ASSERT(c.err.flags == want, "flags 0x%llx, expected 0x%llx",
		  (unsigned long long)c.err.flags, (unsigned long long)want);
	XT_ASSERT(c.err.buf == buf, "buf %p, expected %p", c.err.buf, buf);
	XT_ASSERT(c.err.tag == (k == TAGGED ? tag : 0), "tag 0x%llx",
		  (unsigned long long)c.err.tag);
	XT_ASSERT(c.err.len == 0, "len %zu", c.err.len);
	fprintf(stderr, "%s directed receive failed %llu ms after the source's death\n",
		kind_names[k], (unsigned long long)ms);
	return ms;
}

/* The live sender's message arrives whole into the receive ctx. */
static void expect_live_message(struct rig *r, bool tagged, uint64_t tag, void *ctx,
				void *buf)
{
	struct xt_burst_msg m = { .tagged = tagged, .len = LIVE_LEN, .seed = 95, .tag = tag,
				  .flags = FI_COMPLETION };
	struct xt_burst_result res;
	struct xt_comp c;

	xt_burst_post(&r->x, &r->live, &m, 1, 8000);
	xt_expect_comp_ms(r->x.rx, r->x.tx, 8000, &c);
	XT_ASSERT(c.e.op_context == ctx, "context %p, expected %p", c.e.op_context, ctx);
	XT_ASSERT(c.e.len == LIVE_LEN, "len %zu", c.e.len);
	XT_ASSERT_PATTERN(buf, LIVE_LEN, 95, 0);
	xt_burst_results(&r->x, &r->live, &res, 1);
	XT_ASSERT(res.completed && !res.is_err, "the live sender's send: err %d", res.err);
}

START_TEST(receives_directed_at_a_killed_source_fail_after_its_messages)
{
	enum kind k = (enum kind)_i;
	struct script s = {
		.tagged = k == TAGGED, .count = 2, .len = { SMALL, MEDIUM },
		.tag = { TAG_EARLY, TAG_EARLY + 1 }, .end = DIE,
	};
	char *early[2], *dead = xt_alloc(MULTI_LEN);
	struct fi_context ctx[3];
	uint64_t died;
	struct rig r;

	rig_start(&r, &s, k == MULTI ? FI_MULTI_RECV : 0);
	if (k == MULTI) {
		/* Both messages land in the buffer, then it fails. */
		post_kind(&r, k, dead, MULTI_LEN, r.fsrc, 0, &ctx[2]);
	} else {
		for (int i = 0; i < 2; i++) {
			early[i] = xt_alloc(MEDIUM);
			post_kind(&r, k, early[i], MEDIUM, r.fsrc, s.tag[i], &ctx[i]);
		}
		post_kind(&r, k, dead, MEDIUM, r.fsrc, TAG_DEAD, &ctx[2]);
	}
	died = rig_run_source(&r);
	if (k == MULTI) {
		expect_message(&r, &ctx[2], dead, SMALL, 90);
		expect_message(&r, &ctx[2], dead + SMALL, MEDIUM, 91);
		expect_eio(&r, k, &ctx[2], dead + SMALL + MEDIUM, 0, died);
	} else {
		for (int i = 0; i < 2; i++)
			expect_message(&r, &ctx[i], early[i], s.len[i], 90 + (uint64_t)i);
		expect_eio(&r, k, &ctx[2], dead, TAG_DEAD, died);
		free(early[0]);
		free(early[1]);
	}
	XT_ASSERT(!fault_region_exists(r.src_name), "the dead source's region %s is still "
		  "there", r.src_name);
	xt_expect_none(r.x.rx, r.x.tx, 200);
	rig_stop(&r);
	free(dead);
}
END_TEST

/* Removed by another process that found it dead, before this one looked. */
START_TEST(a_killed_source_whose_region_is_already_gone)
{
	struct script s = {
		.tagged = true, .count = 1, .len = { SMALL }, .tag = { TAG_EARLY },
		.end = DIE,
	};
	char *early = xt_alloc(SMALL), *dead = xt_alloc(SMALL), path[128];
	struct fi_context ctx_early, ctx_dead;
	uint64_t died;
	struct rig r;

	rig_start(&r, &s, 0);
	xt_post_recv(&r.x, true, early, SMALL, r.fsrc, TAG_EARLY, 0, &ctx_early);
	xt_post_recv(&r.x, true, dead, SMALL, r.fsrc, TAG_DEAD, 0, &ctx_dead);
	died = rig_run_source(&r);
	fault_region_path(r.src_name, path, sizeof(path));
	XT_ASSERT(unlink(path) == 0 || errno == ENOENT, "unlink %s", path);
	expect_message(&r, &ctx_early, early, SMALL, 90);
	expect_eio(&r, TAGGED, &ctx_dead, dead, TAG_DEAD, died);
	rig_stop(&r);
	free(early);
	free(dead);
}
END_TEST

START_TEST(a_receive_from_any_source_stays_posted)
{
	struct script s = { .tagged = true, .count = 0, .end = DIE };
	char *dir = xt_alloc(LIVE_LEN), *any = xt_alloc(LIVE_LEN);
	struct fi_context ctx_dir, ctx_any;
	uint64_t died;
	struct rig r;

	rig_start(&r, &s, 0);
	xt_post_recv(&r.x, true, dir, LIVE_LEN, r.fsrc, TAG_ANY, 0, &ctx_dir);
	xt_post_recv(&r.x, true, any, LIVE_LEN, FI_ADDR_UNSPEC, TAG_ANY, 0, &ctx_any);
	died = rig_run_source(&r);
	expect_eio(&r, TAGGED, &ctx_dir, dir, TAG_ANY, died);
	/* Several liveness periods: the other receive is still posted... */
	xt_expect_none(r.x.rx, r.x.tx, 400);
	/* ... and takes the next message, from another sender. */
	expect_live_message(&r, true, TAG_ANY, &ctx_any, any);
	rig_stop(&r);
	free(dir);
	free(any);
}
END_TEST

START_TEST(a_directed_receive_posted_after_the_death_fails_at_once)
{
	enum kind k = (enum kind)_i;
	struct script s = {
		.tagged = k == TAGGED, .count = 1, .len = { SMALL }, .tag = { TAG_HELD },
		.end = DIE,
	};
	char *first = xt_alloc(SMALL), *held = xt_alloc(SMALL), *after = xt_alloc(SMALL);
	struct fi_context ctx_first, ctx_held, ctx_after;
	uint64_t died, posted, ms;
	struct rig r;

	rig_start(&r, &s, 0);
	died = rig_run_source(&r);
	if (k == TAGGED) {
		/* Fails once the death is seen; the message stays held. */
		xt_post_recv(&r.x, true, first, SMALL, r.fsrc, TAG_DEAD, 0, &ctx_first);
		expect_eio(&r, k, &ctx_first, first, TAG_DEAD, died);
	} else {
		/* Untagged, the first receive takes the message. */
		xt_post_recv(&r.x, false, first, SMALL, r.fsrc, 0, 0, &ctx_first);
		expect_message(&r, &ctx_first, first, SMALL, 90);
	}
	xt_expect_none(r.x.rx, r.x.tx, 150);
	if (k == TAGGED) {
		/* The dead source's whole message is still delivered. */
		xt_post_recv(&r.x, true, held, SMALL, r.fsrc, TAG_HELD, 0, &ctx_held);
		expect_message(&r, &ctx_held, held, SMALL, 90);
	}
	posted = xt_now_ms();
	xt_post_recv(&r.x, k == TAGGED, after, SMALL, r.fsrc, TAG_DEAD, 0, &ctx_after);
	ms = expect_eio(&r, k, &ctx_after, after, TAG_DEAD, posted);
	fprintf(stderr, "(posted %llu ms after the death)\n",
		(unsigned long long)(posted - died));
	XT_ASSERT(ms < FAULT_DETECT_MS, "%llu ms", (unsigned long long)ms);
	rig_stop(&r);
	free(first);
	free(held);
	free(after);
}
END_TEST

START_TEST(a_source_that_closed_its_endpoint_is_waited_for_while_it_runs)
{
	struct script s = {
		.tagged = true, .count = 1, .len = { SMALL }, .tag = { TAG_EARLY },
		.end = CLOSE_THEN_EXIT,
	};
	char *early = xt_alloc(SMALL), *dir = xt_alloc(SMALL);
	struct fi_context ctx_early, ctx_dir;
	uint64_t exited;
	struct rig r;

	rig_start(&r, &s, 0);
	xt_post_recv(&r.x, true, early, SMALL, r.fsrc, TAG_EARLY, 0, &ctx_early);
	xt_post_recv(&r.x, true, dir, SMALL, r.fsrc, TAG_DEAD, 0, &ctx_dir);
	xt_signal(r.src.sock, 1);
	XT_ASSERT(xt_wait_progress(r.src.sock, &r.x) == 1, "the source's close");
	expect_message(&r, &ctx_early, early, SMALL, 90);
	XT_ASSERT(!fault_region_exists(r.src_name), "the closed source's region remains");
	/* Closed, not dead: several liveness periods, no completion. */
	xt_expect_none(r.x.rx, r.x.tx, 500);
	xt_signal(r.src.sock, 2);
	xt_join(&r.src);
	exited = xt_now_ms();
	expect_eio(&r, TAGGED, &ctx_dir, dir, TAG_DEAD, exited);
	rig_stop(&r);
	free(early);
	free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dead_source");
	TCase *tc = tcase_create("dead_source");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, receives_directed_at_a_killed_source_fail_after_its_messages,
			    0, 3);
	tcase_add_test(tc, a_killed_source_whose_region_is_already_gone);
	tcase_add_test(tc, a_receive_from_any_source_stays_posted);
	tcase_add_loop_test(tc, a_directed_receive_posted_after_the_death_fails_at_once, 0, 2);
	tcase_add_test(tc, a_source_that_closed_its_endpoint_is_waited_for_while_it_runs);
	suite_add_tcase(s, tc);
	return xt_run_suite(s);
}
