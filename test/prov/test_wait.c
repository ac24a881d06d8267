/*
 * Wait objects: fi_cq_sread and fi_cntr_wait sleep (they do not spin) and
 * are woken by a peer's send, by fi_cq_signal and by completions written by
 * another thread; FI_GETWAIT and fi_trywait give a pollable fd.
 */
#include "harness.h"

#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MSG_LEN		100
#define SLEEP_MS	1000	/* how long the sender waits before sending */
#define CPU_SHARE	5	/* a sleeper uses under 1/CPU_SHARE of the wall time */
#define LATE_MS		2000	/* a wakeup this late was lost (a timeout ended it) */

enum { CMD_QUIT = 1, CMD_SEND, CMD_DONE };

/* ---- a sending child: on CMD_SEND, waits, then sends count messages ---- */

static void sender(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	char buf[MSG_LEN];
	struct xt_comp c;
	struct xt_ep x;
	fi_addr_t dst;

	xt_open(&x, &cfg);
	dst = xt_exchange(&x, sock);
	while (xt_wait(sock) == CMD_SEND) {
		uint64_t count = xt_recv_u64(sock);
		uint64_t delay_ms = xt_recv_u64(sock);

		for (uint64_t i = 0; i < count; i++) {
			usleep((useconds_t)delay_ms * 1000);
			xt_fill(buf, sizeof(buf), i, 0);
			XT_POST(&x, fi_send(x.ep, buf, sizeof(buf), NULL, dst, NULL));
			xt_wait_tx(&x, &c);
		}
		xt_signal(sock, CMD_DONE);
	}
	xt_close(&x);
}

/* The receiving parent and its sender. */
struct rig {
	struct xt_cfg cfg;
	struct xt_ep x;
	struct xt_child child;
};

static void rig_start(struct rig *r, enum fi_wait_obj wait_obj)
{
	r->cfg = xt_cfg_default();
	r->cfg.wait_obj = wait_obj;
	xt_spawn(&r->child, sender, NULL);
	xt_open(&r->x, &r->cfg);
	xt_exchange(&r->x, r->child.sock);
}

/* Each message after delay_ms; returns at once. */
static void remote_send(struct rig *r, uint64_t count, uint64_t delay_ms)
{
	xt_signal(r->child.sock, CMD_SEND);
	xt_send_u64(r->child.sock, count);
	xt_send_u64(r->child.sock, delay_ms);
}

static void rig_stop(struct rig *r)
{
	XT_ASSERT(xt_wait(r->child.sock) == CMD_DONE, "sender did not finish");
	xt_signal(r->child.sock, CMD_QUIT);
	xt_join(&r->child);
	xt_close(&r->x);
}

/* ---- measuring ---- */

static uint64_t cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

struct span {
	uint64_t wall_ms, cpu_us;
};

static struct span span_start(void)
{
	return (struct span){ xt_now_ms(), cpu_us() };
}

static struct span span_end(struct span s)
{
	return (struct span){ xt_now_ms() - s.wall_ms, cpu_us() - s.cpu_us };
}

#define XT_ASSERT_SLEPT(s) \
	XT_ASSERT((s).cpu_us * CPU_SHARE < (s).wall_ms * 1000, \
		  "used %llu us of CPU in %llu ms: it spun", \
		  (unsigned long long)(s).cpu_us, (unsigned long long)(s).wall_ms)

static bool readable(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, timeout_ms) == 1;
}

static const enum fi_wait_obj sleeping_waits[] = { FI_WAIT_UNSPEC, FI_WAIT_FD };

/* ---- fi_cq_sread ---- */

START_TEST(sread_sleeps_until_a_remote_send)
{
	struct fi_cq_tagged_entry e;
	char buf[MSG_LEN], ctx;
	struct rig r;
	struct span s;

	rig_start(&r, sleeping_waits[_i]);
	xt_post_recv(&r.x, false, buf, sizeof(buf), FI_ADDR_UNSPEC, 0, 0, &ctx);
	remote_send(&r, 1, SLEEP_MS);
	s = span_start();
	XT_ASSERT_RC(fi_cq_sread(r.x.rx->fid, &e, 1, NULL, XT_TIMEOUT_MS), 1);
	s = span_end(s);
	XT_ASSERT(e.op_context == &ctx, "op_context %p", e.op_context);
	XT_ASSERT_PATTERN(buf, MSG_LEN, 0, 0);
	XT_ASSERT(s.wall_ms >= SLEEP_MS * 8 / 10 && s.wall_ms < SLEEP_MS + LATE_MS,
		  "returned after %llu ms for a send after %d", (unsigned long long)s.wall_ms,
		  SLEEP_MS);
	XT_ASSERT_SLEPT(s);
	rig_stop(&r);
}
END_TEST

