/* One-sided MPI through Open MPI's osc/rdma over its OFI BTL, whose provider is xshm
 * (run.sh: --mca osc rdma --mca btl ofi,self): every MPI_Put, MPI_Get, accumulate and
 * atomic below that reaches another rank's window is an fi_write, fi_read or
 * fi_atomic of xshm's, asked for with FI_DELIVERY_COMPLETE (with 2 ranks, uprobes
 * counted 5630 xshm_rma_post and 1400 xshm_atomic_post calls: Open MPI moves a
 * vector datatype element by element, MPI_Get_accumulate as fetching atomics; the
 * exclusive locks' own state is Open MPI's). The windows are MPI_Win_create's over malloc'ed memory,
 * so no rank reaches another's window through shared memory of Open MPI's own.
 *
 * Puts and gets of 8 B to 1 MiB (odd sizes too) to and from every rank under fences;
 * MPI_Accumulate sums, MPI_Fetch_and_op tickets and MPI_Compare_and_swap increments
 * from every rank at once into one location under passive target (no update lost,
 * every ticket handed out once); counters kept under exclusive locks with
 * get, put and flush; vector datatypes on both sides; MPI_Rput and MPI_Rget;
 * a post/start/complete/wait epoch; a dynamic window; MPI_Get_accumulate. */
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

/* the rank each rank accesses (right) and the one that accesses it (left) */
static int right(void) { return (mt_rank + 1) % mt_size; }
static int left(void) { return (mt_rank + mt_size - 1) % mt_size; }

#define STRIDED 4096	/* int64 elements of the strided window */

/*
 * A vector datatype on both sides: every other element put to every third place
 * of the right neighbour's window, then read back with the inverse strides; the
 * places between stay as they were
 */
static void strided_put_get(void)
{
	int n = STRIDED / 3;
	int64_t *mem = mt_alloc(sizeof(int64_t) * STRIDED);
	int64_t *src = mt_alloc(sizeof(int64_t) * 2 * n), *back = mt_alloc(sizeof(int64_t) * 2 * n);
	MPI_Datatype every2, every3;
	MPI_Win win;

	for (int i = 0; i < STRIDED; i++)
		mem[i] = -1 - i;
	for (int i = 0; i < 2 * n; i++)
		src[i] = (int64_t)mt_rank << 32 | (uint32_t)i, back[i] = 0;
	MT_CHECK(MPI_Type_vector(n, 1, 2, MPI_INT64_T, &every2));
	MT_CHECK(MPI_Type_vector(n, 1, 3, MPI_INT64_T, &every3));
	MT_CHECK(MPI_Type_commit(&every2));
	MT_CHECK(MPI_Type_commit(&every3));
	win = win_over(mem, sizeof(int64_t) * STRIDED);
	MT_CHECK(MPI_Win_lock_all(0, win));
	MT_CHECK(MPI_Put(src, 1, every2, right(), 0, 1, every3, win));
	MT_CHECK(MPI_Win_flush(right(), win));
	MT_CHECK(MPI_Get(back, 1, every2, right(), 0, 1, every3, win));
	MT_CHECK(MPI_Win_flush(right(), win));
	MT_CHECK(MPI_Win_unlock_all(win));
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	for (int i = 0; i < n; i++)
		MT_ASSERT(back[2 * i] == src[2 * i] && back[2 * i + 1] == 0,
			  "strided MPI_Get: element %d is %lld", 2 * i, (long long)back[2 * i]);
	for (int i = 0; i < STRIDED; i++) {
		int64_t want = i % 3 == 0 && i / 3 < n ?
			       ((int64_t)left() << 32 | (uint32_t)(2 * (i / 3))) : -1 - i;
		MT_ASSERT(mem[i] == want, "strided MPI_Put from rank %d: element %d is %lld, "
			  "expected %lld", left(), i, (long long)mem[i], (long long)want);
	}
	MT_CHECK(MPI_Win_free(&win));
	MT_CHECK(MPI_Type_free(&every2));
	MT_CHECK(MPI_Type_free(&every3));
	free(mem), free(src), free(back);
}

