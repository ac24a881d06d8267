/* Unit tests of shm/pool.c: allocation, bounds, concurrency, validation. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ep_ids.h"
#include "shm/pool.h"

#define TEST_TIMEOUT	60
#define NBUFS		100	/* not a power of two on purpose */
#define BUF_SIZE	128
#define STRESS_THREADS	4
#define STRESS_ROUNDS	100000
#define STRESS_BUFS	8
#define OWNER		0x1234	/* the borrowing endpoint's id */

struct test_pool {
	struct xshm_pool *pool;
	size_t bytes;
	struct xshm_pool_ref ref;
};

/* A plain call keeps check's failure messages readable. */
static int load_int(_Atomic int *p) { return atomic_load(p); }

static void pool_new(struct test_pool *tp, uint32_t nbufs, uint32_t buf_size)
{
	tp->bytes = xshm_pool_bytes(nbufs, buf_size);
	tp->pool = aligned_alloc(XSHM_CACHE_LINE,
				 (tp->bytes + XSHM_CACHE_LINE - 1) &
				 ~(size_t) (XSHM_CACHE_LINE - 1));
	ck_assert_ptr_nonnull(tp->pool);
	xshm_pool_init(tp->pool, nbufs, buf_size);
	ck_assert_int_eq(xshm_pool_attach(&tp->ref, tp->pool, tp->bytes), 0);
}

START_TEST(alloc_all_once)
{
	unsigned char seen[NBUFS] = { 0 };
	struct test_pool tp;
	uint32_t index;
	int i;

	pool_new(&tp, NBUFS, BUF_SIZE);
	ck_assert_uint_eq(tp.ref.nbufs, NBUFS);
	ck_assert_uint_eq(tp.ref.buf_size, BUF_SIZE);
	for (i = 0; i < NBUFS; i++) {
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &index), 0);
		ck_assert_uint_lt(index, NBUFS);
		ck_assert_uint_eq(seen[index], 0);
		seen[index] = 1;
	}
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &index), -EAGAIN);
	free(tp.pool);
}
END_TEST

START_TEST(free_and_realloc)
{
	uint32_t index, got[3], freed[3] = { 5, 77, 0 };
	struct test_pool tp;
	int i, j;

	pool_new(&tp, NBUFS, BUF_SIZE);
	for (i = 0; i < NBUFS; i++)
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &index), 0);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(xshm_pool_free(&tp.ref, freed[i], OWNER), 0);
	/* Out-of-range frees are refused, not queued. */
	ck_assert_int_eq(xshm_pool_free(&tp.ref, NBUFS, OWNER), -EINVAL);
	ck_assert_int_eq(xshm_pool_free(&tp.ref, UINT32_MAX, OWNER), -EINVAL);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &got[i]), 0);
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &index), -EAGAIN);
	for (i = 0; i < 3; i++) {
		int found = 0;

		for (j = 0; j < 3; j++)
			found += got[j] == freed[i];
		ck_assert_int_eq(found, 1);
	}
	/* Many cycles through the free queue. */
	for (i = 0; i < 1000; i++) {
		ck_assert_int_eq(xshm_pool_free(&tp.ref, got[i % 3], OWNER), 0);
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &got[i % 3]), 0);
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &index), -EAGAIN);
	}
	free(tp.pool);
}
END_TEST

START_TEST(buf_bounds)
{
	unsigned char *base, *last;
	struct test_pool tp;
	uint32_t i, index;

	pool_new(&tp, NBUFS, BUF_SIZE);
	base = xshm_pool_buf(&tp.ref, 0);
	last = xshm_pool_buf(&tp.ref, NBUFS - 1);
	ck_assert_ptr_nonnull(base);
	ck_assert_ptr_nonnull(last);
	ck_assert_uint_eq((uintptr_t) base % XSHM_CACHE_LINE, 0);
	ck_assert(base > (unsigned char *) tp.pool);
	ck_assert(last + BUF_SIZE <= (unsigned char *) tp.pool + tp.bytes);
	for (i = 1; i < NBUFS; i++)
		ck_assert_ptr_eq(xshm_pool_buf(&tp.ref, i),
				 base + (size_t) i * BUF_SIZE);
	ck_assert_ptr_null(xshm_pool_buf(&tp.ref, NBUFS));
	ck_assert_ptr_null(xshm_pool_buf(&tp.ref, UINT32_MAX));
	/* Writing every buffer whole must leave the free queue intact. */
	memset(base, 0xa5, (size_t) NBUFS * BUF_SIZE);
	for (i = 0; i < NBUFS; i++)
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &index), 0);
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &index), -EAGAIN);
	free(tp.pool);
}
END_TEST

