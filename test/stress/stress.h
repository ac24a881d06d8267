/*
 * Many-process traffic for the stress tests.  The libcheck process only
 * coordinates: it forks one process per rank, hands every rank the names of
 * all the others, and relays barriers.  Each rank sends its planned messages
 * and posts receives for what it expects, checking every byte.
 *
 * Message k from rank s to rank r has a size class (inline, one bounce
 * buffer, chunked, single copy), a length, a tag (class << 56 | s << 32 | k)
 * and a payload xt_fill(seed(s, r, k)) derived from sender, sequence number
 * and offset.  Receives take any message of one class (FI_ADDR_UNSPEC) or of
 * one class from one sender (directed); the tag of the completion names the
 * message, so its length, data, uniqueness and order per sender are checked.
 */
#ifndef ST_STRESS_H
#define ST_STRESS_H

#include "test/prov/harness.h"

#define ST_MAX_PROCS	16
/* Set as FI_XSHM_SCOPY_THRESHOLD: chunked up to 2 MiB, single copy above. */
#define ST_SCOPY_THRESHOLD	((size_t)2 << 20)

enum st_class { ST_INLINE, ST_BOUNCE, ST_CHUNKED, ST_SCOPY, ST_NCLASSES };

struct st_plan {
	const char *name;	/* printed with the counts */
	int nprocs;
	unsigned nmsgs;		/* from each sender to each of its receivers */
	bool incast;		/* ranks 1.. send to rank 0 only; else all to all */
	bool directed;		/* each receive names its sender */
	bool late;		/* receives posted once every send is posted */
};

struct st_totals {
	uint64_t msgs, bytes;			/* received and checked */
	uint64_t per_class[ST_NCLASSES];	/* messages received per class */
	uint64_t sent;				/* sends posted (injects included) */
};

/* Forks and runs the plan, asserts it all arrived, prints the counts. */
struct st_totals st_run(const struct st_plan *plan);

/* Before any libfabric call, so that this process and its children see it. */
void st_set_env(const char *name, const char *value);

/* Resident set of this process in bytes, from /proc/self/statm. */
size_t st_rss(void);

/* Waits up to ms for one byte on sock, failing on timeout or a closed peer. */
uint8_t st_wait_byte(int sock, int ms);

#endif
