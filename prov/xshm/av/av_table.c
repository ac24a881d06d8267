/*
 * The process-private table of an AV: entries by index (FI_AV_TABLE: the
 * lowest unused slot), each pointing at its peer from the first send to it
 * on, and a hash from endpoint id to index for the receive path.  A named AV
 * mirrors the table of its shared file here (av_shared.c).
 */
#include <stdlib.h>
#include <string.h>

#include "av/av.h"
#include "av/av_impl.h"
#include "base/addr.h"
#include "shm/layout.h"

#define HASH_EMPTY	0
#define HASH_TOMBSTONE	UINT64_MAX
#define TABLE_MIN	64

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

static void hash_remove(struct xshm_av *av, uint64_t key, size_t index)
{
	ssize_t slot = hash_find(av, key);

	if (slot >= 0 && av->hash_vals[slot] == index)
		av->hash_keys[slot] = HASH_TOMBSTONE;
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
	av->gen++;
	for (size_t i = 0; i < av->capacity; i++)
		if (av->table[i].used)
			hash_put(av, av->table[i].addr.ep_id, (uint32_t) i);
	return 0;
}

/* Grows the table to at least want entries (and at least doubles it). */
static int table_grow(struct xshm_av *av, size_t want)
{
	size_t capacity = av->capacity ? av->capacity * 2 : TABLE_MIN;
	struct xshm_av_entry *table;

	if (capacity < want)
		capacity = want;
	if (capacity > UINT32_MAX)
		return -FI_ENOSPC;
	table = realloc(av->table, capacity * sizeof(*table));
	if (!table)
		return -FI_ENOMEM;
	memset(table + av->capacity, 0,
	       (capacity - av->capacity) * sizeof(*table));
	av->table = table;
	av->capacity = capacity;
	return hash_rebuild(av);
}

int xshm_av_table_init(struct xshm_av *av, size_t count)
{
	return table_grow(av, count);
}

void xshm_av_table_fini(struct xshm_av *av)
{
	for (size_t i = 0; i < av->capacity; i++)
		xshm_av_entry_unpeer(av, &av->table[i]);
	free(av->table);
	free(av->hash_keys);
	free(av->hash_vals);
}

ssize_t xshm_av_find(struct xshm_av *av, uint64_t ep_id)
{
	ssize_t slot = hash_find(av, ep_id);

	return slot < 0 ? -1 : (ssize_t) av->hash_vals[slot];
}

/*
 * Every command is looked up, and they come in runs from one sender: the
 * last answer holds until the table changes (av->gen).  The source itself
 * is read from the entry, where user ids are set.
 */
fi_addr_t xshm_av_lookup_ep_id(struct xshm_av *av, uint64_t ep_id)
{
	if (!av)
		return FI_ADDR_NOTAVAIL;
	xshm_av_catch_up(av);
	if (av->last_ep_id != ep_id || av->last_gen != av->gen) {
		av->last_index = xshm_av_find(av, ep_id);
		av->last_ep_id = ep_id;
		av->last_gen = av->gen;
	}
	return av->last_index < 0 ? FI_ADDR_NOTAVAIL :
				    av->table[av->last_index].src_id;
}

fi_addr_t xshm_av_src_find(struct xshm_av *av, struct xshm_peer *peer)
{
	xshm_av_catch_up(av);
	if (peer->src_av != av || peer->src_gen != av->gen) {
		peer->src_index = xshm_av_find(av, peer->ep_id);
		peer->src_av = av;
		peer->src_gen = av->gen;
	}
	return peer->src_index < 0 ? FI_ADDR_NOTAVAIL :
				     av->table[peer->src_index].src_id;
}

struct xshm_av_entry *xshm_av_entry_of(struct xshm_av *av, fi_addr_t fi_addr)
{
	xshm_av_catch_up(av);
	if (fi_addr >= av->capacity || !av->table[fi_addr].used)
		return NULL;
	return &av->table[fi_addr];
}

bool xshm_av_has(struct xshm_av *av, fi_addr_t fi_addr)
{
	return av && xshm_av_entry_of(av, fi_addr) != NULL;
}

int xshm_av_claim_index(struct xshm_av *av, size_t *index)
{
	while (av->lowest_free < av->capacity && av->table[av->lowest_free].used)
		av->lowest_free++;
	if (av->lowest_free == av->capacity) {
		int ret = av->shared ? -FI_ENOSPC : table_grow(av, 0);

		if (ret)
			return ret;
	}
	*index = av->lowest_free++;
	return 0;
}

void xshm_av_entry_set(struct xshm_av *av, size_t index,
		       const struct xshm_addr *addr, uint32_t auth_key)
{
	av->table[index] = (struct xshm_av_entry) {
		.addr = *addr, .used = true, .auth_key = auth_key,
		.src_id = xshm_av_default_src_id(av, index),
	};
	hash_put(av, addr->ep_id, (uint32_t) index);
	av->gen++;
}

void xshm_av_entry_clear(struct xshm_av *av, size_t index)
{
	struct xshm_av_entry *entry = &av->table[index];

	if (!entry->used)
		return;
	hash_remove(av, entry->addr.ep_id, index);
	av->gen++;
	xshm_av_entry_unpeer(av, entry);
	memset(entry, 0, sizeof(*entry));
	if (index < av->lowest_free)
		av->lowest_free = index;
}

int xshm_av_write_begin(struct xshm_av *av)
{
	return av->shared ? xshm_av_shared_lock(av) : 0;
}

void xshm_av_write_end(struct xshm_av *av)
{
	if (av->shared)
		xshm_av_shared_unlock(av);
}

void xshm_av_store(struct xshm_av *av, size_t index,
		   const struct xshm_addr *addr, uint32_t auth_key)
{
	xshm_av_entry_set(av, index, addr, auth_key);
	if (av->shared)
		xshm_av_shared_put(av, index, addr, auth_key);
}

void xshm_av_erase(struct xshm_av *av, size_t index)
{
	xshm_av_entry_clear(av, index);
	if (av->shared)
		xshm_av_shared_put(av, index, NULL, XSHM_AV_NO_KEY);
}
