#!/usr/bin/env bash
# Runs, against $XSHM_TEST_PROVIDER (default xlink), the provider-generic
# test cases of test/prov (XSHM_TEST_GENERIC=1, see test/prov/harness.h)
# and the tests of test/xlink, in two modes: "one" (every process on one
# node) and "split" (XSHM_TEST_SPLIT_NODES=1: forked children on another
# FI_XSHM_NODE_ID, so that an owner of two paths talks to them over its
# remote path).  Build first: make check TESTS=
#
# Prints PASS or FAIL per program and mode (a failure with the end of its
# log), then one line: "xlink: N passed, N failed", counting libcheck's
# checks as test/summary.sh does; a program that failed without a libcheck
# summary (crashed, provider not found, timed out) counts as one failure.
# Exits nonzero when anything failed.
#
# Environment:
#   XSHM_TEST_PROVIDER   the provider (default xlink); not found: a failure
#   XLINK_MODES          the modes to run (default "one split")
#   XSHM_TEST_GENERIC    1 (default); "extra" also runs the optional
#                        features' cases and programs
#   XLINK_TIMEOUT        seconds per program (default 900)
#   XLINK_LOGDIR         where the logs go (default test/xlink/logs)
#   FI_PROVIDER_PATH     default: the build's .libs
#   FI_TCP_IFACE         default lo (the simulated nodes are one machine)
set -uo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
build=${XSHM_BUILDDIR:-$top}

export XSHM_TEST_PROVIDER=${XSHM_TEST_PROVIDER:-xlink}
export XSHM_TEST_GENERIC=${XSHM_TEST_GENERIC:-1}
export FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-$build/.libs}
export FI_TCP_IFACE=${FI_TCP_IFACE:-lo}
export XSHM_BUILDDIR=$build
modes=${XLINK_MODES:-one split}
limit=${XLINK_TIMEOUT:-900}
logdir=${XLINK_LOGDIR:-$build/test/xlink/logs}

# test/prov programs with provider-generic cases (the others are all
# xshm-specific, or all optional features: see test/xlink/README.md).
generic_prov="test_getinfo test_av test_av_table test_cq test_ep test_msg test_tagged
	test_sizes test_order test_peek test_cancel test_cntr test_completion test_bad_input
	test_multi_recv"
extra_prov="test_close test_poll test_threads test_wait"
xlink_tests="test_paths test_path_ops test_path_kill test_auto_progress test_multi_recv_paths"

programs=()
for t in $generic_prov; do programs+=("test/prov/$t"); done
if [ "$XSHM_TEST_GENERIC" = extra ]; then
	for t in $extra_prov; do programs+=("test/prov/$t"); done
fi
for t in $xlink_tests; do programs+=("test/xlink/$t"); done

passed=0
failed=0
for mode in $modes; do
	case $mode in
	one) split=0 ;;
	split) split=1 ;;
	*) echo "unknown mode $mode (one, split)" >&2; exit 2 ;;
	esac
	mkdir -p "$logdir/$mode"
	for prog in "${programs[@]}"; do
		name=$mode/$(basename "$prog")
		log=$logdir/$name.log
		if [ ! -x "$build/$prog" ]; then
			echo "FAIL: $name (not built: make check TESTS=)"
			failed=$((failed + 1))
			continue
		fi
		XSHM_TEST_SPLIT_NODES=$split timeout -k 10 "$limit" "$build/$prog" >"$log" 2>&1
		rc=$?
		summary=$(grep -aE '^[0-9]+%: Checks: [0-9]+' "$log" | tail -n 1)
		if [ -n "$summary" ]; then
			checks=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$summary")
			failures=$(sed -E 's/.*Failures: ([0-9]+).*/\1/' <<<"$summary")
			errors=$(sed -E 's/.*Errors: ([0-9]+).*/\1/' <<<"$summary")
			bad=$((failures + errors))
			passed=$((passed + checks - bad))
			failed=$((failed + bad))
			# Cases passed but the program failed after (a region left behind).
			if [ "$bad" -eq 0 ] && [ "$rc" -ne 0 ]; then
				failed=$((failed + 1))
				bad=1
			fi
		else
			checks=0
			bad=$((rc != 0))
			[ "$rc" -eq 0 ] && passed=$((passed + 1)) || failed=$((failed + 1))
		fi
		if [ "$bad" -eq 0 ] && [ "$rc" -eq 0 ]; then
			echo "PASS: $name ($checks checks)"
		else
			[ "$rc" -eq 124 ] && why="timed out after ${limit}s" || why="exit $rc"
			echo "FAIL: $name ($why; $summary)"
			tail -n 20 "$log" | sed 's/^/    /'
		fi
	done
done
echo "xlink: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
