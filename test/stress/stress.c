/* Many-process traffic with every message counted and checked (stress.h). */
#include "stress.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ST_INLINE_MAX	200		/* XSHM_INLINE_MAX */
#define ST_BUF_SIZE	16384		/* one bounce buffer */
#define ST_SCOPY_MAX	(ST_SCOPY_THRESHOLD + ((size_t)1 << 20))
#define ST_CLASS_SHIFT	56
#define ST_SRC_SHIFT	32
#define ST_STALL_MS	20000		/* longest a rank may go without any event */
#define ST_PHASE_MS	70000		/* longest the parent waits for a barrier */
#define ST_CQ_BATCH	32

/* Barrier bytes between the parent and a rank. */
enum { ST_READY = 'R', ST_START = 'S', ST_POSTED = 'P', ST_GO = 'G', ST_DONE = 'D',
       ST_QUIT = 'Q' };

/* Receives posted at once: per class, or per class and sender when directed. */
static const unsigned st_window[ST_NCLASSES] = { 64, 32, 4, 3 };
static const unsigned st_window_directed[ST_NCLASSES] = { 12, 6, 2, 2 };
static const size_t st_class_max[ST_NCLASSES] = {
	ST_INLINE_MAX, ST_BUF_SIZE, ST_SCOPY_THRESHOLD, ST_SCOPY_MAX,
};

struct st_msg {
	enum st_class cls;
	size_t len;
	uint64_t tag, seed;
	bool inject;
};

void st_set_env(const char *name, const char *value)
{
	XT_ASSERT(setenv(name, value, 1) == 0, "setenv %s", name);
}

size_t st_rss(void)
{
	unsigned long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	XT_ASSERT(f != NULL, "open /proc/self/statm");
	XT_ASSERT(fscanf(f, "%lu %lu", &pages, &resident) == 2, "read /proc/self/statm");
	fclose(f);
	return resident * (size_t)sysconf(_SC_PAGESIZE);
}

uint8_t st_wait_byte(int sock, int ms)
{
	uint64_t end = xt_now_ms() + (uint64_t)ms;
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	uint8_t b;
	ssize_t n;

	for (;;) {
		XT_ASSERT(xt_now_ms() < end, "no word from the peer within %d ms", ms);
		if (poll(&pfd, 1, 100) > 0)
			break;
	}
	do
		n = read(sock, &b, 1);
	while (n < 0 && errno == EINTR);
	XT_ASSERT(n == 1, "the peer closed its socket (it failed: see its stderr)");
	return b;
}

/* ---- the plan ---- */

static uint64_t st_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

static enum st_class st_class_of(size_t len)
{
	if (len <= ST_INLINE_MAX)
		return ST_INLINE;
	if (len <= ST_BUF_SIZE)
		return ST_BOUNCE;
	return len <= ST_SCOPY_THRESHOLD ? ST_CHUNKED : ST_SCOPY;
}

/*
 * The first messages of every pair sit on the protocol boundaries, then one
 * on each side of the single-copy threshold; the rest are random, mostly
 * small, the chunked lengths spread over powers of two.
 */
static const size_t st_edges[] = {
	0, ST_INLINE_MAX, ST_INLINE_MAX + 1, ST_BUF_SIZE, ST_BUF_SIZE + 1,
	ST_SCOPY_THRESHOLD, ST_SCOPY_THRESHOLD + 1,
};
#define ST_NEDGES (sizeof(st_edges) / sizeof(st_edges[0]))

static size_t st_random_len(uint64_t h)
{
	unsigned pick = (unsigned)(h % 100);
	uint64_t r = h >> 8;

	if (pick < 60)
		return r % (ST_INLINE_MAX + 1);
	if (pick < 90)
		return ST_INLINE_MAX + 1 + r % (ST_BUF_SIZE - ST_INLINE_MAX);
	if (pick < 98)
		return ST_BUF_SIZE + 1 +
		       ((r >> 3) % (ST_SCOPY_THRESHOLD - ST_BUF_SIZE) >> (r % 7));
	return ST_SCOPY_THRESHOLD + 1 + r % (ST_SCOPY_MAX - ST_SCOPY_THRESHOLD);
}

