#!/usr/bin/env bash
# Checks xshm's measured path choice (FI_XSHM_PATH=auto) against each path
# forced, in the same benchmark processes: this tree's xshm as it is, and
# built again as "xshmbounce" (bounce buffers forced) and "xshmscopy" (the
# single copy forced above FI_XSHM_PATH_MIN's default).  For each benchmark
# and size, test/bench/paths.py prints the medians and auto's ratio to the
# better forced path: near 1 when the choice is right.
#
#   bash test/bench/paths.sh [-r reps] [-s sizes] [-b benches] [-W]
#   e.g. bash test/bench/paths.sh -r 5 -s 16K,64K,256K,1M,4M -b latency,bandwidth -W
#
# Benchmarks: latency (lone sends), bandwidth (one stream), incast (4
# senders).  -W writes each send buffer before its send.  Results go to
# bench-results/paths-<date-time>/.
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=5 sizes=16K,64K,256K,1M,4M benches=latency,bandwidth,incast written=
while getopts "r:s:b:W" opt; do
	case $opt in
	r) reps=$OPTARG ;;
	s) sizes=$OPTARG ;;
	b) benches=$OPTARG ;;
	W) written=-W ;;
	*) sed -n '2,15p' "$0" >&2; exit 2 ;;
	esac
done
. test/build.sh
xshm_install_deps
xshm_build

tree=build/paths-tree
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

. test/bench/paths_rounds.sh
paths_build "$tree"
paths_force
export FI_PROVIDER_PATH="$PWD/.libs:$PWD/$tree/provider-xshmbounce:$PWD/$tree/provider-xshmscopy"
out=bench-results/paths-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
echo "# command: $0 $*" | tee "$out/summary.txt"
for bench in ${benches//,/ }; do
	for ((rep = 0; rep < reps; rep++)); do
		paths_round "test/bench/$bench" "$bench" "$rep" "$sizes" $written \
			>> "$out/raw.txt"
	done
done
"$PY" test/bench/paths.py "$out/raw.txt" | tee -a "$out/summary.txt"
rm -rf "$tree"
