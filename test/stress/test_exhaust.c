/*
 * Exhausted resources: a receiver that does not progress fills up; its
 * senders get -FI_EAGAIN (a full ring of 512 cells, an empty pool of 128
 * bounce buffers), or their sends wait queued; once it progresses, every
 * message arrives intact, in order per sender.  A flood of unexpected
 * messages (100k small, 1k of 64 KiB) before any receive is posted: the
 * receiver's memory stays within FI_XSHM_UNEXP_BYTES_MAX (plus slack), the
 * senders are held back with -FI_EAGAIN, and nothing is lost.
 */
#include "stress.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Under AddressSanitizer the RSS holds its redzones and quarantine too: the
 * uninstrumented run asserts the memory bound, this one the flow control.
 */
#ifdef __SANITIZE_ADDRESS__
#define RSS_IS_OURS	false
#else
#define RSS_IS_OURS	true
#endif

#define RING_CELLS	512		/* man fi_xshm: inbound ring */
#define POOL_BUFS	128		/* man fi_xshm: bounce buffers */
#define INLINE_LEN	64
#define MEDIUM_LEN	8192		/* one bounce buffer */
#define CHUNKED_LEN	(256 * 1024)	/* 16 bounce buffers */
#define IDLE_MS		200		/* how long a refusal must persist */
#define STALL_MS	300		/* a flood sender refused this long says so */
#define FLOOD_SMALL	100000
#define FLOOD_LARGE	1000
#define LARGE_LEN	65536
#define SMALL_CAP	((size_t)4 << 20)	/* FI_XSHM_UNEXP_BYTES_MAX in one test */
#define DEFAULT_CAP	((size_t)64 << 20)	/* its documented default */
#define RX_SLOTS	256
#define TAG_SENDER_SHIFT 32

/* ---- a scripted sender ---- */

enum op { OP_FILL = 1, OP_BURST, OP_REST, OP_FLOOD, OP_FINISH, OP_QUIT };

struct sender {
	int id;
	struct xt_cfg cfg;
	struct xt_ep x;
	fi_addr_t peer;
	uint64_t next_k, posted, completed;
};

static uint64_t seed_of(int sender, uint64_t k)
{
	return 0xe8a0000000000000ULL ^ ((uint64_t)sender << 40) ^ k;
}

static uint64_t tag_of(int sender, uint64_t k)
{
	return ((uint64_t)sender << TAG_SENDER_SHIFT) | k;
}

/* Flood message k: every 101st is large, the others 1..200 bytes. */
static size_t flood_len(uint64_t k)
{
	return k % 101 == 100 ? LARGE_LEN : 1 + k % 200;
}

static void reap(struct sender *s)
{
	struct fi_cq_tagged_entry e[64];
	ssize_t n;

	while ((n = fi_cq_read(s->x.tx->fid, e, 64)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			free(e[i].op_context);
		s->completed += (uint64_t)n;
	}
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };

		fi_cq_readerr(s->x.tx->fid, &err, 0);
		XT_ASSERT(false, "send error %d (%s)", err.err, fi_strerror(err.err));
	}
	XT_ASSERT(n == -FI_EAGAIN, "fi_cq_read: %zd", n);
}

/*
 * Sends message next_k of len bytes once, from a buffer of its own (a
 * queued send reads it later), which is its context, freed on completion.
 */
static ssize_t try_send(struct sender *s, size_t len)
{
	void *buf = xt_alloc(len);
	ssize_t rc;

	xt_fill(buf, len, seed_of(s->id, s->next_k), 0);
	rc = fi_tsend(s->x.ep, buf, len, NULL, s->peer, tag_of(s->id, s->next_k), buf);
	if (rc == 0) {
		s->next_k++;
		s->posted++;
	} else {
		free(buf);
	}
	return rc;
}

/* Sends until refused: reports how many went, then how many of IDLE_MS of retries. */
static void op_fill(struct sender *s, int sock, size_t len)
{
	uint64_t n = 0, late = 0, end;
	ssize_t rc;

	while ((rc = try_send(s, len)) == 0 && n < 100000)
		n++;
	XT_ASSERT_RC(rc, -FI_EAGAIN);
	end = xt_now_ms() + IDLE_MS;
	while (xt_now_ms() < end) {
		reap(s);
		if (try_send(s, len) == 0)
			late++;
	}
	xt_send_u64(sock, n);
	xt_send_u64(sock, late);
}

