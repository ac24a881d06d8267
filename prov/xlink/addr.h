/*
 * An xlink address: the network provider's address of the endpoint and, in
 * the same name, the peer provider's address of it and the node both live
 * on.  Two endpoints whose node ids are equal talk through the peer.
 *
 * A name is FI_NAME_MAX (64) bytes, the most Open MPI's OFI MTL takes from
 * fi_getname: an xshm peer address ("fi_xshm://<node id>/<endpoint id>",
 * fi_xshm(7)) is kept as its endpoint id alone, beside the node id.
 */
#ifndef XLINK_ADDR_H
#define XLINK_ADDR_H

#include "xlink.h"

#define XLINK_ADDR_MAGIC	0x58	/* 'X' */
#define XLINK_ADDR_BYTES	48	/* network address, then peer address */
#define XLINK_PEER_NAME_MAX	64	/* a peer address, expanded */

/* flags */
#define XLINK_ADDR_PEER_FIXED	0x1	/* asked for by service: every endpoint
					   opened from the info takes it */
#define XLINK_ADDR_PEER_XSHM	0x2	/* the peer part is an xshm endpoint id */

/* The bytes fi_getname gives and fi_av_insert takes. */
struct xlink_addr {
	uint8_t magic;
	uint8_t flags;
	uint8_t net_len;
	uint8_t peer_len;	/* 0: no peer address (the node is remote) */
	uint32_t reserved;
	uint64_t node_id;	/* the node of the peer address */
	uint8_t bytes[XLINK_ADDR_BYTES];
};

_Static_assert(sizeof(struct xlink_addr) == 64, "an xlink name is FI_NAME_MAX bytes");

/* This process's node id, as the peer provider names it (see addr.c). */
uint64_t xlink_node_id(const void *peer_addr, size_t peer_len);

/* Packs the two addresses; -FI_EINVAL if they do not fit. */
int xlink_addr_pack(struct xlink_addr *addr, const void *net, size_t net_len,
		    const void *peer, size_t peer_len);

static inline const void *xlink_addr_net(const struct xlink_addr *addr)
{
	return addr->bytes;
}

/* The peer address as the peer provider takes it; its length, 0 if none. */
size_t xlink_addr_peer(const struct xlink_addr *addr, char name[XLINK_PEER_NAME_MAX]);

/* Checks bytes read from an application or the wire: 0 or -FI_EINVAL. */
int xlink_addr_check(const void *bytes, size_t len);

/* A copy of addr as malloc'ed bytes, for fi_info's src_addr/dest_addr. */
void *xlink_addr_dup(const struct xlink_addr *addr, size_t *len);

#endif
