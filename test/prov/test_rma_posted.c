/*
 * Posted writes (FI_XSHM_RMA_FAST=auto, rma_rig.h): a write that fits one
 * cell, or up to rma_posted_max in the target's bounce buffers, checked by
 * its initiator against the published registrations, completes once in
 * the target's ring, before the target applies it; a check that fails is
 * an error completion and pushes nothing; completion levels past transmit
 * still wait for the target; a registration closed before the target
 * applies the write drops it; a full ring queues it; a target that does
 * not drain its pool gets the rest copied by the initiator; counters
 * count at both ends.
 */
#include "rma_rig.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "shm/layout.h"

#define SMALL	100

/* A target that progresses only when told, counted (rig_start_idle). */
static struct rig *idle_rig(uint64_t access)
{
	return rig_start_idle(access, true);
}

/* The calls that post: fi_write, fi_writev, fi_writemsg, fi_inject_write. */
static void post_write(struct rig *r, int call, void *buf, size_t len,
		       size_t off, void *ctx)
{
	struct iovec iov[2] = { { buf, len / 2 },
				{ (char *) buf + len / 2, len - len / 2 } };
	struct fi_rma_iov rma = { r->addr + off, len, r->key };
	struct fi_msg_rma msg = {
		.msg_iov = iov, .iov_count = 2, .addr = r->peer,
		.rma_iov = &rma, .rma_iov_count = 1, .context = ctx,
	};

	if (call == 0)
		XT_POST(&r->x, fi_write(r->x.ep, buf, len, NULL, r->peer,
					r->addr + off, r->key, ctx));
	else if (call == 1)
		XT_POST(&r->x, fi_writev(r->x.ep, iov, NULL, 2, r->peer,
					 r->addr + off, r->key, ctx));
	else if (call == 2)
		XT_POST(&r->x, fi_writemsg(r->x.ep, &msg, FI_COMPLETION));
	else
		XT_POST(&r->x, fi_inject_write(r->x.ep, buf, len, r->peer,
					       r->addr + off, r->key));
}

/*
 * A write of len bytes by call completes before the idle target applies
 * it; its bytes, in the cell or a bounce buffer, outlive the buffer's.
 */
static void posted_case(int call, size_t len)
{
	struct rig *r = idle_rig(ALL_ACCESS);
	size_t off = MR_LEN - len;
	unsigned char *buf = initiator_buf(len);
	int ctx;

	post_write(r, call, buf, len, off, &ctx);
	if (call == 3)
		wait_cntr(r->wc, 1);
	else
		expect_done(r, &ctx, FI_RMA | FI_WRITE);
	memset(buf, 0xee, len);
	assert_untouched(r);
	settle_target(r);
	assert_written(r, off, len);
	free(buf);
	rig_stop(r);
}

START_TEST(posted_write_completes_before_target_applies_it)
{
	posted_case(_i, XSHM_RMA_INLINE_MAX);
}
END_TEST

/* Within the cell's first line (XSHM_RMA_SHORT_MAX): each call, 1 and 16 B. */
START_TEST(short_write_completes_before_target_applies_it)
{
	posted_case(_i % 4, _i < 4 ? 1 : XSHM_RMA_SHORT_MAX);
}
END_TEST

/* Past one cell, in a bounce buffer: calls 0 to 2 at each size. */
static const size_t buffered_len[] = {
	XSHM_RMA_INLINE_MAX + 1, 4096 + 3, RIG_POSTED_MAX,
};

START_TEST(buffered_write_completes_before_target_applies_it)
{
	posted_case(_i % 3, buffered_len[_i / 3]);
}
END_TEST

/* Larger, the initiator copies it: written before the target runs. */
START_TEST(larger_write_copied_at_once)
{
	struct rig *r = rig_start_idle(ALL_ACCESS, false);
	size_t len = RIG_POSTED_MAX + 1, off = MR_LEN - len;
	unsigned char *buf = initiator_buf(len);
	int ctx;

	post_write(r, 0, buf, len, off, &ctx);
	expect_done(r, &ctx, FI_RMA | FI_WRITE);
	assert_written(r, off, len);
	free(buf);
	rig_stop(r);
}
END_TEST

/* Whether the target holds the initiator's bytes at [off, off + len). */
static bool holds_written(struct rig *r, size_t off, size_t len)
{
	return xt_mismatch(r->tbuf + GUARD + off, len, ISEED, off) < 0;
}

static bool holds_untouched(struct rig *r, size_t off, size_t len)
{
	return xt_mismatch(r->tbuf + GUARD + off, len, TSEED, GUARD + off) < 0;
}

/* Writes of BUFFERED bytes over the whole region: past half its pool. */
#define BUFFERED	2048
#define BUFFEREDS	(MR_LEN / BUFFERED)

/*
 * A target that does not progress holds the buffers of the writes posted
 * to it; once half its pool is taken the initiator copies the rest, so
 * that every write completes without the target.
 */
