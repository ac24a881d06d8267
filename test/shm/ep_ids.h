/*
 * Endpoint ids for the shm unit tests, and the check that a test program
 * leaves no region behind.  Every id of one run carries a tag and the
 * runner's pid, so leftovers are found (and removed) by prefix.
 */
#ifndef XSHM_TEST_SHM_EP_IDS_H
#define XSHM_TEST_SHM_EP_IDS_H

#include <check.h>
#include <stdint.h>

/* Call first in main: tag is the top 16 bits of every id of this program. */
int test_ep_ids_init(uint16_t tag);

/* A fresh endpoint id, unique across the processes the runner forks. */
uint64_t test_ep_id(void);

/*
 * Runs the suite, then, in a program that called test_ep_ids_init, fails
 * the run if a region of it is left behind.  Returns main's exit status.
 */
int test_run_suite(Suite *suite);

#endif
