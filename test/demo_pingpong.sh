#!/bin/bash
# The README's main job: test/demo.sh runs test/bench/pingpong, two processes
# exchanging tagged messages through xshm.  Passes (exit 0) when it exits 0
# and prints, for every power of two from 1 byte to the maximum size, one
# line with a positive latency and bandwidth; otherwise prints its output
# and fails.  FI_PROVIDER_PATH and XSHM_BUILDDIR come from the environment.

max=65536
out=$(timeout 120 "${XSHM_BUILDDIR:-.}/test/bench/pingpong" -p xshm -i 200 -w 20 -m "$max" 2>&1)
rc=$?

fail() {
	echo "FAIL: pingpong -p xshm: $*"
	echo "$out"
	exit 1
}

[ "$rc" -eq 0 ] || fail "exited with $rc"
want=1
while read -r size latency bandwidth; do
	[ "$size" = "$want" ] || fail "size $size where $want was due"
	awk -v l="$latency" -v b="$bandwidth" 'BEGIN { exit !(l > 0 && b > 0) }' ||
		fail "size $size: latency '$latency', bandwidth '$bandwidth'"
	want=$((want * 2))
done < <(grep -v '^#' <<<"$out")
[ "$want" -eq $((max * 2)) ] || fail "the last size printed was $((want / 2)), not $max"
echo "PASS: pingpong -p xshm, 1 B to $max B"
