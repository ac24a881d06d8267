/*
 * The address vector (av*.c) as the rest of the provider uses it.  Indices
 * are table slots; a hash from endpoint id to slot turns the sender id of
 * every command into a source fi_addr_t.  Each entry maps its peer's
 * region on first send; the senders' regions, read for their key digests,
 * are kept apart from the table (av_auth.c).  Call with the domain lock held.
 */
#ifndef XSHM_AV_H
#define XSHM_AV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "base/addr.h"
#include "shm/layout.h"
#include "shm/liveness.h"
#include "shm/region.h"

struct xshm_domain;
struct xshm_ep;

struct xshm_av_entry {
	struct xshm_addr addr;
	bool used;
	bool peer_mapped;
	struct xshm_region peer;	/* the peer's region, mapped on first send */
	struct xshm_owner owner;	/* of the mapped region */
	uint64_t next_check_ms;		/* liveness.c: ring full, check again then */
	fi_addr_t src_id;		/* reported as source: index or user id */
	uint32_t auth_key;		/* key slot, or XSHM_AV_NO_KEY */
};

struct xshm_av_key {
	bool used;
	uint32_t size;
	unsigned char bytes[XSHM_AV_KEY_MAX];
	uint64_t digest;
	fi_addr_t user_id;
};

struct xshm_av_shared;			/* av_shared.c: a named AV's file */
struct xshm_av_senders;			/* av_auth.c: senders' key digests */

struct xshm_av {
	struct fid_av av_fid;
	struct xshm_domain *domain;
	enum fi_av_type type;
	uint64_t flags;			/* of fi_av_open */
	struct fid_eq *eq;		/* FI_EVENT: where inserts report */
	struct xshm_av_entry *table;
	size_t capacity;
	size_t lowest_free;
	struct xshm_av_key *keys;
	size_t keys_capacity;
	struct xshm_av_shared *shared;	/* NULL unless named */
	struct xshm_av_senders *senders;
	struct xshm_ep **eps;		/* bound endpoints, told of inserts */
	size_t nr_eps;
	uint64_t *hash_keys;		/* ep_id -> index, open addressing */
	uint32_t *hash_vals;
	size_t hash_size;
	uint64_t gen;			/* changes with every entry (av_table.c) */
	uint64_t last_ep_id;		/* the last sender looked up, */
	uint64_t last_gen;		/* ... at this gen, */
	ssize_t last_index;		/* ... found there (-1: not in the AV) */
	_Atomic int ref;
};

int xshm_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		 struct fid_av **av, void *context);
bool xshm_av_has(struct xshm_av *av, fi_addr_t fi_addr);
struct xshm_av *xshm_av_of(struct fid *fid, struct xshm_domain *domain);
int xshm_av_add_ep(struct xshm_av *av, struct xshm_ep *ep);
void xshm_av_remove_ep(struct xshm_av *av, struct xshm_ep *ep);
/* Gives back the spares ep holds in the AV's mapped peers (av_peers.c). */
void xshm_av_release_spares(struct xshm_av *av, struct xshm_ep *ep);
fi_addr_t xshm_av_lookup_ep_id(struct xshm_av *av, uint64_t ep_id);
int xshm_av_peer(struct xshm_av *av, fi_addr_t fi_addr,
		 struct xshm_av_entry **entry);
/*
 * A directed receive's src (flags FI_AUTH_KEY: a key) as sources are
 * reported; *ep_id: the endpoint it names (0 for FI_ADDR_UNSPEC or a key).
 */
int xshm_av_recv_src(struct xshm_ep *ep, fi_addr_t *src, uint64_t *ep_id,
		     uint64_t flags);
/* Receiver-side isolation: false drops the sender's command. */
bool xshm_av_sender_allowed(struct xshm_ep *ep, uint64_t sender_ep_id);
/* Both of the above for one sender; *src is set when allowed. */
bool xshm_av_sender_src(struct xshm_ep *ep, uint64_t sender_ep_id,
			fi_addr_t *src);
/* The digest of the endpoint's auth key (ep_attr, else domain_attr); 0: none. */
int xshm_auth_info_digest(const struct fi_info *info, uint64_t *digest);
/* Sender regions (av_auth.c): the region an ack or a report goes to. */
struct xshm_region *xshm_av_sender_region(struct xshm_av *av, uint64_t ep_id);
/* Retire the AV's mappings of a dead process's region (av_peers.c, av_auth.c). */
void xshm_av_retire(struct xshm_av *av, fi_addr_t fi_addr, struct xshm_owner dead);
void xshm_av_sender_retire(struct xshm_av *av, uint64_t ep_id,
			   struct xshm_owner dead);
/* The process behind a cached sender region, without refreshing it. */
struct xshm_owner xshm_av_sender_owner(struct xshm_av *av, uint64_t ep_id);
/*
 * The process behind endpoint ep_id, mapping its region if need be; once it
 * is gone, the last process seen there (pid 0: none ever was).
 */
struct xshm_owner xshm_av_source_process(struct xshm_av *av, uint64_t ep_id);

#endif
