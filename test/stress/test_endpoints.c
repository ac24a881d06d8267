/*
 * 1000 endpoints in one process group: 4 processes open 250 endpoints each
 * (one fabric, domain, AV and CQ per process).  The endpoints form a ring
 * across the processes: each sends one message (inline, one bounce buffer or
 * chunked, by its number) to the next and receives one from the previous,
 * so every endpoint carries traffic both ways.  Then all are closed, and
 * every one of their regions, present before, is gone from /dev/shm.
 */
#include "stress.h"

#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define NPROCS		4
#define PER_PROC	250
#define NEPS		(NPROCS * PER_PROC)
#define MSG_MAX		40000
#define PHASE_MS	60000

static const size_t msg_len[] = { 64, 4000, MSG_MAX };	/* by endpoint number % 3 */

static size_t len_of(int g)
{
	return msg_len[g % 3];
}

static uint64_t seed_of(int g)
{
	return 0xe9d0000000000000ULL | (uint64_t)g;
}

/* Every endpoint of the process, and the ring state around it. */
struct proc {
	int rank;
	struct xt_cfg cfg;
	struct xt_ep x;			/* fabric, domain, AV and one CQ: no endpoint */
	struct fid_ep *ep[PER_PROC];
	char name[PER_PROC][XT_NAME_MAX];
	size_t namelen[PER_PROC];
	fi_addr_t addr[PER_PROC + 1];	/* ours, then the next process's first */
	unsigned char *sbuf[PER_PROC], *rbuf[PER_PROC];
	uint64_t sent, received, bytes;
	bool got[PER_PROC];
};

static void raise_nofile(void)
{
	struct rlimit rl;

	XT_ASSERT(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit");
	rl.rlim_cur = rl.rlim_max;
	XT_ASSERT(setrlimit(RLIMIT_NOFILE, &rl) == 0, "setrlimit");
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	XT_ASSERT(d != NULL, "opendir /proc/self/fd");
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3;	/* ".", ".." and the directory's own fd */
}

/* /dev/shm/xshm-<uid>-<endpoint id>, from "fi_xshm://<node>/<endpoint id>". */
static void region_path(const char *name, char *path, size_t len)
{
	const char *id = strrchr(name, '/');

	XT_ASSERT(id && strlen(id + 1) == 16, "address %s", name);
	snprintf(path, len, "/dev/shm/xshm-%u-%s", (unsigned)getuid(), id + 1);
}

static void open_endpoints(struct proc *p)
{
	for (int i = 0; i < PER_PROC; i++) {
		struct fid_ep *ep;

		XT_ASSERT_OK(fi_endpoint(p->x.domain, p->x.info, &ep, NULL));
		p->ep[i] = ep;
		XT_ASSERT_OK(fi_ep_bind(ep, &p->x.av->fid, 0));
		XT_ASSERT_OK(fi_ep_bind(ep, &p->x.rx->fid->fid, FI_TRANSMIT | FI_RECV));
		XT_ASSERT_OK(fi_enable(ep));
		p->namelen[i] = XT_NAME_MAX;
		XT_ASSERT_OK(fi_getname(&ep->fid, p->name[i], &p->namelen[i]));
	}
}

static void check_regions(const struct proc *p, bool present)
{
	char path[128];

	for (int i = 0; i < PER_PROC; i++) {
		region_path(p->name[i], path, sizeof(path));
		XT_ASSERT((access(path, F_OK) == 0) == present, "%s %s", path,
			  present ? "missing while open" : "left behind after close");
	}
}

/* One CQ for all: the context says which endpoint and which direction. */
static void drain(struct proc *p)
{
	struct fi_cq_tagged_entry e[32];
	ssize_t n = fi_cq_read(p->x.rx->fid, e, 32);

	if (n == -FI_EAGAIN)
		return;
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };

		fi_cq_readerr(p->x.rx->fid, &err, 0);
		XT_ASSERT(false, "error completion %d (%s)", err.err, fi_strerror(err.err));
	}
	XT_ASSERT(n > 0, "fi_cq_read: %zd", n);
	for (ssize_t k = 0; k < n; k++) {
		unsigned char **slot = e[k].op_context;

		if (slot >= p->sbuf && slot < p->sbuf + PER_PROC) {
			p->sent++;
			continue;
		}
		XT_ASSERT(slot >= p->rbuf && slot < p->rbuf + PER_PROC, "unknown context");
		int i = (int)(slot - p->rbuf);
		int me = p->rank * PER_PROC + i, prev = (me + NEPS - 1) % NEPS;

		XT_ASSERT(!p->got[i], "endpoint %d received twice", me);
		XT_ASSERT(e[k].tag == (uint64_t)prev && e[k].len == len_of(prev),
			  "endpoint %d: tag %llu, %zu bytes", me, (unsigned long long)e[k].tag,
			  e[k].len);
		XT_ASSERT_PATTERN(*slot, e[k].len, seed_of(prev), 0);
		p->got[i] = true;
		p->received++;
		p->bytes += e[k].len;
	}
}

