/*
 * Named AVs (attr->name): the table lives in /dev/shm/xshm-av-<uid>-<name>,
 * created O_EXCL with mode 0600 by the first process that opens the name
 * and unlinked by the last writable close.  Every process keeps its own
 * mirror of the table (peer mappings, hash, user ids) and catches up with
 * the file whenever its generation moved.  The file is another process's
 * memory: whatever is read from it is checked before it is used.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "av/av.h"
#include "av/av_impl.h"
#include "base/addr.h"
#include "base/params.h"
#include "shm/layout.h"
#include "shm/proc.h"
#include "shm/region.h"

#define SHARED_MIN_ENTRIES	1024
#define SHARED_MAX_ENTRIES	(1u << 24)
#define OPEN_TRIES		2000	/* 1 ms apart: a creator still busy */
#define SYNC_TRIES		1000

struct xshm_av_shared {
	struct xshm_av_shm_hdr *hdr;
	size_t size;
	uint64_t seen_gen;		/* the file's generation we mirror */
	bool writer;			/* counted among the openers */
	bool writing;			/* we hold the lock, generation odd */
	char path[NAME_MAX + 1];
};

/* "/xshm-av-<uid>-" and the name, with bytes other than [A-Za-z0-9._-] as %XX. */
static int name_to_path(const char *name, char *path, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t len = (size_t) snprintf(path, size, "/xshm-av-%u-",
				       (unsigned) geteuid());

	if (!*name)
		return -FI_EINVAL;
	for (const unsigned char *c = (const unsigned char *) name; *c; c++) {
		bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			     (*c >= '0' && *c <= '9') || strchr("._-", *c);

		if (len + 4 > size)
			return -FI_EINVAL;
		if (plain) {
			path[len++] = (char) *c;
		} else {
			path[len++] = '%';
			path[len++] = hex[*c >> 4];
			path[len++] = hex[*c & 15];
		}
	}
	path[len] = '\0';
	return 0;
}

static size_t file_size_for(uint32_t capacity)
{
	size_t bytes = sizeof(struct xshm_av_shm_hdr) +
		       (size_t) capacity * (sizeof(struct xshm_av_shm_entry) +
					    sizeof(uint64_t));

	return (bytes + 4095) & ~(size_t) 4095;
}

/* The fi_addr of each index, after the entries (check_hdr sized them). */
static uint64_t *fi_addrs(const struct xshm_av_shm_hdr *hdr)
{
	return (uint64_t *) &hdr->entries[hdr->capacity];
}

static int lock_hdr(struct xshm_av_shm_hdr *hdr)
{
	int ret = pthread_mutex_lock(&hdr->lock);

	if (ret == EOWNERDEAD) {
		/* Its writer died: what it half wrote is mirrored as found. */
		if (atomic_load(&hdr->generation) & 1)
			atomic_fetch_add(&hdr->generation, 1);
		pthread_mutex_consistent(&hdr->lock);
		return 0;
	}
	return ret ? -FI_EIO : 0;
}

static int init_mutex(pthread_mutex_t *mutex)
{
	pthread_mutexattr_t attr;
	int ret;

	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	ret = pthread_mutex_init(mutex, &attr);
	pthread_mutexattr_destroy(&attr);
	return ret ? -FI_EIO : 0;
}

static void *map_file(int fd, size_t size, bool read_only)
{
	void *base = mmap(NULL, size, read_only ? PROT_READ :
			  PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return base == MAP_FAILED ? NULL : base;
}

static int create_file(struct xshm_av_shared *sh, int fd, uint32_t capacity)
{
	struct xshm_av_shm_hdr *hdr;
	size_t size = file_size_for(capacity);
	int ret;

	if (fchmod(fd, 0600) || ftruncate(fd, (off_t) size))
		return -FI_EIO;
	hdr = map_file(fd, size, false);
	if (!hdr)
		return -FI_ENOMEM;
	ret = init_mutex(&hdr->lock);
	if (ret) {
		munmap(hdr, size);
		return ret;
	}
	hdr->magic = XSHM_AV_MAGIC;
	hdr->layout_version = XSHM_LAYOUT_VERSION;
	hdr->hdr_size = sizeof(*hdr);
	hdr->file_size = size;
	hdr->owner_uid = geteuid();
	hdr->capacity = capacity;
	memset(fi_addrs(hdr), 0xff, capacity * sizeof(uint64_t));
	atomic_store_explicit(&hdr->ready, 1, memory_order_release);
	sh->hdr = hdr;
	sh->size = size;
	return 0;
}

static int check_file(int fd, size_t *size)
{
	struct stat st;

	if (fstat(fd, &st))
		return -FI_EIO;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 07777) != 0600)
		return -FI_EACCES;
	if (st.st_size == 0)
		return -FI_EAGAIN;	/* its creator has not sized it yet */
	if ((size_t) st.st_size < sizeof(struct xshm_av_shm_hdr))
		return -FI_EINVAL;
	*size = (size_t) st.st_size;
	return 0;
}

