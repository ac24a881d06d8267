#!/usr/bin/env bash
# libfabric's own provider tests (fabtests 1.17.0, runfabtests.sh) against
# the xshm built in this tree, or the owner provider xlink
# (FABTESTS_PROVIDER=xlink).  Each test's result is compared with
# test/fabtests/expected.txt (expected-xlink.txt): a test whose result is
# the expected one counts as passed, any other (a new failure, an
# unexpected pass, a test of the sets run that did not run at all) as
# failed.  The last line is "fabtests: N passed, N failed" ("fabtests-xlink:
# ..."), after, for xshm, survivor.sh's own line (a server whose client is
# killed).
#
# Usage: test/fabtests/run.sh [--compare] [SET...]
#   SET        runfabtests.sh test sets (default: quick standard complex)
#   --compare  also run libfabric's own shm (Debian's 1.17) and print a table
#              of both providers' results; counts only xshm's
# fabtests come from test/thirdparty.sh (FABTESTS_SRC, FABTESTS_PREFIX).
# The complex set reads test/fabtests/<provider>.test (xshm.test), else
# fabtests' own test_configs/<provider>/all.test.
# FABTESTS_TIMEOUT (default 60) bounds each test, in seconds.
#
# FABTESTS_NODES=2 (with FABTESTS_PROVIDER=xlink) runs every server on one
# simulated node and its client on another (test/mpi/netns.sh: network + UTS
# namespaces, a veth each), so that xlink's network path, tcp;ofi_rxm, carries
# the messages: runfabtests.sh gets the two nodes' addresses and reaches them
# through netns_ssh.sh as its "ssh".  The results are compared with
# expected-xlink-2nodes.txt, the last line is "fabtests-xlink-2nodes: N
# passed, N failed", and one more check fails unless the nodes had different
# host names and the bytes crossed the veth between them.  Needs root;
# XLINK_NETNS (default ft:10.78.0, test/mpi/netns_names.sh) names the set of
# nodes, removed on any exit.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
prov=${FABTESTS_PROVIDER:-xshm}
nodes=${FABTESTS_NODES:-1}
suffix=""	# of the logs' names
if [ "$prov" = xshm ]; then
	expected=$here/expected.txt
	label=fabtests
else
	expected=$here/expected-$prov.txt
	label=fabtests-$prov
fi
case $nodes in
1) ;;
2)
	expected=${expected%.txt}-2nodes.txt
	label=$label-2nodes
	suffix=-2nodes
	# never the default set: the MPI tests' (test/mpi/run.sh) may be up
	export XLINK_NETNS=${XLINK_NETNS:-ft:10.78.0}
	[ "$prov" != xshm ] || {
		echo "$label: 0 passed, 1 failed (FABTESTS_NODES=2: xshm reaches no other node; FABTESTS_PROVIDER=xlink)"
		exit 1
	}
	;;
*)
	echo "$label: 0 passed, 1 failed (FABTESTS_NODES=$nodes: 1 or 2)"
	exit 1
	;;
esac

compare=0
if [ "${1:-}" = --compare ]; then
	compare=1
	shift
fi
sets=${*:-quick standard complex}
[ "$compare" = 0 ] || [ "$nodes" = 1 ] || {
	echo "$label: 0 passed, 1 failed (--compare runs shm, on one node only)"
	exit 1
}

prefix=$("$top/test/thirdparty.sh" fabtests) || {
	echo "$label: 0 passed, 1 failed (fabtests could not be built: see above)"
	exit 1
}

# runfabtests.sh sleeps a second between starting a server and its client,
# and two more before killing a server whose client failed: fixed sleeps,
# waited out in full by the tests that do not run (whose server exits at
# once, with ENODATA) and by a server that ends by itself.  Its copy in
# $runner waits as long, but only while the server lives; a runfabtests.sh
# other than 1.17's, whose sleeps are not all found, is run as it is.
runner=$prefix/bin/runfabtests.sh
patch_runner() {
	local copy=$1/runfabtests.sh
	{
		sed -n 1p "$runner"
		cat <<-'EOF'
			# while process $1 lives, up to $2 seconds (test/fabtests/run.sh)
			function sleep_while_alive {
				local i
				for ((i = 0; i < $2 * 20; i++)); do
					kill -0 $1 2>/dev/null || return 0
					sleep 0.05
				done
			}
		EOF
		sed -e 1d -e 's/^\tsleep 1$/\tsleep_while_alive $s_pid 1/' \
			-e 's/^\t        sleep 2$/\t        sleep_while_alive $s_pid 2/' "$runner"
	} >"$copy"
	chmod +x "$copy"
	[ "$(grep -c 'sleep_while_alive \$s_pid 1$' "$copy")" = 3 ] &&
		[ "$(grep -c 'sleep_while_alive \$s_pid 2$' "$copy")" = 2 ] &&
		[ "$(grep -cw sleep "$copy")" = 1 ] && runner=$copy
}
runner_dir=$(mktemp -d)
patch_runner "$runner_dir"

