/*
 * Who sent a message over the network.  rxm 1.17 reports FI_ADDR_NOTAVAIL
 * as the source of the messages on some of its connections (seen with four
 * ranks on each of two nodes; likely those both sides opened at once), so xlink
 * does not ask it: every header carries a key of its sender's network
 * address (wire.h), and the AV maps keys to its own indices here.  An
 * address inserted twice is reported by the first index that holds it.
 */
#ifndef XLINK_NETSRC_H
#define XLINK_NETSRC_H

#include "xlink.h"

struct xlink_netsrc_slot {
	uint64_t key;		/* 0: never used */
	fi_addr_t index;	/* FI_ADDR_NOTAVAIL: removed */
};

struct xlink_netsrc {
	struct xlink_netsrc_slot *slots;
	size_t cap;		/* a power of two, or 0 */
	size_t used;		/* slots whose key is set */
};

/* The key of a network address, as both ends compute it; never 0. */
uint64_t xlink_netsrc_key(const void *net_addr, size_t len);

/* The index that key names, or FI_ADDR_NOTAVAIL. */
fi_addr_t xlink_netsrc_find(const struct xlink_netsrc *map, uint64_t key);
/* Names key by index unless another index holds it; 0 or -FI_ENOMEM. */
int xlink_netsrc_add(struct xlink_netsrc *map, uint64_t key, fi_addr_t index);
/* Forgets key if index holds it. */
void xlink_netsrc_remove(struct xlink_netsrc *map, uint64_t key, fi_addr_t index);
void xlink_netsrc_fini(struct xlink_netsrc *map);

#endif
