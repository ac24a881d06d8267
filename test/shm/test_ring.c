/* Unit tests of shm/ring.c: geometry, reserve/commit/peek/release, stall reaping. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ep_ids.h"
#include "shm/ring.h"

#define TEST_TIMEOUT		60
#define STRESS_PRODUCERS	4
#define STRESS_ITEMS		200000
#define STRESS_CELLS		1024
/* A consumer waiting this long for the next item declares items lost. */
#define STALL_SECONDS		10

/* What the stress tests carry after the cell's sequence number. */
struct item {
	uint32_t producer;
	uint32_t pad;
	uint64_t seq;
};

struct item_cell {
	struct xshm_cell_seq hdr;	/* owned by ring.c */
	struct item item;
	_Atomic uint64_t claim;		/* owned by ring.c: a cell's last bytes */
};

/* Plain calls keep check's failure messages readable. */
static uint64_t load_u64(_Atomic uint64_t *p) { return atomic_load(p); }

static struct xshm_ring *ring_alloc(uint32_t ncells, uint32_t cell_size)
{
	size_t bytes = xshm_ring_bytes(ncells, cell_size);
	struct xshm_ring *ring;

	ring = aligned_alloc(XSHM_CACHE_LINE,
			     (bytes + XSHM_CACHE_LINE - 1) & ~(size_t) (XSHM_CACHE_LINE - 1));
	ck_assert_ptr_nonnull(ring);
	xshm_ring_init(ring, ncells, cell_size);
	return ring;
}

static struct xshm_ring *ring_new(struct xshm_ring_ref *ref, uint32_t ncells,
				  uint32_t cell_size)
{
	struct xshm_ring *ring = ring_alloc(ncells, cell_size);

	ck_assert_int_eq(xshm_ring_attach(ref, ring,
					  xshm_ring_bytes(ncells, cell_size)), 0);
	return ring;
}

static void put_item(const struct xshm_ring_ref *ref, uint32_t producer,
		     uint64_t seq)
{
	struct item_cell *cell;
	uint64_t pos;

	while (!(cell = xshm_ring_reserve(ref, &pos)))
		sched_yield();
	cell->item.producer = producer;
	cell->item.seq = seq;
	xshm_ring_commit(ref, cell, pos);
}

/* Call while waiting; true once the wait has lasted STALL_SECONDS. */
static int stalled(uint64_t *spins, time_t *since)
{
	if ((*spins)++ == 0)
		*since = time(NULL);
	return *spins % 1024 == 0 && time(NULL) - *since > STALL_SECONDS;
}

static struct item take_item(const struct xshm_ring_ref *ref)
{
	struct item_cell *cell;
	struct item item;
	uint64_t spins = 0;
	time_t since;

	while (!(cell = xshm_ring_peek(ref))) {
		if (stalled(&spins, &since))
			ck_abort_msg("no item for %d s: lost", STALL_SECONDS);
		sched_yield();
	}
	item = cell->item;
	xshm_ring_release(ref, cell);
	return item;
}

START_TEST(init_attach)
{
	struct xshm_ring_ref ref;
	struct xshm_ring *ring = ring_new(&ref, 64, 256);

	ck_assert_ptr_eq(ref.ring, ring);
	ck_assert_uint_eq(ref.mask, 63);
	ck_assert_uint_eq(ref.cell_size, 256);
	ck_assert_uint_eq(xshm_ring_bytes(64, 256),
			  offsetof(struct xshm_ring, cells) + 64 * 256);
	ck_assert_uint_eq(load_u64(&ring->head), 0);
	ck_assert_uint_eq(load_u64(&ring->tail), 0);
	free(ring);
}
END_TEST

