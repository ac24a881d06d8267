/*
 * Atomics' checks at the target (rma_rig.h): a bad key, a range outside
 * the registration and access not granted, each an error completion with
 * the target's memory untouched; a target without FI_ATOMIC; processes
 * updating one location at once losing no update, through one endpoint or
 * two of one domain progressed by two threads; an atomic that fetches
 * nothing posted (FI_XSHM_RMA_FAST=auto): complete before the target
 * applies it, checked by its initiator, and one that fetches waiting for
 * the target; a target killed with atomics outstanding, errors within the
 * timeout.
 */
#include "atomic_ref.h"
#include "rma_rig.h"
#include "shm/layout.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define ATOMIC_CAPS	(FI_MSG | FI_RMA | FI_ATOMIC | FI_RMA_EVENT)

static struct rig *atomic_rig_with(uint64_t access, uint64_t target_caps,
				   bool progress)
{
	struct rig *r = calloc(1, sizeof(*r));

	XT_ASSERT(r, "calloc");
	r->caps = ATOMIC_CAPS;
	r->opts.caps = target_caps;
	rig_start_with(r, access, FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, progress);
	return r;
}

static ssize_t fetch_add(struct rig *r, uint64_t *v, uint64_t *res,
			 uint64_t addr, uint64_t key, void *ctx)
{
	return fi_fetch_atomic(r->x.ep, v, 1, NULL, res, NULL, r->peer, addr,
			       key, FI_UINT64, FI_SUM, ctx);
}

static ssize_t cswap(struct rig *r, uint64_t *v, uint64_t *cmp, uint64_t *res,
		     uint64_t addr, uint64_t key, void *ctx)
{
	return fi_compare_atomic(r->x.ep, v, 1, NULL, cmp, NULL, res, NULL,
				 r->peer, addr, key, FI_UINT64, FI_CSWAP, ctx);
}

/*
 * An atomic write of count uint64s at the region's start that asks for
 * its ack: fi_atomicmsg with FI_DELIVERY_COMPLETE.
 */
static ssize_t delivered_write(struct rig *r, uint64_t *v, size_t count,
			       enum fi_op op, void *ctx)
{
	struct fi_ioc ioc = { v, count };
	struct fi_rma_ioc rma_ioc = { r->addr, count, r->key };
	struct fi_msg_atomic msg = {
		.msg_iov = &ioc, .iov_count = 1, .addr = r->peer,
		.rma_iov = &rma_ioc, .rma_iov_count = 1,
		.datatype = FI_UINT64, .op = op, .context = ctx,
	};

	return fi_atomicmsg(r->x.ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE);
}

/* Each kind of call, refused with err; the target untouched. */
static void refused_all(struct rig *r, uint64_t addr, uint64_t key, int err)
{
	uint64_t v[2] = { 1, 1 }, res[2], cmp[2] = { 0 };
	int ctx;

	XT_POST(&r->x, fi_atomic(r->x.ep, v, 2, NULL, r->peer, addr, key,
				 FI_UINT64, FI_ATOMIC_WRITE, &ctx));
	expect_error(r, &ctx, err);
	XT_POST(&r->x, fetch_add(r, v, res, addr, key, &ctx));
	expect_error(r, &ctx, err);
	XT_POST(&r->x, cswap(r, v, cmp, res, addr, key, &ctx));
	expect_error(r, &ctx, err);
	assert_untouched(r);
}

START_TEST(bad_key_fails_untouched)
{
	struct rig *r = atomic_rig_with(ALL_ACCESS, ATOMIC_CAPS, true);

	refused_all(r, r->addr, r->key + 1000, FI_EINVAL);
	XT_ASSERT(fi_cntr_readerr(r->wc) == 1, "write counter error");
	XT_ASSERT(fi_cntr_readerr(r->rc) == 2, "read counter errors");
	rig_stop(r);
}
END_TEST

