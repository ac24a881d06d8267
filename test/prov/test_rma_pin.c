/*
 * Initiator-driven RMA (FI_XSHM_RMA_FAST=1): it needs no progress from the
 * target, finds key, range and access errors itself without touching the
 * target's memory, never writes after the target's fi_close(mr) returned,
 * and the pins behind that (holder slots in the target's region) neither
 * block a close when their holder died nor stop RMA when all are taken.
 * More registrations than the published table holds go the target's way.
 */
#include "rma_rig.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm/layout.h"

/* A target that never progresses: only the initiator can have copied. */
static struct rig *idle_rig(uint64_t access)
{
	return rig_start_idle(access, false);
}

START_TEST(fast_ops_need_no_target_progress)
{
	struct rig *r = idle_rig(ALL_ACCESS);
	size_t len = rma_sizes[_i], off = MR_LEN - len;
	void *buf = initiator_buf(len), *back = calloc(1, len);
	int wctx, rctx;

	XT_POST(&r->x, fi_write(r->x.ep, buf, len, NULL, r->peer, r->addr + off,
				r->key, &wctx));
	expect_done(r, &wctx, FI_RMA | FI_WRITE);
	assert_written(r, off, len);
	XT_POST(&r->x, fi_read(r->x.ep, back, len, NULL, r->peer, r->addr + off,
			       r->key, &rctx));
	expect_done(r, &rctx, FI_RMA | FI_READ);
	XT_ASSERT(memcmp(back, buf, len) == 0, "read back");
	free(buf);
	free(back);
	rig_stop(r);
}
END_TEST

/* Each refused by the initiator: the idle target could answer nothing. */
START_TEST(fast_errors_leave_memory_untouched)
{
	struct rig *r = idle_rig(FI_REMOTE_READ);
	void *buf = initiator_buf(MR_LEN);
	int ctx[4];

	XT_POST(&r->x, fi_write(r->x.ep, buf, 100, NULL, r->peer, r->addr,
				r->key + 1, &ctx[0]));
	expect_error(r, &ctx[0], FI_EINVAL);
	XT_POST(&r->x, fi_read(r->x.ep, buf, 100, NULL, r->peer,
			       r->addr + MR_LEN - 50, r->key, &ctx[1]));
	expect_error(r, &ctx[1], FI_EACCES);
	XT_POST(&r->x, fi_read(r->x.ep, buf, 100, NULL, r->peer, r->addr - 1,
			       r->key, &ctx[2]));
	expect_error(r, &ctx[2], FI_EACCES);
	XT_POST(&r->x, fi_write(r->x.ep, buf, 100, NULL, r->peer, r->addr,
				r->key, &ctx[3]));
	expect_error(r, &ctx[3], FI_EACCES);
	assert_untouched(r);
	free(buf);
	rig_stop(r);
}
END_TEST

/*
 * The key of another registration (provider keys are counted up: the one
 * registered just before) with an address of this one: out of its range.
 */
START_TEST(key_of_another_region_is_refused)
{
	struct rig *r = calloc(1, sizeof(*r));
	void *buf = initiator_buf(100);
	int ctx;

	XT_ASSERT(r, "calloc");
	r->opts.extra_regs = 1;
	rig_start_with(r, ALL_ACCESS, FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, false);
	XT_POST(&r->x, fi_write(r->x.ep, buf, 100, NULL, r->peer, r->addr,
				r->key - 1, &ctx));
	expect_error(r, &ctx, FI_EACCES);
	assert_untouched(r);
	free(buf);
	rig_stop(r);
}
END_TEST

/* ---- the published entry, seen from the initiator ---- */

struct mapped {
	void *base;
	size_t size;
	struct xshm_mr_pub_entry *entry;	/* of r->key */
};

/* The target's region mapped, and r->key's published entry or NULL. */
static struct mapped map_region(struct rig *r)
{
	struct mapped m = { 0 };
	struct xshm_mr_pub *pub;

