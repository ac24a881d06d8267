/*
 * The RMA tests' two processes (rma_rig.c): the parent initiates, a forked
 * child is the target, with one registration (MR_LEN bytes, all access
 * unless asked otherwise) between two guards of its buffer, driven by
 * one-byte commands over the socket.  The target's bytes are xt_fill(TSEED),
 * the initiator's xt_fill(ISEED).
 */
#ifndef XT_RMA_RIG_H
#define XT_RMA_RIG_H

#include "harness.h"

#include <rdma/fi_rma.h>

#define GUARD		(16u << 10)
#define MR_LEN		(256u << 10)
#define TBUF_LEN	(GUARD + MR_LEN + GUARD)
#define TSEED		7	/* the target's bytes */
#define ISEED		11	/* the initiator's */
#define USER_KEY	0xC0DE
#define DEAD_MS		20000	/* a dead target fails its operation by then */

/* Commands to the target. */
enum { T_DUMP = 1, T_EVENTS, T_CQ_DATA, T_CLOSE_MR, T_WAIT_MR, T_OK, T_QUIT,
       T_REFILL, T_SETTLE };

struct target_opts {
	uint64_t access;
	uint64_t mr_mode;
	bool progress;		/* false: never progresses (the killed one) */
	uint64_t caps;		/* the target's; 0: rma_cfg's */
	bool counted;		/* remote counters bound even when fast */
	unsigned extra_regs;	/* registered before the one tested */
};

#define EXTRA_REGS_MAX	128

struct rig {
	struct target_opts opts;
	uint64_t caps;		/* the initiator's; 0: rma_cfg's */
	struct xt_cfg cfg;
	struct xt_ep x;
	struct fid_cntr *wc, *rc;
	struct xt_child c;
	fi_addr_t peer;
	uint64_t key, addr;	/* of the target registration's first byte */
	unsigned char tbuf[TBUF_LEN];
};

#define ALL_ACCESS	(FI_REMOTE_READ | FI_REMOTE_WRITE)

/* Inline, a single copy or a bounce buffer, the whole region. */
#define RMA_SIZES	3
extern const size_t rma_sizes[RMA_SIZES];

/* FI_MSG | FI_RMA | FI_RMA_EVENT, hints' mr_mode mr_mode. */
struct xt_cfg rma_cfg(uint64_t mr_mode);
struct fid_cntr *open_cntr(struct fid_domain *domain);
/* Reads (and so progresses) cntr until it holds value, or fails. */
void wait_cntr(struct fid_cntr *cntr, uint64_t value);
/* The endpoint, then the counters bound to it, then the rest. */
void close_with_cntrs(struct xt_ep *x, struct fid_cntr *a, struct fid_cntr *b);
/* The target's main (xt_spawn), arg a struct target_opts. */
void target_child(int sock, void *arg);

/*
 * Every RMA test runs in each FI_XSHM_RMA_FAST mode, a build each
 * (XT_RMA_MODE): the target does it all (=0, RIG_TARGET), the initiator
 * copies itself at every size (=1, RIG_FAST, split with the target from
 * two chunks: FI_XSHM_RMA_SPLIT_MIN=1), or by size (auto, RIG_AUTO, with
 * FI_XSHM_PATH=static and FI_XSHM_RMA_POSTED_MAX=RIG_POSTED_MAX: small
 * writes posted, large operations copied).  But for RIG_TARGET the
 * target binds no remote counter unless the test asks for them
 * (opts.counted, rig_start_counted): counting is the target's, so counters
 * send the operations its way.  Called by main.
 */
enum rig_mode { RIG_TARGET, RIG_FAST, RIG_AUTO };
void rig_force_mode(enum rig_mode mode);
enum rig_mode rig_mode(void);
/* Writes the initiator posts through the target's bounce buffers in RIG_AUTO. */
#define RIG_POSTED_MAX	(8u << 10)
/* Whether a write of len bytes completes without the target. */
bool rig_initiator_copies(size_t len);

/* The target with a registration of access, FI_MR_VIRT_ADDR|FI_MR_PROV_KEY. */
struct rig *rig_start(uint64_t access);
/* The same, the remote counters bound whatever the mode. */
struct rig *rig_start_counted(uint64_t access);
/*
 * A target that progresses only when told (settle_target); counted, its
 * remote counters bound, which keeps every operation from its initiator's
 * single copy.
 */
struct rig *rig_start_idle(uint64_t access, bool counted);
/*
 * r zeroed but for opts.caps, the target's caps, and caps, the
 * initiator's (0: rma_cfg's).
 */
void rig_start_with(struct rig *r, uint64_t access, uint64_t mr_mode,
		    bool progress);
void rig_stop(struct rig *r);
/*
 * The target applies what its ring holds (posted writes complete before
 * it does), even one that does not progress otherwise.  A progressing
 * target does so before it dumps or reports its counters.
 */
void settle_target(struct rig *r);
/* The target's region, mapped: munmap(it, *size) when done. */
void *map_target(struct rig *r, size_t *size);
/* The target's whole buffer, into r->tbuf. */
void dump_target(struct rig *r);
/* The target holds ISEED's bytes at [off, off + len) of its region only. */
void assert_written(struct rig *r, size_t off, size_t len);
void assert_untouched(struct rig *r);
/* What a read of [off, off + len) of the region must have brought. */
void assert_read(const void *buf, size_t off, size_t len);
/* len bytes of xt_fill(ISEED). */
void *initiator_buf(size_t len);
/* One completion of ctx with flags among FI_RMA, FI_READ, FI_WRITE. */
void expect_done(struct rig *r, void *ctx, uint64_t flags);
void expect_error(struct rig *r, void *ctx, int err);
/* A write, or a read, of len bytes at the region's end, checked. */
void write_case(size_t len);
void read_case(size_t len);

#endif
