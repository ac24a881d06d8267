/* Scatter-gather helpers shared by the send and receive paths. */
#include <string.h>

#include "shm/copy.h"
#include "xshm.h"

size_t xshm_iov_total(const struct iovec *iov, size_t count)
{
	size_t total = 0;

	for (size_t i = 0; i < count; i++)
		total += iov[i].iov_len;
	return total;
}

/*
 * Copies len bytes between buf and the iov, starting at byte offset of the
 * iov, in the direction to_iov says; returns the bytes copied.
 */
static size_t iov_copy(const struct iovec *iov, size_t count, size_t offset,
		       unsigned char *buf, size_t len, bool to_iov)
{
	size_t done = 0;

	/* The common case, one buffer, without the walk. */
	if (count == 1 && len <= iov[0].iov_len &&
	    offset <= iov[0].iov_len - len) {
		char *base = (char *) iov[0].iov_base + offset;

		if (to_iov)
			xshm_copy(base, buf, len);
		else
			xshm_copy(buf, base, len);
		return len;
	}
	for (size_t i = 0; i < count && done < len; i++) {
		char *base = iov[i].iov_base;
		size_t n;

		if (offset >= iov[i].iov_len) {
			offset -= iov[i].iov_len;
			continue;
		}
		n = iov[i].iov_len - offset;
		if (n > len - done)
			n = len - done;
		if (to_iov)
			xshm_copy(base + offset, buf + done, n);
		else
			xshm_copy(buf + done, base + offset, n);
		done += n;
		offset = 0;
	}
	return done;
}

size_t xshm_iov_copy_to(const struct iovec *iov, size_t count, size_t offset,
			const void *src, size_t len)
{
	return iov_copy(iov, count, offset, (unsigned char *) src, len, true);
}

size_t xshm_iov_copy_from(void *dst, const struct iovec *iov, size_t count,
			  size_t offset, size_t len)
{
	return iov_copy(iov, count, offset, dst, len, false);
}

int xshm_check_iov(const struct iovec *iov, size_t count, size_t limit)
{
	if (count > limit || (count && !iov))
		return -FI_EINVAL;
	for (size_t i = 0; i < count; i++)
		if (iov[i].iov_len && !iov[i].iov_base)
			return -FI_EINVAL;
	return 0;
}
