/* Shared by the benchmarks of test/bench/: see common.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "test/prov/stale_regions.h"

void bench_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_FAILURE);
}

void bench_check(int rc, const char *what)
{
	if (rc < 0)
		bench_die("%s: %s (%d)", what, fi_strerror(-rc), rc);
}

double bench_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* ---- command line ---- */

static long number_end(const char *s, char **end)
{
	long v;

	errno = 0;
	v = strtol(s, end, 0);
	if (errno || *end == s)
		return -1;
	switch (**end) {
	case 'k': case 'K': v <<= 10; (*end)++; break;
	case 'm': case 'M': v <<= 20; (*end)++; break;
	}
	return v;
}

long bench_number(const char *s, long min)
{
	char *end;
	long v = number_end(s, &end);

	if (v < min || *end)
		bench_die("bad number '%s' (at least %ld)", s, min);
	return v;
}

void bench_parse_provs(struct bench_opts *o, const char *list)
{
	char *save = NULL;

	free(o->provs_buf);	/* the default's, when -p replaces it */
	o->provs_buf = strdup(list);
	if (!o->provs_buf)
		bench_die("out of memory");
	o->nprov = 0;
	for (char *p = strtok_r(o->provs_buf, ",", &save); p;
	     p = strtok_r(NULL, ",", &save)) {
		if (o->nprov == BENCH_MAX_PROVS)
			bench_die("at most %d providers", BENCH_MAX_PROVS);
		o->provs[o->nprov++] = p;
	}
	if (!o->nprov)
		bench_die("no provider in '%s'", list);
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

static void add_size(struct bench_opts *o, size_t s)
{
	for (size_t i = 0; i < o->nsizes; i++)
		if (o->sizes[i] == s)
			return;
	o->sizes = realloc(o->sizes, (o->nsizes + 1) * sizeof(*o->sizes));
	if (!o->sizes)
		bench_die("out of memory");
	o->sizes[o->nsizes++] = s;
}

/* "8,200,4K" or "1:4M" (powers of two) or both, comma-separated. */
void bench_parse_sizes(struct bench_opts *o, const char *list)
{
	const char *p = list;

	free(o->sizes);
	o->sizes = NULL;
	o->nsizes = 0;
	while (*p) {
		char *end;
		long a = number_end(p, &end), z;

		if (a < 1)
			bench_die("bad size list '%s'", list);
		z = a;
		if (*end == ':') {
			p = end + 1;
			z = number_end(p, &end);
			if (z < a)
				bench_die("bad size range in '%s'", list);
		}
		for (long s = a; s <= z; s *= 2)
			add_size(o, (size_t)s);
		if (*end == ',')
			end++;
		else if (*end)
			bench_die("bad size list '%s'", list);
		p = end;
	}
	if (!o->nsizes)
		bench_die("empty size list");
	qsort(o->sizes, o->nsizes, sizeof(*o->sizes), cmp_size);
}

/*
 * Powers of two up to max, and with thresholds the sizes around xshm's
 * protocol changes (one ring cell 2008, the vector copy from 2048, a run of
 * ring cells 4096 to a far receiver and 6032 to a near one, one bounce
 * buffer 16384) and around 4 and 8 KiB, where shm changes protocol.
 */
void bench_default_sizes(struct bench_opts *o, size_t max, bool thresholds)
{
	static const size_t around[] = { 2008, 2048, 4096, 6032, 8192, 16384 };

	free(o->sizes);
	o->sizes = NULL;
	o->nsizes = 0;
	for (size_t s = 1; s <= max; s *= 2)
		add_size(o, s);
	for (size_t i = 0; thresholds && i < sizeof(around) / sizeof(around[0]); i++)
		for (size_t s = around[i] - 1; s <= around[i] + 1; s++)
			if (s <= max)
				add_size(o, s);
	qsort(o->sizes, o->nsizes, sizeof(*o->sizes), cmp_size);
}

bool bench_opt(struct bench_opts *o, int c, const char *arg)
{
	switch (c) {
	case 'p': bench_parse_provs(o, arg); return true;
	case 's': bench_parse_sizes(o, arg); return true;
	case 'i': o->iters = (int)bench_number(arg, 1); return true;
	case 'r': o->reps = (int)bench_number(arg, 1); return true;
	case 'w': o->warmup_pct = (int)bench_number(arg, 0); return true;
	case 't': o->max_point_ms = (int)bench_number(arg, 0); return true;
	case 'y': o->yield = true; return true;
	case 'S': o->settle_ms = (int)bench_number(arg, 0); return true;
	case 'a': o->mean = true; return true;
	case 'b': o->bind = true; return true;
	case 'H': o->huge = true; return true;
	case 'W': o->rewrite = true; return true;
	case 'R': o->read = true; return true;
	case 'O':
		o->rx_offset = (size_t) bench_number(arg, 0);
		if (o->rx_offset >= BENCH_PAGE)
			bench_die("-O %s: at most %d", arg, BENCH_PAGE - 1);
		o->rx_offset_set = true;
		return true;
	}
	return false;
}

size_t bench_max_size(const struct bench_opts *o)
{
	size_t m = 0;

	for (size_t i = 0; i < o->nsizes; i++)
		if (o->sizes[i] > m)
			m = o->sizes[i];
	return m;
}

/* Fewer iterations above `from` bytes, so that every point takes similar time. */
int bench_scaled(int iters, size_t size, size_t from, int at_least)
{
	long n = size <= from ? iters : (long)((double)iters * from / size);

	return n < at_least ? at_least : (int)n;
}

/* ---- setup ---- */

static int try_info(const struct bench *b, const char *prov, uint64_t caps,
		    struct fi_info **info)
{
	struct fi_info *hints = fi_allocinfo();
	int rc;

	if (!hints)
		bench_die("fi_allocinfo failed");
	hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	hints->mode = 0;
	hints->domain_attr->mr_mode = (int)b->mr_mode;
	hints->tx_attr->op_flags = b->tx_op_flags;
	/* One thread per process drives each domain, as MPI's OFI layers ask. */
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	xt_remove_stale_shm_regions();
	rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, info);
	fi_freeinfo(hints);
	return rc;
}

