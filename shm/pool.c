/*
 * Bounce-buffer pool:
 * [struct xshm_pool][pad][bufs...][pad][free map][pad][owner words].
 * Offsets are relative to the pool struct so the pool can sit anywhere in a
 * region.
 *
 * The free map has a bit per buffer, set while it may be free; the owner
 * word decides.  An owner word is 0 while its buffer is free, the
 * borrower's ep_id while borrowed, and XSHM_POOL_PENDING from the moment it
 * is freed until it is free again.  Every step is a single atomic one that
 * can be repeated:
 *   borrow: CAS the owner word from 0 or PENDING to the borrower, then
 *           clear the bit;
 *   free:   CAS it from the borrower to PENDING, set the bit, CAS PENDING
 *           to 0.
 * So a process dying between two steps leaves either a set bit on a buffer
 * it holds (reclaimed with it) or a PENDING buffer whose bit may be clear
 * (xshm_pool_recover_pending sets it), and a late or stale bit costs a
 * borrower a look, never a buffer borrowed twice.
 *
 * Lone sends (XSHM_POOL_WARM) take the first XSHM_POOL_WARM_BYTES of
 * buffers in turn, and the rest, in turn too, only while those are all
 * borrowed, so that the buffers in use stay warm in the caches.  A queue
 * handing out all 2 MiB in turn made a bounce buffer's data come from
 * memory whenever the other path had been chosen for a while, and the path
 * choice's probes of bounce buffers slow (shm/path_choice.h): 128 KiB lone
 * sends took the single copy at 16 to 19 us where bounce buffers took 8.
 * Streams, and every borrower that is not a lone send (XSHM_POOL_ROUND),
 * go round all the buffers: with the warm window, 16 and 64 KiB streams
 * lost 10% of their bandwidth on the 2-core guest.  Taking the lowest free
 * buffer, the one the receiver had just read, cost streams 20 to 28% (the
 * sender's stores wait for the lines in the receiver's cache), and a warm
 * window of 1 MiB left the probes slow.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "pool.h"

#define MAP_BITS	64

static uint64_t align_up(uint64_t value, uint64_t alignment)
{
	return (value + alignment - 1) & ~(alignment - 1);
}

static uint32_t map_words(uint32_t nbufs)
{
	return (nbufs + MAP_BITS - 1) / MAP_BITS;
}

static uint64_t bufs_offset_for(void)
{
	return align_up(sizeof(struct xshm_pool), XSHM_CACHE_LINE);
}

static uint64_t free_map_offset_for(uint32_t nbufs, uint32_t buf_size)
{
	return align_up(bufs_offset_for() + (uint64_t) nbufs * buf_size,
			XSHM_CACHE_LINE);
}

static uint64_t owners_offset_for(uint32_t nbufs, uint32_t buf_size)
{
	return align_up(free_map_offset_for(nbufs, buf_size) +
			(uint64_t) map_words(nbufs) * sizeof(uint64_t),
			XSHM_CACHE_LINE);
}

size_t xshm_pool_bytes(uint32_t nbufs, uint32_t buf_size)
{
	return owners_offset_for(nbufs, buf_size) +
	       (uint64_t) nbufs * sizeof(uint64_t);
}

static _Atomic uint64_t *at_offset(struct xshm_pool *pool, uint64_t offset)
{
	return (_Atomic uint64_t *) ((unsigned char *) pool + offset);
}

/* The bits of word w that name buffers [from, to). */
static uint64_t range_mask(uint32_t w, uint32_t from, uint32_t to)
{
	uint32_t first = w * MAP_BITS;
	uint64_t mask = UINT64_MAX;

	if (from > first)
		mask &= UINT64_MAX << (from - first);
	if (to < first + MAP_BITS)
		mask &= (1ULL << (to - first)) - 1;
	return mask;
}

/* The bits of word w that name buffers. */
static uint64_t word_mask(uint32_t nbufs, uint32_t w)
{
	return range_mask(w, 0, nbufs);
}

static uint32_t warm_bufs(const struct xshm_pool_ref *ref)
{
	uint32_t warm = XSHM_POOL_WARM_BYTES / ref->buf_size;

	return warm < 1 ? 1 : warm > ref->nbufs ? ref->nbufs : warm;
}

void xshm_pool_init(struct xshm_pool *pool, uint32_t nbufs, uint32_t buf_size)
{
	_Atomic uint64_t *owners, *free_map;
	uint32_t i;

	pool->nbufs = nbufs;
	pool->buf_size = buf_size;
	pool->bufs_offset = bufs_offset_for();
	pool->free_map_offset = free_map_offset_for(nbufs, buf_size);
	pool->owners_offset = owners_offset_for(nbufs, buf_size);
	owners = at_offset(pool, pool->owners_offset);
	free_map = at_offset(pool, pool->free_map_offset);
	for (i = 0; i < nbufs; i++)
		atomic_init(&owners[i], 0);
	for (i = 0; i < map_words(nbufs); i++)
		atomic_init(&free_map[i], word_mask(nbufs, i));
}

