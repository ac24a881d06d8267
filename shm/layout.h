/*
 * Every structure that lives in shared memory, in one place.
 *
 * A region is created by one endpoint and mapped by every peer that sends to
 * it, so everything read from it by a peer is untrusted: offsets, counts and
 * lengths are validated by the reader before use (see region.c, ring.c,
 * pool.c).  Bump XSHM_LAYOUT_VERSION whenever anything here changes.
 */
#ifndef XSHM_SHM_LAYOUT_H
#define XSHM_SHM_LAYOUT_H

#include <assert.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define XSHM_CACHE_LINE		64
#define XSHM_REGION_MAGIC	0x4d485358676e6972ULL	/* "ringXSHM" */
#define XSHM_LAYOUT_VERSION	27
#define XSHM_NAME_MAX		48

/*
 * Command cells: one ring slot, the unit a sender pushes.  2 KiB, so that
 * messages of up to 2008 bytes travel in one cell.  A message touches only
 * the cache lines it fills.  Measured side by side, each size against half
 * of it: 512-byte cells against 256-byte ones, latency 0.65 at 256 B and
 * 0.79 at 424 B; 1 KiB against 512 B, latency 0.81-0.95 and streaming
 * 1.14-1.49 from 256 to 984 B; 2 KiB against 1 KiB, latency 0.89-0.93 and
 * streaming 1.3-1.9 from 984 B to 1500 B, small messages unchanged.  The
 * ring then maps 1 MiB.
 */
#define XSHM_CELL_SIZE		2048

/* Medium and large payloads travel in receiver-owned bounce buffers. */
#define XSHM_BUF_SIZE		16384
#define XSHM_POOL_BUFS		128
#define XSHM_RING_CELLS		512

/*
 * A large message named by an RTS is copied by both processes at once, in
 * an even number of equal chunks of about a quarter of the message, from
 * about half of XSHM_SPLIT_CHUNK_MIN to XSHM_SPLIT_CHUNK_MAX bytes,
 * multiples of XSHM_SPLIT_CHUNK_ALIGN (shm/scopy/split.h): the receiver
 * pulls from the front while the sender, offered the receiver's buffers
 * (XSHM_OP_OFFER), pushes from the back, each claiming a chunk before
 * copying it.  The claims live in the receiver's header; a receiver copies
 * one such message at a time.  A large RMA operation its initiator copies
 * may split alike (XSHM_CMD_SPLIT), in chunks from XSHM_SPLIT_RMA_CHUNK_MIN,
 * under the claims in the initiator's header, the target taking the back.
 */
#define XSHM_SPLIT_CHUNK_MIN	(128u << 10)
#define XSHM_SPLIT_CHUNK_MAX	(2u << 20)
#define XSHM_SPLIT_RMA_CHUNK_MIN	(128u << 10)
#define XSHM_SPLIT_CHUNK_ALIGN	4096
#define XSHM_SPLIT_CHUNKS_MAX	0xffffu		/* front and back: 16 bits */
#define XSHM_SPLIT_FAILED	(1ull << 32)	/* in pushed: a push failed */

struct xshm_split {
	/* generation << 32 | chunks claimed from the front << 16 | back */
	_Atomic uint64_t claims;
	/* chunks the sender has finished pushing, | XSHM_SPLIT_FAILED */
	_Atomic uint64_t pushed;
};

/* Region header: the first cache lines of every endpoint region. */
struct xshm_region_hdr {
	uint64_t magic;
	uint32_t layout_version;
	uint32_t hdr_size;
	uint64_t region_size;
	uint32_t owner_uid;
	int32_t owner_pid;
	uint64_t owner_start_time;	/* /proc/<pid>/stat starttime */
	uint64_t node_id;
	uint64_t ep_id;
	uint64_t ring_offset;
	uint64_t pool_offset;
	_Atomic uint32_t ready;		/* set last, with release order */
	_Atomic uint32_t waiters;	/* owner sleeps: ring its doorbell */
	uint64_t auth_digest;		/* of the owner's auth key; 0: none */
	uint32_t features;		/* XSHM_FEATURE_* the owner offers */
	/* the owner's latest large receive buffers lie on huge pages */
	_Atomic uint32_t rx_huge;
	uint64_t mr_offset;		/* the published registrations */
	/* written by senders too: a line of its own */
	alignas(XSHM_CACHE_LINE) struct xshm_split split;
};