/* With b->caps_if_any when the provider has them, else without. */
static struct fi_info *get_info(const struct bench *b, const char *prov, size_t max_size)
{
	uint64_t caps = FI_TAGGED | b->caps;
	struct fi_info *info;
	int rc = -FI_ENODATA;

	if (b->caps_if_any)
		rc = try_info(b, prov, caps | b->caps_if_any, &info);
	if (rc)
		rc = try_info(b, prov, caps, &info);
	if (rc)
		bench_die("provider %s: fi_getinfo: %s (%d)%s", prov, fi_strerror(-rc), rc,
			  getenv("FI_PROVIDER_PATH") ? "" : " (FI_PROVIDER_PATH is not set)");
	if (max_size > info->ep_attr->max_msg_size)
		bench_die("provider %s: size %zu exceeds max_msg_size %zu", prov, max_size,
			  info->ep_attr->max_msg_size);
	return info;
}

static void open_ctx(struct bench *b, struct bench_ctx *c, size_t max_size)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = b->cq_size };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .count = (size_t)b->nprocs };

	c->info = get_info(b, c->prov, max_size);
	bench_check(fi_fabric(c->info->fabric_attr, &c->fabric, NULL), "fi_fabric");
	bench_check(fi_domain(c->fabric, c->info, &c->domain, NULL), "fi_domain");
	bench_check(fi_av_open(c->domain, &av_attr, &c->av, NULL), "fi_av_open");
	bench_check(fi_cq_open(c->domain, &cq_attr, &c->cq, NULL), "fi_cq_open");
	bench_check(fi_endpoint(c->domain, c->info, &c->ep, NULL), "fi_endpoint");
	bench_check(fi_ep_bind(c->ep, &c->av->fid, 0), "fi_ep_bind(av)");
	bench_check(fi_ep_bind(c->ep, &c->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
	bench_check(fi_enable(c->ep), "fi_enable");
	for (int r = 0; r < BENCH_MAX_PROCS; r++)
		c->addr[r] = FI_ADDR_NOTAVAIL;
}

static void close_ctx(struct bench_ctx *c)
{
	bench_check(fi_close(&c->ep->fid), "fi_close(ep)");
	bench_check(fi_close(&c->av->fid), "fi_close(av)");
	bench_check(fi_close(&c->cq->fid), "fi_close(cq)");
	bench_check(fi_close(&c->domain->fid), "fi_close(domain)");
	bench_check(fi_close(&c->fabric->fid), "fi_close(fabric)");
	fi_freeinfo(c->info);
}

static void write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			bench_die("socket write: %s", strerror(errno));
		p += w;
		len -= (size_t)w;
	}
}

