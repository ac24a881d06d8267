/*
 * Payload copies into and out of bounce buffers.
 *
 * glibc copies 2112 bytes and more with `rep movsb`, which on the AMD EPYC
 * KVM guest this was measured on is slow for these copies: a plain 64-byte
 * vector loop, against memcpy, side by side, gave latency 0.71 at 4 KiB and
 * 0.74-0.86 from 16 KiB to 4 MiB, and 3 to 3.45 times the streaming
 * bandwidth from 16 KiB to 4 MiB.  So copies of XSHM_COPY_LOOP_MIN bytes up
 * to a bounce buffer's worth use the loop; nothing larger is copied here.
 *
 * xshm_copy_streaming writes with non-temporal stores, which leave nothing
 * in this CPU's cache and take no line from another's: for filling a bounce
 * buffer when that is cheaper (store_choice.h).
 *
 * xshm_copy_descending copies from the last bytes down to the first, so
 * that the CPU's stream prefetcher, following the reads, runs toward the
 * lines before src rather than past its end: for copying a payload out of
 * a ring cell when it ends in the cell's last lines, past which lie the
 * next cell's, that the sender has asked to own for its next message.
 */
#ifndef XSHM_SHM_COPY_H
#define XSHM_SHM_COPY_H

#include <stddef.h>

#include "layout.h"

#define XSHM_COPY_LOOP_MIN	2048
#define XSHM_COPY_LOOP_MAX	XSHM_BUF_SIZE
/*
 * In-cell payloads longer than this are copied out descending
 * (prov/xshm/data/recv_cmd.c).
 */
#define XSHM_COPY_DOWN_ABOVE	1024

typedef void xshm_copy_fn(void *dst, const void *src, size_t len);

void xshm_copy(void *dst, const void *src, size_t len);
/*
 * Ends with a store fence: its stores are visible before any later one, such
 * as the one that publishes the buffer.  Plain memcpy where there are no
 * non-temporal stores.
 */
void xshm_copy_streaming(void *dst, const void *src, size_t len);
/*
 * Each byte is read before any byte below it is written, so it also moves
 * bytes up within one buffer (dst after src), as memmove does.
 */
void xshm_copy_descending(void *dst, const void *src, size_t len);

#endif
