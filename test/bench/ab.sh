#!/usr/bin/env bash
# Compares this tree's xshm with the build of another revision, loaded side
# by side in the same benchmark processes (the baseline is built with
# XSHM_NAME="xshmbase"), through test/bench/compare.py:
#
#   bash test/bench/ab.sh [--swap] REV [compare.py options]
#   e.g. bash test/bench/ab.sh HEAD~3 -b latency -s 8,1K,4K -r 12
#
# Ratios are this tree / REV.  On a machine whose placement drifts, a
# change of a few percent needs a dozen repetitions or more.  Even then a
# run can favour one provider name over the other by several percent:
# --swap runs the comparison a second time with the names swapped (REV as
# xshm, this tree as xshmbase) and test/bench/ab_swap.py divides that bias
# out.  It takes twice as long, and writes its results under
# bench-results/ab-<date-time>/ whatever -o says.
set -euo pipefail
cd "$(dirname "$0")/../.."
swap=0
if [ "${1:-}" = --swap ]; then
	swap=1
	shift
fi
rev=${1:?usage: ab.sh [--swap] REV [compare.py options]}
shift
. test/build.sh
xshm_install_deps
xshm_build

base=build/ab-base
tree=build/ab-tree
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

rm -rf "$base"
git worktree prune
git worktree add --detach -f "$base" "$rev" >/dev/null
(cd "$base" && ./autogen.sh >/dev/null && ./configure --quiet)
xshm_build_as "$base" xshmbase

XSHM_BENCH_COMMAND="$(printf '%q ' "$0" "$@")"
export XSHM_BENCH_COMMAND="${XSHM_BENCH_COMMAND% }"
if [ "$swap" = 0 ]; then
	FI_PROVIDER_PATH="$PWD/.libs:$PWD/$base/provider-xshmbase" \
		"$PY" test/bench/compare.py -p xshm,xshmbase --anchors 1.17 "$@"
	git worktree remove --force "$base"
	exit
fi

# The tree as xshmbase: a copy of it, uncommitted changes included.
rm -rf "$tree"
mkdir -p "$tree"
tar -cf - --exclude=./build --exclude=./bench-results --exclude=./.git . |
	tar -xf - -C "$tree"
xshm_build_as "$tree" xshmbase
xshm_build_as "$base" xshm
out=bench-results/ab-$(date +%Y%m%d-%H%M%S)
FI_PROVIDER_PATH="$PWD/.libs:$PWD/$base/provider-xshmbase" \
	"$PY" test/bench/compare.py -p xshm,xshmbase --anchors 1.17 "$@" -o "$out/forward"
FI_PROVIDER_PATH="$PWD/$base/provider-xshm:$PWD/$tree/provider-xshmbase" \
	"$PY" test/bench/compare.py -p xshm,xshmbase --anchors 1.17 "$@" -o "$out/swapped"
"$PY" test/bench/ab_swap.py "$out/forward" "$out/swapped" | tee "$out/effect.txt"
git worktree remove --force "$base"
rm -rf "$tree"
