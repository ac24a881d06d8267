/*
 * Unit tests of shm/path_choice.c, fed with made-up message times: which
 * path it picks when one costs less, that it keeps probing the other,
 * follows a change, keeps lone sends and streams and size classes apart,
 * and starts from the sizes given at init; what a paced operation took;
 * and which sends join a stream.
 */
#include <check.h>
#include <stdlib.h>

#include "ep_ids.h"
#include "shm/path_choice.h"

#define KiB	1024
#define MIN	(16 * KiB)	/* the smallest size with a choice */
#define LEN	(64 * KiB)	/* bytes per made-up message */

/* ns per KiB of each path, by enum xshm_path. */
struct machine {
	uint64_t cost[2];
};

/* The single copy wins (a send buffer in the sender's cache)... */
static const struct machine pull_wins = { { 100, 60 } };
/* ... or the pipeline (a buffer just written, CPUs far apart)... */
static const struct machine bounce_wins = { { 70, 120 } };
/* ... or one of them by far (unchanged buffers, 256 KiB here). */
static const struct machine pull_wins_far = { { 120, 27 } };

/*
 * Sends after which a fresh class has compared both paths: probes of the
 * young one every other run of XSHM_PATH_PROBE_RUN, then each path
 * settling alone, with an untimed send at each change (and room to spare).
 */
#define LEARNT	(4 * XSHM_PATH_YOUNG + 4 * XSHM_PATH_SETTLE)

/*
 * A path's cost as measured in use (chosen) and in probes: probes of a path
 * left alone for a while are cold, and young ones are mixed with the other
 * path's sends.
 */
struct in_use_and_probes {
	uint64_t in_use[2];
	uint64_t probe[2];
};

/*
 * One send of LEN on m, recorded if timed: a probe at its probe cost, a
 * send on the chosen path at its cost in use.  Returns the path chosen
 * before it.
 */
static enum xshm_path send_on(struct xshm_path_class *cls,
			      const struct in_use_and_probes *m)
{
	enum xshm_path chosen = cls->chosen;
	struct xshm_path_pick pick = xshm_path_pick(cls);
	uint64_t per_kib = pick.path != chosen ? m->probe[pick.path] :
						 m->in_use[pick.path];

	if (pick.timed)
		xshm_path_record(cls, pick.path, per_kib * LEN / KiB, LEN);
	return chosen;
}

/* n sends of len on m: how many took each path; every timed one is recorded. */
static void run(struct xshm_path_class *cls, const struct machine *m, int n,
		size_t len, int picked[2])
{
	picked[0] = picked[1] = 0;
	for (int i = 0; i < n; i++) {
		struct xshm_path_pick pick = xshm_path_pick(cls);

		picked[pick.path]++;
		if (pick.timed)
			xshm_path_record(cls, pick.path,
					 m->cost[pick.path] * len / KiB, len);
	}
}

static struct xshm_path_class *fresh(struct xshm_path_choice *c, size_t len)
{
	xshm_path_choice_init(c, MIN, 4096 * KiB);
	return &c->classes[0][xshm_path_class_of(len, MIN)];
}

/*
 * What xshm_path_paced_ns makes of marks (time, the other way's copies so
 * far) at an operation's start, its way's latest completion and now.
 */
static const struct paced_case {
	const char *what;
	struct xshm_path_mark start, latest_done, now;
	bool less_other;
	uint64_t want;
} paced_cases[] = {
	{ "alone: from its start", { 1000, 0 }, { 400, 0 }, { 1700, 0 }, false, 700 },
	{ "in a stream: from the latest completion", { 1000, 0 }, { 1500, 0 },
	  { 1700, 0 }, false, 200 },
	{ "alone, the copies since its start left out", { 1000, 50 }, { 400, 0 },
	  { 1700, 350 }, true, 400 },
	{ "in a stream, the copies since that completion left out", { 1000, 50 },
	  { 1500, 250 }, { 1700, 350 }, true, 100 },
	{ "the copies kept where not asked", { 1000, 50 }, { 1500, 250 },
	  { 1700, 350 }, false, 200 },
	{ "copies filling the time leave 1 ns", { 1000, 0 }, { 0, 0 },
	  { 1700, 700 }, true, 1 },
	{ "copies past the time leave 1 ns", { 1000, 0 }, { 0, 0 },
	  { 1700, 900 }, true, 1 },
};

START_TEST(a_paced_operation_counts_from_the_later_mark_less_the_other_way)
{
	const struct paced_case *c = &paced_cases[_i];

	ck_assert_msg(xshm_path_paced_ns(c->start, c->latest_done, c->now,
					 c->less_other) == c->want,
		      "%s", c->what);
}
END_TEST

/* A sender that has sent nothing large yet. */
static struct xshm_path_stream no_send_yet(void)
{
	return (struct xshm_path_stream) { .dest = XSHM_PATH_NO_DEST };
}

