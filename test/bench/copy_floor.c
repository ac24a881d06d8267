/*
 * The floor under large-message latency: two processes ping-pong a message
 * of each size with nothing but the copy, so that what the machine's caches
 * and memory allow is measured in the same minute as the providers.
 *
 *   copy_floor [-m methods] [-s sizes] [-i iterations] [-r repetitions] [-H] [-W] [-R]
 *              [-O bytes]
 *
 * Methods (default all):
 *   memcpy        the sender copies into the receiver's buffer, mapped in
 *                 its address space: one copy by one process, what an
 *                 attach of the receiver's pages (xpmem) would allow
 *   memcpy-split  both processes copy half of the message, each through a
 *                 mapping of the other's buffer: xpmem both ways
 *   cma           the receiver pulls the sender's buffer with
 *                 process_vm_readv, in the split copy's chunks
 *                 (shm/scopy/split.h): xshm's single copy when the sender
 *                 does not help
 *   cma-split     the receiver pulls the front half while the sender pushes
 *                 the back half with process_vm_writev: xshm's split copy,
 *                 evenly split
 * The memcpy methods' buffers are shared memory (both processes map all
 * four); the cma methods' are private, as an application's are, and on
 * transparent huge pages with -H.  -W has the sender write a byte per cache
 * line of its buffer before every send, and -R the receiver read a byte per
 * cache line of its buffer after every receive, as latency -W and -R do.
 * -O puts each receive buffer that many bytes into its page, the send
 * buffers starting one, as latency -O does: on the AMD EPYC guest this
 * was written on, the kernel's copy (process_vm_readv and _writev) took 4
 * to 5 times as long when the destination lay 1 to 31 bytes further into
 * its page than the source (-O 16, as two buffers malloc'd one after the
 * other lie), and glibc's memcpy (rep movsb) alike; xshm's copies through
 * bounce buffers, a vector loop (shm/copy.h), do not care.
 *
 * Prints "floor-METHOD size rep latency_us" (one way: round trip / 2), from
 * the median round trip of the point, as latency does above 16 KiB, so
 * that its lines sit beside latency's in test/bench/compare.py.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "shm/layout.h"
#include "shm/scopy/split.h"

enum method { MEMCPY, MEMCPY_SPLIT, CMA, CMA_SPLIT, NMETHODS };

static const char *const method_names[NMETHODS] = {
	"memcpy", "memcpy-split", "cma", "cma-split",
};

/* What the two processes share besides the buffers; one line each. */
struct floor_sync {
	_Alignas(XSHM_CACHE_LINE) _Atomic uint64_t posted;	/* last message sent */
	_Alignas(XSHM_CACHE_LINE) _Atomic uint64_t halves;	/* split halves copied */
};

struct floor {
	int rank;
	pid_t peer;
	struct floor_sync *sync;
	unsigned char *shared_tx[2], *shared_rx[2];	/* by rank */
	unsigned char *tx, *rx;		/* private; at the same address in both */
	bool rewrite, read;
	unsigned read_sum;		/* of what -R read */
	uint64_t msgs, splits;		/* so far, counted alike by both */
};

static void *map_shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		bench_die("mmap %zu bytes: %s", len, strerror(errno));
	memset(p, 0, len);
	return p;
}

/*
 * On a 2 MiB boundary, so that -H can give it huge pages, in whole ones
 * (the kernel leaves a part of one on 4 KiB pages), and untouched: each
 * process touches its own pages after the fork, since pages shared
 * copy-on-write would be split into small ones at the first write.
 * bench_start's buffers come after its fork; these must come before, at
 * the same address in both processes.
 */
