/*
 * A domain's memory registrations (mr_table.c): key -> buffers, access and
 * the address initiators name the first byte by.  RMA targets resolve every
 * command against it before touching memory.
 */
#ifndef XSHM_MR_TABLE_H
#define XSHM_MR_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "base/provider.h"
#include "xshm/fi_peer.h"

#define XSHM_MR_BUCKETS		256

/* entry->cntr: counters bound with fi_mr_bind, by the event they count */
enum { XSHM_MR_CNTR_WRITE, XSHM_MR_CNTR_READ, XSHM_MR_CNTRS };

struct xshm_mr_entry {
	struct xshm_mr_entry *next;	/* in its bucket */
	uint64_t key;
	uint64_t access;		/* FI_REMOTE_READ, FI_REMOTE_WRITE... */
	uint64_t base;			/* the address of its first byte */
	size_t len;			/* of all its buffers */
	size_t iov_count;
	struct iovec iov[XSHM_IOV_LIMIT];
	struct fid_peer_cntr *cntr[XSHM_MR_CNTRS];	/* or NULL */
};

struct xshm_mr_table {
	struct xshm_mr_entry *buckets[XSHM_MR_BUCKETS];
	uint64_t next_key;		/* provider keys: the last one given */
	size_t count;
};

/* Whether counters bound with fi_mr_bind count entry's remote events. */
static inline bool xshm_mr_entry_counts(const struct xshm_mr_entry *entry)
{
	return entry->cntr[XSHM_MR_CNTR_WRITE] || entry->cntr[XSHM_MR_CNTR_READ];
}

void xshm_mr_table_init(struct xshm_mr_table *table);
/*
 * Adds entry under entry->key (user_key) or a new key of the table's,
 * stored in entry->key; -FI_ENOKEY when a user key is taken.
 */
int xshm_mr_table_insert(struct xshm_mr_table *table,
			 struct xshm_mr_entry *entry, bool user_key);
void xshm_mr_table_remove(struct xshm_mr_table *table,
			  struct xshm_mr_entry *entry);
/*
 * The local buffers under [addr, addr + len) of registration key, into iov
 * (XSHM_IOV_LIMIT entries at most, *count of them), when it grants access:
 * 0, -FI_EINVAL for an unknown key, -FI_EACCES for access not granted or a
 * range outside the registration.  *found is the registration.
 */
int xshm_mr_table_resolve(const struct xshm_mr_table *table, uint64_t key,
			  uint64_t addr, uint64_t len, uint64_t access,
			  struct iovec *iov, size_t *count,
			  const struct xshm_mr_entry **found);

#endif