/* Each send answered before the next: its receive count grows by one. */
START_TEST(a_ping_pong_stands_alone)
{
	struct xshm_path_stream latest = no_send_yet();

	for (uint64_t received = 0; received < 8; received++)
		ck_assert(!xshm_path_joins_stream(&latest, 1, received));
}
END_TEST

START_TEST(sends_to_alternating_receivers_stand_alone)
{
	struct xshm_path_stream latest = no_send_yet();

	for (uint64_t i = 0; i < 8; i++)
		ck_assert(!xshm_path_joins_stream(&latest, i % 2, 0));
}
END_TEST

/* Windows of 4 sends, each answered once by the receiver. */
START_TEST(windows_answered_by_their_receiver_are_one_stream)
{
	struct xshm_path_stream latest = no_send_yet();

	for (uint64_t window = 0; window < 3; window++)
		for (int i = 0; i < 4; i++)
			ck_assert_int_eq(xshm_path_joins_stream(&latest, 1,
								window),
					 window > 0 || i > 0);
}
END_TEST

START_TEST(a_ping_pong_after_a_stream_stands_alone_from_its_second_send)
{
	struct xshm_path_stream latest = no_send_yet();

	ck_assert(!xshm_path_joins_stream(&latest, 1, 0));
	ck_assert(xshm_path_joins_stream(&latest, 1, 0));
	ck_assert(xshm_path_joins_stream(&latest, 1, 1));
	ck_assert(!xshm_path_joins_stream(&latest, 1, 2));
	ck_assert(!xshm_path_joins_stream(&latest, 1, 3));
}
END_TEST

START_TEST(another_receiver_ends_a_stream)
{
	struct xshm_path_stream latest = no_send_yet();

	ck_assert(!xshm_path_joins_stream(&latest, 1, 0));
	ck_assert(xshm_path_joins_stream(&latest, 1, 0));
	ck_assert(!xshm_path_joins_stream(&latest, 2, 1));
	ck_assert(!xshm_path_joins_stream(&latest, 1, 2));
}
END_TEST

START_TEST(classes_double_from_the_minimum_and_the_last_is_open)
{
	ck_assert_uint_eq(xshm_path_class_of(MIN + 1, MIN), 0);
	ck_assert_uint_eq(xshm_path_class_of(2 * MIN, MIN), 0);
	ck_assert_uint_eq(xshm_path_class_of(2 * MIN + 1, MIN), 1);
	ck_assert_uint_eq(xshm_path_class_of(4 * MIN, MIN), 1);
	ck_assert_uint_eq(xshm_path_class_of((size_t) 1 << 40, MIN),
			  XSHM_PATH_CLASSES - 1);
}
END_TEST

START_TEST(init_starts_from_the_static_threshold)
{
	struct xshm_path_choice c;

	xshm_path_choice_init(&c, MIN, 4096 * KiB);
	for (int stream = 0; stream < 2; stream++) {
		/* 16-32 KiB up to 2-4 MiB bounce; 4-8 MiB up pull */
		ck_assert_int_eq(c.classes[stream][0].chosen, XSHM_PATH_BOUNCE);
		ck_assert_int_eq(c.classes[stream][7].chosen, XSHM_PATH_BOUNCE);
		ck_assert_int_eq(c.classes[stream][8].chosen, XSHM_PATH_SCOPY);
		ck_assert_int_eq(c.classes[stream][XSHM_PATH_CLASSES - 1].chosen,
				 XSHM_PATH_SCOPY);
		ck_assert_uint_eq(c.classes[stream][0].cost[0], 0);
		ck_assert_uint_eq(c.classes[stream][0].sends, 0);
	}
}
END_TEST

/* Each path in turn, a run at a time, the first send of a run untimed. */
START_TEST(a_fresh_class_times_both_paths_first)
{
	struct xshm_path_choice c;
	struct xshm_path_class *cls = fresh(&c, LEN);

	for (int i = 0; i < XSHM_PATH_PROBE_RUN; i++) {
		struct xshm_path_pick pick = xshm_path_pick(cls);

		ck_assert_int_eq(pick.path, XSHM_PATH_BOUNCE);
		ck_assert(pick.timed);
	}
	for (int i = 0; i < XSHM_PATH_PROBE_RUN; i++) {
		struct xshm_path_pick pick = xshm_path_pick(cls);

		ck_assert_int_eq(pick.path, XSHM_PATH_SCOPY);
		ck_assert_int_eq(pick.timed, i > 0);
	}
}
END_TEST

/* Until reports come, the young path is probed every other send only. */
START_TEST(reports_late_in_a_stream_probe_every_other_send)
{
	struct xshm_path_choice c;
	struct xshm_path_class *cls = fresh(&c, LEN);
	int other = 0;

	for (int i = 0; i < 64; i++)
		other += xshm_path_pick(cls).path == XSHM_PATH_SCOPY;
	ck_assert_int_eq(other, 64 / XSHM_PATH_PROBE_YOUNG);
}
END_TEST

