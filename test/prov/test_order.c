/*
 * FI_ORDER_SAS: one sender's messages with the same tag, of mixed sizes
 * across the protocol thresholds (inline <= XSHM_INLINE_MAX, one bounce
 * buffer <= XSHM_BUF_SIZE, chunked above), are matched in send order:
 * the k-th receive posted gets the k-th message, whether the receives were
 * posted before the messages came, after (all unexpected), or half and
 * half.  Each message's payload is a pattern seeded by its sequence number
 * and its cq data is that number.  Completions themselves may come in any
 * order (comp_order FI_ORDER_NONE).
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm/layout.h"

#define TAG	0x0d0e000000000005ULL
#define MiB	(1024 * 1024)
#define NMSG	40
#define BASE	1000
#define WAIT_MS	8000

enum when { PREPOSTED, UNEXPECTED, HALF };

static const char *const when_names[] = { "pre-posted", "unexpected", "half pre-posted" };

static const size_t first_sizes[] = {
	1, XSHM_INLINE_MAX, XSHM_INLINE_MAX + 1, XSHM_BUF_SIZE, XSHM_BUF_SIZE + 1, MiB, 3
};
static const size_t size_pool[] = {
	1, 3, XSHM_INLINE_MAX - 1, XSHM_INLINE_MAX, XSHM_INLINE_MAX + 1, 1000, 4096,
	XSHM_BUF_SIZE - 1, XSHM_BUF_SIZE, XSHM_BUF_SIZE + 1, 40000, MiB,
};

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void pick_sizes(size_t *sizes, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;

	for (int i = 0; i < NMSG; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		sizes[i] = i < N(first_sizes) ? first_sizes[i] : size_pool[s % N(size_pool)];
	}
}

/* Progresses x for ms, keeping what completes for later. */
static void progress_for(struct xt_ep *x, int ms)
{
	uint64_t end = xt_now_ms() + (uint64_t)ms;

	while (xt_now_ms() < end)
		xt_progress(x);
}

/*
 * Loop index: 0-2 tagged, 3-5 untagged (pre-posted, unexpected, half);
 * 6-8 tagged again with the completion flags mixed in: every third send
 * FI_DELIVERY_COMPLETE, every fifth FI_MATCH_COMPLETE, small ones
 * FI_INJECT at times -- whatever path each takes, the order holds.
 */
static uint64_t mixed_flags(int i, size_t len)
{
	if (i % 5 == 4)
		return FI_MATCH_COMPLETE;
	if (i % 3 == 2)
		return FI_DELIVERY_COMPLETE;
	if (i % 2 && len <= 4096)
		return FI_INJECT;
	return 0;
}

START_TEST(same_tag_messages_of_mixed_sizes_match_in_send_order)
{
	bool tagged = _i < 3 || _i >= 6, mixed = _i >= 6;
	enum when when = (enum when)(_i % 3);
	struct xt_burst_msg m[NMSG];
	struct xt_burst_result res[NMSG];
	struct xt_cfg cfg = xt_cfg_default();
	size_t sizes[NMSG];
	char *buf[NMSG];
	bool done[NMSG] = { false };
	int preposted = when == PREPOSTED ? NMSG : when == HALF ? NMSG / 2 : 0;
	struct xt_child child;
	struct xt_ep x;

	pick_sizes(sizes, (uint64_t)_i);
	for (int i = 0; i < NMSG; i++) {
		m[i] = (struct xt_burst_msg){
			.tagged = tagged, .len = sizes[i], .seed = BASE + (uint64_t)i,
			.tag = TAG, .data = (uint64_t)i,
			.flags = FI_COMPLETION | FI_REMOTE_CQ_DATA |
				 (mixed ? mixed_flags(i, sizes[i]) : 0),
		};
		buf[i] = xt_alloc(MiB);
	}
	xt_spawn(&child, xt_burst_child, NULL);
	xt_open(&x, &cfg);
	xt_connect_sender(&x, &child, true);
	for (int i = 0; i < preposted; i++)
		xt_post_recv(&x, tagged, buf[i], MiB, FI_ADDR_UNSPEC, TAG, 0, buf[i]);
	xt_burst_post(&x, &child, m, NMSG, WAIT_MS);
	if (preposted == 0)
		xt_expect_none(x.rx, x.tx, 300);
	else if (preposted < NMSG)
		progress_for(&x, 100);	/* the pre-posted receives may complete meanwhile */
	for (int i = preposted; i < NMSG; i++)
		xt_post_recv(&x, tagged, buf[i], MiB, FI_ADDR_UNSPEC, TAG, 0, buf[i]);
	for (int n = 0; n < NMSG; n++) {
		struct xt_comp c;
		int k;

		xt_wait_rx(&x, &c);
		for (k = 0; k < NMSG && c.e.op_context != buf[k]; k++)
			;
		XT_ASSERT(k < NMSG && !done[k], "completion with context %p: unknown or twice",
			  c.e.op_context);
		done[k] = true;
		XT_ASSERT(c.e.flags & FI_REMOTE_CQ_DATA, "receive %d: flags 0x%llx", k,
			  (unsigned long long)c.e.flags);
		XT_ASSERT(c.e.data == (uint64_t)k,
			  "%s, %s%s: receive %d got message %llu (%zu bytes); message %d has %zu",
			  when_names[when], tagged ? "tagged" : "untagged",
			  mixed ? " with mixed flags" : "", k,
			  (unsigned long long)c.e.data, c.e.len, k, sizes[k]);
		XT_ASSERT(c.e.len == sizes[k], "receive %d: len %zu, message %d has %zu", k,
			  c.e.len, k, sizes[k]);
		XT_ASSERT(!tagged || c.e.tag == TAG, "receive %d: tag 0x%llx", k,
			  (unsigned long long)c.e.tag);
		XT_ASSERT_PATTERN(buf[k], sizes[k], BASE + (uint64_t)k, 0);
	}
	xt_expect_none(x.rx, x.tx, 50);
	xt_burst_results(&x, &child, res, NMSG);
	for (int i = 0; i < NMSG; i++)
		XT_ASSERT(res[i].completed && !res[i].is_err, "send %d (%zu bytes): completed %d, "
			  "err %d", i, sizes[i], res[i].completed, res[i].err);
	xt_burst_quit(&x, &child);
	xt_close(&x);
	for (int i = 0; i < NMSG; i++)
		free(buf[i]);
}
END_TEST

