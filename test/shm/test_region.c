/* Unit tests of shm/region.c and shm/proc.c. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ep_ids.h"
#include "shm/proc.h"
#include "shm/region.h"

#define TEST_TIMEOUT	60
#define CHILD_CMDS	1000

static const struct xshm_region_geom test_geom = {
	.ring_cells = 64,
	.pool_bufs = 16,
	.buf_size = 4096,
};

static void shm_path(char *buf, size_t len, uint64_t ep_id)
{
	char name[XSHM_NAME_MAX];

	xshm_region_name(name, sizeof(name), ep_id);
	snprintf(buf, len, "/dev/shm%s", name);
}

static int region_file_exists(uint64_t ep_id)
{
	char path[64];

	shm_path(path, sizeof(path), ep_id);
	return access(path, F_OK) == 0;
}

static uint32_t is_ready(const struct xshm_region *region)
{
	return atomic_load(&region->hdr->ready);
}

static void create_ok(struct xshm_region *region, uint64_t ep_id)
{
	ck_assert_int_eq(xshm_region_create(region, 42, ep_id, &test_geom), 0);
}

START_TEST(name_format)
{
	char name[XSHM_NAME_MAX], expected[XSHM_NAME_MAX];

	xshm_region_name(name, sizeof(name), 0x12ab);
	snprintf(expected, sizeof(expected), "/xshm-%u-00000000000012ab",
		 (unsigned) geteuid());
	ck_assert_str_eq(name, expected);
}
END_TEST

START_TEST(create_fills_header)
{
	struct xshm_region region;
	uint64_t ep_id = test_ep_id(), start;
	struct stat st;
	char path[64];

	create_ok(&region, ep_id);
	ck_assert_int_eq(region.owner, 1);
	ck_assert_uint_eq(region.hdr->magic, XSHM_REGION_MAGIC);
	ck_assert_uint_eq(region.hdr->layout_version, XSHM_LAYOUT_VERSION);
	ck_assert_uint_eq(region.hdr->hdr_size, sizeof(struct xshm_region_hdr));
	ck_assert_uint_eq(region.hdr->region_size, region.size);
	ck_assert_uint_eq(region.hdr->ep_id, ep_id);
	ck_assert_uint_eq(region.hdr->node_id, 42);
	ck_assert_uint_eq(region.hdr->owner_uid, geteuid());
	ck_assert_int_eq(region.hdr->owner_pid, getpid());
	ck_assert_int_eq(xshm_proc_start_time(getpid(), &start), 0);
	ck_assert_uint_eq(region.hdr->owner_start_time, start);
	ck_assert_uint_eq(is_ready(&region), 1);
	ck_assert_uint_eq(region.hdr->ring_offset % 4096, 0);
	ck_assert_uint_eq(region.hdr->pool_offset % 4096, 0);
	ck_assert_uint_eq(region.ring.mask + 1, test_geom.ring_cells);
	ck_assert_uint_eq(region.ring.cell_size, XSHM_CELL_SIZE);
	ck_assert_uint_eq(region.pool.nbufs, test_geom.pool_bufs);
	ck_assert_uint_eq(region.pool.buf_size, test_geom.buf_size);
	shm_path(path, sizeof(path), ep_id);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_uint_eq(st.st_size, region.size);
	xshm_region_close(&region);
}
END_TEST

START_TEST(create_rejects_bad_geom)
{
	struct xshm_region_geom geom = test_geom;
	struct xshm_region region;
	uint64_t ep_id = test_ep_id();

	geom.ring_cells = 48;
	ck_assert_int_eq(xshm_region_create(&region, 1, ep_id, &geom), -EINVAL);
	geom = test_geom;
	geom.buf_size = 100;
	ck_assert_int_eq(xshm_region_create(&region, 1, ep_id, &geom), -EINVAL);
	geom = test_geom;
	geom.pool_bufs = 0;
	ck_assert_int_eq(xshm_region_create(&region, 1, ep_id, &geom), -EINVAL);
	ck_assert(!region_file_exists(ep_id));
}
END_TEST

/* The child's half of the round trip; returns an exit code. */
static int child_send(uint64_t ep_id, const struct xshm_region_hdr *expect)
{
	struct xshm_region peer;
	struct xshm_cmd *cmd;
	uint32_t index, i;
	uint64_t pos;

	if (xshm_region_open(&peer, ep_id) != 0)
		return 2;
	if (peer.owner || peer.ep_id != ep_id || peer.node_id != 42 ||
	    peer.hdr->region_size != expect->region_size ||
	    peer.hdr->owner_pid != expect->owner_pid ||
	    peer.hdr->owner_start_time != expect->owner_start_time ||
	    peer.hdr->ring_offset != expect->ring_offset ||
	    peer.hdr->pool_offset != expect->pool_offset)
		return 3;
	for (i = 0; i < CHILD_CMDS; i++) {
		while (!(cmd = xshm_ring_reserve(&peer.ring, &pos)))
			sched_yield();
		cmd->op = XSHM_OP_TAGGED;
		cmd->src_ep_id = ep_id + 1;
		cmd->tag = i;
		if (i % 10 == 0 &&
		    xshm_pool_alloc(&peer.pool, ep_id + 1, XSHM_POOL_ROUND,
				    &index) == 0) {
			memset(xshm_pool_buf(&peer.pool, index), (int) (i & 0xff),
			       test_geom.buf_size);
			cmd->proto = XSHM_PROTO_BUF;
			cmd->buf_index = index;
			cmd->chunk_len = test_geom.buf_size;
		} else {
			cmd->proto = XSHM_PROTO_INLINE;
			cmd->chunk_len = sizeof(i);
			memcpy(cmd->data, &i, sizeof(i));
		}
		xshm_ring_commit(&peer.ring, cmd, pos);
	}
	xshm_region_close(&peer);
	return 0;
}

