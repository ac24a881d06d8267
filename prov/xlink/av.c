/* The address vector: an index per endpoint, each naming the path to it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "av.h"
#include "liveness.h"

static int grow_entries(struct xlink_av *av)
{
	size_t cap = av->cap ? av->cap * 2 : 64;
	struct xlink_av_entry *entries = realloc(av->entries, cap * sizeof(*entries));

	if (!entries)
		return -FI_ENOMEM;
	memset(entries + av->cap, 0, (cap - av->cap) * sizeof(*entries));
	av->entries = entries;
	av->cap = cap;
	return 0;
}

/* The lowest unused index, as FI_AV_TABLE requires. */
static size_t free_index(struct xlink_av *av)
{
	size_t i = av->count;

	while (i > 0 && !av->entries[i - 1].used)
		i--;
	for (size_t j = 0; j < i; j++)
		if (!av->entries[j].used)
			return j;
	return i;
}

static bool is_local(const struct xlink_av *av, const struct xlink_addr *addr)
{
	return av->peer_av && addr->peer_len && addr->node_id == av->node_id;
}

static int insert_peer(struct xlink_av *av, struct xlink_av_entry *entry,
		       fi_addr_t index)
{
	fi_addr_t peer_addr = index;	/* in: the user id; out: the peer's */
	char name[XLINK_PEER_NAME_MAX];
	int ret;

	xlink_addr_peer(&entry->addr, name);
	ret = fi_av_insert(av->peer_av, name, 1, &peer_addr, FI_AV_USER_ID, NULL);
	if (ret != 1)
		return ret < 0 ? ret : -FI_EINVAL;
	entry->peer_addr = peer_addr;
	entry->local = true;
	return 0;
}

static int insert_net(struct xlink_av *av, struct xlink_av_entry *entry,
		      fi_addr_t index)
{
	fi_addr_t net_addr = FI_ADDR_NOTAVAIL;
	int ret;

	ret = fi_av_insert(av->net_av, xlink_addr_net(&entry->addr), 1, &net_addr, 0, NULL);
	if (ret != 1)
		return ret < 0 ? ret : -FI_EINVAL;
	entry->net_addr = net_addr;
	entry->net_key = xlink_netsrc_key(xlink_addr_net(&entry->addr), entry->addr.net_len);
	return xlink_netsrc_add(&av->net_sources, entry->net_key, index);
}

/* After index gave up key, another entry of the same address takes it. */
static void pass_net_key(struct xlink_av *av, uint64_t key, fi_addr_t index)
{
	xlink_netsrc_remove(&av->net_sources, key, index);
	for (size_t i = 0; i < av->count; i++)
		if (i != index && av->entries[i].used && av->entries[i].net_key == key) {
			xlink_netsrc_add(&av->net_sources, key, i);
			return;
		}
}

static void remove_children(struct xlink_av *av, struct xlink_av_entry *entry)
{
	if (entry->peer_addr != FI_ADDR_NOTAVAIL)
		fi_av_remove(av->peer_av, &entry->peer_addr, 1, 0);
	if (entry->net_addr != FI_ADDR_NOTAVAIL) {
		pass_net_key(av, entry->net_key, (fi_addr_t) (entry - av->entries));
		fi_av_remove(av->net_av, &entry->net_addr, 1, 0);
	}
}

static int insert_one(struct xlink_av *av, const struct xlink_addr *addr,
		      fi_addr_t *out)
{
	struct xlink_av_entry *entry;
	size_t index = free_index(av);
	int ret = 0;

	if (index >= av->cap && grow_entries(av))
		return -FI_ENOMEM;
	entry = &av->entries[index];
	*entry = (struct xlink_av_entry){
		.net_addr = FI_ADDR_NOTAVAIL,
		.peer_addr = FI_ADDR_NOTAVAIL,
		.addr = *addr,
	};
	if (addr->net_len)
		ret = insert_net(av, entry, index);
	if (!ret && is_local(av, addr) && insert_peer(av, entry, index) &&
	    !addr->net_len)
		ret = -FI_EADDRNOTAVAIL;
	if (ret) {
		remove_children(av, entry);
		return ret;
	}
	entry->used = true;
	if (index >= av->count)
		av->count = index + 1;
	av->inserts++;
	av->remote_count += !entry->local;
	*out = index;
	return 0;
}

static int av_insert(struct fid_av *av_fid, const void *addr, size_t count,
		     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct xlink_av *av = xlink_container_of(av_fid, struct xlink_av, av_fid);
	const struct xlink_addr *addrs = addr;
	int *errors = (flags & FI_SYNC_ERR) ? context : NULL;
	int inserted = 0;

	if (flags & ~(FI_MORE | FI_SYNC_ERR))
		return -FI_EINVAL;
	if (count && !addr)
		return -FI_EINVAL;
	xlink_domain_lock(av->domain);
	for (size_t i = 0; i < count; i++) {
		fi_addr_t index = FI_ADDR_NOTAVAIL;
		int ret = xlink_addr_check(&addrs[i], sizeof(addrs[i]));

		if (!ret)
			ret = insert_one(av, &addrs[i], &index);
		if (fi_addr)
			fi_addr[i] = index;
		if (errors)
			errors[i] = -ret;
		inserted += !ret;
	}
	xlink_domain_unlock(av->domain);
	return inserted;
}

