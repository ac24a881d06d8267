/*
 * Authorization keys.  A key is an opaque byte string of 1 to
 * FI_XSHM_AUTH_KEY_MAX bytes.  An endpoint holds at most one: its
 * ep_attr->auth_key, else its domain_attr->auth_key; the digest of that key
 * is written into its region header when it is enabled.
 *
 * Isolation is the receiver's business (a sender is untrusted): a command
 * is accepted only if the sender's region records the receiver's own digest.
 * The digest read from a sender's region is cached per sender, with the
 * region kept mapped so that its closing (and an id reused by a new
 * endpoint) is noticed.  A sender whose region is already gone when its
 * first command is read can be checked no more: only a receiver without a
 * key accepts it.
 *
 * Keys inserted into an AV (fi_av_insert_auth_key) get handles of their own,
 * XSHM_AV_KEY_HANDLE | slot; a named AV shares them with its file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "av/av.h"
#include "av/av_impl.h"
#include "base/addr.h"
#include "base/lock.h"
#include "base/provider.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "xshm/fi_xshm.h"
#include "shm/layout.h"
#include "shm/liveness.h"
#include "shm/proc.h"
#include "shm/region.h"

#define KEYS_MIN	16
#define SENDERS_MIN	64

struct xshm_sender {
	uint64_t ep_id;			/* 0: an empty slot */
	uint64_t digest;
	bool mapped;
	bool warned;
	struct xshm_region region;
	struct xshm_owner owner;	/* of the last region mapped; 0: none */
	uint64_t src_gen;		/* av->gen src_index was found at */
	ssize_t src_index;		/* in the table; -1: not in the AV */
};

struct xshm_av_senders {
	struct xshm_sender *slots;
	size_t size;			/* power of two */
	size_t used;
	struct xshm_sender *last;	/* most recently looked up; NULL after growth */
};

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

static void senders_fini(struct xshm_av *av);

