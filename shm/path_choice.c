/* See path_choice.h for what is measured and why. */
#include "estimate.h"
#include "path_choice.h"

unsigned int xshm_path_class_of(size_t len, size_t min)
{
	unsigned int cls = 0;

	while (cls < XSHM_PATH_CLASSES - 1 && len > 2 * min) {
		min *= 2;
		cls++;
	}
	return cls;
}

bool xshm_path_joins_stream(struct xshm_path_stream *latest, uint64_t dest,
			    uint64_t rx_count)
{
	bool same_dest = latest->dest == dest;
	bool no_receive = latest->rx_count == rx_count;
	bool stream = same_dest && (no_receive || latest->in_run);

	*latest = (struct xshm_path_stream) {
		.dest = dest, .rx_count = rx_count,
		.in_run = same_dest && no_receive,
	};
	return stream;
}

uint64_t xshm_path_paced_ns(struct xshm_path_mark start,
			    struct xshm_path_mark latest_done,
			    struct xshm_path_mark now, bool less_other)
{
	struct xshm_path_mark from = start.ns > latest_done.ns ? start :
								 latest_done;
	uint64_t took = now.ns - from.ns;
	uint64_t other = now.other_ns - from.other_ns;

	if (!less_other)
		return took;
	return took > other ? took - other : 1;
}

void xshm_path_choice_init(struct xshm_path_choice *choice, size_t min,
			   size_t scopy_min)
{
	for (int stream = 0; stream < 2; stream++) {
		for (unsigned int i = 0; i < XSHM_PATH_CLASSES; i++) {
			struct xshm_path_class *cls = &choice->classes[stream][i];
			/* the largest message of the class, but for the last */
			size_t top = min << (i + 1);

			enum xshm_path first =
				i < XSHM_PATH_CLASSES - 1 && top <= scopy_min ?
				XSHM_PATH_BOUNCE : XSHM_PATH_SCOPY;

			*cls = (struct xshm_path_class) {
				.chosen = first, .latest = first,
				.in_stream = stream,
			};
		}
	}
}

static bool young(const struct xshm_path_class *cls, enum xshm_path path)
{
	return cls->samples[path] < XSHM_PATH_YOUNG;
}

struct xshm_path_class *xshm_path_class_for(struct xshm_path_choice *choice,
					    bool in_stream, size_t len,
					    size_t min)
{
	struct xshm_path_class *classes = choice->classes[in_stream];
	unsigned int i = xshm_path_class_of(len, min);

	if (classes[i].sends)
		return &classes[i];
	for (unsigned int below = i; below-- > 0;) {
		if (young(&classes[below], XSHM_PATH_BOUNCE) ||
		    young(&classes[below], XSHM_PATH_SCOPY))
			continue;
		if (classes[below].chosen == XSHM_PATH_SCOPY) {
			classes[i] = classes[below];
			classes[i].sends = 0;
		}
		break;
	}
	return &classes[i];
}

static enum xshm_path other_path(enum xshm_path path)
{
	return path == XSHM_PATH_BOUNCE ? XSHM_PATH_SCOPY : XSHM_PATH_BOUNCE;
}

static uint32_t probe_every(const struct xshm_path_class *cls,
			    enum xshm_path other)
{
	if (young(cls, other))
		return XSHM_PATH_PROBE_YOUNG;
	if (cls->cost[other] > 2 * (uint64_t) cls->cost[cls->chosen])
		return XSHM_PATH_PROBE_FAR;
	return XSHM_PATH_PROBE_EVERY;
}

/* Whether the class's latest pick is a probe: the last run of a period. */
static bool probes_now(const struct xshm_path_class *cls, uint32_t every)
{
	uint32_t period = every * XSHM_PATH_PROBE_RUN;
	uint32_t at = cls->sends % period;

	return at == 0 || at > period - XSHM_PATH_PROBE_RUN;
}

struct xshm_path_pick xshm_path_pick(struct xshm_path_class *cls)
{
	enum xshm_path other = other_path(cls->chosen);
	struct xshm_path_pick pick = { cls->chosen, false };
	bool changes;