#define BLOCKS 16
#define BLOCK 3000

/* MPI_Rput of BLOCKS blocks to the right neighbour, waited for, then MPI_Rget back */
static void request_put_get(void)
{
	size_t len = (size_t)BLOCKS * BLOCK;
	char *mem = mt_alloc(len), *src = mt_alloc(len), *back = mt_alloc(len);
	MPI_Request req[BLOCKS];
	MPI_Win win;

	memset(mem, 0xee, len);
	memset(back, 0xee, len);
	for (int b = 0; b < BLOCKS; b++)
		mt_fill(src + (size_t)b * BLOCK, BLOCK, mt_rank, b, 7);
	win = win_over(mem, len);
	MT_CHECK(MPI_Win_lock_all(0, win));
	for (int b = 0; b < BLOCKS; b++)
		MT_CHECK(MPI_Rput(src + (size_t)b * BLOCK, BLOCK, MPI_BYTE, right(),
				  (MPI_Aint)b * BLOCK, BLOCK, MPI_BYTE, win, &req[b]));
	MT_CHECK(MPI_Waitall(BLOCKS, req, MPI_STATUSES_IGNORE));
	MT_CHECK(MPI_Win_flush(right(), win));
	for (int b = 0; b < BLOCKS; b++)
		MT_CHECK(MPI_Rget(back + (size_t)b * BLOCK, BLOCK, MPI_BYTE, right(),
				  (MPI_Aint)b * BLOCK, BLOCK, MPI_BYTE, win, &req[b]));
	MT_CHECK(MPI_Waitall(BLOCKS, req, MPI_STATUSES_IGNORE));
	for (int b = 0; b < BLOCKS; b++)
		mt_expect(back + (size_t)b * BLOCK, BLOCK, mt_rank, b, 7, "MPI_Rget of an MPI_Rput");
	MT_CHECK(MPI_Win_unlock_all(win));
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	for (int b = 0; b < BLOCKS; b++)
		mt_expect(mem + (size_t)b * BLOCK, BLOCK, left(), b, 7, "MPI_Rput block");
	MT_CHECK(MPI_Win_free(&win));
	free(mem), free(src), free(back);
}

/* post/start/complete/wait: each rank exposes its window to its left neighbour */
static void pscw_put(void)
{
	size_t len = 20000;
	char *mem = mt_alloc(len), *src = mt_alloc(len);
	MPI_Group world, from, to;
	int l = left(), r = right();
	MPI_Win win;

	memset(mem, 0xee, len);
	mt_fill(src, len, mt_rank, 3, 11);
	MT_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
	MT_CHECK(MPI_Group_incl(world, 1, &l, &from));
	MT_CHECK(MPI_Group_incl(world, 1, &r, &to));
	win = win_over(mem, len);
	MT_CHECK(MPI_Win_post(from, 0, win));
	MT_CHECK(MPI_Win_start(to, 0, win));
	MT_CHECK(MPI_Put(src, (int)len, MPI_BYTE, r, 0, (int)len, MPI_BYTE, win));
	MT_CHECK(MPI_Win_complete(win));
	MT_CHECK(MPI_Win_wait(win));
	mt_expect(mem, len, l, 3, 11, "MPI_Put in a post/start epoch");
	MT_CHECK(MPI_Win_free(&win));
	MT_CHECK(MPI_Group_free(&from));
	MT_CHECK(MPI_Group_free(&to));
	MT_CHECK(MPI_Group_free(&world));
	free(mem), free(src);
}

/*
 * A dynamic window: each rank attaches two buffers, tells their addresses, and
 * its left neighbour writes both; then they are detached
 */
