/*
 * The peer writing into the reference owner's CQ and counters: the peer's
 * own read calls on the imported CQ and counter return -FI_ENOSYS,
 * fi_cq_read(cq, NULL, 0) and fi_cntr_read drive progress, the fields of
 * each CQ format, source addresses with FI_SOURCE, send completions, the
 * owner's own traffic interleaved with the peer's in one CQ, counters
 * through inc/incerr; and, xshm alone, owner callbacks that fail (get_*,
 * write, writeerr), on which fi_peer(3) is silent.
 */
#include "peer_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KiB	1024

/* ---- a receiving child, for the owner's sends ---- */

/*
 * Opens a standalone endpoint, exchanges addresses, then for each length
 * the parent sends: posts a tagged receive (PT_TAG), signals, waits for the
 * message (xt_fill seeded with its length) and answers 1.
 */
static void recv_child(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_ep x;
	uint64_t len;

	xt_open(&x, &cfg);
	xt_exchange(&x, sock);
	while ((len = xt_recv_u64_progress(sock, &x)) != UINT64_MAX) {
		unsigned char *b = xt_alloc(len);
		struct xt_comp c;

		xt_post_recv(&x, true, b, len, FI_ADDR_UNSPEC, PT_TAG, 0, b);
		xt_signal(sock, 1);
		xt_wait_rx(&x, &c);
		XT_ASSERT(c.e.len == len, "received %zu bytes, expected %llu", c.e.len,
			  (unsigned long long)len);
		XT_ASSERT_PATTERN(b, len, len, 0);
		xt_send_u64(sock, 1);
		free(b);
	}
	xt_close(&x);
}

/* The owner sends len bytes from its xshm endpoint to a recv_child. */
static void owner_send_to(struct owner *o, struct pt_peer *rc, size_t len, void *ctx)
{
	unsigned char *buf = pt_buf(len);
	uint64_t end = owner_now_ms() + PT_TIMEOUT_MS;
	struct owner_comp c;
	uint8_t posted;
	ssize_t ret;

	xt_fill(buf, len, len, 0);
	xt_send_u64(rc->c.sock, len);
	pt_read(o, rc, &posted, 1);
	while ((ret = fi_tsend(o->ep[0], buf, len, NULL, rc->addr, PT_TAG, ctx)) == -FI_EAGAIN &&
	       owner_now_ms() < end)
		owner_progress(o);
	PT_ASSERT_RC(ret, 0);
	pt_comp(o, &c);
	PT_ASSERT(c.origin == OWNER_FROM_PEER && c.e.op_context == ctx,
		  "send completion: origin %d, context %p, expected %p", c.origin,
		  c.e.op_context, ctx);
	PT_ASSERT((c.e.flags & (FI_SEND | FI_RECV | FI_TAGGED | FI_MSG)) == (FI_SEND | FI_TAGGED),
		  "send completion flags 0x%llx", (unsigned long long)c.e.flags);
	PT_ASSERT(pt_read_u64(o, rc) == 1, "the receiver did not confirm");
	free(buf);
}

static void stop_recv_child(struct pt_peer *rc)
{
	xt_send_u64(rc->c.sock, UINT64_MAX);
	pt_join(rc);
}

/* ---- the peer's read calls on the imported objects ---- */

/* Appends "what returned rc; " to a list of calls that did not return -FI_ENOSYS. */
static void not_enosys(char *list, size_t size, const char *what, long long rc)
{
	size_t used = strlen(list);

	if (rc != -FI_ENOSYS)
		snprintf(list + used, size - used, "%s returned %lld (%s); ", what, rc,
			 xt_strerror(rc));
}

/*
 * fi_peer(3): "The peer provider should set other functions that attempt to
 * read the peer's CQ (i.e. fi_cq_readerr, fi_cq_sread, etc.) to return
 * -FI_ENOSYS", fi_cq_read(cq, NULL, 0) driving progress.  (fi_cq_read with
 * a buffer is not another function: see the xshm-only case below.)
 */