/* The last element one byte past the end; one before the start. */
START_TEST(range_outside_fails_untouched)
{
	struct rig *r = atomic_rig_with(ALL_ACCESS, ATOMIC_CAPS, true);

	refused_all(r, r->addr + MR_LEN - 7, r->key, FI_EACCES);
	refused_all(r, r->addr - 1, r->key, FI_EACCES);
	rig_stop(r);
}
END_TEST

/*
 * A read-only registration takes fetching reads only; a write-only one
 * atomic writes only: fetches and compares read and write.
 */
START_TEST(access_not_granted_fails_untouched)
{
	struct rig *r = atomic_rig_with(FI_REMOTE_READ, ATOMIC_CAPS, true);
	uint64_t v = 1, res = 0;
	int ctx;

	refused_all(r, r->addr, r->key, FI_EACCES);
	XT_POST(&r->x, fi_fetch_atomic(r->x.ep, NULL, 1, NULL, &res, NULL,
				       r->peer, r->addr, r->key, FI_UINT64,
				       FI_ATOMIC_READ, &ctx));
	expect_done(r, &ctx, FI_READ);
	assert_read(&res, 0, sizeof(res));
	rig_stop(r);
	r = atomic_rig_with(FI_REMOTE_WRITE, ATOMIC_CAPS, true);
	XT_POST(&r->x, fetch_add(r, &v, &res, r->addr, r->key, &ctx));
	expect_error(r, &ctx, FI_EACCES);
	XT_POST(&r->x, fi_fetch_atomic(r->x.ep, NULL, 1, NULL, &res, NULL,
				       r->peer, r->addr, r->key, FI_UINT64,
				       FI_ATOMIC_READ, &ctx));
	expect_error(r, &ctx, FI_EACCES);
	assert_untouched(r);
	rig_stop(r);
}
END_TEST

/*
 * An atomic write that asks for its ack (FI_DELIVERY_COMPLETE) needs only
 * FI_REMOTE_WRITE and is one: it neither fetches nor reads, however small
 * its command.
 */
START_TEST(acked_write_needs_only_remote_write)
{
	struct rig *r = atomic_rig_with(FI_REMOTE_WRITE, ATOMIC_CAPS, true);
	uint64_t *v = initiator_buf(2 * sizeof(*v));
	int ctx;

	XT_POST(&r->x, delivered_write(r, v, 2, FI_ATOMIC_WRITE, &ctx));
	expect_done(r, &ctx, FI_WRITE);
	assert_written(r, 0, 2 * sizeof(*v));
	free(v);
	rig_stop(r);
}
END_TEST

/* An endpoint that did not ask for FI_ATOMIC is no atomic target. */
START_TEST(target_without_atomic_refuses)
{
	struct rig *r = atomic_rig_with(ALL_ACCESS, FI_MSG | FI_RMA, true);

	refused_all(r, r->addr, r->key, FI_EOPNOTSUPP);
	rig_stop(r);
}
END_TEST

/* ---- processes updating one location at once ---- */

#define ADDERS		4	/* the last adds without fetching */
#define ADDS		400

struct counter_target {
	uint64_t key, addr;
};

/* An adder: ADDS additions of 1 at the parent's counter, fetched ones sent. */
static void adder_child(int sock, void *arg)
{
	struct rig r = { 0 };
	bool fetch = (uintptr_t) arg;
	uint64_t one = 1, *res = calloc(ADDS, sizeof(*res));

	r.cfg = xt_cfg_default();
	r.cfg.caps = ATOMIC_CAPS;
	r.cfg.mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	xt_open(&r.x, &r.cfg);
	r.peer = xt_exchange(&r.x, sock);
	r.key = xt_recv_u64(sock);
	r.addr = xt_recv_u64(sock);
	for (int i = 0; i < ADDS; i++) {
		struct xt_comp c;

		if (fetch)
			XT_POST(&r.x, fetch_add(&r, &one, &res[i], r.addr, r.key,
						NULL));
		else
			XT_POST(&r.x, fi_atomic(r.x.ep, &one, 1, NULL, r.peer,
						r.addr, r.key, FI_UINT64, FI_SUM,
						NULL));
		xt_wait_tx(&r.x, &c);
	}
	xt_signal(sock, T_OK);
	xt_send_bytes(sock, res, ADDS * sizeof(*res));
	xt_close(&r.x);
	free(res);
}

