#!/usr/bin/env bash
# Sanitizer and fuzz runs, each in its own copy of the sources so the
# default in-tree build is left alone:
#   asan  the whole suite (make check) built with AddressSanitizer and
#         UndefinedBehaviorSanitizer (gcc), halting on the first error;
#   tsan  the ring, pool and matching tests built with ThreadSanitizer (gcc);
#   fuzz  the receive-path fuzz target (libFuzzer, clang) for
#         XSHM_FUZZ_SECS seconds (default 60), then a replay of its corpus.
# Usage: test/sanitize.sh [--build-only] [asan] [tsan] [fuzz]
#   (no flavor: all three; the asan tests then run beside the tsan tests,
#   which mostly wait on their peers anyway, and the fuzz run comes last:
#   it creates regions so fast that a test's own leftover check, which
#   reads their headers, would race with it)
# XSHM_TESTS="test/prov/test_x ..." runs only those tests (asan, tsan).
# ThreadSanitizer sees only one process: the tests it runs share the ring,
# pool and matching state between threads of one process (the cross-process
# sharing is covered by the ASan run and the atomics' design, not by TSan).
# The fuzz target (test/fuzz/fuzz_recv.c) starts from the seed corpus
# test/fuzz/corpus/ (written by test/fuzz/make_corpus.py); new inputs go to
# build/fuzz/corpus/, a crashing one to build/fuzz/artifacts/.  Replay one
# with FI_PROVIDER_PATH=build/fuzz/.libs build/fuzz/test/fuzz/fuzz_recv FILE.
# Each flavor builds in build/<flavor>/ (git-ignored) from the files git
# knows (tracked and untracked, not ignored; uncommitted edits included) and
# prints one line "<flavor>: N passed, N failed"; the exit status is nonzero
# when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD

TSAN_TESTS="test/shm/test_ring test/shm/test_pool test/prov/test_tagged
test/prov/test_order test/prov/test_threads test/prov/test_cancel
test/peer/test_peer_srx"

ASAN_CFLAGS="-g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
TSAN_CFLAGS="-g -O1 -fsanitize=thread"
FUZZ_CFLAGS="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"

# Tests wait in bounded loops sized for uninstrumented code: give libcheck's
# per-case timeouts room for the slowdown.
export CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-4}

# Copies the sources git knows into build/<flavor>/, keeping modification
# times so that a second run rebuilds only what changed.
sync_sources() {
	local dir=$1
	mkdir -p "$dir"
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do
			[ -e "$f" ] && printf '%s\0' "$f"
		done |
		tar --null -T - -cf - | tar -xf - -C "$dir"
}

# configure_in DIR CC CFLAGS LDFLAGS [configure args]: configures once, and
# again whenever the flags change.
configure_in() {
	local dir=$1 cc=$2 cflags=$3 ldflags=$4
	shift 4
	local want="$cc|$cflags|$ldflags|$*"
	(
		cd "$dir" || exit 1
		[ -x configure ] || ./autogen.sh >/dev/null 2>&1 || exit 1
		if [ ! -f Makefile ] || [ "$(cat .xshm-flags 2>/dev/null)" != "$want" ]; then
			./configure --quiet CC="$cc" CFLAGS="$cflags" LDFLAGS="$ldflags" "$@" \
				>configure.out 2>&1 || { cat configure.out; exit 1; }
			echo "$want" >.xshm-flags
		fi
	)
}

# build_in DIR CC CFLAGS LDFLAGS [configure args]: the library, the
# provider and every check program.
build_in() {
	local dir=$1
	sync_sources "$dir"
	configure_in "$@" || return 1
	(cd "$dir" && make -j"$(nproc)" >build.out 2>&1 &&
		make -j"$(nproc)" check TESTS= >>build.out 2>&1) ||
		{ tail -n 30 "$dir/build.out"; return 1; }
}

build_asan() {
	build_in build/asan gcc "$ASAN_CFLAGS" "-fsanitize=address,undefined"
}

build_tsan() {
	build_in build/tsan gcc "$TSAN_CFLAGS" "-fsanitize=thread"
}

build_fuzz() {
	build_in build/fuzz clang-14 "$FUZZ_CFLAGS" "-fsanitize=address,undefined" --enable-fuzz
}

# check_in DIR LABEL [make check args]: runs make check there and prints
# its summary line.
check_in() {
	local dir=$1 label=$2
	shift 2
	find "$dir/test" -name '*.trs' -delete
	(cd "$dir" && make -j1 check "$@" >/dev/null 2>&1)
	"$dir/test/summary.sh" "$label"
}

