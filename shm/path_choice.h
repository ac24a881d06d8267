/*
 * Which path a large message takes: the pipeline through the receiver's
 * bounce buffers, or the single copy straight between the two processes'
 * buffers (shm/scopy/).  No size suits every machine: where the single
 * copy starts to win ranges from about 16 KiB to beyond 4 MiB, by the
 * machine, by whether the two CPUs share a cache and by whether the send
 * buffer is still in the sender's cache (an unchanged buffer, as
 * benchmarks send, favours the single copy; one just written, the
 * pipeline).  So the sender measures both on the messages it sends.
 *
 * A lone send is timed from the send to the receiver's completion, less
 * any time the receiver was not ready for it (busy with the previous large
 * message, or without a posted receive): in a ping-pong, the latency.  A
 * send in a stream is timed by its pace, the time from the completion of
 * the sender's previous message to its own, where that measures one
 * stream: nothing else the sender did, and no other sender's message,
 * came between.  Where messages of several senders interleave, it is
 * timed by the copies of its busier side instead: the time between
 * completions does not measure what a path costs when chunks of several
 * messages share the receiver (4 senders of 256 KiB chose bounce buffers
 * at 15 GB/s by it, where the single copy gave 28).  Per size class, and
 * apart for lone sends and sends in a
 * stream, the sender keeps an estimate of each path in ns per KiB
 * (estimate.h), fed by one in XSHM_PATH_TIME_EVERY of its sends on the
 * chosen path and by every probe, one send in XSHM_PATH_PROBE_EVERY, on the
 * other.  The other path wins once it costs less than
 * XSHM_PATH_SWITCH_BELOW percent of the chosen one.
 *
 * A path's first sample pays for first touches (page faults, pages that
 * the kernel pins for the first time: 4 ms for a first single copy of
 * 256 KiB, against 7 us after) and is dropped; until each path has
 * XSHM_PATH_YOUNG samples, every other send probes, and neither path
 * replaces the other.  Warming takes a path more than one send: at 64 KiB
 * here the pipeline's second to fourth samples fell from 62 us to 190 ns
 * per KiB, its later ones to 120.  Compared on the fourth, a ping-pong took
 * the single copy at 168, and its rare probes of the pipeline, cold, kept
 * it there for hundreds of sends, at 7 to 12 us where the pipeline gives
 * 3.3 to 4.5.
 *
 * Young samples are taken with both paths in turn, and so are a mixture: at
 * 64 KiB the pipeline's came to 136 to 200 ns per KiB while its receiver
 * probed the single copy too, and to 62 to 80 once nobody probed.  So the
 * young phase ends with XSHM_PATH_SETTLE samples of the chosen path alone,
 * no probe between, before the first comparison; a cheaper sample replaces
 * the estimate at once (estimate.h).  The estimate is not reset for them:
 * settling samples can be cold too (a process's first large sends, its
 * bounce buffers' first touches), and with a reset the single copy took
 * 16 KiB and kept it for whole runs, 2 in 10 of compare.sh --anchors 2.6.
 * Of 64 KiB ping-pongs (latency, 8 runs of -r 7, the pipeline at 3.3 to
 * 4.5 us), 21 points of 48 after the first were slow before these two
 * rules, 4 after; of 30 single sweeps (-p xshm,shm -s 16K,64K,256K,1M), 12
 * before, 1 after.
 *
 * A path that replaces the chosen one does so on trial: it settles alone
 * too, its estimate measured afresh in use, and the comparison that ends
 * the settling brings back the path it replaced, on trial in turn, if that
 * one cost less (as XSHM_PATH_SWITCH_BELOW says) than the new one in use.
 * The estimate that won came from probes, mixed or cold, and probes alone
 * could not undo a wrong switch: once the single copy was chosen, the
 * pipeline's probes were cold (2 to 3 times its cost in use) and never won
 * it back.  A path whose probes keep saying less than it costs in use is
 * tried at most once a probe period, for XSHM_PATH_SETTLE sends.
 *
 * Probes can run cold for good, too: RMA reads of 32 KiB answered through
 * the ring took 2 us in use and 8.6 to 11.7 as probes among single copies
 * of 4.3, and the single copy, chosen first, kept whole runs.  So a lone
 * class, once its chosen path has settled, tries the other path alone on
 * trial, and its first decision compares two paths each measured alone.
 * A class of sends in a stream does not: trying the other path alone there
 * cost 256 KiB to 4 MiB streams 5 to 16% of their bandwidth (ab.sh, 16
 * rounds), for a reason not yet found.
 *
 * A probe of a path that costs twice the chosen one costs more than it
 * teaches: those come only once in XSHM_PATH_PROBE_FAR sends (at 256 KiB
 * here, a bounce probe every 32 single copies cost 10% of the latency).
 * Timing a send costs its receiver a cell back: at 16 KiB, timing one send
 * in 4 and probing one in 32 cost 16% of the latency of the single copy
 * forced, one in 16 and 64 4%.
 */
