#!/usr/bin/env bash
# Sums the results of the last `make check`: each libcheck program counts
# its test cases; a script, or a program that died before its summary,
# counts as one test.  An argument labels the line: "<label>: N passed, ...".
label=${1:+$1: }
cd "$(dirname "$0")/.."
passed=0
failed=0
for trs in $(find test -name '*.trs' | sort); do
	log=${trs%.trs}.log
	result=$(sed -n 's/^:test-result: //p' "$trs")
	summary=$(grep -E '^[0-9]+%: Checks: [0-9]+' "$log" | tail -n 1)
	if [ -n "$summary" ]; then
		checks=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$summary")
		failures=$(sed -E 's/.*Failures: ([0-9]+).*/\1/' <<<"$summary")
		errors=$(sed -E 's/.*Errors: ([0-9]+).*/\1/' <<<"$summary")
		bad=$((failures + errors))
		passed=$((passed + checks - bad))
		failed=$((failed + bad))
		# A program whose cases passed but which failed afterwards
		# (for example a region left in /dev/shm) still fails.
		if [ "$bad" -eq 0 ] && [ "$result" != PASS ]; then
			failed=$((failed + 1))
		fi
	elif [ "$result" = PASS ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
	if [ "$result" != PASS ]; then
		echo "FAILED: ${trs%.trs}"
		tail -n 20 "$log" | sed "s/^/    /"
	fi
done
echo "$label$passed passed, $failed failed"
[ "$failed" -eq 0 ]
