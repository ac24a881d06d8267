/*
 * Messages from a sender on each path to one receiver: any-source receives
 * get both senders' messages in each sender's order with FI_SOURCE naming
 * the address the receiver inserted; directed receives take only their
 * sender's; every size arrives intact on each path, expected or not;
 * unexpected messages are received in their send order, and are their
 * sender's once it is inserted, however late.
 */
#include "xlink.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Lengths of the messages of a stream, cycled. */
static const size_t stream_lens[] = {
	1, 100, 0, 5000, 70000, 64, 300000, 16385, 4095, XL_MIB, 7, 65536,
};
#define STREAM_MAX	XL_MIB
#define NSTREAM		24	/* messages per sender */

static size_t stream_len(size_t seq)
{
	return stream_lens[seq % N(stream_lens)];
}

/* Sender p's stream of n messages; tagged ones carry xl_tag(p, seq). */
static void send_stream(struct xl_rig *r, int p, bool tagged, size_t n)
{
	struct xt_burst_msg m[NSTREAM];

	XT_ASSERT(n <= NSTREAM, "stream of %zu", n);
	for (size_t i = 0; i < n; i++)
		m[i] = (struct xt_burst_msg){
			.tagged = tagged, .plain = true, .len = stream_len(i),
			.seed = xl_seed(p, i), .tag = xl_tag(p, i),
		};
	xl_send(r, p, m, n);
}

struct slot {
	unsigned char *buf;
	size_t cap;
	int path;		/* the sender asked for, -1 for any */
	size_t seq;		/* the message expected, for directed receives */
};

/* Posts a receive into s from src (FI_ADDR_UNSPEC: any) matching any tag. */
static void post_slot(struct xl_rig *r, struct slot *s, bool tagged, fi_addr_t src)
{
	xt_post_recv(&r->x, tagged, s->buf, s->cap, src, 0, ~0ULL, s);
}

/*
 * Checks a completion of a stream message: its source is a sender, whose
 * next message (next[path]) it is: length, flags, tag and every byte.
 */
static int check_stream_comp(struct xl_rig *r, const struct xt_comp *c, bool tagged,
			     size_t next[2])
{
	struct slot *s = c->e.op_context;
	int p = xl_path_of(r, c->src);
	size_t seq = next[p]++;
	const char *w = xl_path[p];

	XT_ASSERT(s != NULL, "completion without context");
	XT_ASSERT(s->path < 0 || s->path == p, "a receive directed to the %s sender got a %s "
		  "message", xl_path[s->path], w);
	XT_ASSERT(seq < NSTREAM, "%s sender: more messages than sent", w);
	XT_ASSERT(c->e.len == stream_len(seq), "%s message %zu: len %zu, sent %zu (out of order?)",
		  w, seq, c->e.len, stream_len(seq));
	XT_ASSERT((c->e.flags & (FI_RECV | FI_MSG | FI_TAGGED)) ==
		  (FI_RECV | (tagged ? FI_TAGGED : FI_MSG)), "%s message %zu: flags 0x%llx", w,
		  seq, (unsigned long long)c->e.flags);
	XT_ASSERT(!tagged || c->e.tag == xl_tag(p, seq), "%s message %zu: tag 0x%llx, expected "
		  "0x%llx (out of order?)", w, seq, (unsigned long long)c->e.tag,
		  (unsigned long long)xl_tag(p, seq));
	XT_ASSERT(!(c->e.flags & FI_REMOTE_CQ_DATA), "%s message %zu: FI_REMOTE_CQ_DATA unsent",
		  w, seq);
	XT_ASSERT_PATTERN(s->buf, c->e.len, xl_seed(p, seq), 0);
	xl_check_guard(s->buf, s->cap, w);
	return p;
}

static int by_slot(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct xt_comp *)a)->e.op_context;
	uintptr_t y = (uintptr_t)((const struct xt_comp *)b)->e.op_context;

	return x < y ? -1 : x > y;
}