static void exchange_ring(struct proc *p, int sock)
{
	uint64_t end = xt_now_ms() + PHASE_MS;

	for (int i = 0; i < PER_PROC; i++) {
		int me = p->rank * PER_PROC + i;

		p->rbuf[i] = xt_alloc(MSG_MAX);
		XT_POST(&p->x, fi_trecv(p->ep[i], p->rbuf[i], MSG_MAX, NULL, FI_ADDR_UNSPEC,
					(uint64_t)((me + NEPS - 1) % NEPS), 0, &p->rbuf[i]));
	}
	xt_signal(sock, 'R');
	XT_ASSERT(st_wait_byte(sock, PHASE_MS) == 'S', "expected the start");
	for (int i = 0; i < PER_PROC; i++) {
		int me = p->rank * PER_PROC + i;
		ssize_t rc;

		p->sbuf[i] = xt_alloc(len_of(me));
		xt_fill(p->sbuf[i], len_of(me), seed_of(me), 0);
		while ((rc = fi_tsend(p->ep[i], p->sbuf[i], len_of(me), NULL, p->addr[i + 1],
				      (uint64_t)me, &p->sbuf[i])) == -FI_EAGAIN) {
			drain(p);
			XT_ASSERT(xt_now_ms() < end, "send %d still refused", me);
		}
		XT_ASSERT_RC(rc, 0);
	}
	while (p->sent < PER_PROC || p->received < PER_PROC) {
		drain(p);
		XT_ASSERT(xt_now_ms() < end, "%llu sent, %llu received",
			  (unsigned long long)p->sent, (unsigned long long)p->received);
	}
}

/* Others may still need our progress: everyone closes once all are done. */
static void wait_quit(struct proc *p, int sock)
{
	uint64_t end = xt_now_ms() + PHASE_MS;
	struct pollfd pfd = { .fd = sock, .events = POLLIN };

	while (poll(&pfd, 1, 0) == 0) {
		drain(p);
		XT_ASSERT(xt_now_ms() < end, "no word to close within %d ms", PHASE_MS);
	}
	XT_ASSERT(st_wait_byte(sock, 1000) == 'Q', "expected the end");
}

static void proc_main(int sock, void *arg)
{
	struct proc *p = calloc(1, sizeof(*p));
	char next[XT_NAME_MAX];
	int fds;

	XT_ASSERT(p != NULL, "calloc");
	p->rank = *(const int *)arg;
	raise_nofile();
	p->cfg = xt_cfg_default();
	p->cfg.shared_cq = true;
	xt_open_upto(&p->x, &p->cfg, XT_RESOURCES);
	open_endpoints(p);
	fds = open_fds();
	for (int i = 0; i < PER_PROC; i++) {
		xt_send_bytes(sock, p->name[i], p->namelen[i]);
		p->addr[i] = xt_av_insert(&p->x, p->name[i]);
	}
	xt_recv_name(sock, next);
	/* Our last endpoint sends to the first of the next process. */
	p->addr[PER_PROC] = xt_av_insert(&p->x, next);
	check_regions(p, true);
	exchange_ring(p, sock);
	xt_signal(sock, 'D');
	xt_send_u64(sock, p->received);
	xt_send_u64(sock, p->bytes);
	xt_send_u64(sock, (uint64_t)fds);
	wait_quit(p, sock);
	for (int i = 0; i < PER_PROC; i++) {
		XT_ASSERT_OK(fi_close(&p->ep[i]->fid));
		free(p->sbuf[i]);
		free(p->rbuf[i]);
	}
	xt_close(&p->x);
	check_regions(p, false);
	free(p);
}

START_TEST(thousand_endpoints_each_carry_a_message_and_leave_nothing)
{
	struct xt_child c[NPROCS];
	int ranks[NPROCS];
	char first[NPROCS][XT_NAME_MAX], name[XT_NAME_MAX];
	size_t first_len[NPROCS];
	uint64_t msgs = 0, bytes = 0, fds = 0, start = xt_now_ms();

	for (int r = 0; r < NPROCS; r++) {
		ranks[r] = r;
		xt_spawn(&c[r], proc_main, &ranks[r]);
	}
	for (int r = 0; r < NPROCS; r++)
		for (int i = 0; i < PER_PROC; i++) {
			size_t len = xt_recv_name(c[r].sock, name);

			if (i == 0) {
				memcpy(first[r], name, len);
				first_len[r] = len;
			}
		}
	for (int r = 0; r < NPROCS; r++)
		xt_send_bytes(c[r].sock, first[(r + 1) % NPROCS], first_len[(r + 1) % NPROCS]);
	for (int r = 0; r < NPROCS; r++)
		XT_ASSERT(st_wait_byte(c[r].sock, PHASE_MS) == 'R', "rank %d not ready", r);
	for (int r = 0; r < NPROCS; r++)
		xt_signal(c[r].sock, 'S');
	for (int r = 0; r < NPROCS; r++) {
		uint64_t n;

		XT_ASSERT(st_wait_byte(c[r].sock, PHASE_MS) == 'D', "rank %d not done", r);
		n = xt_recv_u64(c[r].sock);
		XT_ASSERT(n == PER_PROC, "rank %d received %llu", r, (unsigned long long)n);
		msgs += n;
		bytes += xt_recv_u64(c[r].sock);
		n = xt_recv_u64(c[r].sock);
		fds = n > fds ? n : fds;
	}
	for (int r = 0; r < NPROCS; r++)
		xt_signal(c[r].sock, 'Q');
	for (int r = 0; r < NPROCS; r++)
		xt_join(&c[r]);
	XT_ASSERT(msgs == NEPS, "%llu messages", (unsigned long long)msgs);
	printf("stress endpoints: %d endpoints in %d processes, %llu messages, %llu bytes, "
	       "all checked; at most %llu open fds per process with %d endpoints; all "
	       "regions gone after close; %llu ms\n", NEPS, NPROCS, (unsigned long long)msgs,
	       (unsigned long long)bytes, (unsigned long long)fds, PER_PROC,
	       (unsigned long long)(xt_now_ms() - start));
	fflush(stdout);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("endpoints");
	TCase *tc = tcase_create("thousand");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, thousand_endpoints_each_carry_a_message_and_leave_nothing);
	suite_add_tcase(s, tc);
	return xt_run_suite(s);
}