static void check_cmd(const struct xshm_region *region,
		      const struct xshm_cmd *cmd, uint32_t expected)
{
	const unsigned char *buf;
	uint32_t value, k;

	ck_assert_uint_eq(cmd->op, XSHM_OP_TAGGED);
	ck_assert_uint_eq(cmd->tag, expected);
	ck_assert_uint_eq(cmd->src_ep_id, region->ep_id + 1);
	if (cmd->proto == XSHM_PROTO_INLINE) {
		memcpy(&value, cmd->data, sizeof(value));
		ck_assert_uint_eq(value, expected);
		return;
	}
	ck_assert_uint_eq(cmd->proto, XSHM_PROTO_BUF);
	buf = xshm_pool_buf(&region->pool, cmd->buf_index);
	ck_assert_ptr_nonnull(buf);
	for (k = 0; k < cmd->chunk_len; k++)
		ck_assert_uint_eq(buf[k], expected & 0xff);
	ck_assert_int_eq(xshm_pool_free(&region->pool, cmd->buf_index,
					cmd->src_ep_id), 0);
}

/* Consume CHILD_CMDS commands, failing if the child dies before sending. */
static void receive_from(struct xshm_region *region, pid_t child)
{
	uint32_t received = 0;
	int status = 0, exited = 0;

	while (received < CHILD_CMDS) {
		struct xshm_cmd *cmd = xshm_ring_peek(&region->ring);

		if (!cmd) {
			if (exited)
				ck_abort_msg("child exited %d after %u cmds",
					     WEXITSTATUS(status), received);
			exited = waitpid(child, &status, WNOHANG) == child;
			sched_yield();
			continue;
		}
		check_cmd(region, cmd, received++);
		xshm_ring_release(&region->ring, cmd);
	}
	if (!exited)
		ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_ptr_null(xshm_ring_peek(&region->ring));
}

START_TEST(round_trip_with_child)
{
	struct xshm_region region;
	uint64_t ep_id = test_ep_id();
	pid_t child;

	create_ok(&region, ep_id);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(child_send(ep_id, region.hdr));
	}
	receive_from(&region, child);
	/* Every borrowed buffer came back. */
	for (uint32_t i = 0, index; i < test_geom.pool_bufs; i++)
		ck_assert_int_eq(xshm_pool_alloc(&region.pool, 1,
						 XSHM_POOL_ROUND, &index), 0);
	xshm_region_close(&region);
	ck_assert(!region_file_exists(ep_id));
}
END_TEST

/* Pages of [base, base + size) without a page table entry (pagemap(5)). */
static size_t pages_unmapped(const void *base, size_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t first = (uintptr_t) base / (uintptr_t) page;
	size_t missing = 0, npages = size / (size_t) page;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	ck_assert_int_ge(fd, 0);
	for (size_t i = 0; i < npages; i++) {
		uint64_t entry = 0;

		ck_assert_int_eq(pread(fd, &entry, sizeof(entry),
				       (off_t) ((first + i) * sizeof(entry))),
				 sizeof(entry));
		missing += !(entry >> 63);
	}
	close(fd);
	return missing;
}