struct stress_shared {
	struct xshm_pool_ref *ref;
	_Atomic unsigned char owned[STRESS_BUFS];
	_Atomic int errors;
};

/*
 * Frees and the owner's reaping are the region owner's, one at a time (the
 * provider holds them in its progress): here a lock stands for that owner.
 * A free that found the queue's next cell still held by a half-way popper
 * leaves its index PENDING for the reaper, and slow schedules
 * (ThreadSanitizer, two cores) make that common.
 */
static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xshm_pool_reaper owner_reaper;

static void owner_reap(const struct xshm_pool_ref *ref)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&owner_lock);
	xshm_pool_reap_stalled(ref, &owner_reaper,
			       (uint64_t) now.tv_sec * 1000000000ULL +
			       (uint64_t) now.tv_nsec);
	pthread_mutex_unlock(&owner_lock);
}

static int owner_free(const struct xshm_pool_ref *ref, uint32_t index,
		      uint64_t owner)
{
	int ret;

	pthread_mutex_lock(&owner_lock);
	ret = xshm_pool_free(ref, index, owner);
	pthread_mutex_unlock(&owner_lock);
	return ret;
}

struct stress_arg {
	struct stress_shared *shared;
	unsigned char id;
};

static uint32_t alloc_retry(const struct xshm_pool_ref *ref, uint64_t owner)
{
	uint32_t index;
	int ret;

	while ((ret = xshm_pool_alloc(ref, owner, &index)) == -EAGAIN) {
		owner_reap(ref);
		sched_yield();
	}
	return ret ? UINT32_MAX : index;
}

/* Take ownership of a freshly allocated buffer and scribble on it. */
static int claim_buf(struct stress_shared *shared, uint32_t index,
		     unsigned char id)
{
	unsigned char *buf = xshm_pool_buf(shared->ref, index);

	if (!buf || atomic_exchange(&shared->owned[index], 1) != 0)
		return -1;
	memset(buf, id, BUF_SIZE);
	return 0;
}

static int return_buf(struct stress_shared *shared, uint32_t index,
		      unsigned char id)
{
	unsigned char *buf = xshm_pool_buf(shared->ref, index);
	int i, bad = 0;

	for (i = 0; i < BUF_SIZE; i++)
		bad |= buf[i] != id;
	atomic_store(&shared->owned[index], 0);
	if (owner_free(shared->ref, index, id))
		return -1;
	return bad ? -1 : 0;
}

static void *stress_thread(void *arg)
{
	struct stress_arg *self = arg;
	struct stress_shared *shared = self->shared;
	uint32_t held[2];
	int round, k;

	for (round = 0; round < STRESS_ROUNDS; round++) {
		int nheld = 1 + round % 2;

		for (k = 0; k < nheld; k++) {
			held[k] = alloc_retry(shared->ref, self->id);
			if (claim_buf(shared, held[k], self->id))
				goto error;
		}
		for (k = 0; k < nheld; k++)
			if (return_buf(shared, held[k], self->id))
				goto error;
	}
	return NULL;
error:
	atomic_fetch_add(&shared->errors, 1);
	return NULL;
}