static int check_hdr(const struct xshm_av_shm_hdr *hdr, size_t size)
{
	if (!atomic_load_explicit(&hdr->ready, memory_order_acquire))
		return -FI_EAGAIN;
	if (hdr->magic != XSHM_AV_MAGIC ||
	    hdr->layout_version != XSHM_LAYOUT_VERSION ||
	    hdr->hdr_size != sizeof(*hdr) || hdr->file_size != size ||
	    hdr->owner_uid != geteuid() || hdr->capacity < 64 ||
	    hdr->capacity > SHARED_MAX_ENTRIES ||
	    file_size_for(hdr->capacity) != size)
		return -FI_EINVAL;
	return 0;
}

static int open_file(struct xshm_av_shared *sh, int fd, bool read_only)
{
	size_t size;
	int ret = check_file(fd, &size);

	if (ret)
		return ret;
	sh->hdr = map_file(fd, size, read_only);
	if (!sh->hdr)
		return -FI_ENOMEM;
	sh->size = size;
	ret = check_hdr(sh->hdr, size);
	if (ret) {
		munmap(sh->hdr, size);
		sh->hdr = NULL;
	}
	return ret;
}

static struct xshm_av_shm_opener *find_opener(struct xshm_av_shm_hdr *hdr,
					      pid_t pid)
{
	for (int i = 0; i < XSHM_AV_OPENERS; i++)
		if (hdr->openers[i].pid == pid)
			return &hdr->openers[i];
	return NULL;
}

/* Forgets openers that died without closing; true if any live one remains. */
static bool prune_openers(struct xshm_av_shm_hdr *hdr)
{
	bool any = false;

	for (int i = 0; i < XSHM_AV_OPENERS; i++) {
		struct xshm_av_shm_opener *o = &hdr->openers[i];

		if (o->pid && !xshm_proc_alive(o->pid, o->start_time))
			memset(o, 0, sizeof(*o));
		any |= o->pid != 0;
	}
	return any;
}

static int add_opener(struct xshm_av_shm_hdr *hdr)
{
	struct xshm_av_shm_opener *o;
	uint64_t start;

	prune_openers(hdr);
	o = find_opener(hdr, getpid());
	if (o) {
		o->opens++;
		return 0;
	}
	o = find_opener(hdr, 0);
	if (!o)
		return -FI_ENOSPC;
	if (xshm_proc_start_time(getpid(), &start))
		return -FI_EIO;
	*o = (struct xshm_av_shm_opener) {
		.pid = getpid(), .opens = 1, .start_time = start,
	};
	return 0;
}

/* -FI_EAGAIN: the last writer is unlinking this file; open the name again. */
static int register_writer(struct xshm_av_shared *sh)
{
	int ret = lock_hdr(sh->hdr);

	if (ret)
		return ret;
	ret = sh->hdr->unlinked ? -FI_EAGAIN : add_opener(sh->hdr);
	pthread_mutex_unlock(&sh->hdr->lock);
	sh->writer = !ret;
	return ret;
}

static void detach(struct xshm_av_shared *sh)
{
	munmap(sh->hdr, sh->size);
	sh->hdr = NULL;
}

/* One attempt to create or open the name. */
static int attach_once(struct xshm_av_shared *sh, uint32_t capacity,
		       bool read_only)
{
	int fd = -1, ret;

	if (!read_only) {
		fd = shm_open(sh->path, O_CREAT | O_EXCL | O_RDWR, 0600);
		if (fd >= 0) {
			ret = create_file(sh, fd, capacity);
			close(fd);
			if (ret)
				shm_unlink(sh->path);
			return ret ? ret : register_writer(sh);
		}
		if (errno != EEXIST)
			return errno == EACCES ? -FI_EACCES : -FI_EIO;
	}
	fd = shm_open(sh->path, read_only ? O_RDONLY : O_RDWR, 0);
	if (fd < 0) {
		if (errno == ENOENT)
			return read_only ? -FI_ENOENT : -FI_EAGAIN;
		return errno == EACCES ? -FI_EACCES : -FI_EIO;
	}
	ret = open_file(sh, fd, read_only);
	close(fd);
	if (ret || read_only)
		return ret;
	ret = register_writer(sh);
	if (ret)
		detach(sh);
	return ret;
}

