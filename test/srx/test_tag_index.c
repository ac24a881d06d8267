/*
 * Unit tests of prov/xshm/srx/tag_index.c, the index of posted tagged
 * receives: a message matches the first-posted receive that accepts it
 * (fi_tagged(3)) whatever the masks, classes and buckets, checked against
 * a linear search over the same posts; the fallback list past the last
 * class; removal from the middle of a bucket (fi_cancel); directed and
 * undirected receives sharing a bucket; a class freed and taken by
 * another mask; an index built over receives posted before it was on.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "srx/srx.h"
#include "srx/tag_index.h"

#define TEST_TIMEOUT	30
#define MAX_POSTS	512
#define N(a)		(sizeof(a) / sizeof((a)[0]))

static struct xshm_tag_index index_;
static struct xshm_rx_entry entries[MAX_POSTS];

/* The reference: the receives still posted, in post order. */
static struct xshm_rx_entry *posted[MAX_POSTS];
static size_t nposted;
static bool fallback_used;

static void setup(void)
{
	xshm_tag_index_init(&index_);
	memset(entries, 0, sizeof(entries));
	nposted = 0;
	fallback_used = false;
}

static struct xshm_rx_entry *post(size_t i, uint64_t tag, uint64_t ignore,
				  fi_addr_t addr)
{
	struct xshm_rx_entry *entry = &entries[i];

	entry->peer.tag = tag;
	entry->peer.addr = addr;
	entry->peer.flags = FI_RECV | FI_TAGGED;
	entry->ignore = ignore;
	xshm_tag_index_add(&index_, entry);
	fallback_used |= entry->tag_node.class == XSHM_TAG_FALLBACK;
	posted[nposted++] = entry;
	return entry;
}

static void unpost(struct xshm_rx_entry *entry)
{
	size_t i = 0;

	while (posted[i] != entry)
		i++;
	memmove(&posted[i], &posted[i + 1], (--nposted - i) * sizeof(posted[0]));
	xshm_tag_index_remove(&index_, &entry->tag_node);
}

static struct xshm_rx_entry *linear_find(fi_addr_t addr, uint64_t tag)
{
	for (size_t i = 0; i < nposted; i++)
		if (xshm_srx_addr_matches(posted[i]->peer.addr, addr) &&
		    xshm_srx_tag_matches(posted[i]->peer.tag, posted[i]->ignore, tag))
			return posted[i];
	return NULL;
}

/* A message arrives: the index and the reference must agree on it. */
static struct xshm_rx_entry *deliver(fi_addr_t addr, uint64_t tag)
{
	struct xshm_rx_entry *want = linear_find(addr, tag);
	struct xshm_rx_entry *got = xshm_tag_index_find(&index_, addr, tag);

	ck_assert_msg(got == want, "addr %llu tag 0x%llx: index gave entry %td, first posted %td",
		      (unsigned long long)addr, (unsigned long long)tag,
		      got ? got - entries : -1, want ? want - entries : -1);
	if (got)
		unpost(got);
	return got;
}

static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static const uint64_t tags[] = { 0x10, 0x11, 0x1f, 0x20, 0x10010, 0xabcd000000000010ULL };

/*
 * Posts and messages interleaved at random, with masks drawn from masks;
 * returns how many messages found a receive.
 */
static unsigned random_run(const uint64_t *masks, size_t nmasks, unsigned ops)
{
	unsigned matched = 0;
	size_t next = 0;

	rng_state = 0x2545f4914f6cdd1dULL;
	for (unsigned op = 0; op < ops; op++) {
		uint64_t tag = tags[rng() % N(tags)];
		fi_addr_t addr = rng() % 4;

		if (next < MAX_POSTS && rng() % 3) {
			post(next++, tag, masks[rng() % nmasks],
			     rng() % 2 ? FI_ADDR_UNSPEC : addr);
		} else if (deliver(addr, tag)) {
			matched++;
		}
	}
	while (nposted)		/* drain: every class must empty cleanly */
		unpost(posted[rng() % nposted]);
	ck_assert_uint_eq(index_.active, 0);
	return matched;
}

