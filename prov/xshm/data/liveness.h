#ifndef XSHM_PEER_LIVENESS_H
#define XSHM_PEER_LIVENESS_H

#include <stdbool.h>

#include "shm/liveness.h"

struct xshm_peer;
struct xshm_ep;

/*
 * Peer liveness (liveness.c): operations involving a process that died
 * without closing its endpoint fail with FI_EIO.  A sweep, at most every
 * liveness_ms during progress while the endpoint waits on peers, checks the
 * processes its pending operations involve; a send that finds a ring full
 * checks that receiver.  Dead peers' regions are retired (shm/liveness.h).
 */
void xshm_liveness_progress(struct xshm_ep *ep, bool idle);
/* Ring full: true (region retired) when the receiver's process is dead. */
bool xshm_liveness_peer_dead(struct xshm_ep *ep, struct xshm_peer *peer);
/* How long a sleeper may wait without a sweep: -1 when nothing is pending. */
int xshm_liveness_sleep_ms(const struct xshm_ep *ep);
/* The error for an operation whose peer region went away. */
int xshm_liveness_gone_err(struct xshm_owner owner);

#endif