/* Messages a few ms apart: every one wakes the sleeper, none is lost. */
START_TEST(sread_gets_each_of_a_stream)
{
	enum { N = 30 };
	struct fi_cq_tagged_entry e;
	char buf[N][MSG_LEN];
	struct rig r;

	rig_start(&r, sleeping_waits[_i]);
	for (int i = 0; i < N; i++)
		xt_post_recv(&r.x, false, buf[i], MSG_LEN, FI_ADDR_UNSPEC, 0, 0, buf[i]);
	remote_send(&r, N, 3);
	for (int i = 0; i < N; i++) {
		uint64_t t0 = xt_now_ms();

		XT_ASSERT_RC(fi_cq_sread(r.x.rx->fid, &e, 1, NULL, XT_TIMEOUT_MS), 1);
		XT_ASSERT(xt_now_ms() - t0 < LATE_MS / 2, "message %d took %llu ms", i,
			  (unsigned long long)(xt_now_ms() - t0));
		XT_ASSERT(e.op_context == buf[i], "completion %d out of order", i);
		XT_ASSERT_PATTERN(buf[i], MSG_LEN, (uint64_t)i, 0);
	}
	rig_stop(&r);
}
END_TEST

START_TEST(sread_times_out_with_eagain_while_sleeping)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_cq_tagged_entry e;
	struct xt_ep x;
	struct span s;

	cfg.wait_obj = sleeping_waits[_i];
	xt_open(&x, &cfg);
	s = span_start();
	XT_ASSERT_RC(fi_cq_sread(x.rx->fid, &e, 1, NULL, 500), -FI_EAGAIN);
	s = span_end(s);
	XT_ASSERT(s.wall_ms >= 450 && s.wall_ms < 3000, "waited %llu ms for 500",
		  (unsigned long long)s.wall_ms);
	XT_ASSERT_SLEPT(s);
	XT_ASSERT_RC(fi_cq_sread(x.rx->fid, &e, 1, NULL, 0), -FI_EAGAIN);
	xt_close(&x);
}
END_TEST

START_TEST(sread_with_yield_still_works)
{
	struct fi_cq_tagged_entry e;
	char buf[MSG_LEN], ctx;
	struct rig r;
	uint64_t t0;

	rig_start(&r, FI_WAIT_YIELD);
	xt_post_recv(&r.x, false, buf, sizeof(buf), FI_ADDR_UNSPEC, 0, 0, &ctx);
	remote_send(&r, 1, 100);
	XT_ASSERT_RC(fi_cq_sread(r.x.rx->fid, &e, 1, NULL, XT_TIMEOUT_MS), 1);
	XT_ASSERT(e.op_context == &ctx, "op_context %p", e.op_context);
	t0 = xt_now_ms();
	XT_ASSERT_RC(fi_cq_sread(r.x.rx->fid, &e, 1, NULL, 200), -FI_EAGAIN);
	XT_ASSERT(xt_now_ms() - t0 >= 150, "yield sread timed out early");
	rig_stop(&r);
}
END_TEST

/* fi_cq(3): sread is invalid on a CQ opened with FI_WAIT_NONE. */
START_TEST(sread_on_wait_none_is_invalid)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	struct xt_ep x;

	xt_open(&x, &cfg);
	XT_ASSERT_RC(fi_cq_sread(x.rx->fid, &e, 1, NULL, 100), -FI_EINVAL);
	XT_ASSERT_RC(fi_cq_sreadfrom(x.rx->fid, &e, 1, &src, NULL, 100), -FI_EINVAL);
	xt_close(&x);
}
END_TEST

/* ---- waking from this process ---- */

struct later {
	int delay_ms;
	struct fid_cq *cq;
	struct xt_ep *from;
	fi_addr_t dst;
	bool inject;
	long long rc;
};

