/*
 * Inserting and removing addresses.  Every insert call is turned into an
 * array of parsed addresses (or the reason one could not be parsed), then
 * inserted in order at the lowest unused indices.
 *
 * insertsvc and insertsym map node and service onto xshm addresses: the
 * node must name this node (NULL, "localhost", its host name, 127.x.x.x,
 * ::1), else that address fails with FI_EHOSTUNREACH; the service names a
 * well-known endpoint (xshm_ep_id_for_service).  An FI_ADDR_STR address
 * may be given as node with a NULL service.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "av/av.h"
#include "av/av_impl.h"
#include "base/addr.h"
#include "base/lock.h"
#include "base/params.h"
#include "data/recv.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "peer/peer.h"
#include "report/eq.h"
#include "xshm/fi_xshm.h"
#include "shm/layout.h"

#define INSERT_FLAGS	(FI_MORE | FI_SYNC_ERR | FI_AV_USER_ID | FI_AUTH_KEY)
#define SYM_MAX		(1u << 24)	/* addresses one insertsym may name */
#define SYM_NAME_MAX	256

struct parsed {
	struct xshm_addr addr;
	int err;			/* positive fabric errno; 0: parsed */
};

/*
 * foreach_unspec_addr callback: the source of a held message, once its
 * sender is in the endpoint's AV.
 */
static fi_addr_t xshm_rx_src_addr(struct fi_peer_rx_entry *entry)
{
	struct xshm_rx_msg *msg = entry->peer_context;

	if (!msg || !msg->ep)
		return FI_ADDR_NOTAVAIL;
	msg->src_addr = xshm_av_lookup_ep_id(msg->ep->av, msg->src_ep_id);
	return msg->src_addr;
}

/* New addresses may name senders of held messages: let the SRXs resolve them. */
static void resolve_unknown_sources(struct xshm_av *av)
{
	for (size_t i = 0; i < av->nr_eps; i++) {
		struct fid_peer_srx *srx = av->eps[i]->srx;

		if (srx)
			srx->owner_ops->foreach_unspec_addr(srx,
							    xshm_rx_src_addr);
	}
}

static int check_insert(struct xshm_av *av, const fi_addr_t *fi_addr,
			uint64_t flags, void *context)
{
	uint64_t inputs = flags & (FI_AV_USER_ID | FI_AUTH_KEY);

	if (flags & ~INSERT_FLAGS)
		return -FI_EINVAL;
	if ((flags & FI_SYNC_ERR) && (!context || (av->flags & FI_EVENT)))
		return -FI_EINVAL;
	if ((flags & FI_AV_USER_ID) && (av->flags & FI_AV_USER_ID))
		return -FI_EINVAL;
	/* Both would be read from fi_addr. */
	if ((inputs && !fi_addr) || inputs == (FI_AV_USER_ID | FI_AUTH_KEY))
		return -FI_EINVAL;
	if (xshm_av_read_only(av))
		return -FI_EACCES;
	if ((av->flags & FI_EVENT) && !av->eq)
		return -FI_ENOEQ;
	return 0;
}

/* fi_addr[i] in: a key handle with FI_AUTH_KEY, a user id with FI_AV_USER_ID. */
static int insert_one(struct xshm_av *av, const struct xshm_addr *addr,
		      fi_addr_t in, uint64_t flags, fi_addr_t *out)
{
	uint32_t key = XSHM_AV_NO_KEY;
	size_t index;
	int ret;

	if (addr->node_id != xshm_params.node_id)
		return -FI_EHOSTUNREACH;
	if ((flags & FI_AUTH_KEY) && !xshm_av_key_of(av, in, &key))
		return -FI_EINVAL;
	if (xshm_av_find(av, addr->ep_id) >= 0)
		return -FI_EALREADY;
	ret = xshm_av_claim_index(av, &index);
	if (ret)
		return ret;
	xshm_av_store(av, index, addr, key);
	xshm_peer_recheck(&av->domain->peers, addr->ep_id);
	if (flags & FI_AV_USER_ID)
		av->table[index].src_id = in;
	*out = index;
	return 0;
}

