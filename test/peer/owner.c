/*
 * The reference owner: see owner.h.  Written from fi_peer(3) alone; only
 * public libfabric headers and <xshm/fi_peer.h>.
 */
#include "owner.h"
#include "test/prov/stale_regions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OWNER_OF(ptr, type, member) \
	((type *) ((char *) (ptr) - offsetof(type, member)))

/* Where an owner_entry stands. */
enum owner_entry_state {
	OE_POSTED = 1,	/* an application receive, in a posted queue */
	OE_UNQUEUED,	/* given by get_* with -FI_ENOENT, not queued yet */
	OE_QUEUED,	/* an unexpected message, in an unexpected queue */
	OE_PEER,	/* the peer holds it: matched, started or discarded */
	OE_FREED,	/* the peer gave it back with free_entry */
	OE_DONE,	/* finished by the owner itself */
};

struct owner_entry {
	struct fi_peer_rx_entry e;	/* the peer's view; first */
	struct owner_entry *qnext;	/* in a posted or unexpected queue */
	struct owner_entry *all_next;	/* in owner->all */
	enum owner_entry_state state;
	enum owner_origin origin;	/* of an unexpected message */
	bool tagged;
	fi_addr_t want_src;		/* a posted receive's parameters */
	uint64_t want_tag, ignore;
	struct iovec iov[OWNER_IOV_MAX];
	void *desc[OWNER_IOV_MAX];
	void *data;			/* a held loopback message */
};

/* Open owners, to tell which one a free_entry(pointer) belongs to. */
#define OWNER_MAX_OPEN 8
static struct owner *owner_list[OWNER_MAX_OPEN];

const char *const owner_provider = NULL;

void owner_program_init(void)
{
}

const char *const owner_style_name[OWNER_NSTYLES] = {
	[OWNER_STYLE_SPEC] = "spec",
	[OWNER_STYLE_UPSTREAM] = "upstream",
};

/* ---- entries and queues ---- */

static struct owner_entry *entry_new(struct owner *o, bool tagged)
{
	struct owner_entry *oe = calloc(1, sizeof(*oe));

	if (!oe)
		return NULL;
	oe->tagged = tagged;
	oe->want_src = FI_ADDR_UNSPEC;
	oe->e.addr = FI_ADDR_UNSPEC;
	oe->all_next = o->all;
	o->all = oe;
	return oe;
}

/* The owner that gave out entry (NULL if none) and its owner_entry. */
static struct owner_entry *entry_find(const struct fi_peer_rx_entry *entry,
				      struct owner **owner)
{
	*owner = NULL;
	for (int i = 0; i < OWNER_MAX_OPEN; i++) {
		struct owner *o = owner_list[i];

		if (!o)
			continue;
		if (!*owner)
			*owner = o;
		for (struct owner_entry *oe = o->all; oe; oe = oe->all_next) {
			if (&oe->e == entry) {
				*owner = o;
				return oe;
			}
		}
	}
	return NULL;
}

static void queue_append(struct owner_entry **head, struct owner_entry *oe)
{
	while (*head)
		head = &(*head)->qnext;
	oe->qnext = NULL;
	*head = oe;
}

/* Does a receive with recv's parameters accept a message (addr, tag)? */
static bool matches(const struct owner_entry *recv, fi_addr_t addr, uint64_t tag)
{
	if (recv->want_src != FI_ADDR_UNSPEC && recv->want_src != addr)
		return false;
	return !recv->tagged || ((recv->want_tag ^ tag) & ~recv->ignore) == 0;
}

/* Unlinks and returns the first entry of a posted queue accepting (addr, tag). */
static struct owner_entry *take_posted(struct owner_entry **head, fi_addr_t addr,
				       uint64_t tag)
{
	for (; *head; head = &(*head)->qnext) {
		struct owner_entry *oe = *head;

		if (matches(oe, addr, tag)) {
			*head = oe->qnext;
			oe->qnext = NULL;
			return oe;
		}
	}
	return NULL;
}

/* Unlinks and returns the first unexpected message that recv accepts. */
static struct owner_entry *take_unexpected(struct owner_entry **head,
					   const struct owner_entry *recv)
{
	for (; *head; head = &(*head)->qnext) {
		struct owner_entry *oe = *head;

		if (matches(recv, oe->e.addr, oe->e.tag)) {
			*head = oe->qnext;
			oe->qnext = NULL;
			return oe;
		}
	}
	return NULL;
}

/* ---- the owner's CQ ---- */

static ssize_t owner_cq_write(struct fid_peer_cq *cq, void *context, uint64_t flags,
			      size_t len, void *buf, uint64_t data, uint64_t tag,
			      fi_addr_t src)
{
	struct owner *o = OWNER_OF(cq, struct owner, peer_cq);
	struct owner_comp c = {
		.origin = OWNER_FROM_PEER,
		.e = { .op_context = context, .flags = flags, .len = len, .buf = buf,
		       .data = data, .tag = tag },
		.src = src,
	};

	o->st.writes++;
	if (o->faults.write_fail > 0) {
		o->faults.write_fail--;
		o->st.writes_failed++;
		return o->faults.write_err ? o->faults.write_err : -FI_EAGAIN;
	}
	return owner_comp_push(o, &c);
}

static ssize_t owner_cq_writeerr(struct fid_peer_cq *cq,
				 const struct fi_cq_err_entry *err)
{
	struct owner *o = OWNER_OF(cq, struct owner, peer_cq);
	struct owner_comp c = { .origin = OWNER_FROM_PEER, .is_err = true,
				.src = FI_ADDR_NOTAVAIL };

	o->st.writeerrs++;
	if (o->faults.writeerr_fail > 0) {
		o->faults.writeerr_fail--;
		o->st.writeerrs_failed++;
		return o->faults.write_err ? o->faults.write_err : -FI_EAGAIN;
	}
	c.err = *err;
	c.err.err_data = NULL;
	c.err.err_data_size = 0;
	return owner_comp_push(o, &c);
}

