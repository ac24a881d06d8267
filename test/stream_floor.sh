#!/bin/bash
# test/bench/stream_floor, the two-copy floor under streaming bandwidth:
# it exits 0 (the receiver checks the bytes of the last message of every
# point), refuses more slots than it has, and prints one positive
# bandwidth per size, for a ring of 64 slots and one of 2, and with -l one
# positive latency per size.
# XSHM_BUILDDIR comes from the environment.
. "$(dirname "$0")/floor_check.sh"

prog=${XSHM_BUILDDIR:-.}/test/bench/stream_floor
sizes=1,64,4096,65536
for slots in 64 2; do
	floor_check "stream_floor -k $slots" stream "$sizes" "$prog" -i 4 -k "$slots"
done
floor_check "stream_floor -l" pingpong "$sizes" "$prog" -i 4 -l
if timeout 10 "$prog" -k 65 -s 64 >/dev/null 2>&1; then
	echo "FAIL: stream_floor took 65 slots"
	exit 1
fi
echo "PASS: stream_floor, sizes $sizes, 64 and 2 slots, and -l"
