/*
 * Unit tests of shm/scopy/split.c, the claim word of a split single copy:
 * front and back claims hand out every chunk once and meet, the receiver
 * takes the rest only while the sender has claimed nothing, claims name
 * their generation, the sender's pushes are counted and their failures
 * kept, and two processes claiming at once from both ends never take the
 * same chunk; the receiver's wait for the sender's chunks ends when they
 * are in, reports a failed push and gives up on a dead sender.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ep_ids.h"
#include "shm/liveness.h"
#include "shm/proc.h"
#include "shm/scopy/split.h"

#define TEST_TIMEOUT	30
#define GEN		7u
#define N(a)		(sizeof(a) / sizeof((a)[0]))

/* ---- front and back claims ---- */

enum order {
	ALTERNATING,
	FRONT_ONLY,
	BACK_ONLY,
	TWO_FRONT_ONE_BACK,
	RANDOM,
	ORDERS
};

static const char *const order_names[ORDERS] = {
	"alternating", "front only", "back only", "two front, one back", "random",
};

static bool claims_front(enum order order, size_t step, uint64_t *rng)
{
	switch (order) {
	case ALTERNATING:
		return step % 2 == 0;
	case FRONT_ONLY:
		return true;
	case BACK_ONLY:
		return false;
	case TWO_FRONT_ONE_BACK:
		return step % 3 != 2;
	default:
		*rng ^= *rng << 13;
		*rng ^= *rng >> 7;
		*rng ^= *rng << 17;
		return *rng & 1;
	}
}

struct bad_claim {
	size_t step;
	bool front;
	long got, expected;
};

/*
 * Claims all nchunks in the given order.  The front must get 0, 1, 2...
 * and the back nchunks - 1, nchunks - 2...: as they meet after nchunks
 * claims, that hands out every index once.  False, with the first wrong
 * claim in *bad, if a claim got another index.  One check assertion per
 * call: check makes every assertion a write.
 */
static bool claim_all(struct xshm_split *split, size_t nchunks,
		      enum order order, struct bad_claim *bad)
{
	long next_front = 0, next_back = (long) nchunks - 1;
	uint64_t rng = 0x9e3779b97f4a7c15ull;

	for (size_t step = 0; step < nchunks; step++) {
		bool front = claims_front(order, step, &rng);
		long got = xshm_split_claim(split, GEN, nchunks, front);
		long expected = front ? next_front++ : next_back--;

		if (got != expected) {
			*bad = (struct bad_claim){ step, front, got, expected };
			return false;
		}
	}
	return true;
}

static const size_t meet_nchunks[] = { 1, 2, 3, 64, XSHM_SPLIT_CHUNKS_MAX };

START_TEST(front_and_back_claims_meet_handing_out_every_chunk_once)
{
	size_t nchunks = meet_nchunks[_i];
	struct xshm_split split;
	struct bad_claim bad;

	for (enum order order = 0; order < ORDERS; order++) {
		xshm_split_start(&split, GEN);
		ck_assert_msg(claim_all(&split, nchunks, order, &bad),
			      "%zu chunks, %s: claim %zu from the %s got %ld, "
			      "expected %ld", nchunks, order_names[order],
			      bad.step, bad.front ? "front" : "back", bad.got,
			      bad.expected);
		for (int again = 0; again < 2; again++) {
			ck_assert_int_eq(xshm_split_claim(&split, GEN, nchunks,
							  true), -1);
			ck_assert_int_eq(xshm_split_claim(&split, GEN, nchunks,
							  false), -1);
		}
	}
}
END_TEST

START_TEST(a_claim_of_another_generation_fails)
{
	struct xshm_split split;

	xshm_split_start(&split, GEN);
	ck_assert_int_eq(xshm_split_claim(&split, GEN - 1, 8, true), -1);
	ck_assert_int_eq(xshm_split_claim(&split, GEN - 1, 8, false), -1);
	ck_assert_int_eq(xshm_split_claim(&split, GEN + 1, 8, true), -1);
	ck_assert_int_eq(xshm_split_claim(&split, GEN + 1, 8, false), -1);
	/* the failed claims took nothing */
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, true), 0);
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, false), 7);
}
END_TEST

