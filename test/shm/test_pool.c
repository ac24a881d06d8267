/* Unit tests of shm/pool.c: allocation, bounds, concurrency, validation. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shm/pool.h"

#define TEST_TIMEOUT	60
#define NBUFS		100	/* not a power of two on purpose */
#define BUF_SIZE	128
#define STRESS_THREADS	4
#define STRESS_ROUNDS	100000
#define STRESS_BUFS	8

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
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, &index), 0);
		ck_assert_uint_lt(index, NBUFS);
		ck_assert_uint_eq(seen[index], 0);
		seen[index] = 1;
	}
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, &index), -EAGAIN);
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
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, &index), 0);
	for (i = 0; i < 3; i++)
		xshm_pool_free(&tp.ref, freed[i]);
	/* Out-of-range frees are ignored, not queued. */
	xshm_pool_free(&tp.ref, NBUFS);
	xshm_pool_free(&tp.ref, UINT32_MAX);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, &got[i]), 0);
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, &index), -EAGAIN);
	for (i = 0; i < 3; i++) {
		int found = 0;

		for (j = 0; j < 3; j++)
			found += got[j] == freed[i];
		ck_assert_int_eq(found, 1);
	}
	/* Many cycles through the free queue. */
	for (i = 0; i < 1000; i++) {
		xshm_pool_free(&tp.ref, got[i % 3]);
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, &got[i % 3]), 0);
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, &index), -EAGAIN);
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
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, &index), 0);
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, &index), -EAGAIN);
	free(tp.pool);
}
END_TEST

struct stress_shared {
	struct xshm_pool_ref *ref;
	_Atomic unsigned char owned[STRESS_BUFS];
	_Atomic int errors;
};

struct stress_arg {
	struct stress_shared *shared;
	unsigned char id;
};

static uint32_t alloc_retry(const struct xshm_pool_ref *ref)
{
	uint32_t index;
	int ret;

	while ((ret = xshm_pool_alloc(ref, &index)) == -EAGAIN)
		sched_yield();
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
	xshm_pool_free(shared->ref, index);
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
			held[k] = alloc_retry(shared->ref);
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
	/* Every buffer came back exactly once. */
	for (i = 0; i < STRESS_BUFS; i++) {
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, &index), 0);
		ck_assert_uint_eq(seen[index], 0);
		seen[index] = 1;
	}
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, &index), -EAGAIN);
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
		ck_assert_int_eq(xshm_pool_alloc(&tp.ref, &index), 0);
	/* A peer pushes a bogus index straight into the shared queue. */
	ck_assert_int_eq(xshm_ring_push(&tp.ref.freeq,
					&(uint64_t) { NBUFS }, sizeof(uint64_t)), 0);
	index = 12345;
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, &index), -EPROTO);
	ck_assert_uint_eq(index, 12345);
	ck_assert_int_eq(xshm_pool_alloc(&tp.ref, &index), -EAGAIN);
	free(tp.pool);
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
	suite_add_tcase(suite, basic);

	tcase_set_timeout(stress, TEST_TIMEOUT);
	tcase_add_test(stress, concurrent_alloc_free);
	suite_add_tcase(suite, stress);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(pool_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