void xshm_av_keys_fini(struct xshm_av *av)
{
	free(av->keys);
	senders_fini(av);
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

/* ---- receiver-side isolation ---- */

static size_t sender_slot(uint64_t ep_id, size_t size)
{
	ep_id ^= ep_id >> 31;
	ep_id *= 0x9e3779b97f4a7c15ULL;
	return (ep_id >> 17) & (size - 1);
}

static struct xshm_sender *sender_probe(struct xshm_av_senders *senders,
					uint64_t ep_id)
{
	size_t slot = sender_slot(ep_id, senders->size);

	while (senders->slots[slot].ep_id && senders->slots[slot].ep_id != ep_id)
		slot = (slot + 1) & (senders->size - 1);
	return &senders->slots[slot];
}

static int senders_grow(struct xshm_av_senders *senders)
{
	size_t size = senders->size ? 2 * senders->size : SENDERS_MIN;
	struct xshm_sender *old = senders->slots;
	size_t old_size = senders->size;

	senders->slots = calloc(size, sizeof(*senders->slots));
	if (!senders->slots) {
		senders->slots = old;
		return -FI_ENOMEM;
	}
	senders->size = size;
	senders->last = NULL;
	for (size_t i = 0; i < old_size; i++)
		if (old[i].ep_id)
			*sender_probe(senders, old[i].ep_id) = old[i];
	free(old);
	return 0;
}

static struct xshm_sender *sender_add(struct xshm_av *av, uint64_t ep_id)
{
	struct xshm_av_senders *senders = av->senders;
	struct xshm_sender *sender;

	if (!senders) {
		senders = av->senders = calloc(1, sizeof(*senders));
		if (!senders)
			return NULL;
	}
	if (2 * (senders->used + 1) > senders->size && senders_grow(senders))
		return NULL;
	sender = sender_probe(senders, ep_id);
	if (!sender->ep_id) {
		sender->ep_id = ep_id;
		senders->used++;
	}
	senders->last = sender;
	return sender;
}

static inline struct xshm_sender *sender_get(struct xshm_av *av,
					     uint64_t ep_id)
{
	struct xshm_av_senders *senders = av->senders;

	/* Messages come in runs from one sender: skip the hash for those. */
	if (senders && senders->last && senders->last->ep_id == ep_id)
		return senders->last;
	return sender_add(av, ep_id);
}

/* Maps the sender's region anew: 0, or the error of xshm_region_open. */
static int sender_refresh(struct xshm_sender *sender)
{
	int ret;

	if (sender->mapped)
		xshm_region_close(&sender->region);
	ret = xshm_region_open(&sender->region, sender->ep_id);
	sender->mapped = !ret;
	if (sender->mapped) {
		sender->digest = sender->region.hdr->auth_digest;
		sender->owner = xshm_region_owner(&sender->region);
	}
	return ret;
}

static void senders_fini(struct xshm_av *av)
{
	struct xshm_av_senders *senders = av->senders;

	if (!senders)
		return;
	for (size_t i = 0; i < senders->size; i++)
		if (senders->slots[i].mapped)
			xshm_region_close(&senders->slots[i].region);
	free(senders->slots);
	free(senders);
	av->senders = NULL;
}

static bool verdict(struct xshm_ep *ep, struct xshm_sender *sender)
{
	bool allowed = sender->mapped ? sender->digest == ep->auth_digest :
					!ep->auth_digest;

	if (!allowed && !sender->warned) {
		XSHM_WARN(FI_LOG_EP_DATA, "sender %016llx holds another "
			  "authorization key: its messages are dropped\n",
			  (unsigned long long) sender->ep_id);
		sender->warned = true;
	}
	return allowed;
}

/*
 * The mapped region of a sender, from the same cache: acks and single-copy
 * pulls use it too, so each sender is mapped once per AV.  NULL once gone.
 */
struct xshm_region *xshm_av_sender_region(struct xshm_av *av, uint64_t ep_id)
{
	struct xshm_sender *sender = sender_get(av, ep_id);

	if (!sender)
		return NULL;
	if (!sender->mapped || !xshm_region_is_open(&sender->region))
		sender_refresh(sender);
	return sender->mapped ? &sender->region : NULL;
}

/* The cached sender, without adding one; NULL if not mapped. */
static struct xshm_region *sender_cached(struct xshm_av *av, uint64_t ep_id)
{
	struct xshm_sender *sender;

	if (!av || !av->senders || !av->senders->size)
		return NULL;
	sender = sender_probe(av->senders, ep_id);
	return sender->ep_id && sender->mapped ? &sender->region : NULL;
}

struct xshm_owner xshm_av_sender_owner(struct xshm_av *av, uint64_t ep_id)
{
	struct xshm_region *region = sender_cached(av, ep_id);

	if (!region || !xshm_region_is_open(region))
		return (struct xshm_owner) { .pid = 0 };
	return xshm_region_owner(region);
}

void xshm_av_sender_retire(struct xshm_av *av, uint64_t ep_id,
			   struct xshm_owner dead)
{
	struct xshm_region *region = sender_cached(av, ep_id);

	if (region && xshm_owner_same(xshm_region_owner(region), dead))
		xshm_region_retire(region, dead);
}

/*
 * A region gone before it was ever mapped here (its endpoint closed, or a
 * process that found its owner dead removed it) still names its creator,
 * unless a service named it: the process now running with that pid, or a
 * dead one.  A pid taken over since only makes the source live longer.
 */
static struct xshm_owner creator_of(uint64_t ep_id)
{
	struct xshm_owner owner = { .pid = xshm_ep_id_creator(ep_id) };

	if (owner.pid > 0 && xshm_proc_start_time(owner.pid, &owner.start_time))
		owner.start_time = 0;	/* gone: matches no process */
	return owner;
}

/*
 * A region that is gone (its endpoint closed, or its process found dead)
 * is looked for again under its name, where a new endpoint may have opened;
 * when none is there, the process that held the last one is the answer, so
 * that a source that died stays dead however often it is asked about.
 */
struct xshm_owner xshm_av_source_process(struct xshm_av *av, uint64_t ep_id)
{
	struct xshm_sender *sender = av ? sender_get(av, ep_id) : NULL;

	if (!sender)
		return (struct xshm_owner) { .pid = 0 };
	if ((!sender->mapped || !xshm_region_is_open(&sender->region)) &&
	    sender_refresh(sender) == -ENOENT && !sender->owner.pid)
		sender->owner = creator_of(ep_id);
	return sender->owner;
}

/*
 * An address (re)inserted into the AV: a cached region of a dead process
 * at that address is retired, so that its new owner is mapped instead.
 */
void xshm_av_sender_recheck(struct xshm_av *av, uint64_t ep_id)
{
	struct xshm_region *region = sender_cached(av, ep_id);
	struct xshm_owner owner;

	if (!region || !xshm_region_is_open(region))
		return;
	owner = xshm_region_owner(region);
	if (!xshm_owner_alive(owner))
		xshm_region_retire(region, owner);
}

/*
 * Whether ep takes messages from sender_ep_id; *out is its slot in the
 * senders' cache, or NULL for ep itself, an endpoint without AV, or no
 * memory for the slot.
 */
static inline bool admits(struct xshm_ep *ep, uint64_t sender_ep_id,
			  struct xshm_sender **out)
{
	struct xshm_sender *sender;

	*out = NULL;
	if (!ep->av || sender_ep_id == ep->addr.ep_id)
		return true;
	sender = sender_get(ep->av, sender_ep_id);
	if (!sender)
		return !ep->auth_digest;
	*out = sender;
	/* The usual sender: still there, with this endpoint's key. */
	if (sender->mapped && sender->digest == ep->auth_digest &&
	    xshm_region_is_open(&sender->region))
		return true;
	if (!sender->mapped || !xshm_region_is_open(&sender->region))
		sender_refresh(sender);
	return verdict(ep, sender);
}

bool xshm_av_sender_allowed(struct xshm_ep *ep, uint64_t sender_ep_id)
{
	struct xshm_sender *sender;

	return admits(ep, sender_ep_id, &sender);
}

/* The sender's source address, found once per change of the table. */
static fi_addr_t sender_src(struct xshm_av *av, struct xshm_sender *sender)
{
	xshm_av_catch_up(av);
	if (sender->src_gen != av->gen) {
		sender->src_index = xshm_av_find(av, sender->ep_id);
		sender->src_gen = av->gen;
	}
	return sender->src_index < 0 ? FI_ADDR_NOTAVAIL :
				       av->table[sender->src_index].src_id;
}

/*
 * xshm_av_sender_allowed, then the source as xshm_av_lookup_ep_id finds
 * it, in one look at the sender: what every incoming message asks.
 */
bool xshm_av_sender_src(struct xshm_ep *ep, uint64_t sender_ep_id,
			fi_addr_t *src)
{
	struct xshm_sender *sender;

	if (!admits(ep, sender_ep_id, &sender))
		return false;
	*src = sender ? sender_src(ep->av, sender) :
			xshm_av_lookup_ep_id(ep->av, sender_ep_id);
	return true;
}
