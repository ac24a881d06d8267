#!/usr/bin/env bash
# Builds xshm and runs the whole test suite: make check in this tree, the
# peer conformance suite against libfabric 1.22's shm
# (test/peer/peer_shm122.sh) and with xlink as the owner
# (test/peer/peer_xlink.sh), xshm and xlink under each libfabric at hand
# (test/libfabric_versions.sh), the owner provider xlink's tests
# (test/xlink/run.sh) and MPI programs through it (test/mpi/run.sh), then
# the sanitizer and fuzz runs of
# test/sanitize.sh (XSHM_SANITIZE=0 leaves them out), then libfabric's
# fabtests (test/fabtests/run.sh, on xshm and, the quick set, on xlink on
# one node and across two simulated ones; XSHM_FABTESTS=0 leaves them out),
# then a
# check that the suite left no xshm file in /dev/shm.  What comes from
# ../shared/thirdparty (test/thirdparty.sh) builds while the default tests
# run.
# Each part prints "<part>: N passed, N failed" and its time; the last line,
# "N passed, N failed", sums every part.
set -uo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$self")/.."

# libfabric 1.17's verbs provider reads the whole of /proc/kallsyms, 1 KiB
# per read, in every process that calls fi_getinfo: about 0.1 s of kernel
# time each, and the suite starts thousands of processes (test_msg: 4.4 s,
# 1.25 s without it).  No test uses verbs, so as root the suite runs in a
# mount namespace of its own in which that file is empty.
if [ -z "${XSHM_SUITE_NS:-}" ] && [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	XSHM_SUITE_NS=1 exec unshare -m --propagation private bash "$self" "$@"
fi
if [ "${XSHM_SUITE_NS:-}" = 1 ]; then
	mount --bind /dev/null /proc/kallsyms || echo "suite: /proc/kallsyms stays readable"
fi

. test/build.sh

results=$(mktemp)
shm_before=$(mktemp)
trap 'rm -f "$results" "$shm_before"' EXIT

xshm_files() {
	find /dev/shm -maxdepth 1 -name 'xshm*' -user "$(id -u)" -printf '%f\n' 2>/dev/null |
		sort
}

# A region's owner pid (struct xshm_region_hdr.owner_pid, at byte 28).
region_owner() {
	od -An -t d4 -j 28 -N 4 "/dev/shm/$1" 2>/dev/null | tr -d ' '
}

# Files of xshm that appeared during the run and are still there.  On a
# developer's machine a region whose owner still runs belongs to someone
# else's concurrent test, not to this suite (all of whose processes are gone).
new_leftovers() {
	local name owner
	while read -r name; do
		[ -e "/dev/shm/$name" ] || continue
		owner=$(region_owner "$name")
		if [ -z "${CI:-}" ] && [[ $name != xshm-av-* ]] &&
			[ -n "$owner" ] && [ "$owner" -gt 0 ] && kill -0 "$owner" 2>/dev/null; then
			continue
		fi
		echo "$name"
	done < <(xshm_files | comm -13 "$shm_before" -)
}

# Counted when seen twice, two seconds apart: children killed at the end of
# a test may still be exiting, and a region someone else is creating right
# now has no header yet.
check_shm_leftovers() {
	local first second left
	first=$(new_leftovers)
	sleep 2
	second=$(new_leftovers)
	left=$(comm -12 <(echo "$first") <(echo "$second") | grep -c .)
	comm -12 <(echo "$first") <(echo "$second") | grep . | sed 's|^|left in /dev/shm: |'
	if [ "$left" -eq 0 ]; then
		echo "shm-leftovers: 1 passed, 0 failed"
	else
		echo "shm-leftovers: 0 passed, 1 failed"
	fi
}

timed() {
	local label=$1 start=$SECONDS
	shift
	"$@" | tee -a "$results"
	echo "$label: took $((SECONDS - start)) s"
}

default_suite() {
	if [ "$built" != 1 ]; then
		echo "default: 0 passed, 1 failed (build)"
		return
	fi
	make -j1 check >/dev/null 2>&1
	test/summary.sh default
}

xshm_files >"$shm_before"
xshm_install_deps || echo "default: 0 passed, 1 failed (installing packages)" | tee -a "$results"
sanitize=${XSHM_SANITIZE:-1}
# The default build runs alone; the sanitizer builds then overlap the
# default tests, which mostly wait, instead of competing with that build.
start=$SECONDS
built=0
xshm_build && built=1
echo "default: build took $((SECONDS - start)) s"
fabtests=${XSHM_FABTESTS:-1}
if [ "$sanitize" != 0 ]; then
	sanitize_build=$(mktemp)
	bash test/sanitize.sh --build-only >"$sanitize_build" 2>&1 &
	sanitize_build_pid=$!
fi
thirdparty_build=$(mktemp)
(test/thirdparty.sh libfabric-1.22
	[ "$fabtests" = 0 ] || test/thirdparty.sh fabtests) >"$thirdparty_build" 2>&1 &
thirdparty_build_pid=$!
timed default default_suite
wait "$thirdparty_build_pid"
grep -v '^/' "$thirdparty_build"
rm -f "$thirdparty_build"
if [ "$built" = 1 ]; then
	timed peer-shm122 bash test/peer/peer_shm122.sh
	timed libfabric-versions bash test/libfabric_versions.sh
	timed peer-xlink bash test/peer/peer_xlink.sh
	timed xlink bash test/xlink/run.sh
	FI_PROVIDER_PATH=$PWD/.libs timed mpi bash test/mpi/run.sh
fi
if [ "$sanitize" != 0 ]; then
	wait "$sanitize_build_pid"
	cat "$sanitize_build"
	rm -f "$sanitize_build"
	timed sanitize bash test/sanitize.sh
fi
if [ "$fabtests" != 0 ]; then
	timed fabtests bash test/fabtests/run.sh
	FABTESTS_PROVIDER=xlink timed fabtests-xlink bash test/fabtests/run.sh quick
	FABTESTS_PROVIDER=xlink FABTESTS_NODES=2 \
		timed fabtests-xlink-2nodes bash test/fabtests/run.sh quick
fi
timed shm-leftovers check_shm_leftovers

read -r passed failed < <(sed -nE 's/^[a-z0-9-]+: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' "$results" |
	awk '{ p += $1; f += $2 } END { print p + 0, f + 0 }')
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
