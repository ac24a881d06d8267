/*
 * The receiver's bounce buffers, watched through its region: how many a
 * message holds until it is received, and the spare a sender borrows
 * ahead (prov/xshm/data/spare.c).  After a send that took a bounce buffer (a
 * medium message, or a larger one's first piece) the sender borrows one
 * buffer of the receiver's pool on its next idle poll, and gives it back
 * when its endpoint closes or the receiver leaves its AV.  Every buffer is
 * free again at the end, none leaks.
 */
#include "harness.h"

#include <stdlib.h>

#include "shm/pool.h"
#include "shm/region.h"

#define TAG	0x5a4eULL
/* the smallest that always takes a bounce buffer */
#define MEDIUM	(XSHM_CELLS_MSG_MAX + 1)

static struct xt_cfg cfg;

struct pair {
	struct xt_ep rx, tx;
	fi_addr_t to_rx;
	struct xshm_region rx_region;	/* the receiver's, mapped to watch */
};

static void pair_open(struct pair *p)
{
	cfg = xt_cfg_default();
	xt_open(&p->rx, &cfg);
	xt_open(&p->tx, &cfg);
	p->to_rx = xt_av_insert(&p->tx, p->rx.name);
	XT_ASSERT_RC(xshm_region_open(&p->rx_region, xt_ep_id(&p->rx)), 0);
}

static uint32_t free_buffers(const struct pair *p)
{
	return xshm_pool_free_count(&p->rx_region.pool);
}

/* Both sides poll until nothing more happens: refills and frees are done. */
static void settle(struct pair *p)
{
	xt_expect_none(p->rx.rx, p->rx.tx, 50);
	xt_expect_none(p->tx.tx, p->tx.rx, 50);
	xt_expect_none(p->rx.rx, p->rx.tx, 50);
}

/* One message of len bytes, received intact. */
static void one_message(struct pair *p, size_t len, uint64_t seed)
{
	char *out = xt_alloc(len), *in = xt_alloc(len);
	struct xt_comp c;

	xt_fill(out, len, seed, 0);
	XT_POST(&p->rx, fi_trecv(p->rx.ep, in, len, NULL, FI_ADDR_UNSPEC, TAG, 0, NULL));
	XT_POST(&p->tx, fi_tsend(p->tx.ep, out, len, NULL, p->to_rx, TAG, NULL));
	xt_wait_tx(&p->tx, &c);
	xt_wait_rx(&p->rx, &c);
	XT_ASSERT(c.e.len == len, "received %zu bytes of %zu", c.e.len, len);
	XT_ASSERT_PATTERN(in, len, seed, 0);
	free(out);
	free(in);
}

/* A message of len bytes, after which the sender holds exactly one spare. */
static void send_keeping_one_spare(struct pair *p, size_t len, uint64_t seed)
{
	uint32_t nbufs = p->rx_region.pool.nbufs;

	one_message(p, len, seed);
	settle(p);
	XT_ASSERT(free_buffers(p) == nbufs - 1, "after a %zu-byte send: %u of %u free, "
		  "expected all but the spare", len, free_buffers(p), nbufs);
}

static void pair_close(struct pair *p)
{
	xshm_region_close(&p->rx_region);
	xt_close(&p->tx);
	xt_close(&p->rx);
}

/*
 * How many buffers a message holds while it waits in the receiver's ring:
 * one per full piece; a last piece that fits a cell travels in it.  Past
 * 4096 bytes, a run of cells needs the sender's fills to that receiver to
 * be cached (FI_XSHM_BOUNCE_STORES, or by default the sender's choice,
 * cached until its timed fills show otherwise).
 */
static const struct {
	const char *stores;
	size_t len;
	uint32_t bufs;
	uint64_t flags;		/* FI_DELIVERY_COMPLETE: a tx_op (send_queue.c) */
} holds[] = {
	{ NULL, 4097, 0 },
	{ NULL, XSHM_CELLS_MSG_MAX, 0 },
	{ NULL, XSHM_CELLS_MSG_MAX + 1, 1 },
	{ NULL, XSHM_BUF_SIZE, 1 },
	{ NULL, XSHM_BUF_SIZE + 1, 1 },
	{ NULL, XSHM_BUF_SIZE + XSHM_INLINE_MAX, 1 },
	{ NULL, XSHM_BUF_SIZE + XSHM_INLINE_MAX + 1, 2 },
	{ NULL, 2 * XSHM_BUF_SIZE + 1, 2 },
	{ "cached", XSHM_CELLS_MSG_MAX, 0 },
	{ "cached", XSHM_CELLS_MSG_MAX + 1, 1 },
	{ "streaming", 4096, 0 },
	{ "streaming", 4097, 1 },
	{ "streaming", XSHM_CELLS_MSG_MAX, 1 },
	{ NULL, XSHM_CELLS_MSG_MAX, 0, FI_DELIVERY_COMPLETE },
	{ "streaming", 4096, 0, FI_DELIVERY_COMPLETE },
	{ "streaming", 4097, 1, FI_DELIVERY_COMPLETE },
};

