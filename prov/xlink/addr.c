/*
 * Addresses and node identity.  xshm's addresses carry their node id
 * ("fi_xshm://<node id>/<endpoint id>", fi_xshm(7)), so with xshm as the
 * peer the node id is xshm's own, FI_XSHM_NODE_ID included.  Another peer
 * provider's address says nothing of its node: then the node is named by a
 * hash of the boot id and the host name, which a UTS namespace changes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"

#define XSHM_PREFIX	"fi_xshm://"

static uint64_t fnv1a(uint64_t hash, const char *bytes, size_t len)
{
	for (size_t i = 0; i < len; i++)
		hash = (hash ^ (unsigned char) bytes[i]) * 1099511628211ULL;
	return hash;
}

static uint64_t host_node_id(void)
{
	char boot_id[64] = "", host[256] = "";
	uint64_t hash = 1469598103934665603ULL;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	if (f) {
		if (!fgets(boot_id, sizeof(boot_id), f))
			boot_id[0] = '\0';
		fclose(f);
	}
	gethostname(host, sizeof(host) - 1);
	hash = fnv1a(hash, boot_id, strlen(boot_id));
	hash = fnv1a(hash, host, strlen(host));
	return hash ? hash : 1;
}

static int parse_xshm_node(const char *str, size_t len, uint64_t *node_id)
{
	const size_t prefix = sizeof(XSHM_PREFIX) - 1;
	char hex[17];
	char *end;

	if (len < prefix + 17 || strncmp(str, XSHM_PREFIX, prefix) ||
	    str[prefix + 16] != '/')
		return -FI_EINVAL;
	memcpy(hex, str + prefix, 16);
	hex[16] = '\0';
	*node_id = strtoull(hex, &end, 16);
	return *end || !*node_id ? -FI_EINVAL : 0;
}

uint64_t xlink_node_id(const void *peer_addr, size_t peer_len)
{
	uint64_t node_id;

	if (peer_addr && !parse_xshm_node(peer_addr, peer_len, &node_id))
		return node_id;
	return host_node_id();
}

static int parse_xshm(const char *str, size_t len, uint64_t *node_id, uint64_t *ep_id)
{
	const size_t prefix = sizeof(XSHM_PREFIX) - 1;
	char hex[17];
	char *end;

	if (parse_xshm_node(str, len, node_id) || len < prefix + 33)
		return -FI_EINVAL;
	memcpy(hex, str + prefix + 17, 16);
	hex[16] = '\0';
	*ep_id = strtoull(hex, &end, 16);
	return *end ? -FI_EINVAL : 0;
}

int xlink_addr_pack(struct xlink_addr *addr, const void *net, size_t net_len,
		    const void *peer, size_t peer_len)
{
	uint64_t ep_id;

	if ((net_len && !net) || (peer_len && !peer))
		return -FI_EINVAL;
	memset(addr, 0, sizeof(*addr));
	addr->magic = XLINK_ADDR_MAGIC;
	if (peer_len) {
		addr->node_id = xlink_node_id(peer, peer_len);
		if (!parse_xshm(peer, peer_len, &addr->node_id, &ep_id)) {
			addr->flags |= XLINK_ADDR_PEER_XSHM;
			peer = &ep_id;
			peer_len = sizeof(ep_id);
		}
	}
	if (net_len + peer_len > XLINK_ADDR_BYTES)
		return -FI_EINVAL;
	addr->net_len = (uint8_t) net_len;
	addr->peer_len = (uint8_t) peer_len;
	if (net_len)
		memcpy(addr->bytes, net, net_len);
	if (peer_len)
		memcpy(addr->bytes + net_len, peer, peer_len);
	return 0;
}

size_t xlink_addr_peer(const struct xlink_addr *addr, char name[XLINK_PEER_NAME_MAX])
{
	uint64_t ep_id;

	if (!addr->peer_len)
		return 0;
	if (!(addr->flags & XLINK_ADDR_PEER_XSHM)) {
		memcpy(name, addr->bytes + addr->net_len, addr->peer_len);
		return addr->peer_len;
	}
	memcpy(&ep_id, addr->bytes + addr->net_len, sizeof(ep_id));
	return (size_t) snprintf(name, XLINK_PEER_NAME_MAX, XSHM_PREFIX "%016" PRIx64
				 "/%016" PRIx64, addr->node_id, ep_id) + 1;
}

int xlink_addr_check(const void *bytes, size_t len)
{
	const struct xlink_addr *addr = bytes;

	if (!bytes || len < sizeof(*addr) || addr->magic != XLINK_ADDR_MAGIC ||
	    addr->net_len + addr->peer_len > XLINK_ADDR_BYTES ||
	    (!addr->net_len && !addr->peer_len) ||
	    ((addr->flags & XLINK_ADDR_PEER_XSHM) && addr->peer_len != sizeof(uint64_t)))
		return -FI_EINVAL;
	return 0;
}

void *xlink_addr_dup(const struct xlink_addr *addr, size_t *len)
{
	void *copy = malloc(sizeof(*addr));

	if (copy)
		memcpy(copy, addr, sizeof(*addr));
	*len = copy ? sizeof(*addr) : 0;
	return copy;
}