/*
 * Chunked sends that no bounce buffer is free for: each is accepted and
 * queued; reports how many were, then how many completed within IDLE_MS.
 */
static void op_burst(struct sender *s, int sock, uint64_t count)
{
	uint64_t ok = 0, before = s->completed, end;

	for (uint64_t i = 0; i < count; i++)
		if (try_send(s, CHUNKED_LEN) == 0)
			ok++;
	end = xt_now_ms() + IDLE_MS;
	while (xt_now_ms() < end)
		reap(s);
	xt_send_u64(sock, ok);
	xt_send_u64(sock, s->completed - before);
}

/* Sends count messages of len, retrying refusals; reports the refusals. */
static void op_rest(struct sender *s, int sock, size_t len, uint64_t count)
{
	uint64_t refused = 0, end = xt_now_ms() + 60000;

	for (uint64_t i = 0; i < count; i++) {
		while (try_send(s, len) == -FI_EAGAIN) {
			refused++;
			reap(s);
			XT_ASSERT(xt_now_ms() < end, "message %llu still refused",
				  (unsigned long long)s->next_k);
		}
	}
	xt_send_u64(sock, refused);
}

/*
 * The flood: tells the receiver 'T' once refused for STALL_MS in a row (or
 * 'A' when all went first), then sends the rest; reports the refusals and
 * the longest run of them.
 */
static void op_flood(struct sender *s, int sock)
{
	uint64_t refused = 0, longest = 0, end = xt_now_ms() + 70000;
	bool told = false;

	for (uint64_t i = 0; i < FLOOD_SMALL + FLOOD_LARGE; i++) {
		size_t len = flood_len(s->next_k);
		uint64_t since = 0;

		while (try_send(s, len) == -FI_EAGAIN) {
			uint64_t now = xt_now_ms();

			if (!since)
				since = now;
			refused++;
			longest = now - since > longest ? now - since : longest;
			if (!told && now - since >= STALL_MS) {
				xt_signal(sock, 'T');
				told = true;
			}
			reap(s);
			XT_ASSERT(now < end, "flood message %llu still refused",
				  (unsigned long long)s->next_k);
		}
	}
	if (!told)
		xt_signal(sock, 'A');
	xt_send_u64(sock, refused);
	xt_send_u64(sock, longest);
}

static void op_finish(struct sender *s, int sock)
{
	uint64_t end = xt_now_ms() + 60000;

	while (s->completed < s->posted) {
		reap(s);
		XT_ASSERT(xt_now_ms() < end, "%llu of %llu sends completed",
			  (unsigned long long)s->completed, (unsigned long long)s->posted);
	}
	xt_send_u64(sock, s->completed);
}

/* Queued sends are pushed only by progress: it goes on between commands. */
static void wait_command(struct sender *s, int sock)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	uint64_t end = xt_now_ms() + 70000;

	while (poll(&pfd, 1, 0) == 0) {
		reap(s);
		XT_ASSERT(xt_now_ms() < end, "no command from the receiver");
	}
}

static void sender_main(int sock, void *arg)
{
	struct sender *s = calloc(1, sizeof(*s));

	XT_ASSERT(s != NULL, "calloc");
	s->id = *(const int *)arg;
	s->cfg = xt_cfg_default();
	xt_open(&s->x, &s->cfg);
	s->peer = xt_exchange(&s->x, sock);
	for (;;) {
		uint64_t op, a, b;

		wait_command(s, sock);
		op = xt_recv_u64(sock);
		a = xt_recv_u64(sock);
		b = xt_recv_u64(sock);

		if (op == OP_FILL)
			op_fill(s, sock, a);
		else if (op == OP_BURST)
			op_burst(s, sock, a);
		else if (op == OP_REST)
			op_rest(s, sock, a, b);
		else if (op == OP_FLOOD)
			op_flood(s, sock);
		else if (op == OP_FINISH)
			op_finish(s, sock);
		else
			break;
	}
	xt_close(&s->x);
}

static void command(struct xt_child *c, enum op op, uint64_t a, uint64_t b)
{
	xt_send_u64(c->sock, op);
	xt_send_u64(c->sock, a);
	xt_send_u64(c->sock, b);
}

/* ---- the receiver ---- */

/* What the receiver expects from each sender, message by message. */
struct expect {
	uint64_t count;
	size_t (*len)(const struct expect *e, uint64_t k);
	size_t lens[4];		/* len by phase for scripted senders */
	uint64_t ends[4];	/* phase i covers k < ends[i] */
};