START_TEST(undrained_pool_leaves_writes_to_initiator)
{
	struct rig *r = rig_start_idle(ALL_ACCESS, false);
	unsigned char *buf = initiator_buf(MR_LEN);

	for (size_t i = 0; i < BUFFEREDS; i++)
		post_write(r, 0, buf + i * BUFFERED, BUFFERED, i * BUFFERED,
			   NULL);
	wait_cntr(r->wc, BUFFEREDS);
	dump_target(r);
	XT_ASSERT(holds_untouched(r, 0, BUFFERED), "first write applied");
	XT_ASSERT(holds_written(r, MR_LEN - BUFFERED, BUFFERED),
		  "last write not copied by its initiator");
	settle_target(r);
	assert_written(r, 0, MR_LEN);
	free(buf);
	rig_stop(r);
}
END_TEST

/* The tail of the target's ring: what was ever pushed into it. */
static uint64_t ring_tail(struct rig *r)
{
	size_t size;
	void *base = map_target(r, &size);
	const struct xshm_region_hdr *hdr = base;
	struct xshm_ring *ring = (struct xshm_ring *) ((char *) base +
						       hdr->ring_offset);
	uint64_t tail = atomic_load(&ring->tail);

	munmap(base, size);
	return tail;
}

/* A write of SMALL bytes at addr with key, refused with err at the call. */
static void expect_refused(struct rig *r, uint64_t addr, uint64_t key, int err)
{
	void *buf = initiator_buf(SMALL);
	int ctx;

	XT_POST(&r->x, fi_write(r->x.ep, buf, SMALL, NULL, r->peer, addr, key,
				&ctx));
	expect_error(r, &ctx, err);
	free(buf);
}

/*
 * Refused by the initiator (the idle target could have answered nothing):
 * an unknown key, a range outside, then, read-only, access.
 */
START_TEST(posted_write_errors_push_nothing)
{
	struct rig *r = idle_rig(_i ? FI_REMOTE_READ : ALL_ACCESS);
	uint64_t tail = ring_tail(r);

	if (_i) {
		expect_refused(r, r->addr, r->key, FI_EACCES);
	} else {
		expect_refused(r, r->addr, r->key + 1000, FI_EINVAL);
		expect_refused(r, r->addr + MR_LEN - SMALL + 1, r->key,
			       FI_EACCES);
		expect_refused(r, r->addr - 1, r->key, FI_EACCES);
	}
	XT_ASSERT(ring_tail(r) == tail, "pushed into the ring");
	XT_ASSERT(fi_cntr_readerr(r->wc) == (_i ? 1 : 3), "write errors");
	settle_target(r);
	assert_untouched(r);
	rig_stop(r);
}
END_TEST

/*
 * FI_DELIVERY_COMPLETE, FI_COMMIT_COMPLETE, or the endpoint's op_flags
 * asking for it: the write waits for the target.
 */
START_TEST(delivery_complete_waits_for_target)
{
	struct rig *r = idle_rig(ALL_ACCESS);
	void *buf = initiator_buf(SMALL);
	struct iovec iov = { buf, SMALL };
	struct fi_rma_iov rma = { r->addr, SMALL, r->key };
	struct fi_msg_rma msg = {
		.msg_iov = &iov, .iov_count = 1, .addr = r->peer,
		.rma_iov = &rma, .rma_iov_count = 1,
	};
	uint64_t level = _i == 1 ? FI_COMMIT_COMPLETE : FI_DELIVERY_COMPLETE;
	uint64_t ops = FI_TRANSMIT | FI_DELIVERY_COMPLETE;
	int ctx;

	msg.context = &ctx;
	if (_i == 2) {
		XT_ASSERT_OK(fi_control(&r->x.ep->fid, FI_SETOPSFLAG, &ops));
		XT_POST(&r->x, fi_write(r->x.ep, buf, SMALL, NULL, r->peer,
					r->addr, r->key, &ctx));
	} else {
		XT_POST(&r->x, fi_writemsg(r->x.ep, &msg,
					   FI_COMPLETION | level));
	}
	xt_expect_none(r->x.tx, r->x.rx, 200);
	settle_target(r);
	expect_done(r, &ctx, FI_RMA | FI_WRITE);
	assert_written(r, 0, SMALL);
	free(buf);
	rig_stop(r);
}
END_TEST

/*
 * Closed between the initiator's check and the target's: the write, in a
 * cell or its first line, has succeeded at the initiator and is dropped
 * at the target (fi_xshm(7)).
 */
