/*
 * Atomic calls (fi_atomic(3)): argument shaping and the valid queries;
 * data/atomic_send.c does the rest.  fi_ioc lists become iovecs of bytes;
 * one target range per operation (rma_iov_limit 1) of as many elements as
 * the operands, at most XSHM_ATOMIC_MAX_BYTES of them (one cell).
 */
#include <rdma/fi_atomic.h>

#include "atomic/apply.h"
#include "data/atomic.h"
#include "objects/domain.h"
#include "objects/ep.h"

#define XSHM_ATOMICMSG_FLAGS	(FI_COMPLETION | FI_MORE | FI_INJECT | \
				 FI_REMOTE_CQ_DATA | FI_INJECT_COMPLETE | \
				 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | \
				 FI_COMMIT_COMPLETE | FI_FENCE)

static struct xshm_ep *to_ep(struct fid_ep *ep_fid)
{
	return xshm_container_of(ep_fid, struct xshm_ep, ep_fid);
}

/*
 * An fi_ioc list as iovecs of datatype's elements; -FI_EINVAL if bad: too
 * long, or an entry without its buffer.  The only check of the lists.
 */
static int ioc_to_iov(const struct fi_ioc *ioc, size_t count, size_t size,
		      struct iovec *iov, size_t *elements)
{
	*elements = 0;
	if (count > XSHM_IOV_LIMIT || (count && !ioc))
		return -FI_EINVAL;
	for (size_t i = 0; i < count; i++) {
		if (ioc[i].count > XSHM_ATOMIC_MAX_BYTES ||
		    (ioc[i].count && !ioc[i].addr))
			return -FI_EINVAL;
		iov[i].iov_base = ioc[i].addr;
		iov[i].iov_len = ioc[i].count * size;
		*elements += ioc[i].count;
	}
	return 0;
}

/* Elements an fi_ioc list names; its checks come later (ioc_to_iov). */
static size_t elements_of(const struct fi_ioc *ioc, size_t count)
{
	size_t sum = 0;

	for (size_t i = 0; ioc && i < count && i < XSHM_IOV_LIMIT; i++)
		sum += ioc[i].count;
	return sum;
}

/* The lists of one call, before they are shaped. */
struct ioc_lists {
	const struct fi_ioc *src, *cmp;
	struct fi_ioc *res;
	size_t src_count, cmp_count, res_count;
};

/*
 * Shapes lists into args (whose iovecs live in iov) and posts: the
 * elements are the operands' (a read's: its results'), and the compare
 * values and results must be as many.
 */
static ssize_t post(struct xshm_ep *ep, struct xshm_atomic_args *args,
		    const struct ioc_lists *lists)
{
	struct iovec iov[3][XSHM_IOV_LIMIT];
	size_t size = xshm_atomic_type_size(args->datatype);
	size_t n_src = 0, n_cmp = 0, n_res = 0;
	bool fetch = args->kind != XSHM_ATOMIC_WRITE;

	if (!xshm_atomic_supported(args->kind, args->op, args->datatype))
		return -FI_EOPNOTSUPP;
	if ((args->op != FI_ATOMIC_READ &&
	     ioc_to_iov(lists->src, lists->src_count, size, iov[0], &n_src)) ||
	    (args->kind == XSHM_ATOMIC_COMPARE &&
	     ioc_to_iov(lists->cmp, lists->cmp_count, size, iov[1], &n_cmp)) ||
	    (fetch &&
	     ioc_to_iov(lists->res, lists->res_count, size, iov[2], &n_res)))
		return -FI_EINVAL;
	args->count = args->op == FI_ATOMIC_READ ? n_res : n_src;
	if ((fetch && n_res != args->count) ||
	    (args->kind == XSHM_ATOMIC_COMPARE && n_cmp != args->count))
		return -FI_EINVAL;
	args->src = iov[0];
	args->src_count = args->op == FI_ATOMIC_READ ? 0 : lists->src_count;
	args->cmp = iov[1];
	args->cmp_count = args->kind == XSHM_ATOMIC_COMPARE ?
			  lists->cmp_count : 0;
	args->res = iov[2];
	args->res_count = fetch ? lists->res_count : 0;
	return xshm_atomic_post(ep, args);
}

/* A call naming one target range by address and key. */
static ssize_t post_to(struct fid_ep *ep_fid, uint8_t kind,
		       const struct ioc_lists *lists, fi_addr_t dest,
		       uint64_t addr, uint64_t key, enum fi_datatype datatype,
		       enum fi_op op, void *context, uint64_t flags)
{
	struct xshm_atomic_args args = {
		.kind = kind, .op = (uint8_t) op, .datatype = (uint8_t) datatype,
		.dest = dest, .addr = addr, .key = key, .context = context,
		.flags = flags,
	};

