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

/* The kinds, as struct xshm_atomic names them: XSHM_ATOMIC_WRITE... */
bool xshm_atomic_supported(int kind, int op, int datatype);
/* Bytes of one element of datatype, 0 for one xshm does not know. */
size_t xshm_atomic_type_size(int datatype);
/* Whether p may hold elements of datatype, as xshm_atomic_apply takes them. */
bool xshm_atomic_aligned(int datatype, const void *p);
/*
 * Applies op to count elements of datatype at dst, with operands src and,
 * for compares, cmp (NULL otherwise); a supported pair only.  dst, src and
 * cmp are aligned for datatype.  Reads (FI_ATOMIC_READ) leave dst as it is.
 */
void xshm_atomic_apply(int op, int datatype, void *dst, const void *src,
		       const void *cmp, size_t count);

#endif
