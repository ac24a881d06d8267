#!/bin/bash
# OSU micro-benchmarks 5.3 (osu_latency, osu_bw, osu_mbw_mr; 2 ranks on this node)
# under several Open MPI transports, interleaved (A B C D, A B C D, ...) so that a
# drift of the machine hits all alike; prints per size the median of each
# configuration and the ratio of each to the first, as markdown, and draws a PNG.
#
#   test/bench/osu.sh [--configs xlink,vader,ucx,ofi-tcp] [--repeats R]
#                     [--benches osu_latency,osu_bw,osu_mbw_mr] [--out DIR]
#                     [--two-nodes]
#
# --two-nodes puts one rank on each of two simulated nodes (test/mpi/netns.sh,
# made and removed here, XLINK_NETNS chooses the set; needs root), unbound, so that the traffic crosses a veth:
# configurations xlink and ofi-tcp by default, results in build/osu/results-2nodes.
#
# Configurations:
#   xlink    pml cm + OFI MTL, provider xlink (FI_PROVIDER_PATH, default <repo>/.libs)
#   vader    pml ob1 + btl vader,self (Open MPI's own shared memory)
#   ucx      pml ucx with UCX_TLS=sm,self
#   ofi-tcp  pml cm + OFI MTL, provider tcp;ofi_rxm
# and for one-sided MPI, osc rdma over the OFI BTL beside the xlink MTL, the BTL's
# provider being
#   osc-xshm     xshm
#   osc-xshmbase another revision's xshm, built under the name xshmbase (as
#                ab.sh builds it) in a folder of FI_PROVIDER_PATH
#   osc-shm117   Debian's libfabric 1.17 shm
#   osc-shm26    libfabric 2.6's shm (build/libfabric-2.6, test/thirdparty.sh builds
#                it; the ranks load that libfabric, xlink and xshm with it)
# (vader runs one-sided MPI through osc rdma over its own single copy).
# The one-sided benchmarks (osu_put_latency, osu_get_latency, osu_put_bw, osu_get_bw,
# osu_acc_latency, osu_fop_latency, osu_cas_latency) run with -w create: windows
# of the application's memory, which every rank reaches only through the BTL.
# A one-sided comparison, e.g.:
#   test/bench/osu.sh --configs osc-xshm,osc-shm117,osc-shm26,vader \
#       --benches osu_put_latency,osu_get_latency,osu_fop_latency
# A configuration that cannot run (say pml ucx missing) is reported and left out.
# OSU is built once from ../shared/thirdparty/osu-5.3.tar.gz into build/osu/.
# Results: DIR (default build/osu/results): raw/ outputs, osu.md, osu.png.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
TARBALL=${OSU_TARBALL:-}
for t in "$REPO/../shared/thirdparty/osu-5.3.tar.gz" /work/shared/thirdparty/osu-5.3.tar.gz; do
	[ -z "$TARBALL" ] && [ -f "$t" ] && TARBALL=$t
done
B=$REPO/build/osu
CONFIGS=xlink,vader,ucx,ofi-tcp
BENCHES=osu_latency,osu_bw,osu_mbw_mr
R=5
OUT=
TMO=${OSU_TIMEOUT:-300}
TWO_NODES=0

while [ $# -gt 0 ]; do
	case $1 in
	--configs) CONFIGS=$2; shift 2 ;;
	--repeats) R=$2; shift 2 ;;
	--benches) BENCHES=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--two-nodes) TWO_NODES=1; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "osu.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
if [ $TWO_NODES = 1 ]; then
	[[ " $* " == *" --configs "* ]] || CONFIGS=xlink,ofi-tcp
	OUT=${OUT:-$B/results-2nodes}