START_TEST(concurrent_adds_lose_nothing)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_child c[ADDERS];
	struct xt_ep x;
	struct fid_mr *mr;
	uint64_t *counter = calloc(1, 64), *seen = calloc(ADDERS * ADDS, 8);
	bool *taken = calloc(ADDERS * ADDS, 1);
	size_t nseen = 0;

	cfg.caps = ATOMIC_CAPS;
	cfg.mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	xt_open(&x, &cfg);
	XT_ASSERT_OK(fi_mr_reg(x.domain, counter, 64, ALL_ACCESS, 0, 0, 0, &mr,
			       NULL));
	for (int i = 0; i < ADDERS; i++) {
		xt_spawn(&c[i], adder_child,
			 (void *) (uintptr_t) (i < ADDERS - 1));
		xt_exchange(&x, c[i].sock);
	}
	for (int i = 0; i < ADDERS; i++) {
		xt_send_u64(c[i].sock, fi_mr_key(mr));
		xt_send_u64(c[i].sock, (uintptr_t) counter);
	}
	for (int i = 0; i < ADDERS; i++)
		XT_ASSERT(xt_wait_progress(c[i].sock, &x) == T_OK, "adder %d", i);
	for (int i = 0; i < ADDERS - 1; i++) {
		xt_recv_bytes(c[i].sock, seen + nseen, ADDS * 8);
		nseen += ADDS;
	}
	for (int i = 0; i < ADDERS; i++)
		xt_join(&c[i]);
	XT_ASSERT(*counter == ADDERS * ADDS, "counter %llu, expected %d",
		  (unsigned long long) *counter, ADDERS * ADDS);
	for (size_t i = 0; i < nseen; i++) {
		XT_ASSERT(seen[i] < ADDERS * ADDS && !taken[seen[i]],
			  "fetched %llu twice or out of range",
			  (unsigned long long) seen[i]);
		taken[seen[i]] = true;
	}
	XT_ASSERT_OK(fi_close(&mr->fid));
	xt_close(&x);
	free(counter);
	free(seen);
	free(taken);
}
END_TEST

/*
 * A second endpoint in x's domain, its own AV and one CQ for both
 * directions; closed by close_second, which leaves the domain to x.
 */
static void open_second(struct xt_ep *y, const struct xt_ep *x)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };

	memset(y, 0, sizeof(*y));
	y->cfg = x->cfg;
	XT_ASSERT_OK(fi_av_open(x->domain, &av_attr, &y->av, NULL));
	XT_ASSERT_OK(fi_cq_open(x->domain, &cq_attr, &y->cqs[0].fid, NULL));
	y->tx = y->rx = &y->cqs[0];
	XT_ASSERT_OK(fi_endpoint(x->domain, x->info, &y->ep, NULL));
	XT_ASSERT_OK(fi_ep_bind(y->ep, &y->av->fid, 0));
	XT_ASSERT_OK(fi_ep_bind(y->ep, &y->cqs[0].fid->fid,
				FI_TRANSMIT | FI_RECV));
	XT_ASSERT_OK(fi_enable(y->ep));
	y->namelen = sizeof(y->name);
	XT_ASSERT_OK(fi_getname(&y->ep->fid, y->name, &y->namelen));
}

static void close_second(struct xt_ep *y)
{
	XT_ASSERT_OK(fi_close(&y->ep->fid));
	XT_ASSERT_OK(fi_close(&y->av->fid));
	XT_ASSERT_OK(fi_close(&y->cqs[0].fid->fid));
}

struct server {
	struct fid_cq *cq;
	atomic_bool *stop;
};

/* Progresses one endpoint of the target's domain until told to stop. */
static void *server_main(void *arg)
{
	struct server *s = arg;
	struct fi_cq_tagged_entry e;

	while (!atomic_load(s->stop))
		(void) fi_cq_read(s->cq, &e, 0);
	return NULL;
}

