/*
 * The provider as libfabric sees it: its name and versions, the
 * capabilities and limits it advertises (attr.c, getinfo.c), and the
 * fi_provider every file logs through.
 */
#ifndef XSHM_PROVIDER_H
#define XSHM_PROVIDER_H

#include <rdma/fabric.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>
#include <xshm/fi_peer.h>

/*
 * Another name builds a second copy that one process can load beside this
 * one, so that benchmarks compare two builds point by point
 * (test/bench/ab.sh).
 */
#ifndef XSHM_NAME
#define XSHM_NAME		"xshm"
#endif
#define XSHM_VERSION		FI_VERSION(0, 1)
/*
 * The API versions xshm answers, the oldest and the newest it was checked
 * against (libfabric 2.6 and its fabtests, ../shared/thirdparty).
 * libfabric skips a provider whose fi_version is older than the version an
 * application asks for, so xshm declares the newest one that the libfabric
 * it is loaded into also speaks (xshm_api_version): a fixed 1.17 hid it
 * from every application built on a newer libfabric.
 */
#define XSHM_MIN_API_VERSION	FI_VERSION(1, 5)
#define XSHM_NEWEST_API_VERSION	FI_VERSION(2, 6)

#define XSHM_IOV_LIMIT		8	/* <= XSHM_RTS_IOV_MAX */
#define XSHM_INJECT_SIZE	4096
#define XSHM_MAX_MSG_SIZE	(1ULL << 30)
#define XSHM_TX_SIZE		256
#define XSHM_RX_SIZE		256

#define XSHM_DOMAIN_CAPS	(FI_LOCAL_COMM | FI_SHARED_AV)
#define XSHM_RMA_CAPS	(FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | \
			 FI_REMOTE_READ | FI_REMOTE_WRITE)
/*
 * Primary capabilities since libfabric 2.0, which owners ask of a peer
 * (libfabric 2.6's efa asks shm for both among the domain's capabilities,
 * lnx among the primary ones): the domain's capabilities always list them,
 * fi_info's caps when asked for (getinfo.c, choose_caps).
 */
#define XSHM_PEER_CAPS	(FI_PEER | FI_AV_USER_ID)
#define XSHM_CAPS	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | \
			 FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV | \
			 XSHM_RMA_CAPS | FI_RMA_EVENT | XSHM_DOMAIN_CAPS | \
			 XSHM_PEER_CAPS)
#define XSHM_TX_CAPS	(FI_MSG | FI_TAGGED | FI_SEND | FI_RMA | FI_ATOMIC | \
			 FI_READ | FI_WRITE)
#define XSHM_RX_CAPS	(FI_MSG | FI_TAGGED | FI_RECV | FI_DIRECTED_RECV | \
			 FI_SOURCE | FI_MULTI_RECV | FI_RMA | FI_ATOMIC | \
			 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RMA_EVENT)

extern struct fi_provider xshm_prov;
extern const struct fi_info xshm_info_template;

/* The newer of XSHM_MIN_API_VERSION and the loaded libfabric's, capped. */
uint32_t xshm_api_version(void);

#define XSHM_WARN(subsys, ...) FI_WARN(&xshm_prov, subsys, __VA_ARGS__)
#define XSHM_INFO(subsys, ...) FI_INFO(&xshm_prov, subsys, __VA_ARGS__)

int xshm_getinfo(uint32_t version, const char *node, const char *service,
		 uint64_t flags, const struct fi_info *hints,
		 struct fi_info **info);

#endif
