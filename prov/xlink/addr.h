/*
 * An xlink address: the network provider's address of the endpoint and, in
 * the same name, the peer provider's address of it and the node both live
 * on.  Two endpoints whose node ids are equal talk through the peer.
 */
#ifndef XLINK_ADDR_H
#define XLINK_ADDR_H

#include "xlink.h"

#define XLINK_ADDR_MAGIC	0x4b4e4c58u	/* "XLNK" */
#define XLINK_NET_ADDR_MAX	112
#define XLINK_PEER_ADDR_MAX	112

/*
 * flags: the peer address was asked for by service (FI_SOURCE), so an
 * endpoint opened from the info takes it; otherwise each endpoint gets a
 * fresh one from the peer provider.
 */
#define XLINK_ADDR_PEER_FIXED	1u

/* The bytes fi_getname gives and fi_av_insert takes. */
struct xlink_addr {
	uint32_t magic;
	uint16_t net_len;
	uint16_t peer_len;	/* 0: no peer address (the node is remote) */
	uint32_t flags;
	uint32_t reserved;
	uint64_t node_id;	/* the node of the peer address */
	uint8_t net[XLINK_NET_ADDR_MAX];
	uint8_t peer[XLINK_PEER_ADDR_MAX];
};

/* This process's node id, as the peer provider names it (see addr.c). */
uint64_t xlink_node_id(const void *peer_addr, size_t peer_len);

/* Packs the two addresses; -FI_EINVAL if either is too long. */
int xlink_addr_pack(struct xlink_addr *addr, const void *net, size_t net_len,
		    const void *peer, size_t peer_len);

/* Checks bytes read from an application or the wire: 0 or -FI_EINVAL. */
int xlink_addr_check(const void *bytes, size_t len);

/* A copy of addr as malloc'ed bytes, for fi_info's src_addr/dest_addr. */
void *xlink_addr_dup(const struct xlink_addr *addr, size_t *len);

#endif
