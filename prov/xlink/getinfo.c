/*
 * fi_getinfo: one xlink info per info of the network provider (one per
 * interface and address format), each with the network's fabric and domain
 * names and addresses that pack the network's and the peer's together.
 */
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "xlink.h"

#define XLINK_TX_SIZE		1024
#define XLINK_RX_SIZE		1024
#define XLINK_OP_FLAGS		(FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE | \
				 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)
/* FI_MULTI_RECV: fi_recv and fi_recvv post multi-receive buffers. */
#define XLINK_RX_OP_FLAGS	(FI_COMPLETION | FI_MULTI_RECV)

static bool hints_ok(const struct fi_info *hints)
{
	if (!hints)
		return true;
	if (hints->caps & ~XLINK_CAPS)
		return false;
	if (hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC &&
	    hints->ep_attr->type != FI_EP_RDM)
		return false;
	if (hints->addr_format != FI_FORMAT_UNSPEC)
		return false;
	if (hints->tx_attr && (hints->tx_attr->op_flags & ~XLINK_OP_FLAGS))
		return false;
	if (hints->rx_attr && (hints->rx_attr->op_flags & ~XLINK_RX_OP_FLAGS))
		return false;
	return true;
}

static struct fi_info *child_hints(const char *prov_name, uint64_t caps,
				   const struct fi_info *hints)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = caps;
	h->mode = 0;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->mr_mode = 0;
	h->domain_attr->av_type = FI_AV_TABLE;
	h->fabric_attr->prov_name = strdup(prov_name);
	if (hints && hints->fabric_attr && hints->fabric_attr->name)
		h->fabric_attr->name = strdup(hints->fabric_attr->name);
	if (hints && hints->domain_attr && hints->domain_attr->name)
		h->domain_attr->name = strdup(hints->domain_attr->name);
	return h;
}

static int net_getinfo(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints,
		       struct fi_info **net)
{
	struct fi_info *h = child_hints(xlink_params.net,
					FI_MSG | FI_TAGGED, hints);
	int ret;

	if (!h)
		return -FI_ENOMEM;
	ret = fi_getinfo(version, node, service, flags, h, net);
	fi_freeinfo(h);
	return ret;
}

static int peer_getinfo(uint32_t version, const char *node, const char *service,
			uint64_t flags, struct fi_info **peer)
{
	struct fi_info *h;
	int ret;

	*peer = NULL;
	if (!xlink_params.peer)
		return -FI_ENODATA;
	h = child_hints(xlink_params.peer,
			FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE,
			NULL);
	if (!h)
		return -FI_ENOMEM;
	ret = fi_getinfo(version, node, service, flags, h, peer);
	fi_freeinfo(h);
	return ret;
}

/*
 * The peer's source address, and its destination address when node names
 * this node (a remote node has none: its endpoints are reached over the
 * network).
 */
static void peer_addrs(uint32_t version, const char *node, const char *service,
		       uint64_t flags, struct fi_info **src, struct fi_info **dest)
{
	*src = *dest = NULL;
	if (flags & FI_SOURCE) {
		if (peer_getinfo(version, node, service, flags, src))
			peer_getinfo(version, NULL, NULL, 0, src);
		return;
	}
	peer_getinfo(version, NULL, NULL, 0, src);
	if (node || service)
		peer_getinfo(version, node, service, flags, dest);
}

static enum fi_progress progress_of(const struct fi_info *hints, bool control)
{
	enum fi_progress asked = FI_PROGRESS_UNSPEC;

	if (hints && hints->domain_attr)
		asked = control ? hints->domain_attr->control_progress :
				  hints->domain_attr->data_progress;
	return asked == FI_PROGRESS_AUTO ? FI_PROGRESS_AUTO : FI_PROGRESS_MANUAL;
}

