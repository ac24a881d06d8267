/*
 * xlink's event queue: RDM endpoints and AVs may be bound to one; xlink
 * itself reports nothing asynchronously yet, but the application may
 * fi_eq_write its own events and read them back.
 */
#ifndef XLINK_EQ_H
#define XLINK_EQ_H

#include "xlink.h"

int xlink_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		  struct fid_eq **eq, void *context);

/* True if fid is an EQ of xlink's. */
bool xlink_is_eq(struct fid *fid);

/*
 * Queues an asynchronous error for fi_eq_readerr (libfabric 1.17 has no
 * public flag for fi_eq_write to do so).  The entry is copied; its err_data
 * is not kept.  0 or -FI_ENOMEM.
 */
int xlink_eq_write_error(struct fid_eq *eq, const struct fi_eq_err_entry *err);

#endif