static void *signal_later(void *arg)
{
	struct later *l = arg;

	usleep((useconds_t)l->delay_ms * 1000);
	l->rc = fi_cq_signal(l->cq);
	return NULL;
}

static void *send_later(void *arg)
{
	static char payload[MSG_LEN];
	struct later *l = arg;

	usleep((useconds_t)l->delay_ms * 1000);
	xt_fill(payload, sizeof(payload), 5, 0);
	if (l->inject)
		l->rc = fi_inject(l->from->ep, payload, sizeof(payload), l->dst);
	else
		l->rc = fi_send(l->from->ep, payload, sizeof(payload), NULL, l->dst, payload);
	return NULL;
}

START_TEST(cq_signal_from_another_thread_wakes_sread)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct later l = { .delay_ms = 300 };
	struct fi_cq_tagged_entry e;
	struct xt_ep x;
	pthread_t thread;
	struct span s;

	cfg.wait_obj = sleeping_waits[_i];
	xt_open(&x, &cfg);
	l.cq = x.rx->fid;
	s = span_start();
	XT_ASSERT(pthread_create(&thread, NULL, signal_later, &l) == 0, "pthread_create");
	XT_ASSERT_RC(fi_cq_sread(x.rx->fid, &e, 1, NULL, -1), -FI_EAGAIN);
	s = span_end(s);
	pthread_join(thread, NULL);
	XT_ASSERT_RC(l.rc, 0);
	XT_ASSERT(s.wall_ms >= 250 && s.wall_ms < 300 + LATE_MS, "woken after %llu ms",
		  (unsigned long long)s.wall_ms);
	XT_ASSERT_SLEPT(s);
	xt_close(&x);
}
END_TEST

/* Another thread injects to our own address: the message lands in our ring. */
START_TEST(inject_to_self_from_another_thread_wakes_sread)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct later l = { .delay_ms = 300, .inject = true };
	struct fi_cq_tagged_entry e;
	char buf[MSG_LEN], ctx;
	struct xt_ep x;
	pthread_t thread;
	struct span s;

	cfg.wait_obj = sleeping_waits[_i];
	xt_open(&x, &cfg);
	l.from = &x;
	l.dst = xt_av_insert(&x, x.name);
	xt_post_recv(&x, false, buf, sizeof(buf), FI_ADDR_UNSPEC, 0, 0, &ctx);
	s = span_start();
	XT_ASSERT(pthread_create(&thread, NULL, send_later, &l) == 0, "pthread_create");
	XT_ASSERT_RC(fi_cq_sread(x.rx->fid, &e, 1, NULL, XT_TIMEOUT_MS), 1);
	s = span_end(s);
	pthread_join(thread, NULL);
	XT_ASSERT_RC(l.rc, 0);
	XT_ASSERT(e.op_context == &ctx, "op_context %p", e.op_context);
	XT_ASSERT_PATTERN(buf, MSG_LEN, 5, 0);
	XT_ASSERT(s.wall_ms >= 250 && s.wall_ms < 300 + LATE_MS,
		  "returned after %llu ms for an inject after 300", (unsigned long long)s.wall_ms);
	XT_ASSERT_SLEPT(s);
	xt_close(&x);
}
END_TEST

/*
 * A send completion written by another thread into the CQ we sleep on: no
 * peer rings our doorbell (the message goes to another endpoint), so only
 * the CQ's own wakeup can end the sleep.
 */
