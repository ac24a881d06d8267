/*
 * Published registrations (struct xshm_mr_pub in every endpoint region):
 * what an RMA initiator needs to copy into or out of the owner's memory by
 * itself, checked, and a pin protocol so that it never copies after the
 * owner's fi_close(mr) has returned.
 *
 * Owner (under its domain lock, one writer per table):
 *   publish: find a slot that is not live and has no holders, write key,
 *     base, len, local, access, events (relaxed), then state = next
 *     generation | live with RELEASE: an initiator that reads the live
 *     state with ACQUIRE sees the fields.
 *   unpublish: state = next generation, not live, SEQ_CST; then for each
 *     holder slot wait (SEQ_CST loads) until it is 0 or names a dead
 *     process (cleared by CAS).  Only then may the memory go.
 * Initiator:
 *   1. s = state (ACQUIRE), live, key matches;
 *   2. claim a free holder slot: CAS 0 -> self (SEQ_CST); none free: -EBUSY
 *      (the caller takes the target-driven path);
 *   3. re-read state (SEQ_CST): not s any more -> release, -EBUSY;
 *   4. check access and range from the fields, copy, release the slot
 *      (RELEASE store of 0: the copy, a finished system call, precedes it).
 * Checking without a pin (an operation the owner applies itself, whose
 * memory the initiator never touches): 1, then the fields, an ACQUIRE fence
 * and state again, unchanged or -EBUSY: a seqlock, the owner's RELEASE
 * fence before it rewrites the fields of a withdrawn entry its other half.
 * Why SEQ_CST in 2, 3 and unpublish: it is Dekker's pattern, a store then a
 * load of another location on each side.  In the single order of SEQ_CST
 * operations either the initiator's claim precedes the owner's scan of that
 * slot (the owner waits for it) or the owner's dead store precedes the
 * initiator's re-read (the initiator sees it and backs off): never both
 * missed.  Holding a pin on an unchanged live state also keeps the owner
 * from rewriting the fields, so those read after step 3 are the entry's.
 *
 * A holder is a process: pid << 32 | the low 32 bits of its start time, so
 * that one killed while pinned (it copies nothing any more) is told from a
 * live one and its slot cleared.  A holder that is alive but stopped
 * (SIGSTOP, a debugger) keeps unpublish waiting: memory must not go while
 * it may still be written.
 */
#ifndef XSHM_SHM_MR_PUB_H
#define XSHM_SHM_MR_PUB_H

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"

/* What the owner publishes about one registration. */
struct xshm_mr_pub_desc {
	uint64_t key;
	uint64_t base;
	uint64_t len;
	uint64_t local;
	uint32_t access;	/* XSHM_MR_PUB_READ | XSHM_MR_PUB_WRITE */
	bool events;
};

/*
 * Owner: publish desc; 0, or -ENOSPC when no slot is free within reach
 * (counted in pub->unpublished: the registration goes the owner's way).
 */
int xshm_mr_pub_add(struct xshm_mr_pub *pub,
		    const struct xshm_mr_pub_desc *desc);
/* Owner: a registration that is not published (counted). */
void xshm_mr_pub_skip(struct xshm_mr_pub *pub);
/*
 * Owner: withdraw key (or its count in unpublished, when it was not
 * published) and wait until no live process holds it.
 */
void xshm_mr_pub_remove(struct xshm_mr_pub *pub, uint64_t key);
/* Owner: the counters bound to key changed: events owed or not. */
void xshm_mr_pub_set_events(struct xshm_mr_pub *pub, uint64_t key,
			    bool events);
/* Owner: withdraw everything (its endpoint closes), waiting as remove. */
void xshm_mr_pub_clear(struct xshm_mr_pub *pub);

/* An initiator's pin on one entry. */
struct xshm_mr_pin {
	struct xshm_mr_pub_entry *entry;
	unsigned holder;
	uint64_t local;		/* the owner's address of the asked addr */
	bool events;		/* the owner must see this operation */
};

/*
 * Initiator: pin key for [addr, addr + len) with access; 0 pinned (release
 * with xshm_mr_pub_unpin), -ENOENT no such key live, -EACCES access or
 * range refused (nothing pinned), -EBUSY no holder slot or a race with the
 * owner (nothing pinned).
 */
int xshm_mr_pub_pin(struct xshm_mr_pub *pub, uint64_t key, uint64_t addr,
		    uint64_t len, uint32_t access, struct xshm_mr_pin *pin);
void xshm_mr_pub_unpin(struct xshm_mr_pin *pin);
/*
 * What an initiator's last check of one table found: an entry live under
 * state, and its fields as read then.  While the entry's state is still
 * that, the owner has rewritten none of them (a withdrawal changes the
 * state first, and generations never come back), so a check of the same
 * key needs only that one load.  All zero: nothing seen.
 */
struct xshm_mr_pub_seen {
	struct xshm_mr_pub_entry *entry;
	uint64_t state;
	uint64_t key;
	uint64_t base;
	uint64_t len;
	uint32_t access;
};

/*
 * Initiator: whether key grants access to [addr, addr + len), as
 * xshm_mr_pub_pin answers, pinning nothing: it holds when checked only.
 * Answered from seen while its entry's state is unchanged, else from the
 * table (seen refreshed); a zeroed seen asks the table.  Posted adds
 * streamed to one target took 65 instructions an operation asking the
 * table each time.
 */
int xshm_mr_pub_check_seen(struct xshm_mr_pub *pub,
			   struct xshm_mr_pub_seen *seen, uint64_t key,
			   uint64_t addr, uint64_t len, uint32_t access);

/* This process as a holder: pid << 32 | its start time's low bits. */
uint64_t xshm_mr_pub_self(void);
/* Whether a holder word names a process that still runs. */
bool xshm_mr_pub_holder_alive(uint64_t holder);

#endif
