/*
 * Tagged message rate between two processes of one node: windows of 64
 * fi_tsend of 8 bytes, each window acknowledged by a 0-byte message.
 *
 *   msgrate [-p prov[,prov...]] [-s sizes] [-i windows] [-r reps] [-w warmup%]
 *
 * Prints one line per provider, size and repetition:
 * "provider size rep Mmsgps" (10^6 messages per second), computed from the
 * median time of the point's windows (-a: from the whole point).
 * Lines starting with '#' are comments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common.h"

static void usage(void)
{
	fprintf(stderr, "usage: msgrate [options]   (default size 8)\n" BENCH_OPTHELP);
	exit(EXIT_FAILURE);
}

static double rate(struct bench *b, struct bench_ctx *c, size_t size, int iters)
{
	return bench_stream(b, c, size, iters) / (double)size;
}

int main(int argc, char **argv)
{
	struct bench_opts o = { .iters = 300, .reps = 1, .warmup_pct = 10,
				.max_point_ms = 200, .settle_ms = 300 };
	struct bench b = { 0 };
	int c;

	bench_parse_provs(&o, "xshm");
	bench_parse_sizes(&o, "8");
	while ((c = getopt(argc, argv, BENCH_OPTSTRING "h")) != -1)
		if (!bench_opt(&o, c, optarg))
			usage();
	if (optind != argc)
		usage();
	o.tx_window = BENCH_WINDOW;
	bench_start(&b, "msgrate", &o, 2);
	if (b.rank == 0) {
		printf("# msgrate: tagged, window %d, %d windows, %d repetitions\n"
		       "# provider size rep Mmsgps\n", BENCH_WINDOW, o.iters, o.reps);
		fflush(stdout);
	}
	bench_sweep(&b, &o, rate, 4096, 1, false);
	bench_finish(&b);
	free(o.sizes);
	free(o.provs_buf);
	return EXIT_SUCCESS;
}
