#!/bin/bash
# test/bench/copy_floor, the floor compare.sh sets beside xshm's large
# messages: every method copies every size whole (copy_floor checks the
# bytes that arrived and exits non-zero when one is missing), with -W,
# -W -R and -O 16 too, and prints one positive latency per method and size.  XSHM_BUILDDIR comes
# from the environment.

sizes=1,4097,100001,1048576
methods="memcpy memcpy-split cma cma-split"

fail() {
	echo "FAIL: copy_floor $*"
	echo "$out"
	exit 1
}

for opts in "" "-W" "-W -R" "-O 16"; do
	# shellcheck disable=SC2086
	out=$(timeout 120 "${XSHM_BUILDDIR:-.}/test/bench/copy_floor" $opts -s "$sizes" -i 20 2>&1)
	rc=$?
	[ "$rc" -eq 0 ] || fail "$opts: exited with $rc"
	for m in $methods; do
		for size in ${sizes//,/ }; do
			awk -v m="floor-$m" -v s="$size" '
				$1 == m && $2 == s && $4 > 0 { n++ }
				END { exit n != 1 }' <<<"$out" ||
				fail "$opts: no single positive latency for $m at $size B"
		done
	done
done
echo "PASS: copy_floor, 4 methods, sizes $sizes, plain, -W, -W -R and -O 16"
