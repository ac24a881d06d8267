/*
 * Atomics (fi_atomic(3)) between two processes (rma_rig.h): every
 * supported pair of operation and datatype of every kind, its result and
 * fetched old values compared with a reference computed here
 * (atomic_ref.c); each call; the valid queries and fi_query_atomic against
 * the calls; count limits; completion flags, counters and FI_RMA_EVENT
 * remote counters.  Checks, keys, concurrency and dead targets are
 * test_atomic_checks.c's.
 */
#include "atomic_ref.h"
#include "rma_rig.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "shm/layout.h"

#define ATOMIC_CAPS	(FI_MSG | FI_RMA | FI_ATOMIC | FI_RMA_EVENT)
#define FLAG_MASK	(FI_ATOMIC | FI_RMA | FI_MSG | FI_READ | FI_WRITE | \
			 FI_SEND | FI_RECV)

static const uint64_t kind_flags[REF_KINDS] = {
	[REF_WRITE] = 0, [REF_FETCH] = FI_FETCH_ATOMIC,
	[REF_COMPARE] = FI_COMPARE_ATOMIC,
};

static struct rig *atomic_rig(uint64_t access)
{
	struct rig *r = calloc(1, sizeof(*r));

	XT_ASSERT(r, "calloc");
	r->caps = r->opts.caps = ATOMIC_CAPS;
	rig_start_with(r, access, FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, true);
	return r;
}

static void expect_atomic(struct rig *r, void *ctx, uint64_t flags)
{
	struct xt_comp c;

	xt_wait_tx(&r->x, &c);
	XT_ASSERT(c.e.op_context == ctx, "context");
	XT_ASSERT((c.e.flags & FLAG_MASK) == flags, "flags %#llx, expected %#llx",
		  (unsigned long long) c.e.flags, (unsigned long long) flags);
}

/* len bytes of the region at off, by RMA. */
static void put(struct rig *r, const void *buf, size_t off, size_t len)
{
	int ctx;

	XT_POST(&r->x, fi_write(r->x.ep, buf, len, NULL, r->peer, r->addr + off,
				r->key, &ctx));
	expect_done(r, &ctx, FI_RMA | FI_WRITE);
}

static void get(struct rig *r, void *buf, size_t off, size_t len)
{
	int ctx;

	XT_POST(&r->x, fi_read(r->x.ep, buf, len, NULL, r->peer, r->addr + off,
			       r->key, &ctx));
	expect_done(r, &ctx, FI_RMA | FI_READ);
}

static void assert_values(enum fi_datatype dt, const void *got,
			  const void *want, size_t count, const char *what,
			  int kind, enum fi_op op)
{
	for (size_t i = 0; i < count; i++)
		XT_ASSERT(ref_load(dt, got, i) == ref_load(dt, want, i),
			  "%s: kind %d op %s datatype %d element %zu: %Lg, expected %Lg",
			  what, kind, ref_op_name(op), dt, i,
			  creall(ref_load(dt, got, i)),
			  creall(ref_load(dt, want, i)));
}

/* Posts one atomic of kind on count elements at the region's off. */
static ssize_t post_kind(struct rig *r, int kind, enum fi_op op,
			 enum fi_datatype dt, const void *opnd,
			 const void *cmp, void *res, size_t count, size_t off,
			 void *ctx)
{
	uint64_t addr = r->addr + off;

	if (kind == REF_WRITE)
		return fi_atomic(r->x.ep, opnd, count, NULL, r->peer, addr,
				 r->key, dt, op, ctx);
	if (kind == REF_FETCH)
		return fi_fetch_atomic(r->x.ep, opnd, count, NULL, res, NULL,
				       r->peer, addr, r->key, dt, op, ctx);
	return fi_compare_atomic(r->x.ep, opnd, count, NULL, cmp, NULL, res,
				 NULL, r->peer, addr, r->key, dt, op, ctx);
}

