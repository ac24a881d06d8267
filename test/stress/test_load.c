/*
 * Load: incast (8 senders to one receiver) and all-to-all (8 processes each
 * sending to all the others), mixed sizes across every protocol and mixed
 * tags, receives posted before the traffic or only after every send was
 * posted (so that messages arrive unexpected), taking any sender or naming
 * it.  Every message is counted and every byte checked (stress.c); the
 * counts go to the test log.
 */
#include "stress.h"

#include <stdio.h>
#include <stdlib.h>

#define NPROCS_ALLTOALL	8
#define NSENDERS_INCAST	8
#define MSGS_INCAST	60	/* from each sender */
#define MSGS_ALLTOALL	16	/* from each process to each other */

/* Only the chunked range and single copy need the lower threshold. */
static void setup(void)
{
	char value[32];

	snprintf(value, sizeof(value), "%zu", ST_SCOPY_THRESHOLD);
	st_set_env("FI_XSHM_SCOPY_THRESHOLD", value);
	/*
	 * Late receives are posted once every send is: the receivers must hold
	 * everything unexpected meanwhile (test_exhaust covers the limit).
	 */
	st_set_env("FI_XSHM_UNEXP_BYTES_MAX", "1073741824");
}

static const char *const how[] = { "posted, any source", "posted, directed",
				   "late, any source", "late, directed" };

START_TEST(incast_every_message_arrives_intact)
{
	char name[64];
	struct st_plan p = {
		.name = name, .nprocs = NSENDERS_INCAST + 1, .nmsgs = MSGS_INCAST,
		.incast = true, .directed = _i & 1, .late = _i & 2,
	};
	struct st_totals t;

	snprintf(name, sizeof(name), "incast %d->1, %s", NSENDERS_INCAST, how[_i]);
	t = st_run(&p);
	XT_ASSERT(t.msgs == (uint64_t)NSENDERS_INCAST * MSGS_INCAST, "%llu messages",
		  (unsigned long long)t.msgs);
	for (int c = 0; c < ST_NCLASSES; c++)
		XT_ASSERT(t.per_class[c] > 0, "no message of class %d", c);
}
END_TEST

START_TEST(alltoall_every_message_arrives_intact)
{
	char name[64];
	struct st_plan p = {
		.name = name, .nprocs = NPROCS_ALLTOALL, .nmsgs = MSGS_ALLTOALL,
		.directed = _i & 1, .late = _i & 2,
	};
	struct st_totals t;

	snprintf(name, sizeof(name), "all-to-all %d, %s", NPROCS_ALLTOALL, how[_i]);
	t = st_run(&p);
	XT_ASSERT(t.msgs == (uint64_t)NPROCS_ALLTOALL * (NPROCS_ALLTOALL - 1) * MSGS_ALLTOALL,
		  "%llu messages", (unsigned long long)t.msgs);
	for (int c = 0; c < ST_NCLASSES; c++)
		XT_ASSERT(t.per_class[c] > 0, "no message of class %d", c);
}
END_TEST

static Suite *load_suite(void)
{
	Suite *s = suite_create("load");
	TCase *incast = tcase_create("incast");
	TCase *a2a = tcase_create("alltoall");

	tcase_add_checked_fixture(incast, setup, NULL);
	tcase_set_timeout(incast, 90);
	tcase_add_loop_test(incast, incast_every_message_arrives_intact, 0, 4);
	suite_add_tcase(s, incast);
	tcase_add_checked_fixture(a2a, setup, NULL);
	tcase_set_timeout(a2a, 90);
	tcase_add_loop_test(a2a, alltoall_every_message_arrives_intact, 0, 4);
	suite_add_tcase(s, a2a);
	return s;
}

int main(void)
{
	return xt_run_suite(load_suite());
}
