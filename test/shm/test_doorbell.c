/* Unit tests of shm/doorbell.c. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ep_ids.h"
#include "shm/doorbell.h"
#include "shm/region.h"

#define TEST_TIMEOUT	30
#define RING_THREADS	8

/* Receivers here sleep on their doorbells, so they advertise it. */
static const struct xshm_region_geom test_geom = {
	.ring_cells = 64,
	.pool_bufs = 4,
	.buf_size = 4096,
	.features = XSHM_FEATURE_DOORBELL,
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* Whether fd becomes readable within timeout_ms. */
static bool readable(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, timeout_ms) == 1 && (pfd.revents & POLLIN);
}

/* Count (and consume) the datagrams waiting on fd. */
static int count_datagrams(int fd)
{
	char byte;
	int n = 0;

	while (recv(fd, &byte, 1, MSG_DONTWAIT) >= 0)
		n++;
	return n;
}

/* A receiver: its region and its bound doorbell. */
struct receiver {
	struct xshm_region region;
	struct xshm_doorbell bell;
	uint64_t ep_id;
};

static void receiver_open_geom(struct receiver *r,
			       const struct xshm_region_geom *geom)
{
	r->ep_id = test_ep_id();
	ck_assert_int_eq(xshm_region_create(&r->region, 1, r->ep_id, geom), 0);
	xshm_doorbell_init(&r->bell);
	ck_assert_int_eq(xshm_doorbell_open(&r->bell, r->ep_id), 0);
	ck_assert_int_ge(r->bell.fd, 0);
}

static void receiver_open(struct receiver *r)
{
	receiver_open_geom(r, &test_geom);
}

static void receiver_close(struct receiver *r)
{
	xshm_doorbell_close(&r->bell);
	xshm_region_close(&r->region);
}

/* The sender's side, in a child: push count cells, ringing after each. */
static int child_push_and_ring(uint64_t ep_id, int count, int delay_ms)
{
	struct xshm_region peer;

	if (xshm_region_open(&peer, ep_id))
		return 2;
	if (delay_ms)
		usleep((useconds_t) delay_ms * 1000);
	for (int i = 0; i < count; i++) {
		uint64_t pos;
		void *cell = xshm_ring_reserve(&peer.ring, &pos);

		if (!cell)
			return 3;
		xshm_ring_commit(&peer.ring, cell, pos);
		xshm_doorbell_ring(&peer);
	}
	xshm_region_close(&peer);
	return 0;
}

static pid_t spawn_sender(uint64_t ep_id, int count, int delay_ms)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(child_push_and_ring(ep_id, count, delay_ms));
	return pid;
}

static void join(pid_t pid)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}

START_TEST(ring_wakes_armed_poll_in_other_process)
{
	struct receiver r;
	uint64_t t0, waited;
	pid_t pid;

	receiver_open(&r);
	xshm_doorbell_arm(&r.region);
	ck_assert(xshm_ring_peek(&r.region.ring) == NULL);
	t0 = now_ms();
	pid = spawn_sender(r.ep_id, 1, 300);
	ck_assert_msg(readable(r.bell.fd, 10000), "no ring within 10 s");
	waited = now_ms() - t0;
	ck_assert_msg(waited >= 250, "woken after %llu ms, before the ring",
		      (unsigned long long) waited);
	ck_assert(xshm_ring_peek(&r.region.ring) != NULL);
	join(pid);
	xshm_doorbell_disarm(&r.region);
	receiver_close(&r);
}
END_TEST

START_TEST(no_datagram_while_not_armed)
{
	struct receiver r;

	receiver_open(&r);
	join(spawn_sender(r.ep_id, 20, 0));
	ck_assert(!readable(r.bell.fd, 100));
	ck_assert_int_eq(count_datagrams(r.bell.fd), 0);

	xshm_doorbell_arm(&r.region);
	join(spawn_sender(r.ep_id, 3, 0));
	ck_assert_int_eq(count_datagrams(r.bell.fd), 3);
	xshm_doorbell_disarm(&r.region);
	receiver_close(&r);
}
END_TEST

/* An owner that never sleeps does not advertise a doorbell: no syscalls. */
START_TEST(no_datagram_without_doorbell_feature)
{
	struct xshm_region_geom geom = test_geom;
	struct receiver r;

	geom.features = 0;
	receiver_open_geom(&r, &geom);
	xshm_doorbell_arm(&r.region);
	join(spawn_sender(r.ep_id, 3, 0));
	ck_assert(!readable(r.bell.fd, 100));
	ck_assert_int_eq(count_datagrams(r.bell.fd), 0);
	xshm_doorbell_disarm(&r.region);
	receiver_close(&r);
}
END_TEST