# The complex suite's configuration: ours, shm's from fabtests.
complex_config() {
	if [ -f "$here/$1.test" ]; then
		echo "$here/$1.test"
	else
		echo "$prefix/share/fabtests/test_configs/$1/all.test"
	fi
}

# --- two simulated nodes (FABTESTS_NODES=2) ---------------------------------
netns=$top/test/mpi/netns.sh
sshdir=""
server="" client=""
netns_up=0

# two_nodes_up: nodes 0 and 1, server and client addresses, an "ssh" onto
# them in $sshdir; on failure sets why.
two_nodes_up() {
	# shellcheck source=test/mpi/netns_names.sh
	. "$top/test/mpi/netns_names.sh"
	netns_names || { why="bad XLINK_NETNS"; return 1; }
	[ "$(id -u)" = 0 ] || { why="needs root for network namespaces"; return 1; }
	if ! command -v ip >/dev/null || ! command -v unshare >/dev/null ||
		! command -v setpriv >/dev/null; then
		why="needs ip (iproute2), unshare, setpriv"
		return 1
	fi
	mkdir -p "$top/build"
	netns_up=1
	"$netns" up 2 >"$top/build/fabtests-netns.log" 2>&1 ||
		{ why="netns.sh up 2 failed: $(tail -1 "$top/build/fabtests-netns.log")"; return 1; }
	server=$NS_NET.1
	client=$NS_NET.2
	sshdir=$(mktemp -d)
	ln -s "$here/netns_ssh.sh" "$sshdir/ssh"
}

two_nodes_down() {
	[ -z "$sshdir" ] || rm -rf "$sshdir"
	[ "$netns_up" = 0 ] || "$netns" down >/dev/null 2>&1
}

# Bytes through node 1's veth, both ways, seen from its host end.
veth_bytes() {
	cat "/sys/class/net/${NS_VETH}1/statistics/rx_bytes" \
		"/sys/class/net/${NS_VETH}1/statistics/tx_bytes" | paste -sd' '
}

# crossed BYTES-BEFORE: checks that server and client were two nodes to
# xlink (different host names, so different node ids) and that xlink sent
# between them over the veth, not through xshm, at least 1 MiB each way.
# With one node id for both (FI_XSHM_NODE_ID), xshm carries what the server
# sends: the quick set then sends under 0.5 MB to the client over the veth,
# against 150 MB across two nodes.  Prints a line for each failure.
crossed() {
	local rx0 tx0 rx1 tx1 h0 h1
	read -r rx0 tx0 <<<"$1"
	read -r rx1 tx1 <<<"$(veth_bytes)"
	h0=$(PATH=$sshdir:$PATH ssh "$server" hostname 2>&1)
	h1=$(PATH=$sshdir:$PATH ssh "$client" hostname 2>&1)
	[ "$h0" != "$h1" ] ||
		echo "$label: NOT TWO NODES: server and client both on host name '$h0'"
	echo "$label: ${NS_VETH}1 carried $((rx1 - rx0)) bytes from the client, $((tx1 - tx0)) to it"
	[ $((rx1 - rx0)) -ge 1048576 ] && [ $((tx1 - tx0)) -ge 1048576 ] ||
		echo "$label: NOT ACROSS NODES: under 1 MiB each way between the nodes"
}

# Where runfabtests.sh runs the tests: here, or for two nodes the server on
# node 0 and the client on node 1 (positional host arguments, which it
# reaches through "ssh", with the environment the tests need exported).
where() {
	local prov=$1
	if [ "$nodes" = 1 ]; then
		echo "$prov"
		return
	fi
	printf '%s\n' -E "FI_PROVIDER_PATH=$top/.libs" -E FI_TCP_IFACE=xleth0 \
		"$prov" "$server" "$client"
}

# runfabtests PROVIDER SET SCRATCH: runfabtests.sh in SCRATCH, a folder of
# its own, so that it finds no exclude file (test_configs/) to apply; a
# subshell, whose pid runfabtests.sh takes.
runfabtests() (
	prov=$1 set=$2
	mapfile -t args < <(where "$prov")
	cd "$3" || exit
	PATH=${sshdir:+$sshdir:}$PATH FI_PROVIDER_PATH=$top/.libs \
		exec "$runner" -v \
		-p "$prefix/bin/" -T "${FABTESTS_TIMEOUT:-60}" -t "$set" \
		-u "$(complex_config "$prov")" "${args[@]}"
)