void owner_progress(struct owner *o)
{
	ssize_t rc;

	o->st.progress_calls++;
	if (o->cfg.progress_by_cntr && o->cfg.cntrs) {
		(void) fi_cntr_read(o->rx_cntr.xshm);
		(void) fi_cntr_read(o->tx_cntr.xshm);
		return;
	}
	rc = fi_cq_read(o->cq, NULL, 0);
	if (rc != 0 && rc != -FI_EAGAIN) {
		o->st.progress_errors++;
		o->st.last_progress_rc = rc;
	}
}

/* ---- the owner's counters ---- */

static void owner_cntr_inc(struct fid_peer_cntr *cntr)
{
	OWNER_OF(cntr, struct owner_cntr, peer)->value++;
}

static void owner_cntr_incerr(struct fid_peer_cntr *cntr)
{
	OWNER_OF(cntr, struct owner_cntr, peer)->err++;
}

uint64_t owner_cntr_value(struct owner *o, struct owner_cntr *c)
{
	if (c->xshm)
		(void) fi_cntr_read(c->xshm);
	return c->value;
}

uint64_t owner_cntr_err(struct owner *o, struct owner_cntr *c)
{
	if (c->xshm)
		(void) fi_cntr_read(c->xshm);
	return c->err;
}

/* ---- the owner's SRX: the calls the peer makes ---- */

static void log_get(struct owner *o, bool tagged, fi_addr_t addr, size_t size,
		    uint64_t tag, int ret)
{
	if (o->ngets == o->gets_cap) {
		size_t cap = o->gets_cap ? 2 * o->gets_cap : 64;
		struct owner_get_rec *n = realloc(o->gets, cap * sizeof(*n));

		if (!n)
			return;
		o->gets = n;
		o->gets_cap = cap;
	}
	o->gets[o->ngets++] = (struct owner_get_rec){
		.tagged = tagged, .addr = addr, .size = size, .tag = tag, .ret = ret,
	};
}

/*
 * The owner a fid_peer_srx given to get_* or foreach_unspec_addr belongs
 * to, found as libfabric's util_srx finds it: in srx->ep_fid.fid.context.
 * The peer may pass the owner's fid_peer_srx itself or one of its own that
 * carries that context.  NULL if it names no open owner.
 */
static struct owner *srx_owner(struct fid_peer_srx *srx)
{
	for (int i = 0; i < OWNER_MAX_OPEN; i++)
		if (owner_list[i] && srx && owner_list[i] == srx->ep_fid.fid.context)
			return owner_list[i];
	return NULL;
}

/* Counts a call with a fid_peer_srx that names no owner, if any is open. */
static void count_bad_srx(void)
{
	for (int i = 0; i < OWNER_MAX_OPEN; i++) {
		if (owner_list[i]) {
			owner_list[i]->st.bad_srx++;
			return;
		}
	}
}

/*
 * What an entry's flags carry beside FI_MSG/FI_TAGGED and FI_RECV once it
 * has a receive's buffers.  fi_peer(3) names no other flag; libfabric's
 * owners pass the receive's op flags, FI_COMPLETION among them unless the
 * application asked for selective completion, and 1.22's shm writes a
 * completion only for an entry that carries it.
 */
static uint64_t completion_flag(const struct owner *o)
{
	return o->cfg.style == OWNER_STYLE_UPSTREAM ? FI_COMPLETION : 0;
}

static int owner_get(struct fid_peer_srx *srx, bool tagged, fi_addr_t addr,
		     size_t size, uint64_t tag, struct fi_peer_rx_entry **entry)
{
	struct owner *o = srx_owner(srx);
	struct owner_entry *oe;
	int ret = 0;

	if (!o) {
		count_bad_srx();
		return -FI_EINVAL;
	}
	o->st.get_calls++;
	if (o->cfg.style == OWNER_STYLE_UPSTREAM && srx == &o->peer_srx)
		o->st.own_srx_gets++;
	if (o->faults.get_fail > 0) {
		o->faults.get_fail--;
		o->st.get_failed++;
		ret = o->faults.get_err ? o->faults.get_err : -FI_ENOMEM;
		log_get(o, tagged, addr, size, tag, ret);
		return ret;
	}
	oe = take_posted(&o->posted[tagged], addr, tag);
	if (oe) {
		o->st.get_matched++;
		oe->state = OE_PEER;
	} else {
		oe = entry_new(o, tagged);
		if (!oe)
			return -FI_ENOMEM;
		o->st.get_unexpected++;
		oe->origin = OWNER_FROM_PEER;
		oe->state = OE_UNQUEUED;
		ret = -FI_ENOENT;
	}
	/* What the peer told us, and what kind of receive this is. */
	oe->e.srx = srx;
	oe->e.addr = addr;
	oe->e.size = size;
	oe->e.tag = tagged ? tag : 0;
	oe->e.cq_data = 0;
	oe->e.flags = (tagged ? FI_TAGGED : FI_MSG) | FI_RECV |
		      (ret ? 0 : completion_flag(o));
	o->st.entries_given++;
	log_get(o, tagged, addr, size, tag, ret);
	*entry = &oe->e;
	return ret;
}

static int owner_get_msg(struct fid_peer_srx *srx, fi_addr_t addr, size_t size,
			 struct fi_peer_rx_entry **entry)
{
	return owner_get(srx, false, addr, size, 0, entry);
}

