/*
 * The handshake between a push and the owner's robbery (shm/ring.c), step
 * by step: ring.c is compiled here with XSHM_RING_TEST_HOOKS, and each test
 * acts, at one step of a push or of a robbery, as the other side would in
 * another process.  The owner's clock is passed in, so a stall of
 * XSHM_RING_STALL_NS takes no time.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "shm/ring.h"

#define CELLS		8
#define T0		1000000000ULL

struct item_cell {
	struct xshm_cell_seq hdr;	/* owned by ring.c */
	uint64_t value;
	_Atomic uint64_t claim;		/* owned by ring.c: a cell's last bytes */
};

static struct xshm_ring_ref ref;
static struct xshm_ring *ring;
static struct xshm_ring_stall stall;
static uint64_t now;

/* What the step hook does, once, at the step it waits for. */
static enum xshm_ring_step act_at;
static void (*act)(void *cell, uint64_t pos);

static void on_step(enum xshm_ring_step step, void *cell, uint64_t pos)
{
	void (*once)(void *, uint64_t) = act;

	if (step != act_at || !once)
		return;
	act = NULL;
	once(cell, pos);
}

static void setup(void)
{
	size_t bytes = xshm_ring_bytes(CELLS, sizeof(struct item_cell));

	ring = aligned_alloc(XSHM_CACHE_LINE, (bytes + XSHM_CACHE_LINE - 1) &
			     ~(size_t) (XSHM_CACHE_LINE - 1));
	ck_assert_ptr_nonnull(ring);
	xshm_ring_init(ring, CELLS, sizeof(struct item_cell));
	ck_assert_int_eq(xshm_ring_attach(&ref, ring, bytes), 0);
	stall = (struct xshm_ring_stall) { 0 };
	now = T0;
	act = NULL;
	xshm_ring_test_step = on_step;
}

static void teardown(void)
{
	xshm_ring_test_step = NULL;
	free(ring);
}

static uint64_t seq_of(void *cell)
{
	return atomic_load(&((struct xshm_cell_seq *) cell)->seq);
}

static uint64_t claim_of(void *cell)
{
	return atomic_load(&((struct item_cell *) cell)->claim);
}

/* The owner, polling on: reaps as after a stall of XSHM_RING_STALL_NS. */
static int reap_after_stall(void)
{
	int reaped = xshm_ring_reap_stalled(&ref, &stall, now);

	now += XSHM_RING_STALL_NS;
	return reaped ? reaped : xshm_ring_reap_stalled(&ref, &stall, now);
}

static void commit_value(struct item_cell *cell, uint64_t pos, uint64_t value)
{
	cell->value = value;
	xshm_ring_commit(&ref, cell, pos);
}

static void push(uint64_t value)
{
	uint64_t pos;
	struct item_cell *cell = xshm_ring_reserve(&ref, &pos);

	ck_assert_ptr_nonnull(cell);
	commit_value(cell, pos, value);
}

static uint64_t pop(void)
{
	struct item_cell *cell = xshm_ring_peek(&ref);
	uint64_t value;

	ck_assert_ptr_nonnull(cell);
	value = cell->value;
	xshm_ring_release(&ref, cell);
	return value;
}

static void rob_now(void *cell, uint64_t pos)
{
	ck_assert_uint_eq(claim_of(cell), 0);
	ck_assert_int_eq(reap_after_stall(), 1);
	ck_assert_uint_eq(seq_of(cell), pos + CELLS);
}

/*
 * A push stalled between winning its position and claiming it is robbed;
 * resuming, it finds the cell robbed, withdraws its claim and pushes at the
 * next position.
 */
START_TEST(a_push_robbed_before_it_claims_takes_the_next_position)
{
	struct item_cell *cell;
	uint64_t pos;

	act_at = XSHM_RING_PUSH_WON;
	act = rob_now;
	cell = xshm_ring_reserve(&ref, &pos);
	ck_assert_ptr_nonnull(cell);
	ck_assert_uint_eq(pos, 1);
	ck_assert_uint_eq(claim_of(xshm_ring_cell(&ref, 0)), 0);
	commit_value(cell, pos, 7);
	ck_assert_uint_eq(pop(), 7);
	ck_assert_ptr_null(xshm_ring_peek(&ref));
	for (uint64_t i = 0; i < 2 * CELLS; i++) {	/* every cell works on */
		push(100 + i);
		ck_assert_uint_eq(pop(), 100 + i);
	}
}
END_TEST

/*
 * Robbed before it claimed, and the cell taken again by the next lap's
 * push: the late claim must not replace that push's.
 */
static uint64_t next_lap_pos;

static void rob_and_take_next_lap(void *cell, uint64_t pos)
{
	rob_now(cell, pos);
	for (uint64_t i = 1; i < CELLS; i++) {	/* to the next lap's turn */
		push(i);
		ck_assert_uint_eq(pop(), i);
	}
	ck_assert_ptr_eq(xshm_ring_reserve(&ref, &next_lap_pos), cell);
	ck_assert_uint_eq(next_lap_pos, pos + CELLS);
}

START_TEST(a_late_claim_never_replaces_a_later_laps)
{
	struct item_cell *late, *first = xshm_ring_cell(&ref, 0);
	uint64_t pos, lap_claim;

	act_at = XSHM_RING_PUSH_WON;
	act = rob_and_take_next_lap;
	late = xshm_ring_reserve(&ref, &pos);
	ck_assert_ptr_nonnull(late);
	ck_assert_uint_eq(pos, CELLS + 1);
	lap_claim = claim_of(first);
	ck_assert_uint_eq(lap_claim & 0x7fffffff, CELLS);	/* the next lap's */
	commit_value(first, next_lap_pos, 40);
	commit_value(late, pos, 41);
	ck_assert_uint_eq(pop(), 40);
	ck_assert_uint_eq(pop(), 41);
	ck_assert_ptr_null(xshm_ring_peek(&ref));
}
END_TEST

