/* The DL provider's entry point: the provider's parameters and entry points. */
#include "base/params.h"
#include "base/provider.h"
#include "objects/domain.h"

FI_EXT_INI
{
	xshm_prov.fi_version = xshm_api_version();
	xshm_prov.getinfo = xshm_getinfo;
	xshm_prov.fabric = xshm_fabric_open;
	xshm_read_params();
	return &xshm_prov;
}
