#!/bin/bash
# test/bench/stream_floor, the two-copy floor under streaming bandwidth:
# it exits 0 (the receiver checks the bytes of the last message of every
# point), refuses more slots than it has, and prints one positive
# bandwidth per size, for a ring of 64 slots and one of 2.
# XSHM_BUILDDIR comes from the environment.

prog=${XSHM_BUILDDIR:-.}/test/bench/stream_floor
sizes=1,64,4096,65536

for slots in 64 2; do
	out=$(timeout 120 "$prog" -s "$sizes" -i 4 -k "$slots" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "FAIL: stream_floor -k $slots exited with $rc"
		echo "$out"
		exit 1
	fi
	for size in ${sizes//,/ }; do
		awk -v s="$size" '$1 == "stream" && $2 == s && $4 > 0 { n++ } END { exit n != 1 }' \
			<<<"$out" || { echo "FAIL: stream_floor -k $slots: no single positive bandwidth at $size B"; echo "$out"; exit 1; }
	done
done
if timeout 10 "$prog" -k 65 -s 64 >/dev/null 2>&1; then
	echo "FAIL: stream_floor took 65 slots"
	exit 1
fi
echo "PASS: stream_floor, sizes $sizes, 64 and 2 slots"