static size_t phase_len(const struct expect *e, uint64_t k)
{
	for (int i = 0; i < 4; i++)
		if (k < e->ends[i])
			return e->lens[i];
	return 0;
}

static size_t flood_expect_len(const struct expect *e, uint64_t k)
{
	return flood_len(k);
}

struct receiver {
	struct xt_cfg cfg;
	struct xt_ep x;
	int nsenders;
	const struct expect *exp[2];
	uint64_t got[2], bytes, next_post_seq;
	uint64_t *post_seq[2];
	unsigned char *slot_buf[RX_SLOTS];
	uint64_t slot_seq[RX_SLOTS];
	bool slot_busy[RX_SLOTS];
	uint64_t posted, total;
};

static void rx_open(struct receiver *r)
{
	r->cfg = xt_cfg_default();
	xt_open(&r->x, &r->cfg);
}

static void rx_check(struct receiver *r, const struct fi_cq_tagged_entry *e)
{
	int slot = (int)((unsigned char **)e->op_context - r->slot_buf);
	int s = (int)(e->tag >> TAG_SENDER_SHIFT);
	uint64_t k = e->tag & 0xffffffff;

	XT_ASSERT(slot >= 0 && slot < RX_SLOTS && r->slot_busy[slot], "unknown context");
	XT_ASSERT(s < r->nsenders && k < r->exp[s]->count, "tag 0x%llx",
		  (unsigned long long)e->tag);
	XT_ASSERT(e->len == r->exp[s]->len(r->exp[s], k), "sender %d message %llu: %zu bytes",
		  s, (unsigned long long)k, e->len);
	XT_ASSERT(r->post_seq[s][k] == 0, "sender %d message %llu twice", s,
		  (unsigned long long)k);
	XT_ASSERT_PATTERN(r->slot_buf[slot], e->len, seed_of(s, k), 0);
	r->post_seq[s][k] = r->slot_seq[slot];
	r->got[s]++;
	r->bytes += e->len;
	r->slot_busy[slot] = false;
}

/* Progresses once; with posting, keeps any-tag receives posted. */
static void rx_step(struct receiver *r, bool post)
{
	struct fi_cq_tagged_entry e[64];
	ssize_t n;

	for (int i = 0; post && i < RX_SLOTS && r->posted < r->total; i++) {
		ssize_t rc;

		if (r->slot_busy[i])
			continue;
		if (!r->slot_buf[i])
			r->slot_buf[i] = xt_alloc(CHUNKED_LEN);
		rc = fi_trecv(r->x.ep, r->slot_buf[i], CHUNKED_LEN, NULL, FI_ADDR_UNSPEC, 0,
			      ~0ULL, &r->slot_buf[i]);
		if (rc == -FI_EAGAIN)
			break;
		XT_ASSERT_RC(rc, 0);
		r->slot_busy[i] = true;
		r->slot_seq[i] = ++r->next_post_seq;
		r->posted++;
	}
	while ((n = fi_cq_read(r->x.rx->fid, e, 64)) > 0) {
		XT_ASSERT(post, "a receive completed with none posted");
		for (ssize_t i = 0; i < n; i++)
			rx_check(r, &e[i]);
	}
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };

		fi_cq_readerr(r->x.rx->fid, &err, 0);
		XT_ASSERT(false, "receive error %d (%s)", err.err, fi_strerror(err.err));
	}
	XT_ASSERT(n == -FI_EAGAIN, "fi_cq_read: %zd", n);
}

static void rx_expect(struct receiver *r, int nsenders, const struct expect *const *exp)
{
	r->nsenders = nsenders;
	for (int s = 0; s < nsenders; s++) {
		r->exp[s] = exp[s];
		r->post_seq[s] = calloc(exp[s]->count, sizeof(uint64_t));
		XT_ASSERT(r->post_seq[s] != NULL, "calloc");
		r->total += exp[s]->count;
	}
}

/* Receives everything expected; asserts order per sender. */
static void rx_all(struct receiver *r)
{
	uint64_t end = xt_now_ms() + 60000;

	while (r->got[0] + r->got[1] < r->total) {
		rx_step(r, true);
		XT_ASSERT(xt_now_ms() < end, "%llu of %llu received",
			  (unsigned long long)(r->got[0] + r->got[1]),
			  (unsigned long long)r->total);
	}
	for (int s = 0; s < r->nsenders; s++)
		for (uint64_t k = 1; k < r->exp[s]->count; k++)
			XT_ASSERT(r->post_seq[s][k] > r->post_seq[s][k - 1],
				  "sender %d: message %llu matched before message %llu", s,
				  (unsigned long long)k, (unsigned long long)k - 1);
}

