/*
 * The published registrations and their pins: the protocol and its memory
 * orders are in mr_pub.h.
 */
#include <errno.h>
#include <sched.h>
#include <time.h>

#include "mr_pub.h"
#include "proc.h"

#define SLOT_MASK		(XSHM_MR_PUB_SLOTS - 1)
/* Spins on a holder before looking its process up, then between looks. */
#define HOLDER_SPINS		256
#define HOLDER_NAP_NS		20000

static unsigned home_of(uint64_t key)
{
	return (unsigned) ((key * 0x9e3779b97f4a7c15ULL) >> 58) & SLOT_MASK;
}

static bool is_live(uint64_t state)
{
	return state & 1;
}

static bool has_holders(struct xshm_mr_pub_entry *entry)
{
	for (unsigned i = 0; i < XSHM_MR_PUB_HOLDERS; i++)
		if (atomic_load_explicit(&entry->holder[i],
					 memory_order_seq_cst))
			return true;
	return false;
}

/* Holders of a dead entry are claimants about to back off: wait them out. */
static bool slot_free(struct xshm_mr_pub_entry *entry)
{
	uint64_t state = atomic_load_explicit(&entry->state,
					      memory_order_relaxed);

	return !is_live(state) && !has_holders(entry);
}

static void write_fields(struct xshm_mr_pub_entry *entry,
			 const struct xshm_mr_pub_desc *desc)
{
	/*
	 * RELEASE: an unpinned reader (xshm_mr_pub_check_seen) that reads one of
	 * the fields below then sees the withdrawal before them.
	 */
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&entry->key, desc->key, memory_order_relaxed);
	atomic_store_explicit(&entry->base, desc->base, memory_order_relaxed);
	atomic_store_explicit(&entry->len, desc->len, memory_order_relaxed);
	atomic_store_explicit(&entry->local, desc->local, memory_order_relaxed);
	atomic_store_explicit(&entry->access, desc->access,
			      memory_order_relaxed);
	atomic_store_explicit(&entry->events, desc->events,
			      memory_order_relaxed);
}

/* The next generation, live or not. */
static uint64_t next_state(uint64_t state, bool live)
{
	return (((state >> 1) + 1) << 1) | (live ? 1 : 0);
}

int xshm_mr_pub_add(struct xshm_mr_pub *pub,
		    const struct xshm_mr_pub_desc *desc)
{
	unsigned home = home_of(desc->key);

	for (unsigned i = 0; i < XSHM_MR_PUB_SLOTS; i++) {
		struct xshm_mr_pub_entry *entry =
			&pub->slots[(home + i) & SLOT_MASK];
		uint64_t state;

		if (!slot_free(entry))
			continue;
		/* Initiators probe this far before their first look. */
		if (i > atomic_load_explicit(&pub->probe_max,
					     memory_order_relaxed))
			atomic_store_explicit(&pub->probe_max, i,
					      memory_order_seq_cst);
		write_fields(entry, desc);
		state = atomic_load_explicit(&entry->state,
					     memory_order_relaxed);
		atomic_store_explicit(&entry->state, next_state(state, true),
				      memory_order_release);
		return 0;
	}
	xshm_mr_pub_skip(pub);
	return -ENOSPC;
}

void xshm_mr_pub_skip(struct xshm_mr_pub *pub)
{
	atomic_fetch_add_explicit(&pub->unpublished, 1, memory_order_seq_cst);
}

/* The owner's live entry of key, or NULL. */
static struct xshm_mr_pub_entry *owner_find(struct xshm_mr_pub *pub,
					    uint64_t key)
{
	unsigned home = home_of(key);
	unsigned reach = atomic_load_explicit(&pub->probe_max,
					      memory_order_relaxed);

	for (unsigned i = 0; i <= reach && i < XSHM_MR_PUB_SLOTS; i++) {
		struct xshm_mr_pub_entry *entry =
			&pub->slots[(home + i) & SLOT_MASK];

		if (is_live(atomic_load_explicit(&entry->state,
						 memory_order_relaxed)) &&
		    atomic_load_explicit(&entry->key, memory_order_relaxed) ==
		    key)
			return entry;
	}
	return NULL;
}

