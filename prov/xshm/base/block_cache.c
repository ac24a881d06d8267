/* See block_cache.h. */
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/block_cache.h"

/* Before each block: whether it is a small one, kept as malloc aligns. */
struct block_head {
	alignas(max_align_t) bool small;
};

struct free_block {
	struct free_block *next;
};

static struct block_head *head_of(void *block)
{
	return (struct block_head *) block - 1;
}

void *xshm_block_alloc(struct xshm_block_cache *cache, size_t size)
{
	bool small = size <= XSHM_BLOCK_SMALL;
	struct block_head *head;

	if (small && cache->free) {
		struct free_block *block = cache->free;

		cache->free = block->next;
		cache->count--;
		return block;
	}
	head = malloc(sizeof(*head) + (small ? XSHM_BLOCK_SMALL : size));
	if (!head)
		return NULL;
	head->small = small;
	return head + 1;
}

void *xshm_block_zalloc(struct xshm_block_cache *cache, size_t size)
{
	void *block = xshm_block_alloc(cache, size);

	if (block)
		memset(block, 0, size);
	return block;
}

void xshm_block_free(struct xshm_block_cache *cache, void *block)
{
	struct free_block *freed = block;

	if (!block)
		return;
	if (!head_of(block)->small || cache->count >= XSHM_BLOCK_CACHE_MAX) {
		free(head_of(block));
		return;
	}
	freed->next = cache->free;
	cache->free = freed;
	cache->count++;
}

void xshm_block_cache_clear(struct xshm_block_cache *cache)
{
	while (cache->free) {
		struct free_block *block = cache->free;

		cache->free = block->next;
		free(head_of(block));
	}
	cache->count = 0;
}
