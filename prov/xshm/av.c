/*
 * Address vector (FI_AV_TABLE; FI_AV_MAP hands out the same index values).
 * Entries are xshm addresses; a peer's region is mapped on the first send
 * to it.  A hash from endpoint id to index turns the sender id carried by
 * every command into a source fi_addr_t.
 */
#include <stdlib.h>
#include <string.h>

#include "xshm.h"

#define HASH_EMPTY	0
#define HASH_TOMBSTONE	UINT64_MAX

static struct xshm_av *to_av(struct fid_av *av_fid)
{
	return xshm_container_of(av_fid, struct xshm_av, av_fid);
}

static size_t hash_slot(uint64_t key, size_t size)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return key & (size - 1);
}

static void hash_put(struct xshm_av *av, uint64_t key, uint32_t index)
{
	size_t slot = hash_slot(key, av->hash_size);

	while (av->hash_keys[slot] != HASH_EMPTY &&
	       av->hash_keys[slot] != HASH_TOMBSTONE)
		slot = (slot + 1) & (av->hash_size - 1);
	av->hash_keys[slot] = key;
	av->hash_vals[slot] = index;
}

/* Returns the slot holding key, or -1. */
static ssize_t hash_find(const struct xshm_av *av, uint64_t key)
{
	size_t slot = hash_slot(key, av->hash_size);

	for (size_t probes = 0; probes < av->hash_size; probes++) {
		if (av->hash_keys[slot] == HASH_EMPTY)
			return -1;
		if (av->hash_keys[slot] == key)
			return (ssize_t) slot;
		slot = (slot + 1) & (av->hash_size - 1);
	}
	return -1;
}

/* Rebuilds the hash at twice the table capacity (drops tombstones). */
static int hash_rebuild(struct xshm_av *av)
{
	size_t size = 16;
	uint64_t *keys;
	uint32_t *vals;

	while (size < 2 * av->capacity)
		size <<= 1;
	keys = calloc(size, sizeof(*keys));
	vals = calloc(size, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -FI_ENOMEM;
	}
	free(av->hash_keys);
	free(av->hash_vals);
	av->hash_keys = keys;
	av->hash_vals = vals;
	av->hash_size = size;
	for (size_t i = 0; i < av->capacity; i++)
		if (av->table[i].used)
			hash_put(av, av->table[i].addr.ep_id, (uint32_t) i);
	return 0;
}

/* Grows the table to at least want entries (and at least doubles it). */
static int table_grow(struct xshm_av *av, size_t want)
{
	size_t capacity = av->capacity ? av->capacity * 2 : 64;
	struct xshm_av_entry *table;

	if (capacity < want)
		capacity = want;

	table = realloc(av->table, capacity * sizeof(*table));
	if (!table)
		return -FI_ENOMEM;
	memset(table + av->capacity, 0,
	       (capacity - av->capacity) * sizeof(*table));
	av->table = table;
	av->capacity = capacity;
	return hash_rebuild(av);
}

fi_addr_t xshm_av_lookup_ep_id(struct xshm_av *av, uint64_t ep_id)
{
	ssize_t slot;

	if (!av)
		return FI_ADDR_NOTAVAIL;
	slot = hash_find(av, ep_id);
	return slot < 0 ? FI_ADDR_NOTAVAIL : av->hash_vals[slot];
}

static struct xshm_av_entry *entry_of(struct xshm_av *av, fi_addr_t fi_addr)
{
	if (fi_addr >= av->capacity || !av->table[fi_addr].used)
		return NULL;
	return &av->table[fi_addr];
}

int xshm_av_add_ep(struct xshm_av *av, struct xshm_ep *ep)
{
	struct xshm_ep **eps = realloc(av->eps, (av->nr_eps + 1) * sizeof(*eps));

	if (!eps)
		return -FI_ENOMEM;
	eps[av->nr_eps++] = ep;
	av->eps = eps;
	atomic_fetch_add(&av->ref, 1);
	return 0;
}

void xshm_av_remove_ep(struct xshm_av *av, struct xshm_ep *ep)
{
	for (size_t i = 0; i < av->nr_eps; i++) {
		if (av->eps[i] == ep) {
			av->eps[i] = av->eps[--av->nr_eps];
			atomic_fetch_sub(&av->ref, 1);
			return;
		}
	}
}

