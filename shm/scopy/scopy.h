/*
 * Single-copy engines: the data of a large message goes straight from the
 * sender's buffers into the receiver's, one copy in all, pulled by the
 * receiver and, for part of it, pushed by the sender (prov/xshm/data/rts.c).
 *
 * Each engine is a small module behind this table (cma.c; xpmem would be a
 * sibling file), probed once: an engine that the kernel, a ptrace policy or
 * a seccomp filter denies is not offered, and xshm falls back to its
 * pipelined copy through bounce buffers.
 */
#ifndef XSHM_SHM_SCOPY_H
#define XSHM_SHM_SCOPY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

struct xshm_scopy {
	const char *name;
	/* 0 when this process can copy from and to its peers, and they to it. */
	int (*probe)(void);
	/*
	 * Copies bytes [offset, offset + len) of the remote iov of process
	 * pid to the same bytes of the local iov.  Returns 0, or a negative
	 * errno (-ESRCH: the process is gone, -EFAULT: its buffers are not
	 * mapped).
	 */
	int (*pull)(pid_t pid, const struct iovec *local, size_t nlocal,
		    const struct iovec *remote, size_t nremote, size_t offset,
		    size_t len);
	/* The same, from the local iov to the remote one. */
	int (*push)(pid_t pid, const struct iovec *local, size_t nlocal,
		    const struct iovec *remote, size_t nremote, size_t offset,
		    size_t len);
};

extern const struct xshm_scopy xshm_scopy_cma;

/* The first usable engine (probed once per process), or NULL. */
const struct xshm_scopy *xshm_scopy_select(void);

#endif