START_TEST(the_cheaper_single_copy_is_chosen_and_the_pipeline_probed)
{
	struct xshm_path_choice c;
	struct xshm_path_class *cls = fresh(&c, LEN);
	int picked[2];

	run(cls, &pull_wins, LEARNT, LEN, picked);
	ck_assert_int_eq(cls->chosen, XSHM_PATH_SCOPY);
	run(cls, &pull_wins, 1024, LEN, picked);
	ck_assert_int_eq(cls->chosen, XSHM_PATH_SCOPY);
	ck_assert_int_eq(picked[XSHM_PATH_BOUNCE], 1024 / XSHM_PATH_PROBE_EVERY);
}
END_TEST

/*
 * The longest run of consecutive picks of path among n picks of cls, whose
 * every pick but a run's first is timed.
 */
static int longest_run(struct xshm_path_class *cls, enum xshm_path path, int n,
		       int *total)
{
	int run = 0, longest = 0;

	*total = 0;
	for (int i = 0; i < n; i++) {
		struct xshm_path_pick pick = xshm_path_pick(cls);

		run = pick.path == path ? run + 1 : 0;
		*total += pick.path == path;
		longest = run > longest ? run : longest;
		if (pick.path == path)
			ck_assert_int_eq(pick.timed, run > 1);
	}
	return longest;
}

/* Young paths are probed in turn, XSHM_PATH_PROBE_RUN (4) at a time. */
START_TEST(young_probes_in_runs_alternate_by_runs)
{
	struct xshm_path_choice c;
	struct xshm_path_class *cls;
	int total;

	xshm_path_choice_init(&c, MIN, 4096 * KiB);
	cls = &c.classes[0][xshm_path_class_of(LEN, MIN)];
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(xshm_path_pick(cls).path, XSHM_PATH_BOUNCE);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(xshm_path_pick(cls).path, XSHM_PATH_SCOPY);
	ck_assert_int_eq(longest_run(cls, XSHM_PATH_SCOPY, 56, &total), 4);
	ck_assert_int_eq(total, 28);
}
END_TEST

/* A grown class probes as often in runs as one at a time. */
START_TEST(probes_in_runs_keep_their_share)
{
	struct xshm_path_choice c;
	struct xshm_path_class *cls;
	int picked[2], total;

	xshm_path_choice_init(&c, MIN, 4096 * KiB);
	cls = &c.classes[0][xshm_path_class_of(LEN, MIN)];
	run(cls, &pull_wins, 4 * 4 * XSHM_PATH_YOUNG, LEN, picked);
	ck_assert_int_eq(cls->chosen, XSHM_PATH_SCOPY);
	ck_assert_int_eq(longest_run(cls, XSHM_PATH_BOUNCE,
				     4 * 4 * XSHM_PATH_PROBE_EVERY, &total), 4);
	ck_assert_int_eq(total, 4 * 4);
	ck_assert_int_eq(cls->chosen, XSHM_PATH_SCOPY);
}
END_TEST

START_TEST(the_cheaper_pipeline_is_kept_above_the_static_threshold_too)
{
	struct xshm_path_choice c;
	size_t len = 8192 * KiB;
	struct xshm_path_class *cls = fresh(&c, len);
	int picked[2];

	ck_assert_int_eq(cls->chosen, XSHM_PATH_SCOPY);
	run(cls, &bounce_wins, 640, len, picked);
	ck_assert_int_eq(cls->chosen, XSHM_PATH_BOUNCE);
	ck_assert_int_le(picked[XSHM_PATH_SCOPY], 640 / XSHM_PATH_PROBE_EVERY + 8 +
			 XSHM_PATH_SETTLE);
}
END_TEST

/* A path twice as dear as the chosen one is probed rarely. */
START_TEST(a_path_far_behind_is_probed_rarely)
{
	struct xshm_path_choice c;
	struct xshm_path_class *cls = fresh(&c, LEN);
	int picked[2];

	run(cls, &pull_wins_far, 64, LEN, picked);
	ck_assert_int_eq(cls->chosen, XSHM_PATH_SCOPY);
	run(cls, &pull_wins_far, 4096, LEN, picked);
	ck_assert_int_eq(picked[XSHM_PATH_BOUNCE], 4096 / XSHM_PATH_PROBE_FAR);
}
END_TEST

/* A first sample is cold: 4 ms for a first single copy that takes 7 us after. */
START_TEST(the_first_sample_of_each_path_is_dropped)
{
	struct xshm_path_choice c;
	struct xshm_path_class *cls = fresh(&c, LEN);

	xshm_path_record(cls, XSHM_PATH_SCOPY, 4000 * 1000, LEN);
	ck_assert_uint_eq(cls->cost[XSHM_PATH_SCOPY], 0);
	xshm_path_record(cls, XSHM_PATH_SCOPY, 7000, LEN);
	ck_assert_uint_eq(cls->cost[XSHM_PATH_SCOPY], 7000 * KiB / LEN);
}
END_TEST

