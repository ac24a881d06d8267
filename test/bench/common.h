/*
 * Shared by the benchmarks of test/bench/: processes forked on one node,
 * connected by socketpairs to rank 0, each opening one endpoint per
 * provider named on the command line, so that the same processes measure
 * several providers alternately.
 *
 * The provider is loaded from FI_PROVIDER_PATH when it is not built into
 * libfabric (test/bench/compare.sh points it at the build's .libs).
 */
#ifndef XSHM_BENCH_COMMON_H
#define XSHM_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#define BENCH_MAX_PROVS		4
#define BENCH_MAX_PROCS		65
#define BENCH_WINDOW		64
#define BENCH_PAGE		4096	/* -O: the page its offsets are within */
#define BENCH_TX_BYTES_MAX	((size_t) 256 << 20)	/* -W: a stream's send buffers */
#define BENCH_WAIT_SECS		30
#define BENCH_LAT_BLOCK		8	/* round trips timed together */
#define BENCH_MAX_BLOCKS	8192

#define BENCH_LAT_TAG		1
#define BENCH_BW_TAG		2
#define BENCH_ACK_TAG		3
#define BENCH_DATA_TAG		0x100	/* incast: + sender rank */
#define BENCH_STOP		(1ULL << 40)	/* tag bit: the last message of a point */

/* Shared-memory mappings of this process: /dev/shm files, memfd, SysV. */
struct bench_shm_maps {
	size_t size_kib, rss_kib;
	int count;
};
struct bench_shm_files {
	int n;
	char name[16][256];
};

/* One provider's objects in one process. */
struct bench_ctx {
	const char *prov;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t addr[BENCH_MAX_PROCS];	/* by rank; only the peers we talk to */
	size_t nsent, nrecvd;			/* completions seen so far */
	size_t sends, recvs;			/* operations posted so far */
	size_t recvd_by_rank[BENCH_MAX_PROCS];	/* incast: BENCH_DATA_TAG + rank */
	bool stop_seen;				/* a receive tagged BENCH_STOP completed */
};

struct bench {
	const char *name;		/* program name, for messages */
	int rank, nprocs;		/* rank 0 measures and prints */
	int sock[BENCH_MAX_PROCS];	/* rank 0: to each rank; others: sock[0] */
	pid_t pid[BENCH_MAX_PROCS];	/* rank 0: the children */
	int nprov;
	struct bench_ctx ctx[BENCH_MAX_PROVS];
	size_t bufsize;
	char *tx, *rx;
	char *rx_alloc;			/* what rx was carved from (-O) */
	bool yield;			/* -y, or more processes than cores: yield when idle */
	size_t cq_size;			/* 0: 4 windows */
	double max_point_us;		/* 0 or: a point stops early after this long */
	bool mean;			/* -a: whole point, not the median block */
	bool rewrite;			/* -W: write tx before every send */
	size_t tx_slots;		/* send buffers of bufsize in tx: 1, or with
					   -W the sends a stream keeps in flight */
	unsigned char *tx_busy;		/* by slot: its send has not completed */
	bool read;			/* -R: read rx after every receive */
	uint64_t caps;			/* asked for besides FI_TAGGED (rma: FI_RMA) */
	uint64_t caps_if_any;		/* and these where the provider has them */
	uint64_t mr_mode;		/* the hints' (0 without RMA) */
	uint64_t tx_op_flags;		/* the hints' tx_attr->op_flags (rma -D) */
	unsigned read_sum;		/* of what -R read */
	int nblk;			/* rank 0: blocks timed in this point */
	double blk[BENCH_MAX_BLOCKS];	/* and their durations (us) */
	/* Right after fi_enable, before any address is inserted: */
	struct bench_shm_files own_files;	/* the shared-memory files mapped */
	struct bench_shm_maps own_maps;		/* and their mappings */
};