/*
 * Waits for n receive completions and gives them in the order their
 * receives were posted (slots lie in posting order).  A provider may
 * complete a large message after a small one that followed it from the
 * same source (fi_cq(3) promises no completion order); what the messages
 * of one source must keep is their matching order, which this checks.
 */
static void wait_rx_in_post_order(struct xl_rig *r, struct xt_comp *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		xt_wait_rx(&r->x, &c[i]);
	qsort(c, n, sizeof(*c), by_slot);
}

static struct slot *alloc_slots(size_t n, size_t cap)
{
	struct slot *s = calloc(n, sizeof(*s));

	XT_ASSERT(s != NULL, "calloc");
	for (size_t i = 0; i < n; i++)
		s[i] = (struct slot){ .buf = xl_buf(cap), .cap = cap, .path = -1 };
	return s;
}

static void free_slots(struct slot *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(s[i].buf);
	free(s);
}

/* ---- any source ---- */

/* _i: 0 tagged, 1 untagged; receives posted before (expected) the sends. */
START_TEST(any_source_receives_get_both_senders_in_order)
{
	bool tagged = _i == 0;
	struct slot *s = alloc_slots(2 * NSTREAM, STREAM_MAX);
	size_t next[2] = { 0, 0 };
	struct xt_comp c[2 * NSTREAM];
	struct xl_rig r;

	xl_start(&r, 0);
	for (size_t i = 0; i < 2 * NSTREAM; i++)
		post_slot(&r, &s[i], tagged, FI_ADDR_UNSPEC);
	send_stream(&r, XL_LOCAL, tagged, NSTREAM);
	send_stream(&r, XL_REMOTE, tagged, NSTREAM);
	wait_rx_in_post_order(&r, c, 2 * NSTREAM);
	for (size_t i = 0; i < 2 * NSTREAM; i++)
		check_stream_comp(&r, &c[i], tagged, next);
	XT_ASSERT(next[0] == NSTREAM && next[1] == NSTREAM, "got %zu local, %zu remote",
		  next[0], next[1]);
	xt_expect_none(r.x.rx, r.x.tx, 50);
	for (int p = 0; p < 2; p++)
		xl_sent(&r, p, NSTREAM, false);
	xl_stop(&r);
	free_slots(s, 2 * NSTREAM);
}
END_TEST

/* ---- directed receives ---- */

/*
 * _i: 0 tagged, 1 untagged.  Directed receives for the remote sender
 * alone are posted; both send; only the remote sender's messages complete,
 * in order, the local sender's wait unexpected until receives directed to
 * it are posted.  Then the same the other way round with receives of both
 * posted interleaved.
 */
START_TEST(directed_receives_take_only_their_senders_messages)
{
	bool tagged = _i == 0;
	struct slot *s = alloc_slots(2 * NSTREAM, STREAM_MAX);
	size_t next[2] = { 0, 0 };
	struct xt_comp c[2 * NSTREAM];
	struct xl_rig r;
	size_t k = 0;

	xl_start(&r, 0);
	for (size_t i = 0; i < NSTREAM; i++, k++) {
		s[k].path = XL_REMOTE;
		post_slot(&r, &s[k], tagged, r.fa[XL_REMOTE]);
	}
	send_stream(&r, XL_LOCAL, tagged, NSTREAM);
	send_stream(&r, XL_REMOTE, tagged, NSTREAM);
	wait_rx_in_post_order(&r, c, NSTREAM);
	for (size_t i = 0; i < NSTREAM; i++)
		XT_ASSERT(check_stream_comp(&r, &c[i], tagged, next) == XL_REMOTE, "not remote");
	xl_settle(&r);
	for (size_t i = 0; i < NSTREAM; i++, k++) {
		s[k].path = XL_LOCAL;
		post_slot(&r, &s[k], tagged, r.fa[XL_LOCAL]);
	}
	wait_rx_in_post_order(&r, c, NSTREAM);
	for (size_t i = 0; i < NSTREAM; i++)
		XT_ASSERT(check_stream_comp(&r, &c[i], tagged, next) == XL_LOCAL, "not local");
	for (int p = 0; p < 2; p++)
		xl_sent(&r, p, NSTREAM, false);

	/* Interleaved directed receives, posted before the sends. */
	next[0] = next[1] = 0;
	for (size_t i = 0, k = 0; i < 2 * NSTREAM; i++, k++) {
		s[k].path = (int)((i / 3) % 2);
		post_slot(&r, &s[k], tagged, r.fa[s[k].path]);
	}
	send_stream(&r, XL_REMOTE, tagged, NSTREAM);
	send_stream(&r, XL_LOCAL, tagged, NSTREAM);
	wait_rx_in_post_order(&r, c, 2 * NSTREAM);
	for (size_t i = 0; i < 2 * NSTREAM; i++)
		check_stream_comp(&r, &c[i], tagged, next);
	xt_expect_none(r.x.rx, r.x.tx, 50);
	for (int p = 0; p < 2; p++)
		xl_sent(&r, p, NSTREAM, false);
	xl_stop(&r);
	free_slots(s, 2 * NSTREAM);
}
END_TEST