/* New addresses may name senders of held messages: let the SRXs resolve them. */
static void resolve_unknown_sources(struct xshm_av *av)
{
	for (size_t i = 0; i < av->nr_eps; i++) {
		struct fid_peer_srx *srx = av->eps[i]->srx;

		if (srx)
			srx->owner_ops->foreach_unspec_addr(srx,
							    xshm_rx_src_addr);
	}
}

bool xshm_av_has(struct xshm_av *av, fi_addr_t fi_addr)
{
	return entry_of(av, fi_addr) != NULL;
}

/* The entry for fi_addr with the peer's region mapped. */
int xshm_av_peer(struct xshm_av *av, fi_addr_t fi_addr,
		 struct xshm_av_entry **entry_out)
{
	struct xshm_av_entry *entry = entry_of(av, fi_addr);
	int ret;

	if (!entry)
		return -FI_EINVAL;
	if (entry->peer_mapped && !xshm_region_is_open(&entry->peer)) {
		xshm_region_close(&entry->peer);
		entry->peer_mapped = false;
	}
	if (!entry->peer_mapped) {
		ret = xshm_region_open(&entry->peer, entry->addr.ep_id);
		if (ret == -EAGAIN)
			return -FI_EAGAIN;
		if (ret) {
			XSHM_WARN(FI_LOG_AV, "cannot map peer %s: %s\n",
				  entry->peer.name, strerror(-ret));
			return -FI_EHOSTUNREACH;
		}
		entry->peer_mapped = true;
	}
	*entry_out = entry;
	return 0;
}

static int insert_one(struct xshm_av *av, const struct xshm_addr *addr,
		      fi_addr_t *fi_addr)
{
	size_t index;
	int ret;

	if (addr->node_id != xshm_params.node_id)
		return -FI_EHOSTUNREACH;
	if (hash_find(av, addr->ep_id) >= 0)
		return -FI_EALREADY;
	while (av->lowest_free < av->capacity && av->table[av->lowest_free].used)
		av->lowest_free++;
	if (av->lowest_free == av->capacity) {
		ret = table_grow(av, 0);
		if (ret)
			return ret;
	}
	index = av->lowest_free++;
	av->table[index] = (struct xshm_av_entry) { .addr = *addr, .used = true };
	hash_put(av, addr->ep_id, (uint32_t) index);
	*fi_addr = index;
	return 0;
}

/* Inserts count parsed-or-not addresses; returns how many succeeded. */
static int insert_addrs(struct xshm_av *av, const char *addr, size_t count,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	int *errors = (flags & FI_SYNC_ERR) ? context : NULL;
	int inserted = 0;

	for (size_t i = 0; i < count; i++) {
		struct xshm_addr parsed;
		fi_addr_t out = FI_ADDR_NOTAVAIL;
		size_t len = strnlen(addr, XSHM_ADDR_LEN);
		int ret = xshm_addr_parse(addr, len + (len < XSHM_ADDR_LEN),
					  &parsed);

		if (!ret)
			ret = insert_one(av, &parsed, &out);
		if (!ret)
			inserted++;
		if (fi_addr)
			fi_addr[i] = out;
		if (errors)
			errors[i] = -ret;
		addr += len + 1;
	}
	return inserted;
}

static int xshm_av_insert(struct fid_av *av_fid, const void *addr, size_t count,
			  fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct xshm_av *av = to_av(av_fid);
	int ret;

	if ((!addr && count) || (flags & ~(FI_MORE | FI_SYNC_ERR)))
		return -FI_EINVAL;
	if ((flags & FI_SYNC_ERR) && !context)
		return -FI_EINVAL;
	xshm_lock_acquire(&av->domain->lock);
	ret = insert_addrs(av, addr, count, fi_addr, flags, context);
	if (ret > 0)
		resolve_unknown_sources(av);
	xshm_lock_release(&av->domain->lock);
	return ret;
}

static int xshm_av_insertsvc(struct fid_av *av_fid, const char *node,
			     const char *service, fi_addr_t *fi_addr,
			     uint64_t flags, void *context)
{
	struct xshm_addr addr = { .node_id = xshm_params.node_id };
	char str[XSHM_ADDR_LEN];

	if (!service || !xshm_node_is_local(node))
		return -FI_EINVAL;
	addr.ep_id = xshm_ep_id_for_service(service);
	xshm_addr_format(&addr, str);
	return xshm_av_insert(av_fid, str, 1, fi_addr, flags, context);
}

