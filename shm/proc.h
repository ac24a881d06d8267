/* Facts about processes and the node, for naming and liveness. */
#ifndef XSHM_SHM_PROC_H
#define XSHM_SHM_PROC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Start time of pid (field 22 of /proc/<pid>/stat); 0 and *start, or -errno. */
int xshm_proc_start_time(pid_t pid, uint64_t *start);

/* True while pid runs and still has the given start time. */
bool xshm_proc_alive(pid_t pid, uint64_t start_time);

/*
 * True while pid exists and is not a zombie.  Without a start time a reused
 * pid counts as alive: callers may only wait longer, never act too early.
 */
bool xshm_proc_pid_alive(pid_t pid);

/* This process's pid once asked for, 0 before and after a fork. */
extern _Atomic pid_t xshm_proc_self_pid;

pid_t xshm_proc_self_slow(void);

/*
 * getpid() without a system call on hot paths; correct after fork.  Inline:
 * every push into a ring stores it in its cell's claim.
 */
static inline pid_t xshm_proc_self(void)
{
	pid_t pid = atomic_load_explicit(&xshm_proc_self_pid,
					 memory_order_relaxed);

	return pid ? pid : xshm_proc_self_slow();
}

/*
 * Identity of this node: a 64-bit hash of the kernel boot id and the host
 * name, never 0.  Processes on one machine agree on it.
 */
uint64_t xshm_node_id(void);

#endif
