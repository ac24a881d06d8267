/* The provider's entry point, its parameters and the stub fid ops. */
#include <stdlib.h>
#include <string.h>

#include <rdma/providers/fi_prov.h>

#include "xlink.h"

struct xlink_params xlink_params = {
	.net = "tcp;ofi_rxm",
	.peer = "xshm",
	.eager_max = 16384 - 64,
	.stall_ms = 10000,
};

static void xlink_cleanup(void)
{
}

struct fi_provider xlink_prov = {
	.name = XLINK_PROV_NAME,
	.version = XLINK_VERSION,
	.fi_version = FI_VERSION(1, 5),	/* until fi_prov_ini */
	.getinfo = xlink_getinfo,
	.fabric = xlink_fabric_open,
	.cleanup = xlink_cleanup,
};

static void read_params(void)
{
	char *str = NULL;
	size_t size;

	fi_param_define(&xlink_prov, "net", FI_PARAM_STRING,
		"The RDM provider that reaches other nodes (default: tcp;ofi_rxm; "
		"verbs;ofi_rxm on InfiniBand or RoCE).");
	fi_param_define(&xlink_prov, "peer", FI_PARAM_STRING,
		"The provider that reaches endpoints on the same node through "
		"fi_peer(3) (default: xshm; \"none\" sends everything over the "
		"network provider).");
	fi_param_define(&xlink_prov, "eager_max", FI_PARAM_SIZE_T,
		"Largest payload sent to another node in the same network message "
		"as its header; larger ones follow in a message of their own "
		"(default: 16320).");
	fi_param_define(&xlink_prov, "stall_ms", FI_PARAM_INT,
		"A remote endpoint to which every send has found the network "
		"provider without room for this long is unreachable: its sends "
		"and the receives directed at it fail with FI_EHOSTUNREACH "
		"(default: 10000; 0: never).");
	fi_param_get_int(&xlink_prov, "stall_ms", &xlink_params.stall_ms);
	if (!fi_param_get_str(&xlink_prov, "net", &str) && str && *str)
		xlink_params.net = str;
	str = NULL;
	if (!fi_param_get_str(&xlink_prov, "peer", &str) && str && *str)
		xlink_params.peer = strcmp(str, "none") ? str : NULL;
	if (!fi_param_get_size_t(&xlink_prov, "eager_max", &size))
		xlink_params.eager_max = size;
}

__attribute__((visibility("default")))
struct fi_provider *fi_prov_ini(void)
{
	read_params();
	xlink_prov.fi_version = FI_VERSION_LT(XLINK_NEWEST_API, fi_version()) ?
				XLINK_NEWEST_API : fi_version();
	return &xlink_prov;
}

int xlink_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int xlink_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int xlink_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		      void **ops, void *context)
{
	return -FI_ENOSYS;
}