/* Common command line: -p, -s, -i, -r, -w, -t, -S, -y, -a, -b, -H, -W, -R. */
struct bench_opts {
	const char *provs[BENCH_MAX_PROVS];	/* in provs_buf */
	char *provs_buf;
	int nprov;
	size_t *sizes;
	size_t nsizes;
	int iters;		/* per point at small sizes; scaled down for large ones */
	int reps;		/* sweeps of all sizes */
	int warmup_pct;		/* warm-up iterations before each point, % of iters */
	int max_point_ms;	/* a point stops early after this long (0: never) */
	bool yield;		/* always yield the CPU when a poll finds nothing */
	int settle_ms;		/* run before measuring, unreported */
	bool mean;		/* -a */
	bool bind;		/* -b */
	bool huge;		/* -H */
	bool rewrite;		/* -W */
	bool read;		/* -R */
	bool rx_offset_set;	/* -O: page-aligned buffers, rx shifted */
	size_t rx_offset;
	int tx_window;		/* a stream's sends in flight at once, 0 if none */
};

/* getopt string of the options bench_opt handles */
#define BENCH_OPTSTRING	"p:s:i:r:w:t:yS:abHWRO:"
#define BENCH_OPTHELP \
	"  -p prov[,prov...]  providers, measured alternately (default xshm)\n" \
	"  -s sizes           e.g. 8,200,4K or 1:4M (powers of two), or both\n" \
	"  -i iterations      per point at small sizes, fewer for large sizes\n" \
	"  -r repetitions     sweeps over all sizes (default 1)\n" \
	"  -w percent         warm-up iterations before each point (default 10,\n" \
	"                     at least one; 0: none)\n" \
	"  -t ms              a point ends early after this long (default 200, 0: never)\n" \
	"  -a                 average over the whole point (default: from the median\n" \
	"                     time of blocks of 8 round trips, or of windows)\n" \
	"  -b                 bind rank r to the (r mod n)-th of the n usable CPUs\n" \
	"  -H                 message buffers on transparent huge pages, as on\n" \
	"                     systems whose THP setting is 'always'\n" \
	"  -S ms              run unmeasured first, to settle (default 300)\n" \
	"  -W                 write the send buffer (a byte per cache line) before\n" \
	"                     every send, as an application computing its data\n" \
	"                     does: the data then crosses from the sender's cache;\n" \
	"                     a stream's sends in flight get buffers of their own\n" \
	"  -R                 read the receive buffer (a byte per cache line) after\n" \
	"                     every receive, as an application using the data does:\n" \
	"                     what a copy left in the sender's cache crosses then\n" \
	"  -O bytes           send buffer at the start of a page, receive buffer this\n" \
	"                     many bytes into one (below the page size), as buffers\n" \
	"                     malloc'd one after the other lie (16 B apart when their\n" \
	"                     size is a multiple of the page size); default: malloc's\n" \
	"  -y                 yield the CPU when a poll finds nothing (default: only\n" \
	"                     with more processes than cores)\n" \
	"The provider is loaded from FI_PROVIDER_PATH when not built into libfabric.\n"

typedef double (*bench_fn)(struct bench *b, struct bench_ctx *c, size_t size, int iters);

void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void bench_check(int rc, const char *what);
double bench_now_us(void);
long bench_number(const char *s, long min);	/* accepts k/K and m/M suffixes */
void bench_parse_provs(struct bench_opts *o, const char *list);
void bench_parse_sizes(struct bench_opts *o, const char *list);
void bench_default_sizes(struct bench_opts *o, size_t max, bool thresholds);
/* Writes a byte of every cache line of len bytes of buf, as -W does. */
void bench_rewrite(char *buf, size_t len);
/*
 * Reads a byte of every cache line of len bytes from buf, as a consumer of
 * the data would; returns their sum, so that the reads are not elided.
 */
unsigned bench_touch(const char *buf, size_t len);

/* Handles the options of BENCH_OPTSTRING; false for any other. */
bool bench_opt(struct bench_opts *o, int c, const char *arg);
size_t bench_max_size(const struct bench_opts *o);
/* Binds the calling process to the (rank mod n)-th of its n usable CPUs. */
void bench_bind_cpu(int rank);
/* Sorts v. */
double bench_median(double *v, int n);
int bench_scaled(int iters, size_t size, size_t from, int at_least);

