/* Completion queues: formats, reads, source addresses, errors, waiting. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define TAG	0x5eedULL
#define DATA	0xfeedfacecafef00dULL
#define MSG_LEN	100

/* What the sending child does once the receiver says go. */
struct plan {
	size_t len;
	int count;
	bool remote_data;
	bool truncated;		/* the receiver truncates: any completion will do */
};

static void sender(int sock, void *arg)
{
	const struct plan *p = arg;
	struct xt_cfg cfg = xt_cfg_default();
	char *buf = xt_alloc(p->len);
	struct xt_comp c;
	struct xt_ep x;
	fi_addr_t dst;

	xt_open(&x, &cfg);
	dst = xt_exchange(&x, sock);
	xt_wait(sock);
	for (int i = 0; i < p->count; i++) {
		xt_fill(buf, p->len, (uint64_t)i, 0);
		if (p->remote_data)
			XT_POST(&x, fi_tsenddata(x.ep, buf, p->len, NULL, DATA, dst, TAG, NULL));
		else
			XT_POST(&x, fi_tsend(x.ep, buf, p->len, NULL, dst, TAG, NULL));
		if (p->truncated)
			XT_ASSERT(xt_poll(x.tx, x.rx, XT_TIMEOUT_MS, &c) == 0,
				  "no send completion");
		else
			xt_wait_tx(&x, &c);
	}
	xt_signal(sock, 1);
	xt_wait(sock);
	xt_close(&x);
	free(buf);
}

/* Receiver side of a test: the child's name, inserted or not. */
struct receiver {
	struct xt_cfg cfg;
	struct xt_ep x;
	struct xt_child child;
	fi_addr_t src;
};

static void start(struct receiver *r, const struct plan *p, bool insert_sender)
{
	char name[XT_NAME_MAX];

	xt_spawn(&r->child, sender, (void *)p);
	xt_open(&r->x, &r->cfg);
	xt_recv_name(r->child.sock, name);
	r->src = FI_ADDR_NOTAVAIL;
	if (insert_sender) {
		/* a first entry makes the sender's fi_addr non-zero */
		xt_av_insert(&r->x, r->x.name);
		r->src = xt_av_insert(&r->x, name);
	}
	xt_send_name(r->child.sock, &r->x);
}

static void finish(struct receiver *r)
{
	XT_ASSERT(xt_wait(r->child.sock) == 1, "sender did not finish");
	xt_signal(r->child.sock, 1);
	xt_join(&r->child);
	xt_close(&r->x);
}

static const enum fi_cq_format formats[] = {
	FI_CQ_FORMAT_UNSPEC, FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
	FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED,
};

START_TEST(cq_opens_with_each_format)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_cq_attr attr = { .format = formats[_i], .wait_obj = FI_WAIT_NONE };
	struct fid_cq *cq;
	struct xt_ep x;

	xt_open_upto(&x, &cfg, XT_DOMAIN);
	XT_ASSERT_OK(fi_cq_open(x.domain, &attr, &cq, NULL));
	XT_ASSERT_OK(fi_close(&cq->fid));
	xt_close(&x);
}
END_TEST

START_TEST(cq_read_of_empty_cq_gives_eagain)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	struct xt_ep x;

	xt_open(&x, &cfg);
	XT_ASSERT_RC(fi_cq_read(x.rx->fid, &e, 1), -FI_EAGAIN);
	XT_ASSERT_RC(fi_cq_read(x.tx->fid, &e, 1), -FI_EAGAIN);
	XT_ASSERT_RC(fi_cq_readfrom(x.rx->fid, &e, 1, &src), -FI_EAGAIN);
	xt_close(&x);
}
END_TEST

static size_t entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT: return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG: return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA: return sizeof(struct fi_cq_data_entry);
	default: return sizeof(struct fi_cq_tagged_entry);
	}
}

/* Reads one entry into a buffer filled with 0xab to see what is written. */
static void read_raw_entry(struct xt_cq *cq, unsigned char *raw, size_t rawlen)
{
	uint64_t end = xt_now_ms() + XT_TIMEOUT_MS;
	ssize_t rc;

	memset(raw, 0xab, rawlen);
	while ((rc = fi_cq_read(cq->fid, raw, 1)) == -FI_EAGAIN && xt_now_ms() < end)
		;
	XT_ASSERT_RC(rc, 1);
}

