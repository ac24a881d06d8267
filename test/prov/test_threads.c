/*
 * FI_THREAD_SAFE: one endpoint used by four threads at once -- two post
 * tagged receives, two send, all four read the CQ(s) and handle whatever
 * completion they get -- exchanging N_EACH tagged messages each way with a
 * single-threaded peer process.  Every message arrives exactly once with
 * the right length, tag and data, and every send completes once.
 *
 * Messages from the peer carry tag (r << 32 | id): receiver thread r posts
 * receives for its half with the low 32 bits ignored.  Messages to the
 * peer carry tag id.  Payloads are xt_fill patterns seeded by direction
 * and id.  Loop 0: separate CQs, 1: one shared CQ, 2: tx op_flags
 * FI_DELIVERY_COMPLETE here and FI_MATCH_COMPLETE at the peer (acks flow
 * both ways while the threads run).
 */
#include "harness.h"

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm/layout.h"

#define N_EACH		10000		/* messages each way */
#define WINDOW		48		/* outstanding operations per thread */
#define MAXLEN		20000
#define SEED_TO_PEER	0x100000000ULL
#define SEED_FROM_PEER	0x200000000ULL
#define RUN_MS		20000
#define BATCH		8

/* Mostly small, every 8th 3000 bytes (bounce buffer), every 64th chunked. */
static size_t size_of(uint64_t id)
{
	if (id % 64 == 0)
		return MAXLEN;
	if (id % 8 == 0)
		return 3000;
	return 8 + id % 193;
}

enum { RX, TX };

struct slot {
	struct fi_context ctx;		/* first: the op_context */
	int kind, owner;
	_Atomic int busy;
	char *buf;
};

struct state {
	struct xt_ep *x;
	fi_addr_t peer;
	_Atomic uint64_t rx_done, tx_done;
	_Atomic uint8_t seen[N_EACH];
	_Atomic bool stop;
	pthread_mutex_t lock;
	char err[512];
	uint64_t deadline;
	struct slot slots[4][WINDOW];
};

struct worker {
	struct state *st;
	int index;		/* 0, 1: receivers; 2, 3: senders */
};

static void tfail(struct state *st, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&st->lock);
	if (!st->err[0]) {
		va_start(ap, fmt);
		vsnprintf(st->err, sizeof(st->err), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&st->lock);
	atomic_store(&st->stop, true);
}

static void handle(struct state *st, const struct fi_cq_tagged_entry *e)
{
	struct slot *sl = (struct slot *)e->op_context;
	uint64_t id;
	ssize_t bad;

	if (!sl) {
		tfail(st, "completion with a NULL context");
		return;
	}
	if (sl->kind == TX) {
		if (!(e->flags & FI_SEND))
			tfail(st, "send completion with flags 0x%llx", (unsigned long long)e->flags);
		atomic_fetch_add(&st->tx_done, 1);
		atomic_store(&sl->busy, 0);
		return;
	}
	id = e->tag & 0xffffffffULL;
	if (!(e->flags & FI_RECV) || id >= N_EACH || (int)(e->tag >> 32) != sl->owner) {
		tfail(st, "receive of thread %d: flags 0x%llx tag 0x%llx", sl->owner,
		      (unsigned long long)e->flags, (unsigned long long)e->tag);
		return;
	}
	if (e->len != size_of(id)) {
		tfail(st, "message %llu: len %zu, sent %zu", (unsigned long long)id, e->len,
		      size_of(id));
		return;
	}
	bad = xt_mismatch(sl->buf, e->len, SEED_FROM_PEER + id, 0);
	if (bad >= 0) {
		tfail(st, "message %llu: data differs at byte %zd", (unsigned long long)id, bad);
		return;
	}
	if (atomic_fetch_add(&st->seen[id], 1) != 0) {
		tfail(st, "message %llu arrived twice", (unsigned long long)id);
		return;
	}
	atomic_fetch_add(&st->rx_done, 1);
	atomic_store(&sl->busy, 0);
}

static void read_cq(struct state *st, struct fid_cq *cq)
{
	struct fi_cq_tagged_entry e[BATCH];
	struct fi_cq_err_entry err;
	ssize_t n = fi_cq_read(cq, e, BATCH);

	if (n == -FI_EAGAIN)
		return;
	if (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		n = fi_cq_readerr(cq, &err, 0);
		if (n == 1)
			tfail(st, "error completion: err %d (%s), context %p", err.err,
			      fi_strerror(abs(err.err)), err.op_context);
		else if (n != -FI_EAGAIN)	/* another thread took it */
			tfail(st, "fi_cq_readerr returned %zd", n);
		return;
	}
	if (n < 0) {
		tfail(st, "fi_cq_read returned %zd (%s)", n, fi_strerror((int)-n));
		return;
	}
	for (ssize_t i = 0; i < n; i++)
		handle(st, &e[i]);
}

