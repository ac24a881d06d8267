/*
 * Cross-memory attach: process_vm_readv(2).  The kernel checks ptrace
 * access to the sender, so the probe reads its own memory through the call
 * (which a seccomp filter may deny) and, under Yama's "restricted" ptrace
 * scope, lets any process of the user pull from this one.
 */
#include <errno.h>
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

/* Copies at most len bytes of iov into out; returns the entries used. */
static size_t iov_clip(struct iovec *out, const struct iovec *iov,
		       size_t count, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < count && len && n < MAX_IOV; i++) {
		out[n] = iov[i];
		if (out[n].iov_len > len)
			out[n].iov_len = len;
		len -= out[n].iov_len;
		n++;
	}
	return n;
}

static int cma_pull(pid_t pid, const struct iovec *local, size_t nlocal,
		    const struct iovec *remote, size_t nremote, size_t len)
{
	struct iovec lv[MAX_IOV], rv[MAX_IOV];
	size_t nl = iov_clip(lv, local, nlocal, len);
	size_t nr = iov_clip(rv, remote, nremote, len);

	while (len) {
		ssize_t n = process_vm_readv(pid, lv, nl, rv, nr, 0);

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

const struct xshm_scopy xshm_scopy_cma = {
	.name = "cma",
	.probe = cma_probe,
	.pull = cma_pull,
};