/*
 * Two endpoints of one domain, each progressed by a thread of its own,
 * serve adders to one location at once: the domain's lock keeps every
 * addition whole.
 */
START_TEST(threads_serving_one_domain_lose_nothing)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_ep x, y, *eps[2] = { &x, &y };
	struct xt_child c[2];
	struct server srv[2];
	pthread_t th[2];
	atomic_bool stop = false;
	struct fid_mr *mr;
	uint64_t *counter = calloc(1, 64), *seen = calloc(2 * ADDS, 8);
	bool *taken = calloc(2 * ADDS, 1);

	cfg.caps = ATOMIC_CAPS;
	cfg.mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	cfg.shared_cq = true;
	xt_open(&x, &cfg);
	open_second(&y, &x);
	XT_ASSERT_OK(fi_mr_reg(x.domain, counter, 64, ALL_ACCESS, 0, 0, 0, &mr,
			       NULL));
	for (int i = 0; i < 2; i++) {
		xt_spawn(&c[i], adder_child, (void *) (uintptr_t) 1);
		xt_exchange(eps[i], c[i].sock);
		xt_send_u64(c[i].sock, fi_mr_key(mr));
		xt_send_u64(c[i].sock, (uintptr_t) counter);
	}
	for (int i = 0; i < 2; i++) {
		srv[i] = (struct server) { eps[i]->rx->fid, &stop };
		XT_ASSERT(pthread_create(&th[i], NULL, server_main, &srv[i]) == 0,
			  "pthread_create");
	}
	for (int i = 0; i < 2; i++) {
		XT_ASSERT(xt_wait(c[i].sock) == T_OK, "adder %d", i);
		xt_recv_bytes(c[i].sock, seen + i * ADDS, ADDS * 8);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		xt_join(&c[i]);
	}
	XT_ASSERT(*counter == 2 * ADDS, "counter %llu, expected %d",
		  (unsigned long long) *counter, 2 * ADDS);
	for (size_t i = 0; i < 2 * ADDS; i++) {
		XT_ASSERT(seen[i] < 2 * ADDS && !taken[seen[i]],
			  "fetched %llu twice or out of range",
			  (unsigned long long) seen[i]);
		taken[seen[i]] = true;
	}
	XT_ASSERT_OK(fi_close(&mr->fid));
	close_second(&y);
	xt_close(&x);
	free(counter);
	free(seen);
	free(taken);
}
END_TEST

/* ---- posted: atomics that fetch nothing ---- */

/* The target applies what it holds only when told (settle_target). */
START_TEST(write_atomic_completes_before_target_applies_it)
{
	struct rig *r = atomic_rig_with(ALL_ACCESS, ATOMIC_CAPS, false);
	uint64_t *v = initiator_buf(2 * sizeof(*v));
	int ctx;

	XT_POST(&r->x, fi_atomic(r->x.ep, v, 2, NULL, r->peer, r->addr, r->key,
				 FI_UINT64, FI_ATOMIC_WRITE, &ctx));
	expect_done(r, &ctx, FI_WRITE);
	assert_untouched(r);
	settle_target(r);
	assert_written(r, 0, 2 * sizeof(*v));
	free(v);
	rig_stop(r);
}
END_TEST

/* Refused by the initiator, which the idle target could not have done. */
START_TEST(posted_atomic_checked_by_initiator)
{
	struct rig *r = atomic_rig_with(ALL_ACCESS, ATOMIC_CAPS, false);
	uint64_t v = 1;
	int ctx;

	XT_POST(&r->x, fi_atomic(r->x.ep, &v, 1, NULL, r->peer, r->addr,
				 r->key + 1000, FI_UINT64, FI_SUM, &ctx));
	expect_error(r, &ctx, FI_EINVAL);
	XT_POST(&r->x, fi_atomic(r->x.ep, &v, 1, NULL, r->peer,
				 r->addr + MR_LEN - 7, r->key, FI_UINT64,
				 FI_SUM, &ctx));
	expect_error(r, &ctx, FI_EACCES);
	settle_target(r);
	assert_untouched(r);
	rig_stop(r);
}
END_TEST

