/*
 * The network path (net.h, wire.h): sends, the header buffers, fetching
 * large payloads into posted receives, and the network CQ.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cntr.h"
#include "ep.h"
#include "wire.h"

#define HDR_BUFS		64	/* a window of OSU's osu_bw in flight */
#define POLL_BATCH		16
#define IDLE_AFTER_POLLS	64	/* empty polls before a path is idle */
/*
 * While the network is idle and the peer path busy, poll the network once
 * per this many calls: a poll of tcp;ofi_rxm costs a system call (about
 * 1 us here), a call of the peer path about 0.1 us, so this keeps the peer
 * path's latency and delays a first message from the network by some
 * 10 us, against tcp's tens.  While the AV names no remote endpoint (a job
 * on one node), only a stranger's first message can come, which may wait
 * some 100 us more.  While the peer path is idle too, the network is
 * polled at every call: its latency is then the network provider's own.
 */
#define IDLE_POLL_EVERY		128
#define LOCAL_ONLY_POLL_EVERY	4096

enum net_kind {
	NET_HDR_BUF = 1,	/* a posted buffer for headers */
	NET_TX,			/* a send: eager message, header or payload */
	NET_FETCH,		/* a tagged receive of a large payload */
};

struct xlink_net_buf {
	enum net_kind kind;
	size_t size;
	char data[];
};

/* The context of a send or a fetch; waits on net->waiting while EAGAIN. */
struct xlink_net_op {
	enum net_kind kind;
	struct xlink_net_op *next;
	bool report;			/* NET_TX: the application's send */
	void *context;
	uint64_t flags;
	size_t len;
	fi_addr_t addr;
	uint64_t large_id;
	struct iovec iov[XLINK_IOV_LIMIT];
	size_t count;
	struct xlink_rx *posted;	/* NET_FETCH; NULL: payload dropped */
	void *scratch;			/* NET_FETCH of a dropped payload */
	char packed[];			/* NET_TX of an eager message */
};

static size_t iov_total(const struct iovec *iov, size_t count)
{
	size_t len = 0;

	for (size_t i = 0; i < count; i++)
		len += iov[i].iov_len;
	return len;
}

static void copy_from_iov(char *dst, const struct iovec *iov, size_t count, size_t len)
{
	for (size_t i = 0; i < count && len; i++) {
		size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;

		memcpy(dst, iov[i].iov_base, n);
		dst += n;
		len -= n;
	}
}

static void copy_to_iov(const struct iovec *iov, size_t count, const char *src, size_t len)
{
	for (size_t i = 0; i < count && len; i++) {
		size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;

		memcpy(iov[i].iov_base, src, n);
		src += n;
		len -= n;
	}
}

static void wait_append(struct xlink_net *net, struct xlink_net_op *op)
{
	op->next = NULL;
	if (net->waiting_tail)
		net->waiting_tail->next = op;
	else
		net->waiting = op;
	net->waiting_tail = op;
}

/* ---- sends ---- */

static struct xlink_net_op *op_new(enum net_kind kind, size_t packed)
{
	/* malloc, not calloc: glibc's calloc skips its per-thread cache */
	struct xlink_net_op *op = malloc(sizeof(*op) + packed);

	if (!op)
		return NULL;
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	return op;
}

/* Sends bytes that xlink owns, with no completion for the application. */
static ssize_t send_owned(struct xlink_ep *ep, const void *bytes, size_t len,
			  fi_addr_t addr)
{
	struct xlink_net_op *op;
	ssize_t ret;

	if (len <= ep->net.inject_size)
		return fi_inject(ep->net.ep, bytes, len, addr);
	op = op_new(NET_TX, len);
	if (!op)
		return -FI_ENOMEM;
	memcpy(op->packed, bytes, len);
	ret = fi_send(ep->net.ep, op->packed, len, NULL, addr, op);
	if (ret)
		free(op);
	return ret;
}

