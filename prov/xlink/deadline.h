/*
 * xlink's clocks: deadlines of its polling waits (fi_cq_sread,
 * fi_cntr_wait, fi_eq_sread; a timeout in milliseconds, negative for
 * none), and the coarse clock of its periodic checks on the data path.
 */
#ifndef XLINK_DEADLINE_H
#define XLINK_DEADLINE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define XLINK_NO_DEADLINE INT64_MAX

static inline int64_t xlink_now_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t) now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* A few milliseconds coarse, and cheaper: for checks made while progressing. */
static inline uint64_t xlink_coarse_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	return (uint64_t) now.tv_sec * 1000 + (uint64_t) now.tv_nsec / 1000000;
}

static inline int64_t xlink_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? XLINK_NO_DEADLINE : xlink_now_ms() + timeout_ms;
}

static inline bool xlink_expired(int64_t deadline)
{
	return deadline != XLINK_NO_DEADLINE && xlink_now_ms() >= deadline;
}

#endif
