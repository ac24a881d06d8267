/* The domain: threading model, and the factory for every data object. */
#include <stdlib.h>
#include <string.h>

#include "objects/domain.h"
#include "av/av.h"
#include "base/fid.h"
#include "base/list.h"
#include "base/provider.h"
#include "objects/cntr.h"
#include "objects/cq.h"
#include "objects/ep.h"
#include "objects/import.h"
#include "objects/poll.h"

static int xshm_domain_close(struct fid *fid)
{
	struct xshm_domain *domain =
		xshm_container_of(fid, struct xshm_domain, domain_fid.fid);

	if (atomic_load(&domain->ref))
		return -FI_EBUSY;
	xshm_srx_import_free_all(domain);
	xshm_peers_fini(&domain->peers);
	atomic_fetch_sub(&domain->fabric->ref, 1);
	pthread_mutex_destroy(&domain->lock.mutex);
	free(domain);
	return 0;
}

static int xshm_no_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			       struct fid_ep **sep, void *context)
{
	return -FI_ENOSYS;
}

static int xshm_no_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
			   struct fid_stx **stx, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops xshm_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = xshm_domain_close,
	.bind = xshm_fid_no_bind,
	.control = xshm_fid_no_control,
	.ops_open = xshm_fid_no_ops_open,
};

static struct fi_ops_domain xshm_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = xshm_av_open,
	.cq_open = xshm_cq_open,
	.endpoint = xshm_ep_open,
	.scalable_ep = xshm_no_scalable_ep,
	.cntr_open = xshm_cntr_open,
	.poll_open = xshm_poll_open,
	.stx_ctx = xshm_no_stx_ctx,
	.srx_ctx = xshm_srx_context,
	.query_atomic = xshm_query_atomic,
};

/*
 * Keys are the provider's unless the application asked for RMA without
 * FI_MR_PROV_KEY (or for FI_MR_SCALABLE); addresses are virtual with
 * FI_MR_VIRT_ADDR (or FI_MR_BASIC), else offsets into the registration.
 * Without FI_RMA or FI_ATOMIC no key is ever used, and keys stay the provider's, as
 * they were before RMA.
 */
static void set_mr_keys(struct xshm_domain *domain, const struct fi_info *info)
{
	uint64_t mode = domain->mr_mode;

	domain->mr_virt_addr = mode == FI_MR_BASIC || (mode & FI_MR_VIRT_ADDR);
	domain->mr_user_keys = mode == FI_MR_SCALABLE ||
			       ((info->caps & (FI_RMA | FI_ATOMIC)) && mode != FI_MR_BASIC &&
				!(mode & FI_MR_PROV_KEY));
	xshm_mr_table_init(&domain->mr_table);
}

int xshm_domain_open(struct fid_fabric *fabric_fid, struct fi_info *info,
		     struct fid_domain **domain_out, void *context)
{
	struct xshm_fabric *fabric =
		xshm_container_of(fabric_fid, struct xshm_fabric, fabric_fid);
	struct xshm_domain *domain;

	if (!info || !info->domain_attr)
		return -FI_EINVAL;
	if (info->domain_attr->name &&
	    strcmp(info->domain_attr->name, XSHM_NAME))
		return -FI_EINVAL;
	domain = calloc(1, sizeof(*domain));
	if (!domain)
		return -FI_ENOMEM;
	domain->threading = info->domain_attr->threading;
	domain->mr_mode = info->domain_attr->mr_mode;
	set_mr_keys(domain, info);
	/* FI_THREAD_DOMAIN: the application serialises all access for us. */
	domain->lock.enabled = domain->threading != FI_THREAD_DOMAIN;
	pthread_mutex_init(&domain->lock.mutex, NULL);
	domain->fabric = fabric;
	xshm_dlist_init(&domain->srx_imports);
	xshm_dlist_init(&domain->eps);
	atomic_fetch_add(&fabric->ref, 1);
	domain->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	domain->domain_fid.fid.context = context;
	domain->domain_fid.fid.ops = &xshm_domain_fi_ops;
	domain->domain_fid.ops = &xshm_domain_ops;
	domain->domain_fid.mr = &xshm_mr_ops;
	*domain_out = &domain->domain_fid;
	return 0;
}