/*
 * Two tags interleaved, with receives for tag B posted before and for tag
 * A after: each tag's messages still match in their send order.
 */
START_TEST(order_holds_per_tag_when_tags_interleave)
{
	enum { NT = 24 };
	bool tagged = true;
	struct xt_burst_msg m[NT];
	struct xt_burst_result res[NT];
	struct xt_cfg cfg = xt_cfg_default();
	size_t sizes[NMSG];
	char *buf[NT];
	struct xt_child child;
	struct xt_ep x;

	pick_sizes(sizes, 77);
	for (int i = 0; i < NT; i++) {
		m[i] = (struct xt_burst_msg){
			.tagged = tagged, .len = sizes[i], .seed = BASE + (uint64_t)i,
			.tag = TAG + (uint64_t)(i % 2), .data = (uint64_t)i,
			.flags = FI_COMPLETION | FI_REMOTE_CQ_DATA,
		};
		buf[i] = xt_alloc(MiB);
	}
	xt_spawn(&child, xt_burst_child, NULL);
	xt_open(&x, &cfg);
	xt_connect_sender(&x, &child, true);
	for (int i = 1; i < NT; i += 2)
		xt_post_recv(&x, true, buf[i], MiB, FI_ADDR_UNSPEC, TAG + 1, 0, buf[i]);
	xt_burst_post(&x, &child, m, NT, WAIT_MS);
	progress_for(&x, 100);	/* tag B receives may complete meanwhile */
	for (int i = 0; i < NT; i += 2)
		xt_post_recv(&x, true, buf[i], MiB, FI_ADDR_UNSPEC, TAG, 0, buf[i]);
	for (int n = 0; n < NT; n++) {
		struct xt_comp c;
		int k;

		xt_wait_rx(&x, &c);
		for (k = 0; k < NT && c.e.op_context != buf[k]; k++)
			;
		XT_ASSERT(k < NT, "completion with context %p", c.e.op_context);
		XT_ASSERT(c.e.data == (uint64_t)k, "receive %d (tag %d) got message %llu", k, k % 2,
			  (unsigned long long)c.e.data);
		XT_ASSERT(c.e.len == sizes[k], "receive %d: len %zu, expected %zu", k, c.e.len,
			  sizes[k]);
		XT_ASSERT_PATTERN(buf[k], sizes[k], BASE + (uint64_t)k, 0);
	}
	xt_burst_results(&x, &child, res, NT);
	for (int i = 0; i < NT; i++)
		XT_ASSERT(res[i].completed && !res[i].is_err, "send %d: completed %d, err %d", i,
			  res[i].completed, res[i].err);
	xt_burst_quit(&x, &child);
	xt_close(&x);
	for (int i = 0; i < NT; i++)
		free(buf[i]);
}
END_TEST

START_TEST(getinfo_advertises_send_after_send_order)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_info *hints = xt_hints(&cfg), *info = NULL;

	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	XT_ASSERT_OK(fi_getinfo(XT_API, NULL, NULL, 0, hints, &info));
	XT_ASSERT(info->tx_attr->msg_order & FI_ORDER_SAS, "tx msg_order 0x%llx",
		  (unsigned long long)info->tx_attr->msg_order);
	XT_ASSERT(info->rx_attr->msg_order & FI_ORDER_SAS, "rx msg_order 0x%llx",
		  (unsigned long long)info->rx_attr->msg_order);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}
END_TEST

static Suite *order_suite(void)
{
	Suite *s = suite_create("order");
	TCase *sas = tcase_create("sas");

	tcase_set_timeout(sas, 40);
	tcase_add_test(sas, getinfo_advertises_send_after_send_order);
	tcase_add_loop_test(sas, same_tag_messages_of_mixed_sizes_match_in_send_order, 0, 9);
	tcase_add_test(sas, order_holds_per_tag_when_tags_interleave);
	suite_add_tcase(s, sas);
	return s;
}

int main(void)
{
	return xt_run_suite(order_suite());
}