static void read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		ssize_t r = read(fd, p, len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			bench_die("another benchmark process is gone (socket read: %s)",
				  r == 0 ? "end of file" : strerror(errno));
		p += r;
		len -= (size_t)r;
	}
}

void bench_barrier(struct bench *b)
{
	char x = 0;

	if (b->rank == 0) {
		for (int r = 1; r < b->nprocs; r++)
			read_all(b->sock[r], &x, 1);
		for (int r = 1; r < b->nprocs; r++)
			write_all(b->sock[r], &x, 1);
	} else {
		write_all(b->sock[0], &x, 1);
		read_all(b->sock[0], &x, 1);
	}
}

void bench_bcast(struct bench *b, void *buf, size_t len)
{
	if (b->rank == 0)
		for (int r = 1; r < b->nprocs; r++)
			write_all(b->sock[r], buf, len);
	else
		read_all(b->sock[0], buf, len);
}

void bench_to_root(struct bench *b, int from, void *buf, size_t len)
{
	if (b->rank == 0)
		read_all(b->sock[from], buf, len);
	else if (b->rank == from)
		write_all(b->sock[0], buf, len);
}

static void insert(struct bench_ctx *c, int rank, const void *name)
{
	if (fi_av_insert(c->av, name, 1, &c->addr[rank], 0, NULL) != 1)
		bench_die("%s: fi_av_insert of rank %d's address failed", c->prov, rank);
}

/* Rank 0 learns every address; every other rank learns rank 0's. */
static void exchange_addresses(struct bench *b, struct bench_ctx *c)
{
	char name[256];
	size_t len = sizeof(name);

	bench_check(fi_getname(&c->ep->fid, name, &len), "fi_getname");
	if (b->nprocs == 1)	/* loopback: rank 0 sends to itself */
		insert(c, 0, name);
	if (b->rank == 0) {
		for (int r = 1; r < b->nprocs; r++) {
			char peer[256];
			size_t plen;

			write_all(b->sock[r], &len, sizeof(len));
			write_all(b->sock[r], name, len);
			read_all(b->sock[r], &plen, sizeof(plen));
			if (plen > sizeof(peer))
				bench_die("peer address of %zu bytes", plen);
			read_all(b->sock[r], peer, plen);
			insert(c, r, peer);
		}
	} else {
		char peer[256];
		size_t plen;

		read_all(b->sock[0], &plen, sizeof(plen));
		if (plen > sizeof(peer))
			bench_die("peer address of %zu bytes", plen);
		read_all(b->sock[0], peer, plen);
		write_all(b->sock[0], &len, sizeof(len));
		write_all(b->sock[0], name, len);
		insert(c, 0, peer);
	}
}

/*
 * With huge, 2 MiB-aligned and advised onto transparent huge pages: what a
 * process gets from malloc where THP is 'always'.  The page size decides
 * the cost of a CMA copy, which pins every page it touches.  In whole huge
 * pages: the kernel leaves a part of one on 4 KiB pages.  Else, with
 * page_aligned, at the start of a page (-O); else malloc's.
 */
static void *message_buffer(size_t size, bool huge, bool page_aligned)
{
	size_t huge_page = (size_t) 2 << 20;
	void *buf = NULL;

	if (huge)
		size = (size + huge_page - 1) & ~(huge_page - 1);
	if (!huge && !page_aligned)
		buf = malloc(size);
	else if (posix_memalign(&buf, huge ? huge_page : BENCH_PAGE, size))
		buf = NULL;
	if (!buf)
		bench_die("cannot allocate a %zu-byte buffer", size);
	if (huge && madvise(buf, size, MADV_HUGEPAGE))
		bench_die("madvise(MADV_HUGEPAGE): %s", strerror(errno));
	return buf;
}

