/*
 * fi_getinfo: match the application's hints against what xshm offers and
 * build the one fi_info that satisfies them, or -FI_ENODATA.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/addr.h"
#include "base/params.h"
#include "base/provider.h"
#include "xshm/fi_xshm.h"

#define XSHM_TX_OP_FLAGS	(FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE | \
				 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | \
				 FI_MATCH_COMPLETE | FI_MORE)
#define XSHM_RX_OP_FLAGS	(FI_COMPLETION | FI_MORE | FI_MULTI_RECV)
#define XSHM_PRIMARY_CAPS	(FI_MSG | FI_TAGGED)
#define XSHM_SECONDARY_CAPS	(FI_SOURCE | FI_DIRECTED_RECV | FI_MULTI_RECV | \
				 FI_RMA_EVENT)
#define XSHM_RMA_ROLES		(FI_READ | FI_WRITE | FI_REMOTE_READ | \
				 FI_REMOTE_WRITE)

static bool name_matches(const char *hint, const char *name)
{
	return !hint || !strcasecmp(hint, name);
}

static bool fabric_ok(const struct fi_fabric_attr *attr)
{
	return !attr || (name_matches(attr->name, XSHM_NAME) &&
			 name_matches(attr->prov_name, XSHM_NAME));
}

static bool domain_ok(const struct fi_domain_attr *attr)
{
	const struct fi_domain_attr *ours = xshm_info_template.domain_attr;

	if (!attr)
		return true;
	return name_matches(attr->name, XSHM_NAME) &&
	       (attr->data_progress == FI_PROGRESS_UNSPEC ||
		attr->data_progress == FI_PROGRESS_MANUAL) &&
	       (attr->av_type == FI_AV_UNSPEC || attr->av_type == FI_AV_TABLE ||
		attr->av_type == FI_AV_MAP) &&
	       !(attr->caps & ~ours->caps) &&
	       attr->cq_data_size <= ours->cq_data_size &&
	       attr->mr_key_size <= ours->mr_key_size &&
	       attr->max_ep_tx_ctx <= ours->max_ep_tx_ctx &&
	       attr->max_ep_rx_ctx <= ours->max_ep_rx_ctx &&
	       attr->max_ep_stx_ctx <= ours->max_ep_stx_ctx &&
	       attr->max_ep_srx_ctx <= ours->max_ep_srx_ctx &&
	       attr->auth_key_size != FI_AV_AUTH_KEY;
}

static bool ep_ok(const struct fi_ep_attr *attr)
{
	const struct fi_ep_attr *ours = xshm_info_template.ep_attr;

	if (!attr)
		return true;
	return (attr->type == FI_EP_UNSPEC || attr->type == FI_EP_RDM) &&
	       (attr->protocol == FI_PROTO_UNSPEC ||
		attr->protocol == ours->protocol) &&
	       attr->max_msg_size <= ours->max_msg_size &&
	       attr->msg_prefix_size == 0 &&
	       attr->tx_ctx_cnt <= 1 && attr->rx_ctx_cnt <= 1 &&
	       attr->max_order_raw_size == 0 && attr->max_order_war_size == 0 &&
	       attr->max_order_waw_size == 0 && attr->auth_key_size == 0;
}

static bool tx_ok(const struct fi_tx_attr *attr)
{
	const struct fi_tx_attr *ours = xshm_info_template.tx_attr;

	if (!attr)
		return true;
	return !(attr->caps & ~XSHM_CAPS) &&
	       !(attr->op_flags & ~XSHM_TX_OP_FLAGS) &&
	       !(attr->msg_order & ~ours->msg_order) &&
	       !(attr->comp_order & ~ours->comp_order) &&
	       attr->inject_size <= ours->inject_size &&
	       attr->size <= ours->size &&
	       attr->iov_limit <= ours->iov_limit &&
	       attr->rma_iov_limit <= 1;
}

static bool rx_ok(const struct fi_rx_attr *attr)
{
	const struct fi_rx_attr *ours = xshm_info_template.rx_attr;

	if (!attr)
		return true;
	return !(attr->caps & ~XSHM_CAPS) &&
	       !(attr->op_flags & ~XSHM_RX_OP_FLAGS) &&
	       !(attr->msg_order & ~ours->msg_order) &&
	       !(attr->comp_order & ~ours->comp_order) &&
	       attr->total_buffered_recv == 0 &&
	       attr->size <= ours->size &&
	       attr->iov_limit <= ours->iov_limit;
}

static bool hints_ok(const struct fi_info *hints)
{
	return !(hints->caps & ~XSHM_CAPS) &&
	       (hints->addr_format == FI_FORMAT_UNSPEC ||
		hints->addr_format == FI_ADDR_STR) &&
	       fabric_ok(hints->fabric_attr) && domain_ok(hints->domain_attr) &&
	       ep_ok(hints->ep_attr) && tx_ok(hints->tx_attr) &&
	       rx_ok(hints->rx_attr);
}

/*
 * Primary capabilities as requested (messages when none are: RMA and
 * atomics only when asked for, so that applications that never ask see
 * what they saw before them), FI_SEND/FI_RECV both unless one is asked
 * for, the roles of RMA and atomics all unless some are, secondary capabilities that cost something and named
 * AVs (FI_SHARED_AV) only when requested.
 */