START_TEST(concurrent_alloc_free)
{
	struct stress_arg args[STRESS_THREADS];
	pthread_t threads[STRESS_THREADS];
	struct stress_shared shared = { 0 };
	unsigned char seen[STRESS_BUFS] = { 0 };
	struct test_pool tp;
	uint32_t index;
	int i;

	pool_new(&tp, STRESS_BUFS, BUF_SIZE);
	shared.ref = &tp.ref;
	for (i = 0; i < STRESS_THREADS; i++) {
		args[i] = (struct stress_arg) { &shared, (unsigned char) (i + 1) };
		ck_assert_int_eq(pthread_create(&threads[i], NULL,
						stress_thread, &args[i]), 0);
	}
	for (i = 0; i < STRESS_THREADS; i++)
		pthread_join(threads[i], NULL);
	ck_assert_int_eq(load_int(&shared.errors), 0);
	/*
	 * A free that met a popper stalled between its two steps leaves its
	 * index PENDING for the owner's reap (pool.c, requeue), as the sweep
	 * does in the provider; under TSan's slowness that happens.
	 */
	owner_reap(&tp.ref);
	/* Every buffer came back exactly once. */
	for (i = 0; i < STRESS_BUFS; i++) {
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &index), 0);
		ck_assert_uint_eq(seen[index], 0);
		seen[index] = 1;
	}
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &index), -EAGAIN);
	free(tp.pool);
}
END_TEST

static struct xshm_ring *freeq_of(struct xshm_pool *pool)
{
	return (struct xshm_ring *) ((unsigned char *) pool + pool->freeq_offset);
}

/* Corrupt a pristine pool with mutate(), then attach it. */
static int attach_corrupted(void (*mutate)(struct xshm_pool *pool),
			    size_t avail_delta)
{
	struct xshm_pool_ref ref;
	struct test_pool tp;
	int ret;

	pool_new(&tp, NBUFS, BUF_SIZE);
	if (mutate)
		mutate(tp.pool);
	ret = xshm_pool_attach(&ref, tp.pool, tp.bytes - avail_delta);
	free(tp.pool);
	return ret;
}

static void bufs_offset_zero(struct xshm_pool *pool) { pool->bufs_offset = 0; }
static void bufs_offset_odd(struct xshm_pool *pool) { pool->bufs_offset += 8; }
static void bufs_offset_huge(struct xshm_pool *pool) { pool->bufs_offset = UINT64_MAX - 63; }
static void freeq_in_bufs(struct xshm_pool *pool) { pool->freeq_offset = pool->bufs_offset; }
static void freeq_huge(struct xshm_pool *pool) { pool->freeq_offset = UINT64_MAX - 63; }
static void nbufs_double(struct xshm_pool *pool) { pool->nbufs *= 2; }
static void nbufs_max(struct xshm_pool *pool) { pool->nbufs = UINT32_MAX; }
static void nbufs_zero(struct xshm_pool *pool) { pool->nbufs = 0; }
static void buf_size_odd(struct xshm_pool *pool) { pool->buf_size = 96; }
static void buf_size_zero(struct xshm_pool *pool) { pool->buf_size = 0; }
static void buf_size_huge(struct xshm_pool *pool) { pool->buf_size = 1u << 30; }
static void freeq_too_few(struct xshm_pool *pool) { freeq_of(pool)->ncells = 64; }
static void freeq_bad_cells(struct xshm_pool *pool) { freeq_of(pool)->ncells = 100; }