static int owner_get_tag(struct fid_peer_srx *srx, fi_addr_t addr, size_t size,
			 uint64_t tag, struct fi_peer_rx_entry **entry)
{
	return owner_get(srx, true, addr, size, tag, entry);
}

/* get_tag as libfabric 1.22's headers define it (cfg.get_tag_no_size). */
static int owner_get_tag_no_size(struct fid_peer_srx *srx, fi_addr_t addr,
				 uint64_t tag, struct fi_peer_rx_entry **entry)
{
	return owner_get(srx, true, addr, OWNER_SIZE_UNKNOWN, tag, entry);
}

static int owner_queue(struct fi_peer_rx_entry *entry, bool tagged)
{
	struct owner *o;
	struct owner_entry *oe = entry_find(entry, &o);

	if (!o)
		return -FI_EINVAL;
	o->st.queue_calls++;
	if (!oe || oe->state != OE_UNQUEUED || oe->tagged != tagged) {
		o->st.bad_queues++;
		return -FI_EINVAL;
	}
	oe->state = OE_QUEUED;
	queue_append(&o->unexpected[tagged], oe);
	return 0;
}

static int owner_queue_msg(struct fi_peer_rx_entry *entry)
{
	return owner_queue(entry, false);
}

static int owner_queue_tag(struct fi_peer_rx_entry *entry)
{
	return owner_queue(entry, true);
}

static void owner_foreach_unspec_addr(struct fid_peer_srx *srx,
				      fi_addr_t (*get_addr)(struct fi_peer_rx_entry *))
{
	struct owner *o = srx_owner(srx);

	if (!o) {
		count_bad_srx();
		return;
	}
	o->st.foreach_calls++;
	for (int t = 0; t < 2; t++) {
		for (struct owner_entry *oe = o->unexpected[t]; oe; oe = oe->qnext) {
			if (oe->origin != OWNER_FROM_PEER || oe->e.srx != srx ||
			    oe->e.addr != FI_ADDR_NOTAVAIL)
				continue;
			o->st.get_addr_calls++;
			oe->e.addr = get_addr(&oe->e);
			if (oe->e.addr != FI_ADDR_NOTAVAIL)
				o->st.addrs_resolved++;
		}
	}
}

static void owner_free_entry(struct fi_peer_rx_entry *entry)
{
	struct owner *o;
	struct owner_entry *oe = entry_find(entry, &o);

	if (!o)
		return;
	if (!oe) {
		o->st.unknown_frees++;
		return;
	}
	switch (oe->state) {
	case OE_PEER:
	case OE_UNQUEUED:
		oe->state = OE_FREED;
		o->st.entries_freed++;
		break;
	case OE_FREED:
		o->st.double_frees++;
		break;
	default:
		o->st.misplaced_frees++;
	}
}

/*
 * UPSTREAM: the owner's own callbacks in its fid_peer_srx's peer_ops, as
 * efa keeps its own there.  The owner has no use for them (its own traffic
 * needs no peer), so a call means a peer's entry reached them: the peer
 * passed the owner's own fid_peer_srx to get_*, or overwrote this table.
 */
static int owner_own_callback(struct fi_peer_rx_entry *entry)
{
	struct owner *o;

	entry_find(entry, &o);
	if (o)
		o->st.own_ops_calls++;
	return -FI_EINVAL;
}

static const struct fi_ops_srx_peer owner_own_peer_ops = {
	.size = sizeof(struct fi_ops_srx_peer),
	.start_msg = owner_own_callback,
	.start_tag = owner_own_callback,
	.discard_msg = owner_own_callback,
	.discard_tag = owner_own_callback,
};

/*
 * Where the owner finds the peer's start/discard for an entry: the table
 * the peer filled in (SPEC), else through the fid_peer_srx the peer passed
 * to get_* (UPSTREAM, and SPEC with a NULL peer_ops).
 */
static struct fi_ops_srx_peer *peer_ops_for(struct owner *o, struct owner_entry *oe)
{
	if (o->cfg.style == OWNER_STYLE_SPEC && o->peer_srx.peer_ops)
		return o->peer_srx.peer_ops;
	return oe->e.srx->peer_ops;
}

/* ---- the owner's SRX: the application side ---- */

/* Completes a loopback message into the receive oe describes. */
static void deliver_self(struct owner *o, struct owner_entry *oe, const void *data,
			 size_t len)
{
	size_t done = 0, cap = 0;
	struct owner_comp c = { .origin = OWNER_FROM_SELF };
	uint64_t flags = (oe->tagged ? FI_TAGGED : FI_MSG) | FI_RECV;

	for (size_t i = 0; i < oe->e.count; i++) {
		size_t n = oe->iov[i].iov_len;

		cap += n;
		if (n > len - done)
			n = len - done;
		if (n)
			memcpy(oe->iov[i].iov_base, (const char *) data + done, n);
		done += n;
	}
	if (len > cap) {
		c.is_err = true;
		c.err = (struct fi_cq_err_entry){
			.op_context = oe->e.context, .flags = flags, .len = cap,
			.tag = oe->e.tag, .olen = len - cap, .err = FI_ETRUNC,
			.prov_errno = FI_ETRUNC,
		};
		if (o->cfg.cntrs)
			o->rx_cntr.err++;
	} else {
		c.src = OWNER_ADDR_LOOPBACK;
		c.e = (struct fi_cq_tagged_entry){
			.op_context = oe->e.context, .flags = flags, .len = len,
			.buf = oe->e.count ? oe->iov[0].iov_base : NULL, .tag = oe->e.tag,
		};
		if (o->cfg.cntrs)
			o->rx_cntr.value++;
	}
	owner_comp_push(o, &c);
	oe->state = OE_DONE;
}