/* Generations as the receiver counts them, across the wrap to 0. */
START_TEST(a_new_generation_restarts_the_claims_and_fails_the_old_ones)
{
	const uint32_t gens[] = { 1, 2, UINT32_MAX, 0, 1 };
	struct xshm_split split;

	xshm_split_start(&split, gens[0]);
	ck_assert_int_eq(xshm_split_claim(&split, gens[0], 8, true), 0);
	for (size_t i = 1; i < N(gens); i++) {
		uint32_t old = gens[i - 1], gen = gens[i];

		ck_assert_int_eq(xshm_split_claim(&split, old, 8, false), 7);
		xshm_split_start(&split, gen);
		ck_assert_int_eq(xshm_split_claim(&split, old, 8, true), -1);
		ck_assert_int_eq(xshm_split_claim(&split, old, 8, false), -1);
		ck_assert_int_eq(xshm_split_claim(&split, gen, 8, true), 0);
		ck_assert_int_eq(xshm_split_claim(&split, gen, 8, true), 1);
	}
}
END_TEST

START_TEST(more_chunks_than_the_word_counts_are_refused)
{
	const size_t too_many[] = { XSHM_SPLIT_CHUNKS_MAX + 1,
				    XSHM_SPLIT_CHUNKS_MAX + 2, SIZE_MAX };
	struct xshm_split split;

	xshm_split_start(&split, GEN);
	for (size_t i = 0; i < N(too_many); i++) {
		ck_assert_int_eq(xshm_split_claim(&split, GEN, too_many[i],
						  true), -1);
		ck_assert_int_eq(xshm_split_claim(&split, GEN, too_many[i],
						  false), -1);
	}
	/* the refused claims took nothing */
	ck_assert_int_eq(xshm_split_claim(&split, GEN, XSHM_SPLIT_CHUNKS_MAX,
					  true), 0);
	ck_assert_int_eq(xshm_split_claim(&split, GEN, XSHM_SPLIT_CHUNKS_MAX,
					  false), XSHM_SPLIT_CHUNKS_MAX - 1);
}
END_TEST

/* ---- the rest, to a receiver the sender has not joined ---- */

START_TEST(the_rest_goes_to_the_front_while_the_back_has_claimed_nothing)
{
	struct xshm_split split;
	bool failed = true;

	xshm_split_start(&split, GEN);
	ck_assert_int_eq(xshm_split_claim_rest(&split, GEN, 8), 0);
	xshm_split_start(&split, GEN + 1);
	ck_assert_int_eq(xshm_split_claim(&split, GEN + 1, 8, true), 0);
	ck_assert_int_eq(xshm_split_claim(&split, GEN + 1, 8, true), 1);
	ck_assert_int_eq(xshm_split_claim_rest(&split, GEN + 1, 8), 2);
	/* nothing is left for either side, and the sender owes nothing */
	ck_assert_int_eq(xshm_split_claim(&split, GEN + 1, 8, false), -1);
	ck_assert_int_eq(xshm_split_claim(&split, GEN + 1, 8, true), -1);
	ck_assert_int_eq(xshm_split_claim_rest(&split, GEN + 1, 8), -1);
	ck_assert(xshm_split_sender_done(&split, GEN + 1, &failed));
	ck_assert(!failed);
}
END_TEST

START_TEST(no_rest_once_the_back_has_claimed)
{
	struct xshm_split split;

	xshm_split_start(&split, GEN);
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, true), 0);
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, false), 7);
	ck_assert_int_eq(xshm_split_claim_rest(&split, GEN, 8), -1);
	/* the refused rest took nothing: the claims go on from both ends */
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, true), 1);
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, false), 6);
}
END_TEST

START_TEST(no_rest_of_another_generation_or_of_too_many_chunks)
{
	struct xshm_split split;

	xshm_split_start(&split, GEN);
	ck_assert_int_eq(xshm_split_claim_rest(&split, GEN - 1, 8), -1);
	ck_assert_int_eq(xshm_split_claim_rest(&split, GEN + 1, 8), -1);
	ck_assert_int_eq(xshm_split_claim_rest(&split, GEN,
					       XSHM_SPLIT_CHUNKS_MAX + 1), -1);
	/* the refused claims took nothing */
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, false), 7);
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, true), 0);
}
END_TEST

/* ---- the sender's pushes ---- */

/* *failed starts true: a call that leaves it alone is caught. */
static bool sender_done(struct xshm_split *split, uint32_t gen, bool *failed)
{
	*failed = true;
	return xshm_split_sender_done(split, gen, failed);
}

START_TEST(sender_done_with_nothing_claimed_from_the_back)
{
	struct xshm_split split;
	bool failed;

	xshm_split_start(&split, GEN);
	ck_assert(sender_done(&split, GEN, &failed));
	ck_assert(!failed);
	/* the receiver's own claims are not the sender's to push */
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, true), 0);
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, true), 1);
	ck_assert(sender_done(&split, GEN, &failed));
	ck_assert(!failed);
}
END_TEST

