/*
 * Write prefetch: asks for ownership of cache lines that this process will
 * soon write and another CPU read last, so that the stores need not wait
 * for them.  A hint only: it changes no byte, and does nothing on x86-64
 * CPUs without PREFETCHW.
 */
#ifndef XSHM_SHM_PREFETCH_H
#define XSHM_SHM_PREFETCH_H

#include <stddef.h>

/* The lines of len bytes from p. */
void xshm_prefetch_for_write(const void *p, size_t len);

#endif
