#ifndef XSHM_CONTROL_H
#define XSHM_CONTROL_H

#include <stdbool.h>
#include <stdint.h>

struct xshm_ep;
struct xshm_region;

/* A command of the protocol's own (control.c): what its header says. */
struct xshm_control {
	uint8_t op;
	uint8_t proto;
	uint16_t flags;		/* XSHM_CMD_*: 0 for most */
	uint64_t tag;
	uint64_t msg_size;
	uint32_t ack_id;
	const void *payload;	/* payload_len bytes after the header */
	uint32_t payload_len;
	uint32_t buf_index;	/* XSHM_PROTO_BUF: a buffer of the peer's */
};

/*
 * Pushes ctl into peer's ring; false when the ring is full or skipped the
 * cell as stalled.
 */
bool xshm_control_push(struct xshm_ep *ep, struct xshm_region *peer,
		       const struct xshm_control *ctl);

#endif