/* The uint64 at the start of the target's registration. */
static uint64_t target_word(struct rig *r)
{
	uint64_t word;

	dump_target(r);
	memcpy(&word, r->tbuf + GUARD, sizeof(word));
	return word;
}

/* Reads the initiator's completions until none comes for 50 ms. */
static int completions_now(struct rig *r, void *ctx)
{
	struct xt_comp c;
	int n = 0;

	while (!xt_poll(r->x.tx, r->x.rx, 50, &c)) {
		XT_ASSERT(!c.is_err && c.e.op_context == ctx, "completion");
		n++;
	}
	return n;
}

/*
 * Twice as many posted adds as an idle target's ring holds: the ring's
 * worth complete at once, the rest wait at the initiator, and every one
 * lands once the target applies what it holds.
 */
START_TEST(posted_atomics_past_a_full_ring_wait_and_land)
{
	struct rig *r = atomic_rig_with(ALL_ACCESS, ATOMIC_CAPS, false);
	uint64_t before = target_word(r), one = 1;
	int posts = 2 * XSHM_RING_CELLS, done, ctx;

	for (int i = 0; i < posts; i++)
		XT_POST(&r->x, fi_atomic(r->x.ep, &one, 1, NULL, r->peer,
					 r->addr, r->key, FI_UINT64, FI_SUM,
					 &ctx));
	done = completions_now(r, &ctx);
	XT_ASSERT(done > 0 && done <= XSHM_RING_CELLS,
		  "%d of %d complete before the target applies any", done,
		  posts);
	for (int rounds = 0; done < posts && rounds < 100; rounds++) {
		settle_target(r);
		done += completions_now(r, &ctx);
	}
	XT_ASSERT(done == posts, "%d of %d completed", done, posts);
	settle_target(r);
	XT_ASSERT(target_word(r) == before + (uint64_t) posts,
		  "target %llu, expected %llu",
		  (unsigned long long) target_word(r),
		  (unsigned long long) (before + (uint64_t) posts));
	rig_stop(r);
}
END_TEST

/*
 * Twice as many fetches as an idle target's ring holds: the first ring's
 * worth go straight into the ring, the rest wait in the initiator's queue
 * behind them, and each gets the old value of its turn: before + i.
 */
START_TEST(fetches_past_a_full_ring_get_their_turns)
{
	struct rig *r = atomic_rig_with(ALL_ACCESS, ATOMIC_CAPS, false);
	uint64_t before = target_word(r), one = 1;
	enum { posts = 2 * XSHM_RING_CELLS };
	uint64_t *res = calloc(posts, sizeof(*res));
	struct xt_comp c;
	int done = 0;

	XT_ASSERT(res, "calloc");
	for (int i = 0; i < posts; i++)
		XT_POST(&r->x, fetch_add(r, &one, &res[i], r->addr, r->key,
					 &res[i]));
	xt_expect_none(r->x.tx, r->x.rx, 100);
	for (int rounds = 0; done < posts && rounds < 100; rounds++) {
		settle_target(r);
		while (!xt_poll(r->x.tx, r->x.rx, 50, &c)) {
			XT_ASSERT(!c.is_err, "fetch %d failed", done);
			done++;
		}
	}
	XT_ASSERT(done == posts, "%d of %d completed", done, posts);
	for (int i = 0; i < posts; i++)
		XT_ASSERT(res[i] == before + (uint64_t) i,
			  "fetch %d got %llu, expected %llu", i,
			  (unsigned long long) res[i],
			  (unsigned long long) (before + (uint64_t) i));
	settle_target(r);
	XT_ASSERT(target_word(r) == before + (uint64_t) posts, "target %llu",
		  (unsigned long long) target_word(r));
	free(res);
	rig_stop(r);
}
END_TEST