static int xshm_av_insertsym(struct fid_av *av_fid, const char *node,
			     size_t nodecnt, const char *service, size_t svccnt,
			     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static int xshm_av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr,
			  size_t count, uint64_t flags)
{
	struct xshm_av *av = to_av(av_fid);
	int ret = 0;

	if ((!fi_addr && count) || flags)
		return -FI_EINVAL;
	xshm_lock_acquire(&av->domain->lock);
	for (size_t i = 0; i < count; i++) {
		struct xshm_av_entry *entry = entry_of(av, fi_addr[i]);
		ssize_t slot;

		if (!entry) {
			ret = -FI_EINVAL;
			continue;
		}
		slot = hash_find(av, entry->addr.ep_id);
		if (slot >= 0)
			av->hash_keys[slot] = HASH_TOMBSTONE;
		if (entry->peer_mapped)
			xshm_region_close(&entry->peer);
		memset(entry, 0, sizeof(*entry));
		if (fi_addr[i] < av->lowest_free)
			av->lowest_free = fi_addr[i];
	}
	xshm_lock_release(&av->domain->lock);
	return ret;
}

static int xshm_av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr, void *addr,
			  size_t *addrlen)
{
	struct xshm_av *av = to_av(av_fid);
	struct xshm_av_entry *entry;
	char str[XSHM_ADDR_LEN];

	if (!addrlen || (!addr && *addrlen))
		return -FI_EINVAL;
	xshm_lock_acquire(&av->domain->lock);
	entry = entry_of(av, fi_addr);
	if (entry)
		xshm_addr_format(&entry->addr, str);
	xshm_lock_release(&av->domain->lock);
	if (!entry)
		return -FI_EINVAL;
	memcpy(addr, str, *addrlen < XSHM_ADDR_LEN ? *addrlen : XSHM_ADDR_LEN);
	*addrlen = XSHM_ADDR_LEN;
	return 0;
}

static const char *xshm_av_straddr(struct fid_av *av_fid, const void *addr,
				   char *buf, size_t *len)
{
	size_t n;

	if (!addr || !buf || !len)
		return NULL;
	n = strnlen(addr, XSHM_ADDR_LEN - 1) + 1;
	if (*len) {
		size_t copy = n < *len ? n : *len;

		memcpy(buf, addr, copy - 1);
		buf[copy - 1] = '\0';
	}
	*len = n;
	return buf;
}

static int xshm_av_close(struct fid *fid)
{
	struct xshm_av *av = xshm_container_of(fid, struct xshm_av, av_fid.fid);

	if (atomic_load(&av->ref))
		return -FI_EBUSY;
	for (size_t i = 0; i < av->capacity; i++)
		if (av->table[i].peer_mapped)
			xshm_region_close(&av->table[i].peer);
	atomic_fetch_sub(&av->domain->ref, 1);
	free(av->eps);
	free(av->table);
	free(av->hash_keys);
	free(av->hash_vals);
	free(av);
	return 0;
}

static struct fi_ops xshm_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = xshm_av_close,
	.bind = xshm_fid_no_bind,
	.control = xshm_fid_no_control,
	.ops_open = xshm_fid_no_ops_open,
};

static struct fi_ops_av xshm_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = xshm_av_insert,
	.insertsvc = xshm_av_insertsvc,
	.insertsym = xshm_av_insertsym,
	.remove = xshm_av_remove,
	.lookup = xshm_av_lookup,
	.straddr = xshm_av_straddr,
};

int xshm_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
		 struct fid_av **av_out, void *context)
{
	struct xshm_domain *domain =
		xshm_container_of(domain_fid, struct xshm_domain, domain_fid);
	size_t count = attr ? attr->count : 0;
	struct xshm_av *av;

	if (!attr || attr->rx_ctx_bits)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_TABLE &&
	    attr->type != FI_AV_MAP)
		return -FI_EINVAL;
	if ((attr->flags & FI_PEER) && xshm_av_import(attr, context, &count))
		return -FI_EINVAL;
	if (attr->name || (attr->flags & (FI_EVENT | FI_READ | FI_AV_USER_ID)))
		return -FI_ENOSYS;
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->domain = domain;
	av->type = attr->type == FI_AV_MAP ? FI_AV_MAP : FI_AV_TABLE;
	attr->type = av->type;
	if (table_grow(av, count)) {
		free(av);
		return -FI_ENOMEM;
	}
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &xshm_av_fi_ops;
	av->av_fid.ops = &xshm_av_ops;
	atomic_fetch_add(&domain->ref, 1);
	*av_out = &av->av_fid;
	return 0;
}
