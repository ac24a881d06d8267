/*
 * RMA and atomic operations between two processes of one node: rank 0
 * initiates, rank 1 is the target and only polls its CQ, which is where
 * both shm and xshm make progress, until rank 0's tagged message ends the
 * point.
 *
 *   rma -m mode [-K] [-D] [-p prov[,prov...]] [-s sizes] [-i iters] [-r reps] ...
 *
 * Modes, each operation with the endpoint's default completion (no
 * FI_DELIVERY_COMPLETE asked for: what the provider's completion of a
 * write means is its own, as applications see it; -D asks for it in the
 * hints' tx_attr->op_flags, as Open MPI's OFI BTL does for one-sided MPI):
 *   write_lat, read_lat   one fi_write / fi_read at a time, each waited for:
 *                         "provider size rep latency_us", from the median
 *                         time of blocks of 8 operations (1 above 16 KiB)
 *   write_bw, read_bw     windows of 64 in flight, all waited for:
 *                         "provider size rep MBps Mopsps"
 *   atomic_lat            fi_fetch_atomic FI_SUM of size / 8 uint64s, one at
 *                         a time: "provider size rep latency_us"
 *   atomic_rate           the same, windows of 64: "provider size rep Mopsps"
 *   atomic_add_rate       fi_atomic FI_SUM (no fetch), windows of 64
 *   cswap_lat, cswap_rate fi_compare_atomic FI_CSWAP of size / 8 uint64s,
 *                         one at a time and windows of 64 (the operands are
 *                         the compare values too)
 * A provider without FI_ATOMIC, or without FI_SUM on FI_UINT64 at that
 * count (FI_CSWAP for the cswap modes), prints
 * "provider size rep unsupported".
 *
 * Registrations follow the provider's mr_mode: descriptors where it has
 * FI_MR_LOCAL, its keys with FI_MR_PROV_KEY (else ours), virtual addresses
 * with FI_MR_VIRT_ADDR (else offsets).  The hints offer FI_MR_LOCAL,
 * FI_MR_VIRT_ADDR, FI_MR_ALLOCATED and FI_MR_PROV_KEY; -K offers only the
 * first and third: offsets and the application's keys.
 * Default sizes: powers of two from 1 B to 4 MiB; 8 for the atomics.
 * Lines starting with '#' are comments.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "common.h"

enum op { OP_WRITE, OP_READ, OP_FETCH_ADD, OP_ADD, OP_CSWAP };

struct mode {
	const char *name;
	enum op op;
	bool window;		/* BENCH_WINDOW in flight, else one at a time */
	const char *columns;
};

static const struct mode modes[] = {
	{ "write_lat", OP_WRITE, false, "latency_us" },
	{ "read_lat", OP_READ, false, "latency_us" },
	{ "write_bw", OP_WRITE, true, "MBps Mopsps" },
	{ "read_bw", OP_READ, true, "MBps Mopsps" },
	{ "atomic_lat", OP_FETCH_ADD, false, "latency_us" },
	{ "atomic_rate", OP_FETCH_ADD, true, "Mopsps" },
	{ "atomic_add_rate", OP_ADD, true, "Mopsps" },
	{ "cswap_lat", OP_CSWAP, false, "latency_us" },
	{ "cswap_rate", OP_CSWAP, true, "Mopsps" },
};

/* Where the initiator's operations go: the target's rx buffer. */
struct remote {
	uint64_t addr, key;
};

/* One provider's registrations and what the target told about its own. */
struct rma_ctx {
	struct fid_mr *mr_tx, *mr_rx;
	void *desc_tx, *desc_rx;	/* NULL unless FI_MR_LOCAL */
	struct remote target;
	size_t atomic_count;		/* the mode's op on FI_UINT64 at most; 0: none */
	bool unsupported;		/* an operation said -FI_EOPNOTSUPP */
};

static const struct mode *mode;
static struct rma_ctx rctx[BENCH_MAX_PROVS];

static bool is_atomic(void)
{
	return mode->op == OP_FETCH_ADD || mode->op == OP_ADD || mode->op == OP_CSWAP;
}

static void usage(void)
{
	fprintf(stderr, "usage: rma -m mode [-K] [-D] [options]\n"
		"  -m mode            write_lat, read_lat, write_bw, read_bw, atomic_lat,\n"
		"                     atomic_rate, atomic_add_rate, cswap_lat or cswap_rate\n"
		"  -K                 offer no FI_MR_VIRT_ADDR nor FI_MR_PROV_KEY: offsets\n"
		"                     and the benchmark's keys\n"
		"  -D                 FI_DELIVERY_COMPLETE for every operation (tx_attr\n"
		"                     op_flags), as Open MPI's OFI BTL asks\n" BENCH_OPTHELP);
	exit(EXIT_FAILURE);
}