/* A fetch, and a write asking for delivery, wait for the target. */
START_TEST(fetch_waits_for_target)
{
	struct rig *r = atomic_rig_with(ALL_ACCESS, ATOMIC_CAPS, false);
	uint64_t v = 1, res = 0;
	int ctx;

	if (_i)
		XT_POST(&r->x, delivered_write(r, &v, 1, FI_SUM, &ctx));
	else
		XT_POST(&r->x, fetch_add(r, &v, &res, r->addr, r->key, &ctx));
	xt_expect_none(r->x.tx, r->x.rx, 200);
	settle_target(r);
	expect_done(r, &ctx, _i ? FI_WRITE : FI_READ);
	rig_stop(r);
}
END_TEST

/* ---- a target that dies ---- */

START_TEST(dead_target_fails_within_timeout)
{
	struct rig *r = atomic_rig_with(ALL_ACCESS, ATOMIC_CAPS, false);
	uint64_t v[4] = { 1, 2, 3, 4 }, res[4], cmp[4] = { 0 };
	int ctx[3], ctx_write;
	struct fi_ioc ioc = { v, 4 };
	struct fi_rma_ioc rma_ioc = { r->addr, 4, r->key };
	struct fi_msg_atomic msg = {
		.msg_iov = &ioc, .iov_count = 1, .addr = r->peer,
		.rma_iov = &rma_ioc, .rma_iov_count = 1,
		.datatype = FI_UINT64, .op = FI_SUM, .context = &ctx_write,
	};
	struct xt_comp c;

	/* delivery complete: not posted, so it waits for the target too */
	XT_POST(&r->x, fi_atomicmsg(r->x.ep, &msg, FI_COMPLETION |
				    FI_DELIVERY_COMPLETE));
	XT_POST(&r->x, fetch_add(r, v, res, r->addr, r->key, &ctx[0]));
	XT_POST(&r->x, cswap(r, v, cmp, res, r->addr, r->key, &ctx[1]));
	XT_POST(&r->x, fi_fetch_atomic(r->x.ep, NULL, 4, NULL, res, NULL,
				       r->peer, r->addr, r->key, FI_UINT64,
				       FI_ATOMIC_READ, &ctx[2]));
	kill(r->c.pid, SIGKILL);
	xt_join_killed(&r->c);
	for (int i = 0; i < 4; i++) {
		xt_expect_err_ms(r->x.tx, r->x.rx, DEAD_MS, &c);
		XT_ASSERT(c.err.err, "an error");
		XT_ASSERT(c.err.flags & FI_ATOMIC, "flags %#llx",
			  (unsigned long long) c.err.flags);
	}
	close_with_cntrs(&r->x, r->wc, r->rc);
	free(r);
}
END_TEST

static Suite *atomic_checks_suite(void)
{
	Suite *s = suite_create("atomic_checks");
	TCase *checks = tcase_create("checks");

	tcase_set_timeout(checks, 90);
	tcase_add_test(checks, bad_key_fails_untouched);
	tcase_add_test(checks, range_outside_fails_untouched);
	tcase_add_test(checks, access_not_granted_fails_untouched);
	tcase_add_test(checks, acked_write_needs_only_remote_write);
	tcase_add_test(checks, target_without_atomic_refuses);
	tcase_add_test(checks, concurrent_adds_lose_nothing);
	tcase_add_test(checks, threads_serving_one_domain_lose_nothing);
	tcase_add_test(checks, write_atomic_completes_before_target_applies_it);
	tcase_add_test(checks, posted_atomic_checked_by_initiator);
	tcase_add_test(checks, posted_atomics_past_a_full_ring_wait_and_land);
	tcase_add_test(checks, fetches_past_a_full_ring_get_their_turns);
	tcase_add_loop_test(checks, fetch_waits_for_target, 0, 2);
	tcase_add_test(checks, dead_target_fails_within_timeout);
	/* atomics are optional (XT_EXTRA) */
	if (xt_wanted(XT_EXTRA))
		suite_add_tcase(s, checks);
	return s;
}

int main(void)
{
	return xt_run_suite(atomic_checks_suite());
}