static void raise_events(struct xshm_av *av, const int *errors, size_t count,
			 int inserted, void *context)
{
	struct fi_eq_entry done = {
		.fid = &av->av_fid.fid, .context = context, .data = inserted,
	};

	for (size_t i = 0; i < count; i++) {
		struct fi_eq_err_entry err = {
			.fid = &av->av_fid.fid, .context = context, .data = i,
			.err = errors[i], .prov_errno = errors[i],
		};

		if (errors[i])
			xshm_eq_raise(av->eq, FI_AV_COMPLETE, &err, sizeof(err),
				      true);
	}
	xshm_eq_raise(av->eq, FI_AV_COMPLETE, &done, sizeof(done), false);
}

/* Returns how many were inserted; errors[i] gets each outcome. */
static int insert_all(struct xshm_av *av, const struct parsed *addrs,
		      size_t count, fi_addr_t *fi_addr, uint64_t flags,
		      int *errors)
{
	int inserted = 0;

	for (size_t i = 0; i < count; i++) {
		fi_addr_t out = FI_ADDR_NOTAVAIL;
		int err = addrs[i].err;

		if (!err)
			err = -insert_one(av, &addrs[i].addr,
					  fi_addr ? fi_addr[i] : 0, flags, &out);
		inserted += !err;
		if (fi_addr)
			fi_addr[i] = out;
		if (errors)
			errors[i] = err;
	}
	return inserted;
}

static int insert_parsed(struct xshm_av *av, const struct parsed *addrs,
			 size_t count, fi_addr_t *fi_addr, uint64_t flags,
			 void *context)
{
	bool events = av->flags & FI_EVENT;
	int *errors = (flags & FI_SYNC_ERR) ? context : NULL;
	int ret;

	if (events && count && !(errors = calloc(count, sizeof(*errors))))
		return -FI_ENOMEM;
	xshm_lock_acquire(&av->domain->lock);
	ret = xshm_av_write_begin(av);
	if (!ret) {
		ret = insert_all(av, addrs, count, fi_addr, flags, errors);
		xshm_av_write_end(av);
		if (ret > 0)
			resolve_unknown_sources(av);
	}
	xshm_lock_release(&av->domain->lock);
	if (events && ret >= 0) {
		raise_events(av, errors, count, ret, context);
		ret = 0;
	}
	if (events)
		free(errors);
	return ret;
}

/* Addresses are NUL-terminated strings, packed one after the other. */
static void parse_packed(const char *str, size_t count, struct parsed *out)
{
	for (size_t i = 0; i < count; i++) {
		size_t len = strnlen(str, XSHM_ADDR_LEN);

		out[i].err = -xshm_addr_parse(str, len + (len < XSHM_ADDR_LEN),
					      &out[i].addr);
		str += len + 1;
	}
}

int xshm_av_insert(struct fid_av *av_fid, const void *addr, size_t count,
		   fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct xshm_av *av = xshm_to_av(av_fid);
	struct parsed *addrs;
	int ret = check_insert(av, fi_addr, flags, context);

	if (ret)
		return ret;
	if (!addr && count)
		return -FI_EINVAL;
	addrs = calloc(count ? count : 1, sizeof(*addrs));
	if (!addrs)
		return -FI_ENOMEM;
	parse_packed(addr, count, addrs);
	ret = insert_parsed(av, addrs, count, fi_addr, flags, context);
	free(addrs);
	return ret;
}

static bool is_addr_str(const char *node)
{
	return node && !strncmp(node, XSHM_ADDR_PREFIX,
				sizeof(XSHM_ADDR_PREFIX) - 1);
}

static void parse_svc(const char *node, const char *service, struct parsed *out)
{
	out->err = 0;
	if (is_addr_str(node)) {
		out->err = -xshm_addr_parse(node, strlen(node) + 1, &out->addr);
	} else if (!xshm_node_is_local(node)) {
		out->err = FI_EHOSTUNREACH;
	} else {
		out->addr.node_id = xshm_params.node_id;
		out->addr.ep_id = xshm_ep_id_for_service(service);
	}
}