/* Pairs whose first messages include the two around the threshold. */
static bool st_big_edges(int s, int r)
{
	return (s + r) % 4 == 1;
}

static struct st_msg st_msg(int s, int r, unsigned k)
{
	uint64_t h = st_mix(((uint64_t)s << 48) ^ ((uint64_t)r << 32) ^ k ^ 0x57e55ULL);
	size_t nedges = st_big_edges(s, r) ? ST_NEDGES : ST_NEDGES - 2;
	struct st_msg m;

	m.len = k < nedges ? st_edges[k] : st_random_len(h);
	m.cls = st_class_of(m.len);
	m.tag = ((uint64_t)m.cls << ST_CLASS_SHIFT) | ((uint64_t)s << ST_SRC_SHIFT) | k;
	m.seed = 0x5eed000000000000ULL ^ ((uint64_t)s << 40) ^ ((uint64_t)r << 24) ^ k;
	m.inject = m.cls == ST_INLINE && k % 3 == 0;
	return m;
}

static bool st_sends_to(const struct st_plan *p, int s, int r)
{
	return s != r && (!p->incast || r == 0);
}

/* ---- one rank ---- */

/* A receive: of one class, from one sender when directed (src >= 0). */
struct st_slot {
	unsigned char *buf;
	enum st_class cls;
	int src;
	uint64_t post_seq;
	bool busy;
};

/* Receives of one class (and sender): how many to post in all, and slots. */
struct st_group {
	enum st_class cls;
	int src;		/* -1: FI_ADDR_UNSPEC */
	unsigned total, posted;
	unsigned nslots;
	struct st_slot *slots;
};

struct st_rank {
	const struct st_plan *plan;
	int me, sock;
	struct xt_cfg cfg;
	struct xt_ep x;
	fi_addr_t addr[ST_MAX_PROCS];
	/* sending: messages k of every receiver in turn */
	int dests[ST_MAX_PROCS];
	int ndests;
	uint64_t nsends, next_send, sends_completed, sends_with_comp;
	/* receiving */
	struct st_group *groups;
	int ngroups;
	bool may_post;
	uint64_t expected, received, bytes;
	uint64_t per_class[ST_NCLASSES];
	uint8_t *seen;		/* [sender][k] */
	uint64_t *post_seq;	/* [sender][k]: of the receive it matched */
	uint64_t next_post_seq;
	uint64_t last_event;	/* when something last happened */
	uint64_t nevents;
};

static size_t st_idx(const struct st_rank *r, int s, unsigned k)
{
	return (size_t)s * r->plan->nmsgs + k;
}

static void st_add_group(struct st_rank *r, enum st_class cls, int src, unsigned total)
{
	const unsigned *w = r->plan->directed ? st_window_directed : st_window;
	struct st_group *g;

	if (!total)
		return;
	g = &r->groups[r->ngroups++];
	g->cls = cls;
	g->src = src;
	g->total = total;
	g->nslots = w[cls] < total ? w[cls] : total;
	g->slots = calloc(g->nslots, sizeof(*g->slots));
	XT_ASSERT(g->slots != NULL, "calloc");
	for (unsigned i = 0; i < g->nslots; i++) {
		g->slots[i].cls = cls;
		g->slots[i].src = src;
	}
}