/*
 * Both the owner's mapping and a peer's hold every page from the start: a
 * first touch on the data path would cost a page fault (region.c).
 */
START_TEST(mappings_are_populated)
{
	struct xshm_region region, peer;
	uint64_t ep_id = test_ep_id();

	create_ok(&region, ep_id);
	ck_assert_uint_eq(pages_unmapped(region.base, region.size), 0);
	ck_assert_int_eq(xshm_region_open(&peer, ep_id), 0);
	ck_assert_uint_eq(pages_unmapped(peer.base, peer.size), 0);
	xshm_region_close(&peer);
	xshm_region_close(&region);
}
END_TEST

START_TEST(create_twice)
{
	struct xshm_region region, again, peer;
	uint64_t ep_id = test_ep_id();

	create_ok(&region, ep_id);
	ck_assert_int_eq(xshm_region_create(&again, 42, ep_id, &test_geom),
			 -EEXIST);
	/* The failed attempt must not have disturbed the first. */
	ck_assert_int_eq(xshm_region_open(&peer, ep_id), 0);
	xshm_region_close(&peer);
	xshm_region_close(&region);
}
END_TEST

START_TEST(open_missing)
{
	struct xshm_region peer;

	ck_assert_int_eq(xshm_region_open(&peer, test_ep_id()), -ENOENT);
	ck_assert_ptr_null(peer.base);
}
END_TEST

START_TEST(close_unlinks_owner_only)
{
	struct xshm_region region, peer;
	uint64_t ep_id = test_ep_id();

	create_ok(&region, ep_id);
	ck_assert(region_file_exists(ep_id));
	ck_assert_int_eq(xshm_region_open(&peer, ep_id), 0);
	xshm_region_close(&peer);
	ck_assert(region_file_exists(ep_id));
	xshm_region_close(&region);
	ck_assert(!region_file_exists(ep_id));
	ck_assert_int_eq(xshm_region_open(&peer, ep_id), -ENOENT);
}
END_TEST

START_TEST(owner_close_is_seen_by_peers)
{
	struct xshm_region region, peer;
	uint64_t ep_id = test_ep_id();

	create_ok(&region, ep_id);
	ck_assert_int_eq(xshm_region_open(&peer, ep_id), 0);
	ck_assert(xshm_region_is_open(&peer));
	xshm_region_close(&region);
	ck_assert(!xshm_region_is_open(&peer));
	xshm_region_close(&peer);
}
END_TEST

/* Create a region, damage it with mutate(), and return what open says. */
static int open_damaged(void (*mutate)(struct xshm_region *owner))
{
	struct xshm_region region, peer;
	uint64_t ep_id = test_ep_id();
	int ret;

	create_ok(&region, ep_id);
	mutate(&region);
	ret = xshm_region_open(&peer, ep_id);
	if (ret == 0)
		xshm_region_close(&peer);
	else
		ck_assert_ptr_null(peer.base);
	xshm_region_close(&region);
	ck_assert(!region_file_exists(ep_id));
	return ret;
}

static int owner_fd(const struct xshm_region *owner)
{
	int fd = shm_open(owner->name, O_RDWR, 0);

	ck_assert_int_ge(fd, 0);
	return fd;
}

static void truncate_to(const struct xshm_region *owner, off_t size)
{
	int fd = owner_fd(owner);

	ck_assert_int_eq(ftruncate(fd, size), 0);
	close(fd);
}

static void chmod_to(const struct xshm_region *owner, mode_t mode)
{
	int fd = owner_fd(owner);

	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
}