int xshm_av_insertsvc(struct fid_av *av_fid, const char *node,
		      const char *service, fi_addr_t *fi_addr, uint64_t flags,
		      void *context)
{
	struct xshm_av *av = xshm_to_av(av_fid);
	struct parsed addr;
	int ret = check_insert(av, fi_addr, flags, context);

	if (ret)
		return ret;
	if (is_addr_str(node) ? service != NULL : !service || !*service)
		return -FI_EINVAL;
	parse_svc(node, service, &addr);
	return insert_parsed(av, &addr, 1, fi_addr, flags, context);
}

/*
 * base with offset added to its numeric suffix, keeping the suffix's width
 * ("host09" + 1 = "host10", "10.1.1.1" + 1 = "10.1.1.2").  A base without
 * a numeric suffix only takes offset 0.
 */
static int name_with_offset(const char *base, size_t offset, char *out,
			    size_t size)
{
	size_t len = strlen(base), digits = 0;
	unsigned long long number;
	int n;

	while (digits < len && base[len - digits - 1] >= '0' &&
	       base[len - digits - 1] <= '9')
		digits++;
	if (!digits || digits > 18) {
		if (offset)
			return -FI_EINVAL;
		n = snprintf(out, size, "%s", base);
		return n < 0 || (size_t) n >= size ? -FI_EINVAL : 0;
	}
	number = strtoull(base + len - digits, NULL, 10) + offset;
	n = snprintf(out, size, "%.*s%0*llu", (int) (len - digits), base,
		     (int) digits, number);
	return n < 0 || (size_t) n >= size ? -FI_EINVAL : 0;
}

static int parse_sym(const char *node, size_t nodecnt, const char *service,
		     size_t svccnt, struct parsed *out)
{
	char node_i[SYM_NAME_MAX], service_j[SYM_NAME_MAX];

	for (size_t i = 0; i < nodecnt; i++) {
		if (name_with_offset(node, i, node_i, sizeof(node_i)))
			return -FI_EINVAL;
		for (size_t j = 0; j < svccnt; j++) {
			if (name_with_offset(service, j, service_j,
					     sizeof(service_j)))
				return -FI_EINVAL;
			parse_svc(node_i, service_j, &out[i * svccnt + j]);
		}
	}
	return 0;
}

int xshm_av_insertsym(struct fid_av *av_fid, const char *node, size_t nodecnt,
		      const char *service, size_t svccnt, fi_addr_t *fi_addr,
		      uint64_t flags, void *context)
{
	struct xshm_av *av = xshm_to_av(av_fid);
	struct parsed *addrs;
	size_t count;
	int ret = check_insert(av, fi_addr, flags, context);

	if (ret)
		return ret;
	if (!node || !service || is_addr_str(node) ||
	    (svccnt && nodecnt > SYM_MAX / svccnt))
		return -FI_EINVAL;
	count = nodecnt * svccnt;
	addrs = calloc(count ? count : 1, sizeof(*addrs));
	if (!addrs)
		return -FI_ENOMEM;
	ret = parse_sym(node, nodecnt, service, svccnt, addrs);
	if (!ret)
		ret = insert_parsed(av, addrs, count, fi_addr, flags, context);
	free(addrs);
	return ret;
}

/* All or none: an index not in use fails the call before anything goes. */
static int remove_addrs(struct xshm_av *av, const fi_addr_t *fi_addr,
			size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (!xshm_av_entry_of(av, fi_addr[i]))
			return -FI_EINVAL;
	for (size_t i = 0; i < count; i++)
		xshm_av_erase(av, fi_addr[i]);
	return 0;
}

int xshm_av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr, size_t count,
		   uint64_t flags)
{
	struct xshm_av *av = xshm_to_av(av_fid);
	int ret;

	if ((!fi_addr && count) || (flags & ~FI_AUTH_KEY))
		return -FI_EINVAL;
	if (xshm_av_read_only(av))
		return -FI_EACCES;
	xshm_lock_acquire(&av->domain->lock);
	ret = xshm_av_write_begin(av);
	if (!ret) {
		ret = (flags & FI_AUTH_KEY) ?
		      xshm_av_remove_keys(av, fi_addr, count) :
		      remove_addrs(av, fi_addr, count);
		xshm_av_write_end(av);
	}
	xshm_lock_release(&av->domain->lock);
	return ret;
}
