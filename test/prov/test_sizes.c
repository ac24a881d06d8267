/*
 * Every message size around the protocol thresholds, expected (receive
 * posted first) and unexpected (sent first), tagged and untagged, checked
 * byte by byte; and the largest message.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "shm/layout.h"

#define TAG	0x51e5ULL
#define GUARD	64
#define GiB	((size_t)1 << 30)
#define N(a)	((int)(sizeof(a) / sizeof((a)[0])))

static const size_t sizes[] = {
	0, 1,
	/* the end of a short message's first cache line, and of its cell */
	XSHM_CACHE_LINE - XSHM_SHORT_HDR_SIZE, XSHM_CACHE_LINE - XSHM_SHORT_HDR_SIZE + 1,
	XSHM_SHORT_MAX, XSHM_SHORT_MAX + 1,
	XSHM_INLINE_MAX - 1, XSHM_INLINE_MAX, XSHM_INLINE_MAX + 1,
	XSHM_INLINE_MAX + XSHM_CELL_PAYLOAD, XSHM_INLINE_MAX + XSHM_CELL_PAYLOAD + 1,
	/* past 4096, a run of cells only while the sender's fills are cached */
	4096, 4097,
	XSHM_CELLS_MSG_MAX - 1, XSHM_CELLS_MSG_MAX, XSHM_CELLS_MSG_MAX + 1,
	XSHM_BUF_SIZE - 1, XSHM_BUF_SIZE, XSHM_BUF_SIZE + 1,
	/* the most that one buffer and its command's cell carry */
	XSHM_BUF_SIZE + XSHM_BUF_TAIL_MAX, XSHM_BUF_SIZE + XSHM_BUF_TAIL_MAX + 1,
	XSHM_BUF_SIZE + XSHM_INLINE_MAX, XSHM_BUF_SIZE + XSHM_INLINE_MAX + 1,
	2 * XSHM_BUF_SIZE - 1, 2 * XSHM_BUF_SIZE, 2 * XSHM_BUF_SIZE + 1,
	(4 << 20) + 1,
};

static void check_received(const struct xt_comp *c, const unsigned char *buf, size_t size,
			   bool tagged)
{
	uint64_t kind = tagged ? FI_TAGGED : FI_MSG;
	ssize_t bad;

	XT_ASSERT((c->e.flags & (FI_RECV | kind)) == (FI_RECV | kind), "size %zu: flags 0x%llx",
		  size, (unsigned long long)c->e.flags);
	XT_ASSERT(c->e.len == size, "size %zu: completion len %zu", size, c->e.len);
	bad = xt_mismatch(buf, size, size, 0);
	XT_ASSERT(bad < 0, "size %zu: data differs at byte %zd", size, bad);
	for (size_t i = size; i < size + GUARD; i++)
		XT_ASSERT(buf[i] == 0x5a, "size %zu: byte %zu past the buffer was written", size, i);
}

/*
 * The child's message sc (seeded with its length), received by us into a
 * buffer of exactly its length, intact; its send completes without error.
 */
static void transfer_cmd(const struct xt_send_cmd *sc, bool unexpected)
{
	size_t size = sc->len;
	unsigned char *buf = xt_alloc(size + GUARD);
	struct xt_send_result res;
	struct xt_comp c;
	struct xt_rig r;

	memset(buf, 0x5a, size + GUARD);
	xt_rig_start(&r, 1, 0);
	if (unexpected) {
		xt_remote_send(&r.x, &r.a, sc);
		xt_settle(&r);
	}
	xt_post_recv(&r.x, sc->tagged, buf, size, FI_ADDR_UNSPEC, TAG, 0, buf);
	if (!unexpected)
		xt_remote_send(&r.x, &r.a, sc);
	xt_wait_rx(&r.x, &c);
	XT_ASSERT(c.e.op_context == buf, "size %zu: context %p", size, c.e.op_context);
	check_received(&c, buf, size, sc->tagged);
	if (sc->data)
		XT_ASSERT((c.e.flags & FI_REMOTE_CQ_DATA) && c.e.data == sc->data,
			  "size %zu: flags 0x%llx, data 0x%llx", size,
			  (unsigned long long)c.e.flags, (unsigned long long)c.e.data);
	else
		XT_ASSERT(!(c.e.flags & FI_REMOTE_CQ_DATA), "size %zu: flags 0x%llx", size,
			  (unsigned long long)c.e.flags);
	res = xt_remote_done(&r.x, &r.a);
	XT_ASSERT(res.completed && !res.is_err, "size %zu: send completed %d, err %d", size,
		  res.completed, res.err);
	xt_rig_stop(&r);
	free(buf);
}