/*
 * Forks nprocs - 1 children and returns in every process with b->rank set,
 * one endpoint open per provider and addresses exchanged (rank 0 with
 * every rank, every rank with rank 0).
 */
void bench_start(struct bench *b, const char *name, const struct bench_opts *o, int nprocs);
/* Closes everything; children exit, rank 0 returns after reaping them. */
void bench_finish(struct bench *b);

void bench_barrier(struct bench *b);
void bench_bcast(struct bench *b, void *buf, size_t len);	/* from rank 0 */
void bench_to_root(struct bench *b, int from, void *buf, size_t len);	/* rank from to 0 */
void bench_progress(struct bench *b, struct bench_ctx *c);
void bench_wait(struct bench *b, struct bench_ctx *c, bool sends, bool recvs);
void bench_tsend(struct bench *b, struct bench_ctx *c, int to, size_t len, uint64_t tag);
void bench_trecv(struct bench *b, struct bench_ctx *c, size_t len, uint64_t tag);

/*
 * The kernels run iters iterations, or fewer when b->max_point_us passes:
 * the measuring side decides and tags the last message with BENCH_STOP.
 * Latency and stream time blocks (8 round trips, 1 window) and compute
 * their result from the median block unless b->mean.
 */
bool bench_point_over(const struct bench *b, double t0, int done, int iters);
/* Whether a point begun at t0 has run past b->max_point_us by tnow. */
bool bench_past_time(const struct bench *b, double t0, double tnow);
/* Ends a timed block: records its duration, restarts *tb, sets *tnow. */
void bench_block_done(struct bench *b, double *tb, double *tnow);
/* Microseconds per iteration from the median block (of block iterations). */
double bench_per_iter(struct bench *b, double total_us, int iters, int block);

/* Ranks 0 and 1.  One-way latency in microseconds (round trip / 2). */
double bench_latency(struct bench *b, struct bench_ctx *c, size_t size, int iters);
/* Ranks 0 -> 1: iters windows of BENCH_WINDOW sends, each acknowledged; MB/s. */
double bench_stream(struct bench *b, struct bench_ctx *c, size_t size, int iters);

/*
 * First runs fn at the first size for o->settle_ms, alternating providers
 * (the first second of a run is often much slower than the rest, on a busy
 * machine).  Then, for each repetition, for each size, measures every provider, alternating
 * the order from one point to the next; warm-up before each measurement.
 * Rank 0 prints "provider size rep value" (value / size appended when
 * per_size_too, e.g. MB/s then Mmsg/s), or "provider size rep unsupported"
 * where fn returned NAN: the provider cannot do what it measures.
 */
void bench_sweep(struct bench *b, const struct bench_opts *o, bench_fn fn,
		 size_t scale_from, int min_iters, bool per_size_too);

/*
 * A benchmark program that takes the common options (BENCH_OPTSTRING) and
 * nothing else, then sweeps one kernel over sizes: latency, bandwidth,
 * msgrate and loopback.  bench_main parses argv with these defaults, runs
 * the sweep and returns main's exit status.
 */
struct bench_program {
	const char *name;
	const char *usage;	/* after "usage: NAME [options]" */
	int nprocs;
	int iters;		/* -i's default */
	const char *sizes;	/* -s's default; NULL: bench_default_sizes to 4 MiB */
	int tx_window;		/* sends in flight at once, 0 if none */
	bench_fn kernel;
	size_t scale_from;	/* bench_sweep's arguments */
	int min_iters;
	bool per_size_too;
	void (*header)(const struct bench_opts *o);	/* rank 0's '#' lines */
};

int bench_main(int argc, char **argv, const struct bench_program *p);

/*
 * Sums every shared-memory mapping into *all, and into *own those of the
 * files in *own_files (when not NULL); records the distinct files mapped
 * into *record (when not NULL).
 */
void bench_shm_maps(struct bench_shm_maps *all, struct bench_shm_maps *own,
		    const struct bench_shm_files *own_files, struct bench_shm_files *record);
/* Prints each of them as a comment line "# rank R maps PATH: ...". */
void bench_shm_list(FILE *out, int rank);

#endif