running=""	# a runfabtests in the background (two nodes)

# INT or TERM: the background runfabtests.sh (a child of $running) goes;
# what it started on the nodes goes with them (netns.sh down).
stop_run() {
	[ -n "$running" ] || return 0
	pkill -TERM -P "$running"
	kill -TERM "$running" 2>/dev/null
}

# results PROVIDER SET: "set<TAB>Result<TAB>test" lines, the test as
# runfabtests prints it without its -p "PROVIDER".
results() {
	local prov=$1 set=$2 scratch log
	scratch=$(mktemp -d)
	log=$top/build/fabtests-$prov$suffix-$set.log
	if [ "$nodes" = 1 ]; then
		runfabtests "$prov" "$set" "$scratch" >"$log" 2>&1
	else
		# waited for in the background, so that INT or TERM stops it at
		# once (stop_run) and takes the nodes away
		runfabtests "$prov" "$set" "$scratch" >"$log" 2>&1 &
		running=$!
		wait "$running"
		running=""
	fi
	rm -rf "$scratch"
	# -v writes "- name: <test> -p "prov"" and, below it, "  result: <Result>".
	# The server's address in a name (unit tests) is SERVER_ADDR for two
	# nodes, whose addresses XLINK_NETNS may change.
	awk -v set="$set" -v suffix=" -p \"$prov\"" -v addr="$server" '
		/^- name: / {
			name = $0
			sub(/^- name: +/, "", name)
			sub(suffix "$", "", name)
			while (addr != "" && (i = index(name, addr)) > 0)
				name = substr(name, 1, i - 1) "SERVER_ADDR" \
					substr(name, i + length(addr))
		}
		/^  result: / { print set "\t" $2 "\t" name }' "$log"
}

# "set<TAB>Result<TAB>test" for the sets asked for, comments dropped.
expected_results() {
	sed -E 's/[[:space:]]*#.*//; /^[[:space:]]*$/d' "$expected" |
		sed -E 's/^([a-z]+)[[:space:]]+([A-Za-z]+)[[:space:]]+/\1\t\2\t/' |
		awk -F'\t' -v sets=" $sets " 'index(sets, " " $1 " ")'
}

actual=$(mktemp)
trap 'rm -f "$actual"; rm -rf "$runner_dir"; two_nodes_down' EXIT
trap 'stop_run; exit 130' INT TERM
# failures of the run as a whole, beside the tests' own
extra=0
if [ "$nodes" = 2 ]; then
	two_nodes_up || {
		echo "$label: 0 passed, 1 failed ($why)"
		exit 1
	}
	before=$(veth_bytes)
fi
for set in $sets; do
	start=$SECONDS
	results "$prov" "$set" >>"$actual"
	echo "$label: set $set took $((SECONDS - start)) s (log: build/fabtests-$prov$suffix-$set.log)"
done
if [ "$nodes" = 2 ]; then
	crossing=$(crossed "$before")
	echo "$crossing"
	extra=$(grep -c 'NOT ' <<<"$crossing")
fi

if [ "$compare" = 1 ]; then
	shm=$(mktemp)
	for set in $sets; do
		results shm "$set" >>"$shm"
	done
	printf '%-9s %-8s %-8s %s\n' set shm xshm test
	awk -F'\t' 'FILENAME == ARGV[1] { shm[$1 "\t" $3] = $2; next }
		{ k = $1 "\t" $3
		  printf "%-9s %-8s %-8s %s\n", $1, (k in shm ? shm[k] : "-"), $2, $3 }' \
		"$shm" "$actual"
	rm -f "$shm"
fi

# Its own line, "survivor: N passed, N failed", which test/suite.sh sums too.
survivor=0
if [ "$prov" = xshm ]; then
	bash "$here/survivor.sh" "$prefix" 2>/dev/null
	survivor=$?
fi

awk -F'\t' -v label="$label" -v list="${expected#"$top"/}" -v failed="$extra" '
	FILENAME == ARGV[1] { want[$1 " " $3] = $2; next }
	{
		t = $1 " " $3
		seen[t] = 1
		if (!(t in want)) {
			printf "%s: UNLISTED %s (%s): add it to %s\n", label, t, $2, list
			failed++
		} else if (want[t] != $2) {
			printf "%s: UNEXPECTED %s: expected %s, got %s\n", label, t, want[t], $2
			failed++
		} else
			passed++
	}
	END {
		for (t in want)
			if (!(t in seen)) {
				printf "%s: MISSING %s: expected %s, did not run\n", label, t, want[t]
				failed++
			}
		printf "%s: %d passed, %d failed\n", label, passed, failed
		exit failed > 0
	}' <(expected_results) "$actual" && [ "$survivor" = 0 ]
