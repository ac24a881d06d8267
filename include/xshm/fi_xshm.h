/*
 * xshm extensions for applications built against libfabric headers older
 * than the fi_av(3) page xshm implements (1.17 has no slot in struct
 * fi_ops_av for these calls).
 *
 *   struct fi_xshm_ops_av *ops;
 *   fi_open_ops(&av->fid, FI_XSHM_AV_OPS, 0, (void **) &ops, NULL);
 *
 * The wrappers below carry the names and signatures of fi_av(3), and are
 * only defined when <rdma/fi_domain.h> lacks them (libfabric < 1.20); with
 * newer headers xshm fills the native slots with the same functions.
 */
#ifndef XSHM_FI_XSHM_H
#define XSHM_FI_XSHM_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FI_XSHM_AV_OPS		"xshm_av_ops"

/* An xshm authorization key: an opaque byte string of 1 to 64 bytes. */
#define FI_XSHM_AUTH_KEY_MAX	64

#define FI_XSHM_NATIVE_AV_EXT \
	FI_VERSION_GE(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), \
		      FI_VERSION(1, 20))

/*
 * Flag of fi_av_insert*, fi_av_remove, fi_av_set_user_id, fi_recvmsg and
 * fi_trecvmsg: the fi_addr_t given is an authorization key handle.  The
 * value of libfabric 1.20 and later.
 */
#ifndef FI_AUTH_KEY
#define FI_AUTH_KEY		(1ULL << 57)
#endif

/*
 * domain_attr->auth_key_size of libfabric 1.20 and later: the endpoints'
 * keys are the ones inserted into their AV.  xshm declines it
 * (-FI_ENODATA): an endpoint holds one key, its ep_attr->auth_key, else
 * its domain_attr->auth_key.
 */
#ifndef FI_AV_AUTH_KEY
#define FI_AV_AUTH_KEY		SIZE_MAX
#endif

struct fi_xshm_ops_av {
	size_t	size;
	int	(*insert_auth_key)(struct fid_av *av, const void *auth_key,
				   size_t auth_key_size, fi_addr_t *fi_addr,
				   uint64_t flags);
	int	(*lookup_auth_key)(struct fid_av *av, fi_addr_t fi_addr,
				   void *auth_key, size_t *auth_key_size);
	int	(*set_user_id)(struct fid_av *av, fi_addr_t fi_addr,
			       fi_addr_t user_id, uint64_t flags);
	/*
	 * For owners (fi_peer(3)), whose receives directed at an endpoint of
	 * this AV xshm never sees: 1 while the process behind fi_addr lives
	 * (or is not known yet), 0 once it is gone, -FI_EINVAL for an fi_addr
	 * of no entry.  Present when size covers it.
	 */
	int	(*peer_alive)(struct fid_av *av, fi_addr_t fi_addr);
};

static inline struct fi_xshm_ops_av *fi_xshm_av_ops(struct fid_av *av)
{
	struct fi_xshm_ops_av *ops = NULL;

	if (fi_open_ops(&av->fid, FI_XSHM_AV_OPS, 0, (void **) &ops, NULL))
		return NULL;
	return ops;
}

#if !FI_XSHM_NATIVE_AV_EXT

static inline int fi_av_insert_auth_key(struct fid_av *av, const void *auth_key,
					size_t auth_key_size, fi_addr_t *fi_addr,
					uint64_t flags)
{
	struct fi_xshm_ops_av *ops = fi_xshm_av_ops(av);

	return ops ? ops->insert_auth_key(av, auth_key, auth_key_size,
					  fi_addr, flags) : -FI_ENOSYS;
}

static inline int fi_av_lookup_auth_key(struct fid_av *av, fi_addr_t addr,
					void *auth_key, size_t *auth_key_size)
{
	struct fi_xshm_ops_av *ops = fi_xshm_av_ops(av);

	return ops ? ops->lookup_auth_key(av, addr, auth_key, auth_key_size) :
		     -FI_ENOSYS;
}

static inline int fi_av_set_user_id(struct fid_av *av, fi_addr_t fi_addr,
				    fi_addr_t user_id, uint64_t flags)
{
	struct fi_xshm_ops_av *ops = fi_xshm_av_ops(av);

	return ops ? ops->set_user_id(av, fi_addr, user_id, flags) : -FI_ENOSYS;
}

#endif

#ifdef __cplusplus
}
#endif

#endif
