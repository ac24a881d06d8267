/*
 * Regions that libfabric's shm (1.17 to 1.22) left under this process's
 * pid, removed before the process opens its first endpoint.
 */
#ifndef XT_STALE_REGIONS_H
#define XT_STALE_REGIONS_H

void xt_remove_stale_shm_regions(void);

#endif
