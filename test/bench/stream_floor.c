/*
 * The floor under streaming bandwidth through bounce buffers: two processes
 * stream messages through a ring of slots in shared memory and do nothing
 * else.  The sender copies each message into the next free slot and
 * publishes it; the receiver copies it out and frees the slot.  Two copies
 * a message, as xshm's cells and bounce buffers and libfabric's shm make:
 * what a provider reaches beyond this, it reaches by copying once.
 *
 *   stream_floor [-s sizes] [-i iterations] [-r repetitions] [-k slots] [-l]
 *
 * -k sets the ring's slots (default and most 64, bandwidth's window).  On
 * the 2-core AMD EPYC guest it was written on, 4 to 64 slots made no
 * difference at 4 KiB; from 16 KiB, fewer slots kept the ring in the cache.
 * Slots lie back to back, each a whole number of cache lines, and each
 * slot's flag has a line of its own.  Copies are xshm's (shm/copy.h).  The
 * receiver checks the bytes of the last message of each point.  -i scales
 * a point's messages (1024: about 64 MiB a point).  Prints "stream size
 * rep MBps", from the receiver's time for the messages after the first
 * ring's worth.
 *
 * -l measures the latency of the same two copies instead: the processes
 * ping-pong a message through one slot each way, iterations * 8 round
 * trips a point, and print "pingpong size rep latency_us" (one way), from
 * the median time of blocks of 8 round trips, as latency does.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "shm/copy.h"
#include "shm/layout.h"

#define SLOTS_MAX	64
#define LEN_MAX		(64 * 1024)
#define BLOCK		8	/* round trips timed together (-l) */

struct flag {
	_Atomic uint64_t seq;
	char pad[XSHM_CACHE_LINE - sizeof(uint64_t)];
};

/*
 * Message i goes in slot i % slots, free for it while the slot's flag
 * reads 2 * (i / slots) and full once it reads one more.  Indexes run on
 * from point to point; the receiver opens each point (opened = its first
 * index) once it has emptied every slot of the one before, whose slots
 * were of another size.
 */
struct shared {
	struct flag flags[SLOTS_MAX];
	struct flag opened;
	unsigned char data[];
};

struct stream {
	struct shared *shm;
	uint64_t slots;
	size_t slot_size;
	uint64_t first;		/* the point's first message */
	uint64_t count;		/* its messages */
	bool pingpong;		/* -l */
};

static unsigned char *slot_of(const struct stream *s, uint64_t i)
{
	return s->shm->data + (i % s->slots) * s->slot_size;
}

static _Atomic uint64_t *flag_of(const struct stream *s, uint64_t i)
{
	return &s->shm->flags[i % s->slots].seq;
}

static void wait_for(_Atomic uint64_t *seq, uint64_t value)
{
	while (atomic_load_explicit(seq, memory_order_acquire) != value)
		;
}

static void send_all(const struct stream *s, const unsigned char *tx,
		     size_t len)
{
	for (uint64_t i = s->first; i < s->first + s->count; i++) {
		uint64_t lap = 2 * (i / s->slots);

		wait_for(flag_of(s, i), lap);
		xshm_copy(slot_of(s, i), tx, len);
		atomic_store_explicit(flag_of(s, i), lap + 1,
				      memory_order_release);
	}
}

/* The time of the messages after the first ring's worth, in us. */
static double recv_all(const struct stream *s, unsigned char *rx, size_t len)
{
	double start = 0;

	for (uint64_t i = s->first; i < s->first + s->count; i++) {
		uint64_t lap = 2 * (i / s->slots);

		wait_for(flag_of(s, i), lap + 1);
		if (i == s->first + s->slots)
			start = bench_now_us();
		xshm_copy(rx, slot_of(s, i), len);
		atomic_store_explicit(flag_of(s, i), lap + 2,
				      memory_order_release);
	}
	return bench_now_us() - start;
}

/*
 * -l: message i of rank r lies in slot r, whose flag reads i + 1 once it
 * is there; a rank writes its slot again only once the peer has answered,
 * so after the peer copied the message out.
 */
static void pingpong_send(const struct stream *s, int rank, uint64_t i,
			  const unsigned char *tx, size_t len)
{
	xshm_copy(s->shm->data + rank * s->slot_size, tx, len);
	atomic_store_explicit(&s->shm->flags[rank].seq, i + 1,
			      memory_order_release);
}

static void pingpong_recv(const struct stream *s, int rank, uint64_t i,
			  unsigned char *rx, size_t len)
{
	wait_for(&s->shm->flags[!rank].seq, i + 1);
	xshm_copy(rx, s->shm->data + !rank * s->slot_size, len);
}

/* The one-way latency in us, from the median block of BLOCK round trips. */
static double pingpong_all(const struct stream *s, int rank,
			   const unsigned char *tx, unsigned char *rx,
			   size_t len)
{
	int blocks = (int) (s->count / BLOCK);
	double *block_us = malloc(blocks * sizeof(*block_us)), median;
	uint64_t i = s->first;

	if (!block_us)
		bench_die("out of memory");
	for (int b = 0; b < blocks; b++) {
		double start = bench_now_us();

		for (int k = 0; k < BLOCK; k++, i++) {
			if (rank == 0) {
				pingpong_send(s, rank, i, tx, len);
				pingpong_recv(s, rank, i, rx, len);
			} else {
				pingpong_recv(s, rank, i, rx, len);
				pingpong_send(s, rank, i, tx, len);
			}
		}
		block_us[b] = bench_now_us() - start;
	}
	median = bench_median(block_us, blocks) / (2.0 * BLOCK);
	free(block_us);
	return median;
}