fi
OUT=${OUT:-$B/results}
[[ $R =~ ^[1-9][0-9]*$ ]] || { echo "osu.sh: --repeats needs a positive number" >&2; exit 2; }
command -v mpicc >/dev/null || { echo "osu.sh: needs mpicc (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 1; }

# --- build OSU -----------------------------------------------------------------------
BIN=$B/install/libexec/osu-micro-benchmarks/mpi/pt2pt
ONE_SIDED=$B/install/libexec/osu-micro-benchmarks/mpi/one-sided
if [ ! -x "$BIN/osu_mbw_mr" ]; then
	[ -n "$TARBALL" ] || { echo "osu.sh: osu-5.3.tar.gz not found (set OSU_TARBALL)" >&2; exit 1; }
	echo "building OSU 5.3 into $B ..."
	rm -rf "$B/src" && mkdir -p "$B/src" &&
		tar -xzf "$TARBALL" -C "$B/src" &&
		(cd "$B/src/osu-micro-benchmarks-5.3" &&
			./configure CC=mpicc CXX=mpicxx --prefix="$B/install" &&
			make -j"$(nproc)" && make install) >"$B/build.log" 2>&1 ||
		{ echo "osu.sh: OSU build failed, see $B/build.log" >&2; tail -20 "$B/build.log" >&2; exit 1; }
fi

# --- configurations ------------------------------------------------------------------
MPI=(mpirun --allow-run-as-root -np 2 --bind-to core --map-by core)
if [ $TWO_NODES = 1 ]; then
	# mpirun on node 0, the second rank's daemon started on node 1 through the
	# agent (as test/mpi/run.sh does); each node binds its rank to its own first
	# core, which on this one machine would be the same core: so unbound
	# shellcheck source=../mpi/netns_names.sh
	. "$REPO/test/mpi/netns_names.sh"
	netns_names || exit 2
	n0=${NS_PREFIX}node0 n1=${NS_PREFIX}node1
	trap '"$REPO/test/mpi/netns.sh" down' EXIT
	"$REPO/test/mpi/netns.sh" up 2 || { echo "osu.sh: netns.sh up 2 failed" >&2; exit 1; }
	MPI=(ip netns exec "$n0" unshare --uts bash -c "hostname $n0"' && exec "$@"'
		mpirun-on-node0 mpirun --allow-run-as-root -np 2 --host "$n0:1,$n1:1"
		--bind-to none --mca plm_rsh_agent "$REPO/test/mpi/rsh_agent.sh"
		--mca plm_rsh_no_tree_spawn 1 --mca oob_tcp_if_include "$NS_NET.0/24"
		-x FI_TCP_IFACE=xleth0)
fi
cfg_args() { # the mpirun arguments of a configuration
	case $1 in
	xlink) echo "--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include xlink -x FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-$REPO/.libs}" ;;
	vader) echo "--mca pml ob1 --mca btl vader,self" ;;
	ucx) echo "--mca pml ucx -x UCX_TLS=sm,self --mca pml_ucx_tls any --mca pml_ucx_devices any" ;;
	ofi-tcp) echo "--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include tcp;ofi_rxm" ;;
	osc-xshm) osc_args xshm ;;
	osc-xshmbase) osc_args xshmbase ;;
	osc-shm117) osc_args shm ;;
	osc-shm26) osc_args shm "-x LD_LIBRARY_PATH=$LIBFABRIC_26/lib" ;;
	*) return 1 ;;
	esac
}
LIBFABRIC_26=${XSHM_LIBFABRIC_26:-$REPO/build/libfabric-2.6}
osc_args() { # osc_args PROVIDER [more]: one-sided through the OFI BTL on PROVIDER
	echo "$(cfg_args xlink) --mca osc rdma --mca btl ofi,self --mca btl_ofi_provider_include $1 ${2:-}"
}
bench_cmd() { # the path and arguments of a benchmark
	if [ -x "$ONE_SIDED/$1" ]; then
		echo "$ONE_SIDED/$1 -w create"
	else
		echo "$BIN/$1"
	fi
}

mkdir -p "$OUT/raw"
rm -f "$OUT"/raw/*.txt
IFS=, read -r -a want <<<"$CONFIGS"
IFS=, read -r -a benches <<<"$BENCHES"
cfgs=()
notes=""
for c in "${want[@]}"; do
	if ! args=$(cfg_args "$c"); then
		echo "osu.sh: unknown configuration $c" >&2; exit 2
	fi
	# a short latency run first: does this transport work here at all?
	# shellcheck disable=SC2086
	probe=osu_latency
	[[ $c == osc-* ]] && probe=osu_put_latency
	# shellcheck disable=SC2046
	if timeout -k 5 60 "${MPI[@]}" $args $(bench_cmd $probe) -i 10 -x 2 >"$OUT/raw/probe-$c.log" 2>&1 &&
		grep -qE '^[0-9]+[[:space:]]' "$OUT/raw/probe-$c.log"; then
		cfgs+=("$c")
	else
		why=$(grep -m1 'cannot be selected' "$OUT/raw/probe-$c.log" ||
			grep -m1 -iE 'not found|error|abort' "$OUT/raw/probe-$c.log")
		note="$c: unavailable (${why:-see $OUT/raw/probe-$c.log})"
		[ "$c" = xlink ] && [ ! -e "${FI_PROVIDER_PATH:-$REPO/.libs}/libxlink-fi.so" ] &&
			note="$note: no libxlink-fi.so in ${FI_PROVIDER_PATH:-$REPO/.libs}"
		echo "$note"
		notes="$notes$note"$'\n'
	fi
done
[ ${#cfgs[@]} -gt 0 ] || { echo "osu.sh: no configuration can run"; exit 1; }
echo "configurations: ${cfgs[*]}; benchmarks: ${benches[*]}; $R repeats, interleaved"

# --- runs, interleaved ---------------------------------------------------------------
start=$(date +%s)
for ((r = 1; r <= R; r++)); do
	for b in "${benches[@]}"; do
		for c in "${cfgs[@]}"; do
			f=$OUT/raw/$b-$c-$r.txt
			# shellcheck disable=SC2046
			if ! timeout -k 5 "$TMO" "${MPI[@]}" $(cfg_args "$c") $(bench_cmd "$b") >"$f" 2>&1; then
				echo "  $b $c run $r failed or timed out: $(tail -1 "$f")"
				mv "$f" "$f.failed"
			fi
		done
	done
	echo "  repeat $r/$R done ($(($(date +%s) - start)) s)"
done

# --- medians, ratios, plot -----------------------------------------------------------
printf '%s' "$notes" >"$OUT/notes.txt"
/usr/bin/python3 "$HERE/osu_report.py" "$OUT" "$(IFS=,; echo "${cfgs[*]}")" \
	"$(IFS=,; echo "${benches[*]}")" "$R" | tee "$OUT/osu.md"
echo "results: $OUT/osu.md, $OUT/osu.png, raw outputs in $OUT/raw/"