/* Pins rank r to the (r mod n)-th of the n CPUs this process may use. */
void bench_bind_cpu(int rank)
{
	cpu_set_t allowed, one;
	int n = 0, want, cpu;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		bench_die("sched_getaffinity: %s", strerror(errno));
	want = rank % CPU_COUNT(&allowed);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &allowed) && n++ == want)
			break;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		bench_die("sched_setaffinity(cpu %d): %s", cpu, strerror(errno));
}

/*
 * Send buffers: one, which every send uses, unless -W writes the buffer
 * of a stream's sends while earlier ones may still be in flight, which an
 * application must not do.  Then each send in flight has its own, as many
 * as the window, up to BENCH_TX_BYTES_MAX in all.
 */
static size_t tx_slots(const struct bench_opts *o, size_t max)
{
	size_t fit = max ? BENCH_TX_BYTES_MAX / max : 1;

	if (!o->rewrite || o->tx_window < 2 || fit < 2)
		return 1;
	return (size_t) o->tx_window < fit ? (size_t) o->tx_window : fit;
}

void bench_start(struct bench *b, const char *name, const struct bench_opts *o, int nprocs)
{
	size_t max = bench_max_size(o);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	pid_t parent = getpid();

	if (nprocs < 1 || nprocs > BENCH_MAX_PROCS)
		bench_die("between 1 and %d processes", BENCH_MAX_PROCS);
	b->name = name;
	b->nprocs = nprocs;
	b->nprov = o->nprov;
	b->yield = o->yield || (cpus > 0 && nprocs > cpus);
	b->max_point_us = o->max_point_ms * 1e3;
	b->mean = o->mean;
	b->rewrite = o->rewrite;
	b->read = o->read;
	if (!b->cq_size)
		b->cq_size = 4 * BENCH_WINDOW;
	for (int p = 0; p < o->nprov; p++) {
		b->ctx[p].prov = o->provs[p];
		/* fail here, once, if a provider is unusable */
		fi_freeinfo(get_info(b, o->provs[p], max));
	}
	fflush(stdout);
	for (int r = 1; r < nprocs; r++) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
			bench_die("socketpair: %s", strerror(errno));
		b->pid[r] = fork();
		if (b->pid[r] < 0)
			bench_die("fork: %s", strerror(errno));
		if (b->pid[r] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				exit(EXIT_FAILURE);
			for (int q = 1; q < r; q++)
				close(b->sock[q]);
			close(sv[0]);
			b->rank = r;
			b->sock[0] = sv[1];
			break;
		}
		close(sv[1]);
		b->sock[r] = sv[0];
	}
	if (o->bind)
		bench_bind_cpu(b->rank);
	b->bufsize = max;
	b->tx_slots = tx_slots(o, max);
	b->tx = message_buffer(max * b->tx_slots, o->huge, o->rx_offset_set);
	b->tx_busy = calloc(b->tx_slots, 1);
	if (!b->tx_busy)
		bench_die("out of memory");
	b->rx_alloc = message_buffer(max + o->rx_offset, o->huge,
				     o->rx_offset_set);
	b->rx = b->rx_alloc + o->rx_offset;
	memset(b->tx, 'a' + b->rank % 26, max * b->tx_slots);
	memset(b->rx, 0, max);
	for (int p = 0; p < b->nprov; p++)
		open_ctx(b, &b->ctx[p], max);
	bench_shm_maps(&b->own_maps, NULL, NULL, &b->own_files);
	for (int p = 0; p < b->nprov; p++)
		exchange_addresses(b, &b->ctx[p]);
}