START_TEST(a_fresh_class_starts_from_the_single_copy_chosen_below)
{
	struct xshm_path_choice c;
	struct xshm_path_class *small, *large, *stream, *larger;
	int picked[2];

	xshm_path_choice_init(&c, MIN, 4096 * KiB);
	small = xshm_path_class_for(&c, false, 32 * KiB, MIN);
	/* nothing measured below: the static choice */
	ck_assert_int_eq(xshm_path_class_for(&c, false, 256 * KiB, MIN)->chosen,
			 XSHM_PATH_BOUNCE);
	run(small, &pull_wins, 64, 32 * KiB, picked);
	ck_assert_int_eq(small->chosen, XSHM_PATH_SCOPY);
	large = xshm_path_class_for(&c, false, 1024 * KiB, MIN);
	ck_assert_int_eq(large->chosen, XSHM_PATH_SCOPY);
	/* with the estimates: no young probing */
	ck_assert_uint_eq(large->cost[XSHM_PATH_BOUNCE], small->cost[XSHM_PATH_BOUNCE]);
	ck_assert_uint_eq(large->cost[XSHM_PATH_SCOPY], small->cost[XSHM_PATH_SCOPY]);
	ck_assert_uint_eq(large->sends, 0);
	ck_assert_int_eq(xshm_path_pick(large).path, XSHM_PATH_SCOPY);
	ck_assert_int_eq(xshm_path_pick(large).path, XSHM_PATH_SCOPY);
	/* a stream's classes are apart */
	stream = xshm_path_class_for(&c, true, 1024 * KiB, MIN);
	ck_assert_int_eq(stream->chosen, XSHM_PATH_BOUNCE);
	/* a class that measured the pipeline cheaper passes nothing on */
	run(large, &bounce_wins, 640, 1024 * KiB, picked);
	ck_assert_int_eq(large->chosen, XSHM_PATH_BOUNCE);
	larger = xshm_path_class_for(&c, false, 2048 * KiB, MIN);
	ck_assert_int_eq(larger->chosen, XSHM_PATH_BOUNCE);
	/* a class that has sent keeps its own */
	run(small, &bounce_wins, 640, 32 * KiB, picked);
	large = xshm_path_class_for(&c, false, 1024 * KiB, MIN);
	ck_assert_int_eq(large->chosen, XSHM_PATH_BOUNCE);
}
END_TEST

/* A lone send: from its start, or the receiver's readiness, to its completion. */
START_TEST(a_lone_send_is_timed_to_its_completion)
{
	struct xshm_path_choice c;
	struct xshm_path_class *lone;
	struct xshm_timing t = { .ready_ns = 900, .done_ns = 5000, .busy_ns = 700 };

	xshm_path_choice_init(&c, MIN, 4096 * KiB);
	lone = xshm_path_class_for(&c, false, 64 * KiB, MIN);
	ck_assert_uint_eq(xshm_path_sample(lone, 1000, 300, false, &t), 4000);
	/* its receive posted late */
	ck_assert_uint_eq(xshm_path_sample(lone, 500, 300, false, &t), 4100);
	/* clocks that disagree say nothing */
	ck_assert_uint_eq(xshm_path_sample(lone, 6000, 300, false, &t), 0);
	/* no pace for a lone send */
	t.paced_from_ns = 4000;
	ck_assert_uint_eq(xshm_path_sample(lone, 1000, 300, true, &t), 4000);
}
END_TEST

/*
 * A send in one stream, following the sender's previous message with
 * nothing between: by its pace, the time since the receiver completed
 * that message, and at least its busier side's copies.
 */
START_TEST(a_send_in_one_stream_is_timed_by_its_pace)
{
	struct xshm_path_choice c;
	struct xshm_path_class *stream;
	struct xshm_timing t = { .ready_ns = 900, .done_ns = 5000,
				 .busy_ns = 700, .paced_from_ns = 2000 };

	xshm_path_choice_init(&c, MIN, 4096 * KiB);
	stream = xshm_path_class_for(&c, true, 64 * KiB, MIN);
	ck_assert_uint_eq(xshm_path_sample(stream, 1000, 300, true, &t), 3000);
	ck_assert_uint_eq(xshm_path_sample(stream, 1000, 3400, true, &t), 3400);
	t.busy_ns = 3500;
	ck_assert_uint_eq(xshm_path_sample(stream, 1000, 300, true, &t), 3500);
	/* a receive between the two: the pace includes waiting for it */
	ck_assert_uint_eq(xshm_path_sample(stream, 1000, 300, false, &t), 0);
	/* clocks that disagree say nothing */
	t.paced_from_ns = 6000;
	ck_assert_uint_eq(xshm_path_sample(stream, 1000, 300, true, &t), 0);
}
END_TEST

