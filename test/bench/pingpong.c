/*
 * Tagged ping-pong latency and streaming bandwidth between two processes of
 * one node, for any libfabric provider:
 *
 *   pingpong [-p provider] [-i iterations] [-w warmup] [-m max_size]
 *
 * The program forks; the two processes exchange their addresses over a
 * socketpair.  For each size from 1 byte to max_size (powers of two) it
 * prints one line: size, one-way latency in microseconds (round trip / 2)
 * and bandwidth in MB/s (10^6 bytes/s) for windows of 64 fi_tsend followed
 * by one 0-byte acknowledgement.  Lines starting with '#' are comments.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define WINDOW		64
#define LAT_TAG		1
#define BW_TAG		2
#define ACK_TAG		3
#define WAIT_SECS	30
#define SCALE_FROM	(64 * 1024)	/* sizes above this run fewer iterations */

struct opts {
	const char *prov;
	int iters, warmup;
	size_t max_size;
};

struct node {
	int rank;		/* 0 measures and prints, 1 answers */
	int sock;
	pid_t peer_pid;		/* rank 0: the child */
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t peer;
	char *tx, *rx;
	size_t nsent, nrecvd;	/* completions seen so far */
	size_t sends, recvs;	/* operations posted so far */
};

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "pingpong: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_FAILURE);
}

static void check(int rc, const char *what)
{
	if (rc < 0)
		die("%s: %s (%d)", what, fi_strerror(-rc), rc);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* ---- setup ---- */

static struct fi_info *get_info(const struct opts *o)
{
	struct fi_info *hints = fi_allocinfo(), *info;

	if (!hints)
		die("fi_allocinfo failed");
	hints->fabric_attr->prov_name = strdup(o->prov);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	hints->mode = 0;
	hints->domain_attr->mr_mode = 0;
	check(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), "fi_getinfo");
	fi_freeinfo(hints);
	if (o->max_size > info->ep_attr->max_msg_size)
		die("-m %zu exceeds max_msg_size %zu", o->max_size, info->ep_attr->max_msg_size);
	return info;
}

static void open_fabric(struct node *n, const struct opts *o)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = 4 * WINDOW };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };

	n->info = get_info(o);
	check(fi_fabric(n->info->fabric_attr, &n->fabric, NULL), "fi_fabric");
	check(fi_domain(n->fabric, n->info, &n->domain, NULL), "fi_domain");
	check(fi_av_open(n->domain, &av_attr, &n->av, NULL), "fi_av_open");
	check(fi_cq_open(n->domain, &cq_attr, &n->cq, NULL), "fi_cq_open");
	check(fi_endpoint(n->domain, n->info, &n->ep, NULL), "fi_endpoint");
	check(fi_ep_bind(n->ep, &n->av->fid, 0), "fi_ep_bind(av)");
	check(fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
	check(fi_enable(n->ep), "fi_enable");
}

static void close_fabric(struct node *n)
{
	check(fi_close(&n->ep->fid), "fi_close(ep)");
	check(fi_close(&n->av->fid), "fi_close(av)");
	check(fi_close(&n->cq->fid), "fi_close(cq)");
	check(fi_close(&n->domain->fid), "fi_close(domain)");
	check(fi_close(&n->fabric->fid), "fi_close(fabric)");
	fi_freeinfo(n->info);
}

static void write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("socket write: %s", strerror(errno));
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
			die("the other process is gone (socket read: %s)",
			    r == 0 ? "end of file" : strerror(errno));
		p += r;
		len -= (size_t)r;
	}
}

static void exchange_addresses(struct node *n)
{
	char name[256], peer[256];
	size_t len = sizeof(name), plen;

	check(fi_getname(&n->ep->fid, name, &len), "fi_getname");
	write_all(n->sock, &len, sizeof(len));
	write_all(n->sock, name, len);
	read_all(n->sock, &plen, sizeof(plen));
	if (plen > sizeof(peer))
		die("peer address of %zu bytes", plen);
	read_all(n->sock, peer, plen);
	if (fi_av_insert(n->av, peer, 1, &n->peer, 0, NULL) != 1)
		die("fi_av_insert of the peer address failed");
}

