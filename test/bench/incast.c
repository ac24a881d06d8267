/*
 * N-to-1 incast: N sender processes stream tagged messages to one receiver
 * on the same node, each in windows acknowledged by the receiver.
 *
 *   incast [-n senders] [-k window] [-M] [-p prov[,prov...]] [-s sizes]
 *          [-i windows] [-r reps] [-w warmup%]
 *
 * Prints one line per provider, size and repetition:
 * "provider size rep MBps Mmsgps", aggregate over all senders as seen by
 * the receiver (which stops every sender when the time per point is over).
 * The window per sender is 64, or less so that the
 * receiver's posted receives fit its provider's rx_attr->size.  With more
 * processes than cores, idle processes yield the CPU while they wait.
 *
 * -M (one provider) reports shared memory instead: after one round at each
 * size, each process prints "mem provider rank peers own_kib own_rss_kib
 * all_kib all_rss_kib mappings", where own is what the process mapped when
 * its endpoint was enabled (its own region files, measured again now) and
 * all is every shared-memory mapping it has (own and peers').
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

static int nsenders = 4, window = BENCH_WINDOW;

static void usage(void)
{
	fprintf(stderr, "usage: incast [-n senders] [-k window] [-M] [options]\n"
			"  -n senders         default 4\n"
			"  -k window          per sender, default 64 (less if rx size needs)\n"
			"  -M                 report shared-memory mappings instead\n"
			BENCH_OPTHELP);
	exit(EXIT_FAILURE);
}

static void post_window(struct bench *b, struct bench_ctx *c, int from, size_t size)
{
	for (int w = 0; w < window; w++)
		bench_trecv(b, c, size, BENCH_DATA_TAG + (uint64_t)from);
}

static double incast(struct bench *b, struct bench_ctx *c, size_t size, int iters)
{
	int done[BENCH_MAX_PROCS], active = b->nprocs - 1;
	size_t expect[BENCH_MAX_PROCS], windows = 0;
	double t0;

	c->stop_seen = false;
	if (b->rank != 0) {
		bench_barrier(b);
		while (!c->stop_seen) {
			bench_trecv(b, c, 0, BENCH_ACK_TAG);
			for (int w = 0; w < window; w++)
				bench_tsend(b, c, 0, size, BENCH_DATA_TAG + (uint64_t)b->rank);
			bench_wait(b, c, true, true);
		}
		return 0;
	}
	for (int s = 1; s < b->nprocs; s++) {
		post_window(b, c, s, size);
		done[s] = 0;
		expect[s] = c->recvd_by_rank[s] + (size_t)window;
	}
	bench_barrier(b);
	t0 = bench_now_us();
	while (active > 0) {
		bench_progress(b, c);
		for (int s = 1; s < b->nprocs; s++) {
			bool last;

			if (done[s] < 0 || c->recvd_by_rank[s] < expect[s])
				continue;
			windows++;
			last = bench_point_over(b, t0, ++done[s], iters);
			if (!last) {
				post_window(b, c, s, size);
				expect[s] += (size_t)window;
			} else {
				done[s] = -1;
				active--;
			}
			bench_tsend(b, c, s, 0, BENCH_ACK_TAG | (last ? BENCH_STOP : 0));
		}
	}
	t0 = bench_now_us() - t0;
	bench_wait(b, c, true, false);
	return (double)size * window * windows / t0;
}

struct mem_report {
	struct bench_shm_maps own, all;
};

static void memory(struct bench *b, const struct bench_opts *o)
{
	struct bench_ctx *c = &b->ctx[0];
	struct mem_report m;

	for (size_t i = 0; i < o->nsizes; i++)
		incast(b, c, o->sizes[i], 2);
	bench_barrier(b);
	bench_shm_maps(&m.all, &m.own, &b->own_files, NULL);
	if (b->rank != 0) {
		if (write(b->sock[0], &m, sizeof(m)) != (ssize_t)sizeof(m))
			bench_die("socket write failed");
		return;
	}
	bench_shm_list(stdout, 0);
	printf("# mem provider rank peers own_kib own_rss_kib all_kib all_rss_kib mappings\n");
	for (int r = 0; r < b->nprocs; r++) {
		if (r > 0 && read(b->sock[r], &m, sizeof(m)) != (ssize_t)sizeof(m))
			bench_die("socket read failed");
		printf("mem %s %d %d %zu %zu %zu %zu %d\n", c->prov, r, r ? 1 : b->nprocs - 1,
		       m.own.size_kib, m.own.rss_kib, m.all.size_kib, m.all.rss_kib,
		       m.all.count);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct bench_opts o = { .iters = 50, .reps = 1, .warmup_pct = 10,
				.max_point_ms = 200, .settle_ms = 300 };
	struct bench b = { 0 };
	bool mem = false;
	int c;

	bench_parse_provs(&o, "xshm");
	bench_parse_sizes(&o, "8,256,4K,16K,64K,1M");
	while ((c = getopt(argc, argv, BENCH_OPTSTRING "n:k:Mh")) != -1) {
		if (bench_opt(&o, c, optarg))
			continue;
		switch (c) {
		case 'n': nsenders = (int)bench_number(optarg, 1); break;
		case 'k': window = (int)bench_number(optarg, 1); break;
		case 'M': mem = true; break;
		default: usage();
		}
	}
	if (optind != argc || nsenders >= BENCH_MAX_PROCS)
		usage();
	if (mem && o.nprov != 1)
		bench_die("-M measures one provider at a time");
	b.cq_size = (size_t)(window + 4) * (size_t)nsenders * 2;
	if (b.cq_size < 4 * BENCH_WINDOW)
		b.cq_size = 4 * BENCH_WINDOW;
	o.tx_window = window;
	bench_start(&b, "incast", &o, nsenders + 1);
	for (int p = 0; p < b.nprov; p++) {
		size_t fit = b.ctx[p].info->rx_attr->size / (size_t)nsenders;

		if (fit < 1)
			bench_die("%s: rx size %zu is less than %d senders", b.ctx[p].prov,
				  b.ctx[p].info->rx_attr->size, nsenders);
		if ((size_t)window > fit)
			window = (int)fit;
	}
	if (mem) {
		memory(&b, &o);
	} else {
		if (b.rank == 0) {
			printf("# incast: %d senders to 1 receiver, tagged, window %d per "
			       "sender, %d windows (fewer above 4 KiB), %d repetitions\n"
			       "# provider size rep MBps Mmsgps\n", nsenders, window, o.iters,
			       o.reps);
			fflush(stdout);
		}
		bench_sweep(&b, &o, incast, 4096, 1, true);
	}
	bench_finish(&b);
	free(o.sizes);
	free(o.provs_buf);
	return EXIT_SUCCESS;
}
