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

#include "common.h"

static double rate(struct bench *b, struct bench_ctx *c, size_t size, int iters)
{
	return bench_stream(b, c, size, iters) / (double)size;
}

static void header(const struct bench_opts *o)
{
	printf("# msgrate: tagged, window %d, %d windows, %d repetitions\n"
	       "# provider size rep Mmsgps\n", BENCH_WINDOW, o->iters, o->reps);
}

int main(int argc, char **argv)
{
	static const struct bench_program msgrate = {
		.name = "msgrate", .usage = "   (default size 8)", .nprocs = 2,
		.iters = 300, .sizes = "8", .tx_window = BENCH_WINDOW,
		.kernel = rate, .scale_from = 4096, .min_iters = 1,
		.header = header,
	};

	return bench_main(argc, argv, &msgrate);
}
