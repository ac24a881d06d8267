/* See copy.h for why this is not just memcpy. */
#include <stdint.h>
#include <string.h>

#ifdef __x86_64__
#include <immintrin.h>
#endif

#include "copy.h"

#ifdef __x86_64__
/* 64 bytes a step, unaligned loads and stores; memcpy does the tail. */
static void copy_loop_sse2(unsigned char *dst, const unsigned char *src,
			   size_t len)
{
	for (; len >= 64; len -= 64, dst += 64, src += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *) src);
		__m128i b = _mm_loadu_si128((const __m128i *) (src + 16));
		__m128i c = _mm_loadu_si128((const __m128i *) (src + 32));
		__m128i d = _mm_loadu_si128((const __m128i *) (src + 48));

		_mm_storeu_si128((__m128i *) dst, a);
		_mm_storeu_si128((__m128i *) (dst + 16), b);
		_mm_storeu_si128((__m128i *) (dst + 32), c);
		_mm_storeu_si128((__m128i *) (dst + 48), d);
	}
	memcpy(dst, src, len);
}

__attribute__((target("avx2")))
static void copy_loop_avx2(unsigned char *dst, const unsigned char *src,
			   size_t len)
{
	for (; len >= 64; len -= 64, dst += 64, src += 64) {
		__m256i a = _mm256_loadu_si256((const __m256i *) src);
		__m256i b = _mm256_loadu_si256((const __m256i *) (src + 32));

		_mm256_storeu_si256((__m256i *) dst, a);
		_mm256_storeu_si256((__m256i *) (dst + 32), b);
	}
	memcpy(dst, src, len);
}

void xshm_copy(void *dst, const void *src, size_t len)
{
	if (len < XSHM_COPY_LOOP_MIN || len > XSHM_COPY_LOOP_MAX) {
		/* a 0-byte receive may name no buffer: memcpy's NULL is UB */
		if (len)
			memcpy(dst, src, len);
		return;
	}
	/* libgcc's start-up code has read the CPU's features: one load */
	if (__builtin_cpu_supports("avx2"))
		copy_loop_avx2(dst, src, len);
	else
		copy_loop_sse2(dst, src, len);
}

/*
 * Whole cache lines with non-temporal stores, from dst's first line
 * boundary: a line written partly so would be read back from memory to be
 * merged.  The bytes before and after go through the cache.
 */
void xshm_copy_streaming(void *dst, const void *src, size_t len)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	size_t head = (64 - ((uintptr_t) d & 63)) & 63;

	if (len < head + 64) {
		memcpy(d, s, len);
		return;
	}
	memcpy(d, s, head);
	d += head;
	s += head;
	len -= head;
	for (; len >= 64; len -= 64, d += 64, s += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *) s);
		__m128i b = _mm_loadu_si128((const __m128i *) (s + 16));
		__m128i c = _mm_loadu_si128((const __m128i *) (s + 32));
		__m128i e = _mm_loadu_si128((const __m128i *) (s + 48));

		_mm_stream_si128((__m128i *) d, a);
		_mm_stream_si128((__m128i *) (d + 16), b);
		_mm_stream_si128((__m128i *) (d + 32), c);
		_mm_stream_si128((__m128i *) (d + 48), e);
	}
	memcpy(d, s, len);
	_mm_sfence();
}
#else
void xshm_copy(void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
}

void xshm_copy_streaming(void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
}
#endif

/* 32 bytes at any alignment: one vector move where the CPU has them. */
typedef unsigned char half_step __attribute__((vector_size(32), aligned(1),
					       may_alias));

/*
 * 64 bytes a step from the end down, each step loaded whole before it is
 * stored; memmove does the first len % 64.  Inlined into a version for
 * AVX2, whose vector moves are 32 bytes, and one for any CPU.
 */
static inline __attribute__((always_inline))
void copy_down(unsigned char *d, const unsigned char *s, size_t len)
{
	for (; len >= 2 * sizeof(half_step); len -= 2 * sizeof(half_step)) {
		const half_step *from = (const half_step *) (s + len) - 2;
		half_step *to = (half_step *) (d + len) - 2;
		half_step low = from[0], high = from[1];

		to[1] = high;
		to[0] = low;
	}
	memmove(d, s, len);
}

#ifdef __x86_64__
__attribute__((target("avx2")))
static void copy_down_avx2(unsigned char *d, const unsigned char *s,
			   size_t len)
{
	copy_down(d, s, len);
}
#endif

void xshm_copy_descending(void *dst, const void *src, size_t len)
{
#ifdef __x86_64__
	if (__builtin_cpu_supports("avx2")) {
		copy_down_avx2(dst, src, len);
		return;
	}
#endif
	copy_down(dst, src, len);
}
