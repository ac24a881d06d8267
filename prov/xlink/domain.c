/*
 * The domain: the network provider's domain and the peer provider's, one
 * lock over all of it, and progress over every endpoint.
 */
#include <stdlib.h>
#include <string.h>

#include "av.h"
#include "cntr.h"
#include "cq.h"
#include "ep.h"
#include "progress.h"
#include "xlink.h"

void xlink_domain_progress(struct xlink_domain *domain)
{
	for (struct xlink_ep *ep = domain->eps; ep; ep = ep->next)
		xlink_ep_progress(ep);
}

static int domain_close(struct fid *fid)
{
	struct xlink_domain *domain =
		xlink_container_of(fid, struct xlink_domain, domain_fid.fid);

	if (atomic_load(&domain->ref))
		return -FI_EBUSY;
	xlink_progress_stop(domain);
	if (domain->peer)
		fi_close(&domain->peer->fid);
	fi_close(&domain->net->fid);
	fi_freeinfo(domain->net_info);
	fi_freeinfo(domain->peer_info);
	pthread_mutex_destroy(&domain->lock);
	atomic_fetch_sub(&domain->fabric->ref, 1);
	free(domain);
	return 0;
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = xlink_no_bind,
	.control = xlink_no_control,
	.ops_open = xlink_no_ops_open,
};

static int no_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			  struct fid_ep **sep, void *context)
{
	return -FI_ENOSYS;
}

static int no_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
			struct fid_poll **pollset)
{
	return -FI_ENOSYS;
}

static int no_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
		  struct fid_stx **stx, void *context)
{
	return -FI_ENOSYS;
}

static int no_srx(struct fid_domain *domain, struct fi_rx_attr *attr,
		  struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

static int no_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
			   enum fi_op op, struct fi_atomic_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = xlink_av_open,
	.cq_open = xlink_cq_open,
	.endpoint = xlink_endpoint,
	.scalable_ep = no_scalable_ep,
	.cntr_open = xlink_cntr_open,
	.poll_open = no_poll_open,
	.stx_ctx = no_ctx,
	.srx_ctx = no_srx,
	.query_atomic = no_query_atomic,
};

static int open_children(struct xlink_domain *domain, struct fi_info *info)
{
	struct xlink_fabric *fabric = domain->fabric;
	int ret;

	ret = xlink_child_infos(XLINK_API, info, &domain->net_info, &domain->peer_info);
	if (ret)
		return ret;
	ret = fi_domain(fabric->net, domain->net_info, &domain->net, domain);
	if (ret)
		return ret;
	if (fabric->peer && domain->peer_info &&
	    fi_domain(fabric->peer, domain->peer_info, &domain->peer, domain)) {
		FI_WARN(&xlink_prov, FI_LOG_DOMAIN,
			"peer provider %s: no domain; every message goes over %s\n",
			xlink_params.peer, xlink_params.net);
		domain->peer = NULL;
	}
	return 0;
}

struct xlink_domain *xlink_domain_of(struct fid_domain *domain_fid)
{
	if (!domain_fid || domain_fid->fid.fclass != FI_CLASS_DOMAIN ||
	    domain_fid->fid.ops != &domain_fi_ops)
		return NULL;
	return xlink_container_of(domain_fid, struct xlink_domain, domain_fid);
}

int xlink_domain_open(struct fid_fabric *fabric_fid, struct fi_info *info,
		      struct fid_domain **domain_fid, void *context)
{
	struct xlink_fabric *fabric =
		xlink_container_of(fabric_fid, struct xlink_fabric, fabric_fid);
	struct xlink_domain *domain;
	bool auto_progress;
	int ret;

	if (!info || !domain_fid || !info->domain_attr || !info->fabric_attr)
		return -FI_EINVAL;
	domain = calloc(1, sizeof(*domain));
	if (!domain)
		return -FI_ENOMEM;
	domain->fabric = fabric;
	ret = open_children(domain, info);
	if (ret) {
		if (domain->net)
			fi_close(&domain->net->fid);
		fi_freeinfo(domain->net_info);
		fi_freeinfo(domain->peer_info);
		free(domain);
		return ret;
	}
	pthread_mutex_init(&domain->lock, NULL);
	auto_progress = xlink_progress_auto(info);
	domain->locking = info->domain_attr->threading != FI_THREAD_DOMAIN ||
			  auto_progress;
	domain->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	domain->domain_fid.fid.context = context;
	domain->domain_fid.fid.ops = &domain_fi_ops;
	domain->domain_fid.ops = &domain_ops;
	domain->domain_fid.mr = &xlink_mr_ops;
	atomic_fetch_add(&fabric->ref, 1);
	if (auto_progress) {
		ret = xlink_progress_start(domain);
		if (ret) {
			domain_close(&domain->domain_fid.fid);
			return ret;
		}
	}
	*domain_fid = &domain->domain_fid;
	return 0;
}