static void set_attrs(struct fi_info *info, const struct fi_info *hints,
		      const struct fi_info *net, const struct fi_info *peer)
{
	uint64_t caps = hints && hints->caps ? hints->caps : XLINK_CAPS;
	size_t inject = xlink_params.eager_max;

	/* Neither half of a pair named means both, as fi_getinfo(3) reads it. */
	if (!(caps & (FI_LOCAL_COMM | FI_REMOTE_COMM)))
		caps |= FI_LOCAL_COMM | FI_REMOTE_COMM;
	if (!(caps & (FI_SEND | FI_RECV)))
		caps |= FI_SEND | FI_RECV;
	if (peer && peer->tx_attr->inject_size < inject)
		inject = peer->tx_attr->inject_size;
	info->caps = caps;
	info->mode = 0;
	info->addr_format = FI_FORMAT_UNSPEC;
	info->ep_attr->type = FI_EP_RDM;
	info->ep_attr->protocol = FI_PROTO_UNSPEC;
	info->ep_attr->max_msg_size = net->ep_attr->max_msg_size;
	if (peer && peer->ep_attr->max_msg_size < info->ep_attr->max_msg_size)
		info->ep_attr->max_msg_size = peer->ep_attr->max_msg_size;
	info->ep_attr->mem_tag_format = 0xaaaaaaaaaaaaaaaaULL;	/* 64 free bits */
	info->ep_attr->tx_ctx_cnt = 1;
	info->ep_attr->rx_ctx_cnt = 1;
	info->tx_attr->caps = caps & (FI_MSG | FI_TAGGED | FI_SEND);
	info->tx_attr->op_flags = hints && hints->tx_attr ? hints->tx_attr->op_flags : 0;
	info->tx_attr->msg_order = FI_ORDER_SAS;
	info->tx_attr->inject_size = inject;
	info->tx_attr->size = XLINK_TX_SIZE;
	info->tx_attr->iov_limit = XLINK_IOV_LIMIT;
	info->rx_attr->caps = caps & (FI_MSG | FI_TAGGED | FI_RECV |
				      FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV);
	info->rx_attr->op_flags = hints && hints->rx_attr ? hints->rx_attr->op_flags : 0;
	info->rx_attr->msg_order = FI_ORDER_SAS;
	info->rx_attr->size = XLINK_RX_SIZE;
	info->rx_attr->iov_limit = XLINK_IOV_LIMIT;
	/* Any level asked for is met; only FI_THREAD_DOMAIN spares the lock. */
	info->domain_attr->threading = hints && hints->domain_attr &&
				       hints->domain_attr->threading ?
				       hints->domain_attr->threading : FI_THREAD_SAFE;
	/* Automatic progress only when asked for: it costs a thread (progress.h). */
	info->domain_attr->control_progress = progress_of(hints, true);
	info->domain_attr->data_progress = progress_of(hints, false);
	info->domain_attr->resource_mgmt = FI_RM_ENABLED;
	info->domain_attr->av_type = hints && hints->domain_attr ?
				     hints->domain_attr->av_type : FI_AV_UNSPEC;
	info->domain_attr->mr_mode = 0;
	info->domain_attr->cq_data_size = sizeof(uint64_t);
	info->domain_attr->cq_cnt = 256;
	info->domain_attr->ep_cnt = 256;
	info->domain_attr->tx_ctx_cnt = 256;
	info->domain_attr->rx_ctx_cnt = 256;
	info->domain_attr->max_ep_tx_ctx = 1;
	info->domain_attr->max_ep_rx_ctx = 1;
	info->domain_attr->cntr_cnt = 256;
	info->domain_attr->mr_iov_limit = 1;
	info->domain_attr->caps = caps & (FI_LOCAL_COMM | FI_REMOTE_COMM);
	info->domain_attr->name = strdup(net->domain_attr->name);
	info->fabric_attr->name = strdup(net->fabric_attr->name);
	info->fabric_attr->prov_version = XLINK_VERSION;
}

static int set_addr(void **out, size_t *out_len, const void *net, size_t net_len,
		    const struct fi_info *peer, bool dest, uint32_t flags)
{
	const void *peer_addr = NULL;
	size_t peer_len = 0;
	struct xlink_addr addr;

	if (peer) {
		peer_addr = dest ? peer->dest_addr : peer->src_addr;
		peer_len = dest ? peer->dest_addrlen : peer->src_addrlen;
	}
	if (!net_len && !peer_len)
		return 0;
	if (xlink_addr_pack(&addr, net, net_len, peer_addr, peer_len))
		return -FI_ENODATA;
	addr.flags |= flags;
	*out = xlink_addr_dup(&addr, out_len);
	return *out ? 0 : -FI_ENOMEM;
}

