/*
 * Atomic operations on plain memory (apply.c): which pairs of operation
 * and datatype xshm supports, their element sizes, and applying one to an
 * array.  Pure: no endpoint, no locks; the caller serializes (data/
 * atomic_target.c).  The pairs are those of libfabric's own shm: integers
 * take every operation, float, double and long double all but the bitwise
 * ones and FI_MSWAP, the complex types all but those, FI_MIN, FI_MAX and
 * the ordered compares.
 */
#ifndef XSHM_ATOMIC_APPLY_H
#define XSHM_ATOMIC_APPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>

#include "shm/layout.h"

/*
 * The tables behind the calls below (apply.c): each supported pair's
 * function, NULL for the others, and each datatype's element size and
 * alignment.  The calls are inline: both sides of every atomic ask them.
 */
typedef void (*xshm_atomic_fn)(void *dst, const void *src, const void *cmp,
			       size_t count);
extern const xshm_atomic_fn xshm_atomic_fns[FI_ATOMIC_OP_LAST]
					   [FI_DATATYPE_LAST];
extern const size_t xshm_atomic_sizes[FI_DATATYPE_LAST];
extern const size_t xshm_atomic_aligns[FI_DATATYPE_LAST];

/* Which operations each kind of call takes (fi_atomic(3)). */
static inline bool xshm_atomic_kind_takes(int kind, int op)
{
	switch (kind) {
	case XSHM_ATOMIC_WRITE:
		return op <= FI_BXOR || op == FI_ATOMIC_WRITE;
	case XSHM_ATOMIC_FETCH:
		return op <= FI_ATOMIC_WRITE;
	case XSHM_ATOMIC_COMPARE:
		return op >= FI_CSWAP && op <= FI_MSWAP;
	default:
		return false;
	}
}

/* The kinds, as struct xshm_atomic names them: XSHM_ATOMIC_WRITE... */
static inline bool xshm_atomic_supported(int kind, int op, int datatype)
{
	return (unsigned) op < FI_ATOMIC_OP_LAST &&
	       (unsigned) datatype < FI_DATATYPE_LAST &&
	       xshm_atomic_kind_takes(kind, op) &&
	       xshm_atomic_fns[op][datatype];
}

/* Bytes of one element of datatype, 0 for one xshm does not know. */
static inline size_t xshm_atomic_type_size(int datatype)
{
	return (unsigned) datatype < FI_DATATYPE_LAST ?
	       xshm_atomic_sizes[datatype] : 0;
}

/* Whether p may hold elements of datatype, as xshm_atomic_apply takes them. */
static inline bool xshm_atomic_aligned(int datatype, const void *p)
{
	return (unsigned) datatype < FI_DATATYPE_LAST &&
	       (uintptr_t) p % xshm_atomic_aligns[datatype] == 0;
}
/*
 * Applies op to count elements of datatype at dst, with operands src and,
 * for compares, cmp (NULL otherwise); a supported pair only.  dst, src and
 * cmp are aligned for datatype.  Reads (FI_ATOMIC_READ) leave dst as it is.
 */
void xshm_atomic_apply(int op, int datatype, void *dst, const void *src,
		       const void *cmp, size_t count);

#endif
