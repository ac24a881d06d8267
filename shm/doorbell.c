/*
 * Doorbells: abstract-namespace AF_UNIX datagram sockets (see doorbell.h).
 *
 * Why a wakeup cannot be lost.  The receiver, with its doorbell already
 * bound, does
 *	waiters++; FENCE; look at its ring; sleep in poll only if it is empty
 * and every sender, after publishing a cell, does
 *	publish the cell; FENCE; load waiters; send a byte only if non-zero.
 * Both fences are sequentially consistent, so the two "store, then load"
 * sequences cannot both miss each other's store: either the receiver sees
 * the cell and does not sleep, or the sender sees the receiver armed and
 * sends the byte, which waits in the bound socket until poll reports it.
 * While nobody is armed a sender pays one fence and one load, no syscall.
 *
 * An owner whose endpoint has no wait object never arms, so its region does
 * not advertise XSHM_FEATURE_DOORBELL and its senders skip even the fence:
 * the fence would stall every send until the cell's cache line reached the
 * receiver's core.  The flag is fixed before the region is published, so a
 * sender cannot see it change.
 *
 * Abstract names carry no permissions: any local process may ring (a
 * spurious wakeup, harmless) or squat a name (our open fails and the waiter
 * falls back to polling).  Nothing read from a doorbell is trusted.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "doorbell.h"

#define DRAIN_MAX	256	/* datagrams consumed per drain */

/* The unbound socket every ring of this process is sent from. */
static _Atomic int xshm_ring_fd = -1;

/* "\0xshm-<uid>-<ep_id>": the region's name with its '/' turned into NUL. */
static socklen_t bell_address(struct sockaddr_un *addr, uint64_t ep_id)
{
	char name[XSHM_NAME_MAX];
	size_t len;

	xshm_region_name(name, sizeof(name), ep_id);
	len = strlen(name);
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	memcpy(addr->sun_path, name, len);
	addr->sun_path[0] = '\0';
	return (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len);
}

static int dgram_socket(void)
{
	return socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

void xshm_doorbell_init(struct xshm_doorbell *bell)
{
	bell->fd = -1;
}

int xshm_doorbell_open(struct xshm_doorbell *bell, uint64_t ep_id)
{
	struct sockaddr_un addr;
	socklen_t len = bell_address(&addr, ep_id);
	int fd, ret;

	if (bell->fd >= 0)
		return 0;
	fd = dgram_socket();
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *) &addr, len)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	bell->fd = fd;
	return 0;
}

void xshm_doorbell_close(struct xshm_doorbell *bell)
{
	if (bell->fd < 0)
		return;
	close(bell->fd);
	bell->fd = -1;
}

void xshm_doorbell_drain(struct xshm_doorbell *bell)
{
	char buf[16];

	if (bell->fd < 0)
		return;
	for (int i = 0; i < DRAIN_MAX; i++)
		if (recv(bell->fd, buf, sizeof(buf), MSG_DONTWAIT) < 0)
			break;
}

void xshm_doorbell_arm(struct xshm_region *own)
{
	atomic_fetch_add_explicit(&own->hdr->waiters, 1, memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
}

void xshm_doorbell_disarm(struct xshm_region *own)
{
	atomic_fetch_sub_explicit(&own->hdr->waiters, 1, memory_order_release);
}

/* Created on first use; a thread that loses the race closes its own. */
static int ring_socket(void)
{
	int fd = atomic_load_explicit(&xshm_ring_fd, memory_order_acquire);
	int expected = -1;

	if (fd >= 0)
		return fd;
	fd = dgram_socket();
	if (fd < 0)
		return -1;
	if (!atomic_compare_exchange_strong(&xshm_ring_fd, &expected, fd)) {
		close(fd);
		fd = expected;
	}
	return fd;
}

/*
 * Failures are ignored: a full socket buffer means a wakeup is already
 * pending, a missing socket that nobody sleeps there.
 */
static void send_ring(uint64_t ep_id)
{
	struct sockaddr_un addr;
	socklen_t len = bell_address(&addr, ep_id);
	int fd = ring_socket();

	if (fd >= 0)
		(void) sendto(fd, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL,
			      (struct sockaddr *) &addr, len);
}

void xshm_doorbell_ring(const struct xshm_region *peer)
{
	if (!(peer->hdr->features & XSHM_FEATURE_DOORBELL))
		return;
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&peer->hdr->waiters, memory_order_relaxed))
		send_ring(peer->ep_id);
}
