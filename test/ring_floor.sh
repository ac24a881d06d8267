#!/bin/bash
# test/bench/ring_floor, the floor compare.sh sets beside xshm's small
# messages: it exits 0 (each process checks the bytes of the last message
# of every point) and prints one positive latency per size, up to a whole
# cell's payload.  XSHM_BUILDDIR comes from the environment.
. "$(dirname "$0")/floor_check.sh"

sizes=1,8,1024,2008
floor_check ring_floor ring "$sizes" "${XSHM_BUILDDIR:-.}/test/bench/ring_floor" -i 200
echo "PASS: ring_floor, sizes $sizes"
