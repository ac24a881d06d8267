/*
 * Cross-memory attach: process_vm_readv(2) and process_vm_writev(2).  The
 * kernel checks ptrace access to the other process, so the probe copies its
 * own memory through both calls (which a seccomp filter may deny) and,
 * under Yama's "restricted" ptrace scope, lets any process of the user
 * reach this one.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "scopy.h"

#define YAMA_SCOPE	"/proc/sys/kernel/yama/ptrace_scope"
#define MAX_IOV		16

static int yama_scope(void)
{
	FILE *f = fopen(YAMA_SCOPE, "r");
	int scope = 0;

	if (!f)
		return 0;	/* no Yama: classic ptrace rules */
	if (fscanf(f, "%d", &scope) != 1)
		scope = 3;
	fclose(f);
	return scope;
}

static int cma_probe(void)
{
	char src[8] = "xshm", dst[8] = "";
	struct iovec local = { dst, sizeof(dst) }, remote = { src, sizeof(src) };
	int scope = yama_scope();

	if (scope >= 2)
		return -EPERM;
	if (scope == 1 && prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0))
		return -errno;
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) !=
	    (ssize_t) sizeof(src))
		return -errno;
	if (memcmp(src, dst, sizeof(src)))
		return -EIO;
	memset(dst, 0, sizeof(dst));
	if (process_vm_writev(getpid(), &remote, 1, &local, 1, 0) !=
	    (ssize_t) sizeof(src))
		return -errno;
	return memcmp(src, dst, sizeof(src)) ? -EIO : 0;
}

/* Drops the first done bytes of an iov, in place; returns the new count. */
static size_t iov_advance(struct iovec *iov, size_t count, size_t done)
{
	size_t first = 0;

	while (first < count && done >= iov[first].iov_len)
		done -= iov[first++].iov_len;
	if (first < count) {
		iov[first].iov_base = (char *) iov[first].iov_base + done;
		iov[first].iov_len -= done;
	}
	memmove(iov, iov + first, (count - first) * sizeof(*iov));
	return count - first;
}

/* Bytes [offset, offset + len) of iov, into out; returns the entries used. */
static size_t iov_window(struct iovec *out, const struct iovec *iov,
			 size_t count, size_t offset, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < count && len && n < MAX_IOV; i++) {
		size_t skip = offset < iov[i].iov_len ? offset : iov[i].iov_len;
		size_t take = iov[i].iov_len - skip;

		offset -= skip;
		if (!take)
			continue;
		if (take > len)
			take = len;
		out[n].iov_base = (char *) iov[i].iov_base + skip;
		out[n].iov_len = take;
		len -= take;
		n++;
	}
	return n;
}

static int cma_copy(bool push, pid_t pid, const struct iovec *local,
		    size_t nlocal, const struct iovec *remote, size_t nremote,
		    size_t offset, size_t len)
{
	struct iovec lv[MAX_IOV], rv[MAX_IOV];
	size_t nl = iov_window(lv, local, nlocal, offset, len);
	size_t nr = iov_window(rv, remote, nremote, offset, len);

	while (len) {
		ssize_t n = push ? process_vm_writev(pid, lv, nl, rv, nr, 0) :
				   process_vm_readv(pid, lv, nl, rv, nr, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EFAULT;
		len -= (size_t) n;
		nl = iov_advance(lv, nl, (size_t) n);
		nr = iov_advance(rv, nr, (size_t) n);
	}
	return 0;
}

static int cma_pull(pid_t pid, const struct iovec *local, size_t nlocal,
		    const struct iovec *remote, size_t nremote, size_t offset,
		    size_t len)
{
	return cma_copy(false, pid, local, nlocal, remote, nremote, offset, len);
}

static int cma_push(pid_t pid, const struct iovec *local, size_t nlocal,
		    const struct iovec *remote, size_t nremote, size_t offset,
		    size_t len)
{
	return cma_copy(true, pid, local, nlocal, remote, nremote, offset, len);
}

const struct xshm_scopy xshm_scopy_cma = {
	.name = "cma",
	.probe = cma_probe,
	.pull = cma_pull,
	.push = cma_push,
};