START_TEST(cq_calls_other_than_read_return_enosys)
{
	struct xt_send_cmd sc = pt_cmd(true, 64, 3, PT_TAG);
	unsigned char *buf = pt_buf(64);
	struct fi_cq_tagged_entry e[2];
	struct fi_cq_err_entry err;
	struct owner_comp c;
	struct pt_rig r;
	char bad[512] = "";
	fi_addr_t src;
	ssize_t rc;

	pt_rig_start(&r, NULL, 1, 0);
	pt_send_ok(&r.o, &r.p[0], &sc);
	pt_wait_unexpected(&r.o, true, 1);
	PT_ASSERT_RC(owner_post_trecv(&r.o, buf, 64, FI_ADDR_UNSPEC, PT_TAG, 0, buf), 0);
	not_enosys(bad, sizeof(bad), "fi_cq_readfrom", fi_cq_readfrom(r.o.cq, e, 1, &src));
	not_enosys(bad, sizeof(bad), "fi_cq_readerr", fi_cq_readerr(r.o.cq, &err, 0));
	not_enosys(bad, sizeof(bad), "fi_cq_sread", fi_cq_sread(r.o.cq, e, 1, NULL, 100));
	not_enosys(bad, sizeof(bad), "fi_cq_sreadfrom",
		   fi_cq_sreadfrom(r.o.cq, e, 1, &src, NULL, 100));
	PT_ASSERT(!*bad, "%s", bad);
	rc = fi_cq_read(r.o.cq, NULL, 0);
	PT_ASSERT(rc == 0 || rc == -FI_EAGAIN, "fi_cq_read(cq, NULL, 0) returned %zd (%s)", rc,
		  xt_strerror(rc));
	pt_comp(&r.o, &c);
	pt_check_recv(&c, buf, true, PT_TAG, 64);
	pt_check_data(buf, 64, 3);
	pt_none(&r.o, 20);
	pt_rig_stop(&r);
	free(buf);
}
END_TEST

/* xshm's fi_cq_read with a buffer on an imported CQ: -FI_ENOSYS too. */
START_TEST(cq_reads_with_a_buffer_return_enosys)
{
	struct xt_send_cmd sc = pt_cmd(true, 64, 3, PT_TAG);
	unsigned char *buf = pt_buf(64);
	struct fi_cq_tagged_entry e[2];
	struct owner_comp c;
	struct pt_rig r;

	pt_rig_start(&r, NULL, 1, 0);
	pt_send_ok(&r.o, &r.p[0], &sc);
	pt_wait_unexpected(&r.o, true, 1);
	PT_ASSERT_RC(owner_post_trecv(&r.o, buf, 64, FI_ADDR_UNSPEC, PT_TAG, 0, buf), 0);
	PT_ASSERT_RC(fi_cq_read(r.o.cq, e, 1), -FI_ENOSYS);
	PT_ASSERT_RC(fi_cq_read(r.o.cq, e, 2), -FI_ENOSYS);
	pt_comp(&r.o, &c);
	pt_check_recv(&c, buf, true, PT_TAG, 64);
	pt_check_data(buf, 64, 3);
	pt_none(&r.o, 20);
	pt_rig_stop(&r);
	free(buf);
}
END_TEST

START_TEST(cntr_calls_other_than_read_return_enosys)
{
	struct owner_cfg cfg = { .cntrs = true };
	struct owner o;

	pt_open(&o, &cfg);
	for (int i = 0; i < 2; i++) {
		struct owner_cntr *oc = i ? &o.rx_cntr : &o.tx_cntr;
		struct fid_cntr *x = oc->xshm;

		char bad[512] = "";

		/* fi_cntr_readerr returns a uint64_t: -FI_ENOSYS cast to it */
		not_enosys(bad, sizeof(bad), "fi_cntr_readerr", (int64_t)fi_cntr_readerr(x));
		not_enosys(bad, sizeof(bad), "fi_cntr_add", fi_cntr_add(x, 1));
		not_enosys(bad, sizeof(bad), "fi_cntr_adderr", fi_cntr_adderr(x, 1));
		not_enosys(bad, sizeof(bad), "fi_cntr_set", fi_cntr_set(x, 5));
		not_enosys(bad, sizeof(bad), "fi_cntr_seterr", fi_cntr_seterr(x, 5));
		not_enosys(bad, sizeof(bad), "fi_cntr_wait", fi_cntr_wait(x, 1, 10));
		PT_ASSERT(!*bad, "%s counter: %s", i ? "rx" : "tx", bad);
		(void)fi_cntr_read(x);
		PT_ASSERT(oc->value == 0 && oc->err == 0,
			  "the owner's counter changed: value %llu, err %llu",
			  (unsigned long long)oc->value, (unsigned long long)oc->err);
	}
	pt_close(&o);
}
END_TEST

/* ---- progress ---- */

