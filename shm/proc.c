#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

/* Fields of /proc/<pid>/stat after "pid (comm) ": state is field 3. */
#define STAT_FIRST_FIELD_AFTER_COMM	3
#define STAT_STARTTIME_FIELD		22

struct proc_stat {
	char state;
	uint64_t start_time;
};

static ssize_t read_small_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do {
		n = read(fd, buf, len - 1);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		n = -errno;
	else
		buf[n] = '\0';
	close(fd);
	return n;
}

/* comm may hold spaces and ')', so the fields start after the LAST ')'. */
static int parse_stat(const char *text, struct proc_stat *out)
{
	const char *p = strrchr(text, ')');
	char *end;
	int field;

	if (!p || p[1] != ' ')
		return -EPROTO;
	p += 2;
	out->state = *p;
	for (field = STAT_FIRST_FIELD_AFTER_COMM; field < STAT_STARTTIME_FIELD;
	     field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EPROTO;
		p++;
	}
	errno = 0;
	out->start_time = strtoull(p, &end, 10);
	if (end == p || errno != 0 || (*end != ' ' && *end != '\n' && *end))
		return -EPROTO;
	return 0;
}

static int read_stat(pid_t pid, struct proc_stat *out)
{
	/* comm is at most 16 bytes; the whole line fits comfortably. */
	char path[64], text[1024];
	ssize_t n;

	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	n = read_small_file(path, text, sizeof(text));
	if (n < 0)
		return (int) n;
	return parse_stat(text, out);
}

int xshm_proc_start_time(pid_t pid, uint64_t *start)
{
	struct proc_stat stat;
	int ret;

	ret = read_stat(pid, &stat);
	if (ret)
		return ret;
	*start = stat.start_time;
	return 0;
}

/*
 * Whether pid names a running process; its stat in *stat when readable
 * (*readable false when /proc hides it, e.g. hidepid: then assume it runs).
 * A zombie holds its pid but will never close its region.
 */
static bool pid_runs(pid_t pid, struct proc_stat *stat, bool *readable)
{
	int ret;

	*readable = false;
	if (pid <= 0)
		return false;
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return false;
	ret = read_stat(pid, stat);
	if (ret == -ENOENT || ret == -ESRCH)
		return false;
	if (ret)
		return true;
	*readable = true;
	return stat->state != 'Z' && stat->state != 'X';
}

bool xshm_proc_alive(pid_t pid, uint64_t start_time)
{
	struct proc_stat stat;
	bool readable;

	if (!pid_runs(pid, &stat, &readable))
		return false;
	return !readable || stat.start_time == start_time;
}

bool xshm_proc_pid_alive(pid_t pid)
{
	struct proc_stat stat;
	bool readable;

	return pid_runs(pid, &stat, &readable);
}

_Atomic pid_t xshm_proc_self_pid;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void forget_self(void)
{
	atomic_store_explicit(&xshm_proc_self_pid, 0, memory_order_relaxed);
}

static void watch_forks(void)
{
	pthread_atfork(NULL, NULL, forget_self);
}

pid_t xshm_proc_self_slow(void)
{
	pid_t pid;

	pthread_once(&self_once, watch_forks);
	pid = getpid();
	atomic_store_explicit(&xshm_proc_self_pid, pid, memory_order_relaxed);
	return pid;
}

static uint64_t fnv1a(uint64_t hash, const void *data, size_t len)
{
	const unsigned char *bytes = data;
	size_t i;

	for (i = 0; i < len; i++) {
		hash ^= bytes[i];
		hash *= 0x100000001b3ULL;
	}
	return hash;
}

uint64_t xshm_node_id(void)
{
	char boot_id[128], host[256];
	uint64_t hash = 0xcbf29ce484222325ULL;
	ssize_t n;

	n = read_small_file("/proc/sys/kernel/random/boot_id", boot_id,
			    sizeof(boot_id));
	if (n > 0)
		hash = fnv1a(hash, boot_id, (size_t) n);
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		hash = fnv1a(hash, host, strlen(host));
	}
	return hash ? hash : 1;
}
