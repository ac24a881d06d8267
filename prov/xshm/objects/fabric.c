/* The fabric: a name and a factory for domains and EQs. */
#include <stdlib.h>
#include <string.h>

#include "av/av_impl.h"
#include "base/fid.h"
#include "base/list.h"
#include "base/provider.h"
#include "objects/cntr.h"
#include "objects/cq.h"
#include "objects/domain.h"
#include "report/eq.h"
#include "shm/region.h"

static int xshm_fabric_close(struct fid *fid)
{
	struct xshm_fabric *fabric =
		xshm_container_of(fid, struct xshm_fabric, fabric_fid.fid);

	if (atomic_load(&fabric->ref))
		return -FI_EBUSY;
	free(fabric);
	return 0;
}

static int xshm_domain2(struct fid_fabric *fabric, struct fi_info *info,
			struct fid_domain **domain, uint64_t flags,
			void *context)
{
	int ret = flags ? xshm_domain_import(flags, context) : 0;

	return ret ? ret : xshm_domain_open(fabric, info, domain, context);
}

static int xshm_no_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
			      struct fid_pep **pep, void *context)
{
	return -FI_ENOSYS;
}

static int xshm_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			     struct fid_wait **waitset)
{
	return -FI_ENOSYS;
}

/* FI_SUCCESS only if every CQ and counter is empty and armed. */
static int xshm_trywait(struct fid_fabric *fabric, struct fid **fids,
			int count)
{
	int ret = 0;

	if (count < 0 || (count && !fids))
		return -FI_EINVAL;
	for (int i = 0; i < count && !ret; i++) {
		if (!fids[i])
			return -FI_EINVAL;
		switch (fids[i]->fclass) {
		case FI_CLASS_CQ:
			ret = xshm_cq_trywait(fids[i]);
			break;
		case FI_CLASS_CNTR:
			ret = xshm_cntr_trywait(fids[i]);
			break;
		default:
			ret = -FI_ENOSYS;
		}
	}
	return ret;
}

static struct fi_ops xshm_fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = xshm_fabric_close,
	.bind = xshm_fid_no_bind,
	.control = xshm_fid_no_control,
	.ops_open = xshm_fid_no_ops_open,
};

static struct fi_ops_fabric xshm_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = xshm_domain_open,
	.passive_ep = xshm_no_passive_ep,
	.eq_open = xshm_eq_open,
	.wait_open = xshm_no_wait_open,
	.trywait = xshm_trywait,
	.domain2 = xshm_domain2,
};

int xshm_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric_out,
		     void *context)
{
	struct xshm_fabric *fabric;

	if (attr && attr->name && strcmp(attr->name, XSHM_NAME))
		return -FI_EINVAL;
	fabric = calloc(1, sizeof(*fabric));
	if (!fabric)
		return -FI_ENOMEM;
	fabric->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	fabric->fabric_fid.fid.context = context;
	fabric->fabric_fid.fid.ops = &xshm_fabric_fi_ops;
	fabric->fabric_fid.ops = &xshm_fabric_ops;
	/* Files left by processes that died without closing them. */
	xshm_region_reclaim_stale();
	xshm_av_shared_reclaim_stale();
	*fabric_out = &fabric->fabric_fid;
	return 0;
}
