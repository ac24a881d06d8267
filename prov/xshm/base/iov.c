/*
 * Scatter-gather copies that walk the iov (the one-buffer case and the
 * checks are inline in iov.h).
 */
#include "base/iov.h"
#include "shm/copy.h"

size_t xshm_iov_copy(const struct iovec *iov, size_t count, size_t offset,
		     unsigned char *buf, size_t len, bool to_iov,
		     xshm_copy_fn *copy)
{
	size_t done = 0;

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
			copy(base + offset, buf + done, n);
		else
			copy(buf + done, base + offset, n);
		done += n;
		offset = 0;
	}
	return done;
}
