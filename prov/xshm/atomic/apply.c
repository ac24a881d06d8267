/*
 * One function per supported pair of operation and datatype, generated per
 * class of types (integers, real numbers, all), in a table indexed by
 * operation and datatype; a NULL entry is a pair xshm does not support.
 * The formulas are fi_atomic(3)'s, elementwise: a = target, b = operand,
 * c = compare value.
 */
#include <complex.h>
#include <stdalign.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>

#include "atomic/apply.h"
#include "shm/layout.h"

typedef long double ldouble;
typedef float complex cfloat;
typedef double complex cdouble;
typedef long double complex cldouble;

/* fn_<name>_<type>: for each element, a = the target, b, c as above. */
#define DEF(name, T, expr)						\
	static void fn_##name##_##T(void *dst, const void *src,		\
				    const void *cmp, size_t count)	\
	{								\
		T *d = dst;						\
		const T *s = src, *k = cmp;				\
									\
		(void) k;						\
		for (size_t i = 0; i < count; i++) {			\
			T a = d[i], b = s ? s[i] : a, c = k ? k[i] : a;	\
									\
			(void) b; (void) c;				\
			d[i] = (expr);					\
		}							\
	}

#define FOR_INT(X, name, expr)						\
	X(name, int8_t, expr) X(name, uint8_t, expr)			\
	X(name, int16_t, expr) X(name, uint16_t, expr)			\
	X(name, int32_t, expr) X(name, uint32_t, expr)			\
	X(name, int64_t, expr) X(name, uint64_t, expr)
#define FOR_REAL(X, name, expr)						\
	FOR_INT(X, name, expr)						\
	X(name, float, expr) X(name, double, expr) X(name, ldouble, expr)
#define FOR_ALL(X, name, expr)						\
	FOR_REAL(X, name, expr)						\
	X(name, cfloat, expr) X(name, cdouble, expr) X(name, cldouble, expr)

/* Table rows: the functions of one operation, by datatype. */
#define ROW_INT(name)							\
	[FI_INT8] = fn_##name##_int8_t, [FI_UINT8] = fn_##name##_uint8_t, \
	[FI_INT16] = fn_##name##_int16_t,				\
	[FI_UINT16] = fn_##name##_uint16_t,				\
	[FI_INT32] = fn_##name##_int32_t,				\
	[FI_UINT32] = fn_##name##_uint32_t,				\
	[FI_INT64] = fn_##name##_int64_t,				\
	[FI_UINT64] = fn_##name##_uint64_t
#define ROW_REAL(name)							\
	ROW_INT(name), [FI_FLOAT] = fn_##name##_float,			\
	[FI_DOUBLE] = fn_##name##_double,				\
	[FI_LONG_DOUBLE] = fn_##name##_ldouble
#define ROW_ALL(name)							\
	ROW_REAL(name), [FI_FLOAT_COMPLEX] = fn_##name##_cfloat,	\
	[FI_DOUBLE_COMPLEX] = fn_##name##_cdouble,			\
	[FI_LONG_DOUBLE_COMPLEX] = fn_##name##_cldouble

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wfloat-equal"
FOR_REAL(DEF, min, b < a ? b : a)
FOR_REAL(DEF, max, b > a ? b : a)
FOR_ALL(DEF, sum, a + b)
FOR_ALL(DEF, prod, a * b)
FOR_ALL(DEF, lor, a || b)
FOR_ALL(DEF, land, a && b)
FOR_INT(DEF, bor, a | b)
FOR_INT(DEF, band, a & b)
FOR_ALL(DEF, lxor, (a && !b) || (!a && b))
FOR_INT(DEF, bxor, a ^ b)
FOR_ALL(DEF, read, a)
FOR_ALL(DEF, write, b)
FOR_ALL(DEF, cswap, c == a ? b : a)
FOR_ALL(DEF, cswap_ne, c != a ? b : a)
FOR_REAL(DEF, cswap_le, c <= a ? b : a)
FOR_REAL(DEF, cswap_lt, c < a ? b : a)
FOR_REAL(DEF, cswap_ge, c >= a ? b : a)
FOR_REAL(DEF, cswap_gt, c > a ? b : a)
FOR_INT(DEF, mswap, (b & c) | (a & ~c))
#pragma GCC diagnostic pop

const xshm_atomic_fn xshm_atomic_fns[FI_ATOMIC_OP_LAST][FI_DATATYPE_LAST] = {
	[FI_MIN] = { ROW_REAL(min) },
	[FI_MAX] = { ROW_REAL(max) },
	[FI_SUM] = { ROW_ALL(sum) },
	[FI_PROD] = { ROW_ALL(prod) },
	[FI_LOR] = { ROW_ALL(lor) },
	[FI_LAND] = { ROW_ALL(land) },
	[FI_BOR] = { ROW_INT(bor) },
	[FI_BAND] = { ROW_INT(band) },
	[FI_LXOR] = { ROW_ALL(lxor) },
	[FI_BXOR] = { ROW_INT(bxor) },
	[FI_ATOMIC_READ] = { ROW_ALL(read) },
	[FI_ATOMIC_WRITE] = { ROW_ALL(write) },
	[FI_CSWAP] = { ROW_ALL(cswap) },
	[FI_CSWAP_NE] = { ROW_ALL(cswap_ne) },
	[FI_CSWAP_LE] = { ROW_REAL(cswap_le) },
	[FI_CSWAP_LT] = { ROW_REAL(cswap_lt) },
	[FI_CSWAP_GE] = { ROW_REAL(cswap_ge) },
	[FI_CSWAP_GT] = { ROW_REAL(cswap_gt) },
	[FI_MSWAP] = { ROW_INT(mswap) },
};

const size_t xshm_atomic_sizes[FI_DATATYPE_LAST] = {
	[FI_INT8] = 1, [FI_UINT8] = 1, [FI_INT16] = 2, [FI_UINT16] = 2,
	[FI_INT32] = 4, [FI_UINT32] = 4, [FI_INT64] = 8, [FI_UINT64] = 8,
	[FI_FLOAT] = sizeof(float), [FI_DOUBLE] = sizeof(double),
	[FI_FLOAT_COMPLEX] = sizeof(cfloat),
	[FI_DOUBLE_COMPLEX] = sizeof(cdouble),
	[FI_LONG_DOUBLE] = sizeof(ldouble),
	[FI_LONG_DOUBLE_COMPLEX] = sizeof(cldouble),
};

const size_t xshm_atomic_aligns[FI_DATATYPE_LAST] = {
	[FI_INT8] = 1, [FI_UINT8] = 1, [FI_INT16] = 2, [FI_UINT16] = 2,
	[FI_INT32] = 4, [FI_UINT32] = 4,
	[FI_INT64] = alignof(int64_t), [FI_UINT64] = alignof(uint64_t),
	[FI_FLOAT] = alignof(float), [FI_DOUBLE] = alignof(double),
	[FI_FLOAT_COMPLEX] = alignof(cfloat),
	[FI_DOUBLE_COMPLEX] = alignof(cdouble),
	[FI_LONG_DOUBLE] = alignof(ldouble),
	[FI_LONG_DOUBLE_COMPLEX] = alignof(cldouble),
};

static_assert(XSHM_ATOMIC_MAX_BYTES % sizeof(cldouble) == 0,
	      "whole elements of the largest datatype");

void xshm_atomic_apply(int op, int datatype, void *dst, const void *src,
		       const void *cmp, size_t count)
{
	xshm_atomic_fns[op][datatype](dst, src, cmp, count);
}