int owner_post(struct owner *o, bool tagged, const struct iovec *iov, size_t count,
	       fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	struct owner_entry recv = {
		.tagged = tagged, .want_src = src, .want_tag = tag, .ignore = ignore,
	};
	struct owner_entry *oe;
	int ret;

	if (count > OWNER_IOV_MAX || (count && !iov))
		return -FI_EINVAL;
	oe = take_unexpected(&o->unexpected[tagged], &recv);
	if (!oe) {
		oe = entry_new(o, tagged);
		if (!oe)
			return -FI_ENOMEM;
		oe->state = OE_POSTED;
		oe->want_src = src;
		oe->want_tag = tag;
		oe->ignore = ignore;
		oe->e.srx = &o->peer_srx;
		oe->e.addr = src;
		oe->e.tag = tag;
		oe->e.flags = (tagged ? FI_TAGGED : FI_MSG) | FI_RECV;
	}
	oe->e.flags |= completion_flag(o);
	oe->e.context = context;
	for (size_t i = 0; i < count; i++) {
		oe->iov[i] = iov[i];
		oe->desc[i] = NULL;
	}
	oe->e.iov = oe->iov;
	oe->e.desc = oe->desc;
	oe->e.count = count;
	if (oe->state == OE_POSTED) {
		queue_append(&o->posted[tagged], oe);
		return 0;
	}
	if (oe->origin == OWNER_FROM_SELF) {
		deliver_self(o, oe, oe->data, oe->e.size);
		free(oe->data);
		oe->data = NULL;
		return 0;
	}
	/* A message the peer queued: hand the buffers back to it. */
	oe->state = OE_PEER;
	o->st.starts++;
	ret = tagged ? peer_ops_for(o, oe)->start_tag(&oe->e)
		     : peer_ops_for(o, oe)->start_msg(&oe->e);
	if (ret)
		o->st.start_errors++;
	return ret;
}

/* One SRX serves every endpoint: ep only has to name one. */
int owner_post_on(struct owner *o, int ep, bool tagged, const struct iovec *iov,
		  size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	if (ep < 0 || ep >= o->cfg.nep)
		return -FI_EINVAL;
	return owner_post(o, tagged, iov, count, src, tag, ignore, context);
}

int owner_post_recv(struct owner *o, void *buf, size_t len, fi_addr_t src, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return owner_post(o, false, &iov, 1, src, 0, 0, context);
}

int owner_post_trecv(struct owner *o, void *buf, size_t len, fi_addr_t src,
		     uint64_t tag, uint64_t ignore, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return owner_post(o, true, &iov, 1, src, tag, ignore, context);
}

static int discard_entry(struct owner *o, struct owner_entry *oe)
{
	int ret;

	if (oe->origin == OWNER_FROM_SELF) {
		free(oe->data);
		oe->data = NULL;
		oe->state = OE_DONE;
		return 0;
	}
	oe->state = OE_PEER;
	o->st.discards++;
	ret = oe->tagged ? peer_ops_for(o, oe)->discard_tag(&oe->e)
			 : peer_ops_for(o, oe)->discard_msg(&oe->e);
	if (ret)
		o->st.discard_errors++;
	/*
	 * fi_peer(3) gives the entry back to the peer, which frees it once done;
	 * libfabric's owners (util_srx) free it themselves as discard returns,
	 * and 1.22's shm never frees a discarded entry.
	 */
	if (o->cfg.style == OWNER_STYLE_UPSTREAM) {
		if (oe->state == OE_FREED) {
			o->st.double_frees++;	/* the peer freed it too */
		} else {
			oe->state = OE_FREED;
			o->st.entries_freed++;
		}
	}
	return ret;
}

int owner_discard(struct owner *o, bool tagged, fi_addr_t src, uint64_t tag, uint64_t ignore)
{
	struct owner_entry recv = {
		.tagged = tagged, .want_src = src, .want_tag = tag, .ignore = ignore,
	};
	struct owner_entry *oe = take_unexpected(&o->unexpected[tagged], &recv);

	return oe ? discard_entry(o, oe) : -FI_ENOMSG;
}

int owner_loopback_send(struct owner *o, bool tagged, const void *buf, size_t len,
			uint64_t tag)
{
	struct owner_entry *oe = take_posted(&o->posted[tagged], OWNER_ADDR_LOOPBACK, tag);

	if (!tagged)
		tag = 0;
	if (oe) {
		oe->e.addr = OWNER_ADDR_LOOPBACK;
		oe->e.size = len;
		oe->e.tag = tag;
		deliver_self(o, oe, buf, len);
		return 0;
	}
	oe = entry_new(o, tagged);
	if (!oe)
		return -FI_ENOMEM;
	oe->data = malloc(len ? len : 1);
	if (!oe->data) {
		oe->state = OE_DONE;
		return -FI_ENOMEM;
	}
	if (len)
		memcpy(oe->data, buf, len);
	oe->origin = OWNER_FROM_SELF;
	oe->state = OE_QUEUED;
	oe->e.addr = OWNER_ADDR_LOOPBACK;
	oe->e.size = len;
	oe->e.tag = tag;
	oe->e.flags = (tagged ? FI_TAGGED : FI_MSG) | FI_RECV;
	queue_append(&o->unexpected[tagged], oe);
	return 0;
}

static size_t queue_length(const struct owner_entry *oe)
{
	size_t n = 0;

	for (; oe; oe = oe->qnext)
		n++;
	return n;
}

size_t owner_posted_count(const struct owner *o, bool tagged)
{
	return queue_length(o->posted[tagged]);
}