static void rx_close(struct receiver *r)
{
	xt_close(&r->x);
	for (int i = 0; i < RX_SLOTS; i++)
		free(r->slot_buf[i]);
	for (int s = 0; s < r->nsenders; s++)
		free(r->post_seq[s]);
}

/* Runs a sender command while this receiver progresses, and reads a u64. */
static uint64_t recv_u64_stepping(struct receiver *r, int sock, bool post)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	uint64_t end = xt_now_ms() + 60000;

	while (poll(&pfd, 1, 0) == 0) {
		rx_step(r, post);
		XT_ASSERT(xt_now_ms() < end, "no word from the sender");
	}
	return xt_recv_u64(sock);
}

static void spawn_senders(struct receiver *r, struct xt_child *c, int *ids, int n)
{
	for (int i = 0; i < n; i++) {
		ids[i] = i;
		xt_spawn(&c[i], sender_main, &ids[i]);
	}
	rx_open(r);
	for (int i = 0; i < n; i++) {
		XT_ASSERT(xt_exchange(&r->x, c[i].sock) == (fi_addr_t)i,
			  "sender %d is not fi_addr %d", i, i);
	}
}

static void quit_senders(struct xt_child *c, int n)
{
	for (int i = 0; i < n; i++) {
		command(&c[i], OP_QUIT, 0, 0);
		xt_join(&c[i]);
	}
}

/* ---- tests ---- */

START_TEST(full_ring_refuses_then_delivers_everything_in_order)
{
	const uint64_t total = 2000;
	struct receiver r = { 0 };
	struct xt_child c[2];
	int ids[2];
	struct expect e = { .count = total, .len = phase_len, .lens = { INLINE_LEN },
			    .ends = { total } };
	const struct expect *exp[] = { &e, &e };
	uint64_t n, late, refused[2];

	spawn_senders(&r, c, ids, 2);
	rx_expect(&r, 2, exp);
	/* Nobody progresses the receiver: A fills its ring, then B finds it full. */
	command(&c[0], OP_FILL, INLINE_LEN, 0);
	n = xt_recv_u64(c[0].sock);
	late = xt_recv_u64(c[0].sock);
	XT_ASSERT(n == RING_CELLS && late == 0, "A sent %llu before -FI_EAGAIN (ring of %d), "
		  "%llu more in %d ms", (unsigned long long)n, RING_CELLS,
		  (unsigned long long)late, IDLE_MS);
	command(&c[1], OP_FILL, INLINE_LEN, 0);
	XT_ASSERT(xt_recv_u64(c[1].sock) == 0 && xt_recv_u64(c[1].sock) == 0,
		  "B got a cell of a full ring");
	for (int i = 0; i < 2; i++)
		command(&c[i], OP_REST, INLINE_LEN, total - (i ? 0 : RING_CELLS));
	rx_all(&r);
	for (int i = 0; i < 2; i++) {
		refused[i] = recv_u64_stepping(&r, c[i].sock, true);
		command(&c[i], OP_FINISH, 0, 0);
		XT_ASSERT(recv_u64_stepping(&r, c[i].sock, true) == total,
			  "sender %d: not every send completed", i);
	}
	printf("stress full ring: %d cells taken, then -FI_EAGAIN for %d ms; %llu messages, "
	       "%llu bytes, all checked, in order (refusals while draining: %llu, %llu)\n",
	       RING_CELLS, IDLE_MS, (unsigned long long)r.total, (unsigned long long)r.bytes,
	       (unsigned long long)refused[0], (unsigned long long)refused[1]);
	fflush(stdout);
	quit_senders(c, 2);
	rx_close(&r);
}
END_TEST

