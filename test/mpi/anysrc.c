/* MPI_ANY_SOURCE and MPI_ANY_TAG. Each rank in turn is the receiver; all others send
 * it NMSG messages of varied sizes (eager and rendezvous). The receiver does not know
 * who sends next, so it checks through the status and the data that, per source,
 * messages arrive in the order they were sent (MPI's non-overtaking rule), including
 * across tags when receiving with MPI_ANY_TAG. With more than 4 ranks only ranks 0, 1
 * and the last take the receiver's turn (oversubscribed runs are slow). */
#include "mpitest.h"

static const size_t sizes[] = {0, 1, 100, 4096, 8193, 16385, 65537, 300001};
#define NSZ (int)(sizeof(sizes) / sizeof(sizes[0]))
#define MAXSZ 300001
#define NMSG 16
#define BATCH 6

static size_t size_of(int src, int seq) { return sizes[(seq + src) % NSZ]; }
static int tag_of(int mode, int src, int seq) { return mode == 0 ? 11 : 100 + seq * 16 + src % 16; }

/* mode 0: fixed tag, receive with ANY_SOURCE; mode 1: per-message tags, receive with
 * ANY_SOURCE + ANY_TAG; mode 2: per-message tags, receive from each source in turn
 * with ANY_TAG. Receives are blocking (nb = 0) or batches of Irecv + Waitall (nb = 1). */
static void round_to(int root, int mode, int nb)
{
	if (mt_rank != root) {
		for (int m = 0; m < NMSG; m++) {
			size_t n = size_of(mt_rank, m);
			int tag = tag_of(mode, mt_rank, m);
			char *s = mt_alloc(n);
			mt_fill(s, n, mt_rank, tag, m);
			MT_CHECK(MPI_Send(s, (int)n, MPI_BYTE, root, tag, MPI_COMM_WORLD));
			free(s);
		}
		return;
	}

	int total = NMSG * (mt_size - 1), got = 0;
	int *next = calloc(mt_size, sizeof(int));
	char *buf[BATCH];
	MPI_Request req[BATCH];
	MPI_Status st[BATCH];

	for (int b = 0; b < BATCH; b++)
		buf[b] = mt_alloc(MAXSZ);
	while (got < total) {
		int k = total - got < BATCH ? total - got : BATCH;
		int src = MPI_ANY_SOURCE;
		int tag = mode == 0 ? 11 : MPI_ANY_TAG;

		if (mode == 2) { /* one source after another, batches within one source */
			src = (root + 1 + got / NMSG) % mt_size;
			if (k > NMSG - got % NMSG)
				k = NMSG - got % NMSG;
		}
		for (int b = 0; b < k; b++) {
			memset(buf[b], 0xee, MAXSZ);
			if (nb)
				MT_CHECK(MPI_Irecv(buf[b], MAXSZ, MPI_BYTE, src, tag, MPI_COMM_WORLD, &req[b]));
			else
				MT_CHECK(MPI_Recv(buf[b], MAXSZ, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st[b]));
		}
		if (nb)
			MT_CHECK(MPI_Waitall(k, req, st));
		/* receives match in the order they were posted, so check in that order */
		for (int b = 0; b < k; b++) {
			int s = st[b].MPI_SOURCE, count;
			MT_ASSERT(s >= 0 && s < mt_size && s != root, "mode %d: status source %d", mode, s);
			MT_ASSERT(src == MPI_ANY_SOURCE || s == src, "mode %d: source %d, asked %d", mode, s, src);
			MT_ASSERT(next[s] < NMSG, "mode %d: more than %d messages from %d", mode, NMSG, s);
			int seq = next[s]++;
			size_t n = size_of(s, seq);
			MT_CHECK(MPI_Get_count(&st[b], MPI_BYTE, &count));
			MT_ASSERT(st[b].MPI_TAG == tag_of(mode, s, seq) && count == (int)n,
				  "mode %d nb %d: from %d got tag %d count %d, expected message %d "
				  "(tag %d, %zu bytes): out of order?", mode, nb, s, st[b].MPI_TAG,
				  count, seq, tag_of(mode, s, seq), n);
			mt_expect(buf[b], n, s, tag_of(mode, s, seq), seq, "ANY_SOURCE/ANY_TAG receive");
		}
		got += k;
	}
	for (int s = 0; s < mt_size; s++)
		MT_ASSERT(s == root || next[s] == NMSG, "mode %d: %d messages from %d", mode, next[s], s);
	for (int b = 0; b < BATCH; b++)
		free(buf[b]);
	free(next);
}

int main(int argc, char **argv)
{
	static const char *modes[] = {"ANY_SOURCE", "ANY_SOURCE+ANY_TAG", "ANY_TAG per source"};

	mt_init(&argc, &argv, "anysrc");
	MT_ASSERT(mt_size >= 2, "needs at least 2 ranks");
	for (int mode = 0; mode < 3; mode++)
		for (int nb = 0; nb < 2; nb++) {
			MT_STEP("%s, %s", modes[mode], nb ? "Irecv batches + Waitall" : "blocking Recv");
			for (int root = 0; root < mt_size; root++) {
				if (mt_size > 4 && root > 1 && root < mt_size - 1)
					continue;
				round_to(root, mode, nb);
				MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
			}
		}
	mt_finish();
	return 0;
}