/* The owner can pull large messages from its senders (single copy). */
#define XSHM_FEATURE_PULL	(1u << 0)
/* The owner may sleep on its doorbell: senders must check waiters. */
#define XSHM_FEATURE_DOORBELL	(1u << 1)

/*
 * Multi-producer single-consumer ring of fixed-size cells (per-cell sequence
 * numbers).  Producers claim a position by CAS on tail; the consumer owns
 * head.
 */
struct xshm_ring {
	uint32_t ncells;		/* power of two */
	uint32_t cell_size;		/* multiple of 8, >= 16 */
	uint64_t reserved;
	alignas(XSHM_CACHE_LINE) _Atomic uint64_t tail;
	alignas(XSHM_CACHE_LINE) _Atomic uint64_t head;
	alignas(XSHM_CACHE_LINE) unsigned char cells[];
};

/*
 * Every ring cell starts with its sequence number and ends with a claim:
 * whoever takes the cell stores its pid and the cell's position there first
 * (ring.c), so that the region owner can tell a cell held by a dead process
 * from one still being written.  The claim sits in the cell's last 8 bytes,
 * away from the header: a small message's first cache line then has room
 * for 32 payload bytes, and the claim's line, which only the sender writes,
 * stays in the sender's cache.
 */
struct xshm_cell_seq {
	_Atomic uint64_t seq;
};

#define XSHM_CELL_CLAIM_SIZE	8	/* the claim word, a cell's last bytes */

/* Command ops. */
enum {
	XSHM_OP_MSG = 1,	/* first cell of an untagged message */
	XSHM_OP_TAGGED,		/* first cell of a tagged message */
	XSHM_OP_CHUNK,		/* continuation of the sender's current message */
	XSHM_OP_ABORT,		/* the sender's current message will not finish */
	XSHM_OP_ACK,		/* receiver to sender: message ack_id delivered,
				   with an errno in tag (0: success) */
	XSHM_OP_CONT,		/* a continuation cell (XSHM_PROTO_CELLS) */
	XSHM_OP_OFFER,		/* receiver to sender of RTS ack_id: push
				   the back of it into the receiver's buffers
				   (a struct xshm_rts, msg_size bytes), with
				   claims of generation tag (split.h) */
	XSHM_OP_TIMING,		/* receiver to sender of XSHM_CMD_TIMED
				   message ack_id: a struct xshm_timing */
	XSHM_OP_WRITE,		/* RMA initiator to target: a struct xshm_rma,
				   then, XSHM_PROTO_INLINE, its bytes */
	XSHM_OP_READ,		/* RMA initiator to target: a struct xshm_rma */
	XSHM_OP_READ_DATA,	/* target to initiator of read ack_id: bytes
				   of it from offset tag, inline or in the
				   initiator's buffer buf_index */
	XSHM_OP_ATOMIC,		/* atomic initiator to target: a struct
				   xshm_atomic and its operands; fetches and
				   compares answered as XSHM_OP_READ_DATA */
};

/* Where a command's payload is. */
enum {
	XSHM_PROTO_INLINE = 1,	/* in the cell, after the header */
	XSHM_PROTO_BUF,		/* in pool buffer buf_index of the receiver,
				   a whole message's last bytes maybe in the
				   cell (XSHM_BUF_TAIL_MAX) */
	XSHM_PROTO_RTS,		/* a struct xshm_rts: pull from the sender */
	XSHM_PROTO_CELLS,	/* in this cell and the cells after it */
	XSHM_PROTO_SHORT,	/* a whole message in the cell, from short_data */
};

#define XSHM_CMD_REMOTE_CQ_DATA	(1u << 0)
#define XSHM_CMD_ACK		(1u << 1)	/* ack the message once matched */
#define XSHM_CMD_PUSH		(1u << 2)	/* RTS: the sender takes offers */
#define XSHM_CMD_TIMED		(1u << 3)	/* report its time, id in ack_id */
#define XSHM_CMD_POSTED		(1u << 4)	/* RMA write, whole: no ack */
/*
 * RMA, XSHM_PROTO_RTS, no ack: the initiator offers the target chunks of an
 * operation it copies itself, from the back, under the claims of generation
 * tag in the initiator's header (data/rma_split.c).
 */
#define XSHM_CMD_SPLIT		(1u << 5)

