/*
 * Tagged ping-pong latency between two processes of one node:
 *
 *   latency [-p prov[,prov...]] [-s sizes] [-i iters] [-r reps] [-w warmup%]
 *
 * Prints one line per provider, size and repetition:
 * "provider size rep latency_us" (one way: round trip / 2), computed from
 * the median time of the point's blocks of 8 round trips (of 1 above
 * 16 KiB, with at least 10 round trips; -a: from the
 * whole point), so that moments when another process holds a CPU spoil
 * few points.
 * Default sizes: powers of two from 1 B to 4 MiB and the sizes around the
 * protocol changes of xshm and shm (bench_default_sizes in common.c).
 * Lines starting with '#' are comments.
 */
#include <stdio.h>

#include "common.h"

static void header(const struct bench_opts *o)
{
	printf("# latency: tagged ping-pong, %d iterations (fewer above 16 KiB), "
	       "%d repetitions\n# provider size rep latency_us\n", o->iters, o->reps);
}

int main(int argc, char **argv)
{
	static const struct bench_program latency = {
		.name = "latency", .nprocs = 2, .iters = 1000,
		.kernel = bench_latency, .scale_from = 16384, .min_iters = 10,
		.header = header,
	};

	return bench_main(argc, argv, &latency);
}
