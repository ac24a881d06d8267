# Sourced by test/ring_floor.sh, test/stream_floor.sh and test/copy_floor.sh:
# runs one of test/bench's floor programs and checks what it printed.

# floor_check WHAT ROWS SIZES PROGRAM [ARGS...]: runs PROGRAM -s SIZES
# ARGS for two minutes at most, and fails the test, with the output, unless
# it exits 0 with one positive value (fourth column) for each of ROWS
# (first column) at each size.
floor_check() {
	local what=$1 rows=$2 sizes=$3 program=$4 out rc row size
	shift 4
	out=$(timeout 120 "$program" -s "$sizes" "$@" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "FAIL: $what exited with $rc"
		echo "$out"
		exit 1
	fi
	for row in $rows; do
		for size in ${sizes//,/ }; do
			awk -v r="$row" -v s="$size" '
				$1 == r && $2 == s && $4 > 0 { n++ }
				END { exit n != 1 }' <<<"$out" && continue
			echo "FAIL: $what: no single positive value for $row at $size B"
			echo "$out"
			exit 1
		done
	done
}
