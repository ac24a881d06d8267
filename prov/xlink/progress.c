/*
 * The automatic progress thread (progress.h).  It takes the domain's lock
 * like any call of the application, so a domain with automatic progress
 * always locks.  Between passes it sleeps PASS_GAP_US: an application
 * that polls still progresses at once through its own calls; one that
 * does not sees its operations move within about that time, for the cost
 * of some thousands of wake-ups a second rather than a spinning core.
 */
#include <time.h>

#include "progress.h"

#define PASS_GAP_US	50

bool xlink_progress_auto(const struct fi_info *info)
{
	return info && info->domain_attr &&
	       (info->domain_attr->data_progress == FI_PROGRESS_AUTO ||
		info->domain_attr->control_progress == FI_PROGRESS_AUTO);
}

static void *progress_thread(void *arg)
{
	struct xlink_domain *domain = arg;
	const struct timespec gap = { 0, PASS_GAP_US * 1000 };

	while (!atomic_load(&domain->progress_stop)) {
		xlink_domain_lock(domain);
		xlink_domain_progress(domain);
		xlink_domain_unlock(domain);
		nanosleep(&gap, NULL);
	}
	return NULL;
}

int xlink_progress_start(struct xlink_domain *domain)
{
	atomic_store(&domain->progress_stop, false);
	if (pthread_create(&domain->progress_thread, NULL, progress_thread, domain))
		return -FI_ENOMEM;
	domain->progress_running = true;
	return 0;
}

void xlink_progress_stop(struct xlink_domain *domain)
{
	if (!domain->progress_running)
		return;
	atomic_store(&domain->progress_stop, true);
	pthread_join(domain->progress_thread, NULL);
	domain->progress_running = false;
}