/*
 * Another sender's message came between (paced_from_ns 0): by its busier
 * side's copies, not by the time between completions.  4 senders of
 * 256 KiB into one receiver: chunks of bounce buffers interleave, so
 * messages complete in bursts, and the time between completions, short
 * for most, made the bounce buffers look cheaper than they are.  The
 * receiver's copies alone made them look cheap at 64 KiB, where their
 * senders took twice as long to fill them.
 */
START_TEST(a_send_among_other_senders_is_timed_by_its_busier_side)
{
	struct xshm_path_choice c;
	struct xshm_path_class *stream;
	struct xshm_timing t = { .ready_ns = 900, .done_ns = 5000, .busy_ns = 700 };

	xshm_path_choice_init(&c, MIN, 4096 * KiB);
	stream = xshm_path_class_for(&c, true, 64 * KiB, MIN);
	ck_assert_uint_eq(xshm_path_sample(stream, 1000, 300, true, &t), 700);
	ck_assert_uint_eq(xshm_path_sample(stream, 1000, 1400, false, &t), 1400);
	xshm_path_record(stream, XSHM_PATH_SCOPY, 0, 64 * KiB);
	ck_assert_uint_eq(stream->samples[XSHM_PATH_SCOPY], 0);
}
END_TEST

/*
 * One stream of messages per path, as the timings of 1 MiB sends came on
 * this machine with the send buffer written before each send (-W), in us:
 * the bounce buffers' sender copied 130 and its receiver 70, but a message
 * completed every 300; the single copy's receiver copied 150, one every
 * 160.  By their busier sides the bounce buffers cost less; by their pace
 * the single copy does.
 */
struct stream_timing {
	uint64_t sender_busy_ns, receiver_busy_ns, pace_ns;
};

static const struct stream_timing written_stream[2] = {
	[XSHM_PATH_BOUNCE] = { 130000, 70000, 300000 },
	[XSHM_PATH_SCOPY] = { 0, 150000, 160000 },
};

START_TEST(a_stream_of_written_buffers_chooses_by_its_pace)
{
	struct xshm_path_choice c;
	size_t len = 1024 * KiB;
	struct xshm_path_class *stream;
	uint64_t done = 1000;

	xshm_path_choice_init(&c, MIN, 4096 * KiB);
	stream = xshm_path_class_for(&c, true, len, MIN);
	stream->chosen = stream->latest = XSHM_PATH_BOUNCE;
	for (int i = 0; i < 640; i++) {
		struct xshm_path_pick pick = xshm_path_pick(stream);
		const struct stream_timing *m = &written_stream[pick.path];
		struct xshm_timing t = {
			.busy_ns = m->receiver_busy_ns, .paced_from_ns = done,
			.done_ns = done + m->pace_ns,
		};

		done = t.done_ns;
		if (pick.timed)
			xshm_path_record(stream, pick.path,
					 xshm_path_sample(stream, 0,
							  m->sender_busy_ns,
							  true, &t), len);
	}
	ck_assert_int_eq(stream->chosen, XSHM_PATH_SCOPY);
}
END_TEST

/*
 * In a stream, probes come XSHM_PATH_PROBE_RUN in a row, and a send that
 * changes path is not timed: its pace is partly its predecessor's.
 */
START_TEST(a_stream_probes_in_runs_and_times_no_change_of_path)
{
	struct xshm_path_choice c;
	struct xshm_path_class *stream;
	enum xshm_path latest;

	xshm_path_choice_init(&c, MIN, 4096 * KiB);
	stream = xshm_path_class_for(&c, true, LEN, MIN);
	latest = stream->chosen;
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 2 * XSHM_PATH_PROBE_RUN; i++) {
			struct xshm_path_pick pick = xshm_path_pick(stream);
			bool probe = i >= XSHM_PATH_PROBE_RUN;

			ck_assert_int_eq(pick.path == stream->chosen, !probe);
			ck_assert_int_eq(pick.timed, pick.path == latest);
			latest = pick.path;
		}
	}
}
END_TEST

START_TEST(absurd_times_are_bounded)
{
	struct xshm_path_choice c;
	struct xshm_path_class *stream;

	xshm_path_choice_init(&c, MIN, 4096 * KiB);
	stream = xshm_path_class_for(&c, true, 64 * KiB, MIN);
	for (int i = 0; i < 3; i++)
		xshm_path_record(stream, XSHM_PATH_SCOPY, UINT64_MAX, 64 * KiB);
	/* not wrapped round to a small cost */
	ck_assert_uint_eq(stream->cost[XSHM_PATH_SCOPY], UINT32_MAX / 4);
}
END_TEST