/*
 * One pair of kind, on elems elements at the region's off, checked against
 * the reference.
 */
static void pair_case_at(struct rig *r, int kind, enum fi_op op,
			 enum fi_datatype dt, size_t elems, size_t off)
{
	alignas(32) unsigned char tgt[REF_ELEMS * 32], opnd[REF_ELEMS * 32],
		cmp[REF_ELEMS * 32], want[REF_ELEMS * 32], got[REF_ELEMS * 32],
		res[REF_ELEMS * 32];
	size_t len = elems * ref_size(dt);
	int ctx;

	ref_fill(dt, tgt, opnd, cmp);
	put(r, tgt, off, len);
	memcpy(want, tgt, len);
	ref_apply(op, dt, want, opnd, cmp, elems);
	memset(res, 0xa5, sizeof(res));
	XT_POST(&r->x, post_kind(r, kind, op, dt,
				 op == FI_ATOMIC_READ ? NULL : opnd, cmp, res,
				 elems, off, &ctx));
	expect_atomic(r, &ctx, FI_ATOMIC | (kind == REF_WRITE ? FI_WRITE :
					    FI_READ));
	get(r, got, off, len);
	assert_values(dt, got, want, elems, "target", kind, op);
	if (kind != REF_WRITE)
		assert_values(dt, res, tgt, elems, "fetched", kind, op);
}

/* At an offset aligned for every datatype: the target applies in place. */
#define ALIGNED_OFF	64

static void pair_case(struct rig *r, int kind, enum fi_op op,
		      enum fi_datatype dt, size_t elems)
{
	pair_case_at(r, kind, op, dt, elems, ALIGNED_OFF);
}

/* Every supported pair of kind, on elems elements at off: how many. */
static int each_pair_at(struct rig *r, int kind, size_t elems, size_t off)
{
	int pairs = 0;

	for (int op = 0; op < FI_ATOMIC_OP_LAST; op++)
		for (int dt = 0; dt < FI_DATATYPE_LAST; dt++)
			if (ref_supported(kind, op, dt)) {
				pair_case_at(r, kind, op, dt, elems, off);
				pairs++;
			}
	return pairs;
}

START_TEST(every_pair_matches_reference)
{
	struct rig *r = atomic_rig(ALL_ACCESS);
	int pairs = each_pair_at(r, _i, REF_ELEMS, ALIGNED_OFF);

	XT_ASSERT(pairs > 60, "only %d pairs", pairs);
	rig_stop(r);
}
END_TEST

/*
 * Atomics whose elements fit a command's first line (XSHM_RMA_SHORT_MAX
 * bytes; a compare's operands and compare values together): as many
 * elements as fit, and one.
 */
START_TEST(every_pair_in_one_line)
{
	struct rig *r = atomic_rig(ALL_ACCESS);
	int kind = _i, pairs = 0;
	size_t sets = kind == REF_COMPARE ? 2 : 1;

	for (int op = 0; op < FI_ATOMIC_OP_LAST; op++)
		for (int dt = 0; dt < FI_DATATYPE_LAST; dt++) {
			size_t most = XSHM_RMA_SHORT_MAX / (sets * ref_size(dt));

			if (!most || !ref_supported(kind, op, dt))
				continue;
			pair_case(r, kind, op, dt, most);
			pair_case(r, kind, op, dt, 1);
			pairs++;
		}
	XT_ASSERT(pairs > (kind == REF_COMPARE ? 20 : 40), "only %d pairs",
		  pairs);
	rig_stop(r);
}
END_TEST

/*
 * Elements one byte past an aligned address: the target applies the
 * operation to those wider than a byte on an aligned copy and writes it
 * back (atomic_target.c), in a full command and in a one-line one.
 */