void bench_finish(struct bench *b)
{
	bench_barrier(b);	/* nothing in flight when the endpoints close */
	for (int p = 0; p < b->nprov; p++)
		close_ctx(&b->ctx[p]);
	free(b->tx);
	free(b->tx_busy);
	free(b->rx_alloc);
	if (b->rank != 0)
		exit(EXIT_SUCCESS);
	for (int r = 1; r < b->nprocs; r++) {
		int status;

		if (waitpid(b->pid[r], &status, 0) != b->pid[r] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			bench_die("rank %d failed (status 0x%x)", r, status);
	}
}

/* ---- data path ---- */

static void peer_check(struct bench *b)
{
	int status;
	pid_t pid;

	if (b->rank != 0 && getppid() == 1)
		bench_die("rank %d: the measuring process is gone", b->rank);
	if (b->rank == 0 && (pid = waitpid(-1, &status, WNOHANG)) > 0)
		bench_die("a benchmark process (pid %d) exited early (status 0x%x)",
			  (int)pid, status);
}

static void cq_error(struct bench_ctx *c)
{
	struct fi_cq_err_entry err = { 0 };
	char buf[256];

	bench_check((int)fi_cq_readerr(c->cq, &err, 0), "fi_cq_readerr");
	bench_die("%s: completion error: %s (%d), provider: %s", c->prov,
		  fi_strerror(err.err), err.err,
		  fi_cq_strerror(c->cq, err.prov_errno, err.err_data, buf, sizeof(buf)));
}

/* Reads what is there, counting send and receive completions. */
static ssize_t poll_cq(struct bench *b, struct bench_ctx *c)
{
	struct fi_cq_tagged_entry e[16];
	ssize_t rc = fi_cq_read(c->cq, e, 16);

	if (rc == -FI_EAGAIN) {
		if (b->yield)
			sched_yield();
		return 0;
	}
	if (rc == -FI_EAVAIL)
		cq_error(c);
	bench_check((int)rc, "fi_cq_read");
	for (ssize_t i = 0; i < rc; i++) {
		/* what this side initiated: a send, an RMA or an atomic */
		if (e[i].flags & (FI_SEND | FI_READ | FI_WRITE)) {
			c->nsent++;
			if (e[i].op_context)	/* its slot's flag in tx_busy */
				*(unsigned char *)e[i].op_context = 0;
			continue;
		}
		c->nrecvd++;
		if (b->read)
			b->read_sum += bench_touch(b->rx, e[i].len);
		if (e[i].tag & BENCH_STOP)
			c->stop_seen = true;
		if (e[i].tag >= BENCH_DATA_TAG && e[i].tag < BENCH_DATA_TAG + BENCH_MAX_PROCS)
			c->recvd_by_rank[e[i].tag - BENCH_DATA_TAG]++;
	}
	return rc;
}

void bench_progress(struct bench *b, struct bench_ctx *c)
{
	static unsigned spins;

	poll_cq(b, c);
	if (++spins % 100000 == 0)
		peer_check(b);
}

/*
 * Waits for every send and/or receive posted so far to complete: counting
 * against what was posted, because a receive may complete while we wait
 * for a send.
 */
void bench_wait(struct bench *b, struct bench_ctx *c, bool sends, bool recvs)
{
	double deadline = 0;
	unsigned spins = 0;

	while ((sends && c->nsent < c->sends) || (recvs && c->nrecvd < c->recvs)) {
		poll_cq(b, c);
		if (++spins % 100000 == 0) {
			peer_check(b);
			if (!deadline)
				deadline = bench_now_us() + BENCH_WAIT_SECS * 1e6;
			else if (bench_now_us() > deadline)
				bench_die("%s: no completion for %d s (rank %d)", c->prov,
					  BENCH_WAIT_SECS, b->rank);
		}
	}
}

/*
 * Without -W the send buffer is written once, so a provider that lets the
 * receiver read it (a single-copy pull) finds it, from the second message
 * on, still in the receiver's cache: no data crosses between the CPUs.
 */
void bench_rewrite(char *buf, size_t len)
{
	for (size_t off = 0; off < len; off += 64)
		buf[off]++;
}

unsigned bench_touch(const char *buf, size_t len)
{
	const volatile char *p = buf;
	unsigned sum = 0;

	for (size_t off = 0; off < len; off += 64)
		sum += (unsigned char) p[off];
	return sum;
}

/*
 * With -W, the next send's buffer, written: the next slot, once the send
 * that used it last has completed.
 */
static char *fresh_tx(struct bench *b, struct bench_ctx *c, size_t len, void **context)
{
	size_t slot = c->sends % b->tx_slots;
	char *buf = b->tx + slot * b->bufsize;

	while (b->tx_busy[slot])
		bench_progress(b, c);
	bench_rewrite(buf, len);
	b->tx_busy[slot] = 1;
	*context = &b->tx_busy[slot];
	return buf;
}

void bench_tsend(struct bench *b, struct bench_ctx *c, int to, size_t len, uint64_t tag)
{
	void *context = NULL;
	char *buf = b->rewrite ? fresh_tx(b, c, len, &context) : b->tx;
	ssize_t rc;

	while ((rc = fi_tsend(c->ep, buf, len, NULL, c->addr[to], tag, context)) == -FI_EAGAIN)
		bench_progress(b, c);
	bench_check((int)rc, "fi_tsend");
	c->sends++;
}

void bench_trecv(struct bench *b, struct bench_ctx *c, size_t len, uint64_t tag)
{
	ssize_t rc;

	while ((rc = fi_trecv(c->ep, b->rx, len, NULL, FI_ADDR_UNSPEC, tag, BENCH_STOP,
			      NULL)) == -FI_EAGAIN)
		bench_progress(b, c);
	bench_check((int)rc, "fi_trecv");
	c->recvs++;
}

/* ---- measurements ---- */

bool bench_point_over(const struct bench *b, double t0, int done, int iters)
{
	/* the clock is read every 8 iterations only: it costs as much as a message */
	return done >= iters || (b->max_point_us > 0 && done % 8 == 0 &&
				 bench_now_us() - t0 > b->max_point_us);
}

bool bench_past_time(const struct bench *b, double t0, double tnow)
{
	return b->max_point_us > 0 && tnow - t0 > b->max_point_us;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * Microseconds per iteration: from the median of the blocks timed, so that
 * a point is not spoilt by the moments another process took our CPU; from
 * the whole point with -a (b->mean), or when fewer than 3 blocks completed.
 */
double bench_per_iter(struct bench *b, double total_us, int iters, int block)
{
	if (b->mean || b->nblk < 3)
		return total_us / iters;
	return bench_median(b->blk, b->nblk) / block;
}

void bench_block_done(struct bench *b, double *tb, double *tnow)
{
	*tnow = bench_now_us();
	if (b->nblk < BENCH_MAX_BLOCKS)
		b->blk[b->nblk++] = *tnow - *tb;
	*tb = *tnow;
}

/*
 * Each side has its receive posted before the other sends, so every
 * message meets a posted receive.  Rank 0 times blocks of
 * BENCH_LAT_BLOCK round trips (1 above 16 KiB) and decides when to stop.
 */
double bench_latency(struct bench *b, struct bench_ctx *c, size_t size, int iters)
{
	/* above 16 KiB a round trip takes microseconds: time each one */
	int i = 0, block = size > 16384 ? 1 : BENCH_LAT_BLOCK;
	double t0, tb, tnow;
	bool last = false;

	c->stop_seen = false;
	b->nblk = 0;
	if (b->rank == 1)
		bench_trecv(b, c, size, BENCH_LAT_TAG);
	bench_barrier(b);
	t0 = tb = tnow = bench_now_us();
	while (!last) {
		i++;
		if (b->rank == 0) {
			last = i >= iters || bench_past_time(b, t0, tnow);
			bench_trecv(b, c, size, BENCH_LAT_TAG);
			bench_tsend(b, c, 1, size, BENCH_LAT_TAG | (last ? BENCH_STOP : 0));
			bench_wait(b, c, true, true);
			if (i % block == 0)
				bench_block_done(b, &tb, &tnow);
		} else {
			bench_wait(b, c, false, true);
			last = c->stop_seen;
			if (!last)
				bench_trecv(b, c, size, BENCH_LAT_TAG);
			bench_tsend(b, c, 0, size, BENCH_LAT_TAG);
			bench_wait(b, c, true, false);
		}
	}
	return bench_per_iter(b, bench_now_us() - t0, i, block) / 2;
}

static void post_window(struct bench *b, struct bench_ctx *c, size_t size)
{
	for (int w = 0; w < BENCH_WINDOW; w++)
		bench_trecv(b, c, size, BENCH_BW_TAG);
}

/* Rank 0 times every window and decides when to stop. */
double bench_stream(struct bench *b, struct bench_ctx *c, size_t size, int iters)
{
	double t0, tb, tnow;
	int i = 0;
	bool last = false;

	c->stop_seen = false;
	b->nblk = 0;
	if (b->rank == 1)
		post_window(b, c, size);
	bench_barrier(b);
	t0 = tb = tnow = bench_now_us();
	while (!last) {
		i++;
		if (b->rank == 0) {
			last = i >= iters || bench_past_time(b, t0, tnow);
			bench_trecv(b, c, 0, BENCH_ACK_TAG);
			for (int w = 0; w < BENCH_WINDOW; w++)
				bench_tsend(b, c, 1, size, BENCH_BW_TAG |
					    (last && w + 1 == BENCH_WINDOW ? BENCH_STOP : 0));
			bench_wait(b, c, true, true);
			bench_block_done(b, &tb, &tnow);
		} else {
			bench_wait(b, c, false, true);
			last = c->stop_seen;
			if (!last)
				post_window(b, c, size);
			bench_tsend(b, c, 0, 0, BENCH_ACK_TAG);
			bench_wait(b, c, true, false);
		}
	}
	return (double)size * BENCH_WINDOW / bench_per_iter(b, bench_now_us() - t0, i, 1);
}

/*
 * At least one warm-up iteration before each point, whatever the percent:
 * a point's first iteration pays for what its size touches first (pages
 * of the larger buffers, a provider learning the size), and at large sizes
 * a point may have only a few.
 */
static int warm_iters(int iters, int pct)
{
	int warm = iters * pct / 100;

	return warm == 0 && pct > 0 ? 1 : warm;
}

void bench_sweep(struct bench *b, const struct bench_opts *o, bench_fn fn,
		 size_t scale_from, int min_iters, bool per_size_too)
{
	unsigned point = 0;
	double cap = b->max_point_us, until = bench_now_us() + o->settle_ms * 1e3;
	bool settling = o->settle_ms > 0;

	/* rank 0 decides when settling is over: the others follow its word */
	b->max_point_us = 50e3;
	for (int k = 0; settling; k = (k + 1) % b->nprov) {
		fn(b, &b->ctx[k], o->sizes[0], o->iters);
		if (b->rank == 0)
			settling = k + 1 < b->nprov || bench_now_us() < until;
		bench_bcast(b, &settling, sizeof(settling));
	}
	b->max_point_us = cap;
	for (int rep = 0; rep < o->reps; rep++) {
		for (size_t i = 0; i < o->nsizes; i++, point++) {
			size_t size = o->sizes[i];
			int iters = bench_scaled(o->iters, size, scale_from, min_iters);
			int warm = warm_iters(iters, o->warmup_pct);

			for (int k = 0; k < b->nprov; k++) {
				/* alternate which provider goes first */
				int p = point % 2 ? b->nprov - 1 - k : k;
				struct bench_ctx *c = &b->ctx[p];
				double v;

				if (warm > 0) {
					double cap = b->max_point_us;

					b->max_point_us = cap / 10;
					fn(b, c, size, warm);
					b->max_point_us = cap;
				}
				v = fn(b, c, size, iters);
				if (b->rank != 0)
					continue;
				if (isnan(v))
					printf("%s %zu %d unsupported\n", c->prov, size, rep);
				else if (per_size_too)
					printf("%s %zu %d %.4f %.6f\n", c->prov, size, rep, v,
					       v / (double)size);
				else
					printf("%s %zu %d %.4f\n", c->prov, size, rep, v);
				fflush(stdout);
			}
		}
	}
}

/* ---- shared-memory mappings ---- */

static bool is_shm_path(const char *path)
{
	return !strncmp(path, "/dev/shm/", 9) || !strncmp(path, "/memfd:", 7) ||
	       !strncmp(path, "/SYSV", 5);
}

static bool in_files(const struct bench_shm_files *f, const char *path)
{
	for (int i = 0; f && i < f->n; i++)
		if (!strcmp(f->name[i], path))
			return true;
	return false;
}

static void print_map(FILE *out, int rank, const char *path, size_t size, size_t rss)
{
	if (out && path[0])
		fprintf(out, "# rank %d maps %s: %zu KiB, %zu KiB resident\n", rank, path, size,
			rss);
}

void bench_shm_list(FILE *out, int rank)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512], path[256] = "";
	size_t size = 0, rss = 0;

	if (!f)
		bench_die("/proc/self/smaps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		size_t kib;
		int off = 0;

		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &off) == 2 && off > 0) {
			print_map(out, rank, path, size, rss);
			path[0] = '\0';
			if (line[off] != '\n' && line[off] != '\0')
				sscanf(line + off, "%255s", path);
			if (!is_shm_path(path))
				path[0] = '\0';
			size = rss = 0;
		} else if (sscanf(line, "Size: %zu kB", &kib) == 1) {
			size = kib;
		} else if (sscanf(line, "Rss: %zu kB", &kib) == 1) {
			rss = kib;
		}
	}
	print_map(out, rank, path, size, rss);
	fclose(f);
}

