/*
 * The atomic tests' reference (atomic_ref.c), written from fi_atomic(3)
 * apart from the provider's: which pairs libfabric's shm supports, element
 * values by datatype, and what each operation leaves.
 */
#ifndef XT_ATOMIC_REF_H
#define XT_ATOMIC_REF_H

#include <complex.h>
#include <stdbool.h>
#include <stddef.h>

#include <rdma/fi_atomic.h>

enum { REF_WRITE, REF_FETCH, REF_COMPARE, REF_KINDS };

#define REF_MAX_BYTES	960	/* fi_xshm(7): one atomic's bytes at most */
#define REF_ELEMS	6	/* the elements the data tests use */

bool ref_supported(int kind, enum fi_op op, enum fi_datatype dt);
size_t ref_size(enum fi_datatype dt);
long double complex ref_load(enum fi_datatype dt, const void *buf, size_t i);
void ref_store(enum fi_datatype dt, void *buf, size_t i, long double complex v);
/* Element i of the target's, the operands' and the compare values' sets. */
void ref_fill(enum fi_datatype dt, void *target, void *operand, void *compare);
/* The target after op, element by element. */
void ref_apply(enum fi_op op, enum fi_datatype dt, void *target,
	       const void *operand, const void *compare, size_t count);
const char *ref_op_name(enum fi_op op);

#endif
