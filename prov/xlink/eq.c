/*
 * xlink's event queue: one list of copied events, in the order written.  An
 * error at the head stops fi_eq_read (-FI_EAVAIL) until fi_eq_readerr takes
 * it.  The EQ belongs to the fabric, not to a domain, so it has its own lock.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eq.h"
#include "deadline.h"

struct xlink_eq_event {
	struct xlink_eq_event *next;
	uint32_t event;
	bool is_err;
	size_t len;
	max_align_t data[];	/* len bytes: the event, or a fi_eq_err_entry */
};

struct xlink_eq {
	struct fid_eq eq_fid;
	struct xlink_fabric *fabric;
	enum fi_wait_obj wait_obj;
	pthread_mutex_t lock;
	struct xlink_eq_event *head, *tail;
};

static struct fi_ops xlink_eq_fi_ops;

static struct xlink_eq *to_eq(struct fid_eq *eq_fid)
{
	return xlink_container_of(eq_fid, struct xlink_eq, eq_fid);
}

static int push_event(struct xlink_eq *eq, uint32_t event, bool is_err,
		      const void *buf, size_t len)
{
	struct xlink_eq_event *ev = malloc(sizeof(*ev) + len);

	if (!ev)
		return -FI_ENOMEM;
	*ev = (struct xlink_eq_event){ .event = event, .is_err = is_err, .len = len };
	if (len)
		memcpy(ev->data, buf, len);
	pthread_mutex_lock(&eq->lock);
	if (eq->tail)
		eq->tail->next = ev;
	else
		eq->head = ev;
	eq->tail = ev;
	pthread_mutex_unlock(&eq->lock);
	return 0;
}

/* Caller holds the lock. */
static void drop_head(struct xlink_eq *eq)
{
	struct xlink_eq_event *ev = eq->head;

	eq->head = ev->next;
	if (!eq->head)
		eq->tail = NULL;
	free(ev);
}

static ssize_t xlink_eq_read(struct fid_eq *eq_fid, uint32_t *event, void *buf,
			     size_t len, uint64_t flags)
{
	struct xlink_eq *eq = to_eq(eq_fid);
	struct xlink_eq_event *ev;
	ssize_t ret;

	if (!buf && len)
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	ev = eq->head;
	if (!ev) {
		ret = -FI_EAGAIN;
	} else if (ev->is_err) {
		ret = -FI_EAVAIL;
	} else if (len < ev->len) {
		ret = -FI_ETOOSMALL;
	} else {
		if (event)
			*event = ev->event;
		if (ev->len)
			memcpy(buf, ev->data, ev->len);
		ret = (ssize_t) ev->len;
		if (!(flags & FI_PEEK))
			drop_head(eq);
	}
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

/*
 * xlink keeps no error data: a caller's own buffer (err_data_size > 0 on
 * input) receives no bytes; otherwise err_data, which would be ours, is NULL.
 */
static void copy_err_out(struct fi_eq_err_entry *out, const struct fi_eq_err_entry *err)
{
	void *callers_data = out->err_data_size ? out->err_data : NULL;

	*out = *err;
	out->err_data = callers_data;
	out->err_data_size = 0;
}

static ssize_t xlink_eq_readerr(struct fid_eq *eq_fid, struct fi_eq_err_entry *buf,
				uint64_t flags)
{
	struct xlink_eq *eq = to_eq(eq_fid);
	ssize_t ret = -FI_EAGAIN;

	if (!buf)
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	if (eq->head && eq->head->is_err) {
		copy_err_out(buf, (const struct fi_eq_err_entry *) eq->head->data);
		drop_head(eq);
		ret = sizeof(*buf);
	}
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t xlink_eq_write(struct fid_eq *eq_fid, uint32_t event,
			      const void *buf, size_t len, uint64_t flags)
{
	int ret;

	if (!buf && len)
		return -FI_EINVAL;
	ret = push_event(to_eq(eq_fid), event, false, buf, len);
	return ret ? ret : (ssize_t) len;
}

int xlink_eq_write_error(struct fid_eq *eq_fid, const struct fi_eq_err_entry *err)
{
	struct fi_eq_err_entry copy = *err;

	copy.err_data = NULL;
	copy.err_data_size = 0;
	return push_event(to_eq(eq_fid), 0, true, &copy, sizeof(copy));
}

/* No wait object: a blocking read polls, yielding the core between tries. */
static ssize_t xlink_eq_sread(struct fid_eq *eq_fid, uint32_t *event, void *buf,
			      size_t len, int timeout, uint64_t flags)
{
	int64_t deadline = xlink_deadline(timeout);
	ssize_t ret;

	if (to_eq(eq_fid)->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	for (;;) {
		ret = xlink_eq_read(eq_fid, event, buf, len, flags);
		if (ret != -FI_EAGAIN || xlink_expired(deadline))
			return ret;
		sched_yield();
	}
}

static const char *xlink_eq_strerror(struct fid_eq *eq_fid, int prov_errno,
				     const void *err_data, char *buf, size_t len)
{
	const char *str = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);

	if (!buf || !len)
		return str;
	snprintf(buf, len, "%s", str);
	return buf;
}

static struct fi_ops_eq xlink_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = xlink_eq_read,
	.readerr = xlink_eq_readerr,
	.write = xlink_eq_write,
	.sread = xlink_eq_sread,
	.strerror = xlink_eq_strerror,
};

static int xlink_eq_close(struct fid *fid)
{
	struct xlink_eq *eq = xlink_container_of(fid, struct xlink_eq, eq_fid.fid);

	while (eq->head)
		drop_head(eq);
	pthread_mutex_destroy(&eq->lock);
	atomic_fetch_sub(&eq->fabric->ref, 1);
	free(eq);
	return 0;
}

static struct fi_ops xlink_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = xlink_eq_close,
	.bind = xlink_no_bind,
	.control = xlink_no_control,
	.ops_open = xlink_no_ops_open,
};

bool xlink_is_eq(struct fid *fid)
{
	return fid && fid->fclass == FI_CLASS_EQ && fid->ops == &xlink_eq_fi_ops;
}

static int check_attr(const struct fi_eq_attr *attr)
{
	/* FI_AFFINITY only places a wait object's interrupt: xlink has none. */
	if (attr->flags & ~(FI_WRITE | FI_AFFINITY))
		return -FI_EINVAL;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_YIELD:
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

int xlink_eq_open(struct fid_fabric *fabric_fid, struct fi_eq_attr *attr,
		  struct fid_eq **eq_out, void *context)
{
	struct xlink_eq *eq;
	int ret;

	if (!fabric_fid || fabric_fid->fid.fclass != FI_CLASS_FABRIC || !attr ||
	    !eq_out)
		return -FI_EINVAL;
	ret = check_attr(attr);
	if (ret)
		return ret;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	ret = pthread_mutex_init(&eq->lock, NULL);
	if (ret) {
		free(eq);
		return -ret;
	}
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = &xlink_eq_fi_ops;
	eq->eq_fid.ops = &xlink_eq_ops;
	eq->fabric = xlink_container_of(fabric_fid, struct xlink_fabric, fabric_fid);
	eq->wait_obj = attr->wait_obj;
	atomic_fetch_add(&eq->fabric->ref, 1);
	*eq_out = &eq->eq_fid;
	return 0;
}