/* Each format carries its own fields and the provider writes no more. */
START_TEST(cq_entry_has_the_fields_of_its_format)
{
	const struct plan p = { .len = MSG_LEN, .count = 1, .remote_data = true };
	enum fi_cq_format f = formats[_i];
	struct fi_cq_tagged_entry *e;
	unsigned char raw[2 * sizeof(struct fi_cq_tagged_entry)];
	char buf[MSG_LEN], ctx;
	struct receiver r = { .cfg = xt_cfg_default() };

	r.cfg.cq_format = f;
	start(&r, &p, true);
	XT_POST(&r.x, fi_trecv(r.x.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, TAG, 0, &ctx));
	xt_signal(r.child.sock, 1);
	read_raw_entry(r.x.rx, raw, sizeof(raw));
	e = (struct fi_cq_tagged_entry *)raw;
	XT_ASSERT(e->op_context == &ctx, "op_context %p, posted %p", e->op_context, (void *)&ctx);
	if (f != FI_CQ_FORMAT_UNSPEC && f != FI_CQ_FORMAT_CONTEXT) {
		XT_ASSERT((e->flags & (FI_RECV | FI_TAGGED)) == (FI_RECV | FI_TAGGED),
			  "flags 0x%llx", (unsigned long long)e->flags);
		XT_ASSERT(e->len == MSG_LEN, "len %zu", e->len);
	}
	if (f == FI_CQ_FORMAT_DATA || f == FI_CQ_FORMAT_TAGGED)
		XT_ASSERT(e->data == DATA, "data 0x%llx", (unsigned long long)e->data);
	if (f == FI_CQ_FORMAT_TAGGED)
		XT_ASSERT(e->tag == TAG, "tag 0x%llx", (unsigned long long)e->tag);
	for (size_t i = entry_size(f); f != FI_CQ_FORMAT_UNSPEC && i < sizeof(raw); i++)
		XT_ASSERT(raw[i] == 0xab, "byte %zu written past a %zu-byte entry", i,
			  entry_size(f));
	XT_ASSERT_PATTERN(buf, MSG_LEN, 0, 0);
	finish(&r);
}
END_TEST

START_TEST(cq_readfrom_gives_the_sender_fi_addr)
{
	const struct plan p = { .len = MSG_LEN, .count = 1 };
	struct receiver r = { .cfg = xt_cfg_default() };
	char buf[MSG_LEN];
	struct xt_comp c;

	r.cfg.caps |= FI_SOURCE;
	start(&r, &p, true);
	XT_POST(&r.x, fi_trecv(r.x.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, TAG, 0, NULL));
	xt_signal(r.child.sock, 1);
	xt_wait_rx(&r.x, &c);
	XT_ASSERT(c.src == r.src, "source %llu, sender is %llu", (unsigned long long)c.src,
		  (unsigned long long)r.src);
	finish(&r);
}
END_TEST

START_TEST(cq_readfrom_gives_notavail_for_sender_not_in_av)
{
	const struct plan p = { .len = MSG_LEN, .count = 1 };
	struct receiver r = { .cfg = xt_cfg_default() };
	char buf[MSG_LEN];
	struct xt_comp c;

	r.cfg.caps |= FI_SOURCE;
	start(&r, &p, false);
	XT_POST(&r.x, fi_trecv(r.x.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, TAG, 0, NULL));
	xt_signal(r.child.sock, 1);
	xt_wait_rx(&r.x, &c);
	XT_ASSERT(c.src == FI_ADDR_NOTAVAIL, "source %llu", (unsigned long long)c.src);
	XT_ASSERT_PATTERN(buf, MSG_LEN, 0, 0);
	finish(&r);
}
END_TEST

