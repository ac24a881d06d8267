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
#include <stdlib.h>
#include <unistd.h>

#include "common.h"

static void usage(void)
{
	fprintf(stderr, "usage: latency [options]\n" BENCH_OPTHELP);
	exit(EXIT_FAILURE);
}

int main(int argc, char **argv)
{
	struct bench_opts o = { .iters = 1000, .reps = 1, .warmup_pct = 10,
				.max_point_ms = 200, .settle_ms = 300 };
	struct bench b = { 0 };
	int c;

	bench_parse_provs(&o, "xshm");
	bench_default_sizes(&o, 4 << 20, true);
	while ((c = getopt(argc, argv, BENCH_OPTSTRING "h")) != -1)
		if (!bench_opt(&o, c, optarg))
			usage();
	if (optind != argc)
		usage();
	bench_start(&b, "latency", &o, 2);
	if (b.rank == 0) {
		printf("# latency: tagged ping-pong, %d iterations (fewer above 16 KiB), "
		       "%d repetitions\n# provider size rep latency_us\n", o.iters, o.reps);
		fflush(stdout);
	}
	bench_sweep(&b, &o, bench_latency, 16384, 10, false);
	bench_finish(&b);
	free(o.sizes);
	free(o.provs_buf);
	return EXIT_SUCCESS;
}
