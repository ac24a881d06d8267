/*
 * Scatter-gather helpers (iov.c).  The checks and the one-buffer copies
 * are inline: every send and receive call makes them, usually on a single
 * buffer, and a call to walk one entry cost more than the walk.
 */
#ifndef XSHM_IOV_H
#define XSHM_IOV_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#include <rdma/fi_errno.h>

#include "shm/copy.h"

static inline size_t xshm_iov_total(const struct iovec *iov, size_t count)
{
	size_t total = 0;

	if (count == 1)
		return iov[0].iov_len;
	for (size_t i = 0; i < count; i++)
		total += iov[i].iov_len;
	return total;
}

static inline int xshm_check_iov(const struct iovec *iov, size_t count,
				 size_t limit)
{
	if (count > limit || (count && !iov))
		return -FI_EINVAL;
	if (count == 1)
		return iov[0].iov_len && !iov[0].iov_base ? -FI_EINVAL : 0;
	for (size_t i = 0; i < count; i++)
		if (iov[i].iov_len && !iov[i].iov_base)
			return -FI_EINVAL;
	return 0;
}

/* The iov's bytes offset to offset + len, when one buffer holds them all. */
static inline char *xshm_iov_one_buffer(const struct iovec *iov, size_t count,
					size_t offset, size_t len)
{
	if (count != 1 || len > iov[0].iov_len ||
	    offset > iov[0].iov_len - len)
		return NULL;
	return (char *) iov[0].iov_base + offset;
}

/*
 * Copies len bytes between buf and the iov from offset, with copy; returns
 * the bytes copied.
 */
size_t xshm_iov_copy(const struct iovec *iov, size_t count, size_t offset,
		     unsigned char *buf, size_t len, bool to_iov,
		     xshm_copy_fn *copy);

static inline size_t xshm_iov_copy_to(const struct iovec *iov, size_t count,
				      size_t offset, const void *src,
				      size_t len)
{
	char *base = xshm_iov_one_buffer(iov, count, offset, len);

	if (!base)
		return xshm_iov_copy(iov, count, offset, (unsigned char *) src,
				     len, true, xshm_copy);
	if (len)
		xshm_copy(base, src, len);
	return len;
}

/* Gathers len bytes of the iov from offset into dst, with copy. */
static inline size_t xshm_iov_gather(xshm_copy_fn *copy, void *dst,
				     const struct iovec *iov, size_t count,
				     size_t offset, size_t len)
{
	char *base = xshm_iov_one_buffer(iov, count, offset, len);

	if (!base)
		return xshm_iov_copy(iov, count, offset, dst, len, false, copy);
	if (len)
		copy(dst, base, len);
	return len;
}

static inline size_t xshm_iov_copy_from(void *dst, const struct iovec *iov,
					size_t count, size_t offset,
					size_t len)
{
	return xshm_iov_gather(xshm_copy, dst, iov, count, offset, len);
}

#endif