START_TEST(progress_by_cq_read_null_zero)
{
	const size_t len = 100 * KiB;
	struct xt_send_cmd sc = pt_cmd(true, len, 4, PT_TAG);
	unsigned char *buf = pt_buf(len);
	uint64_t end, calls = 0;
	struct owner_comp c;
	struct pt_rig r;

	pt_rig_start(&r, NULL, 1, 0);
	PT_ASSERT_RC(owner_post_trecv(&r.o, buf, len, FI_ADDR_UNSPEC, PT_TAG, 0, buf), 0);
	xt_write_bytes(r.p[0].c.sock, &sc, sizeof(sc));
	/* Only fi_cq_read(cq, NULL, 0) from here until the message is in. */
	end = owner_now_ms() + PT_TIMEOUT_MS;
	while (owner_cq_count(&r.o) == 0 && owner_now_ms() < end) {
		ssize_t rc = fi_cq_read(r.o.cq, NULL, 0);

		calls++;
		PT_ASSERT(rc == 0 || rc == -FI_EAGAIN, "fi_cq_read(cq, NULL, 0) returned %zd (%s)",
			  rc, xt_strerror(rc));
	}
	PT_ASSERT(owner_cq_count(&r.o) == 1, "no completion after %llu progress calls",
		  (unsigned long long)calls);
	PT_ASSERT(pt_read_u64(&r.o, &r.p[0]) == 0, "the child's send failed");
	pt_comp(&r.o, &c);
	pt_check_recv(&c, buf, true, PT_TAG, len);
	pt_check_data(buf, len, 4);
	PT_ASSERT(pt_send_done(&r.o, &r.p[0]).completed, "the send did not complete");
	pt_rig_stop(&r);
	free(buf);
}
END_TEST

START_TEST(progress_by_cntr_read)
{
	const size_t len = 100 * KiB;
	struct owner_cfg cfg = { .cntrs = true, .progress_by_cntr = true };
	struct xt_send_cmd sc = pt_cmd(true, len, 5, PT_TAG);
	unsigned char *buf = pt_buf(len);
	struct owner_comp c;
	struct pt_rig r;

	pt_rig_start(&r, &cfg, 1, 0);
	PT_ASSERT_RC(owner_post_trecv(&r.o, buf, len, FI_ADDR_UNSPEC, PT_TAG, 0, buf), 0);
	pt_send(&r.o, &r.p[0], &sc);
	pt_comp(&r.o, &c);	/* progressed with fi_cntr_read alone */
	pt_check_recv(&c, buf, true, PT_TAG, len);
	pt_check_data(buf, len, 5);
	PT_ASSERT(pt_send_done(&r.o, &r.p[0]).completed, "the send did not complete");
	PT_ASSERT(owner_cntr_value(&r.o, &r.o.rx_cntr) == 1, "rx counter %llu",
		  (unsigned long long)r.o.rx_cntr.value);
	pt_rig_stop(&r);
	free(buf);
}
END_TEST

/* ---- what each CQ format reports ---- */

