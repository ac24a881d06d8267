/*
 * A provider's own software per tagged message, without the cache lines
 * that cross between cores: one process posts a receive, sends itself a
 * message and waits for both completions, over and over.
 *
 *   loopback [-p prov[,prov...]] [-s sizes] [-i iters] [-r reps] [-w warmup%]
 *
 * A small message of `latency` costs about this much work on the critical
 * path plus the line transfers between the two cores (ring_floor has those
 * alone), so where a change to the small-message path is too small to show
 * through the guest's drifting placements, it shows here.  Prints
 * "provider size rep time_us" per message, from the median time of the
 * point's blocks of 8 messages (-a: from the whole point).
 * Default sizes: 8, 64 and 1K.  Lines starting with '#' are comments.
 */
#include <stdio.h>

#include "common.h"

static double loopback(struct bench *b, struct bench_ctx *c, size_t size,
		       int iters)
{
	double t0, tb, tnow;
	int i = 0;

	b->nblk = 0;
	t0 = tb = tnow = bench_now_us();
	/* tnow is read once a block, by bench_block_done: no clock of its own */
	while (i < iters && !bench_past_time(b, t0, tnow)) {
		i++;
		bench_trecv(b, c, size, BENCH_LAT_TAG);
		bench_tsend(b, c, 0, size, BENCH_LAT_TAG);
		bench_wait(b, c, true, true);
		if (i % BENCH_LAT_BLOCK == 0)
			bench_block_done(b, &tb, &tnow);
	}
	return bench_per_iter(b, bench_now_us() - t0, i, BENCH_LAT_BLOCK);
}

static void header(const struct bench_opts *o)
{
	printf("# loopback: a tagged message to itself, %d iterations, %d repetitions\n"
	       "# provider size rep time_us\n", o->iters, o->reps);
}

int main(int argc, char **argv)
{
	static const struct bench_program program = {
		.name = "loopback", .nprocs = 1, .iters = 100000,
		.sizes = "8,64,1K", .kernel = loopback, .scale_from = 16384,
		.min_iters = 10, .header = header,
	};

	return bench_main(argc, argv, &program);
}
