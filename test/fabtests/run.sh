#!/usr/bin/env bash
# libfabric's own provider tests (fabtests 1.17.0, runfabtests.sh) against
# the xshm built in this tree, or the owner provider xlink
# (FABTESTS_PROVIDER=xlink).  Each test's result is compared with
# test/fabtests/expected.txt (expected-xlink.txt): a test whose result is
# the expected one counts as passed, any other (a new failure, an
# unexpected pass, a test of the sets run that did not run at all) as
# failed.  The last line is "fabtests: N passed, N failed" ("fabtests-xlink:
# ..."), after, for xshm, survivor.sh's own line (a server whose client is
# killed).
#
# Usage: test/fabtests/run.sh [--compare] [SET...]
#   SET        runfabtests.sh test sets (default: quick standard complex)
#   --compare  also run libfabric's own shm (Debian's 1.17) and print a table
#              of both providers' results; counts only xshm's
# fabtests come from test/thirdparty.sh (FABTESTS_SRC, FABTESTS_PREFIX).
# FABTESTS_TIMEOUT (default 60) bounds each test, in seconds.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
prov=${FABTESTS_PROVIDER:-xshm}
if [ "$prov" = xshm ]; then
	expected=$here/expected.txt
	label=fabtests
else
	expected=$here/expected-$prov.txt
	label=fabtests-$prov
fi

compare=0
if [ "${1:-}" = --compare ]; then
	compare=1
	shift
fi
sets=${*:-quick standard complex}

prefix=$("$top/test/thirdparty.sh" fabtests) || {
	echo "fabtests: 0 passed, 1 failed (fabtests could not be built: see above)"
	exit 1
}

# The complex suite's configuration: ours, shm's from fabtests.
complex_config() {
	if [ -f "$here/$1.test" ]; then
		echo "$here/$1.test"
	else
		echo "$prefix/share/fabtests/test_configs/$1/all.test"
	fi
}

# results PROVIDER SET: "set<TAB>Result<TAB>test" lines, the test as
# runfabtests prints it without its -p "PROVIDER".  Runs in a folder of its
# own, so that runfabtests finds no exclude file (test_configs/) to apply.
results() {
	local prov=$1 set=$2 scratch log
	scratch=$(mktemp -d)
	log=$top/build/fabtests-$prov-$set.log
	(cd "$scratch" &&
		FI_PROVIDER_PATH=$top/.libs "$prefix/bin/runfabtests.sh" -v \
			-p "$prefix/bin/" -T "${FABTESTS_TIMEOUT:-60}" -t "$set" \
			-u "$(complex_config "$prov")" "$prov") >"$log" 2>&1
	rm -rf "$scratch"
	# -v writes "- name: <test> -p "prov"" and, below it, "  result: <Result>".
	awk -v set="$set" -v suffix=" -p \"$prov\"" '
		/^- name: / {
			name = $0
			sub(/^- name: +/, "", name)
			sub(suffix "$", "", name)
		}
		/^  result: / { print set "\t" $2 "\t" name }' "$log"
}

# "set<TAB>Result<TAB>test" for the sets asked for, comments dropped.
expected_results() {
	sed -E 's/[[:space:]]*#.*//; /^[[:space:]]*$/d' "$expected" |
		sed -E 's/^([a-z]+)[[:space:]]+([A-Za-z]+)[[:space:]]+/\1\t\2\t/' |
		awk -F'\t' -v sets=" $sets " 'index(sets, " " $1 " ")'
}

actual=$(mktemp)
trap 'rm -f "$actual"' EXIT
for set in $sets; do
	start=$SECONDS
	results "$prov" "$set" >>"$actual"
	echo "$label: set $set took $((SECONDS - start)) s (log: build/fabtests-$prov-$set.log)"
done

if [ "$compare" = 1 ]; then
	shm=$(mktemp)
	for set in $sets; do
		results shm "$set" >>"$shm"
	done
	printf '%-9s %-8s %-8s %s\n' set shm xshm test
	awk -F'\t' 'FILENAME == ARGV[1] { shm[$1 "\t" $3] = $2; next }
		{ k = $1 "\t" $3
		  printf "%-9s %-8s %-8s %s\n", $1, (k in shm ? shm[k] : "-"), $2, $3 }' \
		"$shm" "$actual"
	rm -f "$shm"
fi

# Its own line, "survivor: N passed, N failed", which test/suite.sh sums too.
survivor=0
if [ "$prov" = xshm ]; then
	bash "$here/survivor.sh" "$prefix" 2>/dev/null
	survivor=$?
fi

awk -F'\t' -v label="$label" -v list="${expected#"$top"/}" '
	FILENAME == ARGV[1] { want[$1 " " $3] = $2; next }
	{
		t = $1 " " $3
		seen[t] = 1
		if (!(t in want)) {
			printf "%s: UNLISTED %s (%s): add it to %s\n", label, t, $2, list
			failed++
		} else if (want[t] != $2) {
			printf "%s: UNEXPECTED %s: expected %s, got %s\n", label, t, want[t], $2
			failed++
		} else
			passed++
	}
	END {
		for (t in want)
			if (!(t in seen)) {
				printf "%s: MISSING %s: expected %s, did not run\n", label, t, want[t]
				failed++
			}
		printf "%s: %d passed, %d failed\n", label, passed, failed
		exit failed > 0
	}' <(expected_results) "$actual" && [ "$survivor" = 0 ]