/* Buffers unchanged, then written before each send, then unchanged again. */
START_TEST(a_change_of_buffer_state_is_followed)
{
	struct xshm_path_choice c;
	struct xshm_path_class *cls = fresh(&c, LEN);
	int picked[2];

	run(cls, &pull_wins, 640, LEN, picked);
	ck_assert_int_eq(cls->chosen, XSHM_PATH_SCOPY);
	run(cls, &bounce_wins, 640, LEN, picked);
	ck_assert_int_eq(cls->chosen, XSHM_PATH_BOUNCE);
	run(cls, &pull_wins, 640, LEN, picked);
	ck_assert_int_eq(cls->chosen, XSHM_PATH_SCOPY);
}
END_TEST

/*
 * Within XSHM_PATH_SWITCH_BELOW percent the choice stays where it is: the
 * single copy, tried alone in the first decision, keeps the class.
 */
START_TEST(near_equal_paths_do_not_flap)
{
	struct xshm_path_choice c;
	struct xshm_path_class *cls = fresh(&c, LEN);
	const struct machine equal = { { 100, 95 } };
	int picked[2];

	run(cls, &equal, LEARNT, LEN, picked);
	ck_assert_int_eq(cls->chosen, XSHM_PATH_SCOPY);
	run(cls, &equal, 640, LEN, picked);
	ck_assert_int_eq(cls->chosen, XSHM_PATH_SCOPY);
	ck_assert_int_le(picked[XSHM_PATH_BOUNCE],
			 640 / XSHM_PATH_PROBE_EVERY + XSHM_PATH_PROBE_RUN);
}
END_TEST

START_TEST(one_slow_probe_does_not_switch)
{
	struct xshm_path_choice c;
	struct xshm_path_class *cls = fresh(&c, LEN);
	int picked[2];

	run(cls, &pull_wins, 640, LEN, picked);
	xshm_path_record(cls, XSHM_PATH_SCOPY, 100 * 1000 * 1000, LEN);
	ck_assert_int_eq(cls->chosen, XSHM_PATH_SCOPY);
}
END_TEST

/* Records n samples of path, in ns per KiB: none may leave the pipeline. */
static void record_warming(struct xshm_path_class *cls, enum xshm_path path,
			   const uint32_t *ns_per_kib, int n)
{
	for (int i = 0; i < n; i++) {
		xshm_path_record(cls, path, (uint64_t) ns_per_kib[i] * LEN / KiB,
				 LEN);
		ck_assert_int_eq(cls->chosen, XSHM_PATH_BOUNCE);
	}
}

/*
 * A ping-pong of 64 KiB as measured here: the pipeline's samples fall as
 * its buffers warm while the single copy's stay near 168 ns per KiB.
 * Compared before the pipeline had warmed, the single copy won.
 */
START_TEST(warming_samples_do_not_switch)
{
	static const uint32_t bounce_cold[] = { 17500, 62000, 830, 190 };
	static const uint32_t scopy[] = { 216, 198, 298, 168, 165, 168 };
	static const uint32_t bounce_warm[] = { 120, 118, 121 };
	struct xshm_path_choice c;
	struct xshm_path_class *cls = fresh(&c, LEN);

	ck_assert_int_eq(cls->chosen, XSHM_PATH_BOUNCE);
	record_warming(cls, XSHM_PATH_BOUNCE, bounce_cold, 4);
	record_warming(cls, XSHM_PATH_SCOPY, scopy, 6);
	record_warming(cls, XSHM_PATH_BOUNCE, bounce_warm, 3);
	ck_assert_uint_lt(cls->cost[XSHM_PATH_BOUNCE], cls->cost[XSHM_PATH_SCOPY]);
}
END_TEST

/*
 * One settling of the chosen path at per_kib ns per KiB: every send on it,
 * none a probe, all timed but the first after a change of path.
 */
static void settle(struct xshm_path_class *cls, uint64_t per_kib)
{
	enum xshm_path path = cls->chosen;
	int untimed = 0;

	ck_assert_uint_eq(cls->settle, XSHM_PATH_SETTLE);
	for (int sends = 0; cls->settle && cls->chosen == path; sends++) {
		struct xshm_path_pick pick = xshm_path_pick(cls);

		ck_assert_int_lt(sends, XSHM_PATH_SETTLE + 1);
		ck_assert_int_eq(pick.path, path);
		untimed += !pick.timed;
		if (pick.timed)
			xshm_path_record(cls, pick.path, per_kib * LEN / KiB,
					 LEN);
	}
	ck_assert_int_le(untimed, 1);
	ck_assert_uint_eq(cls->cost[path], per_kib);
}

/*
 * Young samples are mixed: here the pipeline's 146 ns per KiB while the
 * single copy was probed in turn, 65 once alone.  So the first decision
 * is made on each path settled alone, every send timed and none a probe:
 * the chosen pipeline at 65, then the single copy on trial at 125, which
 * gives the class back to the pipeline.
 */