/*
 * The owner marked the cell to rob it when the push claims it: the push
 * sees the mark, withdraws its claim and takes the next position.
 */
static void mark(void *cell, uint64_t pos)
{
	atomic_store(&((struct xshm_cell_seq *) cell)->seq,
		     pos | (1ULL << 63));
}

START_TEST(a_push_that_sees_the_mark_withdraws)
{
	struct item_cell *cell, *marked = xshm_ring_cell(&ref, 0);
	uint64_t pos, head = 0;

	act_at = XSHM_RING_PUSH_CLAIMED;
	act = mark;
	cell = xshm_ring_reserve(&ref, &pos);
	ck_assert_ptr_nonnull(cell);
	ck_assert_uint_eq(pos, 1);
	ck_assert_uint_eq(claim_of(marked), 0);
	/* the owner, seeing no claim, finishes the robbery */
	atomic_store(&marked->hdr.seq, CELLS);
	ck_assert(atomic_compare_exchange_strong(&ring->head, &head, 1));
	commit_value(cell, pos, 9);
	ck_assert_uint_eq(pop(), 9);
	ck_assert_ptr_null(xshm_ring_peek(&ref));
}
END_TEST

/*
 * The owner marked a cell whose claim it had not seen, and the claim is
 * there when it looks again (the push claimed meanwhile and still saw its
 * position): the cell is given back, and the push's commit publishes it.
 */
static void claim_as_the_push(void *cell, uint64_t pos)
{
	atomic_store(&((struct item_cell *) cell)->claim,
		     (uint64_t) (uint32_t) getpid() << 32 | pos);
}

START_TEST(a_robbery_gives_the_cell_back_to_a_live_claimant)
{
	struct item_cell *cell;
	uint64_t pos;

	cell = xshm_ring_reserve(&ref, &pos);
	ck_assert_ptr_nonnull(cell);
	atomic_store(&cell->claim, 0);	/* as if not seen yet */
	act_at = XSHM_RING_ROB_MARKED;
	act = claim_as_the_push;
	ck_assert_int_eq(reap_after_stall(), 0);
	ck_assert_ptr_null(act);	/* it got as far as the mark */
	ck_assert_uint_eq(seq_of(cell), pos);
	ck_assert_uint_eq(atomic_load(&ring->head), 0);
	commit_value(cell, pos, 5);
	ck_assert_uint_eq(pop(), 5);
	ck_assert_int_eq(reap_after_stall(), 0);
}
END_TEST

/*
 * A push that claimed and saw its position before the owner marked it
 * commits while the mark is on: the owner finds the cell published and
 * robs nothing.
 */
static struct item_cell *committing;
static uint64_t committing_pos;

static void commit_as_the_push(void *cell, uint64_t pos)
{
	ck_assert_ptr_eq(cell, committing);
	ck_assert_uint_eq(pos, committing_pos);
	committing->value = 6;
	xshm_ring_commit(&ref, committing, committing_pos);
}

START_TEST(a_commit_during_the_mark_wins)
{
	uint64_t pos;

	committing = xshm_ring_reserve(&ref, &pos);
	ck_assert_ptr_nonnull(committing);
	committing_pos = pos;
	atomic_store(&committing->claim, 0);	/* as if not seen yet */
	act_at = XSHM_RING_ROB_MARKED;
	act = commit_as_the_push;
	ck_assert_int_eq(reap_after_stall(), 0);
	ck_assert_ptr_null(act);
	ck_assert_uint_eq(pop(), 6);
	ck_assert_ptr_null(xshm_ring_peek(&ref));
	push(8);
	ck_assert_uint_eq(pop(), 8);
}
END_TEST

/*
 * A run robbed at its first cell before it claims it: its other cells are
 * published empty, and it is reserved again further on.
 */
START_TEST(a_run_robbed_before_it_claims_is_reserved_again)
{
	struct item_cell *first, *second;
	uint64_t pos;

	act_at = XSHM_RING_PUSH_WON;
	act = rob_now;
	ck_assert_int_eq(xshm_ring_reserve_n(&ref, 2, &pos), 0);
	ck_assert_uint_eq(pos, 2);
	ck_assert_uint_eq(claim_of(xshm_ring_cell(&ref, 0)), 0);
	ck_assert_uint_eq(pop(), 0);	/* the second cell, published empty */
	first = xshm_ring_cell(&ref, pos);
	second = xshm_ring_cell(&ref, pos + 1);
	ck_assert_uint_eq(claim_of(second) & 0x7fffffff, pos + 1);
	commit_value(second, pos + 1, 12);	/* a run: its first cell last */
	commit_value(first, pos, 11);
	ck_assert_uint_eq(pop(), 11);
	ck_assert_uint_eq(pop(), 12);
	ck_assert_ptr_null(xshm_ring_peek(&ref));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ring_handshake");
	TCase *tc = tcase_create("handshake");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_push_robbed_before_it_claims_takes_the_next_position);
	tcase_add_test(tc, a_late_claim_never_replaces_a_later_laps);
	tcase_add_test(tc, a_push_that_sees_the_mark_withdraws);
	tcase_add_test(tc, a_robbery_gives_the_cell_back_to_a_live_claimant);
	tcase_add_test(tc, a_commit_during_the_mark_wins);
	tcase_add_test(tc, a_run_robbed_before_it_claims_is_reserved_again);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
