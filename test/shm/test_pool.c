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
#include <unistd.h>

#include "ep_ids.h"
#include "shm/pool.h"

#define TEST_TIMEOUT	60
#define NBUFS		100	/* not a power of two on purpose */
#define BUF_SIZE	128
#define WARM_TEST_BUF	(16 << 10)
#define WARM_TEST_NBUFS	100
#define STRESS_THREADS	4
#define STRESS_ROUNDS	100000
#define STRESS_BUFS	8
#define OWNER		0x1234	/* the borrowing endpoint's id */
#define OTHER		0x5678

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

static int alloc_round(const struct xshm_pool_ref *ref, uint64_t owner,
		       uint32_t *index)
{
	return xshm_pool_alloc(ref, owner, XSHM_POOL_ROUND, index);
}

static int alloc_warm(const struct xshm_pool_ref *ref, uint32_t *index)
{
	return xshm_pool_alloc(ref, OWNER, XSHM_POOL_WARM, index);
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
		ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &index), 0);
		ck_assert_uint_lt(index, NBUFS);
		ck_assert_uint_eq(seen[index], 0);
		seen[index] = 1;
	}
	ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &index), -EAGAIN);
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
		ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &index), 0);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(xshm_pool_free(&tp.ref, freed[i], OWNER), 0);
	/* Out-of-range frees are refused, not queued. */
	ck_assert_int_eq(xshm_pool_free(&tp.ref, NBUFS, OWNER), -EINVAL);
	ck_assert_int_eq(xshm_pool_free(&tp.ref, UINT32_MAX, OWNER), -EINVAL);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &got[i]), 0);
	ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &index), -EAGAIN);
	for (i = 0; i < 3; i++) {
		int found = 0;

		for (j = 0; j < 3; j++)
			found += got[j] == freed[i];
		ck_assert_int_eq(found, 1);
	}
	/* Many cycles of free and alloc. */
	for (i = 0; i < 1000; i++) {
		ck_assert_int_eq(xshm_pool_free(&tp.ref, got[i % 3], OWNER), 0);
		ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &got[i % 3]), 0);
		ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &index), -EAGAIN);
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
	/* Writing every buffer whole must leave the free map intact. */
	memset(base, 0xa5, (size_t) NBUFS * BUF_SIZE);
	for (i = 0; i < NBUFS; i++)
		ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &index), 0);
	ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &index), -EAGAIN);
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

static uint32_t alloc_retry(const struct xshm_pool_ref *ref, uint64_t owner)
{
	uint32_t index;
	int ret;

	while ((ret = alloc_round(ref, owner, &index)) == -EAGAIN)
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
	if (xshm_pool_free(shared->ref, index, id))
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
	/* Every buffer came back exactly once. */
	for (i = 0; i < STRESS_BUFS; i++) {
		ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &index), 0);
		ck_assert_uint_eq(seen[index], 0);
		seen[index] = 1;
	}
	ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &index), -EAGAIN);
	free(tp.pool);
}
END_TEST

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
static void map_in_bufs(struct xshm_pool *pool) { pool->free_map_offset = pool->bufs_offset; }
static void map_huge(struct xshm_pool *pool) { pool->free_map_offset = UINT64_MAX - 63; }
static void map_odd(struct xshm_pool *pool) { pool->free_map_offset += 4; }
static void map_on_owners(struct xshm_pool *pool) { pool->free_map_offset = pool->owners_offset - 8; }
static void owners_before_map(struct xshm_pool *pool) { pool->owners_offset = pool->free_map_offset - 8; }
static void owners_huge(struct xshm_pool *pool) { pool->owners_offset = UINT64_MAX - 63; }
static void nbufs_double(struct xshm_pool *pool) { pool->nbufs *= 2; }
static void nbufs_max(struct xshm_pool *pool) { pool->nbufs = UINT32_MAX; }
static void nbufs_zero(struct xshm_pool *pool) { pool->nbufs = 0; }
static void buf_size_odd(struct xshm_pool *pool) { pool->buf_size = 96; }
static void buf_size_zero(struct xshm_pool *pool) { pool->buf_size = 0; }
static void buf_size_huge(struct xshm_pool *pool) { pool->buf_size = 1u << 30; }