START_TEST(each_path_settles_alone_before_the_first_comparison)
{
	struct xshm_path_choice c;
	struct xshm_path_class *cls = fresh(&c, LEN);
	int sends = 0;

	while (cls->samples[XSHM_PATH_BOUNCE] < XSHM_PATH_YOUNG ||
	       cls->samples[XSHM_PATH_SCOPY] < XSHM_PATH_YOUNG) {
		struct xshm_path_pick pick = xshm_path_pick(cls);
		uint64_t per_kib = pick.path == XSHM_PATH_BOUNCE ? 146 : 125;

		ck_assert_int_lt(++sends, LEARNT);
		if (pick.timed)
			xshm_path_record(cls, pick.path, per_kib * LEN / KiB,
					 LEN);
	}
	ck_assert_int_eq(cls->chosen, XSHM_PATH_BOUNCE);
	settle(cls, 65);
	ck_assert_int_eq(cls->chosen, XSHM_PATH_SCOPY);
	settle(cls, 125);
	ck_assert_int_eq(cls->chosen, XSHM_PATH_BOUNCE);
	ck_assert_uint_eq(cls->cost[XSHM_PATH_BOUNCE], 0);	/* on trial */
}
END_TEST

/*
 * RMA reads of 32 KiB as measured here: the target's answers through the
 * ring took 2 us in use, 8.6 to 11.7 as probes among single copies
 * (4.3 us); the single copy, chosen first, kept every run of one minute.
 * Tried alone in the first decision, the ring wins the class.
 */
START_TEST(a_path_that_probes_cold_wins_when_tried_alone)
{
	static const struct in_use_and_probes m = { { 62, 134 }, { 300, 134 } };
	struct xshm_path_choice c;
	struct xshm_path_class *cls;
	int bounce_chosen = 0;

	xshm_path_choice_init(&c, MIN, MIN);
	cls = &c.classes[0][xshm_path_class_of(LEN, MIN)];
	ck_assert_int_eq(cls->chosen, XSHM_PATH_SCOPY);
	for (int i = 0; i < 1024; i++)
		bounce_chosen += send_on(cls, &m) == XSHM_PATH_BOUNCE &&
				 i >= LEARNT;
	ck_assert_int_eq(bounce_chosen, 1024 - LEARNT);
}
END_TEST

/*
 * Here the single copy's young samples and probes say 125 ns per KiB
 * against the pipeline's 140, but in use it costs 168; the pipeline's
 * probes, cold once the single copy is chosen, say 300.  Switched on its
 * probes' word, the single copy kept the class for good.  Chosen on trial,
 * it is measured alone and given up, tried again at most once a probe
 * period while its probes keep saying less than it costs.
 */
START_TEST(a_switch_that_costs_more_in_use_is_undone)
{
	static const struct in_use_and_probes m = { { 140, 168 }, { 300, 125 } };
	const int period = XSHM_PATH_PROBE_EVERY * XSHM_PATH_PROBE_RUN;
	const int sends = 4 * period;
	struct xshm_path_choice c;
	struct xshm_path_class *cls = fresh(&c, LEN);
	int scopy_chosen = 0, trials = 0;

	for (int i = 0; i < sends; i++) {
		enum xshm_path chosen = send_on(cls, &m);

		scopy_chosen += chosen == XSHM_PATH_SCOPY;
		trials += cls->chosen != chosen && cls->chosen == XSHM_PATH_SCOPY;
	}
	ck_assert_int_ge(trials, 1);
	ck_assert_int_le(trials, sends / period + 1);
	ck_assert_int_le(scopy_chosen, trials * (XSHM_PATH_SETTLE + 2));
}
END_TEST

START_TEST(classes_and_streams_choose_apart)
{
	struct xshm_path_choice c;
	struct xshm_path_class *small, *large, *stream;
	int picked[2];

	xshm_path_choice_init(&c, MIN, 4096 * KiB);
	small = &c.classes[0][xshm_path_class_of(32 * KiB, MIN)];
	large = &c.classes[0][xshm_path_class_of(1024 * KiB, MIN)];
	stream = &c.classes[1][xshm_path_class_of(32 * KiB, MIN)];
	run(small, &bounce_wins, 320, 32 * KiB, picked);
	run(large, &pull_wins, 320, 1024 * KiB, picked);
	run(stream, &pull_wins, 320, 32 * KiB, picked);
	ck_assert_int_eq(small->chosen, XSHM_PATH_BOUNCE);
	ck_assert_int_eq(large->chosen, XSHM_PATH_SCOPY);
	ck_assert_int_eq(stream->chosen, XSHM_PATH_SCOPY);
}
END_TEST