START_TEST(closed_before_applied_is_dropped)
{
	struct rig *r = idle_rig(ALL_ACCESS);
	size_t len = _i ? XSHM_RMA_SHORT_MAX : SMALL;
	void *buf = initiator_buf(len);
	int ctx;

	post_write(r, 0, buf, len, 0, &ctx);
	expect_done(r, &ctx, FI_RMA | FI_WRITE);
	xt_signal(r->c.sock, T_CLOSE_MR);
	XT_ASSERT(xt_wait(r->c.sock) == T_OK, "close");
	settle_target(r);
	assert_untouched(r);
	xt_signal(r->c.sock, T_EVENTS);
	XT_ASSERT(xt_recv_u64(r->c.sock) == 0, "remote write counted");
	xt_recv_u64(r->c.sock);
	xt_recv_u64(r->c.sock);
	free(buf);
	rig_stop(r);
}
END_TEST

/*
 * The initiator's check sees the registration as it is at each write:
 * after a write it let through, a range outside that registration is
 * still refused, and once the target closed it, so is its key.
 */
START_TEST(checks_after_a_write_see_the_registration_as_it_is)
{
	struct rig *r = idle_rig(ALL_ACCESS);
	void *buf = initiator_buf(SMALL);
	int ctx;

	post_write(r, 0, buf, SMALL, 0, &ctx);
	expect_done(r, &ctx, FI_RMA | FI_WRITE);
	expect_refused(r, r->addr + MR_LEN - SMALL + 1, r->key, FI_EACCES);
	settle_target(r);
	assert_written(r, 0, SMALL);
	xt_signal(r->c.sock, T_CLOSE_MR);
	XT_ASSERT(xt_wait(r->c.sock) == T_OK, "close");
	expect_refused(r, r->addr, r->key, FI_EINVAL);
	free(buf);
	rig_stop(r);
}
END_TEST

/* Writes of PIECE bytes over the whole region: more than its ring holds. */
#define PIECE	64
#define PIECES	(MR_LEN / PIECE)

/* A full ring queues the rest, which complete as they get in. */
START_TEST(full_ring_queues_then_completes)
{
	struct rig *r = idle_rig(ALL_ACCESS);
	unsigned char *buf = initiator_buf(MR_LEN);
	uint64_t done;

	for (size_t i = 0; i < PIECES; i++)
		post_write(r, 3, buf + i * PIECE, PIECE, i * PIECE, NULL);
	done = fi_cntr_read(r->wc);
	XT_ASSERT(done > 0 && done < PIECES, "%llu completed at once",
		  (unsigned long long) done);
	for (int round = 0; round < 16 && fi_cntr_read(r->wc) < PIECES;
	     round++)
		settle_target(r);
	wait_cntr(r->wc, PIECES);
	settle_target(r);
	assert_written(r, 0, MR_LEN);
	free(buf);
	rig_stop(r);
}
END_TEST

/* Both ends count posted writes, the target as it applies them. */
START_TEST(counters_count_posted_writes)
{
	struct rig *r = rig_start_counted(ALL_ACCESS);
	void *buf = initiator_buf(SMALL);
	int ctx[4];

	for (int call = 0; call < 4; call++)
		post_write(r, call, buf, SMALL, 0, &ctx[call]);
	wait_cntr(r->wc, 4);
	xt_signal(r->c.sock, T_EVENTS);
	XT_ASSERT(xt_recv_u64(r->c.sock) == 4, "remote write counter");
	XT_ASSERT(xt_recv_u64(r->c.sock) == 0, "remote read counter");
	XT_ASSERT(xt_recv_u64(r->c.sock) == 4, "registration's write counter");
	free(buf);
	rig_stop(r);
}
END_TEST

static Suite *rma_posted_suite(void)
{
	Suite *s = suite_create("rma_posted");
	TCase *posted = tcase_create("posted");

	tcase_set_timeout(posted, 60);
	tcase_add_loop_test(posted,
			    posted_write_completes_before_target_applies_it,
			    0, 4);
	tcase_add_loop_test(posted,
			    short_write_completes_before_target_applies_it,
			    0, 8);
	tcase_add_loop_test(posted,
			    buffered_write_completes_before_target_applies_it,
			    0, 9);
	tcase_add_test(posted, larger_write_copied_at_once);
	tcase_add_test(posted, undrained_pool_leaves_writes_to_initiator);
	tcase_add_loop_test(posted, posted_write_errors_push_nothing, 0, 2);
	tcase_add_loop_test(posted, delivery_complete_waits_for_target, 0, 3);
	tcase_add_loop_test(posted, closed_before_applied_is_dropped, 0, 2);
	tcase_add_test(posted, checks_after_a_write_see_the_registration_as_it_is);
	tcase_add_test(posted, full_ring_queues_then_completes);
	tcase_add_test(posted, counters_count_posted_writes);
	/* xshm's own protocol (FI_XSHM_RMA_FAST) */
	if (xt_wanted(XT_XSHM))
		suite_add_tcase(s, posted);
	return s;
}

int main(void)
{
	rig_force_mode(RIG_AUTO);
	return xt_run_suite(rma_posted_suite());
}
