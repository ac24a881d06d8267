#!/usr/bin/env bash
# Compares this tree's xshm with the build of another revision, loaded side
# by side in the same benchmark processes (the baseline is built with
# XSHM_NAME="xshmbase"), through test/bench/compare.py:
#
#   bash test/bench/ab.sh REV [compare.py options]
#   e.g. bash test/bench/ab.sh HEAD~3 -b latency -s 8,1K,4K -r 12
#
# Ratios are this tree / REV.  On a machine whose placement drifts, a
# change of a few percent needs a dozen repetitions or more.
set -euo pipefail
cd "$(dirname "$0")/../.."
rev=${1:?usage: ab.sh REV [compare.py options]}
shift
. test/build.sh
xshm_install_deps
xshm_build
base=build/ab-base
rm -rf "$base"
git worktree prune
git worktree add --detach -f "$base" "$rev" >/dev/null
(cd "$base" && ./autogen.sh >/dev/null && ./configure --quiet &&
 make -j"$(nproc)" CFLAGS='-g -O2 -DXSHM_NAME=\"xshmbase\"' >/dev/null)
mkdir -p "$base/provider"
cp "$base/.libs/libxshm-fi.so" "$base/provider/libxshmbase-fi.so"
XSHM_BENCH_COMMAND="$(printf '%q ' "$0" "$rev" "$@")"
export XSHM_BENCH_COMMAND="${XSHM_BENCH_COMMAND% }"
export FI_PROVIDER_PATH="$PWD/.libs:$PWD/$base/provider"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" test/bench/compare.py -p xshm,xshmbase "$@"
git worktree remove --force "$base"