size_t owner_unexpected_count(struct owner *o, bool tagged)
{
	return queue_length(o->unexpected[tagged]);
}

int owner_peek(struct owner *o, bool tagged, fi_addr_t src, uint64_t tag, uint64_t ignore,
	       struct owner_comp *out)
{
	struct owner_entry recv = {
		.tagged = tagged, .want_src = src, .want_tag = tag, .ignore = ignore,
	};

	for (const struct owner_entry *oe = o->unexpected[tagged]; oe; oe = oe->qnext) {
		if (!matches(&recv, oe->e.addr, oe->e.tag))
			continue;
		*out = (struct owner_comp){
			.origin = oe->origin,
			.e = { .flags = oe->e.flags, .len = oe->e.size, .data = oe->e.cq_data,
			       .tag = oe->e.tag },
			.src = oe->e.addr,
		};
		return 0;
	}
	return -FI_ENOMSG;
}

const struct fi_peer_rx_entry *owner_unexpected(const struct owner *o, bool tagged,
						size_t i)
{
	const struct owner_entry *oe = o->unexpected[tagged];

	while (oe && i--)
		oe = oe->qnext;
	return oe ? &oe->e : NULL;
}

uint64_t owner_entries_held(const struct owner *o)
{
	uint64_t n = 0;

	for (const struct owner_entry *oe = o->all; oe; oe = oe->all_next)
		n += oe->state == OE_PEER || oe->state == OE_UNQUEUED;
	return n;
}

const char *owner_violations(const struct owner *o, char *buf, size_t len)
{
	const struct owner_stats *s = &o->st;

	snprintf(buf, len, "%s%s%s%s%s%s%s%s%s%s",
		 s->double_frees ? "double free_entry; " : "",
		 s->unknown_frees ? "free_entry of an unknown entry; " : "",
		 s->misplaced_frees ? "free_entry of an entry the peer did not hold; " : "",
		 s->bad_queues ? "queue_* of an entry not returned with -FI_ENOENT; " : "",
		 s->start_errors ? "start_* failed; " : "",
		 s->discard_errors ? "discard_* failed; " : "",
		 s->progress_errors ? "progress returned an error; " : "",
		 s->bad_srx ? "get_* or foreach_unspec_addr with a srx whose fid context "
			      "names no owner; " : "",
		 s->own_srx_gets ? "get_* with the owner's own fid_peer_srx, not one of "
				   "the peer's; " : "",
		 s->own_ops_calls ? "the owner's own start/discard reached by a peer's "
				    "entry; " : "");
	return buf;
}

/* ---- the owner's AV, domain and EQ as imported objects ---- */

static int owner_av_query(struct fid_peer_av *av, struct fi_av_attr *attr)
{
	struct owner *o = OWNER_OF(av, struct owner, peer_av);

	o->st.av_queries++;
	memset(attr, 0, sizeof(*attr));
	attr->type = FI_AV_TABLE;
	attr->count = 64;
	return 0;
}

static fi_addr_t owner_av_ep_addr(struct fid_peer_av *av, struct fid_ep *ep)
{
	OWNER_OF(av, struct owner, peer_av)->st.av_ep_addr_calls++;
	return FI_ADDR_NOTAVAIL;
}

/*
 * The owner's domain and EQ exist only to be referenced by the peer domain
 * and peer EQ contexts: every call into them is counted and refused.
 */
static void count_call(struct fid *fid)
{
	struct owner *o = fid->context;

	if (fid->fclass == FI_CLASS_EQ)
		o->st.eq_calls++;
	else
		o->st.domain_calls++;
}

static int stub_close(struct fid *fid)
{
	count_call(fid);
	return -FI_ENOSYS;
}

static int stub_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	count_call(fid);
	return -FI_ENOSYS;
}

static int stub_control(struct fid *fid, int command, void *arg)
{
	count_call(fid);
	return -FI_ENOSYS;
}

static int stub_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
			 void *context)
{
	count_call(fid);
	return -FI_ENOSYS;
}

static int stub_tostr(const struct fid *fid, char *buf, size_t len)
{
	count_call((struct fid *) fid);
	return -FI_ENOSYS;
}

static int stub_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops,
			void *context)
{
	count_call(fid);
	return -FI_ENOSYS;
}

static struct fi_ops stub_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = stub_close,
	.bind = stub_bind,
	.control = stub_control,
	.ops_open = stub_ops_open,
	.tostr = stub_tostr,
	.ops_set = stub_ops_set,
};

#define DOMAIN_STUB(name, ...) \
	static int name(struct fid_domain *d, __VA_ARGS__) \
	{ \
		count_call(&d->fid); \
		return -FI_ENOSYS; \
	}

DOMAIN_STUB(dstub_av_open, struct fi_av_attr *a, struct fid_av **av, void *c)
DOMAIN_STUB(dstub_cq_open, struct fi_cq_attr *a, struct fid_cq **cq, void *c)
DOMAIN_STUB(dstub_endpoint, struct fi_info *i, struct fid_ep **ep, void *c)
DOMAIN_STUB(dstub_scalable_ep, struct fi_info *i, struct fid_ep **ep, void *c)
DOMAIN_STUB(dstub_cntr_open, struct fi_cntr_attr *a, struct fid_cntr **cntr, void *c)
DOMAIN_STUB(dstub_poll_open, struct fi_poll_attr *a, struct fid_poll **p)
DOMAIN_STUB(dstub_stx_ctx, struct fi_tx_attr *a, struct fid_stx **stx, void *c)
DOMAIN_STUB(dstub_srx_ctx, struct fi_rx_attr *a, struct fid_ep **ep, void *c)
DOMAIN_STUB(dstub_query_atomic, enum fi_datatype t, enum fi_op op,
	    struct fi_atomic_attr *a, uint64_t flags)