START_TEST(cq_error_comes_as_eavail_then_readerr)
{
	const struct plan p = { .len = MSG_LEN, .count = 1, .truncated = true };
	struct receiver r = { .cfg = xt_cfg_default() };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	char buf[MSG_LEN / 2], ctx, sbuf[128];
	uint64_t end = xt_now_ms() + XT_TIMEOUT_MS;
	const char *s;
	ssize_t rc;

	start(&r, &p, true);
	XT_POST(&r.x, fi_trecv(r.x.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, TAG, 0, &ctx));
	xt_signal(r.child.sock, 1);
	while ((rc = fi_cq_read(r.x.rx->fid, &e, 1)) == -FI_EAGAIN && xt_now_ms() < end)
		;
	XT_ASSERT_RC(rc, -FI_EAVAIL);
	XT_ASSERT_RC(fi_cq_readerr(r.x.rx->fid, &err, 0), 1);
	XT_ASSERT(err.err == FI_ETRUNC, "err %d (%s)", err.err, fi_strerror(err.err));
	XT_ASSERT(err.op_context == &ctx, "op_context %p", err.op_context);
	s = fi_cq_strerror(r.x.rx->fid, err.prov_errno, err.err_data, sbuf, sizeof(sbuf));
	XT_ASSERT(s != NULL && *s, "fi_cq_strerror gave no string");
	XT_ASSERT_RC(fi_cq_read(r.x.rx->fid, &e, 1), -FI_EAGAIN);
	finish(&r);
}
END_TEST

/*
 * Posts n receives, the i-th into buf[i] with buf[i] as its context, then
 * lets the sender go: its message i lands in buf[i].
 */
static void post_numbered(struct receiver *r, char (*buf)[MSG_LEN], int n)
{
	for (int i = 0; i < n; i++)
		XT_POST(&r->x, fi_trecv(r->x.ep, buf[i], MSG_LEN, NULL, FI_ADDR_UNSPEC, TAG, 0,
					buf[i]));
	xt_signal(r->child.sock, 1);
}

/* Entry e is receive i's of post_numbered, and holds message i. */
static void check_numbered(const struct fi_cq_tagged_entry *e, char (*buf)[MSG_LEN], int i)
{
	XT_ASSERT(e->op_context == buf[i], "entry %d has context of receive %d", i,
		  (int)(((char *)e->op_context - buf[0]) / MSG_LEN));
	XT_ASSERT_PATTERN(buf[i], MSG_LEN, (uint64_t)i, 0);
}

START_TEST(cq_read_with_count_returns_entries_in_posting_order)
{
	enum { N = 5 };
	const struct plan p = { .len = MSG_LEN, .count = N };
	struct receiver r = { .cfg = xt_cfg_default() };
	struct fi_cq_tagged_entry e[N + 3];
	char buf[N][MSG_LEN];
	uint64_t end;
	int got = 0;

	start(&r, &p, true);
	post_numbered(&r, buf, N);
	end = xt_now_ms() + XT_TIMEOUT_MS;
	while (got < N && xt_now_ms() < end) {
		ssize_t rc = fi_cq_read(r.x.rx->fid, &e[got], N + 3 - got);

		XT_ASSERT(rc > 0 || rc == -FI_EAGAIN, "fi_cq_read: %zd (%s)", rc,
			  fi_strerror((int)-rc));
		if (rc > 0)
			got += (int)rc;
	}
	XT_ASSERT(got == N, "%d completions, %d expected", got, N);
	for (int i = 0; i < N; i++) {
		check_numbered(&e[i], buf, i);
	}
	finish(&r);
}
END_TEST

/*
 * More completions than the CQ first had room for (xshm's starts with 64
 * and grows), written while none is read: all of them kept, in order.
 * The endpoint is progressed through its transmit CQ, which stays empty,
 * so that the receive CQ only fills.
 */
START_TEST(cq_keeps_completions_past_its_first_capacity)
{
	enum { N = 200 };
	const struct plan p = { .len = MSG_LEN, .count = N };
	struct receiver r = { .cfg = xt_cfg_default() };
	struct fi_cq_tagged_entry e;
	char (*buf)[MSG_LEN] = xt_alloc(N * MSG_LEN);

	start(&r, &p, true);
	post_numbered(&r, buf, N);
	/* every send completed at the sender once it was in our ring */
	XT_ASSERT(xt_wait(r.child.sock) == 1, "sender did not finish");
	for (int i = 0; i < N; i++)
		XT_ASSERT_RC(fi_cq_read(r.x.tx->fid, NULL, 0), -FI_EAGAIN);
	for (int i = 0; i < N; i++) {
		XT_ASSERT_RC(fi_cq_read(r.x.rx->fid, &e, 1), 1);
		check_numbered(&e, buf, i);
	}
	XT_ASSERT_RC(fi_cq_read(r.x.rx->fid, &e, 1), -FI_EAGAIN);
	xt_signal(r.child.sock, 1);
	xt_join(&r.child);
	xt_close(&r.x);
	free(buf);
}
END_TEST