/*
 * The SRX turns the index on only once a search walked far: the receives
 * already posted then enter it in their post order, and later ones after.
 */
START_TEST(an_index_built_over_posted_receives_keeps_their_order)
{
	static const uint64_t masks[] = { 0, 0xf0, 0x1 };
	struct xshm_dlist list;
	size_t next = 0;

	xshm_dlist_init(&list);
	rng_state = 0x9e3779b97f4a7c15ULL;
	for (; next < 40; next++) {
		struct xshm_rx_entry *entry = &entries[next];

		entry->peer.tag = tags[rng() % N(tags)];
		entry->peer.addr = rng() % 2 ? FI_ADDR_UNSPEC : rng() % 4;
		entry->peer.flags = FI_RECV | FI_TAGGED;
		entry->ignore = masks[rng() % N(masks)];
		entry->tag_node.class = XSHM_TAG_UNINDEXED;
		xshm_dlist_append(&list, (struct xshm_dlist *) &entry->peer);
		posted[nposted++] = entry;
	}
	ck_assert(!index_.on);
	xshm_tag_index_build(&index_, &list);
	ck_assert(index_.on);
	for (; next < 60; next++)
		post(next, tags[rng() % N(tags)], masks[rng() % N(masks)],
		     FI_ADDR_UNSPEC);
	for (unsigned i = 0; i < 200 && nposted; i++)
		deliver(rng() % 4, tags[rng() % N(tags)]);
	while (nposted)
		unpost(posted[0]);
	ck_assert_uint_eq(index_.active, 0);
}
END_TEST

START_TEST(random_posts_and_messages_match_the_first_posted_accepting_receive)
{
	static const uint64_t masks[] = { 0, 0xff, 0xf0, 0x1, 0xffffffff00000000ULL,
					  ~0ULL };
	unsigned matched = random_run(masks, N(masks), 700);

	ck_assert_msg(matched > 100, "only %u messages matched: a weak test", matched);
	ck_assert_msg(index_.classes[0].count == 0 && xshm_dlist_empty(&index_.fallback),
		      "index not empty after drain");
}
END_TEST

START_TEST(more_masks_than_classes_still_match_in_post_order)
{
	static const uint64_t masks[XSHM_TAG_CLASSES + 4] = {
		0, 0xff, 0xf0, 0x1, 0xf, 0x10, 0x11, 0x10000, 0x10010,
		0xffffffff00000000ULL, ~0ULL, 0x3 };
	struct xshm_rx_entry *late;

	for (size_t m = 0; m < N(masks); m++)
		post(m, 0x10, masks[m], FI_ADDR_UNSPEC);
	ck_assert_uint_eq(entries[N(masks) - 1].tag_node.class, XSHM_TAG_FALLBACK);
	unpost(&entries[0]);
	/* in the class freed, after the receives in the fallback list */
	late = post(N(masks), 0x10, 0x2, FI_ADDR_UNSPEC);
	ck_assert_uint_eq(late->tag_node.class, 0);
	for (size_t m = 1; m < N(masks); m++)
		ck_assert_ptr_eq(deliver(0, 0x10), &entries[m]);
	ck_assert_ptr_eq(deliver(0, 0x10), late);
	ck_assert_ptr_null(deliver(0, 0x10));

	setup();
	ck_assert_uint_gt(random_run(masks, N(masks), 700), 100);
	ck_assert_msg(fallback_used, "the random run never used the fallback list");
}
END_TEST

