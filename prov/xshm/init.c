/* The DL provider's entry point, its parameters and its fi_provider. */
#include <stdlib.h>
#include <string.h>

#include "xshm.h"
#include "shm/proc.h"

struct xshm_params xshm_params;

int xshm_getinfo(uint32_t version, const char *node, const char *service,
		 uint64_t flags, const struct fi_info *hints,
		 struct fi_info **info);

static void xshm_cleanup(void)
{
}

struct fi_provider xshm_prov = {
	.name = XSHM_NAME,
	.version = XSHM_VERSION,
	.fi_version = XSHM_API_VERSION,
	.getinfo = xshm_getinfo,
	.fabric = xshm_fabric_open,
	.cleanup = xshm_cleanup,
};

static void xshm_read_params(void)
{
	char *node_id = NULL;
	int cma = 1;

	fi_param_define(&xshm_prov, "node_id", FI_PARAM_STRING,
		"Identity of this node in xshm addresses, as hex digits "
		"(default: a hash of the boot id and host name). Processes "
		"with different node ids do not talk to each other; tests "
		"use it to simulate several nodes on one machine.");

	fi_param_define(&xshm_prov, "cma", FI_PARAM_BOOL,
		"Let receivers pull large messages straight from the sender's "
		"buffers with process_vm_readv (default: yes, when the kernel "
		"allows it). With no, large messages are copied through "
		"bounce buffers in pieces.");
	fi_param_define(&xshm_prov, "scopy_threshold", FI_PARAM_SIZE_T,
		"Messages larger than this many bytes are pulled with a single "
		"copy (default: %zu).", (size_t) XSHM_SCOPY_THRESHOLD);
	fi_param_define(&xshm_prov, "unexp_bytes_max", FI_PARAM_SIZE_T,
		"Memory an endpoint may hold for messages that arrived before "
		"a matching receive (default: %zu). Beyond it the endpoint "
		"leaves further unmatched messages in its ring, and senders "
		"get -FI_EAGAIN, until receives are posted.",
		XSHM_UNEXP_BYTES_MAX);

	xshm_params.cma = true;
	xshm_params.scopy_threshold = XSHM_SCOPY_THRESHOLD;
	xshm_params.unexp_bytes_max = XSHM_UNEXP_BYTES_MAX;
	fi_param_get_bool(&xshm_prov, "cma", &cma);
	fi_param_get_size_t(&xshm_prov, "scopy_threshold",
			    &xshm_params.scopy_threshold);
	fi_param_get_size_t(&xshm_prov, "unexp_bytes_max",
			    &xshm_params.unexp_bytes_max);
	xshm_params.cma = cma;
	xshm_params.node_id = xshm_node_id();
	if (!fi_param_get_str(&xshm_prov, "node_id", &node_id) && node_id) {
		uint64_t id = strtoull(node_id, NULL, 16);

		if (id)
			xshm_params.node_id = id;
		else
			XSHM_WARN(FI_LOG_CORE, "ignoring FI_XSHM_NODE_ID=%s\n",
				  node_id);
	}
}

FI_EXT_INI
{
	xshm_read_params();
	return &xshm_prov;
}
