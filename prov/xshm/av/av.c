/*
 * Address vector object: fi_av_open, fi_close, fi_av_bind, fi_av_lookup,
 * fi_av_straddr and the ops tables.  FI_AV_MAP and FI_AV_UNSPEC behave as
 * FI_AV_TABLE (indices from 0, the lowest unused first), as fi_av(3)
 * recommends.  The calls libfabric 1.17 has no slot for are offered
 * through fi_open_ops(FI_XSHM_AV_OPS) (include/xshm/fi_xshm.h) and, with
 * newer headers, in the native slots too.
 */
#include <stdlib.h>
#include <string.h>

#include "av/av.h"
#include "av/av_impl.h"
#include "base/addr.h"
#include "base/fid.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/peer_context.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "peer/peer.h"
#include "xshm/fi_peer.h"
#include "xshm/fi_xshm.h"
#include "shm/liveness.h"

#define OPEN_FLAGS	(FI_EVENT | FI_READ | FI_SYMMETRIC | FI_AV_USER_ID | \
			 FI_PEER)

/* The endpoint is also one whose spares the domain's peers give back. */
int xshm_av_add_ep(struct xshm_av *av, struct xshm_ep *ep)
{
	struct xshm_ep **eps = realloc(av->eps, (av->nr_eps + 1) * sizeof(*eps));

	if (!eps)
		return -FI_ENOMEM;
	av->eps = eps;
	if (xshm_peers_add_ep(&av->domain->peers, ep))
		return -FI_ENOMEM;
	eps[av->nr_eps++] = ep;
	atomic_fetch_add(&av->ref, 1);
	return 0;
}

void xshm_av_remove_ep(struct xshm_av *av, struct xshm_ep *ep)
{
	for (size_t i = 0; i < av->nr_eps; i++) {
		if (av->eps[i] == ep) {
			av->eps[i] = av->eps[--av->nr_eps];
			xshm_peers_remove_ep(&av->domain->peers, ep);
			atomic_fetch_sub(&av->ref, 1);
			return;
		}
	}
}

static int xshm_av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr, void *addr,
			  size_t *addrlen)
{
	struct xshm_av *av = xshm_to_av(av_fid);
	struct xshm_av_entry *entry;
	char str[XSHM_ADDR_LEN];

	if (!addrlen || (!addr && *addrlen))
		return -FI_EINVAL;
	xshm_lock_acquire(&av->domain->lock);
	entry = xshm_av_entry_of(av, fi_addr);
	if (entry)
		xshm_addr_format(&entry->addr, str);
	xshm_lock_release(&av->domain->lock);
	if (!entry)
		return -FI_EINVAL;
	memcpy(addr, str, *addrlen < XSHM_ADDR_LEN ? *addrlen : XSHM_ADDR_LEN);
	*addrlen = XSHM_ADDR_LEN;
	return 0;
}

/* Truncated output stays a NUL-terminated string. */
static const char *xshm_av_straddr(struct fid_av *av_fid, const void *addr,
				   char *buf, size_t *len)
{
	size_t n;

	if (!addr || !buf || !len)
		return NULL;
	n = strnlen(addr, XSHM_ADDR_LEN - 1) + 1;
	if (*len) {
		size_t copy = n < *len ? n : *len;

		memcpy(buf, addr, copy - 1);
		buf[copy - 1] = '\0';
	}
	*len = n;
	return buf;
}

static int xshm_av_close(struct fid *fid)
{
	struct xshm_av *av = xshm_container_of(fid, struct xshm_av, av_fid.fid);

	if (atomic_load(&av->ref))
		return -FI_EBUSY;
	/* Its peers are the domain's: other AVs may be in use meanwhile. */
	xshm_lock_acquire(&av->domain->lock);
	xshm_av_table_fini(av);
	xshm_av_keys_fini(av);
	xshm_av_shared_close(av);
	xshm_peers_close_av(&av->domain->peers, av);
	xshm_lock_release(&av->domain->lock);
	atomic_fetch_sub(&av->domain->ref, 1);
	free(av->eps);
	free(av);
	return 0;
}