static void progress(struct state *st)
{
	read_cq(st, st->x->rx->fid);
	if (st->x->tx != st->x->rx)
		read_cq(st, st->x->tx->fid);
}

static bool all_done(struct state *st)
{
	return atomic_load(&st->rx_done) == N_EACH && atomic_load(&st->tx_done) == N_EACH;
}

static struct slot *free_slot(struct state *st, int w)
{
	for (int i = 0; i < WINDOW; i++) {
		int idle = 0;

		if (atomic_compare_exchange_strong(&st->slots[w][i].busy, &idle, 1))
			return &st->slots[w][i];
	}
	return NULL;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct state *st = w->st;
	bool receiver = w->index < 2;
	uint64_t quota = N_EACH / 2, done = 0;	/* receives posted or ids sent */

	while (!atomic_load(&st->stop) && !all_done(st)) {
		struct slot *sl = done < quota ? free_slot(st, w->index) : NULL;
		bool worked = false;

		if (sl) {
			ssize_t rc;

			if (receiver) {
				rc = fi_trecv(st->x->ep, sl->buf, MAXLEN, NULL, FI_ADDR_UNSPEC,
					      (uint64_t)w->index << 32, 0xffffffffULL, &sl->ctx);
			} else {
				uint64_t id = (uint64_t)(w->index - 2) + 2 * done;

				xt_fill(sl->buf, size_of(id), SEED_TO_PEER + id, 0);
				rc = fi_tsend(st->x->ep, sl->buf, size_of(id), NULL, st->peer, id,
					      &sl->ctx);
			}
			if (rc == 0) {
				done++;
				worked = true;
			} else {
				atomic_store(&sl->busy, 0);
				if (rc != -FI_EAGAIN)
					tfail(st, "thread %d: %s returned %zd (%s)", w->index,
					      receiver ? "fi_trecv" : "fi_tsend", rc,
					      fi_strerror((int)-rc));
			}
		}
		progress(st);
		if (xt_now_ms() > st->deadline)
			tfail(st, "not done in %d ms: %llu of %d received, %llu of %d sends "
			      "completed", RUN_MS, (unsigned long long)atomic_load(&st->rx_done),
			      N_EACH, (unsigned long long)atomic_load(&st->tx_done), N_EACH);
		if (!worked)
			sched_yield();
	}
	return NULL;
}

/* ---- the single-threaded peer ---- */

struct peer_slot {
	struct fi_context ctx;
	bool busy;
	char *buf;
};

/* arg: tx op_flags for the peer's endpoint, as a uintptr_t. */
static void peer_main(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	static struct peer_slot rs[WINDOW], ss[WINDOW];
	static uint8_t seen[N_EACH];
	uint64_t posted = 0, sent = 0, got = 0, completed = 0;
	uint64_t end;
	struct xt_ep x;
	fi_addr_t dst;

	cfg.tx_op_flags = (uint64_t)(uintptr_t)arg;
	xt_open(&x, &cfg);
	dst = xt_exchange(&x, sock);
	for (int i = 0; i < WINDOW; i++) {
		rs[i].buf = xt_alloc(MAXLEN);
		ss[i].buf = xt_alloc(MAXLEN);
	}
	xt_wait(sock);
	end = xt_now_ms() + RUN_MS;
	while (got < N_EACH || completed < N_EACH) {
		struct fi_cq_tagged_entry e[BATCH];
		ssize_t n;

		XT_ASSERT(xt_now_ms() < end, "peer: %llu of %d received, %llu of %d sends completed",
			  (unsigned long long)got, N_EACH, (unsigned long long)completed, N_EACH);
		for (int i = 0; i < WINDOW && posted < N_EACH; i++) {
			if (rs[i].busy)
				continue;
			n = fi_trecv(x.ep, rs[i].buf, MAXLEN, NULL, FI_ADDR_UNSPEC, 0, ~0ULL,
				     &rs[i].ctx);
			if (n == -FI_EAGAIN)
				break;
			XT_ASSERT_RC(n, 0);
			rs[i].busy = true;
			posted++;
		}
		for (int i = 0; i < WINDOW && sent < N_EACH; i++) {
			uint64_t id = sent;

			if (ss[i].busy)
				continue;
			xt_fill(ss[i].buf, size_of(id), SEED_FROM_PEER + id, 0);
			n = fi_tsend(x.ep, ss[i].buf, size_of(id), NULL, dst, (id % 2) << 32 | id,
				     &ss[i].ctx);
			if (n == -FI_EAGAIN)
				break;
			XT_ASSERT_RC(n, 0);
			ss[i].busy = true;
			sent++;
		}
		for (int q = 0; q < 2; q++) {
			struct xt_cq *cq = q ? x.tx : x.rx;

			n = fi_cq_read(cq->fid, e, BATCH);
			if (n == -FI_EAVAIL) {
				struct fi_cq_err_entry err = { 0 };

				XT_ASSERT_RC(fi_cq_readerr(cq->fid, &err, 0), 1);
				XT_ASSERT(false, "peer: error completion %d (%s)", err.err,
					  fi_strerror(abs(err.err)));
			}
			if (n == -FI_EAGAIN)
				continue;
			XT_ASSERT(n > 0, "peer: fi_cq_read returned %zd", n);
			for (ssize_t k = 0; k < n; k++) {
				if (q) {
					struct peer_slot *sl = (struct peer_slot *)e[k].op_context;

					XT_ASSERT(sl >= ss && sl < ss + WINDOW && sl->busy,
						  "peer: send completion context %p", (void *)sl);
					sl->busy = false;
					completed++;
				} else {
					struct peer_slot *sl = (struct peer_slot *)e[k].op_context;
					uint64_t id = e[k].tag;

					XT_ASSERT(sl >= rs && sl < rs + WINDOW && sl->busy,
						  "peer: receive completion context %p", (void *)sl);
					XT_ASSERT(id < N_EACH, "peer: tag 0x%llx",
						  (unsigned long long)id);
					XT_ASSERT(e[k].len == size_of(id), "peer: message %llu: len "
						  "%zu, sent %zu", (unsigned long long)id, e[k].len,
						  size_of(id));
					XT_ASSERT(xt_mismatch(sl->buf, e[k].len, SEED_TO_PEER + id, 0)
						  < 0, "peer: message %llu: data differs",
						  (unsigned long long)id);
					XT_ASSERT(!seen[id], "peer: message %llu arrived twice",
						  (unsigned long long)id);
					seen[id] = 1;
					sl->busy = false;
					got++;
				}
			}
		}
	}
	xt_expect_none(x.rx, x.tx, 100);
	xt_signal(sock, 1);
	xt_wait(sock);
	xt_close(&x);
	for (int i = 0; i < WINDOW; i++) {
		free(rs[i].buf);
		free(ss[i].buf);
	}
}

