/* fid operations shared by objects that do not support them. */
#include "base/fid.h"

int xshm_fid_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int xshm_fid_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int xshm_fid_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
			 void **ops, void *context)
{
	return -FI_ENOSYS;
}
