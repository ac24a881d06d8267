/*
 * Region layout: [header][pad to page][ring][pad to page][pool][pad to
 * page][published registrations][pad to page].
 * Whoever opens a region trusts nothing in it: the file's owner and mode are
 * checked before mapping, every header field after.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "numa.h"
#include "liveness.h"
#include "proc.h"
#include "region.h"

#define REGION_ALIGN		4096
#define SHM_DIR			"/dev/shm"
/* A region that never became ready is abandoned after this long. */
#define UNREADY_STALE_SECONDS	60

static_assert(sizeof(struct xshm_region_hdr) <= REGION_ALIGN, "header size");

static uint64_t align_up(uint64_t value, uint64_t alignment)
{
	return (value + alignment - 1) & ~(alignment - 1);
}

void xshm_region_name(char *buf, size_t len, uint64_t ep_id)
{
	snprintf(buf, len, "/xshm-%u-%016llx", (unsigned) geteuid(),
		 (unsigned long long) ep_id);
}

struct layout {
	uint64_t ring_offset;
	uint64_t pool_offset;
	uint64_t mr_offset;
	uint64_t size;
};

static int geom_valid(const struct xshm_region_geom *geom)
{
	uint32_t cells = geom->ring_cells;

	return cells >= XSHM_RING_CELLS_MIN && (cells & (cells - 1)) == 0 &&
	       geom->pool_bufs != 0 && geom->pool_bufs <= (1u << 31) &&
	       geom->buf_size != 0 && geom->buf_size % XSHM_CACHE_LINE == 0;
}

static struct layout layout_for(const struct xshm_region_geom *geom)
{
	struct layout layout;

	layout.ring_offset = align_up(sizeof(struct xshm_region_hdr),
				      REGION_ALIGN);
	layout.pool_offset = align_up(layout.ring_offset +
				      xshm_ring_bytes(geom->ring_cells,
						      XSHM_CELL_SIZE),
				      REGION_ALIGN);
	layout.mr_offset = align_up(layout.pool_offset +
				    xshm_pool_bytes(geom->pool_bufs,
						    geom->buf_size),
				    REGION_ALIGN);
	layout.size = align_up(layout.mr_offset + sizeof(struct xshm_mr_pub),
			       REGION_ALIGN);
	return layout;
}

/* Attach the ring and pool refs from header fields already validated. */
static int attach_parts(struct xshm_region *region, uint64_t ring_offset,
			uint64_t pool_offset, uint64_t mr_offset)
{
	unsigned char *base = region->base;

	if (xshm_ring_attach(&region->ring,
			     (struct xshm_ring *) (base + ring_offset),
			     pool_offset - ring_offset))
		return -EPROTO;
	if (region->ring.cell_size != XSHM_CELL_SIZE ||
	    region->ring.mask + 1 < XSHM_RING_CELLS_MIN)
		return -EPROTO;
	region->mr_pub = (struct xshm_mr_pub *) (base + mr_offset);
	return xshm_pool_attach(&region->pool,
				(struct xshm_pool *) (base + pool_offset),
				mr_offset - pool_offset);
}

static int fill_owner(struct xshm_region_hdr *hdr)
{
	uint64_t start;
	int ret;

	ret = xshm_proc_start_time(getpid(), &start);
	if (ret)
		return ret;
	hdr->owner_uid = geteuid();
	hdr->owner_pid = getpid();
	hdr->owner_start_time = start;
	return 0;
}

static int init_contents(struct xshm_region *region,
			 const struct xshm_region_geom *geom,
			 const struct layout *layout)
{
	struct xshm_region_hdr *hdr = region->base;
	unsigned char *base = region->base;
	int ret;

	ret = fill_owner(hdr);
	if (ret)
		return ret;
	hdr->magic = XSHM_REGION_MAGIC;
	hdr->layout_version = XSHM_LAYOUT_VERSION;
	hdr->hdr_size = sizeof(*hdr);
	hdr->region_size = layout->size;
	hdr->node_id = region->node_id;
	hdr->ep_id = region->ep_id;
	hdr->ring_offset = layout->ring_offset;
	hdr->pool_offset = layout->pool_offset;
	hdr->mr_offset = layout->mr_offset;
	hdr->auth_digest = geom->auth_digest;
	hdr->features = geom->features;
	xshm_ring_init((struct xshm_ring *) (base + layout->ring_offset),
		       geom->ring_cells, XSHM_CELL_SIZE);
	xshm_pool_init((struct xshm_pool *) (base + layout->pool_offset),
		       geom->pool_bufs, geom->buf_size);
	ret = attach_parts(region, layout->ring_offset, layout->pool_offset,
			   layout->mr_offset);
	if (ret)
		return ret;
	atomic_store_explicit(&hdr->ready, 1, memory_order_release);
	return 0;
}

/*
 * Size the new file.  posix_fallocate makes a full /dev/shm fail here with
 * ENOSPC instead of raising SIGBUS at first touch of a page later.
 */
