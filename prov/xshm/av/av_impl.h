/*
 * What the address vector files share among themselves:
 *   av.c         fi_av_open/close/bind, the ops tables, argument checks
 *   av_insert.c  insert, insertsvc, insertsym, remove (and FI_EVENT)
 *   av_table.c   the process-private table, index allocation, the hash
 *   av_peers.c   each entry's peer (peer/), found on the first send
 *   av_shared.c  named AVs: the table in a shared-memory file
 *   av_user_id.c user ids and the source reported for a sender
 *   av_auth.c    authorization keys and their digests
 * Every function here is called with the domain lock held.
 */
#ifndef XSHM_AV_IMPL_H
#define XSHM_AV_IMPL_H

#include "av/av.h"
#include "base/list.h"

/* Key handles live apart from table indices so that both can be told apart. */
#define XSHM_AV_KEY_HANDLE	(1ULL << 62)

static inline struct xshm_av *xshm_to_av(struct fid_av *av_fid)
{
	return xshm_container_of(av_fid, struct xshm_av, av_fid);
}

static inline bool xshm_av_read_only(const struct xshm_av *av)
{
	return av->flags & FI_READ;
}

/* av_table.c */
int xshm_av_table_init(struct xshm_av *av, size_t count);
void xshm_av_table_fini(struct xshm_av *av);
struct xshm_av_entry *xshm_av_entry_of(struct xshm_av *av, fi_addr_t fi_addr);
ssize_t xshm_av_find(struct xshm_av *av, uint64_t ep_id);
/* The lowest unused index, growing a private table when full. */
int xshm_av_claim_index(struct xshm_av *av, size_t *index);
void xshm_av_entry_set(struct xshm_av *av, size_t index,
		       const struct xshm_addr *addr, uint32_t auth_key);
void xshm_av_entry_clear(struct xshm_av *av, size_t index);

/* av_peers.c: the entry lets go of its peer, once the spares in it are back. */
void xshm_av_entry_unpeer(struct xshm_av *av, struct xshm_av_entry *entry);

/*
 * Changes to the table (entries and keys) happen between write_begin and
 * write_end: for a named AV, under the shared lock, after catching up with
 * the other processes, and mirrored into the file.
 */
int xshm_av_write_begin(struct xshm_av *av);
void xshm_av_write_end(struct xshm_av *av);
void xshm_av_store(struct xshm_av *av, size_t index,
		   const struct xshm_addr *addr, uint32_t auth_key);
void xshm_av_erase(struct xshm_av *av, size_t index);

/* av_shared.c */
int xshm_av_shared_open(struct xshm_av *av, struct fi_av_attr *attr);
void xshm_av_shared_close(struct xshm_av *av);
/* Unlink named-AV files whose writers all died; returns how many. */
int xshm_av_shared_reclaim_stale(void);
/* Catches up with what other processes changed (cheap when nothing did). */
void xshm_av_shared_sync(struct xshm_av *av);
int xshm_av_shared_lock(struct xshm_av *av);
void xshm_av_shared_unlock(struct xshm_av *av);
void xshm_av_shared_put(struct xshm_av *av, size_t index,
			const struct xshm_addr *addr, uint32_t auth_key);
void xshm_av_shared_put_key(struct xshm_av *av, size_t slot);

static inline void xshm_av_catch_up(struct xshm_av *av)
{
	if (av->shared)
		xshm_av_shared_sync(av);
}

/* av_user_id.c */
fi_addr_t xshm_av_default_src_id(const struct xshm_av *av, size_t index);
int xshm_av_set_user_id(struct fid_av *av_fid, fi_addr_t fi_addr,
			fi_addr_t user_id, uint64_t flags);

/* av_auth.c */
int xshm_av_keys_init(struct xshm_av *av, size_t count);
void xshm_av_keys_fini(struct xshm_av *av);
struct xshm_av_key *xshm_av_key_of(struct xshm_av *av, fi_addr_t handle,
				   uint32_t *slot);
void xshm_av_key_set(struct xshm_av *av, uint32_t slot, const void *bytes,
		     uint32_t size);
void xshm_av_key_clear(struct xshm_av *av, uint32_t slot);
int xshm_av_remove_keys(struct xshm_av *av, const fi_addr_t *handles,
			size_t count);
int xshm_av_insert_auth_key(struct fid_av *av_fid, const void *auth_key,
			    size_t auth_key_size, fi_addr_t *fi_addr,
			    uint64_t flags);
int xshm_av_lookup_auth_key(struct fid_av *av_fid, fi_addr_t fi_addr,
			    void *auth_key, size_t *auth_key_size);
uint64_t xshm_auth_digest(const void *key, size_t size);

/* av_insert.c */
int xshm_av_insert(struct fid_av *av_fid, const void *addr, size_t count,
		   fi_addr_t *fi_addr, uint64_t flags, void *context);
int xshm_av_insertsvc(struct fid_av *av_fid, const char *node,
		      const char *service, fi_addr_t *fi_addr, uint64_t flags,
		      void *context);
int xshm_av_insertsym(struct fid_av *av_fid, const char *node, size_t nodecnt,
		      const char *service, size_t svccnt, fi_addr_t *fi_addr,
		      uint64_t flags, void *context);
int xshm_av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr, size_t count,
		   uint64_t flags);

#endif
