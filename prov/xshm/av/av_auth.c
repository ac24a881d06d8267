/*
 * Authorization keys.  A key is an opaque byte string of 1 to
 * FI_XSHM_AUTH_KEY_MAX bytes.  An endpoint holds at most one: its
 * ep_attr->auth_key, else its domain_attr->auth_key; the digest of that key
 * is written into its region header when it is enabled.
 *
 * Isolation is the receiver's business (a sender is untrusted): a command
 * is accepted only if the sender's region records the receiver's own digest
 * (peer/peer_sender.c).
 *
 * Keys inserted into an AV (fi_av_insert_auth_key) get handles of their own,
 * XSHM_AV_KEY_HANDLE | slot; a named AV shares them with its file.
 */
#include <stdlib.h>
#include <string.h>

#include "av/av.h"
#include "av/av_impl.h"
#include "base/lock.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "xshm/fi_xshm.h"
#include "shm/layout.h"

#define KEYS_MIN	16

uint64_t xshm_auth_digest(const void *key, size_t size)
{
	const unsigned char *bytes = key;
	uint64_t hash = 1469598103934665603ULL ^ size;

	if (!size)
		return 0;
	for (size_t i = 0; i < size; i++)
		hash = (hash ^ bytes[i]) * 1099511628211ULL;
	return hash ? hash : 1;
}

int xshm_auth_info_digest(const struct fi_info *info, uint64_t *digest)
{
	const void *key = NULL;
	size_t size = 0;

	if (info->ep_attr && info->ep_attr->auth_key_size) {
		key = info->ep_attr->auth_key;
		size = info->ep_attr->auth_key_size;
	} else if (info->domain_attr && info->domain_attr->auth_key_size) {
		key = info->domain_attr->auth_key;
		size = info->domain_attr->auth_key_size;
	}
	if (size > FI_XSHM_AUTH_KEY_MAX || (size && !key))
		return -FI_EINVAL;
	*digest = xshm_auth_digest(key, size);
	return 0;
}

/* ---- the keys of an AV ---- */

int xshm_av_keys_init(struct xshm_av *av, size_t count)
{
	av->keys = calloc(count, sizeof(*av->keys));
	if (!av->keys)
		return -FI_ENOMEM;
	av->keys_capacity = count;
	return 0;
}

void xshm_av_keys_fini(struct xshm_av *av)
{
	free(av->keys);
}

struct xshm_av_key *xshm_av_key_of(struct xshm_av *av, fi_addr_t handle,
				   uint32_t *slot)
{
	uint64_t index = handle & ~XSHM_AV_KEY_HANDLE;

	xshm_av_catch_up(av);
	if (!(handle & XSHM_AV_KEY_HANDLE) || index >= av->keys_capacity ||
	    !av->keys[index].used)
		return NULL;
	if (slot)
		*slot = (uint32_t) index;
	return &av->keys[index];
}

void xshm_av_key_set(struct xshm_av *av, uint32_t slot, const void *bytes,
		     uint32_t size)
{
	struct xshm_av_key *key = &av->keys[slot];

	key->used = true;
	key->size = size;
	memcpy(key->bytes, bytes, size);
	key->digest = xshm_auth_digest(bytes, size);
	key->user_id = FI_ADDR_NOTAVAIL;
}

void xshm_av_key_clear(struct xshm_av *av, uint32_t slot)
{
	memset(&av->keys[slot], 0, sizeof(av->keys[slot]));
}

static int claim_key_slot(struct xshm_av *av, uint32_t *slot)
{
	struct xshm_av_key *keys;
	size_t capacity;

	for (size_t i = 0; i < av->keys_capacity; i++) {
		if (!av->keys[i].used) {
			*slot = (uint32_t) i;
			return 0;
		}
	}
	if (av->shared)
		return -FI_ENOSPC;
	capacity = av->keys_capacity ? 2 * av->keys_capacity : KEYS_MIN;
	keys = realloc(av->keys, capacity * sizeof(*keys));
	if (!keys)
		return -FI_ENOMEM;
	memset(keys + av->keys_capacity, 0,
	       (capacity - av->keys_capacity) * sizeof(*keys));
	*slot = (uint32_t) av->keys_capacity;
	av->keys = keys;
	av->keys_capacity = capacity;
	return 0;
}