#ifndef XSHM_SHM_PATH_CHOICE_H
#define XSHM_SHM_PATH_CHOICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"

#define XSHM_PATH_CLASSES	12	/* from min up, doubling; the last open */
#define XSHM_PATH_PROBE_EVERY	64
#define XSHM_PATH_PROBE_FAR	256	/* the same while the other costs 2x */
#define XSHM_PATH_PROBE_YOUNG	2	/* ... while it has few samples */
#define XSHM_PATH_YOUNG		6	/* samples of a path, the first ignored */
#define XSHM_PATH_TIME_EVERY	16
#define XSHM_PATH_SWITCH_BELOW	90
#define XSHM_PATH_PROBE_RUN	4	/* probes in a row */
#define XSHM_PATH_SETTLE	8	/* samples of the chosen path alone */
#define XSHM_PATH_NS_MAX	(1ULL << 40)	/* a longer time counts as this */

enum xshm_path {
	XSHM_PATH_BOUNCE,
	XSHM_PATH_SCOPY,
};

/* One size class of one receiver's sends; zeroed but for chosen, fresh. */
struct xshm_path_class {
	uint32_t cost[2];	/* ns per KiB, by enum xshm_path; 0: untimed */
	uint8_t samples[2];	/* recorded, up to XSHM_PATH_YOUNG */
	uint32_t sends;		/* picked so far, to space probes and timings */
	uint8_t settle;		/* samples of the chosen path still to take alone */
	bool both_tried;	/* each path has settled alone once */
	enum xshm_path chosen;
	enum xshm_path latest;	/* the path of its latest pick */
	bool in_stream;		/* timed by its pace (xshm_path_sample) */
};

/* One sender's choices for one receiver: [in a stream][size class]. */
struct xshm_path_choice {
	struct xshm_path_class classes[2][XSHM_PATH_CLASSES];
};

/*
 * A sender's latest large send, which tells whether the next one joins a
 * stream (xshm_path_joins_stream).
 */
struct xshm_path_stream {
	uint64_t dest;		/* its receiver; XSHM_PATH_NO_DEST: none yet */
	uint64_t rx_count;	/* the sender's receive completions then */
	bool in_run;		/* it followed one to dest with none between */
};

#define XSHM_PATH_NO_DEST	UINT64_MAX

/*
 * A moment on a way whose operations follow each other, with the time its
 * initiator had spent on the other way's copies by then, all told.
 */
struct xshm_path_mark {
	uint64_t ns;
	uint64_t other_ns;
};

/* What xshm_path_pick says for the next send. */
struct xshm_path_pick {
	enum xshm_path path;
	bool timed;		/* report its time to xshm_path_record */
};

/*
 * Every class chooses first: the single copy from above scopy_min, the
 * pipeline below.  min is the smallest size with a choice.  Probes come
 * XSHM_PATH_PROBE_RUN in a row.
 */
void xshm_path_choice_init(struct xshm_path_choice *choice, size_t min,
			   size_t scopy_min);

/*
 * Whether a large send to dest, with rx_count receive completions at its
 * sender so far, joins a stream rather than stands alone; notes it in
 * latest.  It does when it goes to the receiver of the latest large send
 * and either no receive completed since, or that latest send itself
 * followed another with none between.  In a ping-pong a receive comes
 * between every two sends: each stands alone, as do sends to alternating
 * receivers.  A stream of windows, each answered by its receiver (OSU's
 * bw, test/bench/bandwidth), is one stream, the first send of each window
 * too.  Counted alone, that first send took the bounce buffers, which a
 * lone send finishes sooner while its sender is there to fill them; but
 * the sender was rewriting the next buffers (-W), the rest of the window
 * waited behind it, and 4 MiB streamed at 4.3 GB/s against 5.2 with every
 * send on the single copy.  A stream followed by a ping-pong counts its
 * first exchange in the stream.
 */