START_TEST(cancel_in_the_middle_of_a_bucket_leaves_the_others_in_order)
{
	struct xshm_rx_entry *first = post(0, 0x42, 0xf00, FI_ADDR_UNSPEC);
	struct xshm_rx_entry *middle = post(1, 0x142, 0xf00, FI_ADDR_UNSPEC);
	struct xshm_rx_entry *last = post(2, 0x242, 0xf00, FI_ADDR_UNSPEC);

	ck_assert_ptr_eq(middle->tag_node.link.prev, &first->tag_node.link);
	unpost(middle);
	ck_assert_ptr_eq(last->tag_node.link.prev, &first->tag_node.link);
	ck_assert_ptr_eq(deliver(1, 0x42), first);
	ck_assert_ptr_eq(deliver(1, 0x42), last);
	ck_assert_ptr_null(deliver(1, 0x42));
	ck_assert_uint_eq(index_.active, 0);
}
END_TEST

START_TEST(directed_and_undirected_receives_in_one_bucket_match_by_address)
{
	struct xshm_rx_entry *from2 = post(0, 0x7, 0, 2);
	struct xshm_rx_entry *any = post(1, 0x7, 0, FI_ADDR_UNSPEC);
	struct xshm_rx_entry *from3 = post(2, 0x7, 0, 3);

	ck_assert_ptr_eq(from2->tag_node.link.next, &any->tag_node.link);
	ck_assert_ptr_null(deliver(2, 0x8));
	ck_assert_ptr_eq(deliver(3, 0x7), any);
	ck_assert_ptr_eq(deliver(3, 0x7), from3);
	ck_assert_ptr_null(deliver(3, 0x7));
	ck_assert_ptr_null(deliver(5, 0x7));
	ck_assert_ptr_eq(deliver(2, 0x7), from2);
}
END_TEST

START_TEST(an_emptied_class_is_reused_for_another_mask)
{
	const uint64_t other = 0xff00000000000000ULL;
	struct xshm_rx_entry *in_fallback, *reuser;

	for (unsigned c = 0; c < XSHM_TAG_CLASSES; c++)
		post(c, 0x5, (uint64_t)(c + 1) << 4, FI_ADDR_UNSPEC);
	in_fallback = post(XSHM_TAG_CLASSES, 0x5, other, FI_ADDR_UNSPEC);
	ck_assert_uint_eq(in_fallback->tag_node.class, XSHM_TAG_FALLBACK);
	unpost(&entries[3]);
	ck_assert_uint_eq(index_.active & (1u << 3), 0);

	reuser = post(XSHM_TAG_CLASSES + 1, 0x6, other, FI_ADDR_UNSPEC);
	ck_assert_uint_eq(reuser->tag_node.class, 3);
	ck_assert_uint_eq(index_.classes[3].ignore, other);
	ck_assert_uint_eq(index_.classes[3].count, 1);
	ck_assert_ptr_eq(deliver(0, 0xaa00000000000006ULL), reuser);
	/* mask other's receives, in the fallback and the class, in post order */
	reuser = post(XSHM_TAG_CLASSES + 2, 0x5, other, FI_ADDR_UNSPEC);
	ck_assert_uint_eq(reuser->tag_node.class, 3);
	for (unsigned c = 0; c < XSHM_TAG_CLASSES; c++)
		if (c != 3)
			ck_assert_ptr_eq(deliver(0, 0x5), &entries[c]);
	ck_assert_ptr_eq(deliver(0, 0x5), in_fallback);
	ck_assert_ptr_eq(deliver(0, 0x5), reuser);
	ck_assert_uint_eq(index_.active, 0);
}
END_TEST

static Suite *tag_index_suite(void)
{
	Suite *s = suite_create("tag_index");
	TCase *tc = tcase_create("match");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, TEST_TIMEOUT);
	tcase_add_test(tc, random_posts_and_messages_match_the_first_posted_accepting_receive);
	tcase_add_test(tc, more_masks_than_classes_still_match_in_post_order);
	tcase_add_test(tc, cancel_in_the_middle_of_a_bucket_leaves_the_others_in_order);
	tcase_add_test(tc, directed_and_undirected_receives_in_one_bucket_match_by_address);
	tcase_add_test(tc, an_emptied_class_is_reused_for_another_mask);
	tcase_add_test(tc, an_index_built_over_posted_receives_keeps_their_order);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tag_index_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