/*
 * A command cell as a sender writes it.  XSHM_PROTO_SHORT, the common small
 * message (whole, without remote CQ data or ack), ends its header after
 * tag: its payload starts at short_data, so that up to 32 bytes travel in
 * the cell's first cache line with the header, one line transfer instead
 * of two.  Its msg_size is chunk_len; it has no cq_data, buffer or ack.
 * The cell's last XSHM_CELL_CLAIM_SIZE bytes are the ring's, as is seq.
 */
struct xshm_cmd {
	_Atomic uint64_t seq;	/* ring sequence: owned by ring.c */
	uint8_t op;
	uint8_t proto;
	uint16_t flags;
	uint32_t chunk_len;	/* payload bytes carried by this cell */
	uint64_t src_ep_id;
	uint64_t tag;
	union {
		unsigned char short_data[0];	/* XSHM_PROTO_SHORT payload */
		uint64_t cq_data;
	};
	uint64_t msg_size;	/* whole message, all chunks */
	uint32_t buf_index;	/* XSHM_PROTO_BUF */
	uint32_t ack_id;	/* XSHM_CMD_ACK and XSHM_OP_ACK: sender's id */
	unsigned char data[];	/* XSHM_PROTO_INLINE payload */
};

#define XSHM_CMD_HDR_SIZE	offsetof(struct xshm_cmd, data)
#define XSHM_INLINE_MAX		(XSHM_CELL_SIZE - XSHM_CMD_HDR_SIZE - \
				 XSHM_CELL_CLAIM_SIZE)
#define XSHM_SHORT_HDR_SIZE	offsetof(struct xshm_cmd, short_data)
#define XSHM_SHORT_MAX		(XSHM_CELL_SIZE - XSHM_SHORT_HDR_SIZE - \
				 XSHM_CELL_CLAIM_SIZE)

/*
 * XSHM_PROTO_CELLS: a message too big for one cell but small enough that a
 * bounce buffer costs more than it saves.  The first cell carries a command
 * and XSHM_INLINE_MAX bytes; the next ones, claimed with it in one
 * reservation, are continuation cells of XSHM_CELL_PAYLOAD bytes each.  A
 * continuation cell that ever reaches the head of a ring on its own (its
 * first cell was skipped) says XSHM_OP_CONT and is dropped.
 */
struct xshm_cont_cell {
	_Atomic uint64_t seq;	/* ring sequence: owned by ring.c */
	uint8_t op;		/* XSHM_OP_CONT */
	uint8_t reserved[7];
	unsigned char data[];
};

#define XSHM_CELL_PAYLOAD	(XSHM_CELL_SIZE - offsetof(struct xshm_cont_cell, data) - \
				 XSHM_CELL_CLAIM_SIZE)
/* The longest run, and so the longest message, a run of cells carries. */
#define XSHM_CELLS_MAX		3
#define XSHM_CELLS_MSG_MAX	(XSHM_INLINE_MAX + \
				 (XSHM_CELLS_MAX - 1) * XSHM_CELL_PAYLOAD)
/*
 * The fewest cells a ring may have: a run of cells is claimed within a
 * quarter of the ring (xshm_ring_reserve_n), so a smaller peer ring would
 * refuse every run, and its sends would wait for room that never comes.
 */
#define XSHM_RING_CELLS_MIN	16

/*
 * XSHM_PROTO_BUF: a whole message (not a chunk) may carry, past a full
 * bounce buffer, up to this many more bytes in its command's cell, after
 * the header, rather than in a second command.  The second command
 * lets the receiver copy the buffer while the sender writes the rest; in
 * the cell, the sender writes it before the receiver can start.  Measured
 * against the second command, side by side (50 repetitions): latency 0.89
 * to 0.95 with 1 to 128 bytes past the buffer, 0.96 with 256, 1.02 to 1.07
 * with 512; streaming bandwidth 1.07 to 1.14.
 */
#define XSHM_BUF_TAIL_MAX	256

/*
 * Ready to send: the inline payload of an XSHM_PROTO_RTS command, naming
 * the sender's buffers for the receiver to pull with a single-copy engine.
 * The receiver acks (XSHM_CMD_ACK) once it has pulled, and only then may
 * the sender reuse them.
 */
#define XSHM_RTS_IOV_MAX	8