START_TEST(cq_format_fields_not_reported_are_zero)
{
	static const enum fi_cq_format fmts[] = {
		FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG, FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED,
	};
	enum fi_cq_format f = fmts[_i];
	struct owner_cfg cfg = { .cq_format = f };
	struct xt_send_cmd sc = {
		.op = XT_SENDDATA, .tagged = true, .len = 64, .seed = 6, .tag = PT_TAG,
		.data = 0xda7a,
	};
	unsigned char *buf = pt_buf(64);
	uint64_t kinds = FI_SEND | FI_RECV | FI_MSG | FI_TAGGED;
	struct owner_comp c;
	struct pt_rig r;

	pt_rig_start(&r, &cfg, 1, 0);
	PT_ASSERT_RC(owner_post_trecv(&r.o, buf, 64, FI_ADDR_UNSPEC, PT_TAG, 0, buf), 0);
	pt_send_ok(&r.o, &r.p[0], &sc);
	pt_comp(&r.o, &c);
	pt_check_data(buf, 64, 6);
	PT_ASSERT(c.e.op_context == buf, "context %p", c.e.op_context);
	/*
	 * The fields a format does not report: as the peer passed them to the
	 * owner's write().  Through xlink's API they cannot be seen (owner_xlink.c
	 * checks instead that a read writes nothing past the format's entries).
	 */
	if (f == FI_CQ_FORMAT_CONTEXT && owner_internals()) {
		PT_ASSERT(c.e.flags == 0 && c.e.len == 0 && c.e.buf == NULL && c.e.data == 0 &&
			  c.e.tag == 0,
			  "FI_CQ_FORMAT_CONTEXT: flags 0x%llx len %zu buf %p data 0x%llx tag "
			  "0x%llx, all expected 0", (unsigned long long)c.e.flags, c.e.len,
			  c.e.buf, (unsigned long long)c.e.data, (unsigned long long)c.e.tag);
	} else if (f != FI_CQ_FORMAT_CONTEXT) {
		PT_ASSERT((c.e.flags & kinds) == (FI_RECV | FI_TAGGED), "flags 0x%llx",
			  (unsigned long long)c.e.flags);
		PT_ASSERT(c.e.len == 64, "len %zu", c.e.len);
	}
	if (f == FI_CQ_FORMAT_MSG && owner_internals())
		PT_ASSERT(c.e.buf == NULL && c.e.data == 0 && c.e.tag == 0,
			  "FI_CQ_FORMAT_MSG: buf %p data 0x%llx tag 0x%llx, expected 0", c.e.buf,
			  (unsigned long long)c.e.data, (unsigned long long)c.e.tag);
	if (f == FI_CQ_FORMAT_DATA)
		PT_ASSERT(c.e.data == 0xda7a && c.e.tag == 0,
			  "FI_CQ_FORMAT_DATA: data 0x%llx (0xda7a expected), tag 0x%llx (0 expected)",
			  (unsigned long long)c.e.data, (unsigned long long)c.e.tag);
	if (f == FI_CQ_FORMAT_TAGGED)
		PT_ASSERT(c.e.data == 0xda7a && c.e.tag == PT_TAG,
			  "FI_CQ_FORMAT_TAGGED: data 0x%llx tag 0x%llx",
			  (unsigned long long)c.e.data, (unsigned long long)c.e.tag);
	/*
	 * fi_peer(3): "if source addressing is not returned with a completion,
	 * then the src parameter should be set to FI_ADDR_NOTAVAIL"; fi_cq(3),
	 * of fi_cq_readfrom (xlink): "If fi_cq_readfrom is called on an endpoint
	 * for which source addressing data is not available, the source address
	 * will be set to FI_ADDR_NOTAVAIL".
	 */
	PT_ASSERT(c.src == FI_ADDR_NOTAVAIL, "src 0x%llx without FI_SOURCE",
		  (unsigned long long)c.src);
	pt_none(&r.o, 20);
	pt_rig_stop(&r);
	free(buf);
}
END_TEST

START_TEST(fi_source_reports_av_addresses)
{
	struct owner_cfg cfg = { .caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE };
	unsigned char *buf = pt_buf(64);
	struct owner_comp c;
	struct pt_rig r;
	fi_addr_t fb;

	pt_rig_start(&r, &cfg, 2, 1u << 1);	/* B is not in the owner's AV */
	for (int who = 0; who < 2; who++) {
		struct xt_send_cmd sc = pt_cmd(true, 64, 10 + who, PT_TAG);

		PT_ASSERT_RC(owner_post_trecv(&r.o, buf, 64, FI_ADDR_UNSPEC, PT_TAG, 0, buf), 0);
		pt_send_ok(&r.o, &r.p[who], &sc);
		pt_comp(&r.o, &c);
		pt_check_recv(&c, buf, true, PT_TAG, 64);
		pt_check_data(buf, 64, 10 + who);
		PT_ASSERT(c.src == (who ? FI_ADDR_NOTAVAIL : r.p[0].addr),
			  "sender %d: src 0x%llx, expected 0x%llx", who, (unsigned long long)c.src,
			  (unsigned long long)(who ? FI_ADDR_NOTAVAIL : r.p[0].addr));
	}
	/* Queued while unknown, completed after the insert: B's address. */
	{
		struct xt_send_cmd sc = pt_cmd(true, 64, 12, PT_TAG);

		pt_send_ok(&r.o, &r.p[1], &sc);
		pt_wait_unexpected(&r.o, true, 1);
		fb = pt_insert(&r.o, &r.p[1]);
		PT_ASSERT_RC(owner_post_trecv(&r.o, buf, 64, FI_ADDR_UNSPEC, PT_TAG, 0, buf), 0);
		pt_comp(&r.o, &c);
		pt_check_data(buf, 64, 12);
		PT_ASSERT(c.src == fb, "src 0x%llx after B was inserted as 0x%llx",
			  (unsigned long long)c.src, (unsigned long long)fb);
	}
	pt_rig_stop(&r);
	free(buf);
}
END_TEST

/* ---- sends complete into the owner's CQ ---- */

