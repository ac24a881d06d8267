#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liveness.h"
#include "proc.h"

#define SHM_DIR	"/dev/shm"

struct xshm_owner xshm_region_owner(const struct xshm_region *region)
{
	const volatile struct xshm_region_hdr *hdr = region->hdr;

	return (struct xshm_owner) {
		.pid = hdr->owner_pid, .start_time = hdr->owner_start_time,
	};
}

bool xshm_owner_alive(struct xshm_owner owner)
{
	return owner.pid <= 0 || xshm_proc_alive(owner.pid, owner.start_time);
}

bool xshm_region_file_mark_closed(int fd)
{
	uint32_t closed = 0;

	return pwrite(fd, &closed, sizeof(closed),
		      offsetof(struct xshm_region_hdr, ready)) == sizeof(closed);
}

/* The file under the region's name, if its header names that dead owner. */
static bool names_owner(int fd, const struct xshm_region *region,
			struct xshm_owner dead)
{
	struct xshm_region_hdr hdr;

	if (pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t) sizeof(hdr))
		return false;
	return hdr.magic == XSHM_REGION_MAGIC && hdr.ep_id == region->ep_id &&
	       hdr.owner_pid == dead.pid &&
	       hdr.owner_start_time == dead.start_time;
}

static void unlink_if_owned_by(const struct xshm_region *region,
			       struct xshm_owner dead)
{
	const char *name = region->name[0] == '/' ? region->name + 1 :
						    region->name;
	struct stat before, now;
	int dirfd, fd;

	dirfd = open(SHM_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && !fstat(fd, &before) && names_owner(fd, region, dead) &&
	    !fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) &&
	    now.st_ino == before.st_ino && now.st_dev == before.st_dev)
		unlinkat(dirfd, name, 0);
	if (fd >= 0)
		close(fd);
	close(dirfd);
}

void xshm_region_retire(struct xshm_region *region, struct xshm_owner dead)
{
	unlink_if_owned_by(region, dead);
	atomic_store_explicit(&region->hdr->ready, 0, memory_order_release);
}