struct xshm_rts {
	int32_t pid;
	uint32_t iov_count;
	struct {
		uint64_t base;
		uint64_t len;
	} iov[XSHM_RTS_IOV_MAX];
};

/*
 * An RMA command's payload (XSHM_OP_WRITE, XSHM_OP_READ).  The target checks
 * key, access and the whole range [addr, addr + msg_size) against its
 * registrations before it touches memory, then moves len bytes from offset
 * of the operation: XSHM_PROTO_RTS, all of it in one single copy from or to
 * the initiator's buffers, named by the struct xshm_rts after this one
 * (struct xshm_rma_rts); XSHM_PROTO_INLINE, for a write the bytes after
 * this struct in the cell, for a read answered in XSHM_OP_READ_DATA cells;
 * XSHM_PROTO_BUF, a write's bytes in a bounce buffer.  Only the command
 * with XSHM_CMD_ACK, the last, is acked, with the status of its checks and
 * copy.  A write already checked by its initiator against the published
 * registrations and completed there once pushed says XSHM_CMD_POSTED on
 * its last command instead: nothing is acked, and one its target's checks
 * refuse is dropped.  Only an RTS names buffers: the others stay within
 * the header's cache line and the next, where a posted 8-byte write was
 * four lines with the names in every command.
 */
struct xshm_rma {
	uint64_t key;
	uint64_t addr;
	uint64_t offset;
	uint64_t len;
};

struct xshm_rma_rts {
	struct xshm_rma rma;
	struct xshm_rts src;
};

#define XSHM_RMA_INLINE_MAX	(XSHM_INLINE_MAX - sizeof(struct xshm_rma))

/*
 * An atomic command's payload (XSHM_OP_ATOMIC): count elements of datatype
 * (enum fi_datatype) at addr of registration key, op (enum fi_op) of kind
 * XSHM_ATOMIC_*; then, in the same cell, count operands (none for
 * FI_ATOMIC_READ) and, for a compare, count compare values.  The target
 * checks it as an RMA command, applies it and, for a fetch or a compare,
 * answers the old values in one XSHM_OP_READ_DATA cell before its ack.
 * Every atomic travels in one cell: its operands, compare values and old
 * values are at most XSHM_ATOMIC_MAX_BYTES each.
 */
enum {
	XSHM_ATOMIC_WRITE,	/* fi_atomic */
	XSHM_ATOMIC_FETCH,	/* fi_fetch_atomic */
	XSHM_ATOMIC_COMPARE,	/* fi_compare_atomic */
};

struct xshm_atomic {
	uint64_t key;
	uint64_t addr;
	uint8_t op;
	uint8_t datatype;
	uint8_t kind;
	uint8_t reserved;
	uint32_t count;
};

#define XSHM_ATOMIC_MAX_BYTES	960

/*
 * A small write or atomic whole in the cell's first cache line, as
 * XSHM_PROTO_SHORT: tag holds the key, short_data the struct below, then a
 * write's bytes or an atomic's operands; chunk_len counts both.  A write or
 * an atomic write is posted (XSHM_CMD_POSTED); a fetching atomic (no
 * compare) asks for its ack (XSHM_CMD_ACK) with ack_id.  No remote CQ data.
 * The target reads one line, as for a short message, where the long form
 * took two.
 */
struct xshm_rma_short {
	uint64_t addr;
	uint8_t op;		/* atomics: enum fi_op */
	uint8_t datatype;	/* atomics: enum fi_datatype */
	uint16_t count;		/* atomics: elements */
	uint32_t ack_id;	/* a fetching atomic's */
};

#define XSHM_RMA_SHORT_MAX	(XSHM_CACHE_LINE - XSHM_SHORT_HDR_SIZE - \
				 sizeof(struct xshm_rma_short))

/*
 * XSHM_OP_TIMING's payload: when the receiver became ready for the timed
 * message (its previous large message done, or its receive posted late)
 * and when it completed it, CLOCK_MONOTONIC ns, how long it spent copying
 * it, and when it completed its previous large message if that came from
 * the same sender, else 0 (shm/path_choice.h).
 */
struct xshm_timing {
	uint64_t ready_ns;
	uint64_t done_ns;
	uint64_t busy_ns;
	uint64_t paced_from_ns;
};

