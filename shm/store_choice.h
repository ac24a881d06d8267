/*
 * Which stores fill a bounce buffer: cached or streaming (non-temporal).
 *
 * Cached stores leave the data in the sender's cache, where the receiver's
 * copy finds it: the fastest way while the two CPUs share a cache.  When
 * they do not (other dies or sockets; on a cloud guest, vCPUs that the host
 * has placed far apart, which can change from one second to the next) each
 * line crosses between the caches twice, taken from the receiver for the
 * store and read back by it.  On the AMD EPYC guest this was measured on,
 * a cached fill of a 16 KiB buffer then cost 5 to 10 times a streaming one,
 * but only 2 to 4 times in the stream of fills that messages of 1 MiB and
 * more make, where streaming stores queue behind the writes to memory; and
 * one-way latency from 16 KiB to 4 MiB was 2 to 4 times that of streaming
 * stores, whose lines the receiver reads from memory (1 MiB: 155-180 us
 * against 59-65).  With the vCPUs near, a cached fill cost 1 to 2 times a
 * streaming one, and streaming doubled the latency: the receiver's copy
 * from memory is slower than from the shared cache.
 *
 * So the sender times its fills, in cycles per KiB, and keeps an estimate
 * for each kind: every fill of the kind chosen updates that one, and one
 * fill in XSHM_STORE_PROBE_EVERY, of the other kind, keeps the other
 * current (estimate.h).  Fills stream once cached ones cost more than
 * XSHM_STORE_STREAM_ABOVE percent of the streaming ones, and go back to
 * cached below XSHM_STORE_CACHE_BELOW percent.
 */
#ifndef XSHM_SHM_STORE_CHOICE_H
#define XSHM_SHM_STORE_CHOICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Probing 1 fill in 64 cost near CPUs 2-7% of the latency; 1 in 256, noise. */
#define XSHM_STORE_PROBE_EVERY	256
/* Thresholds on the ratio cached / streaming, in percent. */
#define XSHM_STORE_STREAM_ABOVE	250
#define XSHM_STORE_CACHE_BELOW	200
/* Shorter fills are not timed: fixed costs would dominate their rate. */
#define XSHM_STORE_TIMED_MIN	4096

enum xshm_stores {
	XSHM_STORES_CACHED,
	XSHM_STORES_STREAMING,
};

/* One sender's choice for one receiver; zeroed, it is fresh. */
struct xshm_store_choice {
	uint32_t cost[2];	/* cycles per KiB, by enum xshm_stores; 0: untimed */
	uint32_t fills;		/* picked so far, to space the probes */
	enum xshm_stores chosen;
};

/* The kind for the next fill: the chosen one, or a probe of the other. */
enum xshm_stores xshm_store_pick(struct xshm_store_choice *choice);

/* What a fill of len bytes with stores of kind took, in cycles. */
void xshm_store_record(struct xshm_store_choice *choice,
		       enum xshm_stores kind, uint64_t cycles, size_t len);

/* Whether xshm_cycles counts: where it does not, fills stay cached. */
#if defined(__x86_64__)
#define XSHM_HAVE_CYCLES 1
#include <x86intrin.h>

/* The time stamp counter: fills are timed against each other only. */
static inline uint64_t xshm_cycles(void)
{
	return __rdtsc();
}
#else
#define XSHM_HAVE_CYCLES 0

static inline uint64_t xshm_cycles(void)
{
	return 0;
}
#endif

#endif
