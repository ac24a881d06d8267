/* Point-to-point: sizes 0 B .. 4 MiB (odd sizes around the usual eager/rendezvous
 * boundaries 8/16/64 KiB), many tags up to MPI_TAG_UB, blocking and nonblocking
 * (Waitall, Waitany, Testsome), many messages in flight, and the non-overtaking
 * rule (same source, same tag: receives match sends in order). Any number of ranks;
 * pairs are rank^1 (an odd last rank only takes part in the all-peer phases). */
#include "mpitest.h"

static const size_t sizes[] = {
	0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 65, 127, 128, 255, 256, 257,
	511, 512, 1023, 1024, 1025, 2047, 2048, 4095, 4096, 4097, 8191, 8192, 8193,
	8200, 12287, 16383, 16384, 16385, 16400, 32767, 32768, 32769, 65535, 65536,
	65537, 65600, 131071, 131072, 262147, 524288, 1048575, 1048576, 2097155,
	4194303, 4194304,
};
#define NSIZES (int)(sizeof(sizes) / sizeof(sizes[0]))
#define SMALL_MAX 65600 /* sizes up to this go to every peer at once */

static int tag_ub;

/* a tag for message i that covers the tag space, MPI_TAG_UB included */
static int tag_of(int i)
{
	if (i == 0)
		return tag_ub;
	return (int)(((long)i * 7919) % ((long)tag_ub + 1));
}