START_TEST(attach_rejects_corruption)
{
	ck_assert_int_eq(attach_corrupted(NULL, 0), 0);
	ck_assert_int_eq(attach_corrupted(NULL, 1), -EPROTO);
	ck_assert_int_eq(attach_corrupted(bufs_offset_zero, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(bufs_offset_odd, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(bufs_offset_huge, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(map_in_bufs, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(map_huge, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(map_odd, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(map_on_owners, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(owners_before_map, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(owners_huge, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(nbufs_double, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(nbufs_max, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(nbufs_zero, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(buf_size_odd, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(buf_size_zero, 0), -EPROTO);
	ck_assert_int_eq(attach_corrupted(buf_size_huge, 0), -EPROTO);
	ck_assert_int_eq(xshm_pool_attach(&(struct xshm_pool_ref) { 0 },
					  &(struct xshm_pool) { 0 },
					  sizeof(struct xshm_pool) - 1), -EPROTO);
}
END_TEST

/* A peer sets bits beyond the last buffer, and on buffers borrowed. */
START_TEST(alloc_ignores_stray_bits)
{
	struct test_pool tp;
	uint32_t index = 12345;
	int i;

	pool_new(&tp, NBUFS, BUF_SIZE);
	for (i = 0; i < NBUFS; i++)
		ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &index), 0);
	atomic_store(&tp.ref.free_map[NBUFS / 64], UINT64_MAX);
	atomic_store(&tp.ref.free_map[0], UINT64_MAX);
	index = 12345;
	ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &index), -EAGAIN);
	ck_assert_uint_eq(index, 12345);
	ck_assert_uint_le(xshm_pool_free_count(&tp.ref), NBUFS);
	/* A buffer freed is found among them, and only it. */
	ck_assert_int_eq(xshm_pool_free(&tp.ref, 70, OWNER), 0);
	ck_assert_int_eq(alloc_round(&tp.ref, OTHER, &index), 0);
	ck_assert_uint_eq(index, 70);
	ck_assert_int_eq(alloc_round(&tp.ref, OTHER, &index), -EAGAIN);
	free(tp.pool);
}
END_TEST

/*
 * Lone sends (XSHM_POOL_WARM) go round the warm buffers
 * (XSHM_POOL_WARM_BYTES of them) in turn, not back to the one just freed,
 * and take the others, in turn too, only while every warm one is borrowed.
 */
START_TEST(alloc_keeps_to_the_warm_buffers_in_turn)
{
	const uint32_t warm = XSHM_POOL_WARM_BYTES / WARM_TEST_BUF;
	uint32_t held[WARM_TEST_NBUFS];
	struct test_pool tp;
	uint32_t index;

	ck_assert_uint_lt(2 * warm, WARM_TEST_NBUFS);
	pool_new(&tp, WARM_TEST_NBUFS, WARM_TEST_BUF);
	/* one at a time: round the warm ones, never further */
	for (uint32_t i = 0; i < 3 * warm; i++) {
		ck_assert_int_eq(alloc_warm(&tp.ref, &index), 0);
		ck_assert_uint_eq(index, i % warm);
		ck_assert_int_eq(xshm_pool_free(&tp.ref, index, OWNER), 0);
	}
	/* all warm ones borrowed: the others, in turn */
	for (uint32_t i = 0; i < warm; i++)
		ck_assert_int_eq(alloc_warm(&tp.ref, &held[i]), 0);
	for (uint32_t i = 0; i < 2 * (WARM_TEST_NBUFS - warm); i++) {
		ck_assert_int_eq(alloc_warm(&tp.ref, &index), 0);
		ck_assert_uint_eq(index, warm + i % (WARM_TEST_NBUFS - warm));
		ck_assert_int_eq(xshm_pool_free(&tp.ref, index, OWNER), 0);
	}
	/* a warm one freed is the next borrowed */
	ck_assert_int_eq(xshm_pool_free(&tp.ref, held[3], OWNER), 0);
	ck_assert_int_eq(alloc_warm(&tp.ref, &index), 0);
	ck_assert_uint_eq(index, held[3]);
	ck_assert_uint_eq(xshm_pool_free_count(&tp.ref), WARM_TEST_NBUFS - warm);
	free(tp.pool);
}
END_TEST

/* Streams (XSHM_POOL_ROUND) go round every buffer in turn. */
START_TEST(alloc_round_takes_every_buffer_in_turn)
{
	struct test_pool tp;
	uint32_t index;

	pool_new(&tp, WARM_TEST_NBUFS, WARM_TEST_BUF);
	for (uint32_t i = 0; i < 3 * WARM_TEST_NBUFS; i++) {
		ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &index), 0);
		ck_assert_uint_eq(index, i % WARM_TEST_NBUFS);
		ck_assert_int_eq(xshm_pool_free(&tp.ref, index, OWNER), 0);
	}
	/* a lone send in between keeps to the warm ones */
	ck_assert_int_eq(alloc_warm(&tp.ref, &index), 0);
	ck_assert_uint_lt(index, XSHM_POOL_WARM_BYTES / WARM_TEST_BUF);
	free(tp.pool);
}
END_TEST

/* ---- ownership: double frees, foreign frees, dead borrowers ---- */


/* Every buffer can be borrowed exactly once, then none. */
static void check_all_free_once(const struct xshm_pool_ref *ref)
{
	unsigned char seen[NBUFS] = { 0 };
	uint32_t index;

	for (int i = 0; i < NBUFS; i++) {
		ck_assert_int_eq(alloc_round(ref, OWNER, &index), 0);
		ck_assert_uint_eq(seen[index], 0);
		seen[index] = 1;
	}
	ck_assert_int_eq(alloc_round(ref, OWNER, &index), -EAGAIN);
}

START_TEST(free_only_by_borrower_once)
{
	struct test_pool tp;
	uint32_t index;

	pool_new(&tp, NBUFS, BUF_SIZE);
	ck_assert_int_eq(alloc_round(&tp.ref, 0, &index), -EINVAL);
	ck_assert_int_eq(alloc_round(&tp.ref, XSHM_POOL_PENDING, &index),
			 -EINVAL);
	ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &index), 0);
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
		ck_assert_int_eq(alloc_round(&tp.ref, OTHER, &mine[i]), 0);
	ck_assert_int_eq(alloc_round(&tp.ref, OWNER, &theirs), 0);
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

/* In a child: where it dies between two steps of a borrow or a free. */
enum pool_death {
	DIE_BORROWING,		/* took the owner word, its bit still set */
	DIE_FREEING,		/* made it PENDING, its bit not yet set */
	DIE_FREED_PENDING,	/* set its bit, still PENDING */
};

static void die_in_pool(const struct xshm_pool_ref *ref, enum pool_death how)
{
	uint32_t index = 0;

	if (how == DIE_BORROWING) {
		atomic_store(&ref->owners[index], OTHER);
		raise(SIGKILL);
	}
	if (alloc_round(ref, OTHER, &index))
		_exit(3);
	atomic_store(&ref->owners[index], XSHM_POOL_PENDING);
	if (how == DIE_FREED_PENDING)
		atomic_fetch_or(&ref->free_map[index / 64], 1ULL << (index % 64));
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
 * Borrow everything that can be borrowed, free it all, let the region
 * owner recover what is PENDING and reclaim the dead child's, and check
 * that every buffer is back exactly once.
 */
static void check_pool_recovers(enum pool_death how)
{
	struct xshm_pool_ref ref;
	uint32_t held[NBUFS];
	size_t bytes;
	struct xshm_pool *pool = shared_pool(&ref, &bytes);
	int n = 0;

	child_dies_in_pool(&ref, how);
	while (alloc_round(&ref, OWNER, &held[n]) == 0)
		n++;
	/* A PENDING buffer whose bit is set is free to take. */
	ck_assert_int_eq(n, how == DIE_FREED_PENDING ? NBUFS : NBUFS - 1);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(xshm_pool_free(&ref, held[i], OWNER), 0);
	ck_assert_int_eq(xshm_pool_recover_pending(&ref), how == DIE_FREEING);
	/* A buffer the child held is its own until reclaimed. */
	ck_assert_int_eq(xshm_pool_reclaim_owner(&ref, OTHER),
			 how == DIE_BORROWING);
	check_all_free_once(&ref);
	munmap(pool, bytes);
}

START_TEST(dead_borrower_recovered)
{
	check_pool_recovers(DIE_BORROWING);
}
END_TEST

START_TEST(dead_freer_recovered)
{
	check_pool_recovers(DIE_FREEING);
}
END_TEST

START_TEST(dead_freer_pending_recovered)
{
	check_pool_recovers(DIE_FREED_PENDING);
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
	tcase_add_test(basic, alloc_ignores_stray_bits);
	tcase_add_test(basic, alloc_keeps_to_the_warm_buffers_in_turn);
	tcase_add_test(basic, alloc_round_takes_every_buffer_in_turn);
	tcase_add_test(basic, free_only_by_borrower_once);
	tcase_add_test(basic, reclaim_owner_returns_its_buffers);
	tcase_add_test(basic, dead_borrower_recovered);
	tcase_add_test(basic, dead_freer_recovered);
	tcase_add_test(basic, dead_freer_pending_recovered);
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