static void *map_private(size_t len, bool huge)
{
	size_t huge_page = 2u << 20;
	size_t span = (len + huge_page - 1) & ~(huge_page - 1);
	unsigned char *p = mmap(NULL, span + huge_page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		bench_die("mmap %zu bytes: %s", len, strerror(errno));
	p += -(uintptr_t) p & (huge_page - 1);
	if (huge && madvise(p, span, MADV_HUGEPAGE))
		bench_die("madvise(MADV_HUGEPAGE): %s", strerror(errno));
	return p;
}

static bool by_memcpy(enum method m)
{
	return m == MEMCPY || m == MEMCPY_SPLIT;
}

static bool by_halves(enum method m)
{
	return m == MEMCPY_SPLIT || m == CMA_SPLIT;
}

static unsigned char *tx_of(const struct floor *f, enum method m)
{
	return by_memcpy(m) ? f->shared_tx[f->rank] : f->tx;
}

static unsigned char *rx_of(const struct floor *f, enum method m)
{
	return by_memcpy(m) ? f->shared_rx[f->rank] : f->rx;
}

static void wait_for(_Atomic uint64_t *word, uint64_t value)
{
	while (atomic_load_explicit(word, memory_order_acquire) < value)
		;
}

/*
 * Bytes [from, to) of the sender's tx into the receiver's rx, by CMA in
 * the split copy's chunks for a message of msg_len bytes.  The buffers
 * were mapped before the fork, so the peer's tx and rx sit at our own tx
 * and rx addresses.
 */
static void cma_copy(const struct floor *f, bool pull, size_t msg_len,
		     size_t from, size_t to)
{
	size_t chunk = xshm_split_chunk_size(msg_len);

	for (size_t off = from; off < to; off += chunk) {
		size_t len = to - off < chunk ? to - off : chunk;
		struct iovec local = { (pull ? f->rx : f->tx) + off, len };
		struct iovec remote = { (pull ? f->tx : f->rx) + off, len };
		ssize_t done = pull ?
			process_vm_readv(f->peer, &local, 1, &remote, 1, 0) :
			process_vm_writev(f->peer, &local, 1, &remote, 1, 0);

		if (done != (ssize_t) len)
			bench_die("process_vm_%s: %s", pull ? "readv" : "writev",
				  done < 0 ? strerror(errno) : "short copy");
	}
}

static void send_msg(struct floor *f, enum method m, size_t len)
{
	int to = !f->rank;
	uint64_t msg = ++f->msgs;

	f->splits += by_halves(m);
	if (f->rewrite)
		bench_rewrite((char *) tx_of(f, m), len);
	if (m == MEMCPY)
		memcpy(f->shared_rx[to], f->shared_tx[f->rank], len);
	atomic_store_explicit(&f->sync->posted, msg, memory_order_release);
	if (m == MEMCPY_SPLIT)
		memcpy(f->shared_rx[to] + len / 2,
		       f->shared_tx[f->rank] + len / 2, len - len / 2);
	if (m == CMA_SPLIT)
		cma_copy(f, false, len, len / 2, len);
	if (by_halves(m))
		atomic_fetch_add_explicit(&f->sync->halves, 1,
					  memory_order_release);
}

static void recv_msg(struct floor *f, enum method m, size_t len)
{
	int from = !f->rank;

	f->splits += by_halves(m);
	wait_for(&f->sync->posted, ++f->msgs);
	if (m == MEMCPY_SPLIT)
		memcpy(f->shared_rx[f->rank], f->shared_tx[from], len / 2);
	if (m == CMA)
		cma_copy(f, true, len, 0, len);
	if (m == CMA_SPLIT)
		cma_copy(f, true, len, 0, len / 2);
	if (by_halves(m)) {
		atomic_fetch_add_explicit(&f->sync->halves, 1,
					  memory_order_release);
		/* the message is in once the sender's half is too */
		wait_for(&f->sync->halves, 2 * f->splits);
	}
	if (f->read)
		f->read_sum += bench_touch((const char *) rx_of(f, m), len);
}

/* Rank 0 sends and receives the reply; rank 1 echoes. */
static void round_trip(struct floor *f, enum method m, size_t len)
{
	if (f->rank == 0) {
		send_msg(f, m, len);
		recv_msg(f, m, len);
	} else {
		recv_msg(f, m, len);
		send_msg(f, m, len);
	}
}

/* A round trip of nothing: each rank has done what came before. */
static void sync_ranks(struct floor *f)
{
	round_trip(f, MEMCPY, 0);
}

/*
 * Whether the last message arrived whole: each rank's send buffer holds
 * 'a' + rank, but for the bytes -W writes.
 */
static void check_arrived(const struct floor *f, enum method m, size_t len)
{
	const unsigned char *rx = rx_of(f, m);

	for (size_t i = 0; i < len; i++) {
		if (f->rewrite && i % XSHM_CACHE_LINE == 0)
			continue;
		if (rx[i] != 'a' + !f->rank)
			bench_die("floor-%s: byte %zu of %zu did not arrive",
				  method_names[m], i, len);
	}
}

/* One point: rank 0 returns the one-way latency in us, rank 1 echoes. */
static double point(struct floor *f, enum method m, size_t len, int iters)
{
	double *trip_us = malloc(iters * sizeof(*trip_us));
	double median;

	if (!trip_us)
		bench_die("out of memory");
	for (int i = 0; i < iters; i++) {
		double start = bench_now_us();

		round_trip(f, m, len);
		trip_us[i] = bench_now_us() - start;
	}
	median = bench_median(trip_us, iters) / 2;
	free(trip_us);
	return median;
}

static void usage(void)
{
	fprintf(stderr, "usage: copy_floor [-m memcpy,memcpy-split,cma,cma-split] "
		"[-s sizes] [-i iterations] [-r repetitions] [-H] [-W] [-R] "
		"[-O bytes]\n");
	exit(EXIT_FAILURE);
}

static enum method method_named(const char *name, size_t len)
{
	for (int m = 0; m < NMETHODS; m++)
		if (strlen(method_names[m]) == len &&
		    !strncmp(method_names[m], name, len))
			return (enum method) m;
	bench_die("unknown method %.*s", (int) len, name);
}

/* Fills methods from a comma-separated list; returns how many. */
static int parse_methods(const char *list, enum method *methods)
{
	int n = 0;

	for (const char *p = list; *p && n < NMETHODS; ) {
		size_t len = strcspn(p, ",");

		methods[n++] = method_named(p, len);
		p += len + (p[len] == ',');
	}
	return n;
}

int main(int argc, char **argv)
{
	struct bench_opts o = { .iters = 1000, .reps = 1 };
	enum method methods[NMETHODS] = { MEMCPY, MEMCPY_SPLIT, CMA, CMA_SPLIT };
	int nmethods = NMETHODS;
	struct floor f = { 0 };
	size_t max;
	pid_t child;
	int c;

	bench_parse_sizes(&o, "1M,2M,4M");
	while ((c = getopt(argc, argv, "m:s:i:r:HWRO:h")) != -1) {
		if (c == 'm')
			nmethods = parse_methods(optarg, methods);
		else if (c == 'h' || !bench_opt(&o, c, optarg))
			usage();
	}
	if (optind != argc)
		usage();
	alarm(600);	/* a peer that died leaves the other spinning */
	max = bench_max_size(&o);
	f.rewrite = o.rewrite;
	f.read = o.read;
	f.sync = map_shared(sizeof(*f.sync));
	for (int r = 0; r < 2; r++) {
		f.shared_tx[r] = map_shared(max);
		f.shared_rx[r] = map_shared(max + o.rx_offset) + o.rx_offset;
		memset(f.shared_tx[r], 'a' + r, max);
	}
	f.tx = map_private(max, o.huge);
	f.rx = map_private(max + o.rx_offset, o.huge) + o.rx_offset;
	/* where Yama allows only ancestors to pull, the child pulls too */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	child = fork();
	if (child < 0)
		bench_die("fork: %s", strerror(errno));
	f.rank = child == 0;
	f.peer = f.rank ? getppid() : child;
	bench_bind_cpu(f.rank);
	memset(f.tx, 'a' + f.rank, max);
	memset(f.rx, 0, max);
	if (f.rank == 0)
		printf("# copy_floor: ping-pong of the copy alone, median of up to "
		       "%d round trips\n# provider size rep latency_us\n", o.iters);
	for (int rep = 0; rep < o.reps; rep++)
		for (size_t s = 0; s < o.nsizes; s++)
			for (int k = 0; k < nmethods; k++) {
				/* alternate which method goes first */
				enum method m = methods[s % 2 ? nmethods - 1 - k : k];
				int iters = bench_scaled(o.iters, o.sizes[s], 16384, 10);
				double us;

				memset(rx_of(&f, m), 0, o.sizes[s]);
				sync_ranks(&f);
				point(&f, m, o.sizes[s], iters / 10 + 1);
				us = point(&f, m, o.sizes[s], iters);
				check_arrived(&f, m, o.sizes[s]);
				if (f.rank == 0)
					printf("floor-%s %zu %d %.4f\n", method_names[m],
					       o.sizes[s], rep, us);
				fflush(stdout);
			}
	/* the last pull has read rank 1's buffer before it may exit */
	sync_ranks(&f);
	if (f.rank == 1)
		_exit(EXIT_SUCCESS);
	waitpid(child, NULL, 0);
	free(o.sizes);
	return EXIT_SUCCESS;
}