static void nothing(struct xshm_region *r) { (void) r; }
static void bad_magic(struct xshm_region *r) { r->hdr->magic ^= 1; }
static void bad_version(struct xshm_region *r) { r->hdr->layout_version++; }
static void bad_hdr_size(struct xshm_region *r) { r->hdr->hdr_size = 64; }
static void bad_ep_id(struct xshm_region *r) { r->hdr->ep_id++; }
static void bad_uid(struct xshm_region *r) { r->hdr->owner_uid++; }
static void bad_size(struct xshm_region *r) { r->hdr->region_size += 4096; }
static void ring_at_zero(struct xshm_region *r) { r->hdr->ring_offset = 0; }
static void ring_misaligned(struct xshm_region *r) { r->hdr->ring_offset += 8; }
static void pool_beyond(struct xshm_region *r) { r->hdr->pool_offset = r->size; }
static void pool_huge(struct xshm_region *r) { r->hdr->pool_offset = UINT64_MAX - 4095; }
static void pool_before_ring(struct xshm_region *r) { r->hdr->pool_offset = r->hdr->ring_offset; }
static void ring_cells_bad(struct xshm_region *r) { r->ring.ring->ncells = 3; }
static void ring_too_big(struct xshm_region *r) { r->ring.ring->ncells = 1u << 20; }
static void pool_nbufs_bad(struct xshm_region *r) { ((struct xshm_pool *) ((char *) r->base + r->hdr->pool_offset))->nbufs = 1u << 20; }
static void hdr_size_big(struct xshm_region *r) { r->hdr->hdr_size = 4096; }
static void size_smaller(struct xshm_region *r) { r->hdr->region_size -= 4096; }
static void ring_beyond(struct xshm_region *r) { r->hdr->ring_offset = r->size; }
static void ring_huge(struct xshm_region *r) { r->hdr->ring_offset = UINT64_MAX - 63; }
static void ring_on_pool(struct xshm_region *r) { r->hdr->ring_offset = r->hdr->pool_offset - 64; }
static void pool_misaligned(struct xshm_region *r) { r->hdr->pool_offset += 8; }
static void ring_cells_zero(struct xshm_region *r) { r->ring.ring->ncells = 0; }
static void ring_cells_double(struct xshm_region *r) { r->ring.ring->ncells *= 2; }
static void ring_cells_few(struct xshm_region *r) { r->ring.ring->ncells = XSHM_RING_CELLS_MIN / 2; }
static void ring_cell_small(struct xshm_region *r) { r->ring.ring->cell_size = 64; }
static void ring_cell_zero(struct xshm_region *r) { r->ring.ring->cell_size = 0; }
static struct xshm_pool *pool_of(struct xshm_region *r) { return (struct xshm_pool *) ((char *) r->base + r->hdr->pool_offset); }
static void pool_buf_size_bad(struct xshm_region *r) { pool_of(r)->buf_size = 100; }
static void pool_buf_size_zero(struct xshm_region *r) { pool_of(r)->buf_size = 0; }
static void pool_bufs_beyond(struct xshm_region *r) { pool_of(r)->bufs_offset = r->size; }
static void pool_map_beyond(struct xshm_region *r) { pool_of(r)->free_map_offset = UINT64_MAX - 4095; }
static void pool_map_on_bufs(struct xshm_region *r) { pool_of(r)->free_map_offset = pool_of(r)->bufs_offset; }
static void truncated(struct xshm_region *r) { truncate_to(r, (off_t) r->size - 4096); }
static void grown(struct xshm_region *r) { truncate_to(r, (off_t) r->size + 4096); }
static void header_only(struct xshm_region *r) { truncate_to(r, sizeof(struct xshm_region_hdr)); }
static void short_of_header(struct xshm_region *r) { truncate_to(r, sizeof(struct xshm_region_hdr) - 1); }
static void tiny(struct xshm_region *r) { truncate_to(r, 16); }
static void emptied(struct xshm_region *r) { truncate_to(r, 0); }
static void mode_0644(struct xshm_region *r) { chmod_to(r, 0644); }
static void mode_0400(struct xshm_region *r) { chmod_to(r, 0400); }
static void mode_0700(struct xshm_region *r) { chmod_to(r, 0700); }
static void mode_0660(struct xshm_region *r) { chmod_to(r, 0660); }
static void not_ready(struct xshm_region *r) { atomic_store(&r->hdr->ready, 0); }