static int size_file(int fd, uint64_t size)
{
	int ret;

	if (fchmod(fd, 0600) || ftruncate(fd, (off_t) size))
		return -errno;
	ret = posix_fallocate(fd, 0, (off_t) size);
	if (ret && ret != EOPNOTSUPP && ret != EINVAL)
		return -ret;
	return 0;
}

static void *map_fd(int fd, size_t size, int prot)
{
	void *base = mmap(NULL, size, prot, MAP_SHARED, fd, 0);

	return base == MAP_FAILED ? NULL : base;
}

/*
 * Maps every page of a region now, rather than at each page's first touch:
 * a first touch of a bounce buffer or a cell costs a page fault (1.5 us on
 * a cloud guest, 4 of them for a 16 KiB buffer), and the pool's buffers
 * come round in turn, so a sender that rarely fills them, probing the
 * bounce path between single copies, paid one on every fill and took the
 * pipeline for 3 times dearer than it was (path_choice.h: 16 KiB messages
 * stayed on the single copy at 4.4 us against 1.3).  Populating 3 MiB costs
 * 0.35 ms once, touching it page by page 1.2.  Best effort: without
 * MADV_POPULATE_WRITE (Linux 5.14) the pages fault in as they did.
 */
static void populate(void *base, size_t size)
{
#ifdef MADV_POPULATE_WRITE
	(void) madvise(base, size, MADV_POPULATE_WRITE);
#else
	(void) base;
	(void) size;
#endif
}

int xshm_region_create(struct xshm_region *region, uint64_t node_id,
		       uint64_t ep_id, const struct xshm_region_geom *geom)
{
	struct layout layout;
	int fd, ret;

	if (!geom_valid(geom))
		return -EINVAL;
	layout = layout_for(geom);
	memset(region, 0, sizeof(*region));
	xshm_region_name(region->name, sizeof(region->name), ep_id);
	fd = shm_open(region->name, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0)
		return -errno;
	/* Best effort, and before size_file allocates the pages. */
	if (geom->numa_local)
		(void) xshm_numa_place(fd, layout.size);
	region->cleanup = xshm_cleanup_add(region->name);
	ret = size_file(fd, layout.size);
	if (!ret) {
		region->base = map_fd(fd, layout.size, PROT_READ | PROT_WRITE);
		if (!region->base)
			ret = -errno;
	}
	close(fd);
	if (ret)
		goto unlink;

	region->size = layout.size;
	region->owner = 1;
	region->ep_id = ep_id;
	region->node_id = node_id;
	region->hdr = region->base;
	ret = init_contents(region, geom, &layout);
	if (ret)
		goto unmap;
	populate(region->base, region->size);
	return 0;

unmap:
	munmap(region->base, region->size);
unlink:
	xshm_cleanup_remove(region->cleanup);
	shm_unlink(region->name);
	memset(region, 0, sizeof(*region));
	return ret;
}

static int check_file(int fd, size_t *size)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 07777) != 0600)
		return -EACCES;
	/* Size 0: the owner has created the name but not sized it yet. */
	if (st.st_size == 0)
		return -EAGAIN;
	if ((uint64_t) st.st_size < sizeof(struct xshm_region_hdr) ||
	    (uint64_t) st.st_size > SIZE_MAX)
		return -EPROTO;
	*size = (size_t) st.st_size;
	return 0;
}

static int offsets_valid(uint64_t ring_offset, uint64_t pool_offset,
			 uint64_t mr_offset, uint64_t size)
{
	return ring_offset >= sizeof(struct xshm_region_hdr) &&
	       ring_offset % XSHM_CACHE_LINE == 0 &&
	       pool_offset > ring_offset && pool_offset % XSHM_CACHE_LINE == 0 &&
	       mr_offset > pool_offset && mr_offset % XSHM_CACHE_LINE == 0 &&
	       mr_offset < size &&
	       size - mr_offset >= sizeof(struct xshm_mr_pub);
}

/* Validate the header of a peer's region and attach its ring and pool. */
static int check_contents(struct xshm_region *region, uint64_t ep_id)
{
	volatile struct xshm_region_hdr *hdr = region->hdr;
	uint64_t ring_offset, pool_offset, mr_offset;

	if (!atomic_load_explicit(&region->hdr->ready, memory_order_acquire))
		return -EAGAIN;
	if (hdr->magic != XSHM_REGION_MAGIC ||
	    hdr->layout_version != XSHM_LAYOUT_VERSION ||
	    hdr->hdr_size != sizeof(struct xshm_region_hdr) ||
	    hdr->region_size != region->size || hdr->ep_id != ep_id ||
	    hdr->owner_uid != geteuid())
		return -EPROTO;
	ring_offset = hdr->ring_offset;
	pool_offset = hdr->pool_offset;
	mr_offset = hdr->mr_offset;
	if (!offsets_valid(ring_offset, pool_offset, mr_offset, region->size))
		return -EPROTO;
	region->ep_id = ep_id;
	region->node_id = hdr->node_id;
	return attach_parts(region, ring_offset, pool_offset, mr_offset);
}

static _Atomic uint64_t last_mapping_id;