START_TEST(send_completion_from_another_thread_wakes_sread)
{
	struct xt_cfg cfg = xt_cfg_default(), plain = xt_cfg_default();
	struct later l = { .delay_ms = 300 };
	struct fi_cq_tagged_entry e;
	struct xt_ep x, peer;
	struct xt_comp c;
	pthread_t thread;
	struct span s;

	cfg.wait_obj = sleeping_waits[_i];
	xt_open(&x, &cfg);
	xt_open(&peer, &plain);
	l.from = &x;
	l.dst = xt_av_insert(&x, peer.name);
	s = span_start();
	XT_ASSERT(pthread_create(&thread, NULL, send_later, &l) == 0, "pthread_create");
	XT_ASSERT_RC(fi_cq_sread(x.tx->fid, &e, 1, NULL, XT_TIMEOUT_MS), 1);
	s = span_end(s);
	pthread_join(thread, NULL);
	XT_ASSERT_RC(l.rc, 0);
	XT_ASSERT(e.flags & FI_SEND, "flags 0x%llx", (unsigned long long)e.flags);
	XT_ASSERT(s.wall_ms >= 250 && s.wall_ms < 300 + LATE_MS,
		  "returned after %llu ms for a send after 300", (unsigned long long)s.wall_ms);
	XT_ASSERT_SLEPT(s);
	{
		char buf[MSG_LEN];

		xt_post_recv(&peer, false, buf, sizeof(buf), FI_ADDR_UNSPEC, 0, 0, NULL);
		xt_wait_rx(&peer, &c);
		XT_ASSERT_PATTERN(buf, MSG_LEN, 5, 0);
	}
	xt_close(&peer);
	xt_close(&x);
}
END_TEST

/* ---- FI_GETWAIT and fi_trywait ---- */

START_TEST(getwait_gives_no_fd_without_wait_fd)
{
	static const enum fi_wait_obj others[] = { FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_YIELD };
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_ep x;
	int fd = -1;

	cfg.wait_obj = others[_i];
	xt_open(&x, &cfg);
	XT_ASSERT_RC(fi_control(&x.rx->fid->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	xt_close(&x);
}
END_TEST

START_TEST(trywait_then_poll_wakes_on_a_remote_send)
{
	struct fi_cq_tagged_entry e;
	char buf[MSG_LEN], ctx;
	struct fid *fids[1];
	struct rig r;
	struct span s;
	int fd = -1;

	rig_start(&r, FI_WAIT_FD);
	XT_ASSERT_OK(fi_control(&r.x.rx->fid->fid, FI_GETWAIT, &fd));
	XT_ASSERT(fd >= 0, "fd %d", fd);
	fids[0] = &r.x.rx->fid->fid;
	xt_post_recv(&r.x, false, buf, sizeof(buf), FI_ADDR_UNSPEC, 0, 0, &ctx);
	XT_ASSERT_OK(fi_trywait(r.x.fabric, fids, 1));
	XT_ASSERT(!readable(fd, 200), "fd readable before anything was sent");
	remote_send(&r, 1, 300);
	s = span_start();
	XT_ASSERT(readable(fd, XT_TIMEOUT_MS), "fd not readable after the send");
	s = span_end(s);
	XT_ASSERT(s.wall_ms >= 200 && s.wall_ms < 300 + LATE_MS,
		  "readable after %llu ms for a send after 300", (unsigned long long)s.wall_ms);
	XT_ASSERT_RC(fi_trywait(r.x.fabric, fids, 1), -FI_EAGAIN);
	XT_ASSERT_RC(fi_cq_read(r.x.rx->fid, &e, 1), 1);
	XT_ASSERT(e.op_context == &ctx, "op_context %p", e.op_context);
	XT_ASSERT_PATTERN(buf, MSG_LEN, 0, 0);
	XT_ASSERT_OK(fi_trywait(r.x.fabric, fids, 1));
	XT_ASSERT(!readable(fd, 100), "fd still readable once everything was read");
	rig_stop(&r);
}
END_TEST

/* The loop of fi_poll(3), over a stream: no poll may sleep through a message. */
START_TEST(trywait_loop_receives_a_stream)
{
	enum { N = 30 };
	struct fi_cq_tagged_entry e;
	char buf[N][MSG_LEN];
	struct fid *fids[1];
	struct rig r;
	int fd = -1, got = 0, polls = 0;

	rig_start(&r, FI_WAIT_FD);
	XT_ASSERT_OK(fi_control(&r.x.rx->fid->fid, FI_GETWAIT, &fd));
	fids[0] = &r.x.rx->fid->fid;
	for (int i = 0; i < N; i++)
		xt_post_recv(&r.x, false, buf[i], MSG_LEN, FI_ADDR_UNSPEC, 0, 0, buf[i]);
	remote_send(&r, N, 3);
	while (got < N) {
		ssize_t rc;

		if (fi_trywait(r.x.fabric, fids, 1) == FI_SUCCESS) {
			XT_ASSERT(readable(fd, 5000), "poll slept through message %d", got);
			polls++;
		}
		while ((rc = fi_cq_read(r.x.rx->fid, &e, 1)) == 1) {
			XT_ASSERT(e.op_context == buf[got], "completion %d out of order", got);
			got++;
		}
		XT_ASSERT_RC(rc, -FI_EAGAIN);
	}
	XT_ASSERT(polls > 0, "fi_trywait never let the application sleep");
	rig_stop(&r);
}
END_TEST

START_TEST(trywait_refuses_other_objects)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fid *fids[1];
	struct xt_ep x;

	xt_open(&x, &cfg);
	fids[0] = &x.rx->fid->fid;
	XT_ASSERT(fi_trywait(x.fabric, fids, 1) != FI_SUCCESS,
		  "fi_trywait succeeded on an FI_WAIT_NONE CQ");
	fids[0] = &x.av->fid;
	XT_ASSERT(fi_trywait(x.fabric, fids, 1) != FI_SUCCESS,
		  "fi_trywait succeeded on an AV");
	xt_close(&x);
}
END_TEST

/* ---- counters ---- */

/* The rig with a receive counter bound next to the CQs. */
static struct fid_cntr *rig_start_cntr(struct rig *r, enum fi_wait_obj wait_obj,
				       enum fi_wait_obj cq_wait_obj)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = wait_obj };
	struct fid_cntr *cntr;

	r->cfg = xt_cfg_default();
	r->cfg.wait_obj = cq_wait_obj;
	xt_spawn(&r->child, sender, NULL);
	xt_open_upto(&r->x, &r->cfg, XT_BOUND);
	XT_ASSERT_OK(fi_cntr_open(r->x.domain, &attr, &cntr, NULL));
	XT_ASSERT_OK(fi_ep_bind(r->x.ep, &cntr->fid, FI_RECV));
	xt_enable(&r->x);
	xt_exchange(&r->x, r->child.sock);
	return cntr;
}