static void dynamic_window(void)
{
	size_t lens[2] = { 777, 70000 };
	char *bufs[2], *src[2];
	MPI_Aint mine[2], theirs[2];
	MPI_Win win;

	MT_CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MT_CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	for (int i = 0; i < 2; i++) {
		bufs[i] = mt_alloc(lens[i]);
		src[i] = mt_alloc(lens[i]);
		memset(bufs[i], 0xee, lens[i]);
		mt_fill(src[i], lens[i], mt_rank, i, 13);
		MT_CHECK(MPI_Win_attach(win, bufs[i], (MPI_Aint)lens[i]));
		MT_CHECK(MPI_Get_address(bufs[i], &mine[i]));
	}
	/* my addresses to my left neighbour, my right neighbour's to me */
	MT_CHECK(MPI_Sendrecv(mine, 2, MPI_AINT, left(), 5, theirs, 2, MPI_AINT, right(), 5,
			      MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	MT_CHECK(MPI_Win_lock_all(0, win));
	for (int i = 0; i < 2; i++)
		MT_CHECK(MPI_Put(src[i], (int)lens[i], MPI_BYTE, right(), theirs[i],
				 (int)lens[i], MPI_BYTE, win));
	MT_CHECK(MPI_Win_unlock_all(win));
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	for (int i = 0; i < 2; i++) {
		mt_expect(bufs[i], lens[i], left(), i, 13, "MPI_Put into an attached buffer");
		MT_CHECK(MPI_Win_detach(win, bufs[i]));
		free(bufs[i]), free(src[i]);
	}
	MT_CHECK(MPI_Win_free(&win));
}

#define GACC_LEN 16

/*
 * MPI_Get_accumulate SUM of ones into GACC_LEN elements of the last rank's window
 * from every rank: every element ends at ITERS per rank, and what one rank fetched
 * of each element only grows
 */
static void get_accumulate_sum(void)
{
	int64_t mem[GACC_LEN] = { 0 }, ones[GACC_LEN], got[GACC_LEN], last[GACC_LEN];
	int target = mt_size - 1;
	MPI_Win win = win_over(mem, sizeof(mem));

	for (int i = 0; i < GACC_LEN; i++)
		ones[i] = 1, last[i] = -1;
	MT_CHECK(MPI_Win_lock_all(0, win));
	for (int k = 0; k < ITERS / 4; k++) {
		MT_CHECK(MPI_Get_accumulate(ones, GACC_LEN, MPI_INT64_T, got, GACC_LEN,
					    MPI_INT64_T, target, 0, GACC_LEN, MPI_INT64_T,
					    MPI_SUM, win));
		MT_CHECK(MPI_Win_flush(target, win));
		for (int i = 0; i < GACC_LEN; i++) {
			MT_ASSERT(got[i] > last[i], "MPI_Get_accumulate: element %d went from "
				  "%lld to %lld", i, (long long)last[i], (long long)got[i]);
			last[i] = got[i];
		}
	}
	MT_CHECK(MPI_Win_unlock_all(win));
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	for (int i = 0; mt_rank == target && i < GACC_LEN; i++)
		MT_ASSERT(mem[i] == (int64_t)(ITERS / 4) * mt_size,
			  "MPI_Get_accumulate SUM: element %d is %lld, expected %d", i,
			  (long long)mem[i], ITERS / 4 * mt_size);
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
	MT_STEP("strided MPI_Put and MPI_Get (vector datatypes)");
	strided_put_get();
	MT_STEP("MPI_Rput and MPI_Rget, %d blocks", BLOCKS);
	request_put_get();
	MT_STEP("post/start/complete/wait epoch");
	pscw_put();
	MT_STEP("dynamic window, two attached buffers");
	dynamic_window();
	MT_STEP("MPI_Get_accumulate SUM, %d from each rank", ITERS / 4);
	get_accumulate_sum();
	mt_finish();
	return 0;
}
