/*
 * xshm addresses: "fi_xshm://<node id>/<endpoint id>", both 16 hex digits.
 * The endpoint id names the endpoint's region (shm/region.h).
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "base/addr.h"

/* Endpoint ids with this bit set come from a service number (getinfo). */
#define XSHM_EP_ID_SERVICE	(1ULL << 63)

void xshm_addr_format(const struct xshm_addr *addr, char buf[XSHM_ADDR_LEN])
{
	snprintf(buf, XSHM_ADDR_LEN, XSHM_ADDR_PREFIX "%016" PRIx64 "/%016" PRIx64,
		 addr->node_id, addr->ep_id);
}

static int parse_hex16(const char *str, uint64_t *value)
{
	uint64_t v = 0;

	for (int i = 0; i < 16; i++) {
		char c = str[i];
		int digit;

		if (c >= '0' && c <= '9')
			digit = c - '0';
		else if (c >= 'a' && c <= 'f')
			digit = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			digit = c - 'A' + 10;
		else
			return -FI_EINVAL;
		v = (v << 4) | (uint64_t) digit;
	}
	*value = v;
	return 0;
}

/* Parses exactly the canonical form; str need not be NUL-terminated past it. */
int xshm_addr_parse(const char *str, size_t maxlen, struct xshm_addr *addr)
{
	const size_t prefix = sizeof(XSHM_ADDR_PREFIX) - 1;

	if (!str || maxlen < XSHM_ADDR_LEN - 1 ||
	    strncmp(str, XSHM_ADDR_PREFIX, prefix) ||
	    str[prefix + 16] != '/' ||
	    (maxlen >= XSHM_ADDR_LEN && str[XSHM_ADDR_LEN - 1] != '\0'))
		return -FI_EINVAL;
	if (parse_hex16(str + prefix, &addr->node_id) ||
	    parse_hex16(str + prefix + 17, &addr->ep_id) || !addr->node_id)
		return -FI_EINVAL;
	return 0;
}

/*
 * A service names a well-known endpoint: its number (or, for a non-numeric
 * service, a hash of the string) becomes the endpoint id, so a client given
 * node and service computes the address without exchanging it.
 */
uint64_t xshm_ep_id_for_service(const char *service)
{
	char *end;
	unsigned long long number = strtoull(service, &end, 10);
	uint64_t hash = 1469598103934665603ULL;

	if (*service && !*end && number <= UINT32_MAX)
		return XSHM_EP_ID_SERVICE | number;
	for (const char *c = service; *c; c++)
		hash = (hash ^ (unsigned char) *c) * 1099511628211ULL;
	return XSHM_EP_ID_SERVICE | (1ULL << 32) | (hash & 0x7fffffffULL);
}

/* Unique among live processes: pid in the high bits, a counter below. */
uint64_t xshm_ep_id_new(void)
{
	static _Atomic uint32_t counter;

	return ((uint64_t) getpid() << 24) |
	       (atomic_fetch_add(&counter, 1) & 0xffffff);
}

pid_t xshm_ep_id_creator(uint64_t ep_id)
{
	return ep_id & XSHM_EP_ID_SERVICE ? 0 : (pid_t) (ep_id >> 24);
}

bool xshm_node_is_local(const char *node)
{
	char host[256];

	if (!node || !strcmp(node, "localhost") || !strncmp(node, "127.", 4) ||
	    !strcmp(node, "::1"))
		return true;
	if (!gethostname(host, sizeof(host)) && !strcmp(node, host))
		return true;
	return false;
}