static void rig_stop_cntr(struct rig *r, struct fid_cntr *cntr)
{
	XT_ASSERT(xt_wait(r->child.sock) == CMD_DONE, "sender did not finish");
	xt_signal(r->child.sock, CMD_QUIT);
	xt_join(&r->child);
	XT_ASSERT_OK(fi_close(&r->x.ep->fid));
	r->x.ep = NULL;
	XT_ASSERT_OK(fi_close(&cntr->fid));
	xt_close(&r->x);
}

START_TEST(cntr_wait_sleeps_until_a_remote_send)
{
	char buf[MSG_LEN];
	struct fid_cntr *cntr;
	struct rig r;
	struct span s;

	cntr = rig_start_cntr(&r, sleeping_waits[_i], FI_WAIT_NONE);
	xt_post_recv(&r.x, false, buf, sizeof(buf), FI_ADDR_UNSPEC, 0, 0, NULL);
	remote_send(&r, 1, SLEEP_MS);
	s = span_start();
	XT_ASSERT_OK(fi_cntr_wait(cntr, 1, XT_TIMEOUT_MS));
	s = span_end(s);
	XT_ASSERT(fi_cntr_read(cntr) == 1, "counter %llu", (unsigned long long)fi_cntr_read(cntr));
	XT_ASSERT_PATTERN(buf, MSG_LEN, 0, 0);
	XT_ASSERT(s.wall_ms >= SLEEP_MS * 8 / 10 && s.wall_ms < SLEEP_MS + LATE_MS,
		  "returned after %llu ms for a send after %d", (unsigned long long)s.wall_ms,
		  SLEEP_MS);
	XT_ASSERT_SLEPT(s);
	rig_stop_cntr(&r, cntr);
}
END_TEST

