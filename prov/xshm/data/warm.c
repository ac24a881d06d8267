/*
 * Warming the ring cells of the next send.  After a whole message in
 * cells, the next one to the same peer goes in the cells that follow (from
 * the ring's tail, unless another sender comes first), and is often as
 * long: an application's reply, its next iteration.  Their cache lines
 * were last read by the peer, one lap of the ring ago, and
 * each store of that message would wait for its line to be taken back.
 * So on the endpoint's next poll that finds nothing to receive, while it
 * waits for the reply, say, it asks for those lines (xshm_ring_warm).
 * Ping-pong latency against the build before (fi_xshm(7) has the
 * figures): 0.88-0.97 at 256 B, 0.89-1.00 at 1 KiB.  A sender that
 * streams writes the next cells at once: warming right after each send
 * cost it 4-7% of its bandwidth at 1 KiB; warming on the idle poll, within
 * one build, nothing measurable.
 */
#include "data/warm.h"
#include "av/av.h"
#include "objects/ep.h"
#include "shm/ring.h"

void xshm_warm_run(struct xshm_ep *ep)
{
	struct xshm_peer *peer;
	size_t len = ep->warm.len;

	ep->warm.len = 0;
	if (!xshm_av_peer(ep->av, ep->warm.dest, &peer))
		xshm_ring_warm(&peer->region.ring, len);
}