START_TEST(reserve_until_full)
{
	struct xshm_ring_ref ref;
	struct xshm_ring *ring = ring_new(&ref, 8, 32);
	void *cells[8], *cell;
	uint64_t pos[8], next;
	int i;

	for (i = 0; i < 8; i++) {
		cells[i] = xshm_ring_reserve(&ref, &pos[i]);
		ck_assert_ptr_nonnull(cells[i]);
		ck_assert_uint_eq(pos[i], i);
	}
	ck_assert_ptr_null(xshm_ring_reserve(&ref, &next));
	/* Reserved but uncommitted cells are invisible to the consumer. */
	ck_assert_ptr_null(xshm_ring_peek(&ref));
	for (i = 0; i < 8; i++)
		xshm_ring_commit(&ref, cells[i], pos[i]);
	ck_assert_ptr_null(xshm_ring_reserve(&ref, &next));
	cell = xshm_ring_peek(&ref);
	ck_assert_ptr_eq(cell, cells[0]);
	xshm_ring_release(&ref, cell);
	ck_assert_ptr_eq(xshm_ring_reserve(&ref, &next), cells[0]);
	ck_assert_uint_eq(next, 8);
	ck_assert_ptr_null(xshm_ring_reserve(&ref, &next));
	free(ring);
}
END_TEST

START_TEST(peek_empty)
{
	struct xshm_ring_ref ref;
	struct xshm_ring *ring = ring_new(&ref, 4, sizeof(struct item_cell));

	ck_assert_ptr_null(xshm_ring_peek(&ref));
	put_item(&ref, 0, 0);
	ck_assert_ptr_nonnull(xshm_ring_peek(&ref));
	take_item(&ref);
	ck_assert_ptr_null(xshm_ring_peek(&ref));
	free(ring);
}
END_TEST

START_TEST(fifo_single_producer)
{
	struct xshm_ring_ref ref;
	struct xshm_ring *ring = ring_new(&ref, 16, sizeof(struct item_cell));
	uint64_t i;

	for (i = 0; i < 16; i++)
		put_item(&ref, 7, i * 3);
	for (i = 0; i < 16; i++) {
		struct item item = take_item(&ref);

		ck_assert_uint_eq(item.producer, 7);
		ck_assert_uint_eq(item.seq, i * 3);
	}
	ck_assert_ptr_null(xshm_ring_peek(&ref));
	free(ring);
}
END_TEST

START_TEST(wraparound)
{
	struct xshm_ring_ref ref;
	struct xshm_ring *ring = ring_new(&ref, 4, sizeof(struct item_cell));
	uint64_t next_put = 0, next_take = 0, pos;
	int round, k;

	for (round = 0; round < 10000; round++) {
		int batch = 1 + round % 4;

		for (k = 0; k < batch; k++)
			put_item(&ref, 1, next_put++);
		if (batch == 4)
			ck_assert_ptr_null(xshm_ring_reserve(&ref, &pos));
		for (k = 0; k < batch; k++)
			ck_assert_uint_eq(take_item(&ref).seq, next_take++);
		ck_assert_ptr_null(xshm_ring_peek(&ref));
	}
	ck_assert_uint_eq(load_u64(&ring->tail), next_put);
	ck_assert_uint_eq(load_u64(&ring->head), next_put);
	free(ring);
}
END_TEST

static int attach_geometry(uint32_t ncells, uint32_t cell_size, size_t avail)
{
	struct xshm_ring_ref ref;
	struct xshm_ring *ring = ring_alloc(4, 64);
	int ret;

	ring->ncells = ncells;
	ring->cell_size = cell_size;
	ret = xshm_ring_attach(&ref, ring, avail);
	free(ring);
	return ret;
}

START_TEST(attach_rejects_bad_geometry)
{
	size_t exact = xshm_ring_bytes(4, 64);

	ck_assert_int_eq(attach_geometry(4, 64, exact), 0);
	ck_assert_int_eq(attach_geometry(4, 64, exact - 1), -EPROTO);
	ck_assert_int_eq(attach_geometry(0, 64, exact), -EPROTO);
	ck_assert_int_eq(attach_geometry(3, 64, exact), -EPROTO);
	ck_assert_int_eq(attach_geometry(6, 16, exact), -EPROTO);
	ck_assert_int_eq(attach_geometry(4, 8, exact), -EPROTO);
	ck_assert_int_eq(attach_geometry(4, 0, exact), -EPROTO);
	ck_assert_int_eq(attach_geometry(4, 20, exact), -EPROTO);
	ck_assert_int_eq(attach_geometry(1u << 31, 64, exact), -EPROTO);
	ck_assert_int_eq(attach_geometry(1u << 31, 1u << 31, (size_t) 1 << 40),
			 -EPROTO);
	ck_assert_int_eq(attach_geometry(4, 64, 0), -EPROTO);
}
END_TEST