/* One message of `size` bytes from one buffer. */
static void transfer(size_t size, bool tagged, bool unexpected)
{
	struct xt_send_cmd sc = { .op = XT_SEND, .tagged = tagged, .len = size, .seed = size,
				  .tag = TAG };

	transfer_cmd(&sc, unexpected);
}

START_TEST(sizes_expected_tagged_message_arrives_intact)
{
	transfer(sizes[_i], true, false);
}
END_TEST

START_TEST(sizes_expected_untagged_message_arrives_intact)
{
	transfer(sizes[_i], false, false);
}
END_TEST

START_TEST(sizes_unexpected_tagged_message_arrives_intact)
{
	transfer(sizes[_i], true, true);
}
END_TEST

START_TEST(sizes_unexpected_untagged_message_arrives_intact)
{
	transfer(sizes[_i], false, true);
}
END_TEST

/*
 * Remote CQ data needs the full header: a message that would fill a short
 * cell spans two cells with it.
 */
static void transfer_with_data(size_t size, bool unexpected)
{
	struct xt_send_cmd sc = { .op = XT_SENDDATA, .tagged = true, .len = size,
				  .seed = size, .tag = TAG, .data = 0xda7a0000 + size };

	transfer_cmd(&sc, unexpected);
}

START_TEST(sizes_expected_message_with_remote_cq_data_arrives_intact)
{
	transfer_with_data(sizes[_i], false);
}
END_TEST

START_TEST(sizes_unexpected_message_with_remote_cq_data_arrives_intact)
{
	transfer_with_data(sizes[_i], true);
}
END_TEST

/* Every message up to XSHM_CELLS_MSG_MAX spans cells, the longest runs too. */
static void use_longest_runs(void)
{
	char max[32];

	snprintf(max, sizeof(max), "%zu", (size_t)XSHM_CELLS_MSG_MAX);
	XT_ASSERT(setenv("FI_XSHM_CELLS_THRESHOLD", max, 1) == 0, "setenv");
	XT_ASSERT(setenv("FI_XSHM_BOUNCE_STORES", "cached", 1) == 0, "setenv");
}

/* One tagged message, sent from iovs of these lengths. */
static void transfer_iovs(const size_t *lens, size_t niov)
{
	struct xt_send_cmd sc = { .op = XT_SEND, .tagged = true, .tag = TAG, .niov = niov };

	for (size_t i = 0; i < niov; i++) {
		sc.iov_len[i] = lens[i];
		sc.len += lens[i];
	}
	sc.seed = sc.len;
	transfer_cmd(&sc, false);
}

/* Messages that span ring cells, sent from iovs that cut across the cells. */
static const struct { size_t niov, len[3]; } cell_iovs[] = {
	{ 2, { 100, 101 } },
	{ 3, { 1, XSHM_INLINE_MAX, 1 } },
	{ 3, { 1, 998, 1 } },
	{ 3, { XSHM_CELL_PAYLOAD, XSHM_CELL_PAYLOAD, XSHM_CELLS_MSG_MAX - 2 * XSHM_CELL_PAYLOAD } },
	{ 3, { XSHM_INLINE_MAX + 1, XSHM_CELL_PAYLOAD, XSHM_CELLS_MSG_MAX - XSHM_INLINE_MAX -
	       XSHM_CELL_PAYLOAD - 1 } },
};

START_TEST(sizes_cells_from_iovs_arrive_intact)
{
	transfer_iovs(cell_iovs[_i].len, cell_iovs[_i].niov);
}
END_TEST

/*
 * Messages of the largest size that spans cells, sent to ourselves without
 * progress until the ring is full: -FI_EAGAIN, then all arrive, in order.
 */