static const struct mode *find_mode(const char *name)
{
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(modes[i].name, name))
			return &modes[i];
	bench_die("unknown mode '%s'", name);
}

static struct fid_mr *reg(struct bench_ctx *c, void *buf, size_t len, uint64_t key)
{
	struct fid_mr *mr;

	bench_check(fi_mr_reg(c->domain, buf, len,
			      FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, key, 0,
			      &mr, NULL), "fi_mr_reg");
	return mr;
}

/* How many uint64s one atomic of the mode may take; 0: none. */
static size_t atomic_count(struct bench_ctx *c)
{
	struct fi_atomic_attr attr = { 0 };
	uint64_t flags = mode->op == OP_FETCH_ADD ? FI_FETCH_ATOMIC :
			 mode->op == OP_CSWAP ? FI_COMPARE_ATOMIC : 0;

	if (!(c->info->caps & FI_ATOMIC) ||
	    fi_query_atomic(c->domain, FI_UINT64,
			    mode->op == OP_CSWAP ? FI_CSWAP : FI_SUM, &attr, flags))
		return 0;
	return attr.count;
}

/* Registers both buffers; rank 1 tells rank 0 where its rx buffer is. */
static void setup(struct bench *b, struct bench_ctx *c, struct rma_ctx *r)
{
	uint64_t mr_mode = c->info->domain_attr->mr_mode;

	r->mr_tx = reg(c, b->tx, b->bufsize * b->tx_slots, 1);
	r->mr_rx = reg(c, b->rx, b->bufsize, 2);
	if (mr_mode & FI_MR_LOCAL) {
		r->desc_tx = fi_mr_desc(r->mr_tx);
		r->desc_rx = fi_mr_desc(r->mr_rx);
	}
	r->target.key = fi_mr_key(r->mr_rx);
	if (r->target.key == FI_KEY_NOTAVAIL)
		bench_die("%s: raw keys (FI_MR_RAW) are not supported", c->prov);
	r->target.addr = mr_mode & FI_MR_VIRT_ADDR ? (uint64_t)(uintptr_t)b->rx : 0;
	bench_to_root(b, 1, &r->target, sizeof(r->target));
	r->atomic_count = atomic_count(c);
	if (b->rank == 0)
		printf("# %s: mr_mode 0x%llx (%s), %s\n", c->prov, (unsigned long long)mr_mode,
		       fi_tostr(&mr_mode, FI_TYPE_MR_MODE),
		       c->info->caps & FI_ATOMIC ? "FI_ATOMIC" : "no FI_ATOMIC");
}

static void teardown(struct rma_ctx *r)
{
	bench_check(fi_close(&r->mr_tx->fid), "fi_close(mr)");
	bench_check(fi_close(&r->mr_rx->fid), "fi_close(mr)");
}

static ssize_t issue(struct bench *b, struct bench_ctx *c, struct rma_ctx *r, size_t size)
{
	fi_addr_t to = c->addr[1];
	uint64_t addr = r->target.addr, key = r->target.key;

	switch (mode->op) {
	case OP_WRITE:
		return fi_write(c->ep, b->tx, size, r->desc_tx, to, addr, key, NULL);
	case OP_READ:
		return fi_read(c->ep, b->rx, size, r->desc_rx, to, addr, key, NULL);
	case OP_FETCH_ADD:
		return fi_fetch_atomic(c->ep, b->tx, size / 8, r->desc_tx, b->rx, r->desc_rx,
				       to, addr, key, FI_UINT64, FI_SUM, NULL);
	case OP_ADD:
		return fi_atomic(c->ep, b->tx, size / 8, r->desc_tx, to, addr, key, FI_UINT64,
				 FI_SUM, NULL);
	case OP_CSWAP:
		return fi_compare_atomic(c->ep, b->tx, size / 8, r->desc_tx, b->tx, r->desc_tx,
					 b->rx, r->desc_rx, to, addr, key, FI_UINT64, FI_CSWAP,
					 NULL);
	}
	return -FI_EINVAL;
}

/* false when the provider does not do it */
static bool post(struct bench *b, struct bench_ctx *c, struct rma_ctx *r, size_t size)
{
	ssize_t rc;

	while ((rc = issue(b, c, r, size)) == -FI_EAGAIN)
		bench_progress(b, c);
	if (rc == -FI_EOPNOTSUPP || rc == -FI_ENOSYS) {
		r->unsupported = true;
		return false;
	}
	bench_check((int)rc, mode->name);
	c->sends++;
	return true;
}

/*
 * The target makes progress until rank 0's message ends the point; its
 * BENCH_STOP bit says that the provider refused the operation.
 */
