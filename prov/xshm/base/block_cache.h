/*
 * The heap blocks of operations that wait: a send or an RMA operation in
 * its queue, one waiting for its ack, a fetching atomic waiting for its old
 * values.  Such an operation takes a block and gives it back each time, and
 * malloc and free cost a fifth of a fetching atomic's instructions, so an
 * endpoint keeps the small blocks it gave back and hands them out again.
 * Blocks of up to XSHM_BLOCK_SMALL bytes are cached, at most
 * XSHM_BLOCK_CACHE_MAX of them; larger ones are plain heap blocks.  Every
 * block from xshm_block_alloc goes back through xshm_block_free.  Not
 * thread-safe: the endpoint's users hold its domain's lock.
 */
#ifndef XSHM_BASE_BLOCK_CACHE_H
#define XSHM_BASE_BLOCK_CACHE_H

#include <stddef.h>

#define XSHM_BLOCK_SMALL	512
#define XSHM_BLOCK_CACHE_MAX	256

struct xshm_block_cache {
	void *free;		/* the blocks given back, linked through them */
	unsigned count;
};

/* size bytes, uninitialised, aligned as malloc's; NULL when out of memory. */
void *xshm_block_alloc(struct xshm_block_cache *cache, size_t size);
/* size bytes, zeroed. */
void *xshm_block_zalloc(struct xshm_block_cache *cache, size_t size);
void xshm_block_free(struct xshm_block_cache *cache, void *block);
/* Frees the cached blocks; the cache stays usable. */
void xshm_block_cache_clear(struct xshm_block_cache *cache);

#endif
