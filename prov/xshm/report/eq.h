/* Event queues (eq.c): where AV inserts report with FI_EVENT. */
#ifndef XSHM_EQ_H
#define XSHM_EQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

int xshm_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		 struct fid_eq **eq, void *context);
/* FI_EVENT inserts (eq.c): an event or error entry raised by xshm itself. */
ssize_t xshm_eq_raise(struct fid_eq *eq, uint32_t event, const void *buf,
		      size_t len, bool is_err);

#endif