DOMAIN_STUB(dstub_query_collective, enum fi_collective_op op,
	    struct fi_collective_attr *a, uint64_t flags)
DOMAIN_STUB(dstub_endpoint2, struct fi_info *i, struct fid_ep **ep, uint64_t flags,
	    void *c)

static struct fi_ops_domain stub_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = dstub_av_open,
	.cq_open = dstub_cq_open,
	.endpoint = dstub_endpoint,
	.scalable_ep = dstub_scalable_ep,
	.cntr_open = dstub_cntr_open,
	.poll_open = dstub_poll_open,
	.stx_ctx = dstub_stx_ctx,
	.srx_ctx = dstub_srx_ctx,
	.query_atomic = dstub_query_atomic,
	.query_collective = dstub_query_collective,
	.endpoint2 = dstub_endpoint2,
};

static ssize_t estub_read(struct fid_eq *eq, uint32_t *event, void *buf, size_t len,
			  uint64_t flags)
{
	count_call(&eq->fid);
	return -FI_ENOSYS;
}

static ssize_t estub_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf,
			     uint64_t flags)
{
	count_call(&eq->fid);
	return -FI_ENOSYS;
}

static ssize_t estub_write(struct fid_eq *eq, uint32_t event, const void *buf,
			   size_t len, uint64_t flags)
{
	count_call(&eq->fid);
	return -FI_ENOSYS;
}

static ssize_t estub_sread(struct fid_eq *eq, uint32_t *event, void *buf, size_t len,
			   int timeout, uint64_t flags)
{
	count_call(&eq->fid);
	return -FI_ENOSYS;
}

static const char *estub_strerror(struct fid_eq *eq, int prov_errno,
				  const void *err_data, char *buf, size_t len)
{
	count_call(&eq->fid);
	return "owner EQ stub";
}

static struct fi_ops_eq stub_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = estub_read,
	.readerr = estub_readerr,
	.write = estub_write,
	.sread = estub_sread,
	.strerror = estub_strerror,
};

/* ---- open and close ---- */

static void init_owner_objects(struct owner *o)
{
	o->cq_ops = (struct fi_ops_cq_owner){
		.size = sizeof(struct fi_ops_cq_owner),
		.write = owner_cq_write,
		.writeerr = owner_cq_writeerr,
	};
	o->peer_cq.fid.fclass = FI_CLASS_PEER_CQ;
	o->peer_cq.fid.context = o;
	o->peer_cq.owner_ops = &o->cq_ops;
	o->cq_ctx = (struct fi_peer_cq_context){ sizeof(o->cq_ctx), &o->peer_cq };

	o->srx_ops = (struct fi_ops_srx_owner){
		.size = sizeof(struct fi_ops_srx_owner),
		.get_msg = owner_get_msg,
		/* The cast is the very mismatch of ABIs that the flag declares. */
		.get_tag = o->cfg.get_tag_no_size ?
			   (int (*)(struct fid_peer_srx *, fi_addr_t, size_t, uint64_t,
				    struct fi_peer_rx_entry **))(void (*)(void))
			   owner_get_tag_no_size : owner_get_tag,
		.queue_msg = owner_queue_msg,
		.queue_tag = owner_queue_tag,
		.foreach_unspec_addr = owner_foreach_unspec_addr,
		.free_entry = owner_free_entry,
	};
	if (o->cfg.style == OWNER_STYLE_SPEC) {
		/* The peer fills in the callbacks before fi_srx_context returns. */
		memset(&o->srx_peer_ops, 0, sizeof(o->srx_peer_ops));
		o->srx_peer_ops.size = sizeof(struct fi_ops_srx_peer);
		o->peer_srx.ep_fid.fid.fclass = FI_CLASS_PEER_SRX;
	} else {
		/* util_srx's class, the one 1.22's shm binds */
		o->srx_peer_ops = owner_own_peer_ops;
		o->peer_srx.ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
	}
	o->peer_srx.ep_fid.fid.context = o;
	o->peer_srx.owner_ops = &o->srx_ops;
	o->peer_srx.peer_ops = o->cfg.srx_peer_ops_null ? NULL : &o->srx_peer_ops;
	o->srx_ctx = (struct fi_peer_srx_context){ sizeof(o->srx_ctx), &o->peer_srx };

	o->av_ops = (struct fi_ops_av_owner){
		.size = sizeof(struct fi_ops_av_owner),
		.query = owner_av_query,
		.ep_addr = owner_av_ep_addr,
	};
	o->peer_av.fid.fclass = FI_CLASS_PEER_AV;
	o->peer_av.fid.context = o;
	o->peer_av.owner_ops = &o->av_ops;
	o->av_ctx = (struct fi_peer_av_context){ sizeof(o->av_ctx), &o->peer_av };

	o->owner_domain.fid.fclass = FI_CLASS_DOMAIN;
	o->owner_domain.fid.context = o;
	o->owner_domain.fid.ops = &stub_fid_ops;
	o->owner_domain.ops = &stub_domain_ops;
	o->domain_ctx = (struct fi_peer_domain_context){ sizeof(o->domain_ctx),
							 &o->owner_domain };

	o->owner_eq.fid.fclass = FI_CLASS_EQ;
	o->owner_eq.fid.context = o;
	o->owner_eq.fid.ops = &stub_fid_ops;
	o->owner_eq.ops = &stub_eq_ops;
	o->eq_ctx = (struct fi_peer_eq_context){ sizeof(o->eq_ctx), &o->owner_eq };

	for (int i = 0; i < 2; i++) {
		struct owner_cntr *c = i ? &o->rx_cntr : &o->tx_cntr;

		c->owner = o;
		c->ops = (struct fi_ops_cntr_owner){
			.size = sizeof(struct fi_ops_cntr_owner),
			.inc = owner_cntr_inc,
			.incerr = owner_cntr_incerr,
		};
		c->peer.fid.fclass = FI_CLASS_CNTR;
		c->peer.fid.context = o;
		c->peer.owner_ops = &c->ops;
		c->ctx = (struct fi_peer_cntr_context){ sizeof(c->ctx), &c->peer };
	}
}