START_TEST(sizes_cells_fill_the_ring_then_all_arrive)
{
	struct xt_cfg cfg = xt_cfg_default();
	size_t len = XSHM_CELLS_MSG_MAX, sent = 0;
	unsigned char *out = xt_alloc(len), *in = xt_alloc(len);
	struct xt_comp c;
	struct xt_ep x;
	fi_addr_t self;
	ssize_t rc;

	xt_open(&x, &cfg);
	self = xt_av_insert(&x, x.name);
	for (;;) {
		xt_fill(out, len, sent, 0);
		rc = fi_tsend(x.ep, out, len, NULL, self, TAG, NULL);
		if (rc == -FI_EAGAIN)
			break;
		XT_ASSERT_OK(rc);
		XT_ASSERT(++sent <= XSHM_RING_CELLS, "more sends than ring cells");
	}
	/* The ring, not the 128 bounce buffers, is what filled up. */
	XT_ASSERT(sent >= XSHM_RING_CELLS / XSHM_CELLS_MAX - 1 &&
		  sent <= XSHM_RING_CELLS / XSHM_CELLS_MAX, "%zu sends fitted", sent);
	for (size_t i = 0; i < sent; i++) {
		xt_post_recv(&x, true, in, len, FI_ADDR_UNSPEC, TAG, 0, NULL);
		xt_wait_rx(&x, &c);
		XT_ASSERT(c.e.len == len, "message %zu: len %zu", i, c.e.len);
		XT_ASSERT(xt_mismatch(in, len, i, 0) < 0, "message %zu out of order or damaged", i);
	}
	for (size_t i = 0; i < sent; i++)
		xt_wait_tx(&x, &c);
	xt_close(&x);
	free(out);
	free(in);
}
END_TEST

/*
 * Messages through bounce buffers, filled with the stores that
 * FI_XSHM_BOUNCE_STORES forces: whole buffers, pieces and a last piece in
 * a cell, and iovs whose pieces start off cache-line boundaries.  From
 * 4097 bytes to XSHM_CELLS_MSG_MAX, the stores also decide between a
 * buffer (streaming) and a run of cells (cached).
 */
static const size_t bounce_sizes[] = {
	4097, XSHM_CELLS_MSG_MAX, XSHM_CELLS_MSG_MAX + 1, XSHM_BUF_SIZE - 1, XSHM_BUF_SIZE, XSHM_BUF_SIZE + 1,
	2 * XSHM_BUF_SIZE + XSHM_INLINE_MAX + 1, 3 * XSHM_BUF_SIZE + 100,
};

static const struct { size_t niov, len[3]; } bounce_iovs[] = {
	{ 2, { 4097, 4099 } },
	{ 3, { 1, XSHM_BUF_SIZE, 63 } },
	{ 3, { 65, XSHM_BUF_SIZE - 130, XSHM_BUF_SIZE + 7 } },
};

static void use_streaming_stores(void)
{
	XT_ASSERT(setenv("FI_XSHM_BOUNCE_STORES", "streaming", 1) == 0, "setenv");
}

static void use_cached_stores(void)
{
	XT_ASSERT(setenv("FI_XSHM_BOUNCE_STORES", "cached", 1) == 0, "setenv");
}

START_TEST(stores_bounce_message_arrives_intact)
{
	transfer(bounce_sizes[_i], true, false);
}
END_TEST

START_TEST(stores_unexpected_bounce_message_arrives_intact)
{
	transfer(bounce_sizes[_i], true, true);
}
END_TEST

START_TEST(stores_bounce_message_from_iovs_arrives_intact)
{
	transfer_iovs(bounce_iovs[_i].len, bounce_iovs[_i].niov);
}
END_TEST

static void add_stores_case(Suite *s, const char *name, void (*setup)(void))
{
	TCase *tc = tcase_create(name);

	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, setup, NULL);
	if (xt_wanted(XT_XSHM))
		tcase_add_loop_test(tc, stores_bounce_message_arrives_intact, 0, N(bounce_sizes));
	if (xt_wanted(XT_XSHM))
		tcase_add_loop_test(tc, stores_unexpected_bounce_message_arrives_intact, 0,
				    N(bounce_sizes));
	if (xt_wanted(XT_XSHM))
		tcase_add_loop_test(tc, stores_bounce_message_from_iovs_arrives_intact, 0,
				    N(bounce_iovs));
	suite_add_tcase(s, tc);
}

static size_t max_msg_size(const struct xt_ep *x)
{
	size_t max = x->info->ep_attr->max_msg_size;

	XT_ASSERT(max <= GiB, "max_msg_size %zu: too large to send in a test (xshm: 1 GiB)", max);
	return max;
}

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	XT_ASSERT(p != MAP_FAILED, "mmap of %zu bytes", len);
	return p;
}

/* Both ends of the message and a spread of positions in between. */
static void check_sample(const unsigned char *buf, size_t len, uint64_t seed)
{
	const size_t edge = 1 << 16;

	XT_ASSERT_PATTERN(buf, edge, seed, 0);
	XT_ASSERT_PATTERN(buf + len - edge, edge, seed, len - edge);
	for (size_t pos = edge; pos < len - edge; pos += 4093)
		XT_ASSERT(buf[pos] == xt_pattern_byte(seed, pos), "byte %zu differs", pos);
}