START_TEST(open_rejects_damage)
{
	ck_assert_int_eq(open_damaged(nothing), 0);
	ck_assert_int_eq(open_damaged(bad_magic), -EPROTO);
	ck_assert_int_eq(open_damaged(bad_version), -EPROTO);
	ck_assert_int_eq(open_damaged(bad_hdr_size), -EPROTO);
	ck_assert_int_eq(open_damaged(bad_ep_id), -EPROTO);
	ck_assert_int_eq(open_damaged(bad_uid), -EPROTO);
	ck_assert_int_eq(open_damaged(bad_size), -EPROTO);
	ck_assert_int_eq(open_damaged(ring_at_zero), -EPROTO);
	ck_assert_int_eq(open_damaged(ring_misaligned), -EPROTO);
	ck_assert_int_eq(open_damaged(pool_beyond), -EPROTO);
	ck_assert_int_eq(open_damaged(pool_huge), -EPROTO);
	ck_assert_int_eq(open_damaged(pool_before_ring), -EPROTO);
	ck_assert_int_eq(open_damaged(ring_cells_bad), -EPROTO);
	ck_assert_int_eq(open_damaged(ring_too_big), -EPROTO);
	ck_assert_int_eq(open_damaged(pool_nbufs_bad), -EPROTO);
	ck_assert_int_eq(open_damaged(hdr_size_big), -EPROTO);
	ck_assert_int_eq(open_damaged(size_smaller), -EPROTO);
	ck_assert_int_eq(open_damaged(ring_beyond), -EPROTO);
	ck_assert_int_eq(open_damaged(ring_huge), -EPROTO);
	ck_assert_int_eq(open_damaged(ring_on_pool), -EPROTO);
	ck_assert_int_eq(open_damaged(pool_misaligned), -EPROTO);
	ck_assert_int_eq(open_damaged(ring_cells_zero), -EPROTO);
	ck_assert_int_eq(open_damaged(ring_cells_double), -EPROTO);
	ck_assert_int_eq(open_damaged(ring_cells_few), -EPROTO);
	ck_assert_int_eq(open_damaged(ring_cell_small), -EPROTO);
	ck_assert_int_eq(open_damaged(ring_cell_zero), -EPROTO);
	ck_assert_int_eq(open_damaged(pool_buf_size_bad), -EPROTO);
	ck_assert_int_eq(open_damaged(pool_buf_size_zero), -EPROTO);
	ck_assert_int_eq(open_damaged(pool_bufs_beyond), -EPROTO);
	ck_assert_int_eq(open_damaged(pool_map_beyond), -EPROTO);
	ck_assert_int_eq(open_damaged(pool_map_on_bufs), -EPROTO);
	ck_assert_int_eq(open_damaged(truncated), -EPROTO);
	ck_assert_int_eq(open_damaged(grown), -EPROTO);
	ck_assert_int_eq(open_damaged(header_only), -EPROTO);
	ck_assert_int_eq(open_damaged(short_of_header), -EPROTO);
	ck_assert_int_eq(open_damaged(tiny), -EPROTO);
	ck_assert_int_eq(open_damaged(mode_0644), -EACCES);
	ck_assert_int_eq(open_damaged(mode_0400), -EACCES);
	ck_assert_int_eq(open_damaged(mode_0700), -EACCES);
	ck_assert_int_eq(open_damaged(mode_0660), -EACCES);
	ck_assert_int_eq(open_damaged(not_ready), -EAGAIN);
	/* Named but not sized yet: the owner is still creating it. */
	ck_assert_int_eq(open_damaged(emptied), -EAGAIN);
}
END_TEST

#define NOBODY	65534

static void chown_to_nobody(struct xshm_region *r)
{
	int fd = owner_fd(r);

	ck_assert_int_eq(fchown(fd, NOBODY, NOBODY), 0);
	close(fd);
}

/* Root: our own region, given away to another user, is refused. */
START_TEST(open_rejects_region_given_away)
{
	ck_assert_int_eq(open_damaged(chown_to_nobody), -EACCES);
}
END_TEST

static int plant(const char *name, const void *bytes, size_t size)
{
	int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	ssize_t written;

	if (fd < 0)
		return 3;
	written = pwrite(fd, bytes, size, 0);
	close(fd);
	return written == (ssize_t) size ? 0 : 4;
}

static int plant_as_nobody(const char *name, const void *bytes, size_t size)
{
	if (setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY))
		return 2;
	return plant(name, bytes, size);
}

/*
 * Root: another user plants a file under one of our names, a faithful copy
 * of a valid region whose header claims our uid.  The same bytes in a file
 * of ours open, so only the file's owner can be what refuses it.
 */