START_TEST(send_completions_and_tx_counter)
{
	struct owner_cfg cfg = { .cntrs = true };
	const size_t lens[] = { 64, 4096, 100 * KiB };
	struct pt_peer rc;
	struct owner o;
	char ctx[3];

	pt_spawn(&rc, recv_child, NULL);
	pt_open(&o, &cfg);
	pt_connect(&o, 0, &rc, true);
	for (int i = 0; i < 3; i++)
		owner_send_to(&o, &rc, lens[i], &ctx[i]);
	PT_ASSERT(owner_cntr_value(&o, &o.tx_cntr) == 3, "tx counter %llu, expected 3",
		  (unsigned long long)o.tx_cntr.value);
	PT_ASSERT(owner_cntr_err(&o, &o.tx_cntr) == 0 && owner_cntr_value(&o, &o.rx_cntr) == 0 &&
		  owner_cntr_err(&o, &o.rx_cntr) == 0,
		  "tx err %llu, rx %llu/%llu", (unsigned long long)o.tx_cntr.err,
		  (unsigned long long)o.rx_cntr.value, (unsigned long long)o.rx_cntr.err);
	if (owner_internals())
		PT_ASSERT(o.st.get_calls == 0, "%llu get calls while only sending",
			  (unsigned long long)o.st.get_calls);
	pt_none(&o, 20);
	stop_recv_child(&rc);
	pt_close(&o);
}
END_TEST

START_TEST(counters_count_through_inc_and_incerr)
{
	struct owner_cfg cfg = { .cntrs = true };
	unsigned char *buf = pt_buf(64 * KiB);
	struct owner_comp c;
	struct pt_rig r;

	pt_rig_start(&r, &cfg, 1, 0);
	for (int i = 0; i < 3; i++) {
		size_t len = i == 2 ? 40 * KiB : 64;
		struct xt_send_cmd sc = pt_cmd(i != 1, len, 20 + i, PT_TAG);

		if (i == 1)
			PT_ASSERT_RC(owner_post_recv(&r.o, buf, len, FI_ADDR_UNSPEC, buf), 0);
		else
			PT_ASSERT_RC(owner_post_trecv(&r.o, buf, len, FI_ADDR_UNSPEC, PT_TAG, 0,
						      buf), 0);
		pt_send_ok(&r.o, &r.p[0], &sc);
		pt_comp(&r.o, &c);
		pt_check_data(buf, len, 20 + i);
	}
	PT_ASSERT(owner_cntr_value(&r.o, &r.o.rx_cntr) == 3, "rx counter %llu, expected 3",
		  (unsigned long long)r.o.rx_cntr.value);
	PT_ASSERT(owner_cntr_err(&r.o, &r.o.rx_cntr) == 0, "rx errors %llu",
		  (unsigned long long)r.o.rx_cntr.err);
	{
		struct xt_send_cmd sc = pt_cmd(true, 300, 30, PT_TAG);

		PT_ASSERT_RC(owner_post_trecv(&r.o, buf, 100, FI_ADDR_UNSPEC, PT_TAG, 0, buf), 0);
		pt_send_ok(&r.o, &r.p[0], &sc);
		pt_err(&r.o, &c);
		PT_ASSERT(c.err.err == FI_ETRUNC, "err %d", c.err.err);
	}
	PT_ASSERT(owner_cntr_err(&r.o, &r.o.rx_cntr) == 1, "rx errors %llu, expected 1",
		  (unsigned long long)r.o.rx_cntr.err);
	PT_ASSERT(owner_cntr_value(&r.o, &r.o.rx_cntr) == 3, "rx counter %llu, expected 3",
		  (unsigned long long)r.o.rx_cntr.value);
	PT_ASSERT(owner_cntr_value(&r.o, &r.o.tx_cntr) == 0 &&
		  owner_cntr_err(&r.o, &r.o.tx_cntr) == 0, "tx counter %llu/%llu",
		  (unsigned long long)r.o.tx_cntr.value, (unsigned long long)r.o.tx_cntr.err);
	pt_rig_stop(&r);
	free(buf);
}
END_TEST

/* ---- the owner's own traffic and xshm's in one CQ ---- */

static void loop_send(struct owner *o, uint64_t seed, uint64_t tag)
{
	unsigned char data[64];

	xt_fill(data, sizeof(data), seed, 0);
	PT_ASSERT_RC(owner_loopback_send(o, true, data, sizeof(data), tag), 0);
}

