/*
 * Unit tests of shm/sweep.c: the region owner recovers what a sender killed
 * mid-send held (a reserved ring cell, borrowed buffers), but delivers first
 * every command the sender committed before it died.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ep_ids.h"
#include "shm/sweep.h"

#define TEST_TIMEOUT	60
#define FILL		0x5a

static const struct xshm_region_geom test_geom = {
	.ring_cells = 16,
	.pool_bufs = 8,
	.buf_size = 4096,
};

/*
 * The child: an endpoint of its own (so that it can be found gone), one
 * command committed naming a buffer, a second buffer borrowed and a cell
 * reserved, then SIGKILL.
 */
static int child_send_and_die(uint64_t receiver_id, uint64_t own_id)
{
	struct xshm_region own, peer;
	struct xshm_cmd *cmd;
	uint32_t sent, spare;
	uint64_t pos;

	if (xshm_region_create(&own, 1, own_id, &test_geom) ||
	    xshm_region_open(&peer, receiver_id))
		return 2;
	if (xshm_pool_alloc(&peer.pool, own_id, XSHM_POOL_ROUND, &sent) ||
	    xshm_pool_alloc(&peer.pool, own_id, XSHM_POOL_ROUND, &spare))
		return 3;
	memset(xshm_pool_buf(&peer.pool, sent), FILL, test_geom.buf_size);
	cmd = xshm_ring_reserve(&peer.ring, &pos);
	if (!cmd)
		return 4;
	cmd->op = XSHM_OP_MSG;
	cmd->proto = XSHM_PROTO_BUF;
	cmd->buf_index = sent;
	cmd->src_ep_id = own_id;
	cmd->chunk_len = test_geom.buf_size;
	xshm_ring_commit(&peer.ring, cmd, pos);
	if (!xshm_ring_reserve(&peer.ring, &pos))
		return 5;
	raise(SIGKILL);
	return 6;
}

static void run_child(uint64_t receiver_id, uint64_t own_id)
{
	pid_t child = fork();
	int status;

	ck_assert_int_ge(child, 0);
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(child_send_and_die(receiver_id, own_id));
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFSIGNALED(status), "child exited with %d",
		      WEXITSTATUS(status));
}

/* How many buffers the borrower holds. */
static int held_by(const struct xshm_region *region, uint64_t ep_id)
{
	int held = 0;

	for (uint32_t i = 0; i < region->pool.nbufs; i++)
		held += xshm_pool_owned_by(&region->pool, i, ep_id);
	return held;
}

static void consume_committed(struct xshm_region *region, uint64_t sender)
{
	struct xshm_cmd *cmd = xshm_ring_peek(&region->ring);
	const unsigned char *buf;

	ck_assert_ptr_nonnull(cmd);
	ck_assert_uint_eq(cmd->src_ep_id, sender);
	ck_assert(xshm_pool_owned_by(&region->pool, cmd->buf_index, sender));
	buf = xshm_pool_buf(&region->pool, cmd->buf_index);
	for (uint32_t k = 0; k < cmd->chunk_len; k++)
		ck_assert_uint_eq(buf[k], FILL);
	ck_assert_int_eq(xshm_pool_free(&region->pool, cmd->buf_index, sender), 0);
	xshm_ring_release(&region->ring, cmd);
	ck_assert_ptr_null(xshm_ring_peek(&region->ring));
}

START_TEST(sweep_after_drain)
{
	struct xshm_region receiver, live;
	struct xshm_sweep sweep;
	uint64_t receiver_id = test_ep_id(), dead_id = test_ep_id();
	uint64_t live_id = test_ep_id(), now = xshm_sweep_now();
	char dead_name[XSHM_NAME_MAX];
	uint32_t live_buf;

	ck_assert_int_eq(xshm_region_create(&receiver, 1, receiver_id,
					    &test_geom), 0);
	ck_assert_int_eq(xshm_region_create(&live, 1, live_id, &test_geom), 0);
	ck_assert_int_eq(xshm_pool_alloc(&receiver.pool, live_id,
					 XSHM_POOL_ROUND, &live_buf), 0);
	xshm_sweep_init(&sweep);
	run_child(receiver_id, dead_id);
	ck_assert(xshm_region_gone(dead_id));
	ck_assert(!xshm_region_gone(live_id));

	/* Its committed command is not consumed yet: nothing is taken. */
	ck_assert_int_eq(xshm_sweep_run(&sweep, &receiver, now), 0);
	ck_assert_int_eq(held_by(&receiver, dead_id), 2);
	consume_committed(&receiver, dead_id);
	/* Now the reserved cell is skipped and the spare buffer comes back. */
	ck_assert_int_eq(xshm_sweep_run(&sweep, &receiver, now), 2);
	ck_assert_int_eq(held_by(&receiver, dead_id), 0);
	ck_assert_int_eq(xshm_sweep_run(&sweep, &receiver, now), 0);
	/* A live borrower keeps its buffer. */
	ck_assert(xshm_pool_owned_by(&receiver.pool, live_buf, live_id));
	ck_assert_int_eq(xshm_pool_free(&receiver.pool, live_buf, live_id), 0);
	/* The ring goes on, the pool is whole. */
	for (uint32_t i = 0, index; i < test_geom.pool_bufs; i++)
		ck_assert_int_eq(xshm_pool_alloc(&receiver.pool, 7,
						 XSHM_POOL_ROUND, &index), 0);

	/* Any endpoint of this user, in a test run beside this one, may have
	 * reclaimed the dead child's file already. */
	xshm_region_name(dead_name, sizeof(dead_name), dead_id);
	ck_assert(shm_unlink(dead_name) == 0 || errno == ENOENT);
	xshm_region_close(&live);
	xshm_region_close(&receiver);
}
END_TEST

static Suite *sweep_suite(void)
{
	Suite *suite = suite_create("sweep");
	TCase *basic = tcase_create("basic");

	tcase_set_timeout(basic, TEST_TIMEOUT);
	tcase_add_test(basic, sweep_after_drain);
	suite_add_tcase(suite, basic);
	return suite;
}

int main(void)
{
	if (test_ep_ids_init(0x5e3e))
		return EXIT_FAILURE;
	return test_run_suite(sweep_suite());
}
