/* The fabric, the domain and memory registration. */
#ifndef XSHM_DOMAIN_H
#define XSHM_DOMAIN_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "base/list.h"
#include "base/lock.h"
#include "mr/mr_table.h"
#include "peer/peer.h"

struct xshm_fabric {
	struct fid_fabric fabric_fid;
	_Atomic int ref;
};

struct xshm_domain {
	struct fid_domain domain_fid;
	struct xshm_fabric *fabric;
	struct xshm_lock lock;
	enum fi_threading threading;
	uint64_t mr_mode;
	_Atomic int ref;
	struct xshm_mr_table mr_table;	/* under lock */
	bool mr_user_keys;		/* keys are the application's */
	bool mr_virt_addr;		/* RMA names virtual addresses */
	struct xshm_dlist srx_imports;	/* fi_srx_context fids not closed yet */
	struct xshm_peers peers;	/* the endpoints it talks to (peer/) */
	struct xshm_dlist eps;		/* of struct xshm_ep, by domain_link */
};

struct xshm_mr {
	struct fid_mr mr_fid;
	struct xshm_domain *domain;
	struct xshm_mr_entry entry;	/* in domain->mr_table */
};

int xshm_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		     void *context);
int xshm_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_domain **domain, void *context);
/* fi_domain2 with FI_PEER (import.c). */
int xshm_domain_import(uint64_t flags, void *context);
extern struct fi_ops_mr xshm_mr_ops;

#endif
