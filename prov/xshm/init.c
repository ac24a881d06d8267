/* The DL provider's entry point and its fi_provider. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "domain.h"
#include "params.h"
#include "provider.h"
#include "shm/cleanup.h"


static void xshm_cleanup(void)
{
	xshm_cleanup_fini();
}

struct fi_provider xshm_prov = {
	.name = XSHM_NAME,
	.version = XSHM_VERSION,
	.fi_version = XSHM_API_VERSION,
	.getinfo = xshm_getinfo,
	.fabric = xshm_fabric_open,
	.cleanup = xshm_cleanup,
};

FI_EXT_INI
{
	xshm_read_params();
	return &xshm_prov;
}