static int bufs_valid(uint32_t nbufs, uint32_t buf_size, uint64_t bufs_offset,
		      size_t bytes_available)
{
	if (nbufs == 0 || buf_size == 0 || buf_size % XSHM_CACHE_LINE != 0)
		return 0;
	if (bufs_offset < sizeof(struct xshm_pool) ||
	    bufs_offset % XSHM_CACHE_LINE != 0 || bufs_offset > bytes_available)
		return 0;
	return (uint64_t) nbufs * buf_size <= bytes_available - bufs_offset;
}

/* The map lies after the buffers, the owner words after the map. */
static int map_and_owners_valid(uint32_t nbufs, uint64_t bufs_end,
				uint64_t map_offset, uint64_t owners_offset,
				size_t bytes_available)
{
	if (map_offset % sizeof(uint64_t) != 0 || map_offset < bufs_end ||
	    owners_offset % sizeof(uint64_t) != 0 || owners_offset < map_offset ||
	    owners_offset > bytes_available)
		return 0;
	return owners_offset - map_offset >=
		       (uint64_t) map_words(nbufs) * sizeof(uint64_t) &&
	       (uint64_t) nbufs * sizeof(uint64_t) <=
		       bytes_available - owners_offset;
}

int xshm_pool_attach(struct xshm_pool_ref *ref, struct xshm_pool *pool,
		     size_t bytes_available)
{
	volatile struct xshm_pool *shared = pool;
	uint32_t nbufs, buf_size;
	uint64_t bufs_offset, map_offset, owners_offset;

	if ((uintptr_t) pool % 8 != 0 || bytes_available < sizeof(*pool))
		return -EPROTO;
	nbufs = shared->nbufs;
	buf_size = shared->buf_size;
	bufs_offset = shared->bufs_offset;
	map_offset = shared->free_map_offset;
	owners_offset = shared->owners_offset;
	if (!bufs_valid(nbufs, buf_size, bufs_offset, bytes_available) ||
	    !map_and_owners_valid(nbufs, bufs_offset + (uint64_t) nbufs * buf_size,
				  map_offset, owners_offset, bytes_available))
		return -EPROTO;

	ref->bufs = (unsigned char *) pool + bufs_offset;
	ref->free_map = at_offset(pool, map_offset);
	ref->owners = at_offset(pool, owners_offset);
	ref->nbufs = nbufs;
	ref->buf_size = buf_size;
	atomic_init(&ref->next_warm, 0);
	atomic_init(&ref->next_cold, 0);
	atomic_init(&ref->next_round, 0);
	return 0;
}

static bool owner_valid(uint64_t owner)
{
	return owner != 0 && owner != XSHM_POOL_PENDING;
}

/* Take a free (or freed, on its way back) buffer for owner. */
static bool take_buf(const struct xshm_pool_ref *ref, uint32_t index,
		     uint64_t owner)
{
	_Atomic uint64_t *word = &ref->owners[index];
	uint64_t was = atomic_load_explicit(word, memory_order_relaxed);

	return (was == 0 || was == XSHM_POOL_PENDING) &&
	       atomic_compare_exchange_strong_explicit(word, &was, owner,
						       memory_order_acquire,
						       memory_order_relaxed);
}

static void set_free_bit(const struct xshm_pool_ref *ref, uint32_t index)
{
	atomic_fetch_or_explicit(&ref->free_map[index / MAP_BITS],
				 1ULL << (index % MAP_BITS),
				 memory_order_release);
}

/* The first buffer in [from, to) whose bit is set and that owner takes. */
static bool take_first_in(const struct xshm_pool_ref *ref, uint64_t owner,
			  uint32_t from, uint32_t to, uint32_t *index)
{
	for (uint32_t w = from / MAP_BITS; w * MAP_BITS < to; w++) {
		uint64_t bits = atomic_load_explicit(&ref->free_map[w],
						     memory_order_relaxed) &
				range_mask(w, from, to);

		while (bits) {
			uint32_t bit = (uint32_t) __builtin_ctzll(bits);

			bits &= bits - 1;
			if (!take_buf(ref, w * MAP_BITS + bit, owner))
				continue;
			atomic_fetch_and_explicit(&ref->free_map[w],
						  ~(1ULL << bit),
						  memory_order_relaxed);
			*index = w * MAP_BITS + bit;
			return true;
		}
	}
	return false;
}

/*
 * The first in turn from cursor *next in [from, to), which then points past
 * it.  A set bit on a borrowed buffer is one its free set late: skipped,
 * not cleared, because its borrower's next free sets it again.
 */