static uint64_t choose_caps(uint64_t requested)
{
	uint64_t caps = requested & (XSHM_PRIMARY_CAPS | FI_RMA | FI_ATOMIC);

	if (!caps)
		caps = XSHM_PRIMARY_CAPS;
	caps |= requested & (FI_SEND | FI_RECV);
	if (!(caps & (FI_SEND | FI_RECV)))
		caps |= FI_SEND | FI_RECV;
	if (caps & (FI_RMA | FI_ATOMIC))
		caps |= requested & XSHM_RMA_ROLES ?
			requested & XSHM_RMA_ROLES : XSHM_RMA_ROLES;
	return caps | (requested & (XSHM_SECONDARY_CAPS | FI_SHARED_AV |
				    XSHM_PEER_CAPS)) |
	       FI_LOCAL_COMM;
}

static void *address_string(const struct xshm_addr *addr, size_t *len)
{
	char *buf = malloc(XSHM_ADDR_LEN);

	if (buf) {
		xshm_addr_format(addr, buf);
		*len = XSHM_ADDR_LEN;
	}
	return buf;
}

/* node may be a host name of this machine or a whole xshm address. */
static int resolve_node(const char *node, const char *service,
			struct xshm_addr *addr, bool *have_addr)
{
	addr->node_id = xshm_params.node_id;
	*have_addr = false;
	if (node && !strncmp(node, XSHM_ADDR_PREFIX, strlen(XSHM_ADDR_PREFIX))) {
		if (xshm_addr_parse(node, strlen(node) + 1, addr) ||
		    addr->node_id != xshm_params.node_id)
			return -FI_ENODATA;
		*have_addr = true;
		return 0;
	}
	if (!xshm_node_is_local(node))
		return -FI_ENODATA;
	if (service) {
		addr->ep_id = xshm_ep_id_for_service(service);
		*have_addr = true;
	}
	return 0;
}

static int copy_hint_addr(const void *hint, size_t len, void **out,
			  size_t *out_len)
{
	struct xshm_addr addr;

	/* A zero length says there is no address, whatever the pointer. */
	if (!hint || !len)
		return 0;
	if (xshm_addr_parse(hint, len, &addr) ||
	    addr.node_id != xshm_params.node_id)
		return -FI_ENODATA;
	*out = address_string(&addr, out_len);
	return *out ? 0 : -FI_ENOMEM;
}

/* A fresh address of this process's own, as an ephemeral port would be. */
static void *new_source_address(size_t *len)
{
	struct xshm_addr addr = {
		.node_id = xshm_params.node_id,
		.ep_id = xshm_ep_id_new(),
	};

	return address_string(&addr, len);
}

/*
 * Addresses from node and service first (with FI_SOURCE they name the
 * source, whatever the hints say), then from the hints.  Every info carries
 * a source address, so that an application may pass it back in its hints
 * (fabtests' clients do) or print it.
 */
static int set_addresses(struct fi_info *info, const char *node,
			 const char *service, uint64_t flags,
			 const struct fi_info *hints)
{
	struct xshm_addr addr;
	bool have_addr;
	int ret;

	if (node || service) {
		ret = resolve_node(node, service, &addr, &have_addr);
		if (ret)
			return ret;
		if (have_addr && (flags & FI_SOURCE))
			info->src_addr = address_string(&addr, &info->src_addrlen);
		else if (have_addr)
			info->dest_addr = address_string(&addr, &info->dest_addrlen);
		if (have_addr && !info->src_addr && !info->dest_addr)
			return -FI_ENOMEM;
	}
	if (hints && !info->src_addr && !(flags & FI_SOURCE)) {
		ret = copy_hint_addr(hints->src_addr, hints->src_addrlen,
				     &info->src_addr, &info->src_addrlen);
		if (ret)
			return ret;
	}
	if (hints && !info->dest_addr && !node && !service) {
		ret = copy_hint_addr(hints->dest_addr, hints->dest_addrlen,
				     &info->dest_addr, &info->dest_addrlen);
		if (ret)
			return ret;
	}
	if (!info->src_addr)
		info->src_addr = new_source_address(&info->src_addrlen);
	return info->src_addr ? 0 : -FI_ENOMEM;
}

