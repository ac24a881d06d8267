/*
 * Senders: the peers the receive path looks up by the endpoint id of every
 * command, for receiver-side isolation, and to reach them back (acks,
 * single-copy pulls, timings) or learn whether their process still runs.
 *
 * Isolation is the receiver's business (a sender is untrusted): a command
 * is accepted only if the sender's region records the receiver's own digest
 * (av/av_auth.c).  The digest is read when the region is mapped, and the
 * region kept mapped so that its closing (and an id reused by a new
 * endpoint) is noticed.  A sender whose region is already gone when its
 * first command is read can be checked no more: only a receiver without a
 * key accepts it.
 */
#include <errno.h>

#include "peer/peer.h"
#include "base/addr.h"
#include "base/provider.h"
#include "shm/liveness.h"
#include "shm/proc.h"
#include "shm/region.h"

static bool verdict(struct xshm_peer *sender, uint64_t digest)
{
	bool allowed = sender->mapped ? sender->digest == digest : !digest;

	if (!allowed && !sender->warned) {
		XSHM_WARN(FI_LOG_EP_DATA, "sender %016llx holds another "
			  "authorization key: its messages are dropped\n",
			  (unsigned long long) sender->ep_id);
		sender->warned = true;
	}
	return allowed;
}

bool xshm_peer_admits_slow(struct xshm_peers *peers, uint64_t ep_id,
			   uint64_t digest, struct xshm_peer **out)
{
	struct xshm_peer *sender = xshm_peer_sender(peers, ep_id);

	*out = sender;
	if (!sender)
		return !digest;
	/* The usual sender: still there, with this endpoint's key. */
	if (sender->mapped && sender->digest == digest &&
	    xshm_region_is_open(&sender->region))
		return true;
	if (!sender->mapped || !xshm_region_is_open(&sender->region))
		xshm_peer_map(peers, sender);
	return verdict(sender, digest);
}

struct xshm_region *xshm_peer_sender_region(struct xshm_peers *peers,
					    uint64_t ep_id)
{
	struct xshm_peer *sender = xshm_peer_sender(peers, ep_id);

	if (!sender)
		return NULL;
	if (!sender->mapped || !xshm_region_is_open(&sender->region))
		xshm_peer_map(peers, sender);
	return sender->mapped ? &sender->region : NULL;
}

/* The peer at ep_id with its region mapped, without mapping it; or NULL. */
static struct xshm_region *mapped_region(struct xshm_peers *peers,
					 uint64_t ep_id)
{
	struct xshm_peer *peer = xshm_peer_find(peers, ep_id);

	return peer && peer->mapped ? &peer->region : NULL;
}

struct xshm_owner xshm_peer_owner(struct xshm_peers *peers, uint64_t ep_id)
{
	struct xshm_region *region = mapped_region(peers, ep_id);

	if (!region || !xshm_region_is_open(region))
		return (struct xshm_owner) { .pid = 0 };
	return xshm_region_owner(region);
}

void xshm_peer_retire(struct xshm_peers *peers, uint64_t ep_id,
		      struct xshm_owner dead)
{
	struct xshm_region *region = mapped_region(peers, ep_id);

	if (region && xshm_owner_same(xshm_region_owner(region), dead))
		xshm_region_retire(region, dead);
}

/*
 * A region gone before it was ever mapped here (its endpoint closed, or a
 * process that found its owner dead removed it) still names its creator,
 * unless a service named it: the process now running with that pid, or a
 * dead one.  A pid taken over since only makes the source live longer.
 */
static struct xshm_owner creator_of(uint64_t ep_id)
{
	struct xshm_owner owner = { .pid = xshm_ep_id_creator(ep_id) };

	if (owner.pid > 0 && xshm_proc_start_time(owner.pid, &owner.start_time))
		owner.start_time = 0;	/* gone: matches no process */
	return owner;
}

/*
 * A region that is gone (its endpoint closed, or its process found dead)
 * is looked for again under its name, where a new endpoint may have opened;
 * when none is there, the process that held the last one is the answer, so
 * that a source that died stays dead however often it is asked about.
 */
struct xshm_owner xshm_peer_source_process(struct xshm_peers *peers,
					   uint64_t ep_id)
{
	struct xshm_peer *sender = xshm_peer_sender(peers, ep_id);

	if (!sender)
		return (struct xshm_owner) { .pid = 0 };
	if ((!sender->mapped || !xshm_region_is_open(&sender->region)) &&
	    xshm_peer_map(peers, sender) == -ENOENT && !sender->owner.pid)
		sender->owner = creator_of(ep_id);
	return sender->owner;
}

void xshm_peer_recheck(struct xshm_peers *peers, uint64_t ep_id)
{
	struct xshm_region *region = mapped_region(peers, ep_id);
	struct xshm_owner owner;

	if (!region || !xshm_region_is_open(region))
		return;
	owner = xshm_region_owner(region);
	if (!xshm_owner_alive(owner))
		xshm_region_retire(region, owner);
}