/* fi_av_bind (deprecated): the EQ of an AV opened with FI_EVENT. */
static int xshm_av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct xshm_av *av = xshm_container_of(fid, struct xshm_av, av_fid.fid);

	if (!bfid || bfid->fclass != FI_CLASS_EQ || flags)
		return -FI_EINVAL;
	if (av->eq)
		return -FI_EBUSY;
	av->eq = xshm_container_of(bfid, struct fid_eq, fid);
	return 0;
}

/* The process behind an entry, found as a directed receive's source is. */
static int xshm_av_peer_alive(struct fid_av *av_fid, fi_addr_t fi_addr)
{
	struct xshm_av *av = xshm_to_av(av_fid);
	struct xshm_av_entry *entry;
	struct xshm_owner owner;
	int ret;

	xshm_lock_acquire(&av->domain->lock);
	entry = xshm_av_entry_of(av, fi_addr);
	if (!entry) {
		ret = -FI_EINVAL;
	} else {
		owner = xshm_peer_source_process(&av->domain->peers,
						 entry->addr.ep_id);
		ret = !owner.pid || xshm_owner_alive(owner);
	}
	/* As its own sweep would: the dead process's region is retired. */
	if (ret == 0) {
		xshm_peer_recheck(&av->domain->peers, entry->addr.ep_id);
		if (entry->peer && entry->peer->mapped)
			xshm_region_retire(&entry->peer->region,
					   entry->peer->owner);
	}
	xshm_lock_release(&av->domain->lock);
	return ret;
}

static struct fi_xshm_ops_av xshm_av_ext_ops = {
	.size = sizeof(struct fi_xshm_ops_av),
	.insert_auth_key = xshm_av_insert_auth_key,
	.lookup_auth_key = xshm_av_lookup_auth_key,
	.set_user_id = xshm_av_set_user_id,
	.peer_alive = xshm_av_peer_alive,
};

static int xshm_av_ops_open(struct fid *fid, const char *name, uint64_t flags,
			    void **ops, void *context)
{
	if (!name || !ops || strcmp(name, FI_XSHM_AV_OPS))
		return -FI_ENOSYS;
	if (flags)
		return -FI_EINVAL;
	*ops = &xshm_av_ext_ops;
	return 0;
}

static struct fi_ops xshm_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = xshm_av_close,
	.bind = xshm_av_bind,
	.control = xshm_fid_no_control,
	.ops_open = xshm_av_ops_open,
};

/* The AV fid names, if it is one of xshm's of that domain; else NULL. */
struct xshm_av *xshm_av_of(struct fid *fid, struct xshm_domain *domain)
{
	struct xshm_av *av;

	if (fid->fclass != FI_CLASS_AV || fid->ops != &xshm_av_fi_ops)
		return NULL;
	av = xshm_container_of(fid, struct xshm_av, av_fid.fid);
	return av->domain == domain ? av : NULL;
}

#if FI_XSHM_NATIVE_AV_EXT
static struct fi_ops_av xshm_av_ops_native = {
	.size = sizeof(struct fi_ops_av),
	.insert = xshm_av_insert,
	.insertsvc = xshm_av_insertsvc,
	.insertsym = xshm_av_insertsym,
	.remove = xshm_av_remove,
	.lookup = xshm_av_lookup,
	.straddr = xshm_av_straddr,
	.insert_auth_key = xshm_av_insert_auth_key,
	.lookup_auth_key = xshm_av_lookup_auth_key,
	.set_user_id = xshm_av_set_user_id,
};
static struct fi_ops_av *const xshm_av_ops = &xshm_av_ops_native;
#else
/*
 * struct fi_ops_av as libfabric 1.20 and later lay it out: three calls
 * after av_set.  Built with older headers, xshm still fills them, so that
 * applications built on a newer libfabric reach them natively (their
 * fi_av_insert_auth_key checks ops->size), and those built on 1.17
 * through fi_open_ops (fi_xshm.h).
 */
