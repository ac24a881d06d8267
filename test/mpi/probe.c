/* MPI_Probe, MPI_Iprobe, MPI_Mprobe, MPI_Improbe with MPI_Mrecv / MPI_Imrecv, between
 * pairs (rank^1), both directions, sizes 0 B .. 1 MiB: the status of a probe must give
 * the source, the tag and (MPI_Get_count) the size of the message before it is
 * received, a probe must not take the message, a matched probe must (the next receive
 * with the same tag gets the next message), and probing for what was never sent finds
 * nothing. */
#include "mpitest.h"

static const size_t sizes[] = {0, 1, 64, 4097, 8191, 8193, 16385, 65537, 262144, 1048579};
#define NSZ (int)(sizeof(sizes) / sizeof(sizes[0]))

enum { PROBE, IPROBE, MPROBE, IMPROBE, IMPROBE_IMRECV, NMETHOD };
static const char *mname[] = {"Probe+Recv", "Iprobe+Recv", "Mprobe+Mrecv", "Improbe+Mrecv",
			      "Improbe+Imrecv"};

static void check_count(const MPI_Status *st, int src, int tag, size_t n, const char *what)
{
	int count = -1;
	MT_CHECK(MPI_Get_count(st, MPI_BYTE, &count));
	MT_ASSERT(st->MPI_SOURCE == src && st->MPI_TAG == tag && count == (int)n,
		  "%s: probe status source %d tag %d count %d, expected %d %d %zu", what,
		  st->MPI_SOURCE, st->MPI_TAG, count, src, tag, n);
}

/* probe for one message (with wildcards when any is set), then receive it */
static void probe_recv(int method, int peer, int tag, size_t n, int seq, int any)
{
	int psrc = any ? MPI_ANY_SOURCE : peer, ptag = any ? MPI_ANY_TAG : tag, flag = 0;
	MPI_Status st;
	MPI_Message msg = MPI_MESSAGE_NULL;
	MPI_Request req;
	char *buf;
	int count;

	switch (method) {
	case PROBE:
		MT_CHECK(MPI_Probe(psrc, ptag, MPI_COMM_WORLD, &st));
		break;
	case IPROBE:
		while (!flag)
			MT_CHECK(MPI_Iprobe(psrc, ptag, MPI_COMM_WORLD, &flag, &st));
		break;
	case MPROBE:
		MT_CHECK(MPI_Mprobe(psrc, ptag, MPI_COMM_WORLD, &msg, &st));
		break;
	default:
		while (!flag)
			MT_CHECK(MPI_Improbe(psrc, ptag, MPI_COMM_WORLD, &flag, &msg, &st));
	}
	check_count(&st, peer, tag, n, mname[method]);
	MT_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
	buf = mt_alloc((size_t)count);
	memset(buf, 0xee, (size_t)count);
	if (method == PROBE || method == IPROBE) {
		/* a probe leaves the message: probing again sees the same one */
		MT_CHECK(MPI_Probe(psrc, ptag, MPI_COMM_WORLD, &st));
		check_count(&st, peer, tag, n, "second Probe");
		MT_CHECK(MPI_Recv(buf, count, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
	} else if (method == IMPROBE_IMRECV) {
		MT_CHECK(MPI_Imrecv(buf, count, MPI_BYTE, &msg, &req));
		MT_ASSERT(msg == MPI_MESSAGE_NULL, "Imrecv did not set the message to MPI_MESSAGE_NULL");
		MT_CHECK(MPI_Wait(&req, &st));
	} else {
		MT_CHECK(MPI_Mrecv(buf, count, MPI_BYTE, &msg, &st));
		MT_ASSERT(msg == MPI_MESSAGE_NULL, "Mrecv did not set the message to MPI_MESSAGE_NULL");
	}
	check_count(&st, peer, tag, n, "receive after probe");
	mt_expect(buf, n, peer, tag, seq, mname[method]);
	free(buf);
}

static void nothing_there(int peer)
{
	int flag = 1;
	MPI_Status st;
	MPI_Message msg;

	MT_CHECK(MPI_Iprobe(peer, 424242, MPI_COMM_WORLD, &flag, &st));
	MT_ASSERT(!flag, "Iprobe found a message with a tag never sent");
	flag = 1;
	MT_CHECK(MPI_Improbe(MPI_ANY_SOURCE, 424242, MPI_COMM_WORLD, &flag, &msg, &st));
	MT_ASSERT(!flag, "Improbe found a message with a tag never sent");
}

/* two messages, same tag: a matched probe takes the first, so a plain receive gets
 * the second; then the first is received through its message handle */
static void mprobe_claims(int peer, int sender, size_t n1, size_t n2)
{
	const int tag = 77;
	MPI_Status st;
	MPI_Message msg;
	MPI_Request rq[2];
	char *a = mt_alloc(n1), *b = mt_alloc(n2);

	if (sender) {
		mt_fill(a, n1, mt_rank, tag, 1);
		mt_fill(b, n2, mt_rank, tag, 2);
		MT_CHECK(MPI_Isend(a, (int)n1, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq[0]));
		MT_CHECK(MPI_Isend(b, (int)n2, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq[1]));
		MT_CHECK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
	} else {
		MT_CHECK(MPI_Mprobe(peer, tag, MPI_COMM_WORLD, &msg, &st));
		check_count(&st, peer, tag, n1, "Mprobe of the first of two");
		MT_CHECK(MPI_Recv(b, (int)n2, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
		check_count(&st, peer, tag, n2, "Recv after Mprobe (must get the second)");
		mt_expect(b, n2, peer, tag, 2, "Recv after Mprobe");
		MT_CHECK(MPI_Mrecv(a, (int)n1, MPI_BYTE, &msg, &st));
		check_count(&st, peer, tag, n1, "Mrecv of the first");
		mt_expect(a, n1, peer, tag, 1, "Mrecv of the first");
	}
	free(a);
	free(b);
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, "probe");
	int peer = mt_rank ^ 1;
	if (peer >= mt_size)
		peer = -1; /* odd last rank: only barriers */

	for (int method = 0; method < NMETHOD; method++)
		for (int any = 0; any < 2; any++) {
			MT_STEP("%s%s", mname[method], any ? " with ANY_SOURCE/ANY_TAG" : "");
			for (int role = 0; role < 2 && peer >= 0; role++) {
				int sender = (mt_rank < peer) == (role == 0);
				for (int i = 0; i < NSZ; i++) {
					size_t n = sizes[i];
					int tag = 1000 * (method + 1) + i, seq = i + 100 * any;
					if (sender) {
						char *s = mt_alloc(n);
						MPI_Request rq;
						mt_fill(s, n, mt_rank, tag, seq);
						MT_CHECK(MPI_Isend(s, (int)n, MPI_BYTE, peer, tag,
								   MPI_COMM_WORLD, &rq));
						MT_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
						free(s);
					} else {
						probe_recv(method, peer, tag, n, seq, any);
					}
				}
			}
			MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		}
	MT_STEP("probing for nothing");
	if (peer >= 0)
		nothing_there(peer);
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	MT_STEP("Mprobe takes the message it matched");
	for (int role = 0; role < 2 && peer >= 0; role++) {
		int sender = (mt_rank < peer) == (role == 0);
		mprobe_claims(peer, sender, 100, 5000);
		mprobe_claims(peer, sender, 200000, 3);
		mprobe_claims(peer, sender, 70000, 1048576);
	}
	mt_finish();
	return 0;
}
