#!/usr/bin/env bash
# The tables of issue 33 on another machine, one that has no libfabric and
# where nothing can be installed (the 16-core machine of ../shared/perf/,
# reached through the session's device tool).  Two steps:
#
#   bash test/bench/device.sh pack   here: builds, then fills device/
#                                    (git-ignored, about 13 MiB)
#   bash test/bench/device.sh run    there, from the checkout's root with
#                                    device/ carried: writes under $OUT
#
# device/ holds the benchmark programs and fi_info (bin/), xshm and the
# two builds of it that paths.sh forces to one path each (prov/), Debian's
# libfabric and the libraries it loads (lib/) and
# libfabric 2.6 (lf26/).  run measures compare.py's tables against both
# anchors (incast with 15 senders, the copy and two-copy floors), the -W table against
# shm 2.6, and the path choice against each path forced (paths.sh's
# rounds); each step has a timeout, and the whole took under a minute on
# the 2-core guest.  Without python3 there, it leaves the programs' raw
# lines against shm 2.6, to be read here.  doc/benchmarks.md says more.
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/bench/paths_rounds.sh
pack=device
programs="latency bandwidth msgrate incast copy_floor ring_floor stream_floor rma
	loopback"

pack() {
	. test/build.sh
	xshm_install_deps
	xshm_build
	local lf26 tree=build/device-tree
	lf26=$(test/thirdparty.sh libfabric-2.6)
	rm -rf "$pack"
	mkdir -p "$pack"/{bin,prov,lib,lf26}
	for p in $programs; do cp "test/bench/$p" "$pack/bin/"; done
	cp "$(command -v fi_info)" "$pack/bin/"
	cp .libs/libxshm-fi.so "$pack/prov/"
	cp -a "$lf26/lib" "$pack/lf26/"
	rm -f "$pack"/lf26/lib/*.a "$pack"/lf26/lib/*.la
	paths_build "$tree"
	for name in xshmbounce xshmscopy; do
		cp "$tree/provider-$name/lib$name-fi.so" "$pack/prov/"
	done
	rm -rf "$tree"
	# what the programs load, but the C library itself, which the other
	# machine has in a version of its own
	ldd "$pack"/bin/* "$pack"/prov/*.so 2>/dev/null |
		awk '/=> \// { print $3 }' | sort -u |
		grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
		xargs -r cp -L -t "$pack/lib/"
	du -sh "$pack"
}

sizes=8,64,1K,4K,16K,64K,256K,1M,4M

# compare.py's tables: both anchors unwritten (incast with 15 senders, the
# floors), shm 2.6 with -W.
tables() {
	timeout 240 python3 test/bench/compare.py -r 5 -o "$OUT/unwritten" \
		-b latency,pingpong,floor,bandwidth,stream,msgrate,incast -n 15 \
		-s $sizes --stream-sizes 8,64,1K,4K,16K,64K \
		--incast-sizes 8,1K,16K,64K,256K,1M --libfabric-26 "$pack/lf26" \
		> "$OUT/unwritten.txt" 2>&1 || echo "unwritten: rc $?"
	timeout 150 python3 test/bench/compare.py -r 5 -W -o "$OUT/written" \
		-b latency,bandwidth,msgrate -s $sizes --anchors 2.6 \
		--libfabric-26 "$pack/lf26" > "$OUT/written.txt" 2>&1 ||
		echo "written: rc $?"
}

# The same points without python3, against shm 2.6: raw lines, to be
# read here.
raw_tables() {
	local b=$pack/bin
	(
	export LD_LIBRARY_PATH=$PWD/$pack/lf26/lib:$LD_LIBRARY_PATH
	echo "## latency"; timeout 100 "$b/latency" -b -p xshm,shm -s $sizes -r 5
	echo "## bandwidth"; timeout 100 "$b/bandwidth" -b -p xshm,shm -s $sizes -r 5
	echo "## latency -W"; timeout 100 "$b/latency" -b -W -p xshm,shm -s $sizes -r 5
	echo "## bandwidth -W"; timeout 100 "$b/bandwidth" -b -W -p xshm,shm -s $sizes -r 5
	echo "## msgrate"; timeout 60 "$b/msgrate" -b -p xshm,shm -r 5
	echo "## incast 15"; timeout 100 "$b/incast" -b -n 15 -p xshm,shm -s 8,1K,16K,256K -r 3
	echo "## floors"; timeout 60 "$b/copy_floor" -r 3 -s 64K,256K,1M,4M
	timeout 60 "$b/stream_floor" -r 3
	timeout 60 "$b/stream_floor" -l -r 3
	) > "$OUT/raw-shm26.txt" 2>&1 || true
}

# paths.sh's rounds on the carried builds, latency and bandwidth, each
# with and without -W: one raw file per buffer state.
paths() {
	local rep written raw
	paths_force
	for written in "" -W; do
		raw=$OUT/paths${written}-raw.txt
		for bench in latency bandwidth; do
			for ((rep = 0; rep < 3; rep++)); do
				paths_round "$pack/bin/$bench" "$bench" "$rep" \
					16K,64K,256K,1M,4M $written >> "$raw" || true
			done
		done
		if command -v python3 >/dev/null; then
			python3 test/bench/paths.py "$raw" > "${raw%-raw.txt}.txt" 2>&1 || true
		fi
	done
}

run() {
	: "${OUT:?run writes under \$OUT}"
	[ -x "$pack/bin/latency" ] || { echo "no $pack/: pack it first" >&2; exit 1; }
	export PATH=$PWD/$pack/bin:$PATH XSHM_BENCH_DIR=$PWD/$pack/bin
	export LD_LIBRARY_PATH=$PWD/$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export FI_PROVIDER_PATH=$PWD/$pack/prov
	{ nproc; lscpu; uname -a; } > "$OUT/machine.txt" 2>&1 || true
	if command -v python3 >/dev/null; then
		tables
	else
		raw_tables
	fi
	paths
	ls -l "$OUT"
}

case ${1:-} in
pack) pack ;;
run) run ;;
*) sed -n '2,18p' "$0" >&2; exit 2 ;;
esac