	m.base = map_target(r, &m.size);
	pub = (struct xshm_mr_pub *) ((char *) m.base +
		((struct xshm_region_hdr *) m.base)->mr_offset);
	for (unsigned i = 0; i < XSHM_MR_PUB_SLOTS; i++)
		if ((pub->slots[i].state & 1) && pub->slots[i].key == r->key)
			m.entry = &pub->slots[i];
	return m;
}

static struct mapped map_entry(struct rig *r)
{
	struct mapped m = map_region(r);

	XT_ASSERT(m.entry, "registration %llx not published",
		  (unsigned long long) r->key);
	return m;
}

/* Every holder slot of m's entry set to holder. */
static void fill_holders(struct mapped *m, uint64_t holder)
{
	for (unsigned i = 0; i < XSHM_MR_PUB_HOLDERS; i++)
		m->entry->holder[i] = holder;
}

static uint64_t dead_holder(void)
{
	pid_t pid = fork();

	XT_ASSERT(pid >= 0, "fork");
	if (!pid)
		_exit(0);
	XT_ASSERT(waitpid(pid, NULL, 0) == pid, "waitpid");
	return (uint64_t) pid << 32 | 12345;
}

/* This process, as mr_pub.h names holders: alive as long as the test. */
static uint64_t live_holder(void)
{
	char stat[1024], *p;
	unsigned long long start = 0;
	FILE *f = fopen("/proc/self/stat", "r");

	XT_ASSERT(f && fgets(stat, sizeof(stat), f), "/proc/self/stat");
	fclose(f);
	p = strrchr(stat, ')');
	XT_ASSERT(p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
			      "%*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			      &start) == 1, "start time");
	return (uint64_t) getpid() << 32 | (uint32_t) start;
}

START_TEST(dead_holders_do_not_block_close)
{
	struct rig *r = rig_start(ALL_ACCESS);
	struct mapped m = map_entry(r);
	void *buf = initiator_buf(100);
	int ctx;

	fill_holders(&m, dead_holder());
	xt_signal(r->c.sock, T_CLOSE_MR);
	XT_ASSERT(xt_wait(r->c.sock) == T_OK, "close");
	XT_POST(&r->x, fi_write(r->x.ep, buf, 100, NULL, r->peer, r->addr,
				r->key, &ctx));
	expect_error(r, &ctx, FI_EINVAL);
	assert_untouched(r);
	munmap(m.base, m.size);
	free(buf);
	rig_stop(r);
}
END_TEST

/* No free holder slot: the target copies, and the bytes land all the same. */
START_TEST(full_holders_fall_back)
{
	struct rig *r = rig_start(ALL_ACCESS);
	struct mapped m = map_entry(r);
	void *buf = initiator_buf(5000);
	int ctx;

	fill_holders(&m, live_holder());
	XT_POST(&r->x, fi_write(r->x.ep, buf, 5000, NULL, r->peer, r->addr,
				r->key, &ctx));
	expect_done(r, &ctx, FI_RMA | FI_WRITE);
	fill_holders(&m, 0);
	assert_written(r, 0, 5000);
	munmap(m.base, m.size);
	free(buf);
	rig_stop(r);
}
END_TEST

/* More registrations than slots: the tested one is not published. */
START_TEST(registrations_past_the_table_go_the_slow_way)
{
	struct rig *r = calloc(1, sizeof(*r));
	void *buf = initiator_buf(MR_LEN), *back = calloc(1, MR_LEN);
	struct mapped m;
	int ctx;

	r->opts.extra_regs = XSHM_MR_PUB_SLOTS + 4;
	rig_start_with(r, ALL_ACCESS, FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, true);
	m = map_region(r);
	XT_ASSERT(!m.entry, "published past the table's end");
	munmap(m.base, m.size);
	XT_POST(&r->x, fi_write(r->x.ep, buf, MR_LEN, NULL, r->peer, r->addr,
				r->key, &ctx));
	expect_done(r, &ctx, FI_RMA | FI_WRITE);
	assert_written(r, 0, MR_LEN);
	XT_POST(&r->x, fi_read(r->x.ep, back, 100, NULL, r->peer, r->addr,
			       r->key, &ctx));
	expect_done(r, &ctx, FI_RMA | FI_READ);
	XT_ASSERT(memcmp(back, buf, 100) == 0, "read back");
	XT_POST(&r->x, fi_write(r->x.ep, buf, 100, NULL, r->peer, r->addr,
				r->key + 1000, &ctx));
	expect_error(r, &ctx, FI_EINVAL);
	free(buf);
	free(back);
	rig_stop(r);
}
END_TEST

/* ---- fi_close(mr) while an initiator writes in a loop ---- */

struct hammer {
	struct rig *r;
	_Atomic bool stop;
	unsigned long done, failed;
	unsigned char buf[4096];
};

/* Completions of h's writes so far, counted by kind. */
static void reap(struct hammer *h)
{
	struct fi_cq_tagged_entry e[16];
	struct fi_cq_err_entry err;
	ssize_t n;

	while ((n = fi_cq_read(h->r->x.tx->fid, e, 16)) > 0)
		h->done += (unsigned long) n;
	if (n == -FI_EAVAIL && fi_cq_readerr(h->r->x.tx->fid, &err, 0) == 1)
		h->failed++;
}

static void *hammer_run(void *arg)
{
	struct hammer *h = arg;
	struct rig *r = h->r;

	while (!atomic_load(&h->stop)) {
		ssize_t ret = fi_write(r->x.ep, h->buf, sizeof(h->buf), NULL,
				       r->peer, r->addr, r->key, NULL);

		XT_ASSERT(ret == 0 || ret == -FI_EAGAIN, "write: %zd", ret);
		reap(h);
	}
	return NULL;
}

START_TEST(no_write_lands_after_close_returns)
{
	struct hammer h = { .r = rig_start(ALL_ACCESS) };
	pthread_t thread;

	memset(h.buf, 0xa5, sizeof(h.buf));
	XT_ASSERT(pthread_create(&thread, NULL, hammer_run, &h) == 0, "thread");
	usleep(50000);
	xt_signal(h.r->c.sock, T_CLOSE_MR);
	XT_ASSERT(xt_wait(h.r->c.sock) == T_OK, "close");
	xt_signal(h.r->c.sock, T_REFILL);
	XT_ASSERT(xt_recv_u64(h.r->c.sock) == 1, "written after close");
	atomic_store(&h.stop, true);
	XT_ASSERT(pthread_join(thread, NULL) == 0, "join");
	XT_ASSERT(h.done > 0 && h.failed > 0, "%lu done, %lu failed", h.done,
		  h.failed);
	rig_stop(h.r);
}
END_TEST

static Suite *rma_pin_suite(void)
{
	Suite *s = suite_create("rma_pin");
	TCase *fast = tcase_create("fast");

	tcase_set_timeout(fast, 60);
	tcase_add_loop_test(fast, fast_ops_need_no_target_progress, 0,
			    RMA_SIZES);
	tcase_add_test(fast, fast_errors_leave_memory_untouched);
	tcase_add_test(fast, key_of_another_region_is_refused);
	tcase_add_test(fast, dead_holders_do_not_block_close);
	tcase_add_test(fast, full_holders_fall_back);
	tcase_add_test(fast, registrations_past_the_table_go_the_slow_way);
	tcase_add_test(fast, no_write_lands_after_close_returns);
	/* xshm's own protocol (shm/mr_pub.h) */
	if (xt_wanted(XT_XSHM))
		suite_add_tcase(s, fast);
	return s;
}

int main(void)
{
	rig_force_mode(RIG_FAST);
	return xt_run_suite(rma_pin_suite());
}