START_TEST(sizes_message_of_max_msg_size_arrives_intact)
{
	struct xt_send_cmd sc = { .op = XT_SEND, .tagged = true, .seed = 77, .tag = TAG };
	struct xt_send_result res;
	unsigned char *buf;
	struct xt_comp c;
	struct xt_rig r;

	xt_rig_start(&r, 1, 0);
	sc.len = max_msg_size(&r.x);
	buf = map(sc.len);
	XT_POST(&r.x, fi_trecv(r.x.ep, buf, sc.len, NULL, FI_ADDR_UNSPEC, TAG, 0, buf));
	xt_remote_send(&r.x, &r.a, &sc);
	/* A gigabyte is filled, copied twice and checked: allow it time. */
	XT_ASSERT_OK(xt_poll(r.x.rx, r.x.tx, 2 * XT_TIMEOUT_MS, &c));
	XT_ASSERT(!c.is_err, "error completion %d", c.err.err);
	XT_ASSERT(c.e.len == sc.len, "len %zu, sent %zu", c.e.len, sc.len);
	check_sample(buf, sc.len, 77);
	res = xt_remote_done(&r.x, &r.a);
	XT_ASSERT(res.completed && !res.is_err, "send completed %d, err %d", res.completed,
		  res.err);
	xt_rig_stop(&r);
	munmap(buf, sc.len);
}
END_TEST

START_TEST(sizes_send_above_max_msg_size_gives_emsgsize)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct iovec iov[2];
	unsigned char *buf;
	struct xt_ep x;
	fi_addr_t self;
	size_t max;

	xt_open(&x, &cfg);
	max = max_msg_size(&x);
	self = xt_av_insert(&x, x.name);
	buf = map(max + 1);
	iov[0] = (struct iovec){ buf, max };
	iov[1] = (struct iovec){ buf + max, 1 };
	XT_ASSERT_RC(fi_send(x.ep, buf, max + 1, NULL, self, NULL), -FI_EMSGSIZE);
	XT_ASSERT_RC(fi_tsend(x.ep, buf, max + 1, NULL, self, TAG, NULL), -FI_EMSGSIZE);
	XT_ASSERT_RC(fi_sendv(x.ep, iov, NULL, 2, self, NULL), -FI_EMSGSIZE);
	XT_ASSERT_RC(fi_tsendv(x.ep, iov, NULL, 2, self, TAG, NULL), -FI_EMSGSIZE);
	munmap(buf, max + 1);
	xt_close(&x);
}
END_TEST

static Suite *sizes_suite(void)
{
	Suite *s = suite_create("sizes");
	TCase *exp = tcase_create("expected");
	TCase *unexp = tcase_create("unexpected");
	TCase *max = tcase_create("max");
	TCase *cells = tcase_create("cells");

	tcase_set_timeout(exp, 30);
	tcase_add_loop_test(exp, sizes_expected_tagged_message_arrives_intact, 0, N(sizes));
	tcase_add_loop_test(exp, sizes_expected_untagged_message_arrives_intact, 0, N(sizes));
	tcase_add_loop_test(exp, sizes_expected_message_with_remote_cq_data_arrives_intact, 0,
			    N(sizes));
	suite_add_tcase(s, exp);

	tcase_set_timeout(unexp, 30);
	tcase_add_loop_test(unexp, sizes_unexpected_tagged_message_arrives_intact, 0, N(sizes));
	tcase_add_loop_test(unexp, sizes_unexpected_untagged_message_arrives_intact, 0, N(sizes));
	tcase_add_loop_test(unexp, sizes_unexpected_message_with_remote_cq_data_arrives_intact,
			    0, N(sizes));
	suite_add_tcase(s, unexp);

	tcase_set_timeout(cells, 30);
	tcase_add_checked_fixture(cells, use_longest_runs, NULL);
	if (xt_wanted(XT_XSHM))
		tcase_add_loop_test(cells, sizes_cells_from_iovs_arrive_intact, 0, N(cell_iovs));
	if (xt_wanted(XT_XSHM))
		tcase_add_test(cells, sizes_cells_fill_the_ring_then_all_arrive);
	suite_add_tcase(s, cells);

	add_stores_case(s, "streaming_stores", use_streaming_stores);
	add_stores_case(s, "cached_stores", use_cached_stores);

	tcase_set_timeout(max, 90);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(max, sizes_message_of_max_msg_size_arrives_intact);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(max, sizes_send_above_max_msg_size_gives_emsgsize);
	suite_add_tcase(s, max);
	return s;
}

int main(void)
{
	return xt_run_suite(sizes_suite());
}