/*
 * A read that finds the CQ empty has the completions it drives written
 * straight into its buffer, as many as it has room for; the others wait
 * in the CQ or in the ring.  Messages already in the ring, read some at a
 * time, come in the order they were received: 5 read 2 at a time (2, 2,
 * 1: the progress of the first read drained all 5), and 40 read 16 at a
 * time (16, 16, 8: each read's progress drains about as many as it has
 * room for).
 */
static const struct { int n, room; } read_shapes[] = { { 5, 2 }, { 40, 16 } };

START_TEST(cq_read_with_less_room_than_completions_leaves_the_rest_in_order)
{
	enum { N_MAX = 40, ROOM_MAX = 16 };
	const int n = read_shapes[_i].n, room = read_shapes[_i].room;
	const struct plan p = { .len = MSG_LEN, .count = n };
	struct receiver r = { .cfg = xt_cfg_default() };
	struct fi_cq_tagged_entry e[ROOM_MAX + 1];
	char buf[N_MAX][MSG_LEN];
	int got = 0;

	start(&r, &p, true);
	post_numbered(&r, buf, n);
	XT_ASSERT(xt_wait(r.child.sock) == 1, "sender did not finish");
	while (got < n) {
		ssize_t want = n - got < room ? n - got : room;
		const unsigned char *past = (const unsigned char *)&e[room];

		memset(&e[room], 0xab, sizeof(e[room]));
		XT_ASSERT_RC(fi_cq_read(r.x.rx->fid, e, room), want);
		for (size_t i = 0; i < sizeof(e[room]); i++)
			XT_ASSERT(past[i] == 0xab, "byte %zu past the room given written", i);
		for (ssize_t i = 0; i < want; i++, got++)
			check_numbered(&e[i], buf, got);
	}
	XT_ASSERT_RC(fi_cq_read(r.x.rx->fid, e, room), -FI_EAGAIN);
	xt_signal(r.child.sock, 1);
	xt_join(&r.child);
	xt_close(&r.x);
}
END_TEST

/*
 * A success, an error (the second receive truncates), a success, all
 * completed by one read's progress: that read returns the first, the next
 * one -FI_EAVAIL, fi_cq_readerr the error, and only then the third.
 */
START_TEST(cq_error_between_successes_keeps_its_place)
{
	const struct plan p = { .len = MSG_LEN, .count = 3, .truncated = true };
	struct receiver r = { .cfg = xt_cfg_default() };
	struct fi_cq_tagged_entry e[4];
	struct fi_cq_err_entry err = { 0 };
	char first[MSG_LEN], small[MSG_LEN / 2], third[MSG_LEN];

	start(&r, &p, true);
	XT_POST(&r.x, fi_trecv(r.x.ep, first, sizeof(first), NULL, FI_ADDR_UNSPEC, TAG, 0,
			       first));
	XT_POST(&r.x, fi_trecv(r.x.ep, small, sizeof(small), NULL, FI_ADDR_UNSPEC, TAG, 0,
			       small));
	XT_POST(&r.x, fi_trecv(r.x.ep, third, sizeof(third), NULL, FI_ADDR_UNSPEC, TAG, 0,
			       third));
	xt_signal(r.child.sock, 1);
	XT_ASSERT(xt_wait(r.child.sock) == 1, "sender did not finish");
	XT_ASSERT_RC(fi_cq_read(r.x.rx->fid, e, 4), 1);
	XT_ASSERT(e[0].op_context == first, "first entry is not the first receive's");
	XT_ASSERT_RC(fi_cq_read(r.x.rx->fid, e, 4), -FI_EAVAIL);
	XT_ASSERT_RC(fi_cq_readerr(r.x.rx->fid, &err, 0), 1);
	XT_ASSERT(err.err == FI_ETRUNC && err.op_context == small, "err %d, context %p",
		  err.err, err.op_context);
	XT_ASSERT_RC(fi_cq_read(r.x.rx->fid, e, 4), 1);
	XT_ASSERT(e[0].op_context == third, "last entry is not the third receive's");
	XT_ASSERT_PATTERN(third, MSG_LEN, 2, 0);
	XT_ASSERT_RC(fi_cq_read(r.x.rx->fid, e, 4), -FI_EAGAIN);
	xt_signal(r.child.sock, 1);
	xt_join(&r.child);
	xt_close(&r.x);
}
END_TEST

