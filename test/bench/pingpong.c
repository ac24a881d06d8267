/*
 * Tagged ping-pong latency and streaming bandwidth between two processes of
 * one node, for any libfabric provider:
 *
 *   pingpong [-p provider] [-i iterations] [-w warmup] [-m max_size]
 *
 * The program forks; the two processes bind to different CPUs and exchange
 * their addresses over a socketpair.  For each size from 1 byte to max_size
 * (powers of two) it prints one line: size, one-way latency in microseconds
 * (round trip / 2) and bandwidth in MB/s (10^6 bytes/s) for windows of 64
 * fi_tsend followed by one 0-byte acknowledgement, each from the median of
 * its timed blocks (as in test/bench/latency), so that a moment when another
 * process held a CPU does not spoil a point.  Lines starting with '#' are
 * comments.
 *
 * The finer-grained benchmarks (latency, bandwidth, msgrate, incast) share
 * its code (common.c) and compare providers: see test/bench/compare.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common.h"

#define SCALE_FROM	(64 * 1024)	/* sizes above this run fewer iterations */

static void usage(void)
{
	fprintf(stderr, "usage: pingpong [-p provider] [-i iterations] [-w warmup] "
			"[-m max_size]\n");
	exit(EXIT_FAILURE);
}

int main(int argc, char **argv)
{
	struct bench_opts o = { .iters = 10000, .reps = 1, .bind = true };
	struct bench b = { 0 };
	struct bench_ctx *ctx;
	const char *prov = "xshm";
	size_t max_size = 4 << 20;
	int warmup = 1000, c;

	while ((c = getopt(argc, argv, "p:i:w:m:h")) != -1) {
		switch (c) {
		case 'p': prov = optarg; break;
		case 'i': o.iters = (int)bench_number(optarg, 1); break;
		case 'w': warmup = (int)bench_number(optarg, 0); break;
		case 'm': max_size = (size_t)bench_number(optarg, 1); break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	o.provs[0] = prov;
	o.nprov = 1;
	bench_default_sizes(&o, max_size, false);
	bench_start(&b, "pingpong", &o, 2);
	ctx = &b.ctx[0];
	if (b.rank == 0) {
		printf("# pingpong: provider %s, %d iterations, %d warmup, window %d\n",
		       ctx->info->fabric_attr->prov_name, o.iters, warmup, BENCH_WINDOW);
		printf("# %-10s %12s %16s\n", "size", "latency_us", "bandwidth_MBps");
		fflush(stdout);
	}
	for (size_t i = 0; i < o.nsizes; i++) {
		size_t size = o.sizes[i];
		int lat_iters = bench_scaled(o.iters, size, SCALE_FROM, 10);
		int bw_iters = bench_scaled(o.iters / 10, size, SCALE_FROM, 2);
		double lat, bw;

		if (warmup > 0) {
			bench_latency(&b, ctx, size, bench_scaled(warmup, size, SCALE_FROM, 1));
			bench_stream(&b, ctx, size, bench_scaled(warmup / 10, size, SCALE_FROM, 1));
		}
		lat = bench_latency(&b, ctx, size, lat_iters);
		bw = bench_stream(&b, ctx, size, bw_iters);
		if (b.rank == 0) {
			printf("%-12zu %12.3f %16.2f\n", size, lat, bw);
			fflush(stdout);
		}
	}
	bench_finish(&b);
	free(o.sizes);
	return EXIT_SUCCESS;
}