static void st_plan_receives(struct st_rank *r)
{
	const struct st_plan *p = r->plan;
	unsigned count[ST_MAX_PROCS][ST_NCLASSES] = { { 0 } };

	for (int s = 0; s < p->nprocs; s++) {
		if (!st_sends_to(p, s, r->me))
			continue;
		for (unsigned k = 0; k < p->nmsgs; k++)
			count[s][st_msg(s, r->me, k).cls]++;
		r->expected += p->nmsgs;
	}
	r->groups = calloc((size_t)ST_NCLASSES * (p->nprocs + 1), sizeof(*r->groups));
	r->seen = calloc((size_t)p->nprocs * p->nmsgs, 1);
	r->post_seq = calloc((size_t)p->nprocs * p->nmsgs, sizeof(*r->post_seq));
	XT_ASSERT(r->groups && r->seen && r->post_seq, "calloc");
	for (int c = 0; c < ST_NCLASSES; c++) {
		unsigned all = 0;

		for (int s = 0; s < p->nprocs; s++) {
			if (p->directed)
				st_add_group(r, c, s, count[s][c]);
			all += count[s][c];
		}
		if (!p->directed)
			st_add_group(r, c, -1, all);
	}
}

static void st_plan_sends(struct st_rank *r)
{
	for (int d = 0; d < r->plan->nprocs; d++)
		if (st_sends_to(r->plan, r->me, d))
			r->dests[r->ndests++] = d;
	r->nsends = (uint64_t)r->ndests * r->plan->nmsgs;
	for (uint64_t i = 0; i < r->nsends; i++)
		if (!st_msg(r->me, r->dests[i % r->ndests], (unsigned)(i / r->ndests)).inject)
			r->sends_with_comp++;
}

/* Posts the receive of one slot; false when the endpoint said -FI_EAGAIN. */
static bool st_post_slot(struct st_rank *r, struct st_group *g, struct st_slot *sl)
{
	uint64_t tag = (uint64_t)g->cls << ST_CLASS_SHIFT;
	uint64_t ignore = ((uint64_t)1 << ST_SRC_SHIFT) - 1;
	fi_addr_t src = FI_ADDR_UNSPEC;
	ssize_t rc;

	if (g->src >= 0) {
		tag |= (uint64_t)g->src << ST_SRC_SHIFT;
		src = r->addr[g->src];
	} else {
		ignore = ((uint64_t)1 << ST_CLASS_SHIFT) - 1;
	}
	if (!sl->buf) {
		sl->buf = malloc(st_class_max[g->cls] + 1);
		XT_ASSERT(sl->buf != NULL, "malloc");
	}
	rc = fi_trecv(r->x.ep, sl->buf, st_class_max[g->cls], NULL, src, tag, ignore, sl);
	if (rc == -FI_EAGAIN)
		return false;
	XT_ASSERT_RC(rc, 0);
	sl->busy = true;
	sl->post_seq = r->next_post_seq++;
	g->posted++;
	return true;
}

static void st_post_receives(struct st_rank *r)
{
	for (int i = 0; i < r->ngroups; i++) {
		struct st_group *g = &r->groups[i];

		for (unsigned j = 0; j < g->nslots && g->posted < g->total; j++)
			if (!g->slots[j].busy && !st_post_slot(r, g, &g->slots[j]))
				return;
	}
}

static void st_fail_on_error(struct fid_cq *cq, const char *what)
{
	struct fi_cq_err_entry err = { 0 };

	XT_ASSERT(fi_cq_readerr(cq, &err, 0) == 1, "%s: -FI_EAVAIL without an error", what);
	XT_ASSERT(false, "%s: error completion %d (%s), len %zu, tag 0x%llx", what, err.err,
		  fi_strerror(err.err), err.len, (unsigned long long)err.tag);
}

