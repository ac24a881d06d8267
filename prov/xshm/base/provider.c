/*
 * The fi_provider every file logs through (XSHM_WARN, XSHM_INFO) and reads
 * its parameters with.  Its entry points open the libfabric objects, the
 * top of the provider: fi_prov_ini sets them (objects/init.c).
 */
#include "base/provider.h"
#include "shm/cleanup.h"

static void xshm_cleanup(void)
{
	xshm_cleanup_fini();
}

struct fi_provider xshm_prov = {
	.name = XSHM_NAME,
	.version = XSHM_VERSION,
	.fi_version = XSHM_MIN_API_VERSION,	/* until fi_prov_ini */
	.cleanup = xshm_cleanup,
};

uint32_t xshm_api_version(void)
{
	uint32_t loaded = fi_version();

	return FI_VERSION_LT(XSHM_NEWEST_API_VERSION, loaded) ?
	       XSHM_NEWEST_API_VERSION : loaded;
}