	if ((unsigned) op >= FI_ATOMIC_OP_LAST ||
	    (unsigned) datatype >= FI_DATATYPE_LAST)
		return -FI_EOPNOTSUPP;
	return post(to_ep(ep_fid), &args, lists);
}

/* fi_*msg: one target range of as many elements as the operation. */
static ssize_t post_msg(struct fid_ep *ep_fid, uint8_t kind,
			const struct fi_msg_atomic *msg,
			const struct fi_ioc *cmp, size_t cmp_count,
			struct fi_ioc *res, size_t res_count, uint64_t flags)
{
	struct xshm_ep *ep = to_ep(ep_fid);
	struct ioc_lists lists;
	struct xshm_atomic_args args;

	if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov)
		return -FI_EINVAL;
	if (msg->rma_iov[0].count !=
	    (msg->op == FI_ATOMIC_READ ? elements_of(res, res_count) :
					 elements_of(msg->msg_iov,
						     msg->iov_count)))
		return -FI_EINVAL;
	if (flags & ~XSHM_ATOMICMSG_FLAGS)
		return -FI_EBADFLAGS;
	if ((unsigned) msg->op >= FI_ATOMIC_OP_LAST ||
	    (unsigned) msg->datatype >= FI_DATATYPE_LAST)
		return -FI_EOPNOTSUPP;
	lists = (struct ioc_lists) {
		.src = msg->msg_iov, .src_count = msg->iov_count,
		.cmp = cmp, .cmp_count = cmp_count,
		.res = res, .res_count = res_count,
	};
	args = (struct xshm_atomic_args) {
		.kind = kind, .op = (uint8_t) msg->op,
		.datatype = (uint8_t) msg->datatype, .dest = msg->addr,
		.addr = msg->rma_iov[0].addr, .key = msg->rma_iov[0].key,
		.context = msg->context, .data = msg->data,
		.flags = xshm_tx_flags(ep, flags),
	};
	return post(ep, &args, &lists);
}

/* The buffers of a call that names one of each: NULL where it has none. */
struct single_bufs {
	const void *src, *cmp;
	void *res;
};

/*
 * fi_atomic, fi_inject_atomic, fi_fetch_atomic and fi_compare_atomic: one
 * buffer of each kind, shaped here as post would shape their lists, with
 * the same checks.  Posted adds streamed to one target (test/bench/rma -m
 * atomic_add_rate, callgrind) took 680 instructions an operation at the
 * initiator through the lists, 187 of them shaping; 122 here, and 1.00 to
 * 1.10 times the rate (4 runs of 9).  A fetch took 223 instructions in
 * this layer through the lists.  Inline, so that each call keeps only the
 * checks of its own buffers.
 */
static inline __attribute__((always_inline))
ssize_t post_single(struct fid_ep *ep_fid, uint8_t kind,
			   const struct single_bufs *bufs, size_t count,
			   fi_addr_t dest, uint64_t addr, uint64_t key,
			   enum fi_datatype datatype, enum fi_op op,
			   void *context, uint64_t flags)
{
	struct iovec src, cmp, res;
	struct xshm_atomic_args args;
	bool fetch = kind != XSHM_ATOMIC_WRITE;
	bool reads = op == FI_ATOMIC_READ;
	size_t len;

	if (!xshm_atomic_supported(kind, op, datatype))
		return -FI_EOPNOTSUPP;
	if (count > XSHM_ATOMIC_MAX_BYTES ||
	    (count && ((!reads && !bufs->src) ||
		       (kind == XSHM_ATOMIC_COMPARE && !bufs->cmp) ||
		       (fetch && !bufs->res))))
		return -FI_EINVAL;
	len = count * xshm_atomic_type_size(datatype);
	src = (struct iovec) { .iov_base = (void *) bufs->src, .iov_len = len };
	cmp = (struct iovec) { .iov_base = (void *) bufs->cmp, .iov_len = len };
	res = (struct iovec) { .iov_base = bufs->res, .iov_len = len };
	args = (struct xshm_atomic_args) {
		.kind = kind, .op = (uint8_t) op,
		.datatype = (uint8_t) datatype, .count = count,
		.src = &src, .src_count = !reads,
		.cmp = &cmp, .cmp_count = kind == XSHM_ATOMIC_COMPARE,
		.res = &res, .res_count = fetch,
		.dest = dest, .addr = addr, .key = key, .context = context,
		.flags = flags,
	};
	return xshm_atomic_post(to_ep(ep_fid), &args);
}

