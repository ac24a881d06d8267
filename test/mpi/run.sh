#!/bin/bash
# Open MPI tests over an OFI MTL provider: builds the programs of test/mpi/ with mpicc
# into build/mpi/, runs each with 2, 4 and 8 ranks on this node and with 2+2 and 4+4
# ranks on two simulated nodes (network + UTS namespaces from netns.sh, daemons
# started through rsh_agent.sh; rma, whose BTL reaches only its own node, on this
# node only), and prints one line per run, "PASS name" or
# "FAIL name (why)", then "mpi: N passed, N failed".
#
#   test/mpi/run.sh [--one-node] [--two-nodes] [PROGRAM...]
#
# Environment:
#   XLINK_MPI_PROV     mtl_ofi_provider_include (default xlink), e.g. 'tcp;ofi_rxm'
#   XLINK_MPI_RMA_PROV the OFI BTL's provider under rma's one-sided MPI (default xshm)
#   XLINK_MPI_TIMEOUT  seconds per mpirun (default 120); a run past it is a FAIL
#   XLINK_MPI_NP       rank counts on one node (default "2 4 8")
#   XLINK_MPI_NODES    ranks per node on two nodes (default "2 4")
#   XLINK_NETNS        the set of simulated nodes (netns_names.sh; default xlnode*)
#   FI_*, XSHM_*, XLINK_*, LD_LIBRARY_PATH   passed to the ranks with -x
#                      (FI_PROVIDER_PATH=<repo>/.libs for the xlink DL provider)
# The two-node runs need root and iproute2; they create the namespaces and remove
# them on any exit. A run that cannot happen is counted as failed, with the reason.
# Logs: build/mpi/logs/<name>.log
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=$REPO/build/mpi
LOGS=$BUILD/logs
PROV=${XLINK_MPI_PROV:-xlink}
RMA_PROV=${XLINK_MPI_RMA_PROV:-xshm}
TMO=${XLINK_MPI_TIMEOUT:-120}
NPS=${XLINK_MPI_NP:-2 4 8}
PERNODE=${XLINK_MPI_NODES:-2 4}
ALL_PROGS="p2p anysrc probe coll trunc ssend_cancel flood rma"
# shellcheck source=netns_names.sh
. "$HERE/netns_names.sh"
netns_names || exit 2
SUBNET=$NS_NET.0/24
NODE=${NS_PREFIX}node
IFACE=xleth0 # the name of the veth inside every namespace (netns.sh)

one=0 two=0 progs=""
for a in "$@"; do
	case $a in
	--one-node) one=1 ;;
	--two-nodes) two=1 ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "run.sh: unknown option $a" >&2; exit 2 ;;
	*)
		[[ " $ALL_PROGS " == *" $a "* ]] || { echo "run.sh: no program '$a' ($ALL_PROGS)" >&2; exit 2; }
		progs="$progs $a" ;;
	esac
done
[ $one = 0 ] && [ $two = 0 ] && one=1 two=1
[ -n "$progs" ] || progs=$ALL_PROGS

pass=0 fail=0
report() { # report PASS|FAIL name [why]
	if [ "$1" = PASS ]; then
		pass=$((pass + 1)); echo "PASS $2"
	else
		fail=$((fail + 1)); echo "FAIL $2${3:+ ($3)}"
	fi
}
finish() {
	echo "mpi: $pass passed, $fail failed"
	[ "$fail" = 0 ]
	exit
}