START_TEST(thread_safe_endpoint_used_by_four_threads_delivers_each_message_once)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct state *st = calloc(1, sizeof(*st));
	struct worker w[4];
	pthread_t th[4];
	struct xt_child child;
	struct xt_ep x;

	XT_ASSERT(st != NULL, "calloc");
	cfg.threading = FI_THREAD_SAFE;
	cfg.shared_cq = _i == 1;
	/* 2: sends complete on delivery here and on match at the peer (acks both ways). */
	cfg.tx_op_flags = _i == 2 ? FI_DELIVERY_COMPLETE : 0;
	xt_spawn(&child, peer_main, (void *)(uintptr_t)(_i == 2 ? FI_MATCH_COMPLETE : 0));
	xt_open(&x, &cfg);
	XT_ASSERT(x.info->domain_attr->threading == FI_THREAD_SAFE, "threading %d",
		  x.info->domain_attr->threading);
	st->x = &x;
	st->peer = xt_exchange(&x, child.sock);
	pthread_mutex_init(&st->lock, NULL);
	for (int t = 0; t < 4; t++)
		for (int i = 0; i < WINDOW; i++)
			st->slots[t][i] = (struct slot){ .kind = t < 2 ? RX : TX, .owner = t,
							 .buf = xt_alloc(MAXLEN) };
	st->deadline = xt_now_ms() + RUN_MS;
	xt_signal(child.sock, 1);
	for (int t = 0; t < 4; t++) {
		w[t] = (struct worker){ .st = st, .index = t };
		XT_ASSERT(pthread_create(&th[t], NULL, worker_main, &w[t]) == 0, "pthread_create");
	}
	for (int t = 0; t < 4; t++)
		pthread_join(th[t], NULL);
	XT_ASSERT(!st->err[0], "%s", st->err);
	XT_ASSERT(all_done(st), "%llu received, %llu sends completed",
		  (unsigned long long)st->rx_done, (unsigned long long)st->tx_done);
	for (int id = 0; id < N_EACH; id++)
		XT_ASSERT(st->seen[id] == 1, "message %d seen %d times", id, st->seen[id]);
	XT_ASSERT(xt_wait_progress(child.sock, &x) == 1, "the peer's signal");
	xt_expect_none(x.rx, x.tx, 100);
	xt_signal(child.sock, 2);
	xt_join(&child);
	xt_close(&x);
	for (int t = 0; t < 4; t++)
		for (int i = 0; i < WINDOW; i++)
			free(st->slots[t][i].buf);
	pthread_mutex_destroy(&st->lock);
	free(st);
}
END_TEST

static Suite *threads_suite(void)
{
	Suite *s = suite_create("threads");
	TCase *tc = tcase_create("thread_safe");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, thread_safe_endpoint_used_by_four_threads_delivers_each_message_once,
			    0, 3);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	if (!xt_wanted(XT_EXTRA))	/* none of its cases is selected */
		return xt_run_suite(suite_create("threads"));
	return xt_run_suite(threads_suite());
}
