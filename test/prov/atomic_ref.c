/* The atomic tests' reference (atomic_ref.h). */
#include "atomic_ref.h"

#include <stdint.h>

static bool is_int(enum fi_datatype dt)
{
	return dt <= FI_UINT64;
}

static bool is_complex(enum fi_datatype dt)
{
	return dt == FI_FLOAT_COMPLEX || dt == FI_DOUBLE_COMPLEX ||
	       dt == FI_LONG_DOUBLE_COMPLEX;
}

bool ref_supported(int kind, enum fi_op op, enum fi_datatype dt)
{
	if ((unsigned) dt >= FI_DATATYPE_LAST)
		return false;
	switch (op) {
	case FI_MIN: case FI_MAX:
		return kind != REF_COMPARE && !is_complex(dt);
	case FI_SUM: case FI_PROD: case FI_LOR: case FI_LAND: case FI_LXOR:
	case FI_ATOMIC_WRITE:
		return kind != REF_COMPARE;
	case FI_BOR: case FI_BAND: case FI_BXOR:
		return kind != REF_COMPARE && is_int(dt);
	case FI_ATOMIC_READ:
		return kind == REF_FETCH;
	case FI_CSWAP: case FI_CSWAP_NE:
		return kind == REF_COMPARE;
	case FI_CSWAP_LE: case FI_CSWAP_LT: case FI_CSWAP_GE: case FI_CSWAP_GT:
		return kind == REF_COMPARE && !is_complex(dt);
	case FI_MSWAP:
		return kind == REF_COMPARE && is_int(dt);
	default:
		return false;
	}
}

size_t ref_size(enum fi_datatype dt)
{
	static const size_t sizes[] = { 1, 1, 2, 2, 4, 4, 8, 8, sizeof(float),
		sizeof(double), sizeof(float complex), sizeof(double complex),
		sizeof(long double), sizeof(long double complex) };

	return sizes[dt];
}

#define LOAD(T) (((const T *) buf)[i])

long double complex ref_load(enum fi_datatype dt, const void *buf, size_t i)
{
	switch (dt) {
	case FI_INT8: return LOAD(int8_t);
	case FI_UINT8: return LOAD(uint8_t);
	case FI_INT16: return LOAD(int16_t);
	case FI_UINT16: return LOAD(uint16_t);
	case FI_INT32: return LOAD(int32_t);
	case FI_UINT32: return LOAD(uint32_t);
	case FI_INT64: return LOAD(int64_t);
	case FI_UINT64: return LOAD(uint64_t);
	case FI_FLOAT: return LOAD(float);
	case FI_DOUBLE: return LOAD(double);
	case FI_FLOAT_COMPLEX: return LOAD(float complex);
	case FI_DOUBLE_COMPLEX: return LOAD(double complex);
	case FI_LONG_DOUBLE: return LOAD(long double);
	default: return LOAD(long double complex);
	}
}

#define STORE(T, v) (((T *) buf)[i] = (T) (v))

void ref_store(enum fi_datatype dt, void *buf, size_t i, long double complex v)
{
	long double re = creall(v);

	switch (dt) {
	case FI_INT8: STORE(int8_t, (int64_t) re); break;
	case FI_UINT8: STORE(uint8_t, (int64_t) re); break;
	case FI_INT16: STORE(int16_t, (int64_t) re); break;
	case FI_UINT16: STORE(uint16_t, (int64_t) re); break;
	case FI_INT32: STORE(int32_t, (int64_t) re); break;
	case FI_UINT32: STORE(uint32_t, (int64_t) re); break;
	case FI_INT64: STORE(int64_t, (int64_t) re); break;
	case FI_UINT64: STORE(uint64_t, (int64_t) re); break;
	case FI_FLOAT: STORE(float, re); break;
	case FI_DOUBLE: STORE(double, re); break;
	case FI_FLOAT_COMPLEX: STORE(float complex, v); break;
	case FI_DOUBLE_COMPLEX: STORE(double complex, v); break;
	case FI_LONG_DOUBLE: STORE(long double, re); break;
	default: STORE(long double complex, v); break;
	}
}

/*
 * Small values, so that every result is exact in every type: zeros for
 * the logical operations, equal, smaller and larger compare values.
 */
void ref_fill(enum fi_datatype dt, void *target, void *operand, void *compare)
{
	static const int t[REF_ELEMS] = { 3, 5, 0, 2, 6, 0 };
	static const int o[REF_ELEMS] = { 5, 0, 1, 2, 3, 0 };
	static const int c[REF_ELEMS] = { 3, 4, 7, 9, 6, 1 };
	long double complex im = is_complex(dt) ? I : 0;

	for (size_t i = 0; i < REF_ELEMS; i++) {
		ref_store(dt, target, i, t[i] + im * (t[i] % 2));
		ref_store(dt, operand, i, o[i] + im * (o[i] % 3));
		ref_store(dt, compare, i, c[i] + im * (c[i] % 2));
	}
}

static bool truth(long double complex v)
{
	return v != 0;
}

static int64_t bits(long double complex v)
{
	return (int64_t) creall(v);
}

static long double complex one(enum fi_op op, long double complex a,
			       long double complex b, long double complex c)
{
	long double ra = creall(a), rb = creall(b), rc = creall(c);

	switch (op) {
	case FI_MIN: return rb < ra ? b : a;
	case FI_MAX: return rb > ra ? b : a;
	case FI_SUM: return a + b;
	case FI_PROD: return a * b;
	case FI_LOR: return truth(a) || truth(b);
	case FI_LAND: return truth(a) && truth(b);
	case FI_LXOR: return truth(a) != truth(b);
	case FI_BOR: return bits(a) | bits(b);
	case FI_BAND: return bits(a) & bits(b);
	case FI_BXOR: return bits(a) ^ bits(b);
	case FI_ATOMIC_READ: return a;
	case FI_ATOMIC_WRITE: return b;
	case FI_CSWAP: return c == a ? b : a;
	case FI_CSWAP_NE: return c != a ? b : a;
	case FI_CSWAP_LE: return rc <= ra ? b : a;
	case FI_CSWAP_LT: return rc < ra ? b : a;
	case FI_CSWAP_GE: return rc >= ra ? b : a;
	case FI_CSWAP_GT: return rc > ra ? b : a;
	case FI_MSWAP: return (bits(b) & bits(c)) | (bits(a) & ~bits(c));
	default: return a;
	}
}

void ref_apply(enum fi_op op, enum fi_datatype dt, void *target,
	       const void *operand, const void *compare, size_t count)
{
	for (size_t i = 0; i < count; i++)
		ref_store(dt, target, i, one(op, ref_load(dt, target, i),
					     ref_load(dt, operand, i),
					     ref_load(dt, compare, i)));
}

const char *ref_op_name(enum fi_op op)
{
	static const char *names[] = { "MIN", "MAX", "SUM", "PROD", "LOR",
		"LAND", "BOR", "BAND", "LXOR", "BXOR", "READ", "WRITE", "CSWAP",
		"CSWAP_NE", "CSWAP_LE", "CSWAP_LT", "CSWAP_GE", "CSWAP_GT",
		"MSWAP" };

	return (unsigned) op < FI_ATOMIC_OP_LAST ? names[op] : "?";
}
