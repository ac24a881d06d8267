/*
 * Doorbells: how a sender wakes a receiver that sleeps (fi_cq_sread,
 * fi_cntr_wait) instead of spinning.
 *
 * An endpoint that may sleep opens a doorbell: a datagram socket bound in
 * the abstract namespace under its region's name ("\0xshm-<uid>-<ep_id>"),
 * whose fd the waiter polls.  Before sleeping it arms its region (header
 * field `waiters`, a count: several waiters may arm one endpoint) and checks
 * its ring once more; a sender that finds the receiver's region armed after
 * publishing a cell rings the doorbell with one byte.  Nobody pays a system
 * call while nobody sleeps.  doorbell.c explains why no wakeup is lost.
 */
#ifndef XSHM_SHM_DOORBELL_H
#define XSHM_SHM_DOORBELL_H

#include <stdint.h>

#include "region.h"

struct xshm_doorbell {
	int fd;			/* -1 while closed */
};

void xshm_doorbell_init(struct xshm_doorbell *bell);

/*
 * Bind the doorbell of endpoint ep_id; 0 (also if already open) or -errno
 * (-EADDRINUSE: the name is taken).  Closing releases the name.
 */
int xshm_doorbell_open(struct xshm_doorbell *bell, uint64_t ep_id);
void xshm_doorbell_close(struct xshm_doorbell *bell);

/* Consume pending rings (non-blocking) so that the fd stops polling readable. */
void xshm_doorbell_drain(struct xshm_doorbell *bell);

/*
 * Receiver: announce (arm) or withdraw (disarm) a sleeper on its region.
 * arm ends with a full fence: check the ring after it, then sleep.
 */
void xshm_doorbell_arm(struct xshm_region *own);
void xshm_doorbell_disarm(struct xshm_region *own);

/*
 * Sender, after publishing into peer's ring: wake the peer if it sleeps.
 * Costs a fence and a load while the peer is not armed, nothing when its
 * region does not advertise XSHM_FEATURE_DOORBELL.
 */
void xshm_doorbell_ring(const struct xshm_region *peer);

#endif
