#!/bin/bash
# test/bench/copy_floor, the floor compare.sh sets beside xshm's large
# messages: every method copies every size whole (copy_floor checks the
# bytes that arrived and exits non-zero when one is missing), with -W,
# -W -R and -O 16 too, and prints one positive latency per method and
# size.  XSHM_BUILDDIR comes from the environment.
. "$(dirname "$0")/floor_check.sh"

sizes=1,4097,100001,1048576
rows="floor-memcpy floor-memcpy-split floor-cma floor-cma-split"
for opts in "" "-W" "-W -R" "-O 16"; do
	# shellcheck disable=SC2086
	floor_check "copy_floor $opts" "$rows" "$sizes" \
		"${XSHM_BUILDDIR:-.}/test/bench/copy_floor" $opts -i 20
done
echo "PASS: copy_floor, 4 methods, sizes $sizes, plain, -W, -W -R and -O 16"
