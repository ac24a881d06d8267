/*
 * Sending to an address whose region is a bad file: every send call returns
 * the documented error (-FI_EHOSTUNREACH; -FI_EAGAIN while the region is
 * not marked ready), nothing crashes, and the endpoint goes on working.
 * The bad regions are copies of the endpoint's own region, planted under
 * other endpoint ids and damaged one way each; an undamaged copy is the
 * control that the damage is what gets refused.
 */
#include "harness.h"
#include "av_helpers.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/layout.h"

#define TAG		0xbadULL
#define BIG		(64 * 1024)
#define NOBODY		65534

static struct xt_cfg cfg;

struct image {
	unsigned char *bytes;
	size_t size;		/* bytes planted */
	mode_t mode;
	bool give_away;		/* chown to nobody */
};

static struct xshm_region_hdr *hdr_of(struct image *img)
{
	return (struct xshm_region_hdr *) img->bytes;
}

static void region_path(char *buf, size_t len, uint64_t ep_id)
{
	snprintf(buf, len, "/dev/shm/xshm-%u-%016llx", (unsigned) geteuid(),
		 (unsigned long long) ep_id);
}

/* A copy of x's region, as it would be for endpoint id ep_id. */
static struct image copy_region(const struct xt_ep *x, uint64_t ep_id)
{
	struct image img = { .mode = 0600 };
	char path[128];
	struct stat st;
	int fd;

	region_path(path, sizeof(path), xt_ep_id(x));
	fd = open(path, O_RDONLY);
	XT_ASSERT(fd >= 0 && fstat(fd, &st) == 0, "%s", path);
	img.size = (size_t) st.st_size;
	img.bytes = xt_alloc(img.size);
	XT_ASSERT(pread(fd, img.bytes, img.size, 0) == (ssize_t) img.size, "read");
	close(fd);
	hdr_of(&img)->ep_id = ep_id;
	return img;
}

static void plant(const struct image *img, uint64_t ep_id)
{
	char path[128];
	int fd;

	region_path(path, sizeof(path), ep_id);
	fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
	XT_ASSERT(fd >= 0, "create %s", path);
	XT_ASSERT(pwrite(fd, img->bytes, img->size, 0) == (ssize_t) img->size,
		  "write");
	XT_ASSERT(fchmod(fd, img->mode) == 0, "chmod");
	if (img->give_away)
		XT_ASSERT(fchown(fd, NOBODY, NOBODY) == 0, "chown");
	close(fd);
}

static void unplant(uint64_t ep_id)
{
	char path[128];

	region_path(path, sizeof(path), ep_id);
	XT_ASSERT(unlink(path) == 0, "unlink %s", path);
}

