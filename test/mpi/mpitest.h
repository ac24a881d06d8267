/* Helpers shared by the MPI test programs of test/mpi/ (built by run.sh with mpicc).
 *
 * Every check that fails prints "FAIL <prog> rank R: <what>" on stderr and aborts
 * the job, so mpirun exits nonzero. Data is a pattern that depends on the sender,
 * the tag, the message number and the byte offset, so a byte from a wrong message
 * or at a wrong place is seen. */
#ifndef XSHM_MPITEST_H
#define XSHM_MPITEST_H

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mt_rank = -1, mt_size = 0;
static const char *mt_prog = "?";
static double mt_t0;

static void mt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void mt_fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "FAIL %s rank %d: %s\n", mt_prog, mt_rank, msg);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

/* an MPI call that must return MPI_SUCCESS (the communicators use MPI_ERRORS_RETURN) */
#define MT_CHECK(call)                                                              \
	do {                                                                        \
		int mt_rc_ = (call);                                                \
		if (mt_rc_ != MPI_SUCCESS) {                                        \
			char mt_s_[MPI_MAX_ERROR_STRING];                           \
			int mt_l_ = 0;                                              \
			MPI_Error_string(mt_rc_, mt_s_, &mt_l_);                    \
			mt_fail("%s:%d: %s returned %d (%s)", __FILE__, __LINE__,   \
				#call, mt_rc_, mt_s_);                              \
		}                                                                   \
	} while (0)

#define MT_ASSERT(cond, ...)                                                        \
	do {                                                                        \
		if (!(cond))                                                        \
			mt_fail(__VA_ARGS__);                                       \
	} while (0)

static void mt_init(int *argc, char ***argv, const char *prog)
{
	mt_prog = prog;
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
	/* report errors as return codes, so MT_CHECK can say which call failed */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	/* no buffering of progress lines: a run killed by its timeout shows where it was */
	setvbuf(stdout, NULL, _IOLBF, 0);
	mt_t0 = MPI_Wtime();

	/* say where the ranks run, so a multi-node run can be seen to be one */
	char name[MPI_MAX_PROCESSOR_NAME] = "", *all = NULL;
	int len = 0, hosts = 0;
	MPI_Get_processor_name(name, &len);
	if (mt_rank == 0)
		all = calloc((size_t)mt_size, MPI_MAX_PROCESSOR_NAME);
	MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
		   MPI_COMM_WORLD);
	if (mt_rank == 0) {
		char list[256] = "";
		for (int r = 0; r < mt_size; r++) {
			const char *h = all + (size_t)r * MPI_MAX_PROCESSOR_NAME;
			int seen = 0;
			for (int q = 0; q < r && !seen; q++)
				seen = !strcmp(h, all + (size_t)q * MPI_MAX_PROCESSOR_NAME);
			if (!seen && ++hosts <= 8)
				snprintf(list + strlen(list), sizeof(list) - strlen(list), " %s", h);
		}
		printf("  %s: %d ranks on %d hosts:%s\n", mt_prog, mt_size, hosts, list);
		free(all);
	}
}

static void mt_finish(void)
{
	MT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	if (mt_rank == 0)
		printf("OK %s (%d ranks)\n", mt_prog, mt_size);
	MPI_Finalize();
}

/* progress line from rank 0 (the last one printed tells where a hung run was) */
#define MT_STEP(...)                                                                \
	do {                                                                        \
		if (mt_rank == 0) {                                                 \
			printf("  %s %.1fs: ", mt_prog, MPI_Wtime() - mt_t0);                                  \
			printf(__VA_ARGS__);                                        \
			printf("\n");                                               \
		}                                                                   \
	} while (0)

static inline uint8_t mt_byte(int src, int tag, int seq, size_t i)
{
	uint32_t x = (uint32_t)src * 0x9e3779b1u ^ (uint32_t)tag * 0x85ebca6bu ^
		     (uint32_t)seq * 0xc2b2ae35u ^ (uint32_t)(i >> 8) * 0x27d4eb2fu;
	x ^= x >> 15;
	return (uint8_t)(x + (uint32_t)i);
}

static inline void mt_fill(void *buf, size_t len, int src, int tag, int seq)
{
	uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = mt_byte(src, tag, seq, i);
}

/* returns the first wrong offset, or -1 */
static inline long mt_verify(const void *buf, size_t len, int src, int tag, int seq)
{
	const uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		if (p[i] != mt_byte(src, tag, seq, i))
			return (long)i;
	return -1;
}

static inline void mt_expect(const void *buf, size_t len, int src, int tag, int seq, const char *what)
{
	long bad = mt_verify(buf, len, src, tag, seq);
	if (bad >= 0)
		mt_fail("%s: %zu bytes from rank %d tag %d seq %d: byte %ld is 0x%02x, expected 0x%02x",
			what, len, src, tag, seq, bad, ((const uint8_t *)buf)[bad],
			mt_byte(src, tag, seq, (size_t)bad));
}

static inline void *mt_alloc(size_t len)
{
	void *p = malloc(len ? len : 1);
	MT_ASSERT(p, "out of memory (%zu bytes)", len);
	return p;
}

static inline void mt_status_is(const MPI_Status *st, int src, int tag, size_t len, const char *what)
{
	int count = -1;
	MT_CHECK(MPI_Get_count(st, MPI_BYTE, &count));
	MT_ASSERT(st->MPI_SOURCE == src && st->MPI_TAG == tag && count == (int)len,
		  "%s: status source %d tag %d count %d, expected %d %d %zu", what,
		  st->MPI_SOURCE, st->MPI_TAG, count, src, tag, len);
}

#endif
