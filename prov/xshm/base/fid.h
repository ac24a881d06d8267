/* The fid ops an object without that operation points to. */
#ifndef XSHM_FID_H
#define XSHM_FID_H

#include <rdma/fabric.h>

int xshm_fid_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int xshm_fid_no_control(struct fid *fid, int command, void *arg);
int xshm_fid_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
			 void **ops, void *context);

#endif