/* ---- sizes ---- */

static const size_t sizes[] = {
	0, 1, 63, 64, 65, 4095, 16383, 16384, 16385, 65536, XL_MIB, 4 * XL_MIB,
};

/*
 * _i: path (bit 0), unexpected (bit 1).  The sender sends every size, tag
 * = its index; the receiver's directed receives of exactly that size (tag
 * matched) are posted before the sends, or after they had time to arrive.
 */
START_TEST(every_size_arrives_intact_on_each_path)
{
	int p = _i & 1;
	bool unexpected = _i & 2;
	struct xt_burst_msg m[N(sizes)];
	unsigned char *buf[N(sizes)];
	struct xl_rig r;

	xl_start(&r, 0);
	for (size_t i = 0; i < N(sizes); i++) {
		buf[i] = xl_buf(sizes[i]);
		m[i] = (struct xt_burst_msg){
			.tagged = true, .plain = true, .len = sizes[i],
			.seed = xl_seed(p, i), .tag = i,
		};
	}
	if (unexpected) {
		xl_send(&r, p, m, N(sizes));
		xl_settle(&r);
	}
	for (size_t i = 0; i < N(sizes); i++)
		xt_post_recv(&r.x, true, buf[i], sizes[i], r.fa[p], i, 0, buf[i]);
	if (!unexpected)
		xl_send(&r, p, m, N(sizes));
	for (size_t n = 0; n < N(sizes); n++) {
		struct xt_comp c;
		size_t i;

		xt_wait_rx(&r.x, &c);
		for (i = 0; i < N(sizes) && buf[i] != c.e.op_context; i++)
			;
		XT_ASSERT(i < N(sizes), "unknown context %p", c.e.op_context);
		XT_ASSERT(c.e.tag == i, "tag %llu in the receive of tag %zu",
			  (unsigned long long)c.e.tag, i);
		XT_ASSERT(c.e.len == sizes[i], "%s, %s: len %zu, sent %zu", xl_path[p],
			  unexpected ? "unexpected" : "expected", c.e.len, sizes[i]);
		XT_ASSERT(c.src == r.fa[p], "source %llu, sender %llu",
			  (unsigned long long)c.src, (unsigned long long)r.fa[p]);
		XT_ASSERT_PATTERN(buf[i], sizes[i], xl_seed(p, i), 0);
		xl_check_guard(buf[i], sizes[i], xl_path[p]);
	}
	xl_sent(&r, p, N(sizes), false);
	xl_stop(&r);
	for (size_t i = 0; i < N(sizes); i++)
		free(buf[i]);
}
END_TEST

/* ---- unexpected messages ---- */

/*
 * _i: 0 the local sender, 1 the remote one, 2 both.  The senders send
 * before any receive is posted; receives (any source, any tag) posted one
 * at a time afterwards get the messages in each sender's order.
 */