/*
 * Pool of bounce buffers: buffers, then the free map (a bit per buffer, set
 * while it may be free), then one owner word per buffer naming the endpoint
 * (ep_id) that borrowed it: 0 while the buffer is free, XSHM_POOL_PENDING
 * while it is being freed (shm/pool.c).
 */
struct xshm_pool {
	uint32_t nbufs;
	uint32_t buf_size;		/* multiple of XSHM_CACHE_LINE */
	uint64_t bufs_offset;		/* from the pool struct */
	uint64_t free_map_offset;	/* from the pool struct, _Atomic uint64_t[] */
	uint64_t owners_offset;		/* from the pool struct, _Atomic uint64_t[] */
};

#define XSHM_POOL_PENDING	UINT64_MAX

/*
 * Published registrations (shm/mr_pub.h): the endpoint's domain lists the
 * registrations it can serve without the owner's help, for initiators to
 * copy into or out of its memory themselves (single copy, CMA), and each
 * initiator pins an entry while it copies.  A table of XSHM_MR_PUB_SLOTS
 * entries found by key (linear probing from the key's home slot, at most
 * probe_max slots further).  Entries are 2 cache lines: the owner's fields
 * and the holders initiators write.
 */
#define XSHM_MR_PUB_SLOTS	64	/* power of two */
#define XSHM_MR_PUB_HOLDERS	6
#define XSHM_MR_PUB_READ	(1u << 0)	/* access: remote reads */
#define XSHM_MR_PUB_WRITE	(1u << 1)	/* access: remote writes */
#define XSHM_MR_PUB_ATOMIC	(1u << 2)	/* role: atomics that write */

struct xshm_mr_pub_entry {
	_Atomic uint64_t state;		/* generation << 1 | live */
	/* the owner's, stable while live (relaxed atomics: slots get reused) */
	_Atomic uint64_t key;
	_Atomic uint64_t base;		/* the address initiators name byte 0 by */
	_Atomic uint64_t len;
	_Atomic uint64_t local;		/* byte 0 in the owner's address space */
	_Atomic uint32_t access;	/* XSHM_MR_PUB_READ | XSHM_MR_PUB_WRITE */
	_Atomic uint32_t events;	/* counters bound: the owner must see it */
	/* pid << 32 | low 32 bits of its start time; 0: free */
	alignas(XSHM_CACHE_LINE) _Atomic uint64_t holder[XSHM_MR_PUB_HOLDERS];
};

struct xshm_mr_pub {
	_Atomic uint32_t probe_max;	/* farthest any entry lies from home */
	_Atomic uint32_t unpublished;	/* the domain's registrations not here */
	_Atomic uint32_t serves;	/* XSHM_MR_PUB_*: the endpoint's roles */
	_Atomic uint32_t events;	/* it counts remote events */
	alignas(XSHM_CACHE_LINE) struct xshm_mr_pub_entry
		slots[XSHM_MR_PUB_SLOTS];
};

static_assert(sizeof(struct xshm_region_hdr) == 192, "region header layout");
static_assert(sizeof(struct xshm_mr_pub_entry) == 2 * XSHM_CACHE_LINE,
	      "published registration layout");
static_assert((XSHM_MR_PUB_SLOTS & (XSHM_MR_PUB_SLOTS - 1)) == 0,
	      "published slots: a power of two");
static_assert(((uint64_t) XSHM_SPLIT_CHUNKS_MAX + 1) * XSHM_SPLIT_CHUNK_MAX >
	      (1ull << 30), "a message of XSHM_MAX_MSG_SIZE splits into few enough chunks");
static_assert(sizeof(struct xshm_cell_seq) == 8, "cell sequence");
static_assert(sizeof(struct xshm_cmd) == 56, "command header layout");
static_assert(XSHM_INLINE_MAX == 1984, "inline payload");
static_assert(XSHM_SHORT_HDR_SIZE == 32 && XSHM_SHORT_MAX == 2008,
	      "short payload: 32 bytes in the header's cache line");
static_assert(sizeof(struct xshm_rts) == 136, "rts layout");
static_assert(sizeof(struct xshm_rts) <= XSHM_INLINE_MAX, "rts fits a cell");
static_assert(sizeof(struct xshm_rma) == 32, "rma layout");
static_assert(sizeof(struct xshm_rma_rts) == 168, "rma rts layout");
static_assert(XSHM_RMA_SHORT_MAX == 16, "a short RMA command fills one line");
static_assert(sizeof(struct xshm_atomic) == 24, "atomic layout");
static_assert(sizeof(struct xshm_atomic) + 2 * XSHM_ATOMIC_MAX_BYTES <=
	      XSHM_INLINE_MAX, "a compare's operands and compare values fit a cell");