static struct {
	struct fi_ops_av base;
	int (*insert_auth_key)(struct fid_av *av, const void *auth_key,
			       size_t auth_key_size, fi_addr_t *fi_addr,
			       uint64_t flags);
	int (*lookup_auth_key)(struct fid_av *av, fi_addr_t fi_addr,
			       void *auth_key, size_t *auth_key_size);
	int (*set_user_id)(struct fid_av *av, fi_addr_t fi_addr,
			   fi_addr_t user_id, uint64_t flags);
} xshm_av_ops_1_20 = {
	.base = {
		.size = sizeof(xshm_av_ops_1_20),
		.insert = xshm_av_insert,
		.insertsvc = xshm_av_insertsvc,
		.insertsym = xshm_av_insertsym,
		.remove = xshm_av_remove,
		.lookup = xshm_av_lookup,
		.straddr = xshm_av_straddr,
	},
	.insert_auth_key = xshm_av_insert_auth_key,
	.lookup_auth_key = xshm_av_lookup_auth_key,
	.set_user_id = xshm_av_set_user_id,
};
static_assert(sizeof(struct fi_ops_av) ==
	      offsetof(struct fi_ops_av, av_set) + sizeof(void *),
	      "1.17's fi_ops_av ends with av_set, as 1.20's before its additions");
static struct fi_ops_av *const xshm_av_ops = &xshm_av_ops_1_20.base;
#endif

/* xshm has no scalable endpoints: rx_ctx_bits must be 0 (see fi_xshm(7)). */
static int check_attr(const struct fi_av_attr *attr)
{
	if (!attr || attr->rx_ctx_bits || (attr->flags & ~OPEN_FLAGS))
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_TABLE &&
	    attr->type != FI_AV_MAP)
		return -FI_EINVAL;
	if ((attr->flags & FI_READ) && !attr->name)
		return -FI_EINVAL;
	return 0;
}

static int init_table(struct xshm_av *av, struct fi_av_attr *attr,
		      size_t count)
{
	int ret;

	if (attr->name)
		return xshm_av_shared_open(av, attr);
	ret = xshm_av_table_init(av, count);
	return ret ? ret : xshm_av_keys_init(av, 0);
}

/*
 * fi_av_open with FI_PEER: xshm addresses are its own, so it keeps its own
 * table; the owner's AV only sizes it (query).
 */
static int xshm_av_import(struct fi_av_attr *attr, void *context,
			  size_t *count)
{
	struct fi_peer_av_context *peer = context;
	struct fi_av_attr owner_attr = { 0 };

	if (!XSHM_CONTEXT_OK(peer, av))
		return -FI_EINVAL;
	if (peer->av->owner_ops && peer->av->owner_ops->query &&
	    !peer->av->owner_ops->query(peer->av, &owner_attr))
		*count = owner_attr.count;
	else
		*count = attr->count;
	return 0;
}

int xshm_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
		 struct fid_av **av_out, void *context)
{
	struct xshm_domain *domain =
		xshm_container_of(domain_fid, struct xshm_domain, domain_fid);
	struct xshm_av *av;
	size_t count;
	int ret = check_attr(attr);

	if (ret || !av_out)
		return ret ? ret : -FI_EINVAL;
	count = attr->count;
	if ((attr->flags & FI_PEER) && xshm_av_import(attr, context, &count))
		return -FI_EINVAL;
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->type = attr->type == FI_AV_MAP ? FI_AV_MAP : FI_AV_TABLE;
	av->flags = attr->flags;
	av->domain = domain;
	atomic_fetch_add(&domain->ref, 1);
	xshm_lock_acquire(&domain->lock);
	xshm_peers_open_av(&domain->peers);
	xshm_lock_release(&domain->lock);
	ret = init_table(av, attr, count);
	if (ret) {
		xshm_av_close(&av->av_fid.fid);
		return ret;
	}
	attr->type = av->type;
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &xshm_av_fi_ops;
	av->av_fid.ops = xshm_av_ops;
	*av_out = &av->av_fid;
	return 0;
}