/*
 * fi_atomic and fi_inject_atomic: straight into the target's ring where
 * they may (xshm_atomic_write_short), else shaped as the others.  Posted
 * adds streamed to one target (test/bench/rma -m atomic_add_rate, callgrind)
 * took 498 instructions an operation at the initiator through post_single,
 * 444 this way.
 */
static inline __attribute__((always_inline))
ssize_t post_write(struct fid_ep *ep_fid, const void *buf, size_t count,
		   fi_addr_t dest, uint64_t addr, uint64_t key,
		   enum fi_datatype datatype, enum fi_op op, void *context,
		   uint64_t flags)
{
	if (buf && xshm_atomic_supported(XSHM_ATOMIC_WRITE, op, datatype) &&
	    !xshm_atomic_write_short(to_ep(ep_fid), buf, count, dest, addr,
				     key, (uint8_t) datatype, (uint8_t) op,
				     context, flags))
		return 0;
	return post_single(ep_fid, XSHM_ATOMIC_WRITE,
			   &(struct single_bufs) { .src = buf }, count, dest,
			   addr, key, datatype, op, context, flags);
}

static ssize_t atomic_write(struct fid_ep *ep_fid, const void *buf,
			    size_t count, void *desc, fi_addr_t dest,
			    uint64_t addr, uint64_t key,
			    enum fi_datatype datatype, enum fi_op op,
			    void *context)
{
	return post_write(ep_fid, buf, count, dest, addr, key, datatype, op,
			  context,
			  xshm_tx_flags(to_ep(ep_fid), to_ep(ep_fid)->tx_op_flags));
}

static ssize_t atomic_writev(struct fid_ep *ep_fid, const struct fi_ioc *iov,
			     void **desc, size_t count, fi_addr_t dest,
			     uint64_t addr, uint64_t key,
			     enum fi_datatype datatype, enum fi_op op,
			     void *context)
{
	struct ioc_lists lists = { .src = iov, .src_count = count };

	return post_to(ep_fid, XSHM_ATOMIC_WRITE, &lists, dest, addr, key,
		       datatype, op, context,
		       xshm_tx_flags(to_ep(ep_fid), to_ep(ep_fid)->tx_op_flags));
}

static ssize_t atomic_writemsg(struct fid_ep *ep_fid,
			       const struct fi_msg_atomic *msg, uint64_t flags)
{
	return post_msg(ep_fid, XSHM_ATOMIC_WRITE, msg, NULL, 0, NULL, 0,
			flags);
}

static ssize_t atomic_inject(struct fid_ep *ep_fid, const void *buf,
			     size_t count, fi_addr_t dest, uint64_t addr,
			     uint64_t key, enum fi_datatype datatype,
			     enum fi_op op)
{
	return post_write(ep_fid, buf, count, dest, addr, key, datatype, op,
			  NULL, FI_INJECT);
}

static ssize_t atomic_readwrite(struct fid_ep *ep_fid, const void *buf,
				size_t count, void *desc, void *result,
				void *result_desc, fi_addr_t dest,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op,
				void *context)
{
	return post_single(ep_fid, XSHM_ATOMIC_FETCH,
			   &(struct single_bufs) { .src = buf, .res = result },
			   count, dest, addr, key, datatype, op, context,
			   xshm_tx_flags(to_ep(ep_fid), to_ep(ep_fid)->tx_op_flags));
}

static ssize_t atomic_readwritev(struct fid_ep *ep_fid,
				 const struct fi_ioc *iov, void **desc,
				 size_t count, struct fi_ioc *resultv,
				 void **result_desc, size_t result_count,
				 fi_addr_t dest, uint64_t addr, uint64_t key,
				 enum fi_datatype datatype, enum fi_op op,
				 void *context)
{
	struct ioc_lists lists = {
		.src = iov, .src_count = count,
		.res = resultv, .res_count = result_count,
	};

	return post_to(ep_fid, XSHM_ATOMIC_FETCH, &lists, dest, addr, key,
		       datatype, op, context,
		       xshm_tx_flags(to_ep(ep_fid), to_ep(ep_fid)->tx_op_flags));
}

static ssize_t atomic_readwritemsg(struct fid_ep *ep_fid,
				   const struct fi_msg_atomic *msg,
				   struct fi_ioc *resultv, void **result_desc,
				   size_t result_count, uint64_t flags)
{
	return post_msg(ep_fid, XSHM_ATOMIC_FETCH, msg, NULL, 0, resultv,
			result_count, flags);
}

static ssize_t atomic_compwrite(struct fid_ep *ep_fid, const void *buf,
				size_t count, void *desc, const void *compare,
				void *compare_desc, void *result,
				void *result_desc, fi_addr_t dest,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op,
				void *context)
{
	return post_single(ep_fid, XSHM_ATOMIC_COMPARE,
			   &(struct single_bufs) { .src = buf, .cmp = compare,
						   .res = result },
			   count, dest, addr, key, datatype, op, context,
			   xshm_tx_flags(to_ep(ep_fid), to_ep(ep_fid)->tx_op_flags));
}

