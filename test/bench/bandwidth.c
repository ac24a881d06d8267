/*
 * Tagged streaming bandwidth between two processes of one node: windows of
 * 64 fi_tsend, each window acknowledged by a 0-byte message.
 *
 *   bandwidth [-p prov[,prov...]] [-s sizes] [-i windows] [-r reps] [-w warmup%]
 *
 * Prints one line per provider, size and repetition:
 * "provider size rep MBps Mmsgps" (10^6 bytes and 10^6 messages per second),
 * computed from the median time of the point's windows (at least 3, unless
 * the time per point (-t) is over first; -a: from the whole point).
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
	fprintf(stderr, "usage: bandwidth [options]\n" BENCH_OPTHELP);
	exit(EXIT_FAILURE);
}

int main(int argc, char **argv)
{
	struct bench_opts o = { .iters = 100, .reps = 1, .warmup_pct = 10,
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
	o.tx_window = BENCH_WINDOW;
	bench_start(&b, "bandwidth", &o, 2);
	if (b.rank == 0) {
		printf("# bandwidth: tagged, window %d, %d windows (fewer above 4 KiB), "
		       "%d repetitions\n# provider size rep MBps Mmsgps\n", BENCH_WINDOW,
		       o.iters, o.reps);
		fflush(stdout);
	}
	bench_sweep(&b, &o, bench_stream, 4096, 3, true);
	bench_finish(&b);
	free(o.sizes);
	free(o.provs_buf);
	return EXIT_SUCCESS;
}