#define SEND_IS(what, call, rc) \
	do { \
		ssize_t _got = (call); \
		XT_ASSERT(_got == (rc), "%s: %s returned %zd (%s), expected %d", \
			  (what), #call, _got, xt_strerror(_got), (rc)); \
	} while (0)

/* Every kind of send to dest returns rc, twice (the failure is not cached). */
static void sends_return(struct xt_ep *x, fi_addr_t dest, const char *what, int rc)
{
	static char small[8] = "bad", cells[XSHM_CELLS_MSG_MAX], big[BIG];

	for (int round = 0; round < 2; round++) {
		SEND_IS(what, fi_send(x->ep, small, sizeof(small), NULL, dest, NULL), rc);
		SEND_IS(what, fi_tsend(x->ep, small, sizeof(small), NULL, dest, TAG, NULL), rc);
		SEND_IS(what, fi_inject(x->ep, small, sizeof(small), dest), rc);
		SEND_IS(what, fi_tinject(x->ep, small, sizeof(small), dest, TAG), rc);
		SEND_IS(what, fi_tsenddata(x->ep, small, sizeof(small), NULL, 7, dest,
					   TAG, NULL), rc);
		if (rc == 0)
			continue;	/* the control: no need to fill its ring */
		SEND_IS(what, fi_tsend(x->ep, cells, sizeof(cells), NULL, dest, TAG, NULL), rc);
		SEND_IS(what, fi_tsend(x->ep, big, sizeof(big), NULL, dest, TAG, NULL), rc);
	}
}

/* x still talks to itself: a tagged message goes through and completes. */
static void self_still_works(struct xt_ep *x, fi_addr_t self)
{
	char out[16] = "still fine", in[16] = "";
	struct xt_comp comp;
	int tries = 0;

	xt_post_recv(x, true, in, sizeof(in), FI_ADDR_UNSPEC, TAG, 0, in);
	XT_ASSERT_OK(fi_tsend(x->ep, out, sizeof(out), NULL, self, TAG, out));
	xt_expect_comp(x->rx, x->tx, &comp);
	XT_ASSERT(comp.e.op_context == in, "receive completion");
	XT_ASSERT(!strcmp(in, out), "received \"%s\"", in);
	/* Skip the completions of the sends to the intact copy. */
	do
		xt_expect_comp(x->tx, x->rx, &comp);
	while (comp.e.op_context != out && ++tries < 16);
	XT_ASSERT(comp.e.op_context == out, "send completion");
}

struct damage {
	const char *name;
	void (*apply)(struct image *img);
	int rc;			/* of every send to the damaged copy */
};

static void intact(struct image *img) { (void) img; }
static void bad_magic(struct image *img) { hdr_of(img)->magic ^= 1; }
static void bad_version(struct image *img) { hdr_of(img)->layout_version++; }
static void bad_hdr_size(struct image *img) { hdr_of(img)->hdr_size = 4096; }
static void bad_region_size(struct image *img) { hdr_of(img)->region_size += 4096; }
static void truncated(struct image *img) { img->size -= 4096; }
static void shorter_than_header(struct image *img) { img->size = 16; }
static void ring_outside(struct image *img) { hdr_of(img)->ring_offset = img->size; }
static void pool_outside(struct image *img) { hdr_of(img)->pool_offset = UINT64_MAX - 4095; }
static void mode_0644(struct image *img) { img->mode = 0644; }
static void given_away(struct image *img) { img->give_away = true; }
static void not_ready(struct image *img) { atomic_store(&hdr_of(img)->ready, 0); }

static void ring_cells_bogus(struct image *img)
{
	struct xshm_ring *ring = (struct xshm_ring *)
		(img->bytes + hdr_of(img)->ring_offset);

	ring->ncells = 3;
}

/* A ring too small to claim a run of cells in: no send could ever fit. */
static void ring_cells_few(struct image *img)
{
	struct xshm_ring *ring = (struct xshm_ring *)
		(img->bytes + hdr_of(img)->ring_offset);

	ring->ncells = XSHM_RING_CELLS_MIN / 2;
}

static void pool_bufs_bogus(struct image *img)
{
	struct xshm_pool *pool = (struct xshm_pool *)
		(img->bytes + hdr_of(img)->pool_offset);

	pool->nbufs = 1u << 30;
}

/* Plants each damaged copy under its own id and checks the sends to it. */
static void check_damages(const struct damage *damages, int n)
{
	char addr[XT_XSHM_ADDRLEN];
	uint64_t base;
	fi_addr_t self;
	struct xt_ep x;

	cfg = xt_cfg_default();
	xt_open(&x, &cfg);
	self = xt_av_insert(&x, x.name);
	base = ((uint64_t) getpid() << 24) | 0xbad000;
	for (int i = 0; i < n; i++) {
		struct image img = copy_region(&x, base + i);

		damages[i].apply(&img);
		plant(&img, base + i);
		free(img.bytes);
		xt_fake_addr(&x, base + i, addr);
		sends_return(&x, xt_av_insert(&x, addr), damages[i].name,
			     damages[i].rc);
		unplant(base + i);
	}
	xt_fake_addr(&x, base + n, addr);
	sends_return(&x, xt_av_insert(&x, addr), "no file", -FI_EHOSTUNREACH);
	self_still_works(&x, self);
	xt_close(&x);
}

#define DAMAGE(fn, rc)	{ #fn, fn, rc }

START_TEST(sends_to_damaged_regions_fail_cleanly)
{
	static const struct damage damages[] = {
		DAMAGE(intact, 0),
		DAMAGE(bad_magic, -FI_EHOSTUNREACH),
		DAMAGE(bad_version, -FI_EHOSTUNREACH),
		DAMAGE(bad_hdr_size, -FI_EHOSTUNREACH),
		DAMAGE(bad_region_size, -FI_EHOSTUNREACH),
		DAMAGE(truncated, -FI_EHOSTUNREACH),
		DAMAGE(shorter_than_header, -FI_EHOSTUNREACH),
		DAMAGE(ring_outside, -FI_EHOSTUNREACH),
		DAMAGE(pool_outside, -FI_EHOSTUNREACH),
		DAMAGE(ring_cells_bogus, -FI_EHOSTUNREACH),
		DAMAGE(ring_cells_few, -FI_EHOSTUNREACH),
		DAMAGE(pool_bufs_bogus, -FI_EHOSTUNREACH),
		DAMAGE(mode_0644, -FI_EHOSTUNREACH),
		/* Its owner may still be creating it: try again later. */
		DAMAGE(not_ready, -FI_EAGAIN),
	};

	check_damages(damages, sizeof(damages) / sizeof(damages[0]));
}
END_TEST

/* Root only: a region file of another user is refused. */
START_TEST(sends_to_region_of_other_user_fail_cleanly)
{
	static const struct damage damages[] = {
		DAMAGE(intact, 0),
		DAMAGE(given_away, -FI_EHOSTUNREACH),
	};

	check_damages(damages, 2);
}
END_TEST

int main(void)
{
	if (!xt_wanted(XT_XSHM))	/* none of its cases is selected */
		return xt_run_suite(suite_create("bad_region"));
	Suite *s = suite_create("bad_region");
	TCase *tc = tcase_create("bad_region");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, sends_to_damaged_regions_fail_cleanly);
	if (geteuid() == 0)
		tcase_add_test(tc, sends_to_region_of_other_user_fail_cleanly);
	suite_add_tcase(s, tc);
	return xt_run_suite(s);
}