START_TEST(attach_rejects_misaligned)
{
	struct xshm_ring_ref ref;
	struct xshm_ring *good = ring_alloc(4, 16);
	size_t bytes = xshm_ring_bytes(4, 16);
	unsigned char *mem = aligned_alloc(XSHM_CACHE_LINE, 2 * bytes);

	/* A valid ring, but at an address its atomics cannot live at. */
	ck_assert_ptr_nonnull(mem);
	memcpy(mem + 8, good, bytes);
	ck_assert_int_eq(xshm_ring_attach(&ref, (struct xshm_ring *) (mem + 8),
					  bytes), -EPROTO);
	ck_assert_int_eq(xshm_ring_attach(&ref, good, bytes), 0);
	free(mem);
	free(good);
}
END_TEST

/* Consume n items from nproducers and check per-producer order and totals. */
static void consume_and_check(const struct xshm_ring_ref *ref, int nproducers,
			      uint64_t per_producer)
{
	uint64_t expected[STRESS_PRODUCERS] = { 0 };
	uint64_t total = (uint64_t) nproducers * per_producer, n;

	for (n = 0; n < total; n++) {
		struct item item = take_item(ref);

		ck_assert_uint_lt(item.producer, (uint64_t) nproducers);
		if (item.seq != expected[item.producer])
			ck_abort_msg("producer %u: got %llu, expected %llu",
				     item.producer,
				     (unsigned long long) item.seq,
				     (unsigned long long) expected[item.producer]);
		expected[item.producer]++;
	}
	for (n = 0; n < (uint64_t) nproducers; n++)
		ck_assert_uint_eq(expected[n], per_producer);
	ck_assert_ptr_null(xshm_ring_peek(ref));
}

struct producer_arg {
	const struct xshm_ring_ref *ref;
	uint32_t id;
};

static void produce(const struct xshm_ring_ref *ref, uint32_t id)
{
	uint64_t i;

	for (i = 0; i < STRESS_ITEMS; i++)
		put_item(ref, id, i);
}

static void *producer_thread(void *arg)
{
	struct producer_arg *producer = arg;

	produce(producer->ref, producer->id);
	return NULL;
}

START_TEST(stress_threads)
{
	struct producer_arg args[STRESS_PRODUCERS];
	pthread_t threads[STRESS_PRODUCERS];
	struct xshm_ring_ref ref;
	struct xshm_ring *ring;
	int i;

	ring = ring_new(&ref, STRESS_CELLS, sizeof(struct item_cell));
	for (i = 0; i < STRESS_PRODUCERS; i++) {
		args[i].ref = &ref;
		args[i].id = i;
		ck_assert_int_eq(pthread_create(&threads[i], NULL,
						producer_thread, &args[i]), 0);
	}
	consume_and_check(&ref, STRESS_PRODUCERS, STRESS_ITEMS);
	for (i = 0; i < STRESS_PRODUCERS; i++)
		pthread_join(threads[i], NULL);
	free(ring);
}
END_TEST