static int av_insertsvc(struct fid_av *av, const char *node, const char *service,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt,
			const char *service, size_t svccnt, fi_addr_t *fi_addr,
			uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static int av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr, size_t count,
		     uint64_t flags)
{
	struct xlink_av *av = xlink_container_of(av_fid, struct xlink_av, av_fid);
	int ret = 0;

	if (flags || (count && !fi_addr))
		return -FI_EINVAL;
	xlink_domain_lock(av->domain);
	for (size_t i = 0; i < count; i++) {
		struct xlink_av_entry *entry = xlink_av_entry(av, fi_addr[i]);

		if (!entry) {
			ret = -FI_EINVAL;
			continue;
		}
		remove_children(av, entry);
		av->remote_count -= !entry->local;
		entry->used = false;
	}
	xlink_domain_unlock(av->domain);
	return ret;
}

static int av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr, void *addr,
		     size_t *addrlen)
{
	struct xlink_av *av = xlink_container_of(av_fid, struct xlink_av, av_fid);
	struct xlink_av_entry *entry;
	int ret = 0;

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	xlink_domain_lock(av->domain);
	entry = xlink_av_entry(av, fi_addr);
	if (!entry) {
		ret = -FI_EINVAL;
	} else {
		size_t len = sizeof(entry->addr);

		memcpy(addr, &entry->addr, *addrlen < len ? *addrlen : len);
		*addrlen = len;
	}
	xlink_domain_unlock(av->domain);
	return ret;
}

static const char *av_straddr(struct fid_av *av, const void *addr, char *buf,
			      size_t *len)
{
	const struct xlink_addr *a = addr;
	char str[64 + 2 * XLINK_ADDR_BYTES + XLINK_PEER_NAME_MAX];
	char peer[XLINK_PEER_NAME_MAX];
	size_t peer_len;
	int n;

	if (!len || !buf || xlink_addr_check(addr, sizeof(*a)))
		return NULL;
	peer_len = xlink_addr_peer(a, peer);
	n = snprintf(str, sizeof(str), "fi_xlink://%016" PRIx64 "/", a->node_id);
	for (size_t i = 0; i < a->net_len; i++)
		n += snprintf(str + n, sizeof(str) - n, "%02x", a->bytes[i]);
	n += snprintf(str + n, sizeof(str) - n, "/%.*s", (int) peer_len, peer);
	snprintf(buf, *len, "%s", str);
	*len = (size_t) n + 1;
	return buf;
}

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
};

static int av_close(struct fid *fid)
{
	struct xlink_av *av = xlink_container_of(fid, struct xlink_av, av_fid.fid);

	if (atomic_load(&av->ref))
		return -FI_EBUSY;
	if (av->peer_av)
		fi_close(&av->peer_av->fid);
	fi_close(&av->net_av->fid);
	atomic_fetch_sub(&av->domain->ref, 1);
	free(av->entries);
	xlink_netsrc_fini(&av->net_sources);
	free(av);
	return 0;
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = xlink_no_bind,
	.control = xlink_no_control,
	.ops_open = xlink_no_ops_open,
};

struct xlink_av *xlink_av_of(struct fid *fid, struct xlink_domain *domain)
{
	struct xlink_av *av;

	if (!fid || fid->fclass != FI_CLASS_AV || fid->ops != &av_fi_ops)
		return NULL;
	av = xlink_container_of(fid, struct xlink_av, av_fid.fid);
	return av->domain == domain ? av : NULL;
}

static int open_children(struct xlink_av *av, const struct fi_av_attr *attr)
{
	struct xlink_domain *domain = av->domain;
	struct fi_av_attr child = { .type = FI_AV_TABLE, .count = attr->count };
	int ret;

	ret = fi_av_open(domain->net, &child, &av->net_av, av);
	if (ret || !domain->peer)
		return ret;
	ret = fi_av_open(domain->peer, &child, &av->peer_av, av);
	if (ret) {
		fi_close(&av->net_av->fid);
		return ret;
	}
	av->node_id = xlink_node_id(domain->peer_info->src_addr,
				    domain->peer_info->src_addrlen);
	av->peer_liveness = xlink_liveness_ops(av->peer_av);
	return 0;
}

int xlink_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
		  struct fid_av **av_fid, void *context)
{
	struct xlink_domain *domain = xlink_domain_of(domain_fid);
	struct xlink_av *av;
	int ret;

	if (!domain || !attr || !av_fid)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP &&
	    attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	if (attr->rx_ctx_bits || (attr->flags & ~(FI_SYMMETRIC | FI_EVENT)))
		return -FI_EINVAL;
	if (attr->name || (attr->flags & FI_EVENT))
		return -FI_ENOSYS;
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->domain = domain;
	av->type = attr->type == FI_AV_MAP ? FI_AV_MAP : FI_AV_TABLE;
	ret = open_children(av, attr);
	if (ret) {
		free(av);
		return ret;
	}
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &av_fi_ops;
	av->av_fid.ops = &av_ops;
	atomic_fetch_add(&domain->ref, 1);
	*av_fid = &av->av_fid;
	return 0;
}
