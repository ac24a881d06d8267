/* Same-node sources that died while receives waited for them (liveness.c). */
#ifndef XLINK_LIVENESS_H
#define XLINK_LIVENESS_H

#include <xshm/fi_xshm.h>

#include "xlink.h"

struct xlink_ep;

/* The peer AV's liveness query, or NULL if the peer has none. */
struct fi_xshm_ops_av *xlink_liveness_ops(struct fid_av *peer_av);

/* Caller holds the domain lock; cheap unless a check is due. */
void xlink_liveness_progress(struct xlink_ep *ep);

#endif
