/* The map from network source keys to AV indices (netsrc.h). */
#include <stdlib.h>

#include "netsrc.h"

uint64_t xlink_netsrc_key(const void *net_addr, size_t len)
{
	const unsigned char *bytes = net_addr;
	uint64_t hash = 1469598103934665603ULL;	/* FNV-1a */

	for (size_t i = 0; i < len; i++)
		hash = (hash ^ bytes[i]) * 1099511628211ULL;
	return hash ? hash : 1;
}

/* The slot of key, or the empty slot where it would go. */
static struct xlink_netsrc_slot *probe(const struct xlink_netsrc *map, uint64_t key)
{
	size_t mask = map->cap - 1;

	for (size_t i = key & mask;; i = (i + 1) & mask)
		if (map->slots[i].key == key || !map->slots[i].key)
			return &map->slots[i];
}

/* Keeps at most half the slots in use, so that probe always ends. */
static int grow(struct xlink_netsrc *map)
{
	struct xlink_netsrc old = *map;
	size_t cap = old.cap ? old.cap * 2 : 64;

	map->slots = calloc(cap, sizeof(*map->slots));
	if (!map->slots) {
		*map = old;
		return -FI_ENOMEM;
	}
	map->cap = cap;
	map->used = 0;
	for (size_t i = 0; i < old.cap; i++) {
		if (old.slots[i].index == FI_ADDR_NOTAVAIL || !old.slots[i].key)
			continue;
		*probe(map, old.slots[i].key) = old.slots[i];
		map->used++;
	}
	free(old.slots);
	return 0;
}

fi_addr_t xlink_netsrc_find(const struct xlink_netsrc *map, uint64_t key)
{
	const struct xlink_netsrc_slot *slot;

	if (!map->cap || !key)
		return FI_ADDR_NOTAVAIL;
	slot = probe(map, key);
	return slot->key ? slot->index : FI_ADDR_NOTAVAIL;
}

int xlink_netsrc_add(struct xlink_netsrc *map, uint64_t key, fi_addr_t index)
{
	struct xlink_netsrc_slot *slot;

	if ((map->used + 1) * 2 > map->cap && grow(map))
		return -FI_ENOMEM;
	slot = probe(map, key);
	if (!slot->key) {
		slot->key = key;
		slot->index = index;
		map->used++;
	} else if (slot->index == FI_ADDR_NOTAVAIL) {
		slot->index = index;
	}
	return 0;
}

void xlink_netsrc_remove(struct xlink_netsrc *map, uint64_t key, fi_addr_t index)
{
	struct xlink_netsrc_slot *slot;

	if (!map->cap)
		return;
	slot = probe(map, key);
	if (slot->key && slot->index == index)
		slot->index = FI_ADDR_NOTAVAIL;
}

void xlink_netsrc_fini(struct xlink_netsrc *map)
{
	free(map->slots);
	*map = (struct xlink_netsrc){ 0 };
}