static int make_info(const struct fi_info *hints, const struct fi_info *net,
		     const struct fi_info *peer_src, const struct fi_info *peer_dest,
		     uint32_t src_flags, struct fi_info **out)
{
	struct fi_info *info = fi_allocinfo();
	int ret;

	if (!info)
		return -FI_ENOMEM;
	set_attrs(info, hints, net, peer_src);
	ret = set_addr(&info->src_addr, &info->src_addrlen, net->src_addr,
		       net->src_addrlen, peer_src, false, src_flags);
	if (!ret && net->dest_addr)
		ret = set_addr(&info->dest_addr, &info->dest_addrlen, net->dest_addr,
			       net->dest_addrlen, peer_dest, true, 0);
	if (ret || !info->domain_attr->name || !info->fabric_attr->name) {
		fi_freeinfo(info);
		return ret ? ret : -FI_ENOMEM;
	}
	*out = info;
	return 0;
}

int xlink_getinfo(uint32_t version, const char *node, const char *service,
		  uint64_t flags, const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *nets = NULL, *peer_src, *peer_dest;
	struct fi_info **tail = info;
	uint32_t src_flags = (flags & FI_SOURCE) && service ? XLINK_ADDR_PEER_FIXED : 0;
	int ret;

	*info = NULL;
	if (version < FI_VERSION(1, 5) || !hints_ok(hints))
		return -FI_ENODATA;
	ret = net_getinfo(version, node, service, flags, hints, &nets);
	if (ret)
		return ret;
	peer_addrs(version, node, service, flags, &peer_src, &peer_dest);
	for (struct fi_info *net = nets; net; net = net->next) {
		ret = make_info(hints, net, peer_src, peer_dest, src_flags, tail);
		if (ret)
			break;
		(*tail)->fabric_attr->api_version = version;
		tail = &(*tail)->next;
	}
	fi_freeinfo(nets);
	fi_freeinfo(peer_src);
	fi_freeinfo(peer_dest);
	if (ret) {
		fi_freeinfo(*info);
		*info = NULL;
	}
	return ret;
}

static int replace_addr(void **addr, size_t *addrlen, const void *bytes, size_t len)
{
	free(*addr);
	*addr = NULL;
	*addrlen = 0;
	if (!len)
		return 0;
	*addr = malloc(len);
	if (!*addr)
		return -FI_ENOMEM;
	memcpy(*addr, bytes, len);
	*addrlen = len;
	return 0;
}

int xlink_child_infos(uint32_t version, const struct fi_info *info,
		      struct fi_info **net, struct fi_info **peer)
{
	const struct xlink_addr *src = info->src_addr;
	int ret;

	*net = *peer = NULL;
	if (src && xlink_addr_check(src, info->src_addrlen))
		return -FI_EINVAL;
	ret = net_getinfo(version, NULL, NULL, 0, info, net);
	if (ret)
		return ret;
	fi_freeinfo((*net)->next);
	(*net)->next = NULL;
	if (src)
		ret = replace_addr(&(*net)->src_addr, &(*net)->src_addrlen,
				   xlink_addr_net(src), src->net_len);
	if (!ret && !peer_getinfo(version, NULL, NULL, 0, peer)) {
		fi_freeinfo((*peer)->next);
		(*peer)->next = NULL;
		if (src && src->peer_len && (src->flags & XLINK_ADDR_PEER_FIXED)) {
			char name[XLINK_PEER_NAME_MAX];
			size_t len = xlink_addr_peer(src, name);

			ret = replace_addr(&(*peer)->src_addr, &(*peer)->src_addrlen,
					   name, len);
		}
	}
	if (ret) {
		fi_freeinfo(*net);
		fi_freeinfo(*peer);
		*net = *peer = NULL;
	}
	return ret;
}
