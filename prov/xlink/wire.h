/*
 * xlink's protocol over the network provider.  Every message is one
 * untagged network message carrying a header, followed by the payload in
 * the same message up to xlink_params.eager_max bytes.  A larger payload
 * goes in a tagged network message of its own, sent right behind the
 * header with a tag unique to the sending endpoint (large_id); the
 * receiver posts a tagged receive for it once the header matched, so the
 * network provider's own rendezvous moves it into the application's buffer.
 * Every header names its sender by src_key (netsrc.h).
 */
#ifndef XLINK_WIRE_H
#define XLINK_WIRE_H

#include <stdint.h>

enum {
	XLINK_HDR_MSG = 1,
	XLINK_HDR_TAGGED = 2,
};

#define XLINK_HDR_DATA		0x1	/* cq_data is remote CQ data */
#define XLINK_HDR_LARGE		0x2	/* the payload follows with tag large_id */

struct xlink_hdr {
	uint8_t op;
	uint8_t flags;
	uint16_t reserved;
	uint32_t reserved2;
	uint64_t tag;
	uint64_t cq_data;
	uint64_t size;		/* payload bytes */
	uint64_t large_id;
	uint64_t src_key;	/* xlink_netsrc_key of the sender's network address */
};

_Static_assert(sizeof(struct xlink_hdr) == 48, "wire format");

#endif