static void barrier(struct node *n)
{
	char b = 0;

	write_all(n->sock, &b, 1);
	read_all(n->sock, &b, 1);
}

/* ---- completions ---- */

static void peer_check(const struct node *n)
{
	int status;

	if (n->rank == 1 && getppid() == 1)
		die("the measuring process is gone");
	if (n->rank == 0 && waitpid(n->peer_pid, &status, WNOHANG) == n->peer_pid)
		die("the answering process exited early (status 0x%x)", status);
}

static void cq_error(struct node *n)
{
	struct fi_cq_err_entry err = { 0 };
	char buf[256];

	check((int)fi_cq_readerr(n->cq, &err, 0), "fi_cq_readerr");
	die("completion error: %s (%d), provider: %s", fi_strerror(err.err), err.err,
	    fi_cq_strerror(n->cq, err.prov_errno, err.err_data, buf, sizeof(buf)));
}

/* Reads what is there, counting send and receive completions. */
static void progress(struct node *n)
{
	struct fi_cq_tagged_entry e[16];
	ssize_t rc = fi_cq_read(n->cq, e, 16);

	if (rc == -FI_EAGAIN)
		return;
	if (rc == -FI_EAVAIL)
		cq_error(n);
	check((int)rc, "fi_cq_read");
	for (ssize_t i = 0; i < rc; i++) {
		if (e[i].flags & FI_SEND)
			n->nsent++;
		else
			n->nrecvd++;
	}
}

/*
 * Waits for every send and/or receive posted so far to complete.  Counting
 * against what was posted, not against what was seen on entry, because a
 * receive may complete while we wait for a send.
 */
static void wait_for(struct node *n, bool sends, bool recvs)
{
	double deadline = now_us() + WAIT_SECS * 1e6;
	unsigned spins = 0;

	while ((sends && n->nsent < n->sends) || (recvs && n->nrecvd < n->recvs)) {
		progress(n);
		if (++spins % 100000 == 0) {
			peer_check(n);
			if (now_us() > deadline)
				die("no completion for %d s", WAIT_SECS);
		}
	}
}

static void tsend(struct node *n, size_t len, uint64_t tag)
{
	ssize_t rc;

	while ((rc = fi_tsend(n->ep, n->tx, len, NULL, n->peer, tag, NULL)) == -FI_EAGAIN)
		progress(n);
	check((int)rc, "fi_tsend");
	n->sends++;
}

static void trecv(struct node *n, size_t len, uint64_t tag)
{
	ssize_t rc;

	while ((rc = fi_trecv(n->ep, n->rx, len, NULL, FI_ADDR_UNSPEC, tag, 0, NULL)) ==
	       -FI_EAGAIN)
		progress(n);
	check((int)rc, "fi_trecv");
	n->recvs++;
}

/* ---- measurements ---- */

/*
 * Each side has its receive posted before the other sends, so every
 * message meets a posted receive.  Returns the one-way latency (rank 0).
 */
static double latency(struct node *n, size_t size, int iters)
{
	double t0;

	if (n->rank == 1)
		trecv(n, size, LAT_TAG);
	barrier(n);
	t0 = now_us();
	for (int i = 0; i < iters; i++) {
		if (n->rank == 0) {
			trecv(n, size, LAT_TAG);
			tsend(n, size, LAT_TAG);
			wait_for(n, true, true);
		} else {
			wait_for(n, false, true);
			if (i + 1 < iters)
				trecv(n, size, LAT_TAG);
			tsend(n, size, LAT_TAG);
			wait_for(n, true, false);
		}
	}
	return (now_us() - t0) / iters / 2;
}

static void post_window(struct node *n, size_t size)
{
	for (int w = 0; w < WINDOW; w++)
		trecv(n, size, BW_TAG);
}