static void expect_from(struct owner *o, enum owner_origin origin, fi_addr_t peer_src,
			void *ctx, uint64_t tag, uint64_t seed)
{
	struct owner_comp c;

	pt_comp(o, &c);
	PT_ASSERT(c.origin == origin, "completion from %s, expected from %s",
		  c.origin == OWNER_FROM_SELF ? "the owner" : "xshm",
		  origin == OWNER_FROM_SELF ? "the owner" : "xshm");
	PT_ASSERT(c.e.op_context == ctx, "context %p, expected %p", c.e.op_context, ctx);
	PT_ASSERT(c.e.len == 64 && c.e.tag == tag, "len %zu tag 0x%llx, expected 0x%llx",
		  c.e.len, (unsigned long long)c.e.tag, (unsigned long long)tag);
	PT_ASSERT((c.e.flags & (FI_RECV | FI_TAGGED)) == (FI_RECV | FI_TAGGED), "flags 0x%llx",
		  (unsigned long long)c.e.flags);
	PT_ASSERT(c.src == (origin == OWNER_FROM_PEER ? peer_src : OWNER_ADDR_LOOPBACK),
		  "src 0x%llx", (unsigned long long)c.src);
	pt_check_data(ctx, 64, seed);
}

/*
 * With FI_SOURCE: the xlink owner tells its own traffic (from its network
 * path) by its source.
 */
START_TEST(owner_traffic_and_xshm_share_one_cq)
{
	struct owner_cfg cfg = { .caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE };
	unsigned char *b[4];
	struct pt_rig r;

	for (int i = 0; i < 4; i++)
		b[i] = pt_buf(64);
	pt_rig_start(&r, &cfg, 1, 0);
	/* Receives posted first, taken in turn by the owner's and xshm's messages. */
	for (int i = 0; i < 4; i++)
		PT_ASSERT_RC(owner_post_trecv(&r.o, b[i], 64, FI_ADDR_UNSPEC, PT_TAG, 0, b[i]), 0);
	for (int i = 0; i < 4; i++) {
		struct xt_send_cmd sc = pt_cmd(true, 64, 100 + i, PT_TAG);

		if (i % 2 == 0)
			loop_send(&r.o, 100 + i, PT_TAG);
		else
			pt_send_ok(&r.o, &r.p[0], &sc);
		expect_from(&r.o, i % 2 ? OWNER_FROM_PEER : OWNER_FROM_SELF, r.p[0].addr, b[i],
			    PT_TAG, 100 + i);
	}
	/*
	 * Messages first, from both sources: matched in arrival order.  Each
	 * has a tag of its own (its number in the bits from 32), which the
	 * receives ignore, so that a peek finds each one queued.
	 */
	for (int i = 0; i < 4; i++) {
		uint64_t tag = PT_TAG | (uint64_t)(i + 1) << 32;
		struct xt_send_cmd sc = pt_cmd(true, 64, 200 + i, tag);

		if (i % 2 == 0) {
			loop_send(&r.o, 200 + i, tag);
		} else {
			pt_send_ok(&r.o, &r.p[0], &sc);
			pt_wait_queued(&r.o, true, FI_ADDR_UNSPEC, tag, 0);
		}
	}
	if (owner_internals())
		PT_ASSERT(owner_unexpected_count(&r.o, true) == 4, "%zu queued",
			  owner_unexpected_count(&r.o, true));
	pt_none(&r.o, 20);
	for (int i = 0; i < 4; i++) {
		memset(b[i], PT_GUARD_BYTE, 64 + PT_GUARD);
		PT_ASSERT_RC(owner_post_trecv(&r.o, b[i], 64, FI_ADDR_UNSPEC, PT_TAG,
					      0xffffffffULL << 32, b[i]), 0);
		expect_from(&r.o, i % 2 ? OWNER_FROM_PEER : OWNER_FROM_SELF, r.p[0].addr, b[i],
			    PT_TAG | (uint64_t)(i + 1) << 32, 200 + i);
	}
	pt_check_entries_balanced(&r.o);
	if (owner_internals())
		PT_ASSERT(r.o.st.entries_given == 4, "%llu entries given to xshm for 4 messages",
			  (unsigned long long)r.o.st.entries_given);
	pt_rig_stop(&r);
	for (int i = 0; i < 4; i++)
		free(b[i]);
}
END_TEST

/* ---- owner callbacks that fail ---- */

/*
 * get_tag fails for one message: it is dropped, the next is delivered, and
 * the dropped one's send still completes.  _i: 0 a small message, 1 a large
 * one, 2 a small one sent with FI_DELIVERY_COMPLETE.
 */
