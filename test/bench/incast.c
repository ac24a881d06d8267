/*
 * N-to-1 incast: N sender processes stream tagged messages to one receiver
 * on the same node, each in windows acknowledged by the receiver.
 *
 *   incast [-n senders] [-k window] [-M [-A avs]] [-p prov[,prov...]]
 *          [-s sizes] [-i windows] [-r reps] [-w warmup%]
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
 * all is every shared-memory mapping it has (own and peers').  With -A,
 * each process has avs AVs open on its domain, each holding the same
 * peers: it opens avs - 1 more endpoints, each bound to an AV of its own
 * into which it inserts the peers of its first one (rank 0: every sender;
 * a sender: rank 0), and sends one message from each to each of those
 * peers' first endpoint, which holds it unexpected.  Their regions count
 * as own; the peers' first endpoints see them as senders.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "common.h"

#define MEM_TAG		4	/* -A: the messages of the extra endpoints */
/*
 * Windows per sender in a point, however large the size: at 256 KiB and
 * more, scaling 50 windows from 4 KiB down gave one, whose time was mostly
 * that of the first messages of the size.
 */
#define INCAST_MIN_WINDOWS	8
#define EXTRA_MAX	8

static int nsenders = 4, window = BENCH_WINDOW, navs = 1;

static void usage(void)
{
	fprintf(stderr, "usage: incast [-n senders] [-k window] [-M] [options]\n"
			"  -n senders         default 4\n"
			"  -k window          per sender, default 64 (less if rx size needs)\n"
			"  -M                 report shared-memory mappings instead\n"
			"  -A avs             with -M: AVs open in each process, each\n"
			"                     with the same peers (default 1, at most 9)\n"
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

/* -A: the endpoints beside the first, each with an AV of its own. */
struct extra {
	struct fid_av *av;
	struct fid_ep *ep;
};

static struct extra extras[EXTRA_MAX];
static struct fid_cq *extra_cq;

static bool recorded(const struct bench_shm_files *f, const char *name)
{
	for (int i = 0; i < f->n; i++)
		if (!strcmp(f->name[i], name))
			return true;
	return false;
}

/* Opens them; the region files they map are added to the own files. */
static void open_extras(struct bench *b, struct bench_ctx *c)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = 64 };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .count = (size_t)b->nprocs };
	struct bench_shm_files before, after;
	struct bench_shm_maps maps;

	bench_shm_maps(&maps, NULL, NULL, &before);
	bench_check(fi_cq_open(c->domain, &cq_attr, &extra_cq, NULL), "fi_cq_open");
	for (int a = 0; a < navs - 1; a++) {
		struct extra *x = &extras[a];

		bench_check(fi_av_open(c->domain, &av_attr, &x->av, NULL), "fi_av_open");
		bench_check(fi_endpoint(c->domain, c->info, &x->ep, NULL), "fi_endpoint");
		bench_check(fi_ep_bind(x->ep, &x->av->fid, 0), "fi_ep_bind(av)");
		bench_check(fi_ep_bind(x->ep, &extra_cq->fid, FI_TRANSMIT | FI_RECV),
			    "fi_ep_bind(cq)");
		bench_check(fi_enable(x->ep), "fi_enable");
	}
	bench_shm_maps(&maps, NULL, NULL, &after);
	for (int i = 0; i < after.n; i++)
		if (!recorded(&before, after.name[i]) && b->own_files.n < 16)
			snprintf(b->own_files.name[b->own_files.n++], 256, "%s",
				 after.name[i]);
}

