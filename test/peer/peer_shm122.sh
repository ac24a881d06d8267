#!/usr/bin/env bash
# Runs the peer conformance suite (test/peer/) against libfabric 1.22's shm,
# a second peer provider of the same peer API, and compares every case's
# result with test/peer/shm122.expected, where each case that fails is
# listed with why (shm departing from fi_peer(3), in the page's words).
#
#   XSHM_LIBFABRIC_122  libfabric 1.22's install prefix (default: built by
#                       test/thirdparty.sh into build/libfabric-1.22)
#   PEER_SHM122_CASES   a CK_RUN_CASE for the programs (e.g. upstream/flows)
#   PEER_SHM122_KEEP    a folder to keep the programs' logs and XML in
#   CK_TIMEOUT_MULTIPLIER  of the cases' libcheck timeouts (default 0.2)
#
# The test programs are this tree's (built if missing), loaded with 1.22's
# libfabric.so through LD_LIBRARY_PATH; the peer is "shm"
# (XSHM_TEST_PROVIDER) built from 1.22's headers, whose get_tag has no size
# argument (XSHM_TEST_PEER_ABI).  xshm-specific cases are not run.  Prints a
# line per case that did not do as expected, and ends with
# "peer-shm122: N passed, N failed": a case passes when its result is the
# expected one (a listed failure that fails passes); an unexpected pass or
# an unexpected failure fails.
#
# Three cases that shm122.expected lists never complete on shm: they end
# only at their timeouts, 30, 30 and 90 s.  The cases that pass take under
# a second here, so a fifth of each timeout (6 s or more) still leaves them
# room, and the hanging ones end in 30 s instead of 150.
set -uo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
expected=test/peer/shm122.expected
programs="test_peer_open test_peer_bad_input test_peer_cq test_peer_srx"

prefix=${XSHM_LIBFABRIC_122:-$(test/thirdparty.sh libfabric-1.22)}
if [ ! -e "$prefix/lib/libfabric.so.1" ]; then
	echo "peer-shm122: 0 passed, 1 failed (no libfabric 1.22 in '$prefix')"
	exit 1
fi

missing=
for p in $programs; do
	[ -x "test/peer/$p" ] || missing="$missing test/peer/$p"
done
if [ -n "$missing" ] && ! make -j2 $missing >/dev/null 2>&1; then
	echo "peer-shm122: 0 passed, 1 failed (building$missing)"
	exit 1
fi

work=${PEER_SHM122_KEEP:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${PEER_SHM122_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

# shm names its regions <pid>:<domain>:<endpoint>; a process killed by a
# case's timeout or a crash leaves its regions behind.
shm_regions() {
	find /dev/shm -maxdepth 1 -user "$(id -u)" -regextype posix-extended \
		-regex '/dev/shm/[0-9]+:[0-9]+:[0-9]+' -printf '%f\n' 2>/dev/null | sort
}
shm_regions >"$work/regions.before"

# case <tab> result (pass, fail or error) <tab> message, one line per case
results=$work/results
: >"$results"
start=$SECONDS
for p in $programs; do
	(
		unset FI_PROVIDER_PATH
		export LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		export XSHM_TEST_PROVIDER=shm XSHM_TEST_PEER_ABI=libfabric-1.22
		export CK_XML_LOG_FILE_NAME=$work/$p.xml
		export CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-0.2}
		[ -n "${PEER_SHM122_CASES:-}" ] && export CK_RUN_CASE=$PEER_SHM122_CASES
		exec "test/peer/$p"
	) >"$work/$p.log" 2>&1
	status=$?
	# One line per case (ck_results.awk), its test case named "<style>/<name>".
	awk -v prog="$p" -f "$top/test/peer/ck_results.awk" "$work/$p.xml" 2>/dev/null >>"$results"
	if ! grep -q "^$p:" "$results"; then
		printf '%s\terror\tno results (exit status %d; see %s)\n' "$p" "$status" \
			"$work/$p.log" >>"$results"
	fi
done

# The expected failures: "fail <pattern>" lines, each group of them
# followed by its "why:" and the page's words (see the file).
awk '
	/^fail / { pats[++n] = $2; if (open) { open = 0; g++ } pending = 1; grp[n] = g + 0; next }
	/^[ \t]+why:/ { sub(/^[ \t]+why:[ \t]*/, ""); why[g + 0] = $0; open = 1; next }
	/^[ \t]+[a-z_]+\([0-9]\):/ { quoted[g + 0] = 1; open = 1; next }
	END {
		for (i = 1; i <= n; i++) {
			if (!(grp[i] in why) || !(grp[i] in quoted))
				printf "BAD\t%s\n", pats[i]
			else
				printf "%s\t%s\n", pats[i], why[grp[i]]
		}
	}
' "$expected" >"$work/expected"
if grep -q '^BAD' "$work/expected"; then
	sed -n 's/^BAD\t/peer-shm122: expected failure without a reason and the page'\''s words: /p' \
		"$work/expected"
	echo "peer-shm122: 0 passed, 1 failed ($expected)"
	exit 1
fi

# A failed child's own words ("[child PID] ..." on its stderr) are in its
# program's log, which is removed at the end: print them with the case.
child_said() {
	local prog=${1%%:*} pid
	pid=$(sed -n 's/.*child \([0-9][0-9]*\) exited.*/\1/p' <<<"$2")
	[ -n "$pid" ] && grep -F "[child $pid]" "$work/$prog.log" | head -5 | sed 's/^/    /'
}

passed=0
failed=0
xfail=0
declare -A used
while IFS=$'\t' read -r name result msg; do
	why=
	while IFS=$'\t' read -r pat reason; do
		# shellcheck disable=SC2053
		if [[ $name == $pat ]]; then
			why=$reason
			used[$pat]=1
			break
		fi
	done <"$work/expected"
	if [ -z "$why" ] && [ "$result" = pass ]; then
		passed=$((passed + 1))
	elif [ -n "$why" ] && [ "$result" != pass ]; then
		passed=$((passed + 1))
		xfail=$((xfail + 1))
	elif [ -n "$why" ]; then
		failed=$((failed + 1))
		echo "UNEXPECTED PASS: $name (listed: $why)"
	else
		failed=$((failed + 1))
		echo "UNEXPECTED ${result^^}: $name: $msg"
		child_said "$name" "$msg"
	fi
done <"$results"
while IFS=$'\t' read -r pat reason; do
	[ -n "${used[$pat]:-}" ] || [ -n "${PEER_SHM122_CASES:-}" ] ||
		echo "note: no case matches $pat in $expected"
done <"$work/expected"

left=$(shm_regions | comm -13 "$work/regions.before" - | while read -r name; do
	kill -0 "${name%%:*}" 2>/dev/null || { rm -f "/dev/shm/$name" && echo "$name"; }
done | grep -c .)
[ "$left" -eq 0 ] || echo "removed $left region(s) of shm processes killed or crashed in their cases"
echo "peer-shm122: $((passed - xfail)) cases passed and $xfail failed as $expected expects" \
	"($((SECONDS - start)) s)"
echo "peer-shm122: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