	cls->sends++;
	if (!cls->settle && probes_now(cls, probe_every(cls, other)))
		pick = (struct xshm_path_pick) { other, true };
	else
		pick.timed = young(cls, cls->chosen) || cls->settle ||
			     cls->sends % XSHM_PATH_TIME_EVERY == 0;
	changes = pick.path != cls->latest;
	cls->latest = pick.path;
	if (changes)
		pick.timed = false;
	return pick;
}

static uint64_t lone_sample(uint64_t start_ns,
			    const struct xshm_timing *timing)
{
	uint64_t from = start_ns > timing->ready_ns ? start_ns :
						      timing->ready_ns;

	return timing->done_ns > from ? timing->done_ns - from : 0;
}

static uint64_t stream_sample(uint64_t sender_busy_ns, bool follows_send,
			      const struct xshm_timing *timing)
{
	uint64_t busier = timing->busy_ns > sender_busy_ns ? timing->busy_ns :
							     sender_busy_ns;
	uint64_t pace;

	if (!timing->paced_from_ns)
		return busier;
	if (!follows_send || timing->done_ns <= timing->paced_from_ns)
		return 0;
	pace = timing->done_ns - timing->paced_from_ns;
	return pace > busier ? pace : busier;
}

uint64_t xshm_path_sample(const struct xshm_path_class *cls,
			  uint64_t start_ns, uint64_t sender_busy_ns,
			  bool follows_send, const struct xshm_timing *timing)
{
	if (cls->in_stream)
		return stream_sample(sender_busy_ns, follows_send, timing);
	return lone_sample(start_ns, timing);
}

static bool any_young(const struct xshm_path_class *cls)
{
	return young(cls, XSHM_PATH_BOUNCE) || young(cls, XSHM_PATH_SCOPY);
}

/*
 * Chooses path on trial: it settles alone, measured afresh, and the
 * comparison after brings back the path it replaced if that one cost less
 * than XSHM_PATH_SWITCH_BELOW percent of it (path_choice.h).
 */
static void try_path(struct xshm_path_class *cls, enum xshm_path path)
{
	cls->chosen = path;
	cls->cost[path] = 0;
	cls->settle = XSHM_PATH_SETTLE;
}

/*
 * Whether the estimates are ready to compare, after a sample (of the chosen
 * path, while it settles): false while either path is young, and while the
 * chosen one settles (path_choice.h), which the end of the young phase
 * begins.  The first settling over, the other path is tried alone too.
 */
static bool ready_to_compare(struct xshm_path_class *cls, bool was_young)
{
	if (cls->settle) {
		if (--cls->settle)
			return false;
		if (cls->both_tried || cls->in_stream)
			return true;
		cls->both_tried = true;
		try_path(cls, other_path(cls->chosen));
		return false;
	}
	if (any_young(cls))
		return false;
	if (!was_young)
		return true;
	cls->settle = XSHM_PATH_SETTLE;
	return false;
}

void xshm_path_record(struct xshm_path_class *cls, enum xshm_path path,
		      uint64_t ns, size_t len)
{
	enum xshm_path other = other_path(cls->chosen);
	bool was_young = any_young(cls);

	if (!len || !ns)
		return;
	if (ns > XSHM_PATH_NS_MAX)
		ns = XSHM_PATH_NS_MAX;
	if (cls->samples[path] < XSHM_PATH_YOUNG)
		cls->samples[path]++;
	if (cls->samples[path] == 1)
		return;		/* the first, cold */
	if (cls->settle && path != cls->chosen)
		return;		/* a probe taken before the settling began */
	xshm_estimate_per_kib(&cls->cost[path], ns, len);
	if (!ready_to_compare(cls, was_young))
		return;
	if ((uint64_t) cls->cost[other] * 100 <
	    (uint64_t) cls->cost[cls->chosen] * XSHM_PATH_SWITCH_BELOW)
		try_path(cls, other);
}
