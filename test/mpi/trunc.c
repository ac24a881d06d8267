/* Truncation: a receive smaller than the message that matches it must fail with an
 * error of class MPI_ERR_TRUNCATE (the communicator has MPI_ERRORS_RETURN), must not
 * write past the receive buffer, must not hang, and both ranks must go on
 * communicating correctly afterwards. Pairs rank^1, both directions. The first case is
 * the classic one: MPI_Recv of 5000 bytes into a 4096-byte buffer. */
#include "mpitest.h"

#define GUARD 4096

/* after each truncation: messages both ways, checked, so a provider left in a bad
 * state shows here */
static void still_talking(int peer, int round)
{
	static const size_t sz[] = {0, 1, 5000, 70001, 1048576};
	for (unsigned i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
		size_t n = sz[i];
		int tag = 500 + (int)i;
		char *s = mt_alloc(n), *r = mt_alloc(n);
		MPI_Status st;
		mt_fill(s, n, mt_rank, tag, round);
		memset(r, 0xee, n);
		MT_CHECK(MPI_Sendrecv(s, (int)n, MPI_BYTE, peer, tag, r, (int)n, MPI_BYTE, peer, tag,
				      MPI_COMM_WORLD, &st));
		mt_status_is(&st, peer, tag, n, "exchange after a truncation");
		mt_expect(r, n, peer, tag, round, "exchange after a truncation");
		free(s);
		free(r);
	}
}

/* sender sends msg bytes; receiver receives into cap bytes (blocking or Irecv+Wait) */
static void truncate_case(int peer, int sender, size_t msg, size_t cap, int nonblocking, int round)
{
	const int tag = 7;

	if (sender) {
		char *s = mt_alloc(msg);
		MPI_Request rq;
		mt_fill(s, msg, mt_rank, tag, round);
		/* Isend + Wait: a large send must complete too, whatever the receiver did */
		MT_CHECK(MPI_Isend(s, (int)msg, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq));
		MT_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
		free(s);
		return;
	}

	unsigned char *r = mt_alloc(cap + GUARD);
	MPI_Status st;
	MPI_Request rq;
	int rc, cls = -1;

	memset(r, 0xee, cap + GUARD);
	st.MPI_ERROR = MPI_SUCCESS;
	if (nonblocking) {
		MT_CHECK(MPI_Irecv(r, (int)cap, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq));
		rc = MPI_Wait(&rq, &st);
	} else {
		rc = MPI_Recv(r, (int)cap, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
	}
	MT_ASSERT(rc != MPI_SUCCESS, "%s of %zu bytes into %zu returned MPI_SUCCESS, expected "
		  "MPI_ERR_TRUNCATE", nonblocking ? "Irecv+Wait" : "Recv", msg, cap);
	MPI_Error_class(rc, &cls);
	MT_ASSERT(cls == MPI_ERR_TRUNCATE, "%s of %zu bytes into %zu: error class %d, expected "
		  "MPI_ERR_TRUNCATE (%d)", nonblocking ? "Irecv+Wait" : "Recv", msg, cap, cls,
		  MPI_ERR_TRUNCATE);
	for (size_t i = cap; i < cap + GUARD; i++)
		MT_ASSERT(r[i] == 0xee, "truncated receive of %zu into %zu wrote past the buffer "
			  "(byte %zu)", msg, cap, i);
	free(r);
}

int main(int argc, char **argv)
{
	static const struct { size_t msg, cap; int nb; } cases[] = {
		{5000, 4096, 0}, {5000, 4096, 1}, {100, 64, 0}, {1, 0, 0},
		{70000, 65536, 0}, {200000, 100000, 1}, {4194304, 4096, 0},
	};
	int peer;

	mt_init(&argc, &argv, "trunc");
	peer = mt_rank ^ 1;
	if (peer >= mt_size)
		peer = -1;
	for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (int role = 0; role < 2; role++) {
			MT_STEP("%s of %zu bytes into %zu, %s, then exchange",
				cases[c].nb ? "Irecv+Wait" : "Recv", cases[c].msg, cases[c].cap,
				role ? "odd ranks receiving" : "even ranks receiving");
			if (peer >= 0) {
				int sender = (mt_rank < peer) == (role == 1);
				truncate_case(peer, sender, cases[c].msg, cases[c].cap, cases[c].nb,
					      (int)c * 2 + role);
				still_talking(peer, (int)c * 2 + role);
			}
			MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		}
	}
	mt_finish();
	return 0;
}