/* Checks one received message against the plan. */
static void st_check_recv(struct st_rank *r, const struct fi_cq_tagged_entry *e)
{
	struct st_slot *sl = e->op_context;
	enum st_class cls = (enum st_class)(e->tag >> ST_CLASS_SHIFT);
	int s = (int)((e->tag >> ST_SRC_SHIFT) & 0xffffff);
	unsigned k = (unsigned)(e->tag & 0xffffffff);
	struct st_msg m;
	ssize_t bad;

	XT_ASSERT(sl && sl->busy, "completion for no posted receive");
	XT_ASSERT((e->flags & (FI_RECV | FI_TAGGED)) == (FI_RECV | FI_TAGGED),
		  "receive flags 0x%llx", (unsigned long long)e->flags);
	XT_ASSERT(s < r->plan->nprocs && st_sends_to(r->plan, s, r->me) &&
		  k < r->plan->nmsgs, "tag 0x%llx names no message for rank %d",
		  (unsigned long long)e->tag, r->me);
	m = st_msg(s, r->me, k);
	XT_ASSERT(cls == m.cls && cls == sl->cls && (sl->src < 0 || sl->src == s),
		  "message %d->%d #%u (class %d) matched a receive of class %d from %d",
		  s, r->me, k, m.cls, sl->cls, sl->src);
	XT_ASSERT(e->len == m.len, "message %d->%d #%u: %zu bytes, sent %zu", s, r->me, k,
		  e->len, m.len);
	XT_ASSERT(!r->seen[st_idx(r, s, k)], "message %d->%d #%u received twice", s, r->me, k);
	bad = xt_mismatch(sl->buf, m.len, m.seed, 0);
	XT_ASSERT(bad < 0, "message %d->%d #%u: byte %zd of %zu differs", s, r->me, k, bad,
		  m.len);
	r->seen[st_idx(r, s, k)] = 1;
	r->post_seq[st_idx(r, s, k)] = sl->post_seq;
	r->received++;
	r->bytes += m.len;
	r->per_class[cls]++;
	sl->busy = false;
}

static void st_drain(struct st_rank *r)
{
	struct fi_cq_tagged_entry e[ST_CQ_BATCH];
	ssize_t n;

	while ((n = fi_cq_read(r->x.rx->fid, e, ST_CQ_BATCH)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			st_check_recv(r, &e[i]);
		r->last_event = xt_now_ms();
		r->nevents++;
	}
	if (n == -FI_EAVAIL)
		st_fail_on_error(r->x.rx->fid, "receive");
	XT_ASSERT(n == -FI_EAGAIN, "fi_cq_read (rx): %zd", n);
	while ((n = fi_cq_read(r->x.tx->fid, e, ST_CQ_BATCH)) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			XT_ASSERT(e[i].flags & FI_SEND, "send flags 0x%llx",
				  (unsigned long long)e[i].flags);
			free(e[i].op_context);
		}
		r->sends_completed += (uint64_t)n;
		r->last_event = xt_now_ms();
		r->nevents++;
	}
	if (n == -FI_EAVAIL)
		st_fail_on_error(r->x.tx->fid, "send");
	XT_ASSERT(n == -FI_EAGAIN, "fi_cq_read (tx): %zd", n);
}

/* Posts sends until the endpoint says -FI_EAGAIN; the buffer is the context. */
static void st_post_sends(struct st_rank *r)
{
	while (r->next_send < r->nsends) {
		int d = r->dests[r->next_send % r->ndests];
		struct st_msg m = st_msg(r->me, d, (unsigned)(r->next_send / r->ndests));
		void *buf = malloc(m.len ? m.len : 1);
		ssize_t rc;

		XT_ASSERT(buf != NULL, "malloc %zu", m.len);
		xt_fill(buf, m.len, m.seed, 0);
		if (m.inject)
			rc = fi_tinject(r->x.ep, buf, m.len, r->addr[d], m.tag);
		else
			rc = fi_tsend(r->x.ep, buf, m.len, NULL, r->addr[d], m.tag, buf);
		if (m.inject || rc)
			free(buf);
		if (rc == -FI_EAGAIN)
			return;
		XT_ASSERT_RC(rc, 0);
		r->next_send++;
		r->last_event = xt_now_ms();
		r->nevents++;
	}
}

/* A barrier byte from the parent, if one came. */
static int st_poll_parent(int sock)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };

	if (poll(&pfd, 1, 0) <= 0)
		return 0;
	return st_wait_byte(sock, 1000);
}