/*
 * Registrations work in every mode: with FI_RMA or FI_ATOMIC, xshm takes on what the
 * application allows of FI_MR_VIRT_ADDR and FI_MR_PROV_KEY, as libfabric's
 * shm does (fabtests and MPI libraries ask for both), and otherwise names
 * ranges by offset with the application's keys.  Without either nothing
 * is asked of it, as before RMA.
 */
static uint64_t choose_mr_mode(uint32_t version, const struct fi_info *hints,
			       uint64_t caps)
{
	int hinted = hints && hints->domain_attr ? hints->domain_attr->mr_mode : 0;

	/* Applications still speaking the pre-1.5 modes get them echoed. */
	if (hinted == FI_MR_BASIC || hinted == FI_MR_SCALABLE)
		return hinted;
	if (version < FI_VERSION(1, 5))
		return FI_MR_SCALABLE;
	if (!(caps & (FI_RMA | FI_ATOMIC)))
		return 0;
	return hinted & (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY);
}

static void apply_hints(struct fi_info *info, uint32_t version,
			const struct fi_info *hints)
{
	const struct fi_domain_attr *dom = hints ? hints->domain_attr : NULL;
	uint64_t caps = choose_caps(hints ? hints->caps : 0);

	info->caps = caps;
	info->tx_attr->caps = caps & XSHM_TX_CAPS;
	info->rx_attr->caps = caps & XSHM_RX_CAPS;
	info->domain_attr->mr_mode = choose_mr_mode(version, hints, caps);
	if (caps & (FI_RMA | FI_ATOMIC))
		info->tx_attr->rma_iov_limit = 1;
	if (dom && dom->threading != FI_THREAD_UNSPEC)
		info->domain_attr->threading = dom->threading;
	if (dom && dom->control_progress != FI_PROGRESS_UNSPEC)
		info->domain_attr->control_progress = dom->control_progress;
	if (dom && dom->av_type != FI_AV_UNSPEC)
		info->domain_attr->av_type = dom->av_type;
	if (dom && dom->resource_mgmt != FI_RM_UNSPEC)
		info->domain_attr->resource_mgmt = dom->resource_mgmt;
	if (!hints)
		return;
	if (hints->tx_attr)
		info->tx_attr->op_flags = hints->tx_attr->op_flags;
	if (hints->rx_attr)
		info->rx_attr->op_flags = hints->rx_attr->op_flags;
	if (hints->ep_attr && hints->ep_attr->mem_tag_format)
		info->ep_attr->mem_tag_format = hints->ep_attr->mem_tag_format;
}

/*
 * The template, in structures the loaded libfabric allocates.  Its
 * fi_dupinfo copies each structure at the size of its own headers, and a
 * newer libfabric's fi_domain_attr is larger than the template's (1.17:
 * 192 bytes, 1.22: 200, 2.6: 224): it would read past the template's end.
 * The fields xshm's headers do not know stay zero.
 */
static struct fi_info *info_from_template(void)
{
	const struct fi_info *ours = &xshm_info_template;
	struct fi_info *info = fi_allocinfo();

	if (!info)
		return NULL;
	info->caps = ours->caps;
	info->mode = ours->mode;
	info->addr_format = ours->addr_format;
	*info->tx_attr = *ours->tx_attr;
	*info->rx_attr = *ours->rx_attr;
	*info->ep_attr = *ours->ep_attr;
	*info->domain_attr = *ours->domain_attr;
	*info->fabric_attr = *ours->fabric_attr;
	info->domain_attr->name = strdup(ours->domain_attr->name);
	info->fabric_attr->name = strdup(ours->fabric_attr->name);
	if (!info->domain_attr->name || !info->fabric_attr->name) {
		fi_freeinfo(info);
		return NULL;
	}
	return info;
}

int xshm_getinfo(uint32_t version, const char *node, const char *service,
		 uint64_t flags, const struct fi_info *hints,
		 struct fi_info **info_out)
{
	struct fi_info *info;
	int ret;

	*info_out = NULL;
	if (version < XSHM_MIN_API_VERSION)
		return -FI_ENODATA;
	if (hints && !hints_ok(hints))
		return -FI_ENODATA;
	if ((flags & FI_SOURCE) && !node && !service)
		return -FI_EINVAL;

	info = info_from_template();
	if (!info)
		return -FI_ENOMEM;
	info->fabric_attr->api_version = version;
	apply_hints(info, version, hints);
	ret = set_addresses(info, node, service, flags, hints);
	if (ret) {
		fi_freeinfo(info);
		return ret;
	}
	*info_out = info;
	return 0;
}
