/* Load: every rank streams messages to every other rank at once, many in flight,
 * sizes mixed (eager and rendezvous, chosen per sender, receiver and number), every
 * byte checked. Phase 1: receives directed at each source, windows of W sends and W
 * receives per peer outstanding, completed with one Waitall: messages of one source
 * must match in send order. Phase 2: the same traffic into MPI_ANY_SOURCE receives;
 * the status names the sender, whose messages must match in send order. */
#include "mpitest.h"

static const size_t sizes[] = {0, 8, 64, 1000, 4096, 16000, 16385, 70000, 262144};
#define NSZ (sizeof(sizes) / sizeof(sizes[0]))
#define MAXSZ 262144
#define NMSG 48 /* per ordered pair and phase */
#define W 8	/* per peer in flight, each way */
#define TAG 7

static size_t size_of(int src, int dst, int seq)
{
	uint32_t x = (uint32_t)(src * 131 + dst * 31 + seq) * 0x9e3779b1u;

	return sizes[(x >> 16) % NSZ];
}

/* phase 1: a window of W messages to and from every peer, all in flight at once */
static void directed(void)
{
	int peers = mt_size - 1, n = 2 * W * peers;
	MPI_Request *req = calloc(n, sizeof(*req));
	char **rbuf = calloc(W * peers, sizeof(char *)), **sbuf = calloc(W * peers, sizeof(char *));

	for (int i = 0; i < W * peers; i++) {
		rbuf[i] = mt_alloc(MAXSZ);
		sbuf[i] = mt_alloc(MAXSZ);
	}
	for (int base = 0; base < NMSG; base += W) {
		int k = 0;

		for (int p = 0; p < peers; p++) {
			int peer = (mt_rank + 1 + p) % mt_size;

			for (int w = 0; w < W; w++)
				MT_CHECK(MPI_Irecv(rbuf[p * W + w], MAXSZ, MPI_BYTE, peer, TAG,
						   MPI_COMM_WORLD, &req[k++]));
		}
		for (int p = 0; p < peers; p++) {
			int peer = (mt_rank + 1 + p) % mt_size;

			for (int w = 0; w < W; w++) {
				size_t len = size_of(mt_rank, peer, base + w);

				mt_fill(sbuf[p * W + w], len, mt_rank, TAG, base + w);
				MT_CHECK(MPI_Isend(sbuf[p * W + w], (int)len, MPI_BYTE, peer, TAG,
						   MPI_COMM_WORLD, &req[k++]));
			}
		}
		MPI_Status *st = calloc(n, sizeof(*st));
		MT_CHECK(MPI_Waitall(n, req, st));
		for (int p = 0; p < peers; p++) {
			int peer = (mt_rank + 1 + p) % mt_size;

			for (int w = 0; w < W; w++) {
				size_t len = size_of(peer, mt_rank, base + w);

				mt_status_is(&st[p * W + w], peer, TAG, len, "directed");
				mt_expect(rbuf[p * W + w], len, peer, TAG, base + w, "directed");
			}
		}
		free(st);
	}
	for (int i = 0; i < W * peers; i++) {
		free(rbuf[i]);
		free(sbuf[i]);
	}
	free(rbuf);
	free(sbuf);
	free(req);
}

/* phase 2: the receives take any source.  Receives match in the order they were
 * posted but may complete in another (a large message after a small one behind it),
 * so completions are checked in posting order: receive number k lives in slot k % nr
 * and is checked, then posted again as number k + nr, once all before it were. */
static void any_source(void)
{
	int peers = mt_size - 1, total = NMSG * peers, checked = 0, sent = 0;
	int *next = calloc(mt_size, sizeof(int)), *seq_to = calloc(mt_size, sizeof(int));
	int nr = W * peers;
	MPI_Request *rreq = calloc(nr, sizeof(*rreq)), *sreq = calloc(nr, sizeof(*sreq));
	MPI_Status *rst = calloc(nr, sizeof(*rst));
	char *done = calloc(nr, 1);
	char **rbuf = calloc(nr, sizeof(char *)), **sbuf = calloc(nr, sizeof(char *));

	for (int i = 0; i < nr; i++) {
		rbuf[i] = mt_alloc(MAXSZ);
		sbuf[i] = mt_alloc(MAXSZ);
		MT_CHECK(MPI_Irecv(rbuf[i], MAXSZ, MPI_BYTE, MPI_ANY_SOURCE, TAG, MPI_COMM_WORLD,
				   &rreq[i]));
		sreq[i] = MPI_REQUEST_NULL;
	}
	/* sends go round the peers, a new one wherever an old one completed */
	while (checked < total || sent < total) {
		int idx, flag;
		MPI_Status st;

		for (int i = 0; i < nr && sent < total; i++) {
			if (sreq[i] != MPI_REQUEST_NULL) {
				MT_CHECK(MPI_Test(&sreq[i], &flag, MPI_STATUS_IGNORE));
				if (!flag)
					continue;
			}
			int peer = (mt_rank + 1 + sent % peers) % mt_size;
			int seq = seq_to[peer]++;
			size_t len = size_of(mt_rank, peer, NMSG + seq);

			mt_fill(sbuf[i], len, mt_rank, TAG, NMSG + seq);
			MT_CHECK(MPI_Isend(sbuf[i], (int)len, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
					   &sreq[i]));
			sent++;
		}
		if (checked >= total)
			continue;
		MT_CHECK(MPI_Testany(nr, rreq, &idx, &flag, &st));
		if (flag && idx != MPI_UNDEFINED) {
			rst[idx] = st;
			done[idx] = 1;
		}
		while (checked < total && done[checked % nr]) {
			int slot = checked % nr, src = rst[slot].MPI_SOURCE;

			MT_ASSERT(src >= 0 && src < mt_size && src != mt_rank, "any_source: source %d", src);
			int seq = next[src]++;
			size_t len = size_of(src, mt_rank, NMSG + seq);

			mt_status_is(&rst[slot], src, TAG, len, "any_source");
			mt_expect(rbuf[slot], len, src, TAG, NMSG + seq, "any_source");
			done[slot] = 0;
			if (checked + nr < total)
				MT_CHECK(MPI_Irecv(rbuf[slot], MAXSZ, MPI_BYTE, MPI_ANY_SOURCE, TAG,
						   MPI_COMM_WORLD, &rreq[slot]));
			checked++;
		}
	}
	MT_CHECK(MPI_Waitall(nr, sreq, MPI_STATUSES_IGNORE));
	for (int i = 0; i < nr; i++) {
		free(rbuf[i]);
		free(sbuf[i]);
	}
	free(rbuf);
	free(sbuf);
	free(rreq);
	free(sreq);
	free(rst);
	free(done);
	free(next);
	free(seq_to);
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, "flood");
	MT_STEP("directed receives, %d in flight per peer each way, %d messages per pair", W,
		NMSG);
	directed();
	MT_STEP("MPI_ANY_SOURCE receives, %d messages per pair", NMSG);
	any_source();
	mt_finish();
	return 0;
}
