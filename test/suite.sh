#!/usr/bin/env bash
# Builds xshm and runs the whole test suite (make check), then prints one
# line "N passed, N failed" summed over every test case of every program.
set -uo pipefail
cd "$(dirname "$0")/.."
. test/build.sh
xshm_install_deps || exit 1
xshm_build || exit 1

make -j1 check >/dev/null 2>&1
status=$?
test/summary.sh
exit $status
