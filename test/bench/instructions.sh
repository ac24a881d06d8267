#!/usr/bin/env bash
# Instructions per call of xshm's entry points in the tagged ping-pong,
# counted by callgrind: the same for the same build whatever else the
# machine does, so a change to the small-message path can be judged where
# timings drift.  The poll entries (cq_read, ep_progress) include empty
# polls, whose number depends on timing.
#
#   bash test/bench/instructions.sh [size]      (default 8 bytes)
set -euo pipefail
cd "$(dirname "$0")/../.."
size=${1:-8}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 1; }
FI_PROVIDER_PATH="$PWD/.libs" valgrind --tool=callgrind --trace-children=yes \
	--callgrind-out-file="$out/cg.%p" test/bench/latency -p xshm \
	-s "$size" -i 20000 -t 0 -S 0 -w 0 >/dev/null 2>&1
for f in "$out"/cg.*; do
	echo "== process ${f##*.}"
	callgrind_annotate --inclusive=yes --tree=caller "$f" 2>/dev/null |
	python3 -c '
import re, sys
want = ("xshm_tsend", "xshm_trecv", "xshm_rx_handle_cmd",
        "xshm_cq_readfrom", "xshm_ep_progress")
calls, cost, pending = {}, {}, 0
for line in sys.stdin:
    m = re.match(r"\s*[\d,]+ \(.*?\)\s+<\s+.*\((\d[\d,]*)x\)", line)
    if m:
        pending += int(m.group(1).replace(",", ""))
        continue
    m = re.match(r"\s*([\d,]+) \(.*?\)\s+\*\s+(\S+)", line)
    if m:
        name = m.group(2).split(":")[-1]
        total = int(m.group(1).replace(",", ""))
        if name in want and pending and total > cost.get(name, 0):
            cost[name], calls[name] = total, pending
    pending = 0
for name in want:
    if name in cost:
        print(f"{name:22} {cost[name] / calls[name]:8.1f} per call ({calls[name]} calls)")
'
done