test_asan() {
	local dir=build/asan
	# fi_pingpong (test/fi_pingpong.sh) is Debian's, not instrumented: it
	# loads the instrumented provider only with the ASan runtime preloaded.
	mkdir -p "$dir/wrap"
	cat >"$dir/wrap/fi_pingpong" <<-EOF
		#!/bin/sh
		LD_PRELOAD=$(gcc -print-file-name=libasan.so) exec $(command -v fi_pingpong) "\$@"
	EOF
	chmod +x "$dir/wrap/fi_pingpong"
	PATH="$top/$dir/wrap:$PATH" \
	ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		check_in "$dir" asan ${XSHM_TESTS:+TESTS="$XSHM_TESTS"}
}

test_tsan() {
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
		check_in build/tsan tsan TESTS="$(echo ${XSHM_TESTS:-$TSAN_TESTS})"
}

# The fuzz run and the corpus replay count as one test each.
test_fuzz() {
	local dir=build/fuzz secs=${XSHM_FUZZ_SECS:-60}
	local passed=0 failed=0 fuzzer=$top/build/fuzz/test/fuzz/fuzz_recv
	local args=(-timeout=10 -rss_limit_mb=4096 -max_len=8192)
	mkdir -p "$dir/corpus" "$dir/artifacts"
	# No provider is named "quiet": libfabric logs nothing (a warning per
	# malformed cell would slow the run down).
	export FI_PROVIDER_PATH=$top/$dir/.libs FI_LOG_PROV=${FI_LOG_PROV:-quiet}
	export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	# New inputs go to the build's corpus; test/fuzz/corpus/ stays as committed.
	if "$fuzzer" "${args[@]}" -max_total_time="$secs" -print_final_stats=1 \
		-artifact_prefix="$dir/artifacts/" "$dir/corpus" test/fuzz/corpus \
		>"$dir/fuzz.log" 2>&1; then
		passed=$((passed + 1))
		echo "fuzz: $(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' \
			"$dir/fuzz.log") inputs in $secs s"
	else
		failed=$((failed + 1))
		echo "FAILED: fuzz run (build/fuzz/fuzz.log, input in build/fuzz/artifacts/)"
		grep -A 30 -E 'ERROR|runtime error' "$dir/fuzz.log" | head -n 40 | sed 's/^/    /'
	fi
	if "$fuzzer" "${args[@]}" test/fuzz/corpus/* >"$dir/replay.log" 2>&1; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAILED: corpus replay (build/fuzz/replay.log)"
		tail -n 30 "$dir/replay.log" | sed 's/^/    /'
	fi
	echo "fuzz: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}

# run FLAVOR: its tests, or one failure when it did not build.
run() {
	local flavor=$1 start=$SECONDS status=0
	if [ -n "${built[$flavor]:-}" ]; then
		"test_$flavor" || status=1
	else
		echo "$flavor: 0 passed, 1 failed (build failed)"
		status=1
	fi
	echo "$flavor: tests took $((SECONDS - start)) s"
	return $status
}

build_only=
[ "${1:-}" = --build-only ] && { build_only=1; shift; }
flavors=(${*:-asan tsan fuzz})
declare -A built
status=0
for flavor in "${flavors[@]}"; do
	case $flavor in
	asan|tsan|fuzz) ;;
	*) echo "unknown flavor: $flavor (asan, tsan or fuzz)" >&2; exit 2 ;;
	esac
	start=$SECONDS
	if "build_$flavor"; then
		built[$flavor]=1
	else
		status=1
	fi
	echo "$flavor: build took $((SECONDS - start)) s"
done
[ -n "$build_only" ] && exit $status

if [ "${#flavors[@]}" -gt 1 ] && [[ " ${flavors[*]} " == *" asan "* ]]; then
	asan_out=$(mktemp)
	run asan >"$asan_out" 2>&1 &
	asan_pid=$!
	[[ " ${flavors[*]} " == *" tsan "* ]] && { run tsan || status=1; }
	wait "$asan_pid" || status=1
	cat "$asan_out"
	rm -f "$asan_out"
	[[ " ${flavors[*]} " == *" fuzz "* ]] && { run fuzz || status=1; }
else
	for flavor in "${flavors[@]}"; do
		run "$flavor" || status=1
	done
fi
exit $status