/*
 * One in XSHM_PATH_TIME_EVERY sends on the chosen path is timed, and every
 * probe but the first of its run.
 */
START_TEST(timed_sends_are_spaced)
{
	struct xshm_path_choice c;
	struct xshm_path_class *cls = fresh(&c, LEN);
	enum xshm_path latest;
	int picked[2], probes = 0;

	run(cls, &pull_wins, 64, LEN, picked);
	latest = cls->latest;
	for (int i = 0; i < 1024; i++) {
		struct xshm_path_pick pick = xshm_path_pick(cls);
		bool probe = pick.path != cls->chosen;

		probes += probe;
		if (probe)
			ck_assert_int_eq(pick.timed, pick.path == latest);
		else
			ck_assert_int_eq(pick.timed,
					 pick.path == latest &&
					 cls->sends % XSHM_PATH_TIME_EVERY == 0);
		latest = pick.path;
	}
	ck_assert_int_eq(probes, 1024 / XSHM_PATH_PROBE_EVERY);
}
END_TEST

START_TEST(empty_and_huge_times_are_harmless)
{
	struct xshm_path_choice c;
	struct xshm_path_class *cls = fresh(&c, LEN);
	int picked[2];

	xshm_path_record(cls, XSHM_PATH_SCOPY, 12345, 0);
	xshm_path_record(cls, XSHM_PATH_SCOPY, 12345, 0);
	ck_assert_uint_eq(cls->cost[XSHM_PATH_SCOPY], 0);
	ck_assert_uint_eq(cls->samples[XSHM_PATH_SCOPY], 0);
	xshm_path_record(cls, XSHM_PATH_SCOPY, UINT64_MAX / 2048, 1);
	xshm_path_record(cls, XSHM_PATH_SCOPY, UINT64_MAX / 2048, 1);
	ck_assert_uint_gt(cls->cost[XSHM_PATH_SCOPY], 0);
	run(cls, &bounce_wins, 640, LEN, picked);
	ck_assert_int_eq(cls->chosen, XSHM_PATH_BOUNCE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("path_choice");
	TCase *tc = tcase_create("path_choice");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, classes_double_from_the_minimum_and_the_last_is_open);
	tcase_add_test(tc, init_starts_from_the_static_threshold);
	tcase_add_test(tc, a_fresh_class_times_both_paths_first);
	tcase_add_test(tc, reports_late_in_a_stream_probe_every_other_send);
	tcase_add_test(tc, the_cheaper_single_copy_is_chosen_and_the_pipeline_probed);
	tcase_add_test(tc, young_probes_in_runs_alternate_by_runs);
	tcase_add_test(tc, probes_in_runs_keep_their_share);
	tcase_add_test(tc, the_cheaper_pipeline_is_kept_above_the_static_threshold_too);
	tcase_add_test(tc, a_path_far_behind_is_probed_rarely);
	tcase_add_test(tc, the_first_sample_of_each_path_is_dropped);
	tcase_add_test(tc, a_fresh_class_starts_from_the_single_copy_chosen_below);
	tcase_add_test(tc, a_lone_send_is_timed_to_its_completion);
	tcase_add_test(tc, a_send_in_one_stream_is_timed_by_its_pace);
	tcase_add_test(tc, a_send_among_other_senders_is_timed_by_its_busier_side);
	tcase_add_test(tc, a_stream_of_written_buffers_chooses_by_its_pace);
	tcase_add_test(tc, a_stream_probes_in_runs_and_times_no_change_of_path);
	tcase_add_test(tc, absurd_times_are_bounded);
	tcase_add_test(tc, a_change_of_buffer_state_is_followed);
	tcase_add_test(tc, near_equal_paths_do_not_flap);
	tcase_add_test(tc, one_slow_probe_does_not_switch);
	tcase_add_test(tc, warming_samples_do_not_switch);
	tcase_add_test(tc, each_path_settles_alone_before_the_first_comparison);
	tcase_add_test(tc, a_path_that_probes_cold_wins_when_tried_alone);
	tcase_add_test(tc, a_switch_that_costs_more_in_use_is_undone);
	tcase_add_test(tc, classes_and_streams_choose_apart);
	tcase_add_test(tc, timed_sends_are_spaced);
	tcase_add_test(tc, empty_and_huge_times_are_harmless);
	tcase_add_loop_test(tc,
			    a_paced_operation_counts_from_the_later_mark_less_the_other_way,
			    0, sizeof(paced_cases) / sizeof(paced_cases[0]));
	tcase_add_test(tc, a_ping_pong_stands_alone);
	tcase_add_test(tc, sends_to_alternating_receivers_stand_alone);
	tcase_add_test(tc, windows_answered_by_their_receiver_are_one_stream);
	tcase_add_test(tc, a_ping_pong_after_a_stream_stands_alone_from_its_second_send);
	tcase_add_test(tc, another_receiver_ends_a_stream);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
