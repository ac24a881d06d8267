/*
 * Payload copies into and out of bounce buffers.
 *
 * glibc copies 2112 bytes and more with `rep movsb`, which on the AMD EPYC
 * machine this was measured on (a KVM guest) is slow for the cache-hot
 * copies of a medium message: a 4 KiB ping-pong took 0.92 us with it and
 * 0.69 us with a plain vector loop.  For large messages `rep movsb` wins
 * (it saves reading destination lines that are not cached: 1 MiB took 54
 * us with it, 80 us without), so only copies of up to XSHM_COPY_LOOP_MAX
 * bytes use the loop, which covers every message that fits in half a
 * bounce buffer and leaves the 16 KiB pieces of large ones to memcpy.
 */
#ifndef XSHM_SHM_COPY_H
#define XSHM_SHM_COPY_H

#include <stddef.h>

#define XSHM_COPY_LOOP_MIN	2048
#define XSHM_COPY_LOOP_MAX	8192

void xshm_copy(void *dst, const void *src, size_t len);

#endif