static int attach(struct xshm_av_shared *sh, uint32_t capacity, bool read_only)
{
	const struct timespec pause = { .tv_nsec = 1000000 };
	int ret = -FI_EAGAIN;

	for (int tries = 0; tries < OPEN_TRIES && ret == -FI_EAGAIN; tries++) {
		if (tries)
			nanosleep(&pause, NULL);
		ret = attach_once(sh, capacity, read_only);
	}
	return ret;
}

/* ---- mirroring the file ---- */

static bool shm_entry_read(const struct xshm_av_shm_hdr *hdr, size_t i,
			   struct xshm_addr *addr, uint32_t *key)
{
	struct xshm_av_shm_entry e;

	memcpy(&e, (const void *) &hdr->entries[i], sizeof(e));
	if (e.used != 1 || e.node_id != xshm_params.node_id)
		return false;
	addr->node_id = e.node_id;
	addr->ep_id = e.ep_id;
	*key = e.auth_key < XSHM_AV_KEYS ? e.auth_key : XSHM_AV_NO_KEY;
	return true;
}

/* Clears what changed first, so that an address that moved finds its id free. */
static void mirror_entries(struct xshm_av *av)
{
	const struct xshm_av_shm_hdr *hdr = av->shared->hdr;
	struct xshm_addr addr;
	uint32_t key;

	for (size_t i = 0; i < av->capacity; i++) {
		struct xshm_av_entry *entry = &av->table[i];
		bool used = shm_entry_read(hdr, i, &addr, &key);

		if (!entry->used)
			continue;
		if (!used || entry->addr.ep_id != addr.ep_id)
			xshm_av_entry_clear(av, i);
		else
			entry->auth_key = key;
	}
	for (size_t i = 0; i < av->capacity; i++) {
		if (av->table[i].used || !shm_entry_read(hdr, i, &addr, &key))
			continue;
		if (xshm_av_find(av, addr.ep_id) < 0)
			xshm_av_entry_set(av, i, &addr, key);
	}
}

static void mirror_keys(struct xshm_av *av)
{
	const struct xshm_av_shm_hdr *hdr = av->shared->hdr;

	for (uint32_t i = 0; i < XSHM_AV_KEYS; i++) {
		struct xshm_av_shm_key k;
		struct xshm_av_key *mine = &av->keys[i];

		memcpy(&k, (const void *) &hdr->keys[i], sizeof(k));
		if (k.used != 1 || !k.size || k.size > XSHM_AV_KEY_MAX) {
			if (mine->used)
				xshm_av_key_clear(av, i);
		} else if (!mine->used || mine->size != k.size ||
			   memcmp(mine->bytes, k.bytes, k.size)) {
			xshm_av_key_set(av, i, k.bytes, k.size);
		}
	}
}

void xshm_av_shared_sync(struct xshm_av *av)
{
	struct xshm_av_shared *sh = av->shared;
	_Atomic uint64_t *generation = &sh->hdr->generation;

	if (sh->writing)
		return;
	for (int tries = 0; tries < SYNC_TRIES; tries++) {
		uint64_t gen = atomic_load_explicit(generation,
						    memory_order_acquire);

		if (gen == sh->seen_gen)
			return;
		if (gen & 1) {
			sched_yield();
			continue;
		}
		mirror_entries(av);
		mirror_keys(av);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(generation, memory_order_relaxed) == gen) {
			sh->seen_gen = gen;
			return;
		}
	}
}

int xshm_av_shared_lock(struct xshm_av *av)
{
	struct xshm_av_shared *sh = av->shared;
	int ret;

	if (!sh->writer)
		return -FI_EACCES;
	ret = lock_hdr(sh->hdr);
	if (ret)
		return ret;
	xshm_av_shared_sync(av);
	atomic_fetch_add_explicit(&sh->hdr->generation, 1, memory_order_acq_rel);
	sh->writing = true;
	return 0;
}

void xshm_av_shared_unlock(struct xshm_av *av)
{
	struct xshm_av_shared *sh = av->shared;

	sh->seen_gen = atomic_fetch_add_explicit(&sh->hdr->generation, 1,
						 memory_order_release) + 1;
	sh->writing = false;
	pthread_mutex_unlock(&sh->hdr->lock);
}

