#!/bin/bash
# The benchmarks compare.sh runs, with the options that change what they
# do to the buffers: -W (the sender writes each send buffer first; a
# stream's sends in flight each get one of their own), -R (the receiver
# reads what it received) and -O (the receive buffer 16 bytes further into
# its page than the send buffer; one past the page is refused).  Each must
# exit 0 and print one positive figure per size.  Then incast -M -A 3: every rank reports its own mappings and
# its peers', with three AVs open, and rank 0 maps each region file once.
# Then rma in every mode: xshm's RMA with the registrations as offered
# and with -K (offsets and the benchmark's keys), its atomics measured or
# said to be unsupported, and shm's atomics measured.
# FI_PROVIDER_PATH and XSHM_BUILDDIR come from the environment.

bench="${XSHM_BUILDDIR:-.}/test/bench"

fail() {
	echo "FAIL: $*"
	echo "$out"
	exit 1
}

# program, its options, the sizes it must report, and "unsupported" where
# the provider may say so instead
check() {
	local prog=$1 opts=$2 sizes=$3 may=${4:-}
	# shellcheck disable=SC2086
	out=$(timeout 120 "$bench/$prog" -p xshm -r 1 -S 0 $opts 2>&1) ||
		fail "$prog $opts: exited with $?"
	for size in ${sizes//,/ }; do
		awk -v s="$size" -v may="$may" \
			'$2 == s && ($4 + 0 > 0 || (may && $4 == may)) { n++ } END { exit n != 1 }' \
			<<<"$out" || fail "$prog $opts: no single positive figure at $size B"
	done
}

for opts in "-W" "-R" "-W -R" "-O 16"; do
	check latency "-s 8,1M -i 50 $opts" 8,1048576
	check loopback "-s 8,1M -i 50 $opts" 8,1048576
	check bandwidth "-s 8,1M -i 4 $opts" 8,1048576
	check msgrate "-i 4 $opts" 8
	check incast "-n 2 -k 8 -s 4K,1M -i 4 $opts" 4096,1048576
done

# -O past the page is refused
if out=$(timeout 120 "$bench/latency" -p xshm -r 1 -S 0 -s 8 -O 4096 2>&1); then
	fail "latency -O 4096: accepted"
fi
grep -q -- "-O 4096: at most 4095" <<<"$out" || fail "latency -O 4096: not said why"

out=$(timeout 120 "$bench/incast" -p xshm -M -A 3 -n 2 -s 4K 2>&1) ||
	fail "incast -M -A 3: exited with $?"
awk '$1 == "mem" && $5 > 0 && $7 > $5 { n++ } END { exit n != 3 }' \
	<<<"$out" || fail "incast -M -A 3: not one line per rank with own and peers' mappings"
twice=$(awk '$1 == "#" && $2 == "rank" && $4 == "maps" { print $5 }' <<<"$out" |
	sort | uniq -d)
[ -z "$twice" ] || fail "incast -M -A 3: rank 0 maps a region twice: $twice"

for opts in "" "-K" "-O 16"; do
	for mode in write_lat read_lat write_bw read_bw; do
		check rma "-m $mode -s 8,64K -i 20 $opts" 8,65536
	done
done
for mode in atomic_lat atomic_rate atomic_add_rate cswap_lat cswap_rate; do
	check rma "-m $mode -i 20" 8 unsupported
	check rma "-m $mode -i 20 -p shm" 8
done
echo "PASS: latency, loopback, bandwidth, msgrate and incast with -W, -R, both and -O 16 (-O 4096 refused);" \
	"incast -M -A 3; rma in every mode, its RMA with -K and -O 16 too"