/* Until holder is free or names a dead process (then freed here). */
static void wait_holder(_Atomic uint64_t *holder)
{
	unsigned spins = 0;
	uint64_t who;

	while ((who = atomic_load_explicit(holder, memory_order_seq_cst))) {
		if (++spins < HOLDER_SPINS) {
			sched_yield();
			continue;
		}
		if (!xshm_mr_pub_holder_alive(who)) {
			atomic_compare_exchange_strong(holder, &who, 0);
			continue;
		}
		nanosleep(&(struct timespec) { .tv_nsec = HOLDER_NAP_NS },
			  NULL);
	}
}

static void withdraw(struct xshm_mr_pub_entry *entry)
{
	uint64_t state = atomic_load_explicit(&entry->state,
					      memory_order_relaxed);

	atomic_store_explicit(&entry->state, next_state(state, false),
			      memory_order_seq_cst);
	for (unsigned i = 0; i < XSHM_MR_PUB_HOLDERS; i++)
		wait_holder(&entry->holder[i]);
}

void xshm_mr_pub_remove(struct xshm_mr_pub *pub, uint64_t key)
{
	struct xshm_mr_pub_entry *entry = owner_find(pub, key);

	if (entry)
		withdraw(entry);
	else
		atomic_fetch_sub_explicit(&pub->unpublished, 1,
					  memory_order_seq_cst);
}

void xshm_mr_pub_set_events(struct xshm_mr_pub *pub, uint64_t key,
			    bool events)
{
	struct xshm_mr_pub_entry *entry = owner_find(pub, key);

	/* SEQ_CST: an initiator that pins after this sees it. */
	if (entry)
		atomic_store_explicit(&entry->events, events,
				      memory_order_seq_cst);
}

void xshm_mr_pub_clear(struct xshm_mr_pub *pub)
{
	atomic_store_explicit(&pub->serves, 0, memory_order_seq_cst);
	for (unsigned i = 0; i < XSHM_MR_PUB_SLOTS; i++)
		if (is_live(atomic_load_explicit(&pub->slots[i].state,
						 memory_order_relaxed)))
			withdraw(&pub->slots[i]);
}

/* An initiator's live entry of key, its state in *state, or NULL. */
static struct xshm_mr_pub_entry *find_live(struct xshm_mr_pub *pub,
					   uint64_t key, uint64_t *state)
{
	unsigned home = home_of(key);
	unsigned reach = atomic_load_explicit(&pub->probe_max,
					      memory_order_acquire);

	for (unsigned i = 0; i <= reach && i < XSHM_MR_PUB_SLOTS; i++) {
		struct xshm_mr_pub_entry *entry =
			&pub->slots[(home + i) & SLOT_MASK];

		*state = atomic_load_explicit(&entry->state,
					      memory_order_acquire);
		if (is_live(*state) &&
		    atomic_load_explicit(&entry->key, memory_order_relaxed) ==
		    key)
			return entry;
	}
	return NULL;
}

static int claim_holder(struct xshm_mr_pub_entry *entry, uint64_t self)
{
	for (unsigned i = 0; i < XSHM_MR_PUB_HOLDERS; i++) {
		uint64_t none = 0;

		if (!atomic_load_explicit(&entry->holder[i],
					  memory_order_relaxed) &&
		    atomic_compare_exchange_strong(&entry->holder[i], &none,
						   self))
			return (int) i;
	}
	return -1;
}

/* Access and the whole range, written so that no sum can wrap around. */
static int check_fields(uint64_t base, uint64_t size, uint32_t granted,
			uint64_t addr, uint64_t len, uint32_t access)
{
	if ((granted & access) != access)
		return -EACCES;
	if (addr < base || len > size || addr - base > size - len)
		return -EACCES;
	return 0;
}

static int check_entry(struct xshm_mr_pub_entry *entry, uint64_t addr,
		       uint64_t len, uint32_t access)
{
	return check_fields(
		atomic_load_explicit(&entry->base, memory_order_relaxed),
		atomic_load_explicit(&entry->len, memory_order_relaxed),
		atomic_load_explicit(&entry->access, memory_order_relaxed),
		addr, len, access);
}