static ssize_t send_eager(struct xlink_ep *ep, fi_addr_t addr,
			  const struct xlink_hdr *hdr, const struct iovec *iov,
			  size_t count, uint64_t flags, bool report, void *context)
{
	size_t total = sizeof(*hdr) + hdr->size;
	bool inject = flags & FI_INJECT;
	struct xlink_net_op *op;
	bool gather;
	ssize_t ret;

	if (total <= ep->net.inject_size || inject) {
		char small[sizeof(*hdr) + xlink_params.eager_max];

		memcpy(small, hdr, sizeof(*hdr));
		copy_from_iov(small + sizeof(*hdr), iov, count, hdr->size);
		ret = send_owned(ep, small, total, addr);
		if (!ret && report)
			xlink_tx_complete(ep, context, flags, hdr->size);
		else if (!ret && ep->tx_cntr)
			xlink_cntr_inc(ep->tx_cntr);
		return ret;
	}
	/*
	 * The application's buffers stay its until the completion: they go
	 * behind the header as they are, when the network takes that many.
	 */
	gather = count + 1 <= ep->net.iov_limit;
	op = op_new(NET_TX, gather ? sizeof(*hdr) : total);
	if (!op)
		return -FI_ENOMEM;
	op->report = report;
	op->context = context;
	op->flags = flags;
	op->len = hdr->size;
	memcpy(op->packed, hdr, sizeof(*hdr));
	if (gather) {
		struct iovec v[1 + XLINK_IOV_LIMIT] = { { op->packed, sizeof(*hdr) } };

		memcpy(v + 1, iov, count * sizeof(*iov));
		ret = fi_sendv(ep->net.ep, v, NULL, count + 1, addr, op);
	} else {
		copy_from_iov(op->packed + sizeof(*hdr), iov, count, hdr->size);
		ret = fi_send(ep->net.ep, op->packed, total, NULL, addr, op);
	}
	if (ret)
		free(op);
	return ret;
}

static ssize_t issue_payload(struct xlink_ep *ep, struct xlink_net_op *op)
{
	return fi_tsendv(ep->net.ep, op->iov, NULL, op->count, op->addr,
			 op->large_id, op);
}

static ssize_t send_large(struct xlink_ep *ep, fi_addr_t addr, struct xlink_hdr *hdr,
			  const struct iovec *iov, size_t count, uint64_t flags,
			  void *context)
{
	struct xlink_net_op *op = op_new(NET_TX, 0);
	ssize_t ret;

	if (!op)
		return -FI_ENOMEM;
	hdr->flags |= XLINK_HDR_LARGE;
	hdr->large_id = ep->net.large_base | ep->net.large_seq++;
	ret = send_owned(ep, hdr, sizeof(*hdr), addr);
	if (ret) {
		free(op);
		return ret;
	}
	op->report = true;
	op->context = context;
	op->flags = flags;
	op->len = hdr->size;
	op->addr = addr;
	op->large_id = hdr->large_id;
	op->count = count;
	memcpy(op->iov, iov, count * sizeof(*iov));
	/* The header is out: the payload must follow, now or from progress. */
	ret = issue_payload(ep, op);
	if (ret == -FI_EAGAIN)
		wait_append(&ep->net, op);
	else if (ret)
		xlink_tx_fail(ep, context, flags, op->len, (int) -ret);
	if (ret && ret != -FI_EAGAIN)
		free(op);
	return 0;
}

