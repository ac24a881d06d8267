/* Progress (progress.c): draining the ring, then the work that waits on peers. */
#ifndef XSHM_PROGRESS_H
#define XSHM_PROGRESS_H

#include <stddef.h>

struct xshm_ep;

void xshm_ep_progress(struct xshm_ep *ep);
/* The same for a reader with room for room completions: fewer cells. */
void xshm_ep_progress_for(struct xshm_ep *ep, size_t room);
int xshm_ep_drain(struct xshm_ep *ep, int budget);
void xshm_ep_drain_replies(struct xshm_ep *ep);

#endif