int xshm_mr_pub_pin(struct xshm_mr_pub *pub, uint64_t key, uint64_t addr,
		    uint64_t len, uint32_t access, struct xshm_mr_pin *pin)
{
	uint64_t self = xshm_mr_pub_self();
	struct xshm_mr_pub_entry *entry;
	uint64_t state;
	int slot, ret;

	entry = find_live(pub, key, &state);
	if (!entry)
		return -ENOENT;
	if (!self || (slot = claim_holder(entry, self)) < 0)
		return -EBUSY;
	pin->entry = entry;
	pin->holder = (unsigned) slot;
	if (atomic_load_explicit(&entry->state, memory_order_seq_cst) != state) {
		xshm_mr_pub_unpin(pin);
		return -EBUSY;
	}
	ret = check_entry(entry, addr, len, access);
	if (ret) {
		xshm_mr_pub_unpin(pin);
		return ret;
	}
	pin->local = atomic_load_explicit(&entry->local, memory_order_relaxed) +
		     (addr - atomic_load_explicit(&entry->base,
						  memory_order_relaxed));
	pin->events = atomic_load_explicit(&entry->events,
					   memory_order_seq_cst);
	return 0;
}

/*
 * The check without a pin, from the table: the entry's fields between two
 * reads of its state (the seqlock of mr_pub.h), kept in seen when live.
 */
static int check_afresh(struct xshm_mr_pub *pub, struct xshm_mr_pub_seen *seen,
			uint64_t key, uint64_t addr, uint64_t len,
			uint32_t access)
{
	struct xshm_mr_pub_seen now = { .key = key };

	seen->entry = NULL;
	now.entry = find_live(pub, key, &now.state);
	if (!now.entry)
		return -ENOENT;
	now.base = atomic_load_explicit(&now.entry->base, memory_order_relaxed);
	now.len = atomic_load_explicit(&now.entry->len, memory_order_relaxed);
	now.access = atomic_load_explicit(&now.entry->access,
					  memory_order_relaxed);
	/* ACQUIRE: the fields read above come before the state read below. */
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&now.entry->state, memory_order_relaxed) !=
	    now.state)
		return -EBUSY;
	*seen = now;
	return check_fields(now.base, now.len, now.access, addr, len, access);
}

int xshm_mr_pub_check_seen(struct xshm_mr_pub *pub,
			   struct xshm_mr_pub_seen *seen, uint64_t key,
			   uint64_t addr, uint64_t len, uint32_t access)
{
	/* ACQUIRE, as find_live's: the entry is the one seen, still live */
	if (seen->entry && seen->key == key &&
	    atomic_load_explicit(&seen->entry->state, memory_order_acquire) ==
	    seen->state)
		return check_fields(seen->base, seen->len, seen->access, addr,
				    len, access);
	return check_afresh(pub, seen, key, addr, len, access);
}

void xshm_mr_pub_unpin(struct xshm_mr_pin *pin)
{
	atomic_store_explicit(&pin->entry->holder[pin->holder], 0,
			      memory_order_release);
}

static _Atomic pid_t self_pid;
static _Atomic uint64_t self_word;

uint64_t xshm_mr_pub_self(void)
{
	pid_t pid = xshm_proc_self();
	uint64_t start;

	/* Computed again in a forked child, whose pid differs. */
	if (atomic_load_explicit(&self_pid, memory_order_acquire) == pid)
		return atomic_load_explicit(&self_word, memory_order_relaxed);
	if (xshm_proc_start_time(pid, &start))
		return 0;
	atomic_store_explicit(&self_word,
			      (uint64_t) (uint32_t) pid << 32 | (uint32_t) start,
			      memory_order_relaxed);
	atomic_store_explicit(&self_pid, pid, memory_order_release);
	return atomic_load_explicit(&self_word, memory_order_relaxed);
}

bool xshm_mr_pub_holder_alive(uint64_t holder)
{
	pid_t pid = (pid_t) (holder >> 32);
	uint64_t start;

	if (pid <= 0 || !xshm_proc_pid_alive(pid))
		return false;
	/* Unreadable: counted alive, so that unpublish only waits longer. */
	if (xshm_proc_start_time(pid, &start))
		return true;
	return (uint32_t) start == (uint32_t) holder;
}