static void serve(struct bench *b, struct bench_ctx *c, struct rma_ctx *r)
{
	c->stop_seen = false;
	bench_trecv(b, c, 0, BENCH_ACK_TAG);
	bench_barrier(b);
	while (c->nrecvd < c->recvs)
		bench_progress(b, c);
	r->unsupported = c->stop_seen;
}

static void end_point(struct bench *b, struct bench_ctx *c, struct rma_ctx *r)
{
	bench_tsend(b, c, 1, 0, BENCH_ACK_TAG | (r->unsupported ? BENCH_STOP : 0));
	bench_wait(b, c, true, false);
}

static bool supported(struct rma_ctx *r, size_t size)
{
	return !r->unsupported && (!is_atomic() || size / 8 <= r->atomic_count);
}

/*
 * Rank 0 times blocks of operations (of 1 above 16 KiB, or of a window)
 * and decides when to stop; microseconds per operation.
 */
static double run(struct bench *b, struct bench_ctx *c, size_t size, int iters)
{
	struct rma_ctx *r = &rctx[c - b->ctx];
	int per_block = mode->window ? BENCH_WINDOW : size > 16384 ? 1 : BENCH_LAT_BLOCK;
	int ops = 0;
	double t0, tb, tnow;

	if (!supported(r, size))
		return NAN;
	if (b->rank == 1) {
		serve(b, c, r);
		return r->unsupported ? NAN : 0;
	}
	b->nblk = 0;
	bench_barrier(b);
	t0 = tb = tnow = bench_now_us();
	while (ops < iters * (mode->window ? BENCH_WINDOW : 1) &&
	       !bench_past_time(b, t0, tnow)) {
		for (int k = 0; k < per_block; k++, ops++)
			if (!post(b, c, r, size))
				break;
		bench_wait(b, c, true, false);
		if (r->unsupported)
			break;
		bench_block_done(b, &tb, &tnow);
	}
	end_point(b, c, r);
	if (r->unsupported)
		return NAN;
	return bench_per_iter(b, tnow - t0, ops, per_block);
}

static double latency(struct bench *b, struct bench_ctx *c, size_t size, int iters)
{
	return run(b, c, size, iters);
}

static double bandwidth(struct bench *b, struct bench_ctx *c, size_t size, int iters)
{
	return size / run(b, c, size, iters);
}

static double rate(struct bench *b, struct bench_ctx *c, size_t size, int iters)
{
	return 1 / run(b, c, size, iters);
}

static bench_fn kernel(void)
{
	if (!mode->window)
		return latency;
	return is_atomic() ? rate : bandwidth;
}

int main(int argc, char **argv)
{
	struct bench_opts o = { .reps = 1, .warmup_pct = 10, .max_point_ms = 200,
				.settle_ms = 300 };
	struct bench b = { .caps = FI_RMA,
			   .mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY };
	bool sizes_given = false;
	int c;

	bench_parse_provs(&o, "xshm");
	while ((c = getopt(argc, argv, BENCH_OPTSTRING "m:KDh")) != -1) {
		if (c == 'm')
			mode = find_mode(optarg);
		else if (c == 'K')
			b.mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED;
		else if (c == 'D')
			b.tx_op_flags = FI_DELIVERY_COMPLETE;
		else if (!bench_opt(&o, c, optarg))
			usage();
		sizes_given |= c == 's';
	}
	if (optind != argc || !mode)
		usage();
	if (o.rewrite || o.read)
		bench_die("-W and -R are for messages");
	if (!sizes_given)
		bench_parse_sizes(&o, is_atomic() ? "8" : "1:4M");
	for (size_t i = 0; is_atomic() && i < o.nsizes; i++)
		if (o.sizes[i] % 8)
			bench_die("atomic sizes are multiples of 8 (uint64s)");
	if (!o.iters)
		o.iters = mode->window ? (is_atomic() ? 300 : 100) : 1000;
	if (is_atomic())
		b.caps_if_any = FI_ATOMIC;
	bench_start(&b, "rma", &o, 2);
	for (int p = 0; p < b.nprov; p++)
		setup(&b, &b.ctx[p], &rctx[p]);
	if (b.rank == 0) {
		printf("# rma %s: %d %s, %d repetitions\n# provider size rep %s\n", mode->name,
		       o.iters, mode->window ? "windows of 64" : "operations", o.reps,
		       mode->columns);
		fflush(stdout);
	}
	bench_sweep(&b, &o, kernel(), mode->window ? 4096 : 16384, mode->window ? 3 : 10,
		    mode->window && !is_atomic());
	for (int p = 0; p < b.nprov; p++)
		teardown(&rctx[p]);
	bench_finish(&b);
	free(o.sizes);
	free(o.provs_buf);
	return EXIT_SUCCESS;
}