START_TEST(empty_pool_refuses_or_queues_then_delivers_everything_in_order)
{
	const uint64_t burst = 10, rest = 300;
	struct receiver r = { 0 };
	struct xt_child c[1];
	int ids[1];
	struct expect e = {
		.count = POOL_BUFS + burst + rest, .len = phase_len,
		.lens = { MEDIUM_LEN, CHUNKED_LEN, MEDIUM_LEN },
		.ends = { POOL_BUFS, POOL_BUFS + burst, POOL_BUFS + burst + rest },
	};
	const struct expect *exp[] = { &e };
	uint64_t n, late, done_early, refused;

	spawn_senders(&r, c, ids, 1);
	rx_expect(&r, 1, exp);
	command(&c[0], OP_FILL, MEDIUM_LEN, 0);
	n = xt_recv_u64(c[0].sock);
	late = xt_recv_u64(c[0].sock);
	XT_ASSERT(n == POOL_BUFS && late == 0, "%llu medium sends before -FI_EAGAIN (pool of "
		  "%d), %llu more in %d ms", (unsigned long long)n, POOL_BUFS,
		  (unsigned long long)late, IDLE_MS);
	/* Chunked sends with no buffer free are queued, and wait. */
	command(&c[0], OP_BURST, burst, 0);
	n = xt_recv_u64(c[0].sock);
	done_early = xt_recv_u64(c[0].sock);
	XT_ASSERT(n == burst && done_early == 0, "%llu of %llu chunked sends accepted, %llu "
		  "completed with the pool empty", (unsigned long long)n,
		  (unsigned long long)burst, (unsigned long long)done_early);
	command(&c[0], OP_REST, MEDIUM_LEN, rest);
	rx_all(&r);
	refused = recv_u64_stepping(&r, c[0].sock, true);
	command(&c[0], OP_FINISH, 0, 0);
	XT_ASSERT(recv_u64_stepping(&r, c[0].sock, true) == e.count, "not every send completed");
	printf("stress empty pool: %d buffers taken, then -FI_EAGAIN for %d ms, %llu chunked "
	       "sends (%d buffers each) queued; %llu messages, %llu bytes, all checked, in "
	       "order (refusals while draining: %llu)\n", POOL_BUFS, IDLE_MS,
	       (unsigned long long)burst, CHUNKED_LEN / 16384, (unsigned long long)e.count,
	       (unsigned long long)r.bytes, (unsigned long long)refused);
	fflush(stdout);
	quit_senders(c, 1);
	rx_close(&r);
}
END_TEST

/*
 * _i == 0: the default limit; _i == 1: FI_XSHM_UNEXP_BYTES_MAX = 4 MiB.
 * The receiver progresses without any receive posted until the sender is
 * held back (or sent everything); its resident memory must stay within the
 * limit plus slack for the allocator and the library.
 */
START_TEST(unexpected_flood_is_bounded_and_nothing_is_lost)
{
	size_t cap = _i ? SMALL_CAP : DEFAULT_CAP;
	size_t slack = cap / 4 + ((size_t)12 << 20);
	struct receiver r = { 0 };
	struct xt_child c[1];
	int ids[1];
	struct expect e = { .count = FLOOD_SMALL + FLOOD_LARGE, .len = flood_expect_len };
	const struct expect *exp[] = { &e };
	size_t base, peak;
	uint64_t refused, longest, start = xt_now_ms();
	struct pollfd pfd;
	uint8_t word = 0;
	unsigned polls = 0;

	if (_i)
		st_set_env("FI_XSHM_UNEXP_BYTES_MAX", "4194304");
	spawn_senders(&r, c, ids, 1);
	rx_expect(&r, 1, exp);
	base = peak = st_rss();
	command(&c[0], OP_FLOOD, 0, 0);
	pfd = (struct pollfd){ .fd = c[0].sock, .events = POLLIN };
	while (poll(&pfd, 1, 0) == 0) {
		size_t now;

		rx_step(&r, false);
		if (++polls % 8)
			continue;
		now = st_rss();
		peak = now > peak ? now : peak;
		XT_ASSERT(xt_now_ms() - start < 60000, "the flood neither ended nor stalled");
	}
	word = st_wait_byte(c[0].sock, 1000);
	XT_ASSERT(word == 'T' || word == 'A', "word %d", word);
	XT_ASSERT(!RSS_IS_OURS || peak - base <= cap + slack, "receiver grew by %zu KiB holding unexpected "
		  "messages (limit %zu KiB + %zu KiB slack)", (peak - base) >> 10, cap >> 10,
		  slack >> 10);
	/* The flood carries more than either limit: the sender must have been held. */
	XT_ASSERT(word == 'T', "the whole flood was taken without flow control");
	rx_all(&r);
	refused = recv_u64_stepping(&r, c[0].sock, true);
	longest = recv_u64_stepping(&r, c[0].sock, true);
	command(&c[0], OP_FINISH, 0, 0);
	XT_ASSERT(recv_u64_stepping(&r, c[0].sock, true) == e.count, "not every send completed");
	printf("stress unexpected flood (limit %zu KiB): %d small + %d x %d B before any "
	       "receive; receiver grew by at most %zu KiB; sender refused %llu times (longest "
	       "%llu ms); %llu messages, %llu bytes, all checked, in order; %llu ms\n",
	       cap >> 10, FLOOD_SMALL, FLOOD_LARGE, LARGE_LEN, (peak - base) >> 10,
	       (unsigned long long)refused, (unsigned long long)longest,
	       (unsigned long long)e.count, (unsigned long long)r.bytes,
	       (unsigned long long)(xt_now_ms() - start));
	fflush(stdout);
	quit_senders(c, 1);
	rx_close(&r);
}
END_TEST

