/* See prefetch.h. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __x86_64__
#include <cpuid.h>
#endif

#include "layout.h"
#include "prefetch.h"

#ifdef __x86_64__
/*
 * PREFETCHW (AMD's 3DNowPrefetch): CPUID 0x80000001, ECX bit 8.  Asked
 * once: in a virtual machine CPUID traps to the hypervisor.
 */
static bool can_prefetch_for_write(void)
{
	static _Atomic int known;	/* 0: not asked yet, 1: yes, 2: no */
	int answer = atomic_load_explicit(&known, memory_order_relaxed);
	unsigned int eax, ebx, ecx, edx;

	if (!answer) {
		answer = __get_cpuid(0x80000001, &eax, &ebx, &ecx, &edx) &&
			 (ecx & bit_PRFCHW) ? 1 : 2;
		atomic_store_explicit(&known, answer, memory_order_relaxed);
	}
	return answer == 1;
}
#else
static bool can_prefetch_for_write(void)
{
	return true;
}
#endif

#ifdef __x86_64__
__attribute__((target("prfchw")))	/* __builtin_prefetch(p, 1): prefetchw */
#endif
void xshm_prefetch_for_write(const void *p, size_t len)
{
	uintptr_t line = (uintptr_t) p & ~(uintptr_t) (XSHM_CACHE_LINE - 1);
	uintptr_t end = (uintptr_t) p + len;

	if (!can_prefetch_for_write())
		return;
	for (; line < end; line += XSHM_CACHE_LINE)
		__builtin_prefetch((const void *) line, 1, 3);
}