/* One message from each extra endpoint to each peer of the first one. */
static void extra_sends(struct bench *b, struct bench_ctx *c)
{
	struct fi_cq_tagged_entry e;
	int sent = 0, done = 0;
	double t0 = bench_now_us();

	for (int a = 0; a < navs - 1; a++) {
		for (int r = 0; r < b->nprocs; r++) {
			char name[256];
			size_t len = sizeof(name);
			fi_addr_t dest;
			ssize_t rc;

			if (r == b->rank || c->addr[r] == FI_ADDR_NOTAVAIL)
				continue;
			bench_check(fi_av_lookup(c->av, c->addr[r], name, &len), "fi_av_lookup");
			if (fi_av_insert(extras[a].av, name, 1, &dest, 0, NULL) != 1)
				bench_die("fi_av_insert into AV %d failed", a + 2);
			while ((rc = fi_tsend(extras[a].ep, b->tx, 8, NULL, dest, MEM_TAG,
					      NULL)) == -FI_EAGAIN)
				done += fi_cq_read(extra_cq, &e, 1) == 1;
			bench_check((int)rc, "fi_tsend");
			sent++;
		}
	}
	while (done < sent) {
		ssize_t rc = fi_cq_read(extra_cq, &e, 1);

		if (rc == 1)
			done++;
		else if (rc != -FI_EAGAIN)
			bench_die("extra endpoints: fi_cq_read: %zd", rc);
		else if (bench_now_us() - t0 > BENCH_WAIT_SECS * 1e6)
			bench_die("extra endpoints: sends not completed");
	}
}

static void close_extras(void)
{
	for (int a = 0; a < navs - 1; a++) {
		bench_check(fi_close(&extras[a].ep->fid), "fi_close(ep)");
		bench_check(fi_close(&extras[a].av->fid), "fi_close(av)");
	}
	bench_check(fi_close(&extra_cq->fid), "fi_close(cq)");
}

static void memory(struct bench *b, const struct bench_opts *o)
{
	struct bench_ctx *c = &b->ctx[0];
	struct mem_report m;

	if (navs > 1) {
		open_extras(b, c);
		bench_barrier(b);
		extra_sends(b, c);
	}
	for (size_t i = 0; i < o->nsizes; i++)
		incast(b, c, o->sizes[i], 2);
	bench_barrier(b);
	bench_shm_maps(&m.all, &m.own, &b->own_files, NULL);
	if (b->rank != 0) {
		if (write(b->sock[0], &m, sizeof(m)) != (ssize_t)sizeof(m))
			bench_die("socket write failed");
		goto out;
	}
	bench_shm_list(stdout, 0);
	printf("# avs %d: each process has %d AVs open, each holding the same peers\n",
	       navs, navs);
	printf("# mem provider rank peers own_kib own_rss_kib all_kib all_rss_kib mappings\n");
	for (int r = 0; r < b->nprocs; r++) {
		if (r > 0 && read(b->sock[r], &m, sizeof(m)) != (ssize_t)sizeof(m))
			bench_die("socket read failed");
		printf("mem %s %d %d %zu %zu %zu %zu %d\n", c->prov, r, r ? 1 : b->nprocs - 1,
		       m.own.size_kib, m.own.rss_kib, m.all.size_kib, m.all.rss_kib,
		       m.all.count);
	}
	fflush(stdout);
out:
	if (navs > 1) {
		bench_barrier(b);	/* nothing in flight when they close */
		close_extras();
	}
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
	while ((c = getopt(argc, argv, BENCH_OPTSTRING "n:k:MA:h")) != -1) {
		if (bench_opt(&o, c, optarg))
			continue;
		switch (c) {
		case 'n': nsenders = (int)bench_number(optarg, 1); break;
		case 'k': window = (int)bench_number(optarg, 1); break;
		case 'M': mem = true; break;
		case 'A': navs = (int)bench_number(optarg, 1); break;
		default: usage();
		}
	}
	if (optind != argc || nsenders >= BENCH_MAX_PROCS)
		usage();
	if (mem && o.nprov != 1)
		bench_die("-M measures one provider at a time");
	if (navs > EXTRA_MAX + 1 || (navs > 1 && !mem))
		usage();
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
			       "sender, %d windows (fewer above 4 KiB, at least %d), %d repetitions\n"
			       "# provider size rep MBps Mmsgps\n", nsenders, window, o.iters,
			       INCAST_MIN_WINDOWS, o.reps);
			fflush(stdout);
		}
		bench_sweep(&b, &o, incast, 4096, INCAST_MIN_WINDOWS, true);
	}
	bench_finish(&b);
	free(o.sizes);
	free(o.provs_buf);
	return EXIT_SUCCESS;
}