static bool take_in_turn(const struct xshm_pool_ref *ref, uint64_t owner,
			 _Atomic uint32_t *next, uint32_t from, uint32_t to,
			 uint32_t *index)
{
	uint32_t at = atomic_load_explicit(next, memory_order_relaxed);

	if (at < from || at >= to)
		at = from;
	if (!take_first_in(ref, owner, at, to, index) &&
	    !take_first_in(ref, owner, from, at, index))
		return false;
	atomic_store_explicit(next, *index + 1, memory_order_relaxed);
	return true;
}

/* The warm buffers in turn, then, while those are all borrowed, the rest. */
static bool take_warm_first(const struct xshm_pool_ref *ref, uint64_t owner,
			    struct xshm_pool_ref *local, uint32_t *index)
{
	uint32_t warm = warm_bufs(ref);

	return take_in_turn(ref, owner, &local->next_warm, 0, warm, index) ||
	       take_in_turn(ref, owner, &local->next_cold, warm, ref->nbufs,
			    index);
}

int xshm_pool_alloc(const struct xshm_pool_ref *ref, uint64_t owner,
		    enum xshm_pool_order order, uint32_t *index)
{
	/* hints of this process, not the pool's state */
	struct xshm_pool_ref *local = (struct xshm_pool_ref *) ref;
	bool taken;

	if (!owner_valid(owner))
		return -EINVAL;
	if (order == XSHM_POOL_WARM)
		taken = take_warm_first(ref, owner, local, index);
	else
		taken = take_in_turn(ref, owner, &local->next_round, 0,
				     ref->nbufs, index);
	return taken ? 0 : -EAGAIN;
}

bool xshm_pool_owned_by(const struct xshm_pool_ref *ref, uint32_t index,
			uint64_t owner)
{
	return index < ref->nbufs && owner_valid(owner) &&
	       atomic_load_explicit(&ref->owners[index],
				    memory_order_relaxed) == owner;
}

/* Make a PENDING buffer free; harmless when a borrower took it already. */
static void release_pending(const struct xshm_pool_ref *ref, uint32_t index)
{
	uint64_t pending = XSHM_POOL_PENDING;

	set_free_bit(ref, index);
	atomic_compare_exchange_strong_explicit(&ref->owners[index], &pending,
						0, memory_order_release,
						memory_order_relaxed);
}

/* The free is a CAS from the borrower: a buffer is freed once. */
static bool give_back(const struct xshm_pool_ref *ref, uint32_t index,
		      uint64_t owner)
{
	if (!atomic_compare_exchange_strong_explicit(
		    &ref->owners[index], &owner, XSHM_POOL_PENDING,
		    memory_order_release, memory_order_relaxed))
		return false;
	release_pending(ref, index);
	return true;
}

int xshm_pool_free(const struct xshm_pool_ref *ref, uint32_t index,
		   uint64_t owner)
{
	if (index >= ref->nbufs || !owner_valid(owner) ||
	    !give_back(ref, index, owner))
		return -EINVAL;
	return 0;
}

uint32_t xshm_pool_free_count(const struct xshm_pool_ref *ref)
{
	uint32_t count = 0;

	for (uint32_t w = 0; w < map_words(ref->nbufs); w++)
		count += (uint32_t) __builtin_popcountll(
			atomic_load_explicit(&ref->free_map[w],
					     memory_order_relaxed) &
			word_mask(ref->nbufs, w));
	return count;
}

void *xshm_pool_buf(const struct xshm_pool_ref *ref, uint32_t index)
{
	if (index >= ref->nbufs)
		return NULL;
	return ref->bufs + (size_t) index * ref->buf_size;
}

int xshm_pool_recover_pending(const struct xshm_pool_ref *ref)
{
	int back = 0;

	for (uint32_t i = 0; i < ref->nbufs; i++) {
		if (atomic_load_explicit(&ref->owners[i], memory_order_relaxed) !=
		    XSHM_POOL_PENDING)
			continue;
		release_pending(ref, i);
		back++;
	}
	return back;
}

static bool listed(const uint64_t *list, size_t count, uint64_t value)
{
	for (size_t i = 0; i < count; i++)
		if (list[i] == value)
			return true;
	return false;
}

size_t xshm_pool_borrowers(const struct xshm_pool_ref *ref,
			   uint64_t *borrowers, size_t max)
{
	size_t count = 0;

	for (uint32_t i = 0; i < ref->nbufs && count < max; i++) {
		uint64_t owner = atomic_load_explicit(&ref->owners[i],
						      memory_order_relaxed);

		if (owner_valid(owner) && !listed(borrowers, count, owner))
			borrowers[count++] = owner;
	}
	return count;
}

int xshm_pool_reclaim_owner(const struct xshm_pool_ref *ref, uint64_t owner)
{
	int back = 0;

	if (!owner_valid(owner))
		return 0;
	for (uint32_t i = 0; i < ref->nbufs; i++)
		if (give_back(ref, i, owner))
			back++;
	return back;
}
