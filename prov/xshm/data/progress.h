/* Progress (progress.c): draining the ring, then the work that waits on peers. */
#ifndef XSHM_PROGRESS_H
#define XSHM_PROGRESS_H

struct xshm_ep;

void xshm_ep_progress(struct xshm_ep *ep);
int xshm_ep_drain(struct xshm_ep *ep, int budget);
void xshm_ep_drain_replies(struct xshm_ep *ep);

#endif
