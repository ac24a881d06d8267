#!/bin/bash
# test/bench/ring_floor, the floor compare.sh sets beside xshm's small
# messages: it exits 0 (each process checks the bytes of the last message
# of every point) and prints one positive latency per size, up to a whole
# cell's payload.  XSHM_BUILDDIR comes from the environment.

sizes=1,8,1024,2008

out=$(timeout 120 "${XSHM_BUILDDIR:-.}/test/bench/ring_floor" -s "$sizes" -i 200 2>&1)
rc=$?
if [ "$rc" -ne 0 ]; then
	echo "FAIL: ring_floor exited with $rc"
	echo "$out"
	exit 1
fi
for size in ${sizes//,/ }; do
	awk -v s="$size" '$1 == "ring" && $2 == s && $4 > 0 { n++ } END { exit n != 1 }' \
		<<<"$out" || { echo "FAIL: ring_floor: no single positive latency at $size B"; echo "$out"; exit 1; }
done
echo "PASS: ring_floor, sizes $sizes"