static int open_cntr(struct owner *o, struct owner_cntr *c)
{
	struct fi_cntr_attr attr = {
		.events = FI_CNTR_EVENTS_COMP,
		.wait_obj = FI_WAIT_NONE,
		.flags = FI_PEER,
	};

	return fi_cntr_open(o->domain, &attr, &c->xshm, &c->ctx);
}

static int open_ep(struct owner *o, int i)
{
	int ret;

	o->failed_call = "fi_endpoint";
	ret = fi_endpoint(o->domain, o->info, &o->ep[i], NULL);
	if (ret)
		return ret;
	o->failed_call = "fi_ep_bind(av)";
	ret = fi_ep_bind(o->ep[i], &o->av->fid, 0);
	if (ret)
		return ret;
	o->failed_call = "fi_ep_bind(cq)";
	ret = fi_ep_bind(o->ep[i], &o->cq->fid, FI_TRANSMIT | FI_RECV);
	if (ret)
		return ret;
	if (o->cfg.style == OWNER_STYLE_SPEC) {
		o->failed_call = "fi_ep_bind(the srx fi_srx_context returned)";
		ret = fi_ep_bind(o->ep[i], &o->srx->fid, 0);
	} else {
		o->failed_call = "fi_ep_bind(the owner's own fid_peer_srx)";
		ret = fi_ep_bind(o->ep[i], &o->peer_srx.ep_fid.fid, 0);
	}
	if (ret)
		return ret;
	if (o->cfg.cntrs) {
		o->failed_call = "fi_ep_bind(cntr)";
		ret = fi_ep_bind(o->ep[i], &o->tx_cntr.xshm->fid, FI_SEND);
		if (!ret)
			ret = fi_ep_bind(o->ep[i], &o->rx_cntr.xshm->fid, FI_RECV);
		if (ret)
			return ret;
	}
	o->failed_call = "fi_enable";
	ret = fi_enable(o->ep[i]);
	if (ret)
		return ret;
	o->failed_call = "fi_getname";
	o->namelen[i] = OWNER_NAME_MAX;
	return fi_getname(&o->ep[i]->fid, o->name[i], &o->namelen[i]);
}

static bool peer_ops_equal(const struct fi_ops_srx_peer *a, const struct fi_ops_srx_peer *b)
{
	return a->start_msg == b->start_msg && a->start_tag == b->start_tag &&
	       a->discard_msg == b->discard_msg && a->discard_tag == b->discard_tag;
}

/* fi_srx_context(FI_PEER), and what each style expects of it. */
static int open_srx(struct owner *o)
{
	struct fi_rx_attr rx_attr = *o->info->rx_attr;
	struct fid_ep *returned = NULL;
	int ret;

	rx_attr.op_flags = FI_PEER;
	o->failed_call = "fi_srx_context(FI_PEER)";
	ret = fi_srx_context(o->domain, &rx_attr, &returned, &o->srx_ctx);
	if (ret)
		return ret;
	if (o->cfg.style == OWNER_STYLE_UPSTREAM) {
		/* Ignored, as libfabric's owners do (1.22's shm never sets it). */
		o->failed_call = "fi_srx_context(FI_PEER) overwrote the owner's own "
				 "fi_ops_srx_peer";
		if (o->peer_srx.peer_ops != (o->cfg.srx_peer_ops_null ? NULL : &o->srx_peer_ops) ||
		    !peer_ops_equal(&o->srx_peer_ops, &owner_own_peer_ops))
			return -FI_EOTHER;
		return 0;
	}
	o->srx = returned;
	o->failed_call = "fi_srx_context(FI_PEER) returned no fid";
	if (!o->srx)
		return -FI_EOTHER;
	o->failed_call = "fi_srx_context(FI_PEER) left fi_ops_srx_peer unfilled";
	if (o->cfg.srx_peer_ops_null)
		return o->peer_srx.peer_ops ? -FI_EOTHER : 0;
	if (o->peer_srx.peer_ops != &o->srx_peer_ops || !o->srx_peer_ops.start_msg ||
	    !o->srx_peer_ops.start_tag || !o->srx_peer_ops.discard_msg ||
	    !o->srx_peer_ops.discard_tag)
		return -FI_EOTHER;
	return 0;
}