/* A tagged FI_PEEK for tag: true if a held message answers it. */
static bool peek(struct receiver *r, uint64_t tag, size_t *len)
{
	struct fi_context ctx;
	struct fi_msg_tagged msg = { .addr = FI_ADDR_UNSPEC, .tag = tag, .context = &ctx };
	struct xt_comp c;

	XT_POST(&r->x, fi_trecvmsg(r->x.ep, &msg, FI_PEEK | FI_COMPLETION));
	XT_ASSERT_OK(xt_poll(r->x.rx, r->x.tx, XT_TIMEOUT_MS, &c));
	if (c.is_err) {
		XT_ASSERT(c.err.err == FI_ENOMSG, "peek: error %d", c.err.err);
		return false;
	}
	*len = c.e.len;
	return true;
}

static void receive_one(struct receiver *r, uint64_t tag, size_t len, uint64_t seed)
{
	unsigned char *buf = xt_alloc(len);
	struct xt_comp c;

	xt_post_recv(&r->x, true, buf, len, FI_ADDR_UNSPEC, tag, 0, buf);
	xt_expect_comp(r->x.rx, r->x.tx, &c);
	XT_ASSERT(c.e.op_context == buf && c.e.tag == tag && c.e.len == len,
		  "tag 0x%llx, %zu bytes", (unsigned long long)c.e.tag, c.e.len);
	XT_ASSERT_PATTERN(buf, len, seed, 0);
	free(buf);
}

/*
 * With a 1 MiB limit, a 3 MiB unexpected message is still taken (nothing
 * else is held), but the small one behind it stays in the ring: a peek does
 * not see it.  Receiving the large one lets the small one in.
 */
START_TEST(limit_holds_back_the_next_message_until_a_receive_is_posted)
{
	const size_t big = (size_t)3 << 20;
	struct receiver r = { 0 };
	struct xt_child c[1];
	int ids[1];
	size_t len = 0;

	st_set_env("FI_XSHM_UNEXP_BYTES_MAX", "1048576");
	st_set_env("FI_XSHM_SCOPY_THRESHOLD", "16777216");	/* 3 MiB in bounce buffers */
	spawn_senders(&r, c, ids, 1);
	command(&c[0], OP_REST, big, 1);
	XT_ASSERT(recv_u64_stepping(&r, c[0].sock, false) == 0, "refused");
	command(&c[0], OP_REST, INLINE_LEN, 1);
	XT_ASSERT(recv_u64_stepping(&r, c[0].sock, false) == 0, "refused");
	/* Both sends complete: the data sits in the receiver's memory or ring. */
	command(&c[0], OP_FINISH, 0, 0);
	XT_ASSERT(recv_u64_stepping(&r, c[0].sock, false) == 2, "sends not completed");
	XT_ASSERT(peek(&r, tag_of(0, 0), &len) && len == big, "the large message is not held");
	XT_ASSERT(!peek(&r, tag_of(0, 1), &len), "the small message was taken beyond the limit");
	receive_one(&r, tag_of(0, 0), big, seed_of(0, 0));
	XT_ASSERT(peek(&r, tag_of(0, 1), &len) && len == INLINE_LEN,
		  "the small message is not taken once the limit allows");
	receive_one(&r, tag_of(0, 1), INLINE_LEN, seed_of(0, 1));
	quit_senders(c, 1);
	rx_close(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("exhaust");
	TCase *tc = tcase_create("exhaust");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, full_ring_refuses_then_delivers_everything_in_order);
	tcase_add_test(tc, empty_pool_refuses_or_queues_then_delivers_everything_in_order);
	tcase_add_loop_test(tc, unexpected_flood_is_bounded_and_nothing_is_lost, 0, 2);
	tcase_add_test(tc, limit_holds_back_the_next_message_until_a_receive_is_posted);
	suite_add_tcase(s, tc);
	return xt_run_suite(s);
}
