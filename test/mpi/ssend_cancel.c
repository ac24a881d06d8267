/* MPI_Ssend / MPI_Issend and MPI_Cancel of a posted receive, pairs rank^1.
 *
 * A synchronous send may complete only once the receiver has matched it: the sender
 * starts an Issend before the receiver has posted anything, and it must not complete
 * while the receiver waits on a barrier that the sender also has to reach. A receive
 * that nothing matches must be cancellable (MPI_Test_cancelled true), and a message
 * sent afterwards with the same tag must go to the next receive, not to the cancelled
 * one. */
#include "mpitest.h"
#include <unistd.h>

static const size_t sizes[] = {0, 1, 4096, 8193, 65537, 1048576};
#define NSZ (int)(sizeof(sizes) / sizeof(sizes[0]))

static void ssend_blocking(int peer, int sender)
{
	for (int i = 0; i < NSZ; i++) {
		size_t n = sizes[i];
		char *b = mt_alloc(n);
		MPI_Status st;
		if (sender) {
			mt_fill(b, n, mt_rank, 20 + i, i);
			MT_CHECK(MPI_Ssend(b, (int)n, MPI_BYTE, peer, 20 + i, MPI_COMM_WORLD));
		} else {
			memset(b, 0xee, n);
			MT_CHECK(MPI_Recv(b, (int)n, MPI_BYTE, peer, 20 + i, MPI_COMM_WORLD, &st));
			mt_status_is(&st, peer, 20 + i, n, "Recv of an Ssend");
			mt_expect(b, n, peer, 20 + i, i, "Recv of an Ssend");
		}
		free(b);
	}
}

/* the receiver posts its receive only after the barrier; the sender tests its Issend
 * for a while before entering the barrier: it must not have completed */
static void issend_waits(int peer, int sender, size_t n)
{
	const int tag = 40;
	char *b = mt_alloc(n);
	MPI_Request rq;
	MPI_Status st;
	int done = 0;

	if (peer < 0) { /* the odd last rank: only the barrier */
		free(b);
		MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		return;
	}
	if (sender) {
		mt_fill(b, n, mt_rank, tag, 1);
		MT_CHECK(MPI_Issend(b, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq));
		for (int k = 0; k < 200 && !done; k++) {
			MT_CHECK(MPI_Test(&rq, &done, MPI_STATUS_IGNORE));
			usleep(500);
		}
		MT_ASSERT(!done, "Issend of %zu bytes completed before the receiver posted a "
			  "receive", n);
	}
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	if (sender) {
		MT_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	} else {
		memset(b, 0xee, n);
		MT_CHECK(MPI_Recv(b, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
		mt_status_is(&st, peer, tag, n, "Recv of an Issend");
		mt_expect(b, n, peer, tag, 1, "Recv of an Issend");
	}
	free(b);
}

static void cancel_recv(int peer, int sender, size_t n, int any)
{
	const int tag = 60;
	char *b = mt_alloc(n), *c = mt_alloc(n);
	MPI_Request rq;
	MPI_Status st;
	int cancelled = 0;

	if (peer < 0) {
		free(b), free(c);
		MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		return;
	}
	if (!sender) {
		memset(c, 0xee, n);
		MT_CHECK(MPI_Irecv(c, (int)n, MPI_BYTE, any ? MPI_ANY_SOURCE : peer,
				   any ? MPI_ANY_TAG : tag, MPI_COMM_WORLD, &rq));
		MT_CHECK(MPI_Cancel(&rq));
		MT_CHECK(MPI_Wait(&rq, &st));
		MT_CHECK(MPI_Test_cancelled(&st, &cancelled));
		MT_ASSERT(cancelled, "receive (%zu bytes%s) with nothing to match was not cancelled",
			  n, any ? ", ANY_SOURCE/ANY_TAG" : "");
		MT_ASSERT(rq == MPI_REQUEST_NULL, "cancelled request not freed by Wait");
	}
	/* only now is the message sent: the cancelled receive must not take it */
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	if (sender) {
		mt_fill(b, n, mt_rank, tag, 3);
		MT_CHECK(MPI_Send(b, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
	} else {
		memset(b, 0xee, n);
		MT_CHECK(MPI_Recv(b, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
		mt_status_is(&st, peer, tag, n, "Recv after a cancelled receive");
		mt_expect(b, n, peer, tag, 3, "Recv after a cancelled receive");
		for (size_t i = 0; i < n; i++)
			MT_ASSERT((unsigned char)c[i] == 0xee, "the cancelled receive's buffer was "
				  "written (byte %zu)", i);
	}
	free(b);
	free(c);
}

int main(int argc, char **argv)
{
	static const size_t cs[] = {0, 100, 70000};

	mt_init(&argc, &argv, "ssend_cancel");
	int peer = mt_rank ^ 1;
	if (peer >= mt_size)
		peer = -1;

	for (int role = 0; role < 2; role++) {
		int sender = peer >= 0 && (mt_rank < peer) == (role == 0);
		MT_STEP("Ssend, %d sizes, %s ranks sending", NSZ, role ? "odd" : "even");
		if (peer >= 0)
			ssend_blocking(peer, sender);
		MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		for (int i = 0; i < 3; i++) {
			size_t n = i == 0 ? 1 : i == 1 ? 8193 : 1048576;
			MT_STEP("Issend of %zu bytes waits for the receive", n);
			/* barriers inside: every rank takes part, the odd last rank as nobody */
			issend_waits(peer, sender, n);
		}
	}
	for (int i = 0; i < 3; i++)
		for (int any = 0; any < 2; any++) {
			MT_STEP("Cancel of a posted receive (%zu bytes%s)", cs[i],
				any ? ", ANY_SOURCE/ANY_TAG" : "");
			cancel_recv(peer, peer >= 0 && mt_rank < peer, cs[i], any);
		}
	mt_finish();
	return 0;
}