void bench_shm_maps(struct bench_shm_maps *all, struct bench_shm_maps *own,
		    const struct bench_shm_files *own_files, struct bench_shm_files *record)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512], path[256] = "";
	bool shm = false, mine = false;

	memset(all, 0, sizeof(*all));
	if (own)
		memset(own, 0, sizeof(*own));
	if (record)
		record->n = 0;
	if (!f)
		bench_die("/proc/self/smaps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		size_t kib;
		int off = 0;

		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &off) == 2 && off > 0) {
			sscanf(line + off, "%255s", path);
			if (line[off] == '\n' || line[off] == '\0')
				path[0] = '\0';
			shm = is_shm_path(path);
			mine = shm && in_files(own_files, path);
			if (shm) {
				all->count++;
				if (mine)
					own->count++;
				if (record && !in_files(record, path) && record->n < 16)
					snprintf(record->name[record->n++], 256, "%s", path);
			}
			continue;
		}
		if (!shm)
			continue;
		if (sscanf(line, "Size: %zu kB", &kib) == 1) {
			all->size_kib += kib;
			if (mine)
				own->size_kib += kib;
		} else if (sscanf(line, "Rss: %zu kB", &kib) == 1) {
			all->rss_kib += kib;
			if (mine)
				own->rss_kib += kib;
		}
	}
	fclose(f);
}