START_TEST(attach_rejects_corruption)
{
	ck_assert_int_eq(attach_corrupted(NULL, 0), 0);
	ck_assert_int_eq(attach_corrupted(NULL, 1), -EPROTO);
	ck_assert_int_eq(attach_corrupted(bufs_offset_zero, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(bufs_offset_odd, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(bufs_offset_huge, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(freeq_in_bufs, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(freeq_huge, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(nbufs_double, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(nbufs_max, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(nbufs_zero, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(buf_size_odd, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(buf_size_zero, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(buf_size_huge, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(freeq_too_few, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(freeq_bad_cells, 0), -EPROTO);
	ck_assert_int_eq(xshm_pool_attach(&(struct xshm_pool_ref) { 0 },
					  &(struct xshm_pool) { 0 },
					  sizeof(struct xshm_pool) - 1), -EPROTO);
}
END_TEST

START_TEST(alloc_rejects_bad_index)
{
	struct test_pool tp;
	uint32_t index = 12345;
	int i;

	pool_new(&tp, NBUFS, BUF_SIZE);
	for (i = 0; i < NBUFS; i++)
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &index), 0);
	/* A peer pushes a bogus index straight into the shared queue. */
	ck_assert_int_eq(xshm_ring_push(&tp.ref.freeq,
					&(uint64_t) { NBUFS }, sizeof(uint64_t)), 0);
	index = 12345;
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &index), -EPROTO);
	ck_assert_uint_eq(index, 12345);
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &index), -EAGAIN);
	free(tp.pool);
}
END_TEST

/* ---- ownership: double frees, foreign frees, dead borrowers ---- */

#define OTHER		0x5678
#define T0		1000000000ULL

/* Every buffer can be borrowed exactly once, then none. */
static void check_all_free_once(const struct xshm_pool_ref *ref)
{
	unsigned char seen[NBUFS] = { 0 };
	uint32_t index;

	for (int i = 0; i < NBUFS; i++) {
		ck_assert_int_eq(xshm_pool_alloc(ref, OWNER, &index), 0);
		ck_assert_uint_eq(seen[index], 0);
		seen[index] = 1;
	}
	ck_assert_int_eq(xshm_pool_alloc(ref, OWNER, &index), -EAGAIN);
}

START_TEST(free_only_by_borrower_once)
{
	struct test_pool tp;
	uint32_t index;

	pool_new(&tp, NBUFS, BUF_SIZE);
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, 0, &index), -EINVAL);
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, XSHM_POOL_PENDING, &index),
			 -EINVAL);
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &index), 0);
	ck_assert(xshm_pool_owned_by(&tp.ref, index, OWNER));
	ck_assert(!xshm_pool_owned_by(&tp.ref, index, OTHER));
	ck_assert(!xshm_pool_owned_by(&tp.ref, NBUFS, OWNER));
	ck_assert_int_eq(xshm_pool_free(&tp.ref, index, OTHER), -EINVAL);
	ck_assert_int_eq(xshm_pool_free(&tp.ref, index, 0), -EINVAL);
	ck_assert_int_eq(xshm_pool_free(&tp.ref, index, OWNER), 0);
	ck_assert(!xshm_pool_owned_by(&tp.ref, index, OWNER));
	/* The second free of the same index is refused, not queued twice. */
	ck_assert_int_eq(xshm_pool_free(&tp.ref, index, OWNER), -EINVAL);
	/* Nor may anyone free one never borrowed. */
	ck_assert_int_eq(xshm_pool_free(&tp.ref, (index + 1) % NBUFS, OWNER),
			 -EINVAL);
	check_all_free_once(&tp.ref);
	free(tp.pool);
}
END_TEST

START_TEST(reclaim_owner_returns_its_buffers)
{
	struct test_pool tp;
	uint32_t mine[3], theirs;
	uint64_t borrowers[4];

	pool_new(&tp, NBUFS, BUF_SIZE);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OTHER, &mine[i]), 0);
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, OWNER, &theirs), 0);
	ck_assert_uint_eq(xshm_pool_borrowers(&tp.ref, borrowers, 4), 2);
	ck_assert_int_eq(xshm_pool_reclaim_owner(&tp.ref, OTHER), 3);
	ck_assert_int_eq(xshm_pool_reclaim_owner(&tp.ref, OTHER), 0);
	ck_assert_uint_eq(xshm_pool_borrowers(&tp.ref, borrowers, 4), 1);
	ck_assert_uint_eq(borrowers[0], OWNER);
	/* The reclaimed ones are free: a late free by their borrower fails. */
	ck_assert_int_eq(xshm_pool_free(&tp.ref, mine[0], OTHER), -EINVAL);
	ck_assert_int_eq(xshm_pool_free(&tp.ref, theirs, OWNER), 0);
	check_all_free_once(&tp.ref);
	free(tp.pool);
}
END_TEST

static struct xshm_pool *shared_pool(struct xshm_pool_ref *ref, size_t *bytes)
{
	struct xshm_pool *pool;