START_TEST(every_pair_at_an_unaligned_address)
{
	struct rig *r = atomic_rig(ALL_ACCESS);
	int pairs = each_pair_at(r, _i, REF_ELEMS, ALIGNED_OFF + 1);

	each_pair_at(r, _i, 1, ALIGNED_OFF + 1);
	XT_ASSERT(pairs > 60, "only %d pairs", pairs);
	rig_stop(r);
}
END_TEST

/* The valid queries and fi_query_atomic say what the reference says. */
START_TEST(valid_queries_agree_with_reference)
{
	struct rig *r = atomic_rig(ALL_ACCESS);
	int (*valid[REF_KINDS])(struct fid_ep *, enum fi_datatype, enum fi_op,
				size_t *) = {
		fi_atomicvalid, fi_fetch_atomicvalid, fi_compare_atomicvalid,
	};

	for (int kind = 0; kind < REF_KINDS; kind++)
		for (int op = 0; op <= FI_ATOMIC_OP_LAST; op++)
			for (int dt = 0; dt <= FI_DATATYPE_LAST; dt++) {
				bool yes = op < FI_ATOMIC_OP_LAST &&
					   ref_supported(kind, op, dt);
				struct fi_atomic_attr attr = { 0 };
				size_t count = 0;
				int ret = valid[kind](r->x.ep, dt, op, &count);

				XT_ASSERT(ret == (yes ? 0 : -FI_EOPNOTSUPP),
					  "valid kind %d op %d dt %d: %d",
					  kind, op, dt, ret);
				ret = fi_query_atomic(r->x.domain, dt, op, &attr,
						      kind_flags[kind]);
				XT_ASSERT(ret == (yes ? 0 : -FI_EOPNOTSUPP),
					  "query kind %d op %d dt %d: %d",
					  kind, op, dt, ret);
				if (!yes)
					continue;
				XT_ASSERT(count == REF_MAX_BYTES / ref_size(dt),
					  "count %zu", count);
				XT_ASSERT(attr.count == count &&
					  attr.size == ref_size(dt), "attr");
			}
	XT_ASSERT_RC(fi_query_atomic(r->x.domain, FI_INT32, FI_SUM, NULL,
				     FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC),
		     -FI_EBADFLAGS);
	XT_ASSERT_RC(fi_query_atomic(r->x.domain, FI_INT32, FI_SUM, NULL,
				     FI_SEND), -FI_EBADFLAGS);
	rig_stop(r);
}
END_TEST

/* Every pair the queries refuse, the calls refuse too. */
START_TEST(unsupported_pairs_refused_by_calls)
{
	struct rig *r = atomic_rig(ALL_ACCESS);
	alignas(32) unsigned char a[64] = { 0 }, b[64] = { 0 }, c[64];
	int refused = 0;

	for (int kind = 0; kind < REF_KINDS; kind++)
		for (int op = 0; op <= FI_ATOMIC_OP_LAST; op++)
			for (int dt = 0; dt <= FI_DATATYPE_LAST; dt++) {
				if (op < FI_ATOMIC_OP_LAST &&
				    ref_supported(kind, op, dt))
					continue;
				XT_ASSERT_RC(post_kind(r, kind, op, dt, a, b, c,
						       1, 0, NULL),
					     -FI_EOPNOTSUPP);
				refused++;
			}
	XT_ASSERT(refused > 100, "only %d refused", refused);
	xt_expect_none(r->x.tx, r->x.rx, 50);
	assert_untouched(r);
	rig_stop(r);
}
END_TEST

