#!/usr/bin/env bash
# Runs the peer conformance suite (test/peer/) with the owner provider xlink
# in the reference owner's role: the *_xlink programs, the same test cases
# linked with test/peer/owner_xlink.c, whose owner_* calls are an
# application's calls into xlink (xlink opens xshm and imports its CQ,
# counters and fid_peer_srx into it).  See test/peer/README.md.
#
#   PEER_XLINK_CASES   a CK_RUN_CASE for the programs (e.g. xlink/flows)
#   PEER_XLINK_KEEP    a folder to keep the programs' logs and XML in
#   PEER_XLINK_TIMEOUT seconds per program (default 600)
#   FI_PROVIDER_PATH   default: the build's .libs
#   FI_TCP_IFACE       default lo (the owner's own traffic comes over tcp)
#
# The peer is xshm (FI_XLINK_PEER=xshm); the senders are xlink endpoints
# in forked children; the owner's own traffic comes from an xlink endpoint
# without a peer (FI_XLINK_PEER=none) over tcp;ofi_rxm.  Prints a line per
# case that failed, the cases left out (about the reference owner's
# internals, which xlink keeps to itself) with why, and ends with
# "peer-xlink: N passed, N failed".  A case passes when it passed; a
# program that ends badly after its cases (an xshm region left in
# /dev/shm, a crash) counts as one failure more.
set -uo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
build=${XSHM_BUILDDIR:-$top}
programs="test_peer_open test_peer_bad_input test_peer_cq test_peer_srx"

missing=
for p in $programs; do
	[ -x "$build/test/peer/${p}_xlink" ] || missing="$missing test/peer/${p}_xlink"
done
if [ -n "$missing" ] && ! make -C "$build" -j2 $missing >/dev/null 2>&1; then
	echo "peer-xlink: 0 passed, 1 failed (building$missing)"
	exit 1
fi
if [ ! -e "${FI_PROVIDER_PATH:-$build/.libs}/libxlink-fi.so" ]; then
	echo "peer-xlink: 0 passed, 1 failed (no libxlink-fi.so in ${FI_PROVIDER_PATH:-$build/.libs})"
	exit 1
fi

work=${PEER_XLINK_KEEP:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${PEER_XLINK_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

# case <tab> result (pass, fail or error) <tab> message, one line per case
results=$work/results
: >"$results"
start=$SECONDS
for p in $programs; do
	(
		unset XSHM_TEST_PROVIDER XSHM_TEST_PEER_ABI XSHM_TEST_SPLIT_NODES XSHM_TEST_GENERIC
		export FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-$build/.libs}
		export FI_XLINK_PEER=xshm FI_TCP_IFACE=${FI_TCP_IFACE:-lo}
		export CK_XML_LOG_FILE_NAME=$work/$p.xml
		[ -n "${PEER_XLINK_CASES:-}" ] && export CK_RUN_CASE=$PEER_XLINK_CASES
		exec timeout -k 10 "${PEER_XLINK_TIMEOUT:-600}" "$build/test/peer/${p}_xlink"
	) >"$work/$p.log" 2>&1
	status=$?
	# One line per case (ck_results.awk), its test case named "xlink/<name>".
	awk -v prog="$p" -f "$top/test/peer/ck_results.awk" "$work/$p.xml" 2>/dev/null >"$work/$p.results"
	cat "$work/$p.results" >>"$results"
	if [ "$status" -ne 0 ] && ! grep -qv "	pass	" "$work/$p.results"; then
		# No case failed, yet the program did not end well (it checks
		# /dev/shm after its cases), or it ran none at all.
		printf '%s\terror\texit status %d after its cases (see %s)\n' "$p" "$status" \
			"$work/$p.log" >>"$results"
	fi
done

passed=0
failed=0
while IFS=$'\t' read -r name result msg; do
	if [ "$result" = pass ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "${result^^}: $name: $msg"
	fi
done <"$results"

# What each program left out: "left out: <suite>:<case> xN: <why>".
left=0
for p in $programs; do
	while read -r line; do
		echo "$line"
		n=$(sed -nE 's/^left out: [^ ]+ x([0-9]+):.*/\1/p' <<<"$line")
		left=$((left + ${n:-0}))
	done < <(grep -a '^left out: ' "$work/$p.log")
done
echo "peer-xlink: $left case(s) left out: they check the reference owner's internals" \
	"(its stats, get records, queues, peer_ops, faults, peer contexts), which" \
	"xlink keeps to itself; not counted as passed"
echo "peer-xlink: $passed cases passed under the xlink owner ($((SECONDS - start)) s)"
echo "peer-xlink: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
