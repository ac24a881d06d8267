/*
 * Claims on a split single copy (struct xshm_split, in the receiver's
 * region header): the receiver takes chunks from the front of the message
 * and its sender from the back, until they meet.  Every claim names the
 * generation the receiver started, so a sender's late claim on a message
 * the receiver has finished, or on a later one, fails.
 */
#ifndef XSHM_SHM_SPLIT_H
#define XSHM_SHM_SPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shm/clock.h"
#include "shm/layout.h"

/*
 * The chunk size for a message of len bytes.  A quarter of it, as a power
 * of two from XSHM_SPLIT_CHUNK_MIN to XSHM_SPLIT_CHUNK_MAX, gives the
 * number of chunks; rounded up to an even number, it shares the message
 * in chunks of equal size, rounded up to XSHM_SPLIT_CHUNK_ALIGN.  Each
 * chunk costs each side a claim and a system call that pins the chunk's
 * pages, so chunks are as large as they can be while each side still gets
 * two of a message it splits evenly.  Against 128 KiB chunks throughout,
 * side by side, sender writing its buffer before each send: latency
 * 0.92-1.01 on 4 KiB pages and 0.83-0.92 on huge pages from 1 to 16 MiB,
 * streaming bandwidth 0.97-1.17 and 1.09-1.29 times.  Where the powers of
 * two left an odd count (768 KiB: three of 256 KiB) or an unequal pair
 * (192 KiB: 128 and 64 KiB), whoever came first took the larger share.
 * Even counts of equal chunks against those, side by side (ab.sh --swap,
 * 8 repetitions), on huge pages from 768 KiB to 3 MiB: latency 0.72-0.83
 * with unwritten buffers and 0.85-0.91 written, streaming bandwidth
 * 1.15-1.20 and 0.91-0.98; on 4 KiB pages from 5 to 10 MiB, written:
 * latency 0.90-0.97, bandwidth 0.98-1.05.
 */
static inline size_t xshm_split_chunk_size_from(size_t len, size_t min)
{
	size_t chunk = min, n;

	while (chunk < XSHM_SPLIT_CHUNK_MAX && 4 * chunk < len)
		chunk *= 2;
	n = (len + chunk - 1) / chunk;
	if (n < 2)
		return chunk;
	n += n % 2;
	chunk = (len + n - 1) / n;
	return (chunk + XSHM_SPLIT_CHUNK_ALIGN - 1) &
	       ~(size_t) (XSHM_SPLIT_CHUNK_ALIGN - 1);
}

static inline size_t xshm_split_chunk_size(size_t len)
{
	return xshm_split_chunk_size_from(len, XSHM_SPLIT_CHUNK_MIN);
}

/* Chunks in a message of len bytes. */
static inline size_t xshm_split_chunks(size_t len)
{
	size_t chunk = xshm_split_chunk_size(len);

	return (len + chunk - 1) / chunk;
}

/*
 * An RMA operation's chunks (XSHM_SPLIT_RMA_CHUNK_MIN, data/rma_split.c):
 * a constant of its own, measured apart from messages'.  Chunks from
 * 32 KiB lost at 64 KiB (the offer's round trip costs what the second
 * core saves) and won less at 256 KiB than chunks from 128 KiB, the
 * messages' size, now used.
 */
static inline size_t xshm_split_rma_chunk_size(size_t len)
{
	return xshm_split_chunk_size_from(len, XSHM_SPLIT_RMA_CHUNK_MIN);
}

static inline size_t xshm_split_rma_chunks(size_t len)
{
	size_t chunk = xshm_split_rma_chunk_size(len);

	return (len + chunk - 1) / chunk;
}

/* Receiver: a new message of generation gen, nothing claimed or pushed. */
void xshm_split_start(struct xshm_split *split, uint32_t gen);

/*
 * Claims one chunk of generation gen's nchunks, the first one left when
 * front, else the last one left.  Returns its index, or -1 when none is
 * left or the claims are of another generation.
 */
long xshm_split_claim(struct xshm_split *split, uint32_t gen, size_t nchunks,
		      bool front);

/*
 * Receiver: claims every chunk left of generation gen, if the sender has
 * claimed none.  Returns the index of the first of them, or -1 when the
 * sender has begun, none is left, or the claims are of another generation.
 * A sender that has not joined by the time the receiver's first chunk is
 * in is busy elsewhere; one call for the rest costs less than a call per
 * chunk, and the receiver then waits for no late claim.  A receiver that
 * has more commands waiting does not ask: its senders are still sending
 * (prov/xshm/data/rts.c).
 */
long xshm_split_claim_rest(struct xshm_split *split, uint32_t gen,
			   size_t nchunks);

/* Sender: one chunk it claimed is copied, or failed. */
void xshm_split_pushed(struct xshm_split *split, bool failed);

/*
 * Receiver: whether every chunk the sender claimed of generation gen has
 * been pushed; *failed tells whether any push failed.  A word of another
 * generation counts as done and failed: it was not written by this copy.
 */
bool xshm_split_sender_done(struct xshm_split *split, uint32_t gen,
			    bool *failed);

struct xshm_owner;
/*
 * Receiver: waits until the chunks the other side claimed of generation
 * gen are in (short: it claims a chunk only as it starts copying it): 0,
 * -EIO if a push failed, -ESRCH once the other side's process, other, is
 * gone.  chunk_ns is the longest this side took for a chunk of the same
 * copy: the other side copies one in about as long, so the wait spins for
 * a few of those, then yields, since a copy that takes longer is one whose
 * thread is not running.  A budget of polls instead gave up the CPU while
 * the other's copy still ran, on 2 cores with 32 threads spinning
 * (fabtests' fi_rdm_bw_mt -n 16); the wait then lasted until the
 * scheduler came back, 10 to 100 ms, and the test took 2.5 times as long.
 */
#define XSHM_SPLIT_SPIN_CHUNKS	4
#define XSHM_SPLIT_SPIN_MIN_NS	20000
int xshm_split_wait_other(struct xshm_split *split, uint32_t gen,
			  struct xshm_owner other, uint64_t chunk_ns);

/* A chunk begun at start_ns is in: *longest_ns keeps the longest so far. */
static inline void xshm_split_time_chunk(uint64_t *longest_ns,
					 uint64_t start_ns)
{
	uint64_t took = xshm_now_ns() - start_ns;

	if (took > *longest_ns)
		*longest_ns = took;
}

/* How long xshm_split_wait_other spins, for this side's chunk_ns. */
static inline uint64_t xshm_split_spin_ns(uint64_t chunk_ns)
{
	uint64_t spin_ns = XSHM_SPLIT_SPIN_CHUNKS * chunk_ns;

	return spin_ns > XSHM_SPLIT_SPIN_MIN_NS ? spin_ns :
						  XSHM_SPLIT_SPIN_MIN_NS;
}

#endif