# processes still running one of our programs (ranks a killed mpirun left), by id
kill_leftovers() {
	local p exe
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		case $exe in "$BUILD"/*) kill -KILL "${p#/proc/}" 2>/dev/null ;; esac
	done
}

mkdir -p "$LOGS"

# --- build ---------------------------------------------------------------------------
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
	for p in $progs; do report FAIL "build-$p" "mpicc/mpirun not found: apt-get install openmpi-bin libopenmpi-dev"; done
	finish
fi
built=""
for p in $progs; do
	if mpicc -O2 -g -Wall -Wextra -o "$BUILD/$p" "$HERE/$p.c" >"$LOGS/build-$p.log" 2>&1; then
		built="$built $p"
	else
		report FAIL "build-$p" "see $LOGS/build-$p.log"
		sed 's/^/    /' "$LOGS/build-$p.log" | head -20
	fi
done

# what the ranks need from our environment
XENV=()
for v in $(compgen -e); do
	case $v in
	XLINK_MPI_*) ;; # this script's own settings
	FI_* | XSHM_* | XLINK_* | LD_LIBRARY_PATH) XENV+=(-x "$v") ;;
	esac
done
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca pml cm --mca mtl ofi
	--mca mtl_ofi_provider_include "$PROV" "${XENV[@]}")

# a program's own mpirun arguments: rma's one-sided MPI goes through osc/rdma over the
# OFI BTL, whose provider reaches only this node's ranks
prog_args() {
	case $1 in
	rma) echo "--mca osc rdma --mca btl ofi,self --mca btl_ofi_provider_include $RMA_PROV" ;;
	esac
}
one_node_only() { [ "$1" = rma ]; }

# run_one NAME HOSTS COMMAND...: runs it under the timeout, reports, logs; the ranks
# must have run on HOSTS distinct hosts
run_one() {
	local name=$1 hosts=$2 rc log=$LOGS/$1.log
	shift 2
	{ echo "+ $*"; } >"$log"
	timeout -k 5 "$TMO" "$@" </dev/null >>"$log" 2>&1
	rc=$?
	kill_leftovers
	local why="exit $rc"
	if [ $rc = 0 ] && grep -q '^OK ' "$log"; then
		grep -qE "^  [a-z0-9_]+: [0-9]+ ranks on $hosts hosts" "$log" && { report PASS "$name"; return; }
		why="ranks not on $hosts hosts: $(grep -m1 -E '^  [a-z0-9_]+: [0-9]+ ranks on' "$log")"
	fi
	case $rc in
	124 | 137) why="timeout after ${TMO}s, last step: $(grep -E '^  [a-z0-9_]+ [0-9.]+s: ' "$log" | tail -1 | sed 's/^ *//')" ;;
	esac
	grep -q '^FAIL ' "$log" && why="$why; $(grep -m1 '^FAIL ' "$log")"
	grep -q 'PML cm cannot be selected' "$log" &&
		why="$why; PML cm cannot be selected: is provider '$PROV' there (FI_PROVIDER_PATH)?"
	report FAIL "$name" "$why"
	grep -vE '^  [a-z0-9_]+ [0-9.]+s: |^$' "$log" | tail -8 | sed 's/^/    /'
}

# --- one node ------------------------------------------------------------------------
if [ $one = 1 ]; then
	for np in $NPS; do
		for p in $built; do
			# shellcheck disable=SC2046
			run_one "$p-np$np" 1 "${MPIRUN[@]}" $(prog_args "$p") -np "$np" "$BUILD/$p"
		done
	done
fi

# --- two simulated nodes -------------------------------------------------------------
if [ $two = 1 ]; then
	why=""
	[ "$(id -u)" = 0 ] || why="needs root for network namespaces"
	[ -z "$why" ] && { command -v ip >/dev/null && command -v unshare >/dev/null || why="needs ip (iproute2) and unshare"; }
	if [ -z "$why" ]; then
		trap '"$HERE/netns.sh" down' EXIT
		trap 'exit 130' INT TERM
		"$HERE/netns.sh" up 2 >"$LOGS/netns.log" 2>&1 || why="netns.sh up 2 failed: $(tail -1 "$LOGS/netns.log")"
	fi
	for n in $PERNODE; do
		for p in $built; do
			one_node_only "$p" && continue
			name="$p-${n}x2nodes"
			if [ -n "$why" ]; then
				report FAIL "$name" "$why"
				continue
			fi
			# mpirun runs on "node" xlnode0 (its own namespace and host name) and
			# starts the daemon of xlnode1 through the agent; out-of-band and tcp
			# traffic both go over the veths
			run_one "$name" 2 ip netns exec "${NODE}0" unshare --uts \
				bash -c "hostname ${NODE}0"' && exec "$@"' "mpirun-on-${NODE}0" \
				"${MPIRUN[@]}" -x FI_TCP_IFACE="${FI_TCP_IFACE:-$IFACE}" \
				--mca plm_rsh_agent "$HERE/rsh_agent.sh" --mca plm_rsh_no_tree_spawn 1 \
				--mca oob_tcp_if_include "$SUBNET" \
				--host "${NODE}0:$n,${NODE}1:$n" -np $((2 * n)) "$BUILD/$p"
			for ns in "${NODE}0" "${NODE}1"; do
				pids=$(ip netns pids "$ns" 2>/dev/null)
				# shellcheck disable=SC2086
				[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
			done
		done
	done
fi
finish
