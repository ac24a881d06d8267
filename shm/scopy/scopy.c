/* Choosing the single-copy engine, once per process. */
#include <pthread.h>

#include "scopy.h"

static const struct xshm_scopy *const engines[] = {
	&xshm_scopy_cma,
};

static const struct xshm_scopy *selected;
static pthread_once_t select_once = PTHREAD_ONCE_INIT;

static void select_engine(void)
{
	for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
		if (!engines[i]->probe()) {
			selected = engines[i];
			return;
		}
	}
}

const struct xshm_scopy *xshm_scopy_select(void)
{
	pthread_once(&select_once, select_engine);
	return selected;
}
