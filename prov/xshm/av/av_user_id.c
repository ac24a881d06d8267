/*
 * User ids (FI_AV_USER_ID): the value reported as the source of a message in
 * place of the sender's index.  Opened with FI_AV_USER_ID, an AV reports
 * FI_ADDR_NOTAVAIL until fi_av_set_user_id; otherwise an insert with the
 * flag takes each id from its fi_addr array (av_insert.c).  A directed
 * receive names its source by index: it is translated into the same space,
 * since receives are matched against reported sources.
 */
#include "av/av.h"
#include "av/av_impl.h"
#include "base/lock.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "xshm/fi_xshm.h"

fi_addr_t xshm_av_default_src_id(const struct xshm_av *av, size_t index)
{
	return (av->flags & FI_AV_USER_ID) ? FI_ADDR_NOTAVAIL : index;
}

static int set_entry_user_id(struct xshm_av *av, fi_addr_t fi_addr,
			     fi_addr_t user_id)
{
	struct xshm_av_entry *entry = xshm_av_entry_of(av, fi_addr);

	if (!entry)
		return -FI_EINVAL;
	entry->src_id = user_id;
	return 0;
}

static int set_key_user_id(struct xshm_av *av, fi_addr_t handle,
			   fi_addr_t user_id)
{
	struct xshm_av_key *key = xshm_av_key_of(av, handle, NULL);

	if (!key)
		return -FI_EINVAL;
	key->user_id = user_id;
	return 0;
}

int xshm_av_set_user_id(struct fid_av *av_fid, fi_addr_t fi_addr,
			fi_addr_t user_id, uint64_t flags)
{
	struct xshm_av *av = xshm_to_av(av_fid);
	int ret;

	if (!(av->flags & FI_AV_USER_ID) || (flags & ~FI_AUTH_KEY))
		return -FI_EINVAL;
	xshm_lock_acquire(&av->domain->lock);
	ret = (flags & FI_AUTH_KEY) ? set_key_user_id(av, fi_addr, user_id) :
				      set_entry_user_id(av, fi_addr, user_id);
	xshm_lock_release(&av->domain->lock);
	return ret;
}

/* A key-restricted receive: xshm endpoints hold one key, see av_auth.c. */
static int key_recv_src(struct xshm_ep *ep, fi_addr_t *src)
{
	struct xshm_av_key *key = xshm_av_key_of(ep->av, *src, NULL);

	if (!key || key->digest != ep->auth_digest)
		return -FI_EINVAL;
	*src = FI_ADDR_UNSPEC;
	return 0;
}

int xshm_av_recv_src(struct xshm_ep *ep, fi_addr_t *src, uint64_t *ep_id,
		     uint64_t flags)
{
	struct xshm_av_entry *entry;

	if (*src == FI_ADDR_UNSPEC)
		return 0;
	if (!ep->av)
		return -FI_EINVAL;
	if (flags & FI_AUTH_KEY)
		return key_recv_src(ep, src);
	entry = xshm_av_entry_of(ep->av, *src);
	if (!entry)
		return -FI_EINVAL;
	/* No message can be reported from it, so none could match. */
	if (entry->src_id == FI_ADDR_NOTAVAIL)
		return -FI_EADDRNOTAVAIL;
	*src = entry->src_id;
	*ep_id = entry->addr.ep_id;
	return 0;
}
