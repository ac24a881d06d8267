/* The fabric: the network provider's fabric and the peer provider's. */
#include <stdlib.h>
#include <string.h>

#include "eq.h"
#include "xlink.h"

static int fabric_close(struct fid *fid)
{
	struct xlink_fabric *fabric =
		xlink_container_of(fid, struct xlink_fabric, fabric_fid.fid);

	if (atomic_load(&fabric->ref))
		return -FI_EBUSY;
	if (fabric->peer)
		fi_close(&fabric->peer->fid);
	fi_close(&fabric->net->fid);
	free(fabric);
	return 0;
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = xlink_no_bind,
	.control = xlink_no_control,
	.ops_open = xlink_no_ops_open,
};

static int no_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
			 struct fid_pep **pep, void *context)
{
	return -FI_ENOSYS;
}

static int no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			struct fid_wait **waitset)
{
	return -FI_ENOSYS;
}

static int no_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	return -FI_ENOSYS;
}

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = xlink_domain_open,
	.passive_ep = no_passive_ep,
	.eq_open = xlink_eq_open,
	.wait_open = no_wait_open,
	.trywait = no_trywait,
};

static int open_children(struct xlink_fabric *fabric, struct fi_fabric_attr *attr)
{
	struct fi_info *net, *peer, hint = { 0 };
	struct fi_domain_attr domain_attr = { 0 };
	struct fi_fabric_attr fabric_attr = *attr;
	int ret;

	hint.fabric_attr = &fabric_attr;
	hint.domain_attr = &domain_attr;
	ret = xlink_child_infos(XLINK_API, &hint, &net, &peer);
	if (ret)
		return ret;
	ret = fi_fabric(net->fabric_attr, &fabric->net, fabric);
	if (!ret && peer && fi_fabric(peer->fabric_attr, &fabric->peer, fabric))
		fabric->peer = NULL;
	fi_freeinfo(net);
	fi_freeinfo(peer);
	return ret;
}

int xlink_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric_fid,
		      void *context)
{
	struct xlink_fabric *fabric;
	int ret;

	if (!attr || !fabric_fid || !attr->name)
		return -FI_EINVAL;
	fabric = calloc(1, sizeof(*fabric));
	if (!fabric)
		return -FI_ENOMEM;
	ret = open_children(fabric, attr);
	if (ret) {
		free(fabric);
		return ret;
	}
	fabric->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	fabric->fabric_fid.fid.context = context;
	fabric->fabric_fid.fid.ops = &fabric_fi_ops;
	fabric->fabric_fid.ops = &fabric_ops;
	*fabric_fid = &fabric->fabric_fid;
	return 0;
}