/* Two pieces for the operands, three for the results, two compares. */
START_TEST(vector_calls_gather_and_scatter)
{
	struct rig *r = atomic_rig(ALL_ACCESS);
	int64_t tgt[6] = { 1, 2, 3, 4, 5, 6 }, add[6] = { 10, 20, 30, 40, 50, 60 };
	int64_t res[6], got[6], cmp[6] = { 11, 0, 33, 0, 55, 0 };
	struct fi_ioc ops[2] = { { add, 2 }, { add + 2, 4 } };
	struct fi_ioc rs[3] = { { res, 1 }, { res + 1, 3 }, { res + 4, 2 } };
	struct fi_ioc cs[2] = { { cmp, 3 }, { cmp + 3, 3 } };
	int ctx;

	put(r, tgt, 0, sizeof(tgt));
	XT_POST(&r->x, fi_atomicv(r->x.ep, ops, NULL, 2, r->peer, r->addr,
				  r->key, FI_INT64, FI_SUM, &ctx));
	expect_atomic(r, &ctx, FI_ATOMIC | FI_WRITE);
	XT_POST(&r->x, fi_fetch_atomicv(r->x.ep, ops, NULL, 2, rs, NULL, 3,
					r->peer, r->addr, r->key, FI_INT64,
					FI_SUM, &ctx));
	expect_atomic(r, &ctx, FI_ATOMIC | FI_READ);
	for (int i = 0; i < 6; i++)
		XT_ASSERT(res[i] == tgt[i] + add[i], "fetched %d", i);
	XT_POST(&r->x, fi_compare_atomicv(r->x.ep, ops, NULL, 2, cs, NULL, 2,
					  rs, NULL, 3, r->peer, r->addr, r->key,
					  FI_INT64, FI_CSWAP_LE, &ctx));
	expect_atomic(r, &ctx, FI_ATOMIC | FI_READ);
	get(r, got, 0, sizeof(got));
	for (int i = 0; i < 6; i++) {
		int64_t now = tgt[i] + 2 * add[i];

		XT_ASSERT(res[i] == now, "compare fetched %d", i);
		XT_ASSERT(got[i] == (cmp[i] <= now ? add[i] : now), "target %d", i);
	}
	rig_stop(r);
}
END_TEST

static struct fi_msg_atomic atomic_msg(const struct rig *r,
				       const struct fi_ioc *ioc, size_t count,
				       struct fi_rma_ioc *rma, size_t off,
				       enum fi_op op, void *ctx)
{
	*rma = (struct fi_rma_ioc) { r->addr + off, 0, r->key };
	for (size_t i = 0; i < count; i++)
		rma->count += ioc[i].count;
	return (struct fi_msg_atomic) {
		.msg_iov = ioc, .iov_count = count, .addr = r->peer,
		.rma_iov = rma, .rma_iov_count = 1, .datatype = FI_UINT32,
		.op = op, .context = ctx,
	};
}

