#!/usr/bin/env bash
# Benchmarks xshm against libfabric's built-in shm: builds if needed, then
# runs test/bench/compare.py (--help for its options), which prints a table
# per benchmark and writes CSV and PNG files under bench-results/.
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/build.sh
xshm_install_deps
xshm_build
XSHM_BENCH_COMMAND="$(printf '%q ' "$0" "$@")"
export XSHM_BENCH_COMMAND="${XSHM_BENCH_COMMAND% }"
export FI_PROVIDER_PATH="$PWD/.libs"
# Debian's python3, which has python3-matplotlib (not one earlier in PATH)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
exec "$PY" test/bench/compare.py "$@"
