/* What xshm offers: the attributes fi_getinfo starts from. */
#include "base/provider.h"
#include "xshm/fi_peer.h"

static struct fi_tx_attr xshm_tx_attr = {
	.caps = XSHM_TX_CAPS,
	.op_flags = 0,
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_NONE,
	.inject_size = XSHM_INJECT_SIZE,
	.size = XSHM_TX_SIZE,
	.iov_limit = XSHM_IOV_LIMIT,
	.rma_iov_limit = 0,
};

static struct fi_rx_attr xshm_rx_attr = {
	.caps = XSHM_RX_CAPS,
	.op_flags = 0,
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_NONE,
	.total_buffered_recv = 0,
	.size = XSHM_RX_SIZE,
	.iov_limit = XSHM_IOV_LIMIT,
};

static struct fi_ep_attr xshm_ep_attr = {
	.type = FI_EP_RDM,
	.protocol = FI_PROTO_UNSPEC,
	.protocol_version = 1,
	.max_msg_size = XSHM_MAX_MSG_SIZE,
	.msg_prefix_size = 0,
	.max_order_raw_size = 0,
	.max_order_war_size = 0,
	.max_order_waw_size = 0,
	.mem_tag_format = 0xaaaaaaaaaaaaaaaaULL,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
	.auth_key_size = 0,
};

static struct fi_domain_attr xshm_domain_attr = {
	.name = XSHM_NAME,
	.threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_MANUAL,
	.data_progress = FI_PROGRESS_MANUAL,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_UNSPEC,
	.mr_mode = 0,
	.mr_key_size = sizeof(uint64_t),
	.cq_data_size = sizeof(uint64_t),
	.cq_cnt = 1024,
	.ep_cnt = 1024,
	.tx_ctx_cnt = 1024,
	.rx_ctx_cnt = 1024,
	.max_ep_tx_ctx = 1,
	.max_ep_rx_ctx = 1,
	.max_ep_stx_ctx = 0,
	.max_ep_srx_ctx = 0,
	.cntr_cnt = 1024,
	.mr_iov_limit = XSHM_IOV_LIMIT,
	.caps = XSHM_DOMAIN_CAPS | XSHM_PEER_CAPS,
	.mode = 0,
	.mr_cnt = 1 << 16,
};

static struct fi_fabric_attr xshm_fabric_attr = {
	.name = XSHM_NAME,
	.prov_version = XSHM_VERSION,
	/* api_version: the version asked for (getinfo.c) */
};

const struct fi_info xshm_info_template = {
	.caps = XSHM_CAPS,
	.mode = 0,
	.addr_format = FI_ADDR_STR,
	.tx_attr = &xshm_tx_attr,
	.rx_attr = &xshm_rx_attr,
	.ep_attr = &xshm_ep_attr,
	.domain_attr = &xshm_domain_attr,
	.fabric_attr = &xshm_fabric_attr,
};