static_assert(XSHM_ATOMIC_MAX_BYTES % 32 == 0,
	      "whole elements of every datatype, up to long double complex");
static_assert(XSHM_BUF_TAIL_MAX <= XSHM_INLINE_MAX, "a buffer's tail fits its cell");
static_assert(XSHM_CELLS_MSG_MAX == 6032 && XSHM_CELLS_MSG_MAX <= XSHM_BUF_SIZE,
	      "a run of cells carries less than a bounce buffer");
static_assert(XSHM_CELLS_MAX <= XSHM_RING_CELLS_MIN / 4 &&
	      XSHM_RING_CELLS >= XSHM_RING_CELLS_MIN, "cells fit one claim");
static_assert(offsetof(struct xshm_cont_cell, op) == offsetof(struct xshm_cmd, op),
	      "a continuation cell reads as a command with op XSHM_OP_CONT");
static_assert(offsetof(struct xshm_ring, cells) % XSHM_CACHE_LINE == 0,
	      "ring cells aligned");
static_assert(sizeof(struct xshm_pool) == 32, "pool layout");
static_assert(XSHM_CELL_SIZE % XSHM_CACHE_LINE == 0, "cell size");
static_assert(XSHM_BUF_SIZE % XSHM_CACHE_LINE == 0, "buffer size");

/*
 * A named address vector shared between processes:
 * "/xshm-av-<uid>-<escaped name>", [header][entries][fi_addrs].  Writers
 * hold the robust mutex and make generation odd while they change anything, so a
 * reader (also a read-only one, which cannot lock) copies a consistent
 * state by retrying until it sees the same even generation before and after.
 */
#define XSHM_AV_MAGIC		0x5641485358617661ULL	/* "avaXSHAV" */
#define XSHM_AV_KEYS		16	/* auth keys per shared AV */
#define XSHM_AV_KEY_MAX		64	/* bytes of one auth key */
#define XSHM_AV_OPENERS		64	/* writable opens at once */
#define XSHM_AV_NO_KEY		UINT32_MAX

struct xshm_av_shm_entry {
	uint64_t node_id;
	uint64_t ep_id;
	uint32_t used;
	uint32_t auth_key;		/* key slot, or XSHM_AV_NO_KEY */
};

struct xshm_av_shm_key {
	uint32_t used;
	uint32_t size;
	unsigned char bytes[XSHM_AV_KEY_MAX];
};

/* A process holding the AV open for writing; pid 0: a free slot. */
struct xshm_av_shm_opener {
	int32_t pid;
	uint32_t opens;
	uint64_t start_time;
};

struct xshm_av_shm_hdr {
	uint64_t magic;
	uint32_t layout_version;
	uint32_t hdr_size;
	uint64_t file_size;
	uint32_t owner_uid;
	uint32_t capacity;		/* entries */
	_Atomic uint32_t ready;		/* set last by the creator */
	uint32_t unlinked;		/* the last closer removed the name */
	_Atomic uint64_t generation;	/* odd while being written */
	uint64_t reserved;
	union {
		pthread_mutex_t lock;	/* robust, process-shared */
		unsigned char lock_space[64];
	};
	struct xshm_av_shm_opener openers[XSHM_AV_OPENERS];
	struct xshm_av_shm_key keys[XSHM_AV_KEYS];
	/*
	 * capacity entries, then capacity uint64_t: the fi_addr_t of each
	 * index, UINT64_MAX (FI_ADDR_NOTAVAIL) where free.  That array is
	 * what map_addr returns: applications read the fi_addr of the n-th
	 * address there (fabtests' fi_rdm_shared_av, as sockets lays it out).
	 */
	struct xshm_av_shm_entry entries[];
};

static_assert(sizeof(pthread_mutex_t) <= 64, "mutex fits its space");
static_assert(sizeof(struct xshm_av_shm_entry) == 24, "av entry layout");
static_assert(sizeof(struct xshm_av_shm_key) == 72, "av key layout");
static_assert(offsetof(struct xshm_av_shm_hdr, entries) % 8 == 0,
	      "av entries aligned");

#endif