static void st_check_order(const struct st_rank *r)
{
	for (int s = 0; s < r->plan->nprocs; s++) {
		uint64_t last[ST_NCLASSES] = { 0 };
		bool any[ST_NCLASSES] = { false };

		if (!st_sends_to(r->plan, s, r->me))
			continue;
		for (unsigned k = 0; k < r->plan->nmsgs; k++) {
			enum st_class c = st_msg(s, r->me, k).cls;
			uint64_t seq = r->post_seq[st_idx(r, s, k)];

			XT_ASSERT(!any[c] || seq > last[c], "message %d->%d #%u matched a "
				  "receive posted before the one of an earlier message", s,
				  r->me, k);
			any[c] = true;
			last[c] = seq;
		}
	}
}

static bool st_finished(const struct st_rank *r)
{
	return r->next_send == r->nsends && r->sends_completed == r->sends_with_comp &&
	       r->received == r->expected;
}

static void st_traffic(struct st_rank *r)
{
	bool posted_told = false, done_told = false;
	unsigned spin = 0;

	r->last_event = xt_now_ms();
	for (;;) {
		uint64_t events = r->nevents;
		int word = 0;

		st_post_sends(r);
		if (r->may_post)
			st_post_receives(r);
		st_drain(r);
		if (r->plan->late && !posted_told && r->next_send == r->nsends) {
			xt_signal(r->sock, ST_POSTED);
			posted_told = true;
		}
		if (!done_told && st_finished(r)) {
			st_check_order(r);
			xt_signal(r->sock, ST_DONE);
			xt_send_u64(r->sock, r->received);
			xt_send_u64(r->sock, r->bytes);
			for (int c = 0; c < ST_NCLASSES; c++)
				xt_send_u64(r->sock, r->per_class[c]);
			xt_send_u64(r->sock, r->next_send);
			done_told = true;
		}
		if (done_told || posted_told || (++spin & 63) == 0)
			word = st_poll_parent(r->sock);
		if (events == r->nevents)
			sched_yield();	/* more processes than cores */
		if (word == ST_GO)
			r->may_post = true;
		else if (word == ST_QUIT)
			return;
		else
			XT_ASSERT(word == 0, "unexpected word %d from the parent", word);
		XT_ASSERT(done_told || xt_now_ms() - r->last_event < ST_STALL_MS,
			  "rank %d: nothing happened for %d ms: sent %llu/%llu, send "
			  "completions %llu/%llu, received %llu/%llu", r->me, ST_STALL_MS,
			  (unsigned long long)r->next_send, (unsigned long long)r->nsends,
			  (unsigned long long)r->sends_completed,
			  (unsigned long long)r->sends_with_comp,
			  (unsigned long long)r->received, (unsigned long long)r->expected);
	}
}

static void st_free_rank(struct st_rank *r)
{
	for (int i = 0; i < r->ngroups; i++) {
		for (unsigned j = 0; j < r->groups[i].nslots; j++)
			free(r->groups[i].slots[j].buf);
		free(r->groups[i].slots);
	}
	free(r->groups);
	free(r->seen);
	free(r->post_seq);
}

struct st_child_arg {
	const struct st_plan *plan;
	int rank;
};

static void st_rank_main(int sock, void *arg)
{
	const struct st_child_arg *a = arg;
	struct st_rank *r = calloc(1, sizeof(*r));
	char name[XT_NAME_MAX];

	XT_ASSERT(r != NULL, "calloc");
	r->plan = a->plan;
	r->me = a->rank;
	r->sock = sock;
	r->cfg = xt_cfg_default();
	r->cfg.caps |= FI_DIRECTED_RECV;
	xt_open(&r->x, &r->cfg);
	xt_send_name(sock, &r->x);
	for (int j = 0; j < r->plan->nprocs; j++) {
		size_t len = xt_recv_name(sock, name);

		XT_ASSERT(len > 0, "empty name");
		r->addr[j] = xt_av_insert(&r->x, name);
	}
	st_plan_receives(r);
	st_plan_sends(r);
	r->may_post = !r->plan->late;
	if (r->may_post)
		st_post_receives(r);
	xt_signal(sock, ST_READY);
	XT_ASSERT(st_wait_byte(sock, ST_PHASE_MS) == ST_START, "expected the start");
	st_traffic(r);
	xt_close(&r->x);
	st_free_rank(r);
	free(r);
}