START_TEST(arm_counts_waiters)
{
	struct receiver r;

	receiver_open(&r);
	xshm_doorbell_arm(&r.region);
	xshm_doorbell_arm(&r.region);
	ck_assert_uint_eq(atomic_load(&r.region.hdr->waiters), 2);
	xshm_doorbell_disarm(&r.region);
	xshm_doorbell_ring(&r.region);
	ck_assert_int_eq(count_datagrams(r.bell.fd), 1);
	xshm_doorbell_disarm(&r.region);
	ck_assert_uint_eq(atomic_load(&r.region.hdr->waiters), 0);
	xshm_doorbell_ring(&r.region);
	ck_assert_int_eq(count_datagrams(r.bell.fd), 0);
	receiver_close(&r);
}
END_TEST

START_TEST(drain_empties_the_fd)
{
	struct receiver r;

	receiver_open(&r);
	xshm_doorbell_arm(&r.region);
	for (int i = 0; i < 5; i++)
		xshm_doorbell_ring(&r.region);
	ck_assert(readable(r.bell.fd, 0));
	xshm_doorbell_drain(&r.bell);
	ck_assert(!readable(r.bell.fd, 0));
	xshm_doorbell_disarm(&r.region);
	receiver_close(&r);
}
END_TEST

START_TEST(open_twice_is_idempotent)
{
	struct xshm_doorbell bell, other;
	uint64_t ep_id = test_ep_id();
	int fd;

	xshm_doorbell_init(&bell);
	ck_assert_int_eq(bell.fd, -1);
	ck_assert_int_eq(xshm_doorbell_open(&bell, ep_id), 0);
	fd = bell.fd;
	ck_assert_int_eq(xshm_doorbell_open(&bell, ep_id), 0);
	ck_assert_int_eq(bell.fd, fd);
	xshm_doorbell_init(&other);
	ck_assert_int_eq(xshm_doorbell_open(&other, ep_id), -EADDRINUSE);
	ck_assert_int_eq(other.fd, -1);
	xshm_doorbell_close(&bell);
	ck_assert_int_eq(bell.fd, -1);
	xshm_doorbell_close(&bell);
}
END_TEST

START_TEST(close_releases_the_name)
{
	struct xshm_doorbell bell, again;
	uint64_t ep_id = test_ep_id();

	xshm_doorbell_init(&bell);
	ck_assert_int_eq(xshm_doorbell_open(&bell, ep_id), 0);
	xshm_doorbell_close(&bell);
	xshm_doorbell_init(&again);
	ck_assert_int_eq(xshm_doorbell_open(&again, ep_id), 0);
	xshm_doorbell_close(&again);
}
END_TEST

/* Armed region, nobody bound: the ring is silently dropped. */
START_TEST(ring_without_doorbell_is_harmless)
{
	struct xshm_region region;

	ck_assert_int_eq(xshm_region_create(&region, 1, test_ep_id(),
					    &test_geom), 0);
	xshm_doorbell_arm(&region);
	xshm_doorbell_ring(&region);
	xshm_doorbell_disarm(&region);
	xshm_region_close(&region);
}
END_TEST

static void *ring_thread(void *arg)
{
	xshm_doorbell_ring(arg);
	return NULL;
}

/* The process-wide sending socket is created once, whoever rings first. */
START_TEST(concurrent_first_rings)
{
	pthread_t threads[RING_THREADS];
	struct receiver r;

	receiver_open(&r);
	xshm_doorbell_arm(&r.region);
	for (int i = 0; i < RING_THREADS; i++)
		ck_assert_int_eq(pthread_create(&threads[i], NULL, ring_thread,
						&r.region), 0);
	for (int i = 0; i < RING_THREADS; i++)
		pthread_join(threads[i], NULL);
	ck_assert_int_eq(count_datagrams(r.bell.fd), RING_THREADS);
	xshm_doorbell_disarm(&r.region);
	receiver_close(&r);
}
END_TEST

static Suite *doorbell_suite(void)
{
	Suite *suite = suite_create("doorbell");
	TCase *tc = tcase_create("doorbell");

	tcase_set_timeout(tc, TEST_TIMEOUT);
	tcase_add_test(tc, ring_wakes_armed_poll_in_other_process);
	tcase_add_test(tc, no_datagram_while_not_armed);
	tcase_add_test(tc, no_datagram_without_doorbell_feature);
	tcase_add_test(tc, arm_counts_waiters);
	tcase_add_test(tc, drain_empties_the_fd);
	tcase_add_test(tc, open_twice_is_idempotent);
	tcase_add_test(tc, close_releases_the_name);
	tcase_add_test(tc, ring_without_doorbell_is_harmless);
	tcase_add_test(tc, concurrent_first_rings);
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	if (test_ep_ids_init(0xd00b))
		return EXIT_FAILURE;
	return test_run_suite(doorbell_suite());
}