static void check_received(const unsigned char *rx, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (rx[i] != 'a')
			bench_die("byte %zu of %zu arrived as %#x", i, len, rx[i]);
}

/*
 * The two ranks start each point together: rank 0 opens it once done with
 * the point before, and rank 1 waits for that.
 */
static void open_point(int rank, const struct stream *s, unsigned char *rx,
		       size_t len)
{
	memset(rx, 0, len);
	if (rank == 1)
		wait_for(&s->shm->opened.seq, s->first);
	else
		atomic_store_explicit(&s->shm->opened.seq, s->first,
				      memory_order_release);
}

/* One point of -l: rank 0 prints the latency. */
static void pingpong_point(int rank, struct stream *s, size_t len, int iters,
			   int rep, const unsigned char *tx, unsigned char *rx)
{
	double us;

	s->count = (uint64_t) iters * BLOCK;
	open_point(rank, s, rx, len);
	us = pingpong_all(s, rank, tx, rx, len);
	check_received(rx, len);
	if (rank == 0)
		printf("pingpong %zu %d %.4f\n", len, rep, us);
}

/* One streaming point: the receiver, rank 0, prints its bandwidth. */
static void stream_point(int rank, struct stream *s, size_t len, int iters,
			 int rep, const unsigned char *tx, unsigned char *rx)
{
	uint64_t count = (uint64_t) iters * 64 * 1024 / len;
	double us;

	s->count = count < 4 * s->slots ? 4 * s->slots : count;
	open_point(rank, s, rx, len);
	if (rank == 1) {
		send_all(s, tx, len);
		return;
	}
	us = recv_all(s, rx, len);
	check_received(rx, len);
	printf("stream %zu %d %.1f\n", len, rep,
	       (double) (s->count - s->slots) * len / us);
}

static void point(int rank, struct stream *s, size_t len, int iters, int rep,
		  const unsigned char *tx, unsigned char *rx)
{
	s->slot_size = (len + XSHM_CACHE_LINE - 1) &
		       ~(size_t) (XSHM_CACHE_LINE - 1);
	if (s->pingpong)
		pingpong_point(rank, s, len, iters, rep, tx, rx);
	else
		stream_point(rank, s, len, iters, rep, tx, rx);
	s->first += s->count;
}

static void usage(void)
{
	fprintf(stderr, "usage: stream_floor [-s sizes] [-i iterations] "
		"[-r repetitions] [-k slots] [-l]\n");
	exit(EXIT_FAILURE);
}

static void parse(struct bench_opts *o, struct stream *s, int argc,
		  char **argv)
{
	int c;

	bench_parse_sizes(o, "64,1K,4K,16K,64K");
	while ((c = getopt(argc, argv, "s:i:r:k:lh")) != -1) {
		if (c == 'k')
			s->slots = (uint64_t) bench_number(optarg, 1);
		else if (c == 'l')
			s->pingpong = true;
		else if (c == 'h' || !bench_opt(o, c, optarg))
			usage();
	}
	if (optind != argc)
		usage();
	if (s->slots > SLOTS_MAX)
		bench_die("-k: at most %d slots", SLOTS_MAX);
	for (size_t i = 0; i < o->nsizes; i++)
		if (!o->sizes[i] || o->sizes[i] > LEN_MAX)
			bench_die("sizes from 1 byte to %d", LEN_MAX);
}

static void print_header(const struct stream *s)
{
	if (s->pingpong)
		printf("# stream_floor -l: ping-pong, two copies through a "
		       "shared slot each way alone\n"
		       "# provider size rep latency_us\n");
	else
		printf("# stream_floor: two copies through %llu shared slots "
		       "alone\n# provider size rep MBps\n",
		       (unsigned long long) s->slots);
}

int main(int argc, char **argv)
{
	struct bench_opts o = { .iters = 1024, .reps = 1 };
	struct stream s = { .slots = SLOTS_MAX };
	size_t bytes = sizeof(struct shared) + (size_t) SLOTS_MAX * LEN_MAX;
	unsigned char *tx, *rx;
	pid_t child;
	int rank, status;

	parse(&o, &s, argc, argv);
	alarm(600);	/* a peer that died leaves the other spinning */
	s.shm = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s.shm == MAP_FAILED)
		bench_die("mmap: %s", strerror(errno));
	atomic_store(&s.shm->opened.seq, UINT64_MAX);
	child = fork();
	if (child < 0)
		bench_die("fork: %s", strerror(errno));
	rank = child == 0;
	bench_bind_cpu(rank);
	tx = aligned_alloc(4096, LEN_MAX);
	rx = aligned_alloc(4096, LEN_MAX);
	if (!tx || !rx)
		bench_die("out of memory");
	memset(tx, 'a', LEN_MAX);
	if (rank == 0)
		print_header(&s);
	for (int rep = 0; rep < o.reps; rep++)
		for (size_t i = 0; i < o.nsizes; i++)
			point(rank, &s, o.sizes[i], o.iters, rep, tx, rx);
	if (rank == 1)
		_exit(EXIT_SUCCESS);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != EXIT_SUCCESS)
		bench_die("the sending process failed");
	free(o.sizes);
	free(tx);
	free(rx);
	return EXIT_SUCCESS;
}