START_TEST(cntr_trywait_then_poll_wakes_on_a_remote_send)
{
	char buf[MSG_LEN];
	struct fid_cntr *cntr;
	struct fid *fids[1];
	struct rig r;
	int fd = -1;

	cntr = rig_start_cntr(&r, FI_WAIT_FD, FI_WAIT_NONE);
	XT_ASSERT_OK(fi_control(&cntr->fid, FI_GETWAIT, &fd));
	XT_ASSERT(fd >= 0, "fd %d", fd);
	fids[0] = &cntr->fid;
	xt_post_recv(&r.x, false, buf, sizeof(buf), FI_ADDR_UNSPEC, 0, 0, NULL);
	XT_ASSERT(fi_cntr_read(cntr) == 0, "counter moved");
	XT_ASSERT_OK(fi_trywait(r.x.fabric, fids, 1));
	XT_ASSERT(!readable(fd, 200), "fd readable before anything was sent");
	remote_send(&r, 1, 300);
	XT_ASSERT(readable(fd, XT_TIMEOUT_MS), "fd not readable after the send");
	XT_ASSERT_RC(fi_trywait(r.x.fabric, fids, 1), -FI_EAGAIN);
	XT_ASSERT(fi_cntr_read(cntr) == 1, "counter %llu", (unsigned long long)fi_cntr_read(cntr));
	XT_ASSERT_OK(fi_trywait(r.x.fabric, fids, 1));
	XT_ASSERT(!readable(fd, 100), "fd still readable once the counter was read");
	rig_stop_cntr(&r, cntr);
}
END_TEST

/* Both wait sets of one endpoint sleep at once, each in its own thread. */
struct cntr_waiter {
	struct fid_cntr *cntr;
	uint64_t threshold;
	long long rc;
	uint64_t wall_ms;
};

static void *wait_cntr(void *arg)
{
	struct cntr_waiter *w = arg;
	uint64_t t0 = xt_now_ms();

	w->rc = fi_cntr_wait(w->cntr, w->threshold, XT_TIMEOUT_MS);
	w->wall_ms = xt_now_ms() - t0;
	return NULL;
}

START_TEST(cq_and_cntr_of_one_endpoint_sleep_in_two_threads)
{
	enum { N = 20, GAP_MS = 5 };
	struct cntr_waiter w = { .threshold = N };
	struct fi_cq_tagged_entry e;
	char buf[N][MSG_LEN];
	pthread_t thread;
	struct rig r;

	w.cntr = rig_start_cntr(&r, FI_WAIT_UNSPEC, FI_WAIT_UNSPEC);
	for (int i = 0; i < N; i++)
		xt_post_recv(&r.x, false, buf[i], MSG_LEN, FI_ADDR_UNSPEC, 0, 0, buf[i]);
	XT_ASSERT(pthread_create(&thread, NULL, wait_cntr, &w) == 0, "pthread_create");
	remote_send(&r, N, GAP_MS);
	for (int i = 0; i < N; i++) {
		uint64_t t0 = xt_now_ms();

		XT_ASSERT_RC(fi_cq_sread(r.x.rx->fid, &e, 1, NULL, XT_TIMEOUT_MS), 1);
		XT_ASSERT(xt_now_ms() - t0 < LATE_MS / 2, "message %d took %llu ms", i,
			  (unsigned long long)(xt_now_ms() - t0));
		XT_ASSERT(e.op_context == buf[i], "completion %d out of order", i);
	}
	pthread_join(thread, NULL);
	XT_ASSERT_RC(w.rc, 0);
	XT_ASSERT(w.wall_ms < N * GAP_MS + LATE_MS, "counter wait took %llu ms",
		  (unsigned long long)w.wall_ms);
	rig_stop_cntr(&r, w.cntr);
}
END_TEST

/*
 * A sender whose large sends wait for room in the receiver's pool sleeps in
 * fi_cntr_wait: nobody rings it when room appears, yet it must finish.
 */
#define BULK_LEN	(1024 * 1024)
#define BULK_COUNT	4

static void bulk_sender(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	char *buf = xt_alloc(BULK_LEN);
	struct fid_cntr *cntr;
	struct xt_ep x;
	fi_addr_t dst;
	uint64_t t0;
	int rc;

	xt_open_upto(&x, &cfg, XT_BOUND);
	XT_ASSERT_OK(fi_cntr_open(x.domain, &attr, &cntr, NULL));
	XT_ASSERT_OK(fi_ep_bind(x.ep, &cntr->fid, FI_SEND));
	xt_enable(&x);
	dst = xt_exchange(&x, sock);
	xt_fill(buf, BULK_LEN, 9, 0);
	XT_ASSERT(xt_wait(sock) == CMD_SEND, "no go");
	for (int i = 0; i < BULK_COUNT; i++)
		XT_POST(&x, fi_send(x.ep, buf, BULK_LEN, NULL, dst, NULL));
	t0 = xt_now_ms();
	rc = fi_cntr_wait(cntr, BULK_COUNT, XT_TIMEOUT_MS);
	xt_send_u64(sock, (uint64_t)(int64_t)rc);
	xt_send_u64(sock, xt_now_ms() - t0);
	XT_ASSERT(xt_wait(sock) == CMD_QUIT, "no quit");
	XT_ASSERT_OK(fi_close(&x.ep->fid));
	x.ep = NULL;
	XT_ASSERT_OK(fi_close(&cntr->fid));
	xt_close(&x);
	free(buf);
}