START_TEST(sender_done_once_every_back_claim_is_pushed)
{
	struct xshm_split split;
	bool failed;

	xshm_split_start(&split, GEN);
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, false), 7);
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, false), 6);
	ck_assert(!sender_done(&split, GEN, &failed));
	ck_assert(!failed);
	xshm_split_pushed(&split, false);
	ck_assert(!sender_done(&split, GEN, &failed));
	xshm_split_pushed(&split, false);
	ck_assert(sender_done(&split, GEN, &failed));
	ck_assert(!failed);
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, false), 5);
	ck_assert(!sender_done(&split, GEN, &failed));
	xshm_split_pushed(&split, false);
	ck_assert(sender_done(&split, GEN, &failed));
	ck_assert(!failed);
}
END_TEST

START_TEST(a_failed_push_is_reported_and_still_counted)
{
	struct xshm_split split;
	bool failed;

	xshm_split_start(&split, GEN);
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, false), 7);
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, false), 6);
	xshm_split_pushed(&split, true);
	ck_assert(!sender_done(&split, GEN, &failed));
	ck_assert(failed);
	xshm_split_pushed(&split, false);
	ck_assert(sender_done(&split, GEN, &failed));
	ck_assert(failed);
	/* a new message starts clean */
	xshm_split_start(&split, GEN + 1);
	ck_assert(sender_done(&split, GEN + 1, &failed));
	ck_assert(!failed);
}
END_TEST

START_TEST(sender_done_for_another_generation_is_done_and_failed)
{
	struct xshm_split split;
	bool failed = false;

	xshm_split_start(&split, GEN);
	ck_assert(xshm_split_sender_done(&split, GEN + 1, &failed));
	ck_assert(failed);
	failed = false;
	ck_assert(xshm_split_sender_done(&split, GEN - 1, &failed));
	ck_assert(failed);
	/* even while the word's own generation waits for a push */
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 8, false), 7);
	ck_assert(!sender_done(&split, GEN, &failed));
	failed = false;
	ck_assert(xshm_split_sender_done(&split, GEN + 1, &failed));
	ck_assert(failed);
}
END_TEST

/* ---- chunk counts ---- */

START_TEST(chunk_size_is_a_quarter_within_bounds)
{
	const size_t lo = XSHM_SPLIT_CHUNK_MIN, hi = XSHM_SPLIT_CHUNK_MAX;
	const struct { size_t len, size; } cases[] = {
		{ 1, lo },
		{ lo, lo },
		{ lo + 1, (size_t) 68 << 10 },		/* two, 64 KiB + 1 rounded */
		{ 3 * lo / 2, 3 * lo / 4 },		/* 192 KiB: two of 96 KiB */
		{ 3 * lo, 3 * lo / 4 },			/* 384 KiB: four of 96 KiB */
		{ 4 * lo, lo },
		{ 4 * lo + 1, (size_t) 132 << 10 },	/* four, 128 KiB + 1 rounded */
		{ (size_t) 1 << 20, (size_t) 256 << 10 },
		{ ((size_t) 1 << 20) + 1, (size_t) 260 << 10 },
		{ (size_t) 4 << 20, (size_t) 1 << 20 },
		{ 4 * hi, hi },
		{ 4 * hi + 1, (size_t) 1400832 },	/* six, 8 MiB / 6 rounded */
		{ (size_t) 1 << 30, hi },
	};

	for (size_t i = 0; i < N(cases); i++)
		ck_assert_msg(xshm_split_chunk_size(cases[i].len) == cases[i].size,
			      "%zu bytes: chunks of %zu, expected %zu", cases[i].len,
			      xshm_split_chunk_size(cases[i].len), cases[i].size);
}
END_TEST