static void blocking_pairs(void)
{
	int peer = mt_rank ^ 1;
	MPI_Status st;

	if (peer >= mt_size)
		return;
	for (int i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		int tag = tag_of(i);
		char *s = mt_alloc(n), *r = mt_alloc(n);

		mt_fill(s, n, mt_rank, tag, i);
		memset(r, 0xee, n);
		if (mt_rank < peer) {
			MT_CHECK(MPI_Send(s, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
			MT_CHECK(MPI_Recv(r, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
		} else {
			MT_CHECK(MPI_Recv(r, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
			MT_CHECK(MPI_Send(s, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
		}
		mt_status_is(&st, peer, tag, n, "blocking Recv");
		mt_expect(r, n, peer, tag, i, "blocking Recv");
		/* and the same through Sendrecv, both directions at once */
		memset(r, 0xee, n);
		MT_CHECK(MPI_Sendrecv(s, (int)n, MPI_BYTE, peer, tag, r, (int)n, MPI_BYTE, peer,
				      tag, MPI_COMM_WORLD, &st));
		mt_status_is(&st, peer, tag, n, "Sendrecv");
		mt_expect(r, n, peer, tag, i, "Sendrecv");
		free(s);
		free(r);
	}
}

/* every rank sends every small size to every other rank, all at once; Waitall or
 * Testsome (checking each receive as it completes) */
static void all_peers(int use_testsome)
{
	int nsmall = 0;
	while (nsmall < NSIZES && sizes[nsmall] <= SMALL_MAX)
		nsmall++;
	int nreq = 2 * (mt_size - 1) * nsmall, k = 0;
	MPI_Request *req = mt_alloc(sizeof(*req) * nreq);
	MPI_Status *st = mt_alloc(sizeof(*st) * nreq);
	int *idx = mt_alloc(sizeof(int) * nreq);
	char **buf = mt_alloc(sizeof(char *) * nreq);
	int *rsrc = mt_alloc(sizeof(int) * nreq), *rsz = mt_alloc(sizeof(int) * nreq);

	/* receives first, for half of them (the others arrive unexpected) */
	for (int pass = 0; pass < 2; pass++) {
		for (int p = 0; p < mt_size; p++) {
			if (p == mt_rank)
				continue;
			for (int i = 0; i < nsmall; i++) {
				if ((i & 1) != pass)
					continue;
				size_t n = sizes[i];
				buf[k] = mt_alloc(n);
				memset(buf[k], 0xee, n);
				rsrc[k] = p;
				rsz[k] = i;
				MT_CHECK(MPI_Irecv(buf[k], (int)n, MPI_BYTE, p, tag_of(i),
						   MPI_COMM_WORLD, &req[k]));
				k++;
			}
		}
		if (pass == 0) {
			/* sends, largest first to another order than the receives */
			for (int p = 0; p < mt_size; p++) {
				int d = (mt_rank + p) % mt_size;
				if (d == mt_rank)
					continue;
				for (int i = nsmall - 1; i >= 0; i--) {
					size_t n = sizes[i];
					buf[k] = mt_alloc(n);
					mt_fill(buf[k], n, mt_rank, tag_of(i), i);
					rsrc[k] = -1;
					MT_CHECK(MPI_Isend(buf[k], (int)n, MPI_BYTE, d, tag_of(i),
							   MPI_COMM_WORLD, &req[k]));
					k++;
				}
			}
		}
	}
	MT_ASSERT(k == nreq, "internal: %d requests, expected %d", k, nreq);

	if (!use_testsome) {
		MT_CHECK(MPI_Waitall(nreq, req, st));
		for (int j = 0; j < nreq; j++)
			if (rsrc[j] >= 0) {
				mt_status_is(&st[j], rsrc[j], tag_of(rsz[j]), sizes[rsz[j]], "Waitall");
				mt_expect(buf[j], sizes[rsz[j]], rsrc[j], tag_of(rsz[j]), rsz[j],
					  "Irecv/Waitall");
			}
	} else {
		int left = nreq, outcount;
		while (left > 0) {
			MT_CHECK(MPI_Testsome(nreq, req, &outcount, idx, st));
			MT_ASSERT(outcount != MPI_UNDEFINED, "Testsome: MPI_UNDEFINED with %d left", left);
			for (int c = 0; c < outcount; c++) {
				int j = idx[c];
				MT_ASSERT(req[j] == MPI_REQUEST_NULL, "Testsome: request %d not freed", j);
				if (rsrc[j] >= 0) {
					mt_status_is(&st[c], rsrc[j], tag_of(rsz[j]), sizes[rsz[j]],
						     "Testsome");
					mt_expect(buf[j], sizes[rsz[j]], rsrc[j], tag_of(rsz[j]), rsz[j],
						  "Irecv/Testsome");
				}
			}
			left -= outcount;
		}
		MT_CHECK(MPI_Testsome(nreq, req, &outcount, idx, st));
		MT_ASSERT(outcount == MPI_UNDEFINED, "Testsome: %d completions after all", outcount);
	}
	for (int j = 0; j < nreq; j++)
		free(buf[j]);
	free(req), free(st), free(idx), free(buf), free(rsrc), free(rsz);
}

/* all sizes, ROUNDS times over, to the pair partner, all on one tag and in flight at
 * once; the i-th receive must get the i-th send (non-overtaking), checked through
 * Waitany as they complete */
#define ROUNDS 2
static void inflight_ordered(void)
{
	int peer = mt_rank ^ 1;
	const int tag = 5, nmsg = ROUNDS * NSIZES;
	MPI_Request *req;
	char **buf;
	MPI_Status st;

	if (peer >= mt_size)
		return;
	req = mt_alloc(sizeof(*req) * 2 * nmsg);
	buf = mt_alloc(sizeof(char *) * 2 * nmsg);
	for (int m = 0; m < nmsg; m++) {
		size_t n = sizes[m % NSIZES];
		buf[m] = mt_alloc(n);
		memset(buf[m], 0xee, n);
		MT_CHECK(MPI_Irecv(buf[m], (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[m]));
	}
	for (int m = 0; m < nmsg; m++) {
		size_t n = sizes[m % NSIZES];
		buf[nmsg + m] = mt_alloc(n);
		mt_fill(buf[nmsg + m], n, mt_rank, tag, m);
		MT_CHECK(MPI_Isend(buf[nmsg + m], (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
				   &req[nmsg + m]));
	}
	for (int c = 0; c < 2 * nmsg; c++) {
		int j;
		MT_CHECK(MPI_Waitany(2 * nmsg, req, &j, &st));
		MT_ASSERT(j != MPI_UNDEFINED, "Waitany: MPI_UNDEFINED after %d of %d", c, 2 * nmsg);
		if (j < nmsg) {
			mt_status_is(&st, peer, tag, sizes[j % NSIZES], "Waitany (message order)");
			mt_expect(buf[j], sizes[j % NSIZES], peer, tag, j, "Irecv/Waitany in order");
		}
	}
	for (int m = 0; m < 2 * nmsg; m++)
		free(buf[m]);
	free(req);
	free(buf);
}

int main(int argc, char **argv)
{
	int *ub, flag;

	mt_init(&argc, &argv, "p2p");
	MT_CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
	MT_ASSERT(flag && *ub >= 32767, "MPI_TAG_UB missing or below 32767");
	tag_ub = *ub;
	MT_STEP("MPI_TAG_UB %d", tag_ub);

	MT_STEP("blocking Send/Recv and Sendrecv, %d sizes", NSIZES);
	blocking_pairs();
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	MT_STEP("Isend/Irecv to all peers, Waitall");
	all_peers(0);
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	MT_STEP("Isend/Irecv to all peers, Testsome");
	all_peers(1);
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	MT_STEP("%d messages in flight on one tag, Waitany, order", 2 * ROUNDS * NSIZES);
	inflight_ordered();
	mt_finish();
	return 0;
}