START_TEST(open_rejects_region_planted_by_other_user)
{
	struct xshm_region model, peer;
	uint64_t planted_ep = test_ep_id();
	char name[XSHM_NAME_MAX];
	unsigned char *copy;
	int status;
	pid_t child;

	create_ok(&model, test_ep_id());
	copy = malloc(model.size);
	ck_assert_ptr_nonnull(copy);
	memcpy(copy, model.base, model.size);
	((struct xshm_region_hdr *) copy)->ep_id = planted_ep;
	xshm_region_name(name, sizeof(name), planted_ep);

	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0)
		_exit(plant_as_nobody(name, copy, model.size));
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_int_eq(xshm_region_open(&peer, planted_ep), -EACCES);
	ck_assert_ptr_null(peer.base);
	ck_assert_int_eq(shm_unlink(name), 0);

	ck_assert_int_eq(plant(name, copy, model.size), 0);
	ck_assert_int_eq(xshm_region_open(&peer, planted_ep), 0);
	xshm_region_close(&peer);
	ck_assert_int_eq(shm_unlink(name), 0);
	xshm_region_close(&model);
	free(copy);
}
END_TEST

/*
 * Not root: no file of another user can be made, so check that giving
 * ours away (to root) is refused and leaves it as it was (still opens).
 */
START_TEST(other_owner_cannot_be_staged_unprivileged)
{
	struct xshm_region region, peer;
	uint64_t ep_id = test_ep_id();
	int fd;

	create_ok(&region, ep_id);
	fd = owner_fd(&region);
	ck_assert_int_eq(fchown(fd, 0, (gid_t) -1), -1);
	ck_assert_int_eq(errno, EPERM);
	close(fd);
	ck_assert_int_eq(xshm_region_open(&peer, ep_id), 0);
	xshm_region_close(&peer);
	xshm_region_close(&region);
}
END_TEST

/* Names that are not regular files: refused, without blocking. */
START_TEST(open_rejects_non_files)
{
	struct xshm_region model, peer;
	uint64_t ep_id = test_ep_id();
	char target[64], path[64];

	create_ok(&model, test_ep_id());
	shm_path(target, sizeof(target), model.ep_id);
	shm_path(path, sizeof(path), ep_id);

	ck_assert_int_eq(symlink(target, path), 0);
	ck_assert_int_eq(xshm_region_open(&peer, ep_id), -ELOOP);
	ck_assert_ptr_null(peer.base);
	ck_assert_int_eq(unlink(path), 0);

	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(xshm_region_open(&peer, ep_id), -EACCES);
	ck_assert_int_eq(unlink(path), 0);

	/* shm_open reports a directory as EINVAL. */
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(xshm_region_open(&peer, ep_id), -EINVAL);
	ck_assert_int_eq(rmdir(path), 0);
	xshm_region_close(&model);
}
END_TEST