START_TEST(chunks_round_up)
{
	const size_t lo = XSHM_SPLIT_CHUNK_MIN, hi = XSHM_SPLIT_CHUNK_MAX;
	const struct { size_t len, chunks; } cases[] = {
		{ 0, 0 },
		{ 1, 1 },
		{ lo - 1, 1 },
		{ lo, 1 },
		{ lo + 1, 2 },
		{ 3 * lo, 4 },
		{ 4 * lo, 4 },
		{ 4 * lo + 1, 4 },
		{ (size_t) 4 << 20, 4 },
		{ ((size_t) 4 << 20) + 1, 4 },
		{ 4 * hi, 4 },
		{ 4 * hi + 1, 6 },
		/* the split's limit: rounded up, the chunks are hi again */
		{ (size_t) XSHM_SPLIT_CHUNKS_MAX * hi, XSHM_SPLIT_CHUNKS_MAX },
		{ (size_t) XSHM_SPLIT_CHUNKS_MAX * hi + 1, XSHM_SPLIT_CHUNKS_MAX + 1 },
	};

	for (size_t i = 0; i < N(cases); i++)
		ck_assert_msg(xshm_split_chunks(cases[i].len) == cases[i].chunks,
			      "%zu bytes: %zu chunks, expected %zu", cases[i].len,
			      xshm_split_chunks(cases[i].len), cases[i].chunks);
}
END_TEST

/*
 * So that each side may copy half, a message of two chunks or more has an
 * even number of them, of equal size but the last, which falls short by
 * less than a chunk's rounding per chunk; sizes from just above one chunk
 * to 256 MiB.
 */
START_TEST(chunks_are_even_and_equal)
{
	for (size_t len = XSHM_SPLIT_CHUNK_MIN + 1; len <= ((size_t) 256 << 20);
	     len += len / 7 + 4093) {
		size_t size = xshm_split_chunk_size(len), n = xshm_split_chunks(len);
		size_t last = len - (n - 1) * size;

		ck_assert_msg(n % 2 == 0, "%zu bytes: %zu chunks", len, n);
		ck_assert_msg(size % XSHM_SPLIT_CHUNK_ALIGN == 0 &&
			      size <= XSHM_SPLIT_CHUNK_MAX,
			      "%zu bytes: chunks of %zu", len, size);
		ck_assert_msg(last + n * XSHM_SPLIT_CHUNK_ALIGN > size,
			      "%zu bytes: %zu chunks of %zu, the last %zu", len, n,
			      size, last);
	}
}
END_TEST

/* ---- waiting for the sender's chunks ---- */

START_TEST(the_spin_covers_a_few_of_this_sides_chunks_and_a_floor)
{
	uint64_t below_floor = XSHM_SPLIT_SPIN_MIN_NS / XSHM_SPLIT_SPIN_CHUNKS / 2;

	ck_assert_uint_eq(xshm_split_spin_ns(0), XSHM_SPLIT_SPIN_MIN_NS);
	ck_assert_uint_eq(xshm_split_spin_ns(below_floor), XSHM_SPLIT_SPIN_MIN_NS);
	ck_assert_uint_eq(xshm_split_spin_ns(1000000),
			  XSHM_SPLIT_SPIN_CHUNKS * 1000000ull);
}
END_TEST

/* A sender thread that pushes the chunk it claimed after a delay. */
struct late_push {
	struct xshm_split split;
	useconds_t delay_us;
	bool fails;
	_Atomic bool pushed;
};

static void *push_late(void *arg)
{
	struct late_push *late = arg;

	usleep(late->delay_us);
	atomic_store(&late->pushed, true);
	xshm_split_pushed(&late->split, late->fails);
	return NULL;
}

static struct xshm_owner self_owner(void)
{
	struct xshm_owner self = { .pid = getpid() };

	ck_assert_int_eq(xshm_proc_start_time(self.pid, &self.start_time), 0);
	return self;
}

/* Waits, as a receiver whose chunks took chunk_ns, for a late push. */
static int wait_for_late_push(uint64_t chunk_ns, bool fails)
{
	struct late_push late = { .delay_us = 2000, .fails = fails };
	pthread_t sender;
	int ret;

	xshm_split_start(&late.split, GEN);
	ck_assert_int_eq(xshm_split_claim(&late.split, GEN, 4, false), 3);
	ck_assert_int_eq(pthread_create(&sender, NULL, push_late, &late), 0);
	ret = xshm_split_wait_other(&late.split, GEN, self_owner(), chunk_ns);
	ck_assert_msg(atomic_load(&late.pushed),
		      "the wait ended before the sender pushed");
	ck_assert_int_eq(pthread_join(sender, NULL), 0);
	return ret;
}

/* chunk_ns 0: the wait yields at once; 1 s: it spins past the push. */
static const uint64_t wait_chunk_ns[] = { 0, 1000000000 };

START_TEST(the_wait_ends_once_the_claimed_chunk_is_pushed)
{
	ck_assert_int_eq(wait_for_late_push(wait_chunk_ns[_i], false), 0);
}
END_TEST

