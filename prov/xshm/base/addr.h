/* xshm addresses: a node id and an endpoint id, as binary or as a string. */
#ifndef XSHM_ADDR_H
#define XSHM_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define XSHM_ADDR_PREFIX	"fi_xshm://"
/* "fi_xshm://" + 16 hex + "/" + 16 hex + NUL */
#define XSHM_ADDR_LEN		44

struct xshm_addr {
	uint64_t node_id;
	uint64_t ep_id;
};

void xshm_addr_format(const struct xshm_addr *addr, char buf[XSHM_ADDR_LEN]);
int xshm_addr_parse(const char *str, size_t maxlen, struct xshm_addr *addr);
uint64_t xshm_ep_id_for_service(const char *service);
uint64_t xshm_ep_id_new(void);
/* The process that made an id of xshm_ep_id_new; 0 for a service's. */
pid_t xshm_ep_id_creator(uint64_t ep_id);
bool xshm_node_is_local(const char *node);

#endif