static const enum fi_wait_obj accepted_waits[] = {
	FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_YIELD, FI_WAIT_FD,
};

START_TEST(cq_accepts_wait_obj)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_ep x;

	cfg.wait_obj = accepted_waits[_i];
	xt_open(&x, &cfg);
	xt_close(&x);
}
END_TEST

/* _i indexes accepted_waits past FI_WAIT_NONE: UNSPEC, YIELD and FD. */
START_TEST(cq_sread_on_empty_cq_times_out_with_eagain)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_cq_tagged_entry e;
	struct xt_ep x;
	uint64_t t0, waited;

	cfg.wait_obj = accepted_waits[_i];
	xt_open(&x, &cfg);
	t0 = xt_now_ms();
	XT_ASSERT_RC(fi_cq_sread(x.rx->fid, &e, 1, NULL, 200), -FI_EAGAIN);
	waited = xt_now_ms() - t0;
	XT_ASSERT(waited >= 150 && waited < 5000, "waited %llu ms for a 200 ms timeout",
		  (unsigned long long)waited);
	xt_close(&x);
}
END_TEST

START_TEST(cq_sread_returns_an_arriving_completion)
{
	const struct plan p = { .len = MSG_LEN, .count = 1 };
	struct receiver r = { .cfg = xt_cfg_default() };
	struct fi_cq_tagged_entry e;
	char buf[MSG_LEN], ctx;

	r.cfg.wait_obj = accepted_waits[_i];
	start(&r, &p, true);
	XT_POST(&r.x, fi_trecv(r.x.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, TAG, 0, &ctx));
	xt_signal(r.child.sock, 1);
	XT_ASSERT_RC(fi_cq_sread(r.x.rx->fid, &e, 1, NULL, XT_TIMEOUT_MS), 1);
	XT_ASSERT(e.op_context == &ctx, "op_context %p", e.op_context);
	XT_ASSERT_PATTERN(buf, MSG_LEN, 0, 0);
	finish(&r);
}
END_TEST

static Suite *cq_suite(void)
{
	Suite *s = suite_create("cq");
	TCase *open = tcase_create("open");
	TCase *read = tcase_create("read");
	TCase *wait = tcase_create("wait");
	int nformats = sizeof(formats) / sizeof(formats[0]);
	int nwaits = sizeof(accepted_waits) / sizeof(accepted_waits[0]);

	tcase_set_timeout(open, 20);
	tcase_add_loop_test(open, cq_opens_with_each_format, 0, nformats);
	if (xt_wanted(XT_EXTRA))
		tcase_add_loop_test(open, cq_accepts_wait_obj, 0, nwaits);
	suite_add_tcase(s, open);

	tcase_set_timeout(read, 30);
	tcase_add_test(read, cq_read_of_empty_cq_gives_eagain);
	tcase_add_loop_test(read, cq_entry_has_the_fields_of_its_format, 0, nformats);
	tcase_add_test(read, cq_readfrom_gives_the_sender_fi_addr);
	tcase_add_test(read, cq_readfrom_gives_notavail_for_sender_not_in_av);
	tcase_add_test(read, cq_error_comes_as_eavail_then_readerr);
	tcase_add_test(read, cq_read_with_count_returns_entries_in_posting_order);
	if (xt_wanted(XT_XSHM)) {	/* xshm's manual progress */
		tcase_add_loop_test(read,
				    cq_read_with_less_room_than_completions_leaves_the_rest_in_order,
				    0, (int)(sizeof(read_shapes) / sizeof(read_shapes[0])));
		tcase_add_test(read, cq_error_between_successes_keeps_its_place);
		/* progress through another CQ */
		tcase_add_test(read, cq_keeps_completions_past_its_first_capacity);
	}
	suite_add_tcase(s, read);

	tcase_set_timeout(wait, 30);
	if (xt_wanted(XT_EXTRA))
		tcase_add_loop_test(wait, cq_sread_on_empty_cq_times_out_with_eagain, 1, nwaits);
	if (xt_wanted(XT_EXTRA))
		tcase_add_loop_test(wait, cq_sread_returns_an_arriving_completion, 1, nwaits);
	suite_add_tcase(s, wait);
	return s;
}

int main(void)
{
	return xt_run_suite(cq_suite());
}