START_TEST(get_failure_drops_only_that_message)
{
	static struct xt_cfg dc;
	const size_t len = _i == 1 ? 100 * KiB : 64;
	unsigned char *buf = pt_buf(len);
	struct xt_send_cmd first = pt_cmd(true, len, 40, PT_TAG);
	struct xt_send_cmd second = pt_cmd(true, len, 41, PT_TAG);
	struct xt_send_result res;
	struct owner_comp c;
	struct pt_rig r;

	dc = xt_cfg_default();
	dc.tx_op_flags = FI_DELIVERY_COMPLETE;
	pt_rig_start_senders(&r, NULL, 1, 0, _i == 2 ? &dc : NULL);
	PT_ASSERT_RC(owner_post_trecv(&r.o, buf, len, FI_ADDR_UNSPEC, PT_TAG, 0, buf), 0);
	r.o.faults.get_fail = 1;
	r.o.faults.get_err = -FI_ENOMEM;
	pt_send(&r.o, &r.p[0], &first);
	/* The child waits (up to its 10 s) for the outcome; checked at the end. */
	res = pt_send_done(&r.o, &r.p[0]);
	pt_wait_gets(&r.o, 1);
	pt_none(&r.o, 100);
	PT_ASSERT(r.o.st.get_failed == 1, "%llu failed get calls",
		  (unsigned long long)r.o.st.get_failed);
	PT_ASSERT(owner_posted_count(&r.o, true) == 1, "the receive was consumed");
	pt_send_ok(&r.o, &r.p[0], &second);
	pt_comp(&r.o, &c);
	pt_check_recv(&c, buf, true, PT_TAG, len);
	pt_check_data(buf, len, 41);
	pt_none(&r.o, 50);
	pt_check_entries_balanced(&r.o);
	PT_ASSERT(r.o.st.entries_given == 1 && r.o.st.entries_freed == 1,
		  "%llu entries given, %llu freed", (unsigned long long)r.o.st.entries_given,
		  (unsigned long long)r.o.st.entries_freed);
	PT_ASSERT(res.completed, "later messages are delivered, but the send of the dropped "
		  "%zu-byte message never completed (waited 10 s)", len);
	pt_rig_stop(&r);
	free(buf);
}
END_TEST

/*
 * Collects the completions of receives ctx[0..n) until ctx[want_from..n)
 * all arrived; earlier ones may arrive at most once.
 */
static void collect(struct owner *o, unsigned char **ctx, int n, int want_from, bool err)
{
	bool seen[8] = { false };
	uint64_t end = owner_now_ms() + PT_TIMEOUT_MS;
	int missing = n - want_from;

	while (missing > 0 || owner_cq_count(o)) {
		struct owner_comp c;
		void *op;
		int i;

		if (owner_cq_read(o, &c, 100) == -FI_EAGAIN) {
			PT_ASSERT(owner_now_ms() < end, "%d completions missing after %d ms",
				  missing, PT_TIMEOUT_MS);
			continue;
		}
		PT_ASSERT(c.is_err == err, "%s where %s expected", c.is_err ? "an error" :
			  "a completion", err ? "an error" : "a completion");
		op = c.is_err ? c.err.op_context : c.e.op_context;
		for (i = 0; i < n && op != ctx[i]; i++)
			;
		PT_ASSERT(i < n, "unknown context %p", op);
		PT_ASSERT(!seen[i], "receive %d completed twice", i);
		seen[i] = true;
		if (i >= want_from)
			missing--;
	}
}

START_TEST(write_failure_does_not_stop_delivery)
{
	unsigned char *b[3];
	struct pt_rig r;

	pt_rig_start(&r, NULL, 1, 0);
	r.o.faults.write_fail = 1;
	r.o.faults.write_err = _i ? -FI_ENOMEM : -FI_EAGAIN;
	for (int i = 0; i < 3; i++) {
		b[i] = pt_buf(64);
		PT_ASSERT_RC(owner_post_trecv(&r.o, b[i], 64, FI_ADDR_UNSPEC, PT_TAG, 0, b[i]), 0);
	}
	for (int i = 0; i < 3; i++) {
		struct xt_send_cmd sc = pt_cmd(true, 64, 50 + i, PT_TAG);

		pt_send_ok(&r.o, &r.p[0], &sc);
	}
	collect(&r.o, b, 3, 1, false);
	pt_none(&r.o, 100);
	PT_ASSERT(r.o.st.writes_failed == 1, "%llu failed writes",
		  (unsigned long long)r.o.st.writes_failed);
	for (int i = 1; i < 3; i++)
		pt_check_data(b[i], 64, 50 + i);
	pt_wait_none_held(&r.o);
	pt_check_entries_balanced(&r.o);
	pt_rig_stop(&r);
	for (int i = 0; i < 3; i++)
		free(b[i]);
}
END_TEST

