#!/usr/bin/env bash
# The main job: two processes exchange tagged messages through xshm and
# print one-way latency and streaming bandwidth per message size.
set -euo pipefail
cd "$(dirname "$0")/.."
. test/build.sh
xshm_install_deps
xshm_build
FI_PROVIDER_PATH="$PWD/.libs" exec test/bench/pingpong -p xshm "$@"