START_TEST(the_wait_reports_a_failed_push)
{
	ck_assert_int_eq(wait_for_late_push(wait_chunk_ns[_i], true), -EIO);
}
END_TEST

START_TEST(the_wait_gives_up_on_a_sender_that_is_gone)
{
	struct xshm_split split;
	struct xshm_owner gone = self_owner();

	gone.start_time++;	/* another process that had this pid */
	xshm_split_start(&split, GEN);
	ck_assert_int_eq(xshm_split_claim(&split, GEN, 4, false), 3);
	ck_assert_int_eq(xshm_split_wait_other(&split, GEN, gone, 0), -ESRCH);
}
END_TEST

/* ---- two processes claiming at once ---- */

#define RACE_GENS	2000
#define RACE_CHUNKS	64
#define SPINS_BEFORE_YIELD 4096	/* both sides spin: they claim at once */
#define SPINS_PER_CHECK	1024	/* between checks that the child lives */
#define COPY_SPINS	200	/* a chunk's copy, so that the claims overlap */

enum side { FRONT, BACK };

/* Shared by the parent (front, the receiver) and its child (back). */
struct race {
	struct xshm_split split;
	_Atomic uint32_t started;	/* the generation the parent started */
	_Atomic uint32_t child_ready;	/* the child claims it now */
	_Atomic uint32_t child_done;	/* the child's claims of it are recorded */
	size_t nclaimed[2];		/* by side, this generation */
	long claimed[2][RACE_CHUNKS];	/* by side, in claim order */
};