/* ---- the parent ---- */

static void st_expect_all(struct xt_child *c, int n, uint8_t word)
{
	for (int i = 0; i < n; i++) {
		uint8_t got = st_wait_byte(c[i].sock, ST_PHASE_MS);

		XT_ASSERT(got == word, "rank %d said '%c', expected '%c'", i, got, word);
	}
}

static void st_tell_all(struct xt_child *c, int n, uint8_t word)
{
	for (int i = 0; i < n; i++)
		xt_signal(c[i].sock, word);
}

static uint64_t st_planned(const struct st_plan *p, int r)
{
	uint64_t n = 0;

	for (int s = 0; s < p->nprocs; s++)
		if (st_sends_to(p, s, r))
			n += p->nmsgs;
	return n;
}

struct st_totals st_run(const struct st_plan *p)
{
	struct xt_child c[ST_MAX_PROCS];
	struct st_child_arg args[ST_MAX_PROCS];
	char names[ST_MAX_PROCS][XT_NAME_MAX];
	size_t lens[ST_MAX_PROCS];
	struct st_totals t = { 0 };
	uint64_t start = xt_now_ms();
	int n = p->nprocs;

	XT_ASSERT(n >= 2 && n <= ST_MAX_PROCS, "%d processes", n);
	for (int i = 0; i < n; i++) {
		args[i] = (struct st_child_arg){ p, i };
		xt_spawn(&c[i], st_rank_main, &args[i]);
	}
	for (int i = 0; i < n; i++)
		lens[i] = xt_recv_name(c[i].sock, names[i]);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			xt_send_bytes(c[i].sock, names[j], lens[j]);
	st_expect_all(c, n, ST_READY);
	st_tell_all(c, n, ST_START);
	if (p->late) {
		st_expect_all(c, n, ST_POSTED);
		st_tell_all(c, n, ST_GO);
	}
	st_expect_all(c, n, ST_DONE);
	for (int i = 0; i < n; i++) {
		uint64_t msgs = xt_recv_u64(c[i].sock);

		XT_ASSERT(msgs == st_planned(p, i), "rank %d received %llu of %llu", i,
			  (unsigned long long)msgs, (unsigned long long)st_planned(p, i));
		t.msgs += msgs;
		t.bytes += xt_recv_u64(c[i].sock);
		for (int k = 0; k < ST_NCLASSES; k++)
			t.per_class[k] += xt_recv_u64(c[i].sock);
		t.sent += xt_recv_u64(c[i].sock);
	}
	st_tell_all(c, n, ST_QUIT);
	for (int i = 0; i < n; i++)
		xt_join(&c[i]);
	XT_ASSERT(t.sent == t.msgs, "%llu sent, %llu received", (unsigned long long)t.sent,
		  (unsigned long long)t.msgs);
	printf("stress %s: %d processes, %llu messages (inline %llu, bounce %llu, chunked "
	       "%llu, single copy %llu), %llu bytes, all checked, in %llu ms\n", p->name, n,
	       (unsigned long long)t.msgs, (unsigned long long)t.per_class[ST_INLINE],
	       (unsigned long long)t.per_class[ST_BOUNCE],
	       (unsigned long long)t.per_class[ST_CHUNKED],
	       (unsigned long long)t.per_class[ST_SCOPY], (unsigned long long)t.bytes,
	       (unsigned long long)(xt_now_ms() - start));
	fflush(stdout);
	return t;
}
