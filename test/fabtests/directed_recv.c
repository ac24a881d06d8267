/*
 * LD_PRELOAD for fabtests: adds FI_DIRECTED_RECV to the hints of every
 * fi_getinfo that asks for messages or tagged messages.  fabtests name
 * their peer as the source of every receive but never ask for directed
 * receives, so without it a provider ignores that source (fi_msg(3)).
 * test/fabtests/survivor.sh uses it to see a server's receives, directed
 * at a client that is killed, fail.
 */
#include <dlfcn.h>
#include <rdma/fabric.h>

typedef int (*getinfo_fn)(uint32_t version, const char *node,
			  const char *service, uint64_t flags,
			  const struct fi_info *hints, struct fi_info **info);

int fi_getinfo(uint32_t version, const char *node, const char *service,
	       uint64_t flags, const struct fi_info *hints,
	       struct fi_info **info)
{
	getinfo_fn real = (getinfo_fn) dlsym(RTLD_NEXT, "fi_getinfo");
	struct fi_info *directed;
	int ret;

	if (!real)
		return -FI_ENOSYS;
	if (!hints || !(hints->caps & (FI_MSG | FI_TAGGED)))
		return real(version, node, service, flags, hints, info);
	directed = fi_dupinfo(hints);
	if (!directed)
		return -FI_ENOMEM;
	directed->caps |= FI_DIRECTED_RECV;
	ret = real(version, node, service, flags, directed, info);
	fi_freeinfo(directed);
	return ret;
}
