/*
 * Event queue.  RDM endpoints have no connections: an EQ carries what the
 * application writes into it and the insert events of an AV opened with
 * FI_EVENT (xshm_eq_raise).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report/eq.h"
#include "base/fid.h"
#include "base/list.h"
#include "base/peer_context.h"
#include "xshm/fi_peer.h"

struct xshm_eq_event {
	struct xshm_eq_event *next;
	uint32_t event;
	size_t len;
	bool is_err;
	unsigned char data[];
};

struct xshm_eq {
	struct fid_eq eq_fid;
	pthread_mutex_t lock;
	struct xshm_eq_event *head;
	struct xshm_eq_event *tail;
};

static struct xshm_eq *to_eq(struct fid_eq *eq_fid)
{
	return xshm_container_of(eq_fid, struct xshm_eq, eq_fid);
}

static ssize_t eq_pop(struct xshm_eq *eq, bool want_err, uint32_t *event,
		      void *buf, size_t len, uint64_t flags)
{
	struct xshm_eq_event *ev;
	ssize_t ret;

	pthread_mutex_lock(&eq->lock);
	ev = eq->head;
	if (!ev) {
		ret = -FI_EAGAIN;
	} else if (ev->is_err != want_err) {
		ret = want_err ? -FI_EAGAIN : -FI_EAVAIL;
	} else if (len < ev->len) {
		ret = -FI_ETOOSMALL;
	} else {
		if (event)
			*event = ev->event;
		memcpy(buf, ev->data, ev->len);
		ret = (ssize_t) ev->len;
		if (!(flags & FI_PEEK)) {
			eq->head = ev->next;
			if (!eq->head)
				eq->tail = NULL;
			free(ev);
		}
	}
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t xshm_eq_read(struct fid_eq *eq_fid, uint32_t *event, void *buf,
			    size_t len, uint64_t flags)
{
	return eq_pop(to_eq(eq_fid), false, event, buf, len, flags);
}

static ssize_t xshm_eq_readerr(struct fid_eq *eq_fid,
			       struct fi_eq_err_entry *buf, uint64_t flags)
{
	return eq_pop(to_eq(eq_fid), true, NULL, buf, sizeof(*buf), flags);
}

static ssize_t eq_push(struct xshm_eq *eq, uint32_t event, const void *buf,
		       size_t len, bool is_err)
{
	struct xshm_eq_event *ev = malloc(sizeof(*ev) + len);

	if (!ev)
		return -FI_ENOMEM;
	ev->next = NULL;
	ev->event = event;
	ev->len = len;
	ev->is_err = is_err;
	memcpy(ev->data, buf, len);
	pthread_mutex_lock(&eq->lock);
	if (eq->tail)
		eq->tail->next = ev;
	else
		eq->head = ev;
	eq->tail = ev;
	pthread_mutex_unlock(&eq->lock);
	return (ssize_t) len;
}

static ssize_t xshm_eq_write(struct fid_eq *eq_fid, uint32_t event,
			     const void *buf, size_t len, uint64_t flags)
{
	if (!buf && len)
		return -FI_EINVAL;
	return eq_push(to_eq(eq_fid), event, buf, len, false);
}

/* An event of xshm's own: what an AV opened with FI_EVENT reports. */
ssize_t xshm_eq_raise(struct fid_eq *eq_fid, uint32_t event, const void *buf,
		      size_t len, bool is_err)
{
	return eq_push(to_eq(eq_fid), event, buf, len, is_err);
}

static ssize_t xshm_eq_sread(struct fid_eq *eq_fid, uint32_t *event, void *buf,
			     size_t len, int timeout, uint64_t flags)
{
	struct timespec start, now;
	ssize_t ret;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		ret = xshm_eq_read(eq_fid, event, buf, len, flags);
		if (ret != -FI_EAGAIN || timeout == 0)
			return ret;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (timeout > 0 &&
		    (now.tv_sec - start.tv_sec) * 1000 +
		    (now.tv_nsec - start.tv_nsec) / 1000000 >= timeout)
			return -FI_EAGAIN;
		sched_yield();
	}
}

static const char *xshm_eq_strerror(struct fid_eq *eq_fid, int prov_errno,
				    const void *err_data, char *buf, size_t len)
{
	const char *str = fi_strerror(prov_errno);

	if (buf && len) {
		strncpy(buf, str, len - 1);
		buf[len - 1] = '\0';
	}
	return str;
}

static int xshm_eq_close(struct fid *fid)
{
	struct xshm_eq *eq = xshm_container_of(fid, struct xshm_eq, eq_fid.fid);

	while (eq->head) {
		struct xshm_eq_event *next = eq->head->next;

		free(eq->head);
		eq->head = next;
	}
	pthread_mutex_destroy(&eq->lock);
	free(eq);
	return 0;
}

static struct fi_ops xshm_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = xshm_eq_close,
	.bind = xshm_fid_no_bind,
	.control = xshm_fid_no_control,
	.ops_open = xshm_fid_no_ops_open,
};

static struct fi_ops_eq xshm_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = xshm_eq_read,
	.readerr = xshm_eq_readerr,
	.write = xshm_eq_write,
	.sread = xshm_eq_sread,
	.strerror = xshm_eq_strerror,
};

/* fi_eq_open with FI_PEER: xshm raises no events, so nothing reaches it. */
static int xshm_eq_import(void *context)
{
	struct fi_peer_eq_context *peer = context;

	return XSHM_CONTEXT_OK(peer, eq) ? 0 : -FI_EINVAL;
}

int xshm_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		 struct fid_eq **eq_out, void *context)
{
	struct xshm_eq *eq;

	if (!attr || (attr->wait_obj != FI_WAIT_NONE &&
		      attr->wait_obj != FI_WAIT_UNSPEC &&
		      attr->wait_obj != FI_WAIT_YIELD))
		return -FI_ENOSYS;
	if ((attr->flags & FI_PEER) && xshm_eq_import(context))
		return -FI_EINVAL;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	pthread_mutex_init(&eq->lock, NULL);
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = &xshm_eq_fi_ops;
	eq->eq_fid.ops = &xshm_eq_ops;
	*eq_out = &eq->eq_fid;
	return 0;
}