void xshm_av_shared_put(struct xshm_av *av, size_t index,
			const struct xshm_addr *addr, uint32_t auth_key)
{
	struct xshm_av_shm_entry *e = &av->shared->hdr->entries[index];

	fi_addrs(av->shared->hdr)[index] = addr ? index : FI_ADDR_NOTAVAIL;
	if (!addr) {
		e->used = 0;
		return;
	}
	e->node_id = addr->node_id;
	e->ep_id = addr->ep_id;
	e->auth_key = auth_key;
	e->used = 1;
}

void xshm_av_shared_put_key(struct xshm_av *av, size_t slot)
{
	struct xshm_av_shm_key *k = &av->shared->hdr->keys[slot];
	const struct xshm_av_key *mine = &av->keys[slot];

	k->used = mine->used;
	k->size = mine->size;
	memcpy(k->bytes, mine->bytes, sizeof(k->bytes));
}

/* ---- open and close ---- */

static int mirror_init(struct xshm_av *av)
{
	int ret = xshm_av_table_init(av, av->shared->hdr->capacity);

	if (!ret)
		ret = xshm_av_keys_init(av, XSHM_AV_KEYS);
	if (ret)
		return ret;
	av->shared->seen_gen = UINT64_MAX;	/* never a stable generation */
	xshm_av_shared_sync(av);
	return 0;
}

static void release(struct xshm_av_shared *sh)
{
	if (sh->writer && !lock_hdr(sh->hdr)) {
		struct xshm_av_shm_opener *o = find_opener(sh->hdr, getpid());

		if (o && !--o->opens)
			memset(o, 0, sizeof(*o));
		if (!prune_openers(sh->hdr)) {
			sh->hdr->unlinked = 1;
			shm_unlink(sh->path);
		}
		pthread_mutex_unlock(&sh->hdr->lock);
	}
	detach(sh);
}

int xshm_av_shared_open(struct xshm_av *av, struct fi_av_attr *attr)
{
	bool read_only = attr->flags & FI_READ;
	size_t count = attr->count < SHARED_MIN_ENTRIES ? SHARED_MIN_ENTRIES :
			attr->count;
	struct xshm_av_shared *sh;
	int ret;

	if (count > SHARED_MAX_ENTRIES)
		return -FI_EINVAL;
	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return -FI_ENOMEM;
	ret = name_to_path(attr->name, sh->path, sizeof(sh->path));
	if (!ret)
		ret = attach(sh, (uint32_t) count, read_only);
	if (ret) {
		free(sh);
		return ret;
	}
	av->shared = sh;
	ret = mirror_init(av);
	if (ret) {
		xshm_av_shared_close(av);
		return ret;
	}
	if (!attr->map_addr)
		attr->map_addr = fi_addrs(sh->hdr);
	return 0;
}

void xshm_av_shared_close(struct xshm_av *av)
{
	if (!av->shared)
		return;
	release(av->shared);
	free(av->shared);
	av->shared = NULL;
}

/* ---- files whose writers all died without closing ---- */

/* Unlink it only if the name still is the file we looked at. */
static void unlink_same(const char *path, int fd)
{
	struct stat mine, now;
	char full[NAME_MAX + 16];

	snprintf(full, sizeof(full), "/dev/shm%s", path);
	if (!fstat(fd, &mine) && !stat(full, &now) &&
	    mine.st_ino == now.st_ino && mine.st_dev == now.st_dev)
		shm_unlink(path);
}

/*
 * Under the file's lock, like the last writer's close.  A writer that
 * created it but has not registered yet finds it unlinked and starts over.
 */
static bool reclaim_file(const char *path)
{
	struct xshm_av_shared sh = { 0 };
	bool gone = false;
	int fd = shm_open(path, O_RDWR | O_NOFOLLOW, 0);

	if (fd < 0)
		return false;
	if (open_file(&sh, fd, false)) {
		close(fd);
		return false;
	}
	if (!lock_hdr(sh.hdr)) {
		if (!sh.hdr->unlinked && !prune_openers(sh.hdr)) {
			sh.hdr->unlinked = 1;
			unlink_same(path, fd);
			gone = true;
		}
		pthread_mutex_unlock(&sh.hdr->lock);
	}
	detach(&sh);
	close(fd);
	return gone;
}

/* xshm_shm_files_reclaim callback: shm_open names are "/" + the file's. */
static bool reclaim_entry(int dirfd, const char *name)
{
	char path[NAME_MAX + 2];

	(void) dirfd;
	snprintf(path, sizeof(path), "/%s", name);
	return reclaim_file(path);
}

int xshm_av_shared_reclaim_stale(void)
{
	return xshm_shm_files_reclaim("xshm-av", reclaim_entry);
}
