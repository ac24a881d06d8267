/* A lock taken only when the domain's threading model needs one. */
#ifndef XSHM_LOCK_H
#define XSHM_LOCK_H

#include <pthread.h>
#include <stdbool.h>

struct xshm_lock {
	pthread_mutex_t mutex;
	bool enabled;
};

static inline void xshm_lock_acquire(struct xshm_lock *lock)
{
	if (lock->enabled)
		pthread_mutex_lock(&lock->mutex);
}

static inline void xshm_lock_release(struct xshm_lock *lock)
{
	if (lock->enabled)
		pthread_mutex_unlock(&lock->mutex);
}

#endif
