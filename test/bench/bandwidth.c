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

#include "common.h"

static void header(const struct bench_opts *o)
{
	printf("# bandwidth: tagged, window %d, %d windows (fewer above 4 KiB), "
	       "%d repetitions\n# provider size rep MBps Mmsgps\n", BENCH_WINDOW,
	       o->iters, o->reps);
}

int main(int argc, char **argv)
{
	static const struct bench_program bandwidth = {
		.name = "bandwidth", .nprocs = 2, .iters = 100,
		.tx_window = BENCH_WINDOW, .kernel = bench_stream,
		.scale_from = 4096, .min_iters = 3, .per_size_too = true,
		.header = header,
	};

	return bench_main(argc, argv, &bandwidth);
}
