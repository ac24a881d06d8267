/* Helpers shared by the address vector tests (test_av_*.c). */
#ifndef XT_AV_HELPERS_H
#define XT_AV_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "xshm/fi_xshm.h"

/* "fi_xshm://<node>/" of this node, taken from an endpoint's name. */
#define XT_NODE_PREFIX_LEN	27

/* A well-formed address of this node for endpoint id ep_id (need not exist). */
static inline void xt_fake_addr(const struct xt_ep *x, uint64_t ep_id,
				char out[XT_XSHM_ADDRLEN])
{
	snprintf(out, XT_XSHM_ADDRLEN, "%.*s%016llx", XT_NODE_PREFIX_LEN,
		 x->name, (unsigned long long) ep_id);
}

/* count fake addresses packed one after the other, ids base, base + 1, ... */
static inline char *xt_fake_addrs(const struct xt_ep *x, uint64_t base,
				  size_t count)
{
	char *buf = xt_alloc(count * XT_XSHM_ADDRLEN);

	for (size_t i = 0; i < count; i++)
		xt_fake_addr(x, base + i, buf + i * XT_XSHM_ADDRLEN);
	return buf;
}

static inline struct fid_av *xt_open_av(struct xt_ep *x, struct fi_av_attr attr)
{
	struct fid_av *av;

	XT_ASSERT_OK(fi_av_open(x->domain, &attr, &av, NULL));
	return av;
}

/*
 * An enabled endpoint as xt_open makes it, but bound to an AV opened with
 * av_attr (when given) and holding auth key key (when not NULL).
 */
static inline void xt_open_custom(struct xt_ep *x, const struct xt_cfg *cfg,
				  const struct fi_av_attr *av_attr,
				  const char *key)
{
	xt_open_upto(x, cfg, XT_RESOURCES);
	if (av_attr) {
		struct fi_av_attr attr = *av_attr;

		XT_ASSERT_OK(fi_close(&x->av->fid));
		x->av = NULL;
		XT_ASSERT_OK(fi_av_open(x->domain, &attr, &x->av, NULL));
	}
	if (key) {
		x->info->ep_attr->auth_key = (uint8_t *) strdup(key);
		x->info->ep_attr->auth_key_size = strlen(key);
	}
	XT_ASSERT_OK(fi_endpoint(x->domain, x->info, &x->ep, NULL));
	XT_ASSERT_OK(fi_ep_bind(x->ep, &x->av->fid, 0));
	XT_ASSERT_OK(fi_ep_bind(x->ep, &x->tx->fid->fid, FI_TRANSMIT));
	XT_ASSERT_OK(fi_ep_bind(x->ep, &x->rx->fid->fid, FI_RECV));
	xt_enable(x);
}

/* Default caps plus what source addressing needs. */
static inline struct xt_cfg xt_cfg_source(void)
{
	struct xt_cfg cfg = xt_cfg_default();

	cfg.caps |= FI_SOURCE | FI_DIRECTED_RECV;
	return cfg;
}

#endif