/* Whether child has exited, leaving it to be reaped. */
static bool exited(pid_t child)
{
	siginfo_t info = { 0 };

	return waitid(P_PID, (id_t) child, &info,
		      WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == child;
}

/* Waits for *word to say gen; false if child (when not 0) exits first. */
static bool wait_for(_Atomic uint32_t *word, uint32_t gen, pid_t child)
{
	for (unsigned long spins = 1;
	     atomic_load_explicit(word, memory_order_acquire) != gen; spins++) {
		if (spins < SPINS_BEFORE_YIELD)
			continue;
		sched_yield();
		if (child && spins % SPINS_PER_CHECK == 0 && exited(child))
			return atomic_load_explicit(word, memory_order_acquire) ==
			       gen;
	}
	return true;
}

static void copy_chunk(void)
{
	for (volatile int spin = 0; spin < COPY_SPINS; spin++)
		;
}

static void record_claim(struct race *race, enum side side, long chunk)
{
	size_t n = race->nclaimed[side]++;

	if (n < RACE_CHUNKS)
		race->claimed[side][n] = chunk;
}

/*
 * Claims chunks of gen from one side until none is left.  The front, in
 * odd generations, tries after each chunk to take the rest, as a receiver
 * does.
 */
static void claim_side(struct race *race, uint32_t gen, enum side side)
{
	bool takes_rest = side == FRONT && gen % 2;
	long chunk, rest;

	while ((chunk = xshm_split_claim(&race->split, gen, RACE_CHUNKS,
					 side == FRONT)) >= 0) {
		record_claim(race, side, chunk);
		copy_chunk();
		rest = takes_rest ? xshm_split_claim_rest(&race->split, gen,
							 RACE_CHUNKS) : -1;
		if (rest < 0)
			continue;
		while (rest < RACE_CHUNKS)
			record_claim(race, side, rest++);
		return;
	}
}

static int race_back(struct race *race)
{
	for (uint32_t gen = 1; gen <= RACE_GENS; gen++) {
		wait_for(&race->started, gen, 0);
		atomic_store_explicit(&race->child_ready, gen,
				      memory_order_release);
		claim_side(race, gen, BACK);
		atomic_store_explicit(&race->child_done, gen,
				      memory_order_release);
	}
	return 0;
}

/*
 * False, saying why, unless the generation's claims gave every chunk
 * exactly once and every back chunk is above every front chunk.
 */
static bool race_fair(const struct race *race, char *why, size_t size)
{
	unsigned times[RACE_CHUNKS] = { 0 };
	long top_front = -1, low_back = RACE_CHUNKS;

	if (race->nclaimed[FRONT] + race->nclaimed[BACK] != RACE_CHUNKS) {
		snprintf(why, size, "%zu front and %zu back claims",
			 race->nclaimed[FRONT], race->nclaimed[BACK]);
		return false;
	}
	for (enum side side = FRONT; side <= BACK; side++)
		for (size_t i = 0; i < race->nclaimed[side]; i++) {
			long chunk = race->claimed[side][i];

			if (chunk < 0 || chunk >= RACE_CHUNKS) {
				snprintf(why, size, "claimed chunk %ld", chunk);
				return false;
			}
			times[chunk]++;
			if (side == FRONT && chunk > top_front)
				top_front = chunk;
			if (side == BACK && chunk < low_back)
				low_back = chunk;
		}
	for (int chunk = 0; chunk < RACE_CHUNKS; chunk++)
		if (times[chunk] != 1) {
			snprintf(why, size, "chunk %d claimed %u times", chunk,
				 times[chunk]);
			return false;
		}
	if (top_front >= low_back) {
		snprintf(why, size, "front claimed up to %ld, back down to %ld",
			 top_front, low_back);
		return false;
	}
	return true;
}

START_TEST(front_and_back_in_two_processes_claim_every_chunk_once)
{
	struct race *race = mmap(NULL, sizeof(*race), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	size_t back_claims = 0;
	char why[128];
	pid_t child;
	int status;

	ck_assert_ptr_ne(race, MAP_FAILED);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(race_back(race));
	}
	for (uint32_t gen = 1; gen <= RACE_GENS; gen++) {
		race->nclaimed[FRONT] = race->nclaimed[BACK] = 0;
		xshm_split_start(&race->split, gen);
		atomic_store_explicit(&race->started, gen, memory_order_release);
		ck_assert_msg(wait_for(&race->child_ready, gen, child),
			      "the child exited in generation %u", gen);
		claim_side(race, gen, FRONT);
		ck_assert_msg(wait_for(&race->child_done, gen, child),
			      "the child exited in generation %u", gen);
		if (!race_fair(race, why, sizeof(why)))
			ck_abort_msg("generation %u: %s", gen, why);
		back_claims += race->nclaimed[BACK];
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child status 0x%x", status);
	ck_assert_msg(back_claims > 0, "the child claimed no chunk in %d "
		      "generations", RACE_GENS);
	munmap(race, sizeof(*race));
}
END_TEST

static Suite *split_suite(void)
{
	Suite *suite = suite_create("split");
	TCase *claims = tcase_create("claims");
	TCase *wait = tcase_create("wait");
	TCase *race = tcase_create("race");

	tcase_set_timeout(claims, TEST_TIMEOUT);
	tcase_add_loop_test(claims,
			    front_and_back_claims_meet_handing_out_every_chunk_once,
			    0, N(meet_nchunks));
	tcase_add_test(claims, a_claim_of_another_generation_fails);
	tcase_add_test(claims,
		       a_new_generation_restarts_the_claims_and_fails_the_old_ones);
	tcase_add_test(claims, more_chunks_than_the_word_counts_are_refused);
	tcase_add_test(claims,
		       the_rest_goes_to_the_front_while_the_back_has_claimed_nothing);
	tcase_add_test(claims, no_rest_once_the_back_has_claimed);
	tcase_add_test(claims, no_rest_of_another_generation_or_of_too_many_chunks);
	tcase_add_test(claims, sender_done_with_nothing_claimed_from_the_back);
	tcase_add_test(claims, sender_done_once_every_back_claim_is_pushed);
	tcase_add_test(claims, a_failed_push_is_reported_and_still_counted);
	tcase_add_test(claims,
		       sender_done_for_another_generation_is_done_and_failed);
	tcase_add_test(claims, chunk_size_is_a_quarter_within_bounds);
	tcase_add_test(claims, chunks_are_even_and_equal);
	tcase_add_test(claims, chunks_round_up);
	suite_add_tcase(suite, claims);

	tcase_set_timeout(wait, TEST_TIMEOUT);
	tcase_add_test(wait, the_spin_covers_a_few_of_this_sides_chunks_and_a_floor);
	tcase_add_loop_test(wait, the_wait_ends_once_the_claimed_chunk_is_pushed,
			    0, N(wait_chunk_ns));
	tcase_add_loop_test(wait, the_wait_reports_a_failed_push, 0,
			    N(wait_chunk_ns));
	tcase_add_test(wait, the_wait_gives_up_on_a_sender_that_is_gone);
	suite_add_tcase(suite, wait);

	tcase_set_timeout(race, TEST_TIMEOUT);
	tcase_add_test(race, front_and_back_in_two_processes_claim_every_chunk_once);
	suite_add_tcase(suite, race);
	return suite;
}

int main(void)
{
	return test_run_suite(split_suite());
}