static pid_t dead_child(void)
{
	pid_t child = fork();
	int status;

	ck_assert_int_ge(child, 0);
	if (child == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	return child;
}

START_TEST(reclaim_dead_owner)
{
	struct xshm_region live, stale_start;
	uint64_t dead_ep = test_ep_id(), live_ep = test_ep_id();
	uint64_t restarted_ep = test_ep_id();
	int status, removed;
	pid_t child;

	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct xshm_region region;

		_exit(xshm_region_create(&region, 42, dead_ep, &test_geom) ? 1 : 0);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert(region_file_exists(dead_ep));

	create_ok(&live, live_ep);
	/* Our pid, but another start time: a previous process with our pid. */
	create_ok(&stale_start, restarted_ep);
	stale_start.hdr->owner_start_time++;

	removed = xshm_region_reclaim_stale();
	ck_assert_int_ge(removed, 2);
	ck_assert(!region_file_exists(dead_ep));
	ck_assert(!region_file_exists(restarted_ep));
	ck_assert(region_file_exists(live_ep));
	stale_start.owner = 0;	/* already unlinked */
	xshm_region_close(&stale_start);
	xshm_region_close(&live);
	ck_assert(!region_file_exists(live_ep));
}
END_TEST

/* A name whose owner died before sizing it: judged by its age. */
static void make_unready(uint64_t ep_id, time_t age)
{
	struct timespec times[2];
	char name[XSHM_NAME_MAX];
	int fd;

	xshm_region_name(name, sizeof(name), ep_id);
	fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	ck_assert_int_ge(fd, 0);
	clock_gettime(CLOCK_REALTIME, &times[0]);
	times[0].tv_sec -= age;
	times[1] = times[0];
	ck_assert_int_eq(futimens(fd, times), 0);
	close(fd);
}

START_TEST(reclaim_unready_by_age)
{
	uint64_t old_ep = test_ep_id(), young_ep = test_ep_id();
	char name[XSHM_NAME_MAX];

	make_unready(old_ep, 120);
	make_unready(young_ep, 0);
	ck_assert_int_ge(xshm_region_reclaim_stale(), 1);
	ck_assert(!region_file_exists(old_ep));
	ck_assert(region_file_exists(young_ep));
	xshm_region_name(name, sizeof(name), young_ep);
	ck_assert_int_eq(shm_unlink(name), 0);
}
END_TEST

START_TEST(proc_start_time_and_alive)
{
	uint64_t start, again;
	pid_t gone;

	ck_assert_int_eq(xshm_proc_start_time(getpid(), &start), 0);
	ck_assert_uint_ne(start, 0);
	ck_assert(xshm_proc_alive(getpid(), start));
	ck_assert(!xshm_proc_alive(getpid(), start + 1));
	ck_assert(!xshm_proc_alive(getpid(), 0));
	ck_assert(!xshm_proc_alive(0, start));
	ck_assert(!xshm_proc_alive(-1, start));
	gone = dead_child();
	ck_assert(!xshm_proc_alive(gone, start));
	ck_assert_int_lt(xshm_proc_start_time(gone, &again), 0);

	/* comm may contain ") " and digits: parsing must not be fooled. */
	ck_assert_int_eq(prctl(PR_SET_NAME, "x) 1 2 3 ) 9 9"), 0);
	ck_assert_int_eq(xshm_proc_start_time(getpid(), &again), 0);
	ck_assert_uint_eq(again, start);
}
END_TEST

START_TEST(proc_zombie_not_alive)
{
	uint64_t start;
	pid_t child = fork();
	int status, i;

	ck_assert_int_ge(child, 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	for (i = 0; i < 1000 && xshm_proc_start_time(child, &start); i++)
		usleep(1000);
	ck_assert_int_eq(xshm_proc_start_time(child, &start), 0);
	ck_assert(xshm_proc_alive(child, start));
	kill(child, SIGKILL);
	/* Until reaped the child is a zombie: its pid exists but it is dead. */
	ck_assert_int_eq(waitid(P_PID, child, NULL, WEXITED | WNOWAIT), 0);
	ck_assert(!xshm_proc_alive(child, start));
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(!xshm_proc_alive(child, start));
}
END_TEST

START_TEST(node_id_stable)
{
	uint64_t id = xshm_node_id();

	ck_assert_uint_ne(id, 0);
	ck_assert_uint_eq(xshm_node_id(), id);
	ck_assert_uint_eq(xshm_node_id(), id);
}
END_TEST

static Suite *region_suite(void)
{
	Suite *suite = suite_create("region");
	TCase *region = tcase_create("region");
	TCase *reclaim = tcase_create("reclaim");
	TCase *proc = tcase_create("proc");

	tcase_set_timeout(region, TEST_TIMEOUT);
	tcase_add_test(region, name_format);
	tcase_add_test(region, create_fills_header);
	tcase_add_test(region, create_rejects_bad_geom);
	tcase_add_test(region, round_trip_with_child);
	tcase_add_test(region, mappings_are_populated);
	tcase_add_test(region, create_twice);
	tcase_add_test(region, open_missing);
	tcase_add_test(region, close_unlinks_owner_only);
	tcase_add_test(region, owner_close_is_seen_by_peers);
	tcase_add_test(region, open_rejects_damage);
	tcase_add_test(region, open_rejects_non_files);
	if (geteuid() == 0) {
		tcase_add_test(region, open_rejects_region_given_away);
		tcase_add_test(region, open_rejects_region_planted_by_other_user);
	} else {
		tcase_add_test(region, other_owner_cannot_be_staged_unprivileged);
	}
	suite_add_tcase(suite, region);

	tcase_set_timeout(reclaim, TEST_TIMEOUT);
	tcase_add_test(reclaim, reclaim_dead_owner);
	tcase_add_test(reclaim, reclaim_unready_by_age);
	suite_add_tcase(suite, reclaim);

	tcase_set_timeout(proc, TEST_TIMEOUT);
	tcase_add_test(proc, proc_start_time_and_alive);
	tcase_add_test(proc, proc_zombie_not_alive);
	tcase_add_test(proc, node_id_stable);
	suite_add_tcase(suite, proc);
	return suite;
}

int main(void)
{
	if (test_ep_ids_init(0x7e57))
		return EXIT_FAILURE;
	return test_run_suite(region_suite());
}