START_TEST(msg_calls_and_their_flags)
{
	struct rig *r = atomic_rig(ALL_ACCESS);
	uint32_t v[4] = { 1, 2, 3, 4 }, res[4], cmp[4] = { 1, 9, 3, 9 }, got[4];
	struct fi_ioc ioc = { v, 4 }, rs = { res, 4 }, cs = { cmp, 4 };
	struct fi_rma_ioc rma;
	struct fi_msg_atomic msg = atomic_msg(r, &ioc, 1, &rma, 0,
					      FI_ATOMIC_WRITE, NULL);
	int ctx;

	msg.context = &ctx;
	XT_ASSERT_RC(fi_atomicmsg(r->x.ep, &msg, FI_COMPLETION | FI_TAGGED),
		     -FI_EBADFLAGS);
	XT_POST(&r->x, fi_atomicmsg(r->x.ep, &msg, FI_COMPLETION));
	expect_atomic(r, &ctx, FI_ATOMIC | FI_WRITE);
	msg.op = FI_BXOR;
	XT_POST(&r->x, fi_fetch_atomicmsg(r->x.ep, &msg, &rs, NULL, 1,
					  FI_COMPLETION | FI_DELIVERY_COMPLETE));
	expect_atomic(r, &ctx, FI_ATOMIC | FI_READ);
	XT_ASSERT(!memcmp(res, v, sizeof(v)), "fetched");
	msg.op = FI_CSWAP;
	XT_POST(&r->x, fi_compare_atomicmsg(r->x.ep, &msg, &cs, NULL, 1, &rs,
					    NULL, 1, FI_COMPLETION));
	expect_atomic(r, &ctx, FI_ATOMIC | FI_READ);
	get(r, got, 0, sizeof(got));
	for (int i = 0; i < 4; i++) {
		XT_ASSERT(res[i] == 0, "compare fetched %d", i);
		XT_ASSERT(got[i] == (cmp[i] == 0 ? v[i] : 0), "target %d", i);
	}
	rma.count = 3;
	XT_ASSERT_RC(fi_atomicmsg(r->x.ep, &msg, 0), -FI_EINVAL);
	msg.rma_iov_count = 2;
	XT_ASSERT_RC(fi_atomicmsg(r->x.ep, &msg, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_atomicmsg(r->x.ep, NULL, 0), -FI_EINVAL);
	rig_stop(r);
}
END_TEST

/* The operand may change as soon as the call returns; no CQ entry. */
START_TEST(inject_copies_at_once)
{
	struct rig *r = atomic_rig(ALL_ACCESS);
	int64_t v[4] = { 7, 8, 9, 10 }, zero[4] = { 0 }, got[4];

	put(r, zero, 0, sizeof(zero));
	XT_POST(&r->x, fi_inject_atomic(r->x.ep, v, 4, r->peer, r->addr, r->key,
					FI_INT64, FI_SUM));
	memset(v, 0xee, sizeof(v));
	wait_cntr(r->wc, 2);	/* the put's write and the atomic */
	xt_expect_none(r->x.tx, r->x.rx, 100);
	get(r, got, 0, sizeof(got));
	for (int i = 0; i < 4; i++)
		XT_ASSERT(got[i] == 7 + i, "element %d: %lld", i, (long long) got[i]);
	rig_stop(r);
}
END_TEST

START_TEST(count_limits)
{
	struct rig *r = atomic_rig(ALL_ACCESS);
	size_t max = 0;
	int8_t *ones, *got;
	int ctx;

	XT_ASSERT_OK(fi_atomicvalid(r->x.ep, FI_INT8, FI_SUM, &max));
	XT_ASSERT(max == REF_MAX_BYTES, "max %zu", max);
	ones = malloc(max + 1);
	got = malloc(max);
	memset(ones, 1, max + 1);
	XT_ASSERT_RC(fi_atomic(r->x.ep, ones, 0, NULL, r->peer, r->addr, r->key,
			       FI_INT8, FI_SUM, &ctx), -FI_EINVAL);
	XT_ASSERT_RC(fi_atomic(r->x.ep, ones, max + 1, NULL, r->peer, r->addr,
			       r->key, FI_INT8, FI_SUM, &ctx), -FI_EINVAL);
	XT_ASSERT_RC(fi_compare_atomic(r->x.ep, ones, REF_MAX_BYTES / 32 + 1,
				       NULL, ones, NULL, got, NULL, r->peer,
				       r->addr, r->key, FI_LONG_DOUBLE_COMPLEX,
				       FI_CSWAP, &ctx), -FI_EINVAL);
	XT_ASSERT_RC(fi_atomic(r->x.ep, NULL, 1, NULL, r->peer, r->addr, r->key,
			       FI_INT8, FI_SUM, &ctx), -FI_EINVAL);
	/* bytes that wrap around to a size that would fit */
	XT_ASSERT_RC(fi_atomic(r->x.ep, ones, (size_t) 1 << 61, NULL, r->peer,
			       r->addr, r->key, FI_UINT64, FI_SUM, &ctx),
		     -FI_EINVAL);
	XT_ASSERT_RC(fi_inject_atomic(r->x.ep, ones, ((size_t) 1 << 61) + 1,
				      r->peer, r->addr, r->key, FI_UINT64,
				      FI_SUM), -FI_EINVAL);
	XT_ASSERT_RC(fi_fetch_atomic(r->x.ep, ones, 1, NULL, NULL, NULL, r->peer,
				     r->addr, r->key, FI_INT8, FI_SUM, &ctx),
		     -FI_EINVAL);
	XT_ASSERT_RC(fi_compare_atomic(r->x.ep, ones, 1, NULL, NULL, NULL, got,
				       NULL, r->peer, r->addr, r->key, FI_INT8,
				       FI_CSWAP, &ctx), -FI_EINVAL);
	XT_ASSERT(fi_atomic(r->x.ep, ones, 1, NULL, r->peer + 1000, r->addr,
			    r->key, FI_INT8, FI_SUM, &ctx) < 0, "bad fi_addr");
	memset(got, 0, max);
	put(r, got, 0, max);
	XT_POST(&r->x, fi_atomic(r->x.ep, ones, max, NULL, r->peer, r->addr,
				 r->key, FI_INT8, FI_SUM, &ctx));
	expect_atomic(r, &ctx, FI_ATOMIC | FI_WRITE);
	get(r, got, 0, max);
	for (size_t i = 0; i < max; i++)
		XT_ASSERT(got[i] == 1, "element %zu", i);
	free(ones);
	free(got);
	rig_stop(r);
}
END_TEST

START_TEST(counters_and_remote_events)
{
	struct rig *r = atomic_rig(ALL_ACCESS);
	uint64_t v = 1, res, cmp = 0;
	int ctx;

	XT_POST(&r->x, fi_atomic(r->x.ep, &v, 1, NULL, r->peer, r->addr, r->key,
				 FI_UINT64, FI_SUM, &ctx));
	XT_POST(&r->x, fi_inject_atomic(r->x.ep, &v, 1, r->peer, r->addr,
					r->key, FI_UINT64, FI_SUM));
	XT_POST(&r->x, fi_fetch_atomic(r->x.ep, &v, 1, NULL, &res, NULL,
				       r->peer, r->addr, r->key, FI_UINT64,
				       FI_ATOMIC_READ, &ctx));
	XT_POST(&r->x, fi_compare_atomic(r->x.ep, &v, 1, NULL, &cmp, NULL, &res,
					 NULL, r->peer, r->addr, r->key,
					 FI_UINT64, FI_CSWAP, &ctx));
	wait_cntr(r->wc, 2);
	wait_cntr(r->rc, 2);
	xt_signal(r->c.sock, T_EVENTS);
	XT_ASSERT(xt_recv_u64(r->c.sock) == 2, "remote write counter");
	XT_ASSERT(xt_recv_u64(r->c.sock) == 2, "remote read counter");
	XT_ASSERT(xt_recv_u64(r->c.sock) == 2, "registration's write counter");
	rig_stop(r);
}
END_TEST

static Suite *atomic_suite(void)
{
	Suite *s = suite_create("atomic");
	TCase *data = tcase_create("data");

	tcase_set_timeout(data, 120);
	tcase_add_loop_test(data, every_pair_matches_reference, 0, REF_KINDS);
	tcase_add_loop_test(data, every_pair_in_one_line, 0, REF_KINDS);
	tcase_add_loop_test(data, every_pair_at_an_unaligned_address, 0,
			    REF_KINDS);
	tcase_add_test(data, valid_queries_agree_with_reference);
	tcase_add_test(data, unsupported_pairs_refused_by_calls);
	tcase_add_test(data, vector_calls_gather_and_scatter);
	tcase_add_test(data, msg_calls_and_their_flags);
	tcase_add_test(data, inject_copies_at_once);
	tcase_add_test(data, count_limits);
	tcase_add_test(data, counters_and_remote_events);
	/* atomics are optional (XT_EXTRA) */
	if (xt_wanted(XT_EXTRA))
		suite_add_tcase(s, data);
	return s;
}

int main(void)
{
	return xt_run_suite(atomic_suite());
}
