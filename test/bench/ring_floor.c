/*
 * The floor under xshm's small-message latency: two processes ping-pong
 * through two of xshm's rings (shm/ring.c) and nothing else.  The sender
 * copies the payload into the cell where a short message's payload goes
 * and commits it; the receiver polls the ring, copies the payload out (from
 * its end above XSHM_COPY_DOWN_ABOVE, as the provider does) and releases
 * the cell.  What `latency -p xshm` takes on top of this, at the
 * same size in the same minute, is the provider's own software.
 *
 *   ring_floor [-s sizes] [-i iterations] [-r repetitions]
 *
 * Sizes up to XSHM_SHORT_MAX (default 8, 32, 64, 256, 512, 984 and 2008 bytes).
 * Each process checks the bytes of the last message of each point.
 * Prints "ring size rep latency_us" (one way: round trip / 2), from the
 * median time of the point's blocks of 8 round trips, as latency does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "shm/copy.h"
#include "shm/layout.h"
#include "shm/ring.h"

#define BLOCK		8	/* round trips timed together */

static void send_one(const struct xshm_ring_ref *out, const void *buf,
		     size_t len)
{
	struct xshm_cmd *cmd;
	uint64_t pos;

	size_t in_line = XSHM_CACHE_LINE - XSHM_SHORT_HDR_SIZE;
	size_t head = len < in_line ? len : in_line;

	while (!(cmd = xshm_ring_reserve(out, &pos)))
		;
	/* the header's line last, as the provider does (send.c) */
	memcpy(cmd->short_data + head, (const char *) buf + head, len - head);
	cmd->chunk_len = (uint32_t) len;
	memcpy(cmd->short_data, buf, head);
	xshm_ring_commit(out, cmd, pos);
}

static void recv_one(const struct xshm_ring_ref *in, void *buf)
{
	const struct xshm_cmd *cmd;

	while (!(cmd = xshm_ring_peek(in)))
		;
	if (cmd->chunk_len > XSHM_COPY_DOWN_ABOVE)	/* as the provider does */
		xshm_copy_descending(buf, cmd->short_data, cmd->chunk_len);
	else
		memcpy(buf, cmd->short_data, cmd->chunk_len);
	xshm_ring_release_n(in, 1);
}

/* One point: rank 0 returns the one-way latency in us, rank 1 echoes. */
static double point(int rank, const struct xshm_ring_ref *in,
		    const struct xshm_ring_ref *out, size_t len, int iters,
		    unsigned char *tx, unsigned char *rx)
{
	int blocks = iters / BLOCK > 0 ? iters / BLOCK : 1;
	double *block_us = malloc(blocks * sizeof(*block_us));
	double median;

	if (!block_us)
		bench_die("out of memory");
	for (int b = 0; b < blocks; b++) {
		double start = bench_now_us();

		for (int i = 0; i < BLOCK; i++) {
			if (rank == 0) {
				send_one(out, tx, len);
				recv_one(in, rx);
			} else {
				recv_one(in, rx);
				send_one(out, tx, len);
			}
		}
		block_us[b] = bench_now_us() - start;
	}
	median = bench_median(block_us, blocks) / (2.0 * BLOCK);
	free(block_us);
	return median;
}

/* The last message of a point, from the peer whose bytes are 'a' + from. */
static void check_received(const unsigned char *rx, size_t len, int from)
{
	for (size_t i = 0; i < len; i++)
		if (rx[i] != 'a' + from)
			bench_die("byte %zu of %zu arrived as %#x", i, len, rx[i]);
}

static void usage(void)
{
	fprintf(stderr, "usage: ring_floor [-s sizes] [-i iterations] "
		"[-r repetitions]\n");
	exit(EXIT_FAILURE);
}

static void parse(struct bench_opts *o, int argc, char **argv)
{
	int c;

	bench_parse_sizes(o, "8,32,64,256,512,984,2008");
	while ((c = getopt(argc, argv, "s:i:r:h")) != -1)
		if (c == 'h' || !bench_opt(o, c, optarg))
			usage();
	if (optind != argc)
		usage();
	for (size_t i = 0; i < o->nsizes; i++)
		if (o->sizes[i] > XSHM_SHORT_MAX)
			bench_die("sizes up to %zu bytes", (size_t) XSHM_SHORT_MAX);
}

int main(int argc, char **argv)
{
	struct bench_opts o = { .iters = 20000, .reps = 1 };
	size_t ring_bytes = xshm_ring_bytes(XSHM_RING_CELLS, XSHM_CELL_SIZE);
	size_t stride = (ring_bytes + 4095) & ~(size_t) 4095;
	static unsigned char tx[XSHM_SHORT_MAX], rx[XSHM_SHORT_MAX];
	struct xshm_ring_ref in, out;
	unsigned char *mem;
	pid_t child;
	int rank, status;

	parse(&o, argc, argv);
	alarm(600);	/* a peer that died leaves the other spinning */
	mem = mmap(NULL, 2 * stride, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		bench_die("mmap: %s", strerror(errno));
	for (int r = 0; r < 2; r++)
		xshm_ring_init((struct xshm_ring *) (mem + r * stride),
			       XSHM_RING_CELLS, XSHM_CELL_SIZE);
	child = fork();
	if (child < 0)
		bench_die("fork: %s", strerror(errno));
	rank = child == 0;
	bench_bind_cpu(rank);
	if (xshm_ring_attach(&in, (struct xshm_ring *) (mem + rank * stride),
			     ring_bytes) ||
	    xshm_ring_attach(&out, (struct xshm_ring *) (mem + !rank * stride),
			     ring_bytes))
		bench_die("xshm_ring_attach failed");
	memset(tx, 'a' + rank, sizeof(tx));
	if (rank == 0)
		printf("# ring_floor: ping-pong through shm/ring.c alone, %d "
		       "iterations\n# provider size rep latency_us\n", o.iters);
	for (int rep = 0; rep < o.reps; rep++)
		for (size_t s = 0; s < o.nsizes; s++) {
			double us;

			memset(rx, 0, o.sizes[s]);
			us = point(rank, &in, &out, o.sizes[s], o.iters, tx, rx);
			check_received(rx, o.sizes[s], !rank);
			if (rank == 0)
				printf("ring %zu %d %.4f\n", o.sizes[s], rep, us);
		}
	if (rank == 1)
		_exit(EXIT_SUCCESS);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != EXIT_SUCCESS)
		bench_die("the echoing process failed");
	free(o.sizes);
	return EXIT_SUCCESS;
}
