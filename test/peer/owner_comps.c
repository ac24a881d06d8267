/*
 * The application's completion queue of an owner (owner.h), the same for
 * both owners: the reference one (owner.c), whose peer writes into it, and
 * xlink (owner_xlink.c), whose CQ it is read from.  Each gives its own
 * owner_progress.
 */
#include "owner.h"

#include <stdlib.h>
#include <time.h>

uint64_t owner_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

int owner_comp_push(struct owner *o, const struct owner_comp *c)
{
	if (o->comp_count == o->comp_cap) {
		size_t cap = o->comp_cap ? 2 * o->comp_cap : 64;
		struct owner_comp *n = malloc(cap * sizeof(*n));

		if (!n)
			return -FI_ENOMEM;
		for (size_t i = 0; i < o->comp_count; i++)
			n[i] = o->comps[(o->comp_head + i) % o->comp_cap];
		free(o->comps);
		o->comps = n;
		o->comp_head = 0;
		o->comp_cap = cap;
	}
	o->comps[(o->comp_head + o->comp_count) % o->comp_cap] = *c;
	o->comp_count++;
	return 0;
}

int owner_cq_read(struct owner *o, struct owner_comp *out, int timeout_ms)
{
	uint64_t end = owner_now_ms() + (uint64_t) (timeout_ms > 0 ? timeout_ms : 0);
	bool last = false;

	/* Progresses at least once, even with a timeout of 0. */
	for (;;) {
		if (o->comp_count) {
			*out = o->comps[o->comp_head];
			o->comp_head = (o->comp_head + 1) % o->comp_cap;
			o->comp_count--;
			return 0;
		}
		if (last)
			return -FI_EAGAIN;
		owner_progress(o);
		last = owner_now_ms() >= end;
	}
}

size_t owner_cq_count(const struct owner *o)
{
	return o->comp_count;
}