/* A tagged send of len bytes from out, with flags as fi_tsendmsg takes them. */
static ssize_t send_with(struct pair *p, const void *out, size_t len, uint64_t flags)
{
	struct iovec iov = { .iov_base = (void *)out, .iov_len = len };
	struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1, .addr = p->to_rx,
				     .tag = TAG };

	if (!flags)
		return fi_tsend(p->tx.ep, out, len, NULL, p->to_rx, TAG, NULL);
	return fi_tsendmsg(p->tx.ep, &msg, flags | FI_COMPLETION);
}

START_TEST(a_message_holds_one_buffer_per_full_piece)
{
	size_t len = holds[_i].len;
	char *out = xt_alloc(len), *in = xt_alloc(len);
	struct xt_comp c;
	struct pair p;
	uint32_t held;

	if (holds[_i].stores)
		XT_ASSERT(setenv("FI_XSHM_BOUNCE_STORES", holds[_i].stores, 1) == 0, "setenv");
	pair_open(&p);
	xt_fill(out, len, 70, 0);
	XT_POST(&p.tx, send_with(&p, out, len, holds[_i].flags));
	held = p.rx_region.pool.nbufs - free_buffers(&p);
	XT_ASSERT(held == holds[_i].bufs, "a %zu-byte message (%s stores%s) holds %u buffers, "
		  "expected %u", len, holds[_i].stores ? holds[_i].stores : "auto",
		  holds[_i].flags ? ", FI_DELIVERY_COMPLETE" : "", held, holds[_i].bufs);
	XT_POST(&p.rx, fi_trecv(p.rx.ep, in, len, NULL, FI_ADDR_UNSPEC, TAG, 0, NULL));
	xt_wait_rx(&p.rx, &c);
	XT_ASSERT(c.e.len == len, "received %zu bytes of %zu", c.e.len, len);
	XT_ASSERT_PATTERN(in, len, 70, 0);
	xt_wait_tx(&p.tx, &c);
	free(out);
	free(in);
	pair_close(&p);
}
END_TEST

START_TEST(a_medium_send_borrows_one_spare_and_close_gives_it_back)
{
	struct pair p;
	uint32_t nbufs;

	pair_open(&p);
	nbufs = p.rx_region.pool.nbufs;
	settle(&p);
	XT_ASSERT(free_buffers(&p) == nbufs, "%u of %u free at first", free_buffers(&p),
		  nbufs);
	for (int i = 0; i < 3; i++)
		send_keeping_one_spare(&p, MEDIUM, 40 + (uint64_t) i);
	xt_close(&p.tx);
	xt_expect_none(p.rx.rx, p.rx.tx, 50);
	XT_ASSERT(free_buffers(&p) == nbufs, "after the sender closed: %u of %u free",
		  free_buffers(&p), nbufs);
	xshm_region_close(&p.rx_region);
	xt_close(&p.rx);
}
END_TEST

START_TEST(removing_the_receiver_from_the_av_gives_its_spare_back)
{
	struct pair p;
	uint32_t nbufs;

	pair_open(&p);
	nbufs = p.rx_region.pool.nbufs;
	for (int round = 0; round < 3; round++) {
		send_keeping_one_spare(&p, MEDIUM, 50 + (uint64_t) round);
		XT_ASSERT_RC(fi_av_remove(p.tx.av, &p.to_rx, 1, 0), 0);
		settle(&p);
		XT_ASSERT(free_buffers(&p) == nbufs, "round %d, removed: %u of %u free",
			  round, free_buffers(&p), nbufs);
		p.to_rx = xt_av_insert(&p.tx, p.rx.name);
	}
	pair_close(&p);
}
END_TEST

/* A message of several pieces borrows for the next one's first piece too. */
START_TEST(a_chunked_send_borrows_one_spare)
{
	struct pair p;

	pair_open(&p);
	for (int i = 0; i < 2; i++)
		send_keeping_one_spare(&p, 2 * XSHM_BUF_SIZE + 100, 60 + (uint64_t) i);
	pair_close(&p);
}
END_TEST

START_TEST(small_sends_borrow_no_spare)
{
	struct pair p;
	char small[64] = { 0 };
	struct xt_comp c;

	pair_open(&p);
	XT_POST(&p.rx, fi_trecv(p.rx.ep, small, sizeof(small), NULL, FI_ADDR_UNSPEC, TAG,
				0, NULL));
	XT_POST(&p.tx, fi_tsend(p.tx.ep, small, sizeof(small), NULL, p.to_rx, TAG, NULL));
	xt_wait_tx(&p.tx, &c);
	xt_wait_rx(&p.rx, &c);
	settle(&p);
	XT_ASSERT(free_buffers(&p) == p.rx_region.pool.nbufs, "%u of %u free",
		  free_buffers(&p), p.rx_region.pool.nbufs);
	pair_close(&p);
}
END_TEST