START_TEST(stress_processes)
{
	size_t bytes = xshm_ring_bytes(STRESS_CELLS, sizeof(struct item_cell));
	pid_t pids[STRESS_PRODUCERS];
	struct xshm_ring_ref ref;
	struct xshm_ring *ring;
	int i, status;

	ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(ring, MAP_FAILED);
	xshm_ring_init(ring, STRESS_CELLS, sizeof(struct item_cell));
	ck_assert_int_eq(xshm_ring_attach(&ref, ring, bytes), 0);
	for (i = 0; i < STRESS_PRODUCERS; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			/* Do not spin forever on a full ring if we fail. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			produce(&ref, i);
			_exit(0);
		}
	}
	consume_and_check(&ref, STRESS_PRODUCERS, STRESS_ITEMS);
	for (i = 0; i < STRESS_PRODUCERS; i++) {
		ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	munmap(ring, bytes);
}
END_TEST

/* ---- stall reaping: producers that die holding a cell ---- */

#define T0		1000000000ULL	/* an arbitrary now_ns */

static struct xshm_ring *shared_ring(struct xshm_ring_ref *ref, uint32_t ncells)
{
	size_t bytes = xshm_ring_bytes(ncells, sizeof(struct item_cell));
	struct xshm_ring *ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(ring, MAP_FAILED);
	xshm_ring_init(ring, ncells, sizeof(struct item_cell));
	ck_assert_int_eq(xshm_ring_attach(ref, ring, bytes), 0);
	return ring;
}

static void shared_ring_free(struct xshm_ring *ring, uint32_t ncells)
{
	munmap(ring, xshm_ring_bytes(ncells, sizeof(struct item_cell)));
}

enum death { DIE_SIGKILL, DIE_EXIT, DIE_EXIT_UNCLAIMED };

static void die(enum death how, struct item_cell *cell)
{
	if (how == DIE_EXIT_UNCLAIMED)	/* as if before storing its claim */
		atomic_store(&cell->claim, 0);
	if (how == DIE_SIGKILL)
		raise(SIGKILL);
	_exit(0);
}

/* A child that reserves a cell and dies holding it. */
static void child_dies_holding(const struct xshm_ring_ref *ref,
			       enum death how)
{
	pid_t child = fork();
	int status;

	ck_assert_int_ge(child, 0);
	if (child == 0) {
		uint64_t pos;
		struct item_cell *cell = xshm_ring_reserve(ref, &pos);

		if (!cell)
			_exit(3);
		cell->item.seq = 999;
		die(how, cell);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(how == DIE_SIGKILL ? WIFSIGNALED(status) :
		  WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The consumer is stuck at the dead producer's cell until it reaps it. */
static void check_reaped_in_order(enum death how)
{
	struct xshm_ring_stall stall = { 0 };
	struct xshm_ring_ref ref;
	struct xshm_ring *ring = shared_ring(&ref, 8);
	uint64_t i, now = T0;

	put_item(&ref, 0, 0);
	child_dies_holding(&ref, how);
	put_item(&ref, 0, 1);
	put_item(&ref, 0, 2);
	ck_assert_uint_eq(take_item(&ref).seq, 0);
	ck_assert_ptr_null(xshm_ring_peek(&ref));
	if (how == DIE_EXIT_UNCLAIMED) {
		/* No claim: only a stall of XSHM_RING_STALL_NS counts. */
		ck_assert_int_eq(xshm_ring_reap_stalled(&ref, &stall, now), 0);
		now += XSHM_RING_STALL_NS - 1;
		ck_assert_int_eq(xshm_ring_reap_stalled(&ref, &stall, now), 0);
		now++;
	}
	ck_assert_int_eq(xshm_ring_reap_stalled(&ref, &stall, now), 1);
	ck_assert_uint_eq(take_item(&ref).seq, 1);
	ck_assert_uint_eq(take_item(&ref).seq, 2);
	ck_assert_ptr_null(xshm_ring_peek(&ref));
	ck_assert_int_eq(xshm_ring_reap_stalled(&ref, &stall, now), 0);
	/* Every cell, the skipped one too, works on later laps. */
	for (i = 0; i < 20; i++) {
		put_item(&ref, 0, 100 + i);
		ck_assert_uint_eq(take_item(&ref).seq, 100 + i);
	}
	for (i = 0; i < 8; i++)
		put_item(&ref, 0, 200 + i);
	for (i = 0; i < 8; i++)
		ck_assert_uint_eq(take_item(&ref).seq, 200 + i);
	shared_ring_free(ring, 8);
}

START_TEST(reap_killed_producer)
{
	check_reaped_in_order(DIE_SIGKILL);
}
END_TEST

START_TEST(reap_exited_producer)
{
	check_reaped_in_order(DIE_EXIT);
}
END_TEST

START_TEST(reap_unclaimed_after_stall)
{
	check_reaped_in_order(DIE_EXIT_UNCLAIMED);
}
END_TEST

/* A producer killed holding a run of cells: each cell is skipped at once. */
START_TEST(reap_killed_run_holder)
{
	struct xshm_ring_stall stall = { 0 };
	struct xshm_ring_ref ref;
	struct xshm_ring *ring = shared_ring(&ref, 16);
	pid_t child = fork();
	int status, reaped = 0;

	ck_assert_int_ge(child, 0);
	if (child == 0) {
		uint64_t pos;

		if (xshm_ring_reserve_n(&ref, 3, &pos))
			_exit(3);
		raise(SIGKILL);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFSIGNALED(status));
	put_item(&ref, 0, 7);
	while (xshm_ring_reap_stalled(&ref, &stall, T0) == 1)
		reaped++;
	ck_assert_int_eq(reaped, 3);
	ck_assert_uint_eq(take_item(&ref).seq, 7);
	ck_assert_ptr_null(xshm_ring_peek(&ref));
	shared_ring_free(ring, 16);
}
END_TEST

/* A live claimant is never robbed, however long it takes. */
START_TEST(live_producer_kept)
{
	struct xshm_ring_stall stall = { 0 };
	struct xshm_ring_ref ref;
	struct xshm_ring *ring = ring_new(&ref, 4, sizeof(struct item_cell));
	struct item_cell *cell;
	uint64_t pos;

	cell = xshm_ring_reserve(&ref, &pos);
	ck_assert_ptr_nonnull(cell);
	ck_assert_int_eq(xshm_ring_reap_stalled(&ref, &stall, T0), 0);
	ck_assert_int_eq(xshm_ring_reap_stalled(&ref, &stall,
						T0 + 100 * XSHM_RING_STALL_NS), 0);
	cell->item.seq = 5;
	xshm_ring_commit(&ref, cell, pos);
	ck_assert_uint_eq(take_item(&ref).seq, 5);
	free(ring);
}
END_TEST

/*
 * Robberies racing claims: producers push single cells and runs while the
 * consumer, whenever the head cell is not published, reaps as if every
 * poll were a stall of XSHM_RING_STALL_NS later.  A producer preempted
 * between winning its position and claiming it is robbed; it then takes
 * another position, and what it pushes arrives once and in order.  Cells
 * a run published empty (producer 0) are dropped.
 */
#define ROB_PRODUCERS	3
#define ROB_ITEMS	30000
#define ROB_CELLS	16

static void put_run(const struct xshm_ring_ref *ref, uint32_t producer,
		    uint64_t seq)
{
	struct item_cell *first, *second;
	uint64_t pos;

	while (xshm_ring_reserve_n(ref, 2, &pos))
		sched_yield();
	first = xshm_ring_cell(ref, pos);
	second = xshm_ring_cell(ref, pos + 1);
	first->item = (struct item) { .producer = producer, .seq = seq };
	second->item = (struct item) { .producer = producer, .seq = seq + 1 };
	xshm_ring_commit(ref, second, pos + 1);
	xshm_ring_commit(ref, first, pos);
}

static void *rob_producer(void *arg)
{
	struct producer_arg *producer = arg;

	for (uint64_t i = 0; i < ROB_ITEMS;) {
		if (i % 8 == 7 && i + 1 < ROB_ITEMS) {
			put_run(producer->ref, producer->id, i);
			i += 2;
		} else {
			put_item(producer->ref, producer->id, i++);
		}
	}
	return NULL;
}

START_TEST(robberies_race_claims)
{
	struct producer_arg args[ROB_PRODUCERS];
	pthread_t threads[ROB_PRODUCERS];
	uint64_t expected[ROB_PRODUCERS + 1] = { 0 };
	struct xshm_ring_stall stall = { 0 };
	struct xshm_ring_ref ref;
	struct xshm_ring *ring = ring_new(&ref, ROB_CELLS,
					  sizeof(struct item_cell));
	uint64_t now = T0, left = (uint64_t) ROB_PRODUCERS * ROB_ITEMS;
	uint64_t spins = 0;
	time_t since;

	for (int i = 0; i < ROB_PRODUCERS; i++) {
		args[i].ref = &ref;
		args[i].id = (uint32_t) i + 1;
		ck_assert_int_eq(pthread_create(&threads[i], NULL, rob_producer,
						&args[i]), 0);
	}
	while (left) {
		struct item_cell *cell = xshm_ring_peek(&ref);
		struct item item;

		if (!cell) {
			if (stalled(&spins, &since))
				ck_abort_msg("no item for %d s: lost", STALL_SECONDS);
			xshm_ring_reap_stalled(&ref, &stall, now);
			now += XSHM_RING_STALL_NS;
			continue;
		}
		spins = 0;
		item = cell->item;
		xshm_ring_release(&ref, cell);
		if (!item.producer)
			continue;
		ck_assert_uint_le(item.producer, ROB_PRODUCERS);
		if (item.seq != expected[item.producer])
			ck_abort_msg("producer %u: got %llu, expected %llu",
				     item.producer, (unsigned long long) item.seq,
				     (unsigned long long) expected[item.producer]);
		expected[item.producer]++;
		left--;
	}
	for (int i = 0; i < ROB_PRODUCERS; i++)
		pthread_join(threads[i], NULL);
	ck_assert_ptr_null(xshm_ring_peek(&ref));
	free(ring);
}
END_TEST

/* A run of cells claimed at once, committed last-first, consumed as one. */
START_TEST(reserve_n_claims_a_run)
{
	struct xshm_ring_ref ref;
	struct xshm_ring *ring = ring_new(&ref, 16, 32);
	uint64_t first, pos, next;

	ck_assert_ptr_nonnull(xshm_ring_reserve(&ref, &first));
	ck_assert_uint_eq(first, 0);
	ck_assert_int_eq(xshm_ring_reserve_n(&ref, 4, &pos), 0);
	ck_assert_uint_eq(pos, 1);
	ck_assert_int_eq(xshm_ring_reserve_n(&ref, 2, &next), 0);
	ck_assert_uint_eq(next, 5);
	ck_assert_uint_eq(load_u64(&ring->tail), 7);

	xshm_ring_commit(&ref, xshm_ring_cell(&ref, 0), 0);
	ck_assert_ptr_null(xshm_ring_peek_at(&ref, 1));
	for (int i = 3; i >= 0; i--)
		xshm_ring_commit(&ref, xshm_ring_cell(&ref, pos + (uint64_t) i),
				 pos + (uint64_t) i);
	ck_assert_ptr_nonnull(xshm_ring_peek(&ref));
	xshm_ring_release_n(&ref, 1);
	for (uint32_t i = 0; i < 4; i++)
		ck_assert_ptr_eq(xshm_ring_peek_at(&ref, i), xshm_ring_cell(&ref, pos + i));
	ck_assert_ptr_null(xshm_ring_peek_at(&ref, 4));	/* reserved, not committed */
	xshm_ring_release_n(&ref, 4);
	ck_assert_uint_eq(load_u64(&ring->head), 5);
	ck_assert_ptr_null(xshm_ring_peek(&ref));
	free(ring);
}
END_TEST

START_TEST(reserve_n_needs_the_whole_run_free)
{
	struct xshm_ring_ref ref;
	struct xshm_ring *ring = ring_new(&ref, 16, 32);
	uint64_t pos;

	ck_assert_int_eq(xshm_ring_reserve_n(&ref, 0, &pos), -EINVAL);
	ck_assert_int_eq(xshm_ring_reserve_n(&ref, 5, &pos), -EINVAL);	/* > ncells / 4 */
	for (int i = 0; i < 13; i++)
		ck_assert_ptr_nonnull(xshm_ring_reserve(&ref, &pos));
	ck_assert_int_eq(xshm_ring_reserve_n(&ref, 4, &pos), -EAGAIN);
	ck_assert_uint_eq(load_u64(&ring->tail), 13);	/* nothing claimed */
	ck_assert_int_eq(xshm_ring_reserve_n(&ref, 3, &pos), 0);
	ck_assert_uint_eq(pos, 13);
	ck_assert_int_eq(xshm_ring_reserve_n(&ref, 1, &pos), -EAGAIN);

	/* Wrapping: free the first cells, and a run crosses the array's end. */
	for (uint64_t i = 0; i < 16; i++)
		xshm_ring_commit(&ref, xshm_ring_cell(&ref, i), i);
	xshm_ring_release_n(&ref, 3);
	ck_assert_int_eq(xshm_ring_reserve_n(&ref, 3, &pos), 0);
	ck_assert_uint_eq(pos, 16);
	ck_assert_ptr_eq(xshm_ring_cell(&ref, pos), xshm_ring_cell(&ref, 0));
	free(ring);
}
END_TEST

/*
 * Warming is a hint to the cache only: across cells and the ring's end, it
 * changes no byte of the ring, published cells included.
 */
START_TEST(warm_changes_nothing)
{
	struct xshm_ring_ref ref;
	struct xshm_ring *ring = ring_new(&ref, 16, 256);
	size_t bytes = xshm_ring_bytes(16, 256);
	unsigned char *before = malloc(bytes);
	uint64_t pos;

	ck_assert_ptr_nonnull(before);
	for (int i = 0; i < 14; i++) {
		unsigned char *cell = xshm_ring_reserve(&ref, &pos);

		ck_assert_ptr_nonnull(cell);
		memset(cell + sizeof(struct xshm_cell_seq), 0xa0 + i,
		       256 - sizeof(struct xshm_cell_seq) - XSHM_CELL_CLAIM_SIZE);
		xshm_ring_commit(&ref, cell, pos);
	}
	memcpy(before, ring, bytes);
	xshm_ring_warm(&ref, 3 * 256);	/* from the tail: cells 14, 15 and 0 */
	xshm_ring_warm(&ref, 16 * 256);
	xshm_ring_warm(&ref, 65);
	ck_assert_int_eq(memcmp(before, ring, bytes), 0);
	ck_assert_ptr_eq(xshm_ring_peek(&ref), xshm_ring_cell(&ref, 0));
	free(before);
	free(ring);
}
END_TEST

static Suite *ring_suite(void)
{
	Suite *suite = suite_create("ring");
	TCase *basic = tcase_create("basic");
	TCase *stress = tcase_create("stress");

	tcase_set_timeout(basic, TEST_TIMEOUT);
	tcase_add_test(basic, init_attach);
	tcase_add_test(basic, reserve_until_full);
	tcase_add_test(basic, peek_empty);
	tcase_add_test(basic, fifo_single_producer);
	tcase_add_test(basic, wraparound);
	tcase_add_test(basic, attach_rejects_bad_geometry);
	tcase_add_test(basic, attach_rejects_misaligned);
	tcase_add_test(basic, reserve_n_claims_a_run);
	tcase_add_test(basic, reserve_n_needs_the_whole_run_free);
	tcase_add_test(basic, warm_changes_nothing);
	tcase_add_test(basic, reap_killed_producer);
	tcase_add_test(basic, reap_killed_run_holder);
	tcase_add_test(basic, reap_exited_producer);
	tcase_add_test(basic, reap_unclaimed_after_stall);
	tcase_add_test(basic, live_producer_kept);
	tcase_add_test(basic, robberies_race_claims);
	suite_add_tcase(suite, basic);

	tcase_set_timeout(stress, TEST_TIMEOUT);
	tcase_add_test(stress, stress_threads);
	tcase_add_test(stress, stress_processes);
	suite_add_tcase(suite, stress);
	return suite;
}

int main(void)
{
	return test_run_suite(ring_suite());
}