START_TEST(cntr_wait_on_sends_queued_for_a_full_peer)
{
	struct xt_cfg cfg = xt_cfg_default();
	char *buf = xt_alloc(BULK_LEN);
	struct xt_child child;
	struct xt_comp c;
	struct xt_ep x;
	int64_t rc;
	uint64_t wall;

	xt_spawn(&child, bulk_sender, NULL);
	xt_open(&x, &cfg);
	xt_exchange(&x, child.sock);
	xt_signal(child.sock, CMD_SEND);
	usleep(300 * 1000);
	for (int i = 0; i < BULK_COUNT; i++) {
		xt_post_recv(&x, false, buf, BULK_LEN, FI_ADDR_UNSPEC, 0, 0, NULL);
		xt_wait_rx(&x, &c);
		XT_ASSERT_PATTERN(buf, BULK_LEN, 9, 0);
	}
	rc = (int64_t)xt_recv_u64(child.sock);
	wall = xt_recv_u64(child.sock);
	XT_ASSERT_RC(rc, 0);
	XT_ASSERT(wall < 300 + LATE_MS, "the sender's wait took %llu ms",
		  (unsigned long long)wall);
	xt_signal(child.sock, CMD_QUIT);
	xt_join(&child);
	xt_close(&x);
	free(buf);
}
END_TEST

static Suite *wait_suite(void)
{
	Suite *s = suite_create("wait");
	TCase *sread = tcase_create("sread");
	TCase *local = tcase_create("local");
	TCase *fd = tcase_create("fd");
	TCase *cntr = tcase_create("cntr");

	tcase_set_timeout(sread, 60);
	tcase_add_loop_test(sread, sread_sleeps_until_a_remote_send, 0, 2);
	tcase_add_loop_test(sread, sread_gets_each_of_a_stream, 0, 2);
	tcase_add_loop_test(sread, sread_times_out_with_eagain_while_sleeping, 0, 2);
	tcase_add_test(sread, sread_with_yield_still_works);
	tcase_add_test(sread, sread_on_wait_none_is_invalid);
	suite_add_tcase(s, sread);

	tcase_set_timeout(local, 30);
	tcase_add_loop_test(local, cq_signal_from_another_thread_wakes_sread, 0, 2);
	tcase_add_loop_test(local, inject_to_self_from_another_thread_wakes_sread, 0, 2);
	tcase_add_loop_test(local, send_completion_from_another_thread_wakes_sread, 0, 2);
	suite_add_tcase(s, local);

	tcase_set_timeout(fd, 30);
	tcase_add_loop_test(fd, getwait_gives_no_fd_without_wait_fd, 0, 3);
	tcase_add_test(fd, trywait_then_poll_wakes_on_a_remote_send);
	tcase_add_test(fd, trywait_loop_receives_a_stream);
	tcase_add_test(fd, trywait_refuses_other_objects);
	suite_add_tcase(s, fd);

	tcase_set_timeout(cntr, 30);
	tcase_add_loop_test(cntr, cntr_wait_sleeps_until_a_remote_send, 0, 2);
	tcase_add_test(cntr, cntr_trywait_then_poll_wakes_on_a_remote_send);
	tcase_add_test(cntr, cq_and_cntr_of_one_endpoint_sleep_in_two_threads);
	tcase_add_test(cntr, cntr_wait_on_sends_queued_for_a_full_peer);
	suite_add_tcase(s, cntr);
	return s;
}

int main(void)
{
	if (!xt_wanted(XT_EXTRA))	/* none of its cases is selected */
		return xt_run_suite(suite_create("wait"));
	return xt_run_suite(wait_suite());
}