/*
 * The order a sender borrows in (shm/pool.c): a lone large send, answered
 * before the next, keeps to the pool's first XSHM_POOL_WARM_BYTES; a
 * stream goes round every buffer.  The bounce path is forced, so that
 * every send takes buffers.
 */
#define ORDER_ROUNDS	40
#define ORDER_LEN	(2 * XSHM_BUF_SIZE + 100)

/* The highest index of the receiver's buffers the sender holds, or -1. */
static int highest_held(const struct pair *p)
{
	uint64_t sender = xt_ep_id(&p->tx);
	int highest = -1;

	for (uint32_t i = 0; i < p->rx_region.pool.nbufs; i++)
		if (xshm_pool_owned_by(&p->rx_region.pool, i, sender))
			highest = (int) i;
	return highest;
}

/* The receiver answers with an empty message, which the sender receives. */
static void answer(struct pair *p, fi_addr_t to_tx)
{
	struct xt_comp c;

	XT_POST(&p->tx, fi_trecv(p->tx.ep, NULL, 0, NULL, FI_ADDR_UNSPEC, TAG, 0, NULL));
	XT_POST(&p->rx, fi_tsend(p->rx.ep, NULL, 0, NULL, to_tx, TAG, NULL));
	xt_wait_tx(&p->rx, &c);
	xt_wait_rx(&p->tx, &c);
}

/* The highest buffer index ORDER_ROUNDS sends held, answered or not. */
static int highest_over_sends(bool answered)
{
	char *out = xt_alloc(ORDER_LEN), *in = xt_alloc(ORDER_LEN);
	struct xt_comp c;
	fi_addr_t to_tx;
	struct pair p;
	int highest = -1;

	XT_ASSERT(setenv("FI_XSHM_PATH", "static", 1) == 0, "setenv");
	pair_open(&p);
	to_tx = xt_av_insert(&p.rx, p.tx.name);
	for (int i = 0; i < ORDER_ROUNDS; i++) {
		int held;

		XT_POST(&p.rx, fi_trecv(p.rx.ep, in, ORDER_LEN, NULL, FI_ADDR_UNSPEC, TAG, 0,
					NULL));
		XT_POST(&p.tx, fi_tsend(p.tx.ep, out, ORDER_LEN, NULL, p.to_rx, TAG, NULL));
		held = highest_held(&p);
		XT_ASSERT(held >= 0, "send %d holds no buffer", i);
		highest = held > highest ? held : highest;
		xt_wait_tx(&p.tx, &c);
		xt_wait_rx(&p.rx, &c);
		if (answered)
			answer(&p, to_tx);
	}
	free(out);
	free(in);
	pair_close(&p);
	return highest;
}

START_TEST(lone_sends_keep_to_the_warm_buffers)
{
	int highest = highest_over_sends(true);
	int warm = (int) (XSHM_POOL_WARM_BYTES / XSHM_BUF_SIZE);

	XT_ASSERT(highest < warm, "lone sends held buffer %d, beyond the %d warm ones",
		  highest, warm);
}
END_TEST

START_TEST(a_stream_goes_round_the_pool)
{
	int highest = highest_over_sends(false);
	int warm = (int) (XSHM_POOL_WARM_BYTES / XSHM_BUF_SIZE);

	XT_ASSERT(highest >= warm, "a stream held buffers up to %d, within the %d "
		  "warm ones", highest, warm);
}
END_TEST

int main(void)
{
	if (!xt_wanted(XT_XSHM))	/* none of its cases is selected */
		return xt_run_suite(suite_create("bounce_bufs"));
	Suite *s = suite_create("bounce_bufs");
	TCase *tc = tcase_create("bounce_bufs");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, a_message_holds_one_buffer_per_full_piece, 0,
			    sizeof(holds) / sizeof(holds[0]));
	tcase_add_test(tc, a_medium_send_borrows_one_spare_and_close_gives_it_back);
	tcase_add_test(tc, removing_the_receiver_from_the_av_gives_its_spare_back);
	tcase_add_test(tc, a_chunked_send_borrows_one_spare);
	tcase_add_test(tc, small_sends_borrow_no_spare);
	tcase_add_test(tc, lone_sends_keep_to_the_warm_buffers);
	tcase_add_test(tc, a_stream_goes_round_the_pool);
	suite_add_tcase(s, tc);
	return xt_run_suite(s);
}