int xshm_region_open(struct xshm_region *region, uint64_t ep_id)
{
	size_t size = 0;
	int fd, ret;

	memset(region, 0, sizeof(*region));
	xshm_region_name(region->name, sizeof(region->name), ep_id);
	fd = shm_open(region->name, O_RDWR, 0);
	if (fd < 0)
		return -errno;
	ret = check_file(fd, &size);
	if (!ret) {
		region->base = map_fd(fd, size, PROT_READ | PROT_WRITE);
		if (!region->base)
			ret = -errno;
	}
	close(fd);
	if (ret)
		goto clear;

	region->size = size;
	region->hdr = region->base;
	ret = check_contents(region, ep_id);
	if (ret)
		goto unmap;
	/* after the checks: a file of another size is not touched */
	populate(region->base, size);
	region->mapping_id = atomic_fetch_add(&last_mapping_id, 1) + 1;
	return 0;

unmap:
	munmap(region->base, size);
clear:
	memset(region, 0, sizeof(*region));
	return ret;
}

/* A same-user process may have truncated the file: writing would SIGBUS. */
static bool still_full_size(const struct xshm_region *region)
{
	struct stat st;
	int fd = shm_open(region->name, O_RDONLY, 0);
	bool full;

	if (fd < 0)
		return false;
	full = !fstat(fd, &st) && (uint64_t) st.st_size >= region->size;
	close(fd);
	return full;
}

void xshm_region_close(struct xshm_region *region)
{
	/* Peers still mapping it learn that nobody consumes it any more. */
	if (region->base && region->owner && still_full_size(region))
		atomic_store_explicit(&region->hdr->ready, 0,
				      memory_order_release);
	if (region->base)
		munmap(region->base, region->size);
	/* Forgotten first: a handler must never unlink a successor's name. */
	if (region->owner) {
		xshm_cleanup_remove(region->cleanup);
		shm_unlink(region->name);
	}
	memset(region, 0, sizeof(*region));
}

/* Reclaim support: decide from what a (possibly half-built) file holds. */
static int header_says_stale(int fd, const struct stat *st, bool *stale)
{
	struct xshm_region_hdr hdr;
	ssize_t n;

	if ((uint64_t) st->st_size < sizeof(hdr))
		return -EAGAIN;
	n = pread(fd, &hdr, sizeof(hdr), 0);
	if (n != (ssize_t) sizeof(hdr))
		return -EAGAIN;
	if (!atomic_load_explicit(&hdr.ready, memory_order_relaxed) ||
	    hdr.magic != XSHM_REGION_MAGIC)
		return -EAGAIN;
	*stale = !xshm_proc_alive(hdr.owner_pid, hdr.owner_start_time);
	return 0;
}

bool xshm_region_gone(uint64_t ep_id)
{
	char name[XSHM_NAME_MAX];
	struct stat st;
	bool dead = false;
	int fd;

	xshm_region_name(name, sizeof(name), ep_id);
	fd = shm_open(name, O_RDONLY, 0);
	if (fd < 0)
		return errno == ENOENT;
	if (fstat(fd, &st) || header_says_stale(fd, &st, &dead))
		dead = false;
	close(fd);
	return dead;
}

static bool is_stale(int fd, const struct stat *st)
{
	bool stale;

	if (header_says_stale(fd, st, &stale) == 0)
		return stale;
	return time(NULL) - st->st_mtime > UNREADY_STALE_SECONDS;
}

/* Unlink name only if it still is the file we examined. */
static bool unlink_if_same(int dirfd, const char *name, const struct stat *st)
{
	struct stat now;

	if (fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW))
		return false;
	if (now.st_ino != st->st_ino || now.st_dev != st->st_dev)
		return false;
	return unlinkat(dirfd, name, 0) == 0;
}

static bool reclaim_entry(int dirfd, const char *name)
{
	struct stat st;
	bool stale;
	int fd;

	fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;	/* vanished, or not ours to read */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return false;
	}
	stale = is_stale(fd, &st);
	/* Peers still mapping it must not take a new owner's file for it. */
	if (stale)
		xshm_region_file_mark_closed(fd);
	close(fd);
	return stale && unlink_if_same(dirfd, name, &st);
}

int xshm_shm_files_reclaim(const char *kind,
			   bool (*reclaim)(int dirfd, const char *name))
{
	char prefix[32];
	struct dirent *entry;
	size_t prefix_len;
	int removed = 0;
	DIR *dir;

	prefix_len = (size_t) snprintf(prefix, sizeof(prefix), "%s-%u-", kind,
				       (unsigned) geteuid());
	dir = opendir(SHM_DIR);
	if (!dir)
		return 0;
	while ((entry = readdir(dir)) != NULL) {
		if (strncmp(entry->d_name, prefix, prefix_len) != 0)
			continue;
		if (reclaim(dirfd(dir), entry->d_name))
			removed++;
	}
	closedir(dir);
	return removed;
}

int xshm_region_reclaim_stale(void)
{
	return xshm_shm_files_reclaim("xshm", reclaim_entry);
}