static ssize_t atomic_compwritev(struct fid_ep *ep_fid,
				 const struct fi_ioc *iov, void **desc,
				 size_t count, const struct fi_ioc *comparev,
				 void **compare_desc, size_t compare_count,
				 struct fi_ioc *resultv, void **result_desc,
				 size_t result_count, fi_addr_t dest,
				 uint64_t addr, uint64_t key,
				 enum fi_datatype datatype, enum fi_op op,
				 void *context)
{
	struct ioc_lists lists = {
		.src = iov, .src_count = count,
		.cmp = comparev, .cmp_count = compare_count,
		.res = resultv, .res_count = result_count,
	};

	return post_to(ep_fid, XSHM_ATOMIC_COMPARE, &lists, dest, addr, key,
		       datatype, op, context,
		       xshm_tx_flags(to_ep(ep_fid), to_ep(ep_fid)->tx_op_flags));
}

static ssize_t atomic_compwritemsg(struct fid_ep *ep_fid,
				   const struct fi_msg_atomic *msg,
				   const struct fi_ioc *comparev,
				   void **compare_desc, size_t compare_count,
				   struct fi_ioc *resultv, void **result_desc,
				   size_t result_count, uint64_t flags)
{
	return post_msg(ep_fid, XSHM_ATOMIC_COMPARE, msg, comparev,
			compare_count, resultv, result_count, flags);
}

/* The kind the flags of fi_query_atomic name, or a negative error. */
static int kind_of_flags(uint64_t flags)
{
	if (flags & FI_TAGGED)
		return -FI_EOPNOTSUPP;	/* no atomics to tagged buffers */
	if (flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC))
		return -FI_EBADFLAGS;
	if ((flags & FI_FETCH_ATOMIC) && (flags & FI_COMPARE_ATOMIC))
		return -FI_EBADFLAGS;
	if (flags & FI_FETCH_ATOMIC)
		return XSHM_ATOMIC_FETCH;
	return flags & FI_COMPARE_ATOMIC ? XSHM_ATOMIC_COMPARE :
					   XSHM_ATOMIC_WRITE;
}

int xshm_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
		      enum fi_op op, struct fi_atomic_attr *attr,
		      uint64_t flags)
{
	int kind = kind_of_flags(flags);

	if (kind < 0)
		return kind;
	if (!xshm_atomic_supported(kind, op, datatype))
		return -FI_EOPNOTSUPP;
	if (attr) {
		attr->size = xshm_atomic_type_size(datatype);
		attr->count = xshm_atomic_max_count(kind, op, datatype);
	}
	return 0;
}

static int valid(struct fid_ep *ep_fid, int kind, enum fi_datatype datatype,
		 enum fi_op op, size_t *count)
{
	if (!count)
		return -FI_EINVAL;
	if (!(to_ep(ep_fid)->caps & FI_ATOMIC) ||
	    !xshm_atomic_supported(kind, op, datatype))
		return -FI_EOPNOTSUPP;
	*count = xshm_atomic_max_count(kind, op, datatype);
	return 0;
}

static int atomic_writevalid(struct fid_ep *ep_fid, enum fi_datatype datatype,
			     enum fi_op op, size_t *count)
{
	return valid(ep_fid, XSHM_ATOMIC_WRITE, datatype, op, count);
}

static int atomic_readwritevalid(struct fid_ep *ep_fid,
				 enum fi_datatype datatype, enum fi_op op,
				 size_t *count)
{
	return valid(ep_fid, XSHM_ATOMIC_FETCH, datatype, op, count);
}

static int atomic_compwritevalid(struct fid_ep *ep_fid,
				 enum fi_datatype datatype, enum fi_op op,
				 size_t *count)
{
	return valid(ep_fid, XSHM_ATOMIC_COMPARE, datatype, op, count);
}

struct fi_ops_atomic xshm_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = atomic_write,
	.writev = atomic_writev,
	.writemsg = atomic_writemsg,
	.inject = atomic_inject,
	.readwrite = atomic_readwrite,
	.readwritev = atomic_readwritev,
	.readwritemsg = atomic_readwritemsg,
	.compwrite = atomic_compwrite,
	.compwritev = atomic_compwritev,
	.compwritemsg = atomic_compwritemsg,
	.writevalid = atomic_writevalid,
	.readwritevalid = atomic_readwritevalid,
	.compwritevalid = atomic_compwritevalid,
};