/* Windows of WINDOW sends, each acknowledged; returns MB/s (rank 0). */
static double bandwidth(struct node *n, size_t size, int iters)
{
	double t0;

	if (n->rank == 1)
		post_window(n, size);
	barrier(n);
	t0 = now_us();
	for (int i = 0; i < iters; i++) {
		if (n->rank == 0) {
			trecv(n, 0, ACK_TAG);
			for (int w = 0; w < WINDOW; w++)
				tsend(n, size, BW_TAG);
			wait_for(n, true, true);
		} else {
			wait_for(n, false, true);
			if (i + 1 < iters)
				post_window(n, size);
			tsend(n, 0, ACK_TAG);
			wait_for(n, true, false);
		}
	}
	return (double)size * WINDOW * iters / (now_us() - t0);
}

/* Fewer iterations for large sizes, so that each size takes similar time. */
static int scaled(int iters, size_t size, int at_least)
{
	long n = size <= SCALE_FROM ? iters : (long)((double)iters * SCALE_FROM / size);

	return n < at_least ? at_least : (int)n;
}

static void run(struct node *n, const struct opts *o)
{
	if (n->rank == 0) {
		printf("# pingpong: provider %s, %d iterations, %d warmup, window %d\n",
		       n->info->fabric_attr->prov_name, o->iters, o->warmup, WINDOW);
		printf("# %-10s %12s %16s\n", "size", "latency_us", "bandwidth_MBps");
		fflush(stdout);
	}
	for (size_t size = 1; size <= o->max_size; size *= 2) {
		int lat_iters = scaled(o->iters, size, 10);
		int bw_iters = scaled(o->iters / 10, size, 2);
		double lat, bw;

		if (o->warmup > 0) {
			latency(n, size, scaled(o->warmup, size, 1));
			bandwidth(n, size, scaled(o->warmup / 10, size, 1));
		}
		lat = latency(n, size, lat_iters);
		bw = bandwidth(n, size, bw_iters);
		if (n->rank == 0) {
			printf("%-12zu %12.3f %16.2f\n", size, lat, bw);
			fflush(stdout);
		}
	}
}

/* ---- processes ---- */

static void usage(void)
{
	fprintf(stderr, "usage: pingpong [-p provider] [-i iterations] [-w warmup] "
			"[-m max_size]\n");
	exit(EXIT_FAILURE);
}

static long number(const char *s, long min)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || *end || v < min)
		usage();
	return v;
}

static struct opts parse(int argc, char **argv)
{
	struct opts o = { .prov = "xshm", .iters = 10000, .warmup = 1000,
			  .max_size = 4 << 20 };
	int c;

	while ((c = getopt(argc, argv, "p:i:w:m:h")) != -1) {
		switch (c) {
		case 'p': o.prov = optarg; break;
		case 'i': o.iters = (int)number(optarg, 1); break;
		case 'w': o.warmup = (int)number(optarg, 0); break;
		case 'm': o.max_size = (size_t)number(optarg, 1); break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	return o;
}

static void run_node(struct node *n, const struct opts *o)
{
	size_t bufsize = o->max_size;

	n->tx = malloc(bufsize);
	n->rx = malloc(bufsize);
	if (!n->tx || !n->rx)
		die("cannot allocate %zu-byte buffers", bufsize);
	memset(n->tx, 'a' + n->rank, bufsize);
	memset(n->rx, 0, bufsize);
	open_fabric(n, o);
	exchange_addresses(n);
	run(n, o);
	barrier(n);	/* nothing in flight when the endpoints close */
	close_fabric(n);
	free(n->tx);
	free(n->rx);
}

int main(int argc, char **argv)
{
	struct opts o = parse(argc, argv);
	struct node n = { 0 };
	pid_t parent = getpid();
	int sv[2], status;

	fi_freeinfo(get_info(&o));	/* fail here, once, if the provider is unusable */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair: %s", strerror(errno));
	fflush(stdout);
	n.peer_pid = fork();
	if (n.peer_pid < 0)
		die("fork: %s", strerror(errno));
	if (n.peer_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			exit(EXIT_FAILURE);
		n.rank = 1;
		n.sock = sv[1];
		close(sv[0]);
		run_node(&n, &o);
		exit(EXIT_SUCCESS);
	}
	n.sock = sv[0];
	close(sv[1]);
	run_node(&n, &o);
	if (waitpid(n.peer_pid, &status, 0) != n.peer_pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		die("the answering process failed (status 0x%x)", status);
	return EXIT_SUCCESS;
}