static int insert_key(struct xshm_av *av, const void *bytes, size_t size,
		      fi_addr_t *fi_addr)
{
	uint32_t slot;
	int ret = xshm_av_write_begin(av);

	if (ret)
		return ret;
	ret = claim_key_slot(av, &slot);
	if (!ret) {
		xshm_av_key_set(av, slot, bytes, (uint32_t) size);
		if (av->shared)
			xshm_av_shared_put_key(av, slot);
		*fi_addr = XSHM_AV_KEY_HANDLE | slot;
	}
	xshm_av_write_end(av);
	return ret;
}

int xshm_av_insert_auth_key(struct fid_av *av_fid, const void *auth_key,
			    size_t auth_key_size, fi_addr_t *fi_addr,
			    uint64_t flags)
{
	struct xshm_av *av = xshm_to_av(av_fid);
	int ret;

	if (!auth_key || !fi_addr || flags || !auth_key_size ||
	    auth_key_size > FI_XSHM_AUTH_KEY_MAX)
		return -FI_EINVAL;
	if (xshm_av_read_only(av))
		return -FI_EACCES;
	xshm_lock_acquire(&av->domain->lock);
	ret = insert_key(av, auth_key, auth_key_size, fi_addr);
	xshm_lock_release(&av->domain->lock);
	return ret;
}

static const struct xshm_av_key *key_for_lookup(struct xshm_av *av,
						fi_addr_t fi_addr)
{
	struct xshm_av_entry *entry;

	if (fi_addr & XSHM_AV_KEY_HANDLE)
		return xshm_av_key_of(av, fi_addr, NULL);
	entry = xshm_av_entry_of(av, fi_addr);
	if (!entry || entry->auth_key >= av->keys_capacity)
		return NULL;
	return av->keys[entry->auth_key].used ? &av->keys[entry->auth_key] : NULL;
}

/* A key handle, or an address inserted with FI_AUTH_KEY: its key. */
int xshm_av_lookup_auth_key(struct fid_av *av_fid, fi_addr_t fi_addr,
			    void *auth_key, size_t *auth_key_size)
{
	struct xshm_av *av = xshm_to_av(av_fid);
	const struct xshm_av_key *key;
	int ret = 0;

	if (!auth_key_size || (*auth_key_size && !auth_key))
		return -FI_EINVAL;
	xshm_lock_acquire(&av->domain->lock);
	key = key_for_lookup(av, fi_addr);
	if (!key) {
		ret = (fi_addr & XSHM_AV_KEY_HANDLE) ||
		      !xshm_av_entry_of(av, fi_addr) ? -FI_EINVAL : -FI_ENODATA;
	} else {
		memcpy(auth_key, key->bytes,
		       *auth_key_size < key->size ? *auth_key_size : key->size);
		*auth_key_size = key->size;
	}
	xshm_lock_release(&av->domain->lock);
	return ret;
}

/* An endpoint is enabled against a key when its region carries its digest. */
static bool key_in_use(const struct xshm_av *av, const struct xshm_av_key *key)
{
	for (size_t i = 0; i < av->nr_eps; i++)
		if (av->eps[i]->enabled && av->eps[i]->auth_digest == key->digest)
			return true;
	return false;
}

static void unlink_key(struct xshm_av *av, uint32_t slot)
{
	for (size_t i = 0; i < av->capacity; i++) {
		struct xshm_av_entry *entry = &av->table[i];

		if (entry->used && entry->auth_key == slot) {
			entry->auth_key = XSHM_AV_NO_KEY;
			if (av->shared)
				xshm_av_shared_put(av, i, &entry->addr,
						   XSHM_AV_NO_KEY);
		}
	}
	xshm_av_key_clear(av, slot);
	if (av->shared)
		xshm_av_shared_put_key(av, slot);
}

/* fi_av_remove with FI_AUTH_KEY, between write_begin and write_end: all or none. */
int xshm_av_remove_keys(struct xshm_av *av, const fi_addr_t *handles,
			size_t count)
{
	uint32_t slot;

	for (size_t i = 0; i < count; i++) {
		struct xshm_av_key *key = xshm_av_key_of(av, handles[i], &slot);

		if (!key)
			return -FI_EINVAL;
		if (key_in_use(av, key))
			return -FI_EBUSY;
	}
	for (size_t i = 0; i < count; i++)
		if (xshm_av_key_of(av, handles[i], &slot))
			unlink_key(av, slot);
	return 0;
}
