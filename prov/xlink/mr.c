/*
 * Memory registration.  xlink needs none (mr_mode 0) and offers no RMA;
 * a registration succeeds and yields a key and no descriptor, so that
 * applications that register anyway run unchanged.
 */
#include <stdlib.h>

#include "xlink.h"

struct xlink_mr {
	struct fid_mr mr_fid;
	struct xlink_domain *domain;
};

static atomic_uint_fast64_t next_key = 1;

static int mr_close(struct fid *fid)
{
	struct xlink_mr *mr = xlink_container_of(fid, struct xlink_mr, mr_fid.fid);

	atomic_fetch_sub(&mr->domain->ref, 1);
	free(mr);
	return 0;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = xlink_no_bind,
	.control = xlink_no_control,
	.ops_open = xlink_no_ops_open,
};

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		      struct fid_mr **mr_fid)
{
	struct xlink_domain *domain = xlink_domain_of((struct fid_domain *) fid);
	struct xlink_mr *mr;

	if (!domain || !attr || !mr_fid || (attr->iov_count && !attr->mr_iov))
		return -FI_EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->domain = domain;
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = attr->context;
	mr->mr_fid.fid.ops = &mr_fi_ops;
	mr->mr_fid.mem_desc = NULL;
	mr->mr_fid.key = atomic_fetch_add(&next_key, 1);
	atomic_fetch_add(&domain->ref, 1);
	*mr_fid = &mr->mr_fid;
	return 0;
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		   uint64_t access, uint64_t offset, uint64_t requested_key,
		   uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov, .iov_count = count, .access = access,
		.offset = offset, .requested_key = requested_key, .context = context,
	};

	return mr_regattr(fid, &attr, flags, mr);
}

static int mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		  uint64_t offset, uint64_t requested_key, uint64_t flags,
		  struct fid_mr **mr, void *context)
{
	struct iovec iov = { (void *) buf, len };

	return mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}

struct fi_ops_mr xlink_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mr_reg,
	.regv = mr_regv,
	.regattr = mr_regattr,
};