ssize_t xlink_net_send(struct xlink_ep *ep, fi_addr_t net_addr, bool tagged,
		       const struct iovec *iov, size_t count, uint64_t tag,
		       uint64_t data, uint64_t flags, bool report, void *context)
{
	struct xlink_hdr hdr = {
		.op = tagged ? XLINK_HDR_TAGGED : XLINK_HDR_MSG,
		.flags = (flags & FI_REMOTE_CQ_DATA) ? XLINK_HDR_DATA : 0,
		.tag = tag,
		.cq_data = data,
		.size = iov_total(iov, count),
		.src_key = ep->net.self_key,
	};

	if (count > XLINK_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	flags |= tagged ? FI_TAGGED : FI_MSG;
	if (hdr.size <= xlink_params.eager_max)
		return send_eager(ep, net_addr, &hdr, iov, count, flags, report, context);
	if (flags & FI_INJECT)
		return -FI_EINVAL;
	return send_large(ep, net_addr, &hdr, iov, count, flags, context);
}

/* ---- receives ---- */

static int post_buf(struct xlink_ep *ep, struct xlink_net_buf *buf)
{
	return (int) fi_recv(ep->net.ep, buf->data, buf->size, NULL, FI_ADDR_UNSPEC, buf);
}

static ssize_t issue_fetch(struct xlink_ep *ep, struct xlink_net_op *op)
{
	return fi_trecvv(ep->net.ep, op->iov, NULL, op->count, FI_ADDR_UNSPEC,
			 op->large_id, 0, op);
}

static void start_fetch(struct xlink_ep *ep, struct xlink_net_op *op)
{
	ssize_t ret = issue_fetch(ep, op);

	if (ret == -FI_EAGAIN) {
		wait_append(&ep->net, op);
		return;
	}
	if (ret) {
		FI_WARN(&xlink_prov, FI_LOG_EP_DATA, "payload receive: %zd\n", ret);
		if (op->posted)
			xlink_rx_fail(ep, op->posted, (int) -ret, 0, 0, op->flags,
				      op->posted->entry.cq_data, op->posted->entry.tag);
		free(op->scratch);
		free(op);
	}
}

static uint64_t rx_flags(const struct xlink_rx *msg)
{
	return xlink_rx_op_flags(msg->tagged) | (msg->entry.flags & FI_REMOTE_CQ_DATA);
}

/* A large payload goes straight into the posted buffers when it fits. */
static void fetch_into(struct xlink_ep *ep, struct xlink_rx *msg, struct xlink_rx *posted)
{
	size_t size = msg->entry.size;
	size_t cap = iov_total(posted->iov, posted->entry.count);
	struct xlink_net_op *op = op_new(NET_FETCH, 0);

	if (op && size > cap) {
		posted->bounce = malloc(size);
		if (!posted->bounce) {
			free(op);
			op = NULL;
		}
	}
	if (!op) {
		xlink_rx_fail(ep, posted, FI_ENOMEM, 0, 0, rx_flags(msg),
			      msg->entry.cq_data, msg->entry.tag);
		xlink_net_discard(ep, msg);
		return;
	}
	op->posted = posted;
	op->flags = rx_flags(msg);
	op->large_id = msg->large_id;
	posted->msg_size = size;
	posted->msg_flags = op->flags;
	posted->entry.tag = msg->entry.tag;
	posted->entry.cq_data = msg->entry.cq_data;
	posted->entry.addr = msg->entry.addr;
	if (posted->bounce) {
		op->iov[0] = (struct iovec){ posted->bounce, size };
		op->count = 1;
	} else {
		memcpy(op->iov, posted->iov, sizeof(op->iov));
		op->count = posted->entry.count;
	}
	xlink_rx_free(msg);
	start_fetch(ep, op);
}

void xlink_net_deliver(struct xlink_ep *ep, struct xlink_rx *msg, struct xlink_rx *posted)
{
	size_t size = msg->entry.size;
	size_t cap = iov_total(posted->iov, posted->entry.count);
	size_t len = size < cap ? size : cap;

	if (msg->large_id) {
		fetch_into(ep, msg, posted);
		return;
	}
	copy_to_iov(posted->iov, posted->entry.count, msg->data, len);
	if (size > cap)
		xlink_rx_fail(ep, posted, FI_ETRUNC, len, size - len, rx_flags(msg),
			      msg->entry.cq_data, msg->entry.tag);
	else
		xlink_rx_complete(ep, posted, len, rx_flags(msg), msg->entry.cq_data,
				  msg->entry.tag, msg->entry.addr);
	if (msg->owns_data)
		free(msg->data);
	xlink_rx_free(msg);
}

void xlink_net_discard(struct xlink_ep *ep, struct xlink_rx *msg)
{
	struct xlink_net_op *op;

	if (!msg->large_id) {
		if (msg->owns_data)
			free(msg->data);
		xlink_rx_free(msg);
		return;
	}
	/* The payload is on its way: receive it somewhere and drop it. */
	op = op_new(NET_FETCH, 0);
	if (op)
		op->scratch = malloc(msg->entry.size);
	if (!op || !op->scratch) {
		free(op);
		xlink_rx_free(msg);
		return;
	}
	op->large_id = msg->large_id;
	op->iov[0] = (struct iovec){ op->scratch, msg->entry.size };
	op->count = 1;
	xlink_rx_free(msg);
	start_fetch(ep, op);
}

static bool header_ok(const struct xlink_hdr *hdr, size_t len)
{
	if (len < sizeof(*hdr) ||
	    (hdr->op != XLINK_HDR_MSG && hdr->op != XLINK_HDR_TAGGED))
		return false;
	if (hdr->flags & XLINK_HDR_LARGE)
		return len == sizeof(*hdr) && hdr->size > 0 && hdr->large_id;
	return len - sizeof(*hdr) == hdr->size;
}

static void header_arrived(struct xlink_ep *ep, struct xlink_net_buf *buf, size_t len)
{
	const struct xlink_hdr *hdr = (const void *) buf->data;
	struct xlink_rx *msg;

	if (!header_ok(hdr, len)) {
		FI_WARN(&xlink_prov, FI_LOG_EP_DATA, "bad header of %zu bytes\n", len);
		return;
	}
	msg = xlink_rx_alloc(ep);
	if (!msg)
		return;
	msg->origin = XLINK_RX_FROM_NET;
	msg->tagged = hdr->op == XLINK_HDR_TAGGED;
	msg->src_key = hdr->src_key;
	msg->entry.addr = xlink_av_net_source(ep->av, hdr->src_key);
	msg->entry.size = hdr->size;
	msg->entry.tag = hdr->tag;
	msg->entry.cq_data = hdr->cq_data;
	msg->entry.flags = (hdr->flags & XLINK_HDR_DATA) ? FI_REMOTE_CQ_DATA : 0;
	msg->large_id = (hdr->flags & XLINK_HDR_LARGE) ? hdr->large_id : 0;
	/* Borrowed from the buffer until the message is queued. */
	msg->data = msg->large_id ? NULL : buf->data + sizeof(*hdr);
	if (!xlink_srx_net_arrived(ep, msg) || msg->large_id)
		return;
	msg->data = malloc(hdr->size ? hdr->size : 1);
	msg->owns_data = msg->data != NULL;
	if (msg->data)
		memcpy(msg->data, buf->data + sizeof(*hdr), hdr->size);
	else
		msg->entry.size = 0;	/* delivered empty rather than lost */
}

/* ---- the network CQ ---- */

static void fetch_done(struct xlink_ep *ep, struct xlink_net_op *op)
{
	struct xlink_rx *posted = op->posted;
	size_t size, cap, len;

	free(op->scratch);
	free(op);
	if (!posted)
		return;
	size = posted->msg_size;
	if (!posted->bounce) {
		xlink_rx_complete(ep, posted, size, posted->msg_flags, posted->entry.cq_data,
				  posted->entry.tag, posted->entry.addr);
		return;
	}
	cap = iov_total(posted->iov, posted->entry.count);
	len = size < cap ? size : cap;
	copy_to_iov(posted->iov, posted->entry.count, posted->bounce, len);
	xlink_rx_fail(ep, posted, FI_ETRUNC, len, size - len, posted->msg_flags,
		      posted->entry.cq_data, posted->entry.tag);
}

static void tx_done(struct xlink_ep *ep, struct xlink_net_op *op)
{
	if (op->report)
		xlink_tx_complete(ep, op->context, op->flags, op->len);
	free(op);
}

static void completed(struct xlink_ep *ep, const struct fi_cq_tagged_entry *comp)
{
	enum net_kind *kind = comp->op_context;

	switch (*kind) {
	case NET_HDR_BUF: {
		struct xlink_net_buf *buf = comp->op_context;

		header_arrived(ep, buf, comp->len);
		if (post_buf(ep, buf))
			FI_WARN(&xlink_prov, FI_LOG_EP_DATA, "header buffer lost\n");
		break;
	}
	case NET_TX:
		tx_done(ep, comp->op_context);
		break;
	case NET_FETCH:
		fetch_done(ep, comp->op_context);
		break;
	}
}

static void failed(struct xlink_ep *ep)
{
	struct fi_cq_err_entry err = { 0 };
	enum net_kind *kind;

	if (fi_cq_readerr(ep->net.cq, &err, 0) != 1 || !err.op_context)
		return;
	kind = err.op_context;
	switch (*kind) {
	case NET_HDR_BUF:
		if (err.err != FI_ECANCELED && post_buf(ep, err.op_context))
			FI_WARN(&xlink_prov, FI_LOG_EP_DATA, "header buffer lost\n");
		break;
	case NET_TX: {
		struct xlink_net_op *op = err.op_context;

		if (op->report)
			xlink_tx_fail(ep, op->context, op->flags, op->len, err.err);
		free(op);
		break;
	}
	case NET_FETCH: {
		struct xlink_net_op *op = err.op_context;

		if (op->posted)
			xlink_rx_fail(ep, op->posted, err.err, 0, 0, op->posted->msg_flags,
				      op->posted->entry.cq_data, op->posted->entry.tag);
		free(op->scratch);
		free(op);
		break;
	}
	}
}

static void retry_waiting(struct xlink_ep *ep)
{
	struct xlink_net *net = &ep->net;

	while (net->waiting) {
		struct xlink_net_op *op = net->waiting;
		ssize_t ret = op->kind == NET_TX ? issue_payload(ep, op) :
						   issue_fetch(ep, op);

		if (ret == -FI_EAGAIN)
			return;
		net->waiting = op->next;
		if (!net->waiting)
			net->waiting_tail = NULL;
		if (!ret)
			continue;
		if (op->kind == NET_TX)
			xlink_tx_fail(ep, op->context, op->flags, op->len, (int) -ret);
		else if (op->posted)
			xlink_rx_fail(ep, op->posted, (int) -ret, 0, 0, op->posted->msg_flags,
				      op->posted->entry.cq_data, op->posted->entry.tag);
		free(op->scratch);
		free(op);
	}
}

/* Whether this call polls the network (see IDLE_POLL_EVERY). */
static bool poll_due(struct xlink_ep *ep)
{
	struct xlink_net *net = &ep->net;

	if (net->waiting || net->empty_polls < IDLE_AFTER_POLLS)
		return true;
	if (!ep->av->remote_count)
		return ++net->skipped >= LOCAL_ONLY_POLL_EVERY;
	if (ep->peer_quiet_polls >= IDLE_AFTER_POLLS)
		return true;
	return ++net->skipped >= IDLE_POLL_EVERY;
}

void xlink_net_progress(struct xlink_ep *ep)
{
	struct xlink_net *net = &ep->net;
	struct fi_cq_tagged_entry comps[POLL_BATCH];
	ssize_t n;

	if (!poll_due(ep))
		return;
	net->skipped = 0;
	n = fi_cq_read(net->cq, comps, POLL_BATCH);
	if (n == -FI_EAVAIL)
		failed(ep);
	for (ssize_t i = 0; i < n; i++)
		completed(ep, &comps[i]);
	if (n > 0 || n == -FI_EAVAIL)
		net->empty_polls = 0;
	else if (net->empty_polls < IDLE_AFTER_POLLS)
		net->empty_polls++;
	retry_waiting(ep);
}

/* ---- the network endpoint ---- */

/*
 * The network endpoint is opened only when the application enables its
 * own: rxm 1.17 crashes closing an endpoint that was never enabled.
 */
static int open_net(struct xlink_ep *ep)
{
	struct xlink_domain *domain = ep->domain;
	struct fi_cq_attr cq_attr = {
		.size = 4096,
		.format = FI_CQ_FORMAT_TAGGED,
		.wait_obj = FI_WAIT_NONE,
	};
	int ret;

	ep->net.inject_size = ep->net_info->tx_attr->inject_size;
	ep->net.iov_limit = ep->net_info->tx_attr->iov_limit;
	ep->net.large_base = (1ULL << 63) |
			     ((uint64_t) ((uint32_t) getpid() ^ (uint32_t) random()) << 31);
	ep->net.large_seq = 1;
	ret = fi_endpoint(domain->net, ep->net_info, &ep->net.ep, ep);
	if (!ret)
		ret = fi_cq_open(domain->net, &cq_attr, &ep->net.cq, ep);
	if (!ret)
		ret = fi_ep_bind(ep->net.ep, &ep->net.cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(ep->net.ep, &ep->av->net_av->fid, 0);
	return ret ? ret : fi_enable(ep->net.ep);
}

/* The key every header names this endpoint by: of the address peers insert. */
static int set_self_key(struct xlink_ep *ep)
{
	char name[FI_NAME_MAX];
	size_t len = sizeof(name);
	int ret = fi_getname(&ep->net.ep->fid, name, &len);

	if (!ret)
		ep->net.self_key = xlink_netsrc_key(name, len);
	return ret;
}

int xlink_net_enable(struct xlink_ep *ep)
{
	struct xlink_net *net = &ep->net;
	size_t size = sizeof(struct xlink_hdr) + xlink_params.eager_max;
	int ret = open_net(ep);

	if (!ret)
		ret = set_self_key(ep);
	if (ret)
		return ret;
	net->bufs = calloc(HDR_BUFS, sizeof(*net->bufs));
	if (!net->bufs)
		return -FI_ENOMEM;
	for (; net->nbufs < HDR_BUFS; net->nbufs++) {
		struct xlink_net_buf *buf = malloc(sizeof(*buf) + size);

		if (!buf)
			return -FI_ENOMEM;
		buf->kind = NET_HDR_BUF;
		buf->size = size;
		net->bufs[net->nbufs] = buf;
		ret = post_buf(ep, buf);
		if (ret)
			return ret;
	}
	return 0;
}

void xlink_net_close(struct xlink_ep *ep)
{
	struct xlink_net *net = &ep->net;

	if (net->ep)
		fi_close(&net->ep->fid);
	if (net->cq)
		fi_close(&net->cq->fid);
	for (size_t i = 0; i < net->nbufs; i++)
		free(net->bufs[i]);
	free(net->bufs);
	while (net->waiting) {
		struct xlink_net_op *op = net->waiting;

		net->waiting = op->next;
		free(op->scratch);
		free(op);
	}
	memset(net, 0, sizeof(*net));
}

int xlink_net_getname(struct xlink_ep *ep, void *addr, size_t *addrlen)
{
	if (!ep->net.ep)
		return -FI_EOPBADSTATE;
	return fi_getname(&ep->net.ep->fid, addr, addrlen);
}