START_TEST(writeerr_failure_does_not_stop_delivery)
{
	unsigned char *b[3], *ok = pt_buf(64);
	struct xt_send_cmd good = pt_cmd(true, 64, 63, PT_TAG);
	struct owner_comp c;
	struct pt_rig r;

	pt_rig_start(&r, NULL, 1, 0);
	r.o.faults.writeerr_fail = 1;
	r.o.faults.write_err = _i ? -FI_ENOMEM : -FI_EAGAIN;
	for (int i = 0; i < 3; i++) {
		b[i] = pt_buf(10);
		PT_ASSERT_RC(owner_post_trecv(&r.o, b[i], 10, FI_ADDR_UNSPEC, PT_TAG, 0, b[i]), 0);
	}
	for (int i = 0; i < 3; i++) {
		struct xt_send_cmd sc = pt_cmd(true, 64, 60 + i, PT_TAG);

		pt_send_ok(&r.o, &r.p[0], &sc);
	}
	collect(&r.o, b, 3, 1, true);
	PT_ASSERT(r.o.st.writeerrs_failed == 1, "%llu failed writeerrs",
		  (unsigned long long)r.o.st.writeerrs_failed);
	PT_ASSERT_RC(owner_post_trecv(&r.o, ok, 64, FI_ADDR_UNSPEC, PT_TAG, 0, ok), 0);
	pt_send_ok(&r.o, &r.p[0], &good);
	pt_comp(&r.o, &c);
	pt_check_recv(&c, ok, true, PT_TAG, 64);
	pt_check_data(ok, 64, 63);
	pt_wait_none_held(&r.o);
	pt_check_entries_balanced(&r.o);
	pt_rig_stop(&r);
	for (int i = 0; i < 3; i++)
		free(b[i]);
	free(ok);
}
END_TEST

static void add_cases(Suite *s)
{
	TCase *en = pt_tcase(s, "enosys", 30);
	TCase *prog = pt_tcase(s, "progress", 30);
	TCase *fmt = pt_tcase(s, "formats", 30);
	TCase *cnt = pt_tcase(s, "counters_and_sends", 30);
	TCase *mix = pt_tcase(s, "owner_traffic", 30);
	TCase *fail = pt_tcase(s, "owner_failures", 45);

	/* Calls on the peer's CQ and counter that import the owner's: in xlink. */
	pt_add_reference_owner_test(en, cq_calls_other_than_read_return_enosys,
				    "calls on the peer's CQ importing the owner's, inside xlink");
	pt_add_xshm_reference_owner_loop_test(en, cq_reads_with_a_buffer_return_enosys, 0, 1,
					      "reads of the peer's CQ importing the owner's, "
					      "inside xlink");
	pt_add_reference_owner_test(en, cntr_calls_other_than_read_return_enosys,
				    "calls on the peer's counter importing the owner's, inside "
				    "xlink");

	pt_add_reference_owner_test(prog, progress_by_cq_read_null_zero,
				    "fi_cq_read(NULL, 0) on the peer's CQ, which xlink makes");
	tcase_add_test(prog, progress_by_cntr_read);

	tcase_add_loop_test(fmt, cq_format_fields_not_reported_are_zero, 0, 4);
	tcase_add_test(fmt, fi_source_reports_av_addresses);

	tcase_add_test(cnt, send_completions_and_tx_counter);
	tcase_add_test(cnt, counters_count_through_inc_and_incerr);

	tcase_add_test(mix, owner_traffic_and_xshm_share_one_cq);

	/* What a peer does when an owner callback fails: fi_peer(3) is silent. */
	pt_add_xshm_reference_owner_loop_test(fail, get_failure_drops_only_that_message, 0, 3,
					      "fails the owner's get_tag on purpose");
	pt_add_xshm_reference_owner_loop_test(fail, write_failure_does_not_stop_delivery, 0, 2,
					      "fails the owner's CQ write on purpose");
	pt_add_xshm_reference_owner_loop_test(fail, writeerr_failure_does_not_stop_delivery, 0,
					      2, "fails the owner's CQ writeerr on purpose");
}

int main(void)
{
	return pt_run("peer_cq", add_cases);
}
