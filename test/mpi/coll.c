/* Collectives over the MTL's point-to-point: Alltoall (each block checked for its
 * sender), Allreduce (sums and maxima checked against what they must be), Bcast from
 * every root, Barrier many times. */
#include "mpitest.h"

static void alltoall(size_t blk, int seq)
{
	size_t n = blk * (size_t)mt_size;
	char *s = mt_alloc(n), *r = mt_alloc(n);

	/* block d of my send buffer is for rank d: pattern (me, tag = d) */
	for (int d = 0; d < mt_size; d++)
		mt_fill(s + blk * d, blk, mt_rank, d, seq);
	memset(r, 0xee, n);
	MT_CHECK(MPI_Alltoall(s, (int)blk, MPI_BYTE, r, (int)blk, MPI_BYTE, MPI_COMM_WORLD));
	for (int src = 0; src < mt_size; src++)
		mt_expect(r + blk * src, blk, src, mt_rank, seq, "Alltoall block");
	free(s);
	free(r);
}

static void allreduce(int len)
{
	long long *a = mt_alloc(sizeof(*a) * len), *sum = mt_alloc(sizeof(*a) * len);
	double *d = mt_alloc(sizeof(*d) * len), *mx = mt_alloc(sizeof(*d) * len);
	long long nn = mt_size;

	for (int i = 0; i < len; i++) {
		a[i] = (long long)mt_rank * 1000003 + i;
		d[i] = (double)((mt_rank + i) % mt_size) + i * 0.5;
	}
	MT_CHECK(MPI_Allreduce(a, sum, len, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
	MT_CHECK(MPI_Allreduce(d, mx, len, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
	for (int i = 0; i < len; i++) {
		long long want = 1000003LL * nn * (nn - 1) / 2 + nn * i;
		MT_ASSERT(sum[i] == want, "Allreduce SUM of %d: [%d] = %lld, expected %lld", len, i,
			  sum[i], want);
		double wmax = (double)(mt_size - 1) + i * 0.5;
		MT_ASSERT(mx[i] == wmax, "Allreduce MAX of %d: [%d] = %g, expected %g", len, i, mx[i],
			  wmax);
	}
	/* in place, as many codes do */
	for (int i = 0; i < len; i++)
		a[i] = mt_rank + 1;
	MT_CHECK(MPI_Allreduce(MPI_IN_PLACE, a, len, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
	for (int i = 0; i < len; i++)
		MT_ASSERT(a[i] == nn * (nn + 1) / 2, "Allreduce IN_PLACE of %d: [%d] = %lld", len, i,
			  a[i]);
	free(a), free(sum), free(d), free(mx);
}

static void bcast(size_t n)
{
	char *b = mt_alloc(n);
	for (int root = 0; root < mt_size; root++) {
		if (mt_rank == root)
			mt_fill(b, n, root, 0, (int)n);
		else
			memset(b, 0xee, n);
		MT_CHECK(MPI_Bcast(b, (int)n, MPI_BYTE, root, MPI_COMM_WORLD));
		mt_expect(b, n, root, 0, (int)n, "Bcast");
	}
	free(b);
}

int main(int argc, char **argv)
{
	static const size_t a2a[] = {1, 7, 100, 1024, 8193, 16385, 65537, 262147};
	static const int red[] = {1, 3, 1000, 65536, 250001};
	static const size_t bc[] = {0, 1, 100, 8192, 8193, 65537, 1048576 + 7, 4194304};

	mt_init(&argc, &argv, "coll");
	MT_STEP("Barrier x 200");
	for (int i = 0; i < 200; i++)
		MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	MT_STEP("Alltoall");
	for (unsigned i = 0; i < sizeof(a2a) / sizeof(a2a[0]); i++)
		alltoall(a2a[i], (int)i);
	MT_STEP("Allreduce");
	for (unsigned i = 0; i < sizeof(red) / sizeof(red[0]); i++)
		allreduce(red[i]);
	MT_STEP("Bcast from every root");
	for (unsigned i = 0; i < sizeof(bc) / sizeof(bc[0]); i++)
		bcast(bc[i]);
	mt_finish();
	return 0;
}