bool xshm_path_joins_stream(struct xshm_path_stream *latest, uint64_t dest,
			    uint64_t rx_count);

/*
 * What an operation took on a way whose operations follow each other
 * (struct xshm_path_mark): from its start, or from the way's latest
 * completion before now when that is later (in a stream, the gap between
 * completions), to now.  With less_other, less the time its
 * initiator spent on the other way meanwhile, and at least 1: an RMA
 * operation through the target's ring completes only when its initiator
 * progresses, which it does not while it copies (prov/xshm/data/rma_path.c).
 */
uint64_t xshm_path_paced_ns(struct xshm_path_mark start,
			    struct xshm_path_mark latest_done,
			    struct xshm_path_mark now, bool less_other);

/* The class of len bytes (more than min). */
unsigned int xshm_path_class_of(size_t len, size_t min);

/*
 * The class of len bytes in a stream or not.  A fresh one starts where the
 * nearest smaller class that measured both paths is, estimates and all,
 * when that one chose the single copy: its share of fixed costs only
 * falls with the size.  Otherwise a benchmark that sweeps the sizes
 * upwards, with few sends at the largest, spends them on probes (at 1 MiB
 * here, 16 sends: 70 us one way against 29 once the class has learnt).
 */
struct xshm_path_class *xshm_path_class_for(struct xshm_path_choice *choice,
					    bool in_stream, size_t len,
					    size_t min);

/*
 * The path of the next send in the class: the chosen one or a probe.
 * Probes come in runs, and a send that changes path is not timed: the
 * first send on a path that was left alone for a while pays for what went
 * cold meanwhile.  In a stream, its pace is partly the previous send's, on
 * the other path: alternating sends made 1 MiB bounce buffers look twice
 * as fast as a stream of them (-W).  A lone send finds the other path's
 * caches cold: at 128 KiB, unchanged buffers, a lone bounce-buffer probe
 * among single copies took 21 to 56 us where bounce buffers in use took 8,
 * and a single-copy probe among bounce buffers 30 to 83 us against 19;
 * each path, once chosen, kept itself chosen by its rival's first sends.
 */
struct xshm_path_pick xshm_path_pick(struct xshm_path_class *cls);

/*
 * What a send of the class took, by its receiver's timing (layout.h); 0
 * when the clocks say nothing.  A lone send counts from start_ns, when it
 * started, to its completion.
 *
 * A send in a stream counts its pace, the time since the receiver
 * completed the sender's previous message (timing->paced_from_ns), when
 * it followed that message with no receive between (follows_send), and
 * at least the copies of its busier side.  The copies alone leave out
 * what the application does between sends: with the send buffer written
 * before each send (-W), a stream of 1 MiB messages on bounce buffers
 * completed one every 290 to 340 us where their busier side's copies said
 * 130, and a lone single copy among them, 365, chose the bounce buffers;
 * the single copy forced completed one every 155.  When the sender took a
 * receive between the two (the answer to a window), the pace includes
 * waiting for it: the sample is 0, nothing learnt.
 *
 * Where another sender's message came between (timing->paced_from_ns 0),
 * it counts the copies of its busier side, the receiver's or the
 * sender's (sender_busy_ns).  The receiver's copies alone hid what bounce
 * buffers cost their sender: 64 KiB took 7 us to fill against 3.5 to
 * drain, and 4 senders into one receiver split their sends between the
 * paths at 0.75 of the single copy's bandwidth.
 */
uint64_t xshm_path_sample(const struct xshm_path_class *cls,
			  uint64_t start_ns, uint64_t sender_busy_ns,
			  bool follows_send, const struct xshm_timing *timing);

/* A timed send of len bytes on path took ns; may change the choice. */
void xshm_path_record(struct xshm_path_class *cls, enum xshm_path path,
		      uint64_t ns, size_t len);

#endif