	*bytes = xshm_pool_bytes(NBUFS, BUF_SIZE);
	pool = mmap(NULL, *bytes, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(pool, MAP_FAILED);
	xshm_pool_init(pool, NBUFS, BUF_SIZE);
	ck_assert_int_eq(xshm_pool_attach(ref, pool, *bytes), 0);
	return pool;
}

/* In a child: how it dies inside the pool's free-index queue. */
enum pool_death {
	DIE_POPPING,		/* took a queue cell, not yet the buffer */
	DIE_POPPED_OWNING,	/* took the buffer, not yet handed the cell back */
	DIE_PUSHING,		/* freed a buffer, died inside the push */
};

static void die_in_pool(const struct xshm_pool_ref *ref, enum pool_death how)
{
	struct xshm_index_cell *cell;
	uint32_t index;
	uint64_t pos;

	if (how == DIE_PUSHING) {
		if (xshm_pool_alloc(ref, OTHER, &index))
			_exit(3);
		atomic_store(&ref->owners[index], XSHM_POOL_PENDING);
		cell = xshm_ring_reserve(&ref->freeq, &pos);
		if (!cell)
			_exit(4);
		cell->index = index;
		raise(SIGKILL);
	}
	cell = xshm_ring_pop_begin(&ref->freeq, &pos);
	if (!cell)
		_exit(5);
	if (how == DIE_POPPED_OWNING)
		atomic_store(&ref->owners[cell->index], OTHER);
	raise(SIGKILL);
}

static void child_dies_in_pool(const struct xshm_pool_ref *ref,
			       enum pool_death how)
{
	pid_t child = fork();
	int status;

	ck_assert_int_ge(child, 0);
	if (child == 0)
		die_in_pool(ref, how);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/*
 * Borrow everything that can be borrowed, free it all (the queue wraps onto
 * a dead popper's cell: frees wait as pending), let the region owner reap,
 * and check that every buffer is back exactly once.
 */
static void check_pool_recovers(enum pool_death how)
{
	struct xshm_pool_reaper reaper = { 0 };
	struct xshm_pool_ref ref;
	uint32_t held[NBUFS];
	size_t bytes;
	struct xshm_pool *pool = shared_pool(&ref, &bytes);
	int n = 0;

	child_dies_in_pool(&ref, how);
	while (xshm_pool_alloc(&ref, OWNER, &held[n]) == 0)
		n++;
	ck_assert_int_eq(n, NBUFS - 1);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(xshm_pool_free(&ref, held[i], OWNER), 0);
	xshm_pool_reap_stalled(&ref, &reaper, T0);
	/* A buffer the child held is its own until reclaimed. */
	ck_assert_int_eq(xshm_pool_reclaim_owner(&ref, OTHER),
			 how == DIE_POPPED_OWNING);
	check_all_free_once(&ref);
	munmap(pool, bytes);
}

START_TEST(dead_popper_recovered)
{
	check_pool_recovers(DIE_POPPING);
}
END_TEST

START_TEST(dead_popper_owning_recovered)
{
	check_pool_recovers(DIE_POPPED_OWNING);
}
END_TEST

START_TEST(dead_pusher_recovered)
{
	check_pool_recovers(DIE_PUSHING);
}
END_TEST

static Suite *pool_suite(void)
{
	Suite *suite = suite_create("pool");
	TCase *basic = tcase_create("basic");
	TCase *stress = tcase_create("stress");

	tcase_set_timeout(basic, TEST_TIMEOUT);
	tcase_add_test(basic, alloc_all_once);
	tcase_add_test(basic, free_and_realloc);
	tcase_add_test(basic, buf_bounds);
	tcase_add_test(basic, attach_rejects_corruption);
	tcase_add_test(basic, alloc_rejects_bad_index);
	tcase_add_test(basic, free_only_by_borrower_once);
	tcase_add_test(basic, reclaim_owner_returns_its_buffers);
	tcase_add_test(basic, dead_popper_recovered);
	tcase_add_test(basic, dead_popper_owning_recovered);
	tcase_add_test(basic, dead_pusher_recovered);
	suite_add_tcase(suite, basic);

	tcase_set_timeout(stress, TEST_TIMEOUT);
	tcase_add_test(stress, concurrent_alloc_free);
	suite_add_tcase(suite, stress);
	return suite;
}

int main(void)
{
	return test_run_suite(pool_suite());
}