static int open_all(struct owner *o)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = {
		.format = o->cfg.cq_format,
		.wait_obj = FI_WAIT_NONE,
		.flags = FI_PEER,
	};
	int ret;

	o->failed_call = "fi_allocinfo";
	if (!hints)
		return -FI_ENOMEM;
	hints->fabric_attr->prov_name = strdup(o->cfg.prov_name);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = o->cfg.caps;
	hints->mode = 0;
	hints->domain_attr->mr_mode = 0;
	o->failed_call = "fi_getinfo";
	xt_remove_stale_shm_regions();
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &o->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	o->failed_call = "fi_fabric";
	ret = fi_fabric(o->info->fabric_attr, &o->fabric, NULL);
	if (ret)
		return ret;
	if (o->cfg.peer_domain) {
		o->failed_call = "fi_domain2(FI_PEER)";
		ret = fi_domain2(o->fabric, o->info, &o->domain, FI_PEER, &o->domain_ctx);
	} else {
		o->failed_call = "fi_domain";
		ret = fi_domain(o->fabric, o->info, &o->domain, NULL);
	}
	if (ret)
		return ret;
	if (o->cfg.peer_eq) {
		struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE, .flags = FI_PEER };

		o->failed_call = "fi_eq_open(FI_PEER)";
		ret = fi_eq_open(o->fabric, &eq_attr, &o->eq, &o->eq_ctx);
		if (ret)
			return ret;
	}
	if (o->cfg.peer_av) {
		av_attr.flags = FI_PEER;
		o->failed_call = "fi_av_open(FI_PEER)";
		ret = fi_av_open(o->domain, &av_attr, &o->av, &o->av_ctx);
	} else {
		o->failed_call = "fi_av_open";
		ret = fi_av_open(o->domain, &av_attr, &o->av, NULL);
	}
	if (ret)
		return ret;
	o->failed_call = "fi_cq_open(FI_PEER)";
	ret = fi_cq_open(o->domain, &cq_attr, &o->cq, &o->cq_ctx);
	if (ret)
		return ret;
	if (o->cfg.cntrs) {
		o->failed_call = "fi_cntr_open(FI_PEER)";
		ret = open_cntr(o, &o->tx_cntr);
		if (!ret)
			ret = open_cntr(o, &o->rx_cntr);
		if (ret)
			return ret;
	}
	ret = open_srx(o);
	if (ret)
		return ret;
	for (int i = 0; i < o->cfg.nep; i++) {
		ret = open_ep(o, i);
		if (ret)
			return ret;
	}
	o->failed_call = NULL;
	return 0;
}

int owner_open(struct owner *o, const struct owner_cfg *cfg)
{
	int ret, slot = -1;

	memset(o, 0, sizeof(*o));
	if (cfg)
		o->cfg = *cfg;
	if (!o->cfg.prov_name)
		o->cfg.prov_name = "xshm";
	if (!o->cfg.caps)
		o->cfg.caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV;
	if (o->cfg.cq_format == FI_CQ_FORMAT_UNSPEC)
		o->cfg.cq_format = FI_CQ_FORMAT_TAGGED;
	if (o->cfg.nep <= 0)
		o->cfg.nep = 1;
	if (o->cfg.nep > OWNER_MAX_EPS)
		return -FI_EINVAL;
	for (int i = 0; i < OWNER_MAX_OPEN && slot < 0; i++)
		if (!owner_list[i])
			slot = i;
	if (slot < 0)
		return -FI_ENOSPC;
	owner_list[slot] = o;
	init_owner_objects(o);
	ret = open_all(o);
	if (ret) {
		const char *failed = o->failed_call;

		owner_close(o);
		o->failed_call = failed;
	}
	return ret;
}

static void close_fid(struct fid *fid, int *ret)
{
	int r = fid ? fi_close(fid) : 0;

	if (r && !*ret)
		*ret = r;
}

int owner_close(struct owner *o)
{
	int ret = 0;
	bool open = false;

	for (int i = 0; i < OWNER_MAX_OPEN; i++)
		open |= owner_list[i] == o;
	if (!open)
		return 0;
	/* What is still unexpected is dropped, as an SRX being closed would. */
	for (int t = 0; t < 2; t++) {
		struct owner_entry *oe;

		while ((oe = o->unexpected[t])) {
			o->unexpected[t] = oe->qnext;
			oe->qnext = NULL;
			discard_entry(o, oe);
		}
		o->posted[t] = NULL;
	}
	for (int i = 0; i < OWNER_MAX_EPS; i++)
		close_fid(o->ep[i] ? &o->ep[i]->fid : NULL, &ret);
	close_fid(o->srx ? &o->srx->fid : NULL, &ret);
	close_fid(o->tx_cntr.xshm ? &o->tx_cntr.xshm->fid : NULL, &ret);
	close_fid(o->rx_cntr.xshm ? &o->rx_cntr.xshm->fid : NULL, &ret);
	close_fid(o->cq ? &o->cq->fid : NULL, &ret);
	close_fid(o->av ? &o->av->fid : NULL, &ret);
	close_fid(o->eq ? &o->eq->fid : NULL, &ret);
	close_fid(o->domain ? &o->domain->fid : NULL, &ret);
	close_fid(o->fabric ? &o->fabric->fid : NULL, &ret);
	fi_freeinfo(o->info);
	o->st.held_at_close = owner_entries_held(o);
	while (o->all) {
		struct owner_entry *oe = o->all;

		o->all = oe->all_next;
		free(oe->data);
		free(oe);
	}
	free(o->comps);
	free(o->gets);
	o->comps = NULL;
	o->gets = NULL;
	o->comp_count = o->comp_cap = o->comp_head = 0;
	o->ngets = o->gets_cap = 0;
	o->info = NULL;
	o->fabric = NULL;
	o->domain = NULL;
	o->eq = NULL;
	o->av = NULL;
	o->cq = NULL;
	o->srx = NULL;
	o->tx_cntr.xshm = o->rx_cntr.xshm = NULL;
	memset(o->ep, 0, sizeof(o->ep));
	for (int i = 0; i < OWNER_MAX_OPEN; i++)
		if (owner_list[i] == o)
			owner_list[i] = NULL;
	return ret;
}

int owner_av_insert(struct owner *o, const void *name, fi_addr_t *addr)
{
	int ret;

	*addr = FI_ADDR_NOTAVAIL;
	ret = fi_av_insert(o->av, name, 1, addr, 0, NULL);
	if (ret == 1)
		return 0;
	return ret < 0 ? ret : -FI_EINVAL;
}