START_TEST(unexpected_messages_are_received_in_send_order)
{
	bool both = _i == 2;
	size_t total = both ? 2 * NSTREAM : NSTREAM;
	struct slot *s = alloc_slots(total, STREAM_MAX);
	size_t next[2] = { 0, 0 };
	struct xl_rig r;

	xl_start(&r, 0);
	for (int p = 0; p < 2; p++)
		if (both || p == _i)
			send_stream(&r, p, true, NSTREAM);
	xl_settle(&r);
	for (size_t i = 0; i < total; i++) {
		struct xt_comp c;
		int p;

		post_slot(&r, &s[i], true, FI_ADDR_UNSPEC);
		xt_wait_rx(&r.x, &c);
		XT_ASSERT(c.e.op_context == &s[i], "receive %zu completed out of order", i);
		p = check_stream_comp(&r, &c, true, next);
		XT_ASSERT(both || p == _i, "a message from the %s sender, which sent none",
			  xl_path[p]);
	}
	xt_expect_none(r.x.rx, r.x.tx, 50);
	for (int p = 0; p < 2; p++)
		if (both || p == _i)
			xl_sent(&r, p, NSTREAM, false);
	xl_stop(&r);
	free_slots(s, total);
}
END_TEST

/* ---- a sender not yet inserted ---- */

/*
 * _i: path (bit 0), untagged (bit 1).  Sender p's messages arrive before
 * the receiver inserted its address; once it is inserted, receives
 * directed at that address take them in send order and FI_SOURCE reports
 * it, as fi_av(3) has FI_SOURCE give the address inserted.  The other
 * sender's messages still go to no one else's receive.
 */
START_TEST(messages_from_a_sender_inserted_late_are_its_own)
{
	int p = _i & 1;
	bool tagged = !(_i & 2);
	struct slot *s = alloc_slots(NSTREAM, STREAM_MAX);
	struct xt_comp c[NSTREAM];
	char name[XT_NAME_MAX];
	size_t next[2] = { 0, 0 };
	struct xl_rig r;

	xl_start_late(&r, 0, p, name);
	send_stream(&r, p, tagged, NSTREAM);
	xl_settle(&r);
	r.fa[p] = xt_av_insert(&r.x, name);
	for (size_t i = 0; i < NSTREAM; i++) {
		s[i].path = p;
		post_slot(&r, &s[i], tagged, r.fa[p]);
	}
	wait_rx_in_post_order(&r, c, NSTREAM);
	for (size_t i = 0; i < NSTREAM; i++)
		XT_ASSERT(check_stream_comp(&r, &c[i], tagged, next) == p, "not %s", xl_path[p]);
	xt_expect_none(r.x.rx, r.x.tx, 50);
	xl_sent(&r, p, NSTREAM, false);
	xl_stop(&r);
	free_slots(s, NSTREAM);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xlink_paths");
	TCase *any = tcase_create("any_source");
	TCase *dir = tcase_create("directed");
	TCase *sz = tcase_create("sizes");
	TCase *unexp = tcase_create("unexpected");
	TCase *late = tcase_create("inserted_late");

	tcase_set_timeout(any, 60);
	tcase_add_loop_test(any, any_source_receives_get_both_senders_in_order, 0, 2);
	suite_add_tcase(s, any);

	tcase_set_timeout(dir, 60);
	tcase_add_loop_test(dir, directed_receives_take_only_their_senders_messages, 0, 2);
	suite_add_tcase(s, dir);

	tcase_set_timeout(sz, 60);
	tcase_add_loop_test(sz, every_size_arrives_intact_on_each_path, 0, 4);
	suite_add_tcase(s, sz);

	tcase_set_timeout(unexp, 60);
	tcase_add_loop_test(unexp, unexpected_messages_are_received_in_send_order, 0, 3);
	suite_add_tcase(s, unexp);

	tcase_set_timeout(late, 60);
	tcase_add_loop_test(late, messages_from_a_sender_inserted_late_are_its_own, 0, 4);
	suite_add_tcase(s, late);
	return xl_main(s);
}