static void program_usage(const struct bench_program *p)
{
	fprintf(stderr, "usage: %s [options]%s\n" BENCH_OPTHELP, p->name,
		p->usage ? p->usage : "");
	exit(EXIT_FAILURE);
}

int bench_main(int argc, char **argv, const struct bench_program *p)
{
	struct bench_opts o = { .iters = p->iters, .reps = 1, .warmup_pct = 10,
				.max_point_ms = 200, .settle_ms = 300 };
	struct bench b = { 0 };
	int c;

	bench_parse_provs(&o, "xshm");
	if (p->sizes)
		bench_parse_sizes(&o, p->sizes);
	else
		bench_default_sizes(&o, 4 << 20, true);
	while ((c = getopt(argc, argv, BENCH_OPTSTRING "h")) != -1)
		if (!bench_opt(&o, c, optarg))
			program_usage(p);
	if (optind != argc)
		program_usage(p);
	o.tx_window = p->tx_window;
	bench_start(&b, p->name, &o, p->nprocs);
	if (b.rank == 0) {
		p->header(&o);
		fflush(stdout);
	}
	bench_sweep(&b, &o, p->kernel, p->scale_from, p->min_iters,
		    p->per_size_too);
	bench_finish(&b);
	free(o.sizes);
	free(o.provs_buf);
	return EXIT_SUCCESS;
}
