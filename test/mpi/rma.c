/* One-sided MPI through Open MPI's osc/rdma over its OFI BTL, whose provider is xshm
 * (run.sh: --mca osc rdma --mca btl ofi,self): every MPI_Put, MPI_Get, accumulate and
 * atomic below that reaches another rank's window is an fi_write, fi_read or
 * fi_atomic of xshm's, asked for with FI_DELIVERY_COMPLETE (with 2 ranks, uprobes
 * counted 100 xshm_rma_post and 600 xshm_atomic_post calls; the exclusive locks'
 * own state is Open MPI's). The windows are MPI_Win_create's over malloc'ed memory,
 * so no rank reaches another's window through shared memory of Open MPI's own.
 *
 * Puts and gets of 8 B to 1 MiB (odd sizes too) to and from every rank under fences;
 * MPI_Accumulate sums, MPI_Fetch_and_op tickets and MPI_Compare_and_swap increments
 * from every rank at once into one location under passive target (no update lost,
 * every ticket handed out once); counters kept under exclusive locks with
 * get, put and flush. */
#include "mpitest.h"

#define ITERS 200
#define LOCK_ITERS 40

static MPI_Win win_over(void *base, size_t len)
{
	MPI_Win win;

	MT_CHECK(MPI_Win_create(base, (MPI_Aint)len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MT_CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	return win;
}

/* each rank writes block [me] of every other rank's window */
static void put_fence(size_t size)
{
	size_t len = size * (size_t)mt_size;
	char *mem = mt_alloc(len), *src = mt_alloc(len);
	MPI_Win win;

	memset(mem, 0xee, len);
	for (int d = 0; d < mt_size; d++)
		mt_fill(src + size * d, size, mt_rank, d, (int)size);
	win = win_over(mem, len);
	MT_CHECK(MPI_Win_fence(0, win));
	for (int d = 0; d < mt_size; d++)
		if (d != mt_rank)
			MT_CHECK(MPI_Put(src + size * d, (int)size, MPI_BYTE, d,
					 (MPI_Aint)(size * mt_rank), (int)size, MPI_BYTE, win));
	MT_CHECK(MPI_Win_fence(0, win));
	for (int s = 0; s < mt_size; s++)
		if (s != mt_rank)
			mt_expect(mem + size * s, size, s, mt_rank, (int)size, "MPI_Put block");
	MT_CHECK(MPI_Win_free(&win));
	free(mem), free(src);
}

/* each rank reads the whole window of every other rank */
static void get_fence(size_t size)
{
	char *mem = mt_alloc(size), *dst = mt_alloc(size * (size_t)mt_size);
	MPI_Win win;

	mt_fill(mem, size, mt_rank, 0, (int)size);
	memset(dst, 0xee, size * (size_t)mt_size);
	win = win_over(mem, size);
	MT_CHECK(MPI_Win_fence(0, win));
	for (int s = 0; s < mt_size; s++)
		if (s != mt_rank)
			MT_CHECK(MPI_Get(dst + size * s, (int)size, MPI_BYTE, s, 0, (int)size,
					 MPI_BYTE, win));
	MT_CHECK(MPI_Win_fence(0, win));
	for (int s = 0; s < mt_size; s++)
		if (s != mt_rank)
			mt_expect(dst + size * s, size, s, 0, (int)size, "MPI_Get window");
	MT_CHECK(MPI_Win_free(&win));
	free(mem), free(dst);
}

/* a window of one int64 on every rank, zero; the one of the last rank is the target */
static MPI_Win counter_win(int64_t *cell)
{
	*cell = 0;
	return win_over(cell, sizeof(*cell));
}

/* after every rank's epoch ended: what the target holds, on every rank */
static int64_t counter_value(const int64_t *cell)
{
	int64_t v;

	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	v = *(const volatile int64_t *) cell;
	MT_CHECK(MPI_Bcast(&v, 1, MPI_INT64_T, mt_size - 1, MPI_COMM_WORLD));
	return v;
}

static void accumulate_sum(void)
{
	int64_t cell, add = mt_rank + 1, n = mt_size;
	int target = mt_size - 1;
	MPI_Win win = counter_win(&cell);

	MT_CHECK(MPI_Win_lock_all(0, win));
	for (int i = 0; i < ITERS; i++) {
		MT_CHECK(MPI_Accumulate(&add, 1, MPI_INT64_T, target, 0, 1, MPI_INT64_T, MPI_SUM,
					win));
		MT_CHECK(MPI_Win_flush(target, win));
	}
	MT_CHECK(MPI_Win_unlock_all(win));
	int64_t got = counter_value(&cell), want = ITERS * n * (n + 1) / 2;
	MT_ASSERT(got == want, "MPI_Accumulate SUM from %d ranks: %lld, expected %lld", mt_size,
		  (long long)got, (long long)want);
	MT_CHECK(MPI_Win_free(&win));
}

/*
 * rank 0 checks that the values the ranks drew, count each, are 0 .. n-1, each
 * once; the block of rank idle (none if -1) is not looked at: it drew nothing
 */
static void check_tickets(const int64_t *mine, int count, int idle, const char *what)
{
	int total = count * mt_size, n = idle < 0 ? total : total - count;
	int64_t *all = mt_rank == 0 ? mt_alloc(sizeof(*all) * (size_t)total) : NULL;
	char *seen = mt_rank == 0 ? calloc((size_t)n, 1) : NULL;

	MT_CHECK(MPI_Gather(mine, count, MPI_INT64_T, all, count, MPI_INT64_T, 0,
			    MPI_COMM_WORLD));
	if (mt_rank == 0) {
		MT_ASSERT(seen, "out of memory");
		for (int i = 0; i < total; i++) {
			if (i / count == idle)
				continue;
			MT_ASSERT(all[i] >= 0 && all[i] < n && !seen[all[i]],
				  "%s: rank %d drew %lld, %s", what, i / count, (long long)all[i],
				  all[i] >= 0 && all[i] < n ? "drawn before" : "out of range");
			seen[all[i]] = 1;
		}
	}
	free(all), free(seen);
}

static void fetch_and_op_tickets(void)
{
	int64_t cell, one = 1, mine[ITERS];
	int target = mt_size - 1;
	MPI_Win win = counter_win(&cell);

	MT_CHECK(MPI_Win_lock_all(0, win));
	for (int i = 0; i < ITERS; i++) {
		MT_CHECK(MPI_Fetch_and_op(&one, &mine[i], MPI_INT64_T, target, 0, MPI_SUM, win));
		MT_CHECK(MPI_Win_flush(target, win));
	}
	MT_CHECK(MPI_Win_unlock_all(win));
	check_tickets(mine, ITERS, -1, "MPI_Fetch_and_op SUM ticket");
	MT_ASSERT(counter_value(&cell) == (int64_t)ITERS * mt_size,
		  "MPI_Fetch_and_op: counter is not %d", ITERS * mt_size);
	MT_CHECK(MPI_Win_free(&win));
}

/*
 * Increments by compare-and-swap, retried until the compare holds, from every rank
 * but the target: Open MPI 4.1's osc/rdma hands its OFI BTL no registration for a
 * compare-and-swap on the rank's own window and the BTL dereferences it
 * (mca_btl_ofi_acswap, with any provider; open-mpi/ompi#9146 is of its kind).
 */
static void compare_and_swap_increments(void)
{
	int64_t cell, mine[ITERS] = { 0 }, seen = 0;
	int target = mt_size - 1, drawers = mt_size - 1;
	MPI_Win win = counter_win(&cell);

	MT_CHECK(MPI_Win_lock_all(0, win));
	for (int i = 0; i < ITERS && mt_rank != target; i++) {
		for (;;) {
			int64_t next = seen + 1, old;

			MT_CHECK(MPI_Compare_and_swap(&next, &seen, &old, MPI_INT64_T, target, 0,
						      win));
			MT_CHECK(MPI_Win_flush(target, win));
			if (old == seen)
				break;
			MT_ASSERT(old > seen, "MPI_Compare_and_swap: the counter went back from "
				  "%lld to %lld", (long long)seen, (long long)old);
			seen = old;
		}
		mine[i] = seen++;
	}
	MT_CHECK(MPI_Win_unlock_all(win));
	check_tickets(mine, ITERS, target, "MPI_Compare_and_swap increment");
	MT_ASSERT(counter_value(&cell) == (int64_t)ITERS * drawers,
		  "MPI_Compare_and_swap: counter is not %d", ITERS * drawers);
	MT_CHECK(MPI_Win_free(&win));
}

/* read, add one, write back, under an exclusive lock: no two ranks in between */
static void exclusive_lock_counter(void)
{
	int64_t cell, v;
	int target = mt_size - 1;
	MPI_Win win = counter_win(&cell);

	for (int i = 0; i < LOCK_ITERS; i++) {
		MT_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win));
		MT_CHECK(MPI_Get(&v, 1, MPI_INT64_T, target, 0, 1, MPI_INT64_T, win));
		MT_CHECK(MPI_Win_flush(target, win));
		v++;
		MT_CHECK(MPI_Put(&v, 1, MPI_INT64_T, target, 0, 1, MPI_INT64_T, win));
		MT_CHECK(MPI_Win_unlock(target, win));
	}
	int64_t got = counter_value(&cell);
	MT_ASSERT(got == (int64_t)LOCK_ITERS * mt_size,
		  "exclusive lock counter from %d ranks: %lld, expected %d", mt_size,
		  (long long)got, LOCK_ITERS * mt_size);
	MT_CHECK(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 8, 1000, 4096, 65536 + 3, 1 << 20 };

	mt_init(&argc, &argv, "rma");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		MT_STEP("MPI_Put and MPI_Get of %zu bytes", sizes[i]);
		put_fence(sizes[i]);
		get_fence(sizes[i]);
	}
	MT_STEP("MPI_Accumulate SUM, %d from each rank", ITERS);
	accumulate_sum();
	MT_STEP("MPI_Fetch_and_op tickets, %d from each rank", ITERS);
	fetch_and_op_tickets();
	MT_STEP("MPI_Compare_and_swap increments, %d from each rank", ITERS);
	compare_and_swap_increments();
	MT_STEP("exclusive lock counter, %d from each rank", LOCK_ITERS);
	exclusive_lock_counter();
	mt_finish();
	return 0;
}
