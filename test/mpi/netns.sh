#!/bin/bash
# Simulated nodes for multi-node MPI tests on one machine.
#
#   netns.sh up N     bridge xlbr0 (10.77.0.254/24 on the host) and N network
#                     namespaces xlnode0..N-1, each with a veth "xleth0" into the
#                     bridge at 10.77.0.<i+1>, lo up, and the names xlnode<i> in
#                     /etc/hosts (inside a marked block)
#   netns.sh down     removes all of that, whatever state a failed "up" left
#   netns.sh status   shows what exists
#
# Every namespace names its interface xleth0, so one FI_TCP_IFACE=xleth0 and one
# oob_tcp_if_include=10.77.0.0/24 serve all ranks. A namespace only separates the
# network: /dev/shm, /tmp and the process table stay shared, so each "node" also
# needs its own host name (a UTS namespace, see rsh_agent.sh) for Open MPI to treat
# it as another node. Needs root and iproute2. Idempotent.
#
# XLINK_NETNS=PREFIX:NET (netns_names.sh) works on another set instead, e.g.
# ft:10.78.0 for ftbr0, ftnode0.. and 10.78.0.0/24; the default set is untouched.
set -u

# shellcheck source=netns_names.sh
. "$(dirname "$(readlink -f "$0")")/netns_names.sh"
netns_names || exit 2
BR=$NS_BR
NET=$NS_NET
NODE=${NS_PREFIX}node
HOSTS=/etc/hosts
MARK_BEGIN="# BEGIN $NS_MARK (test/mpi/netns.sh)"
MARK_END="# END $NS_MARK"

die() { echo "netns.sh: $*" >&2; exit 1; }

hosts_remove() {
	grep -qF "$MARK_BEGIN" "$HOSTS" 2>/dev/null || return 0
	# /etc/hosts may be a bind mount (containers): rewrite it in place, not by rename
	local tmp
	tmp=$(mktemp) || return 1
	awk -v b="$MARK_BEGIN" -v e="$MARK_END" \
		'$0 == b { skip = 1; next } $0 == e { skip = 0; next } !skip' \
		"$HOSTS" >"$tmp" && cat "$tmp" >"$HOSTS"
	rm -f "$tmp"
}

# kill what still runs inside our namespaces (ranks or orted left by a killed mpirun)
ns_kill() {
	local ns=$1 pids
	pids=$(ip netns pids "$ns" 2>/dev/null) || return 0
	[ -n "$pids" ] || return 0
	# shellcheck disable=SC2086
	kill -KILL $pids 2>/dev/null
	sleep 0.2
}

down() {
	local ns
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${NODE}[0-9]+\$"); do
		ns_kill "$ns"
		ip netns del "$ns" 2>/dev/null
	done
	# host ends of the veths normally vanish with their namespace; not after a partial up
	for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
		grep -E "^${NS_VETH}[0-9]+\$"); do
		ip link del "$l" 2>/dev/null
	done
	ip link show "$BR" >/dev/null 2>&1 && ip link del "$BR"
	hosts_remove
	return 0
}

up() {
	local n=$1 i ns
	[[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "up: N must be 1..200"
	[ "$(id -u)" = 0 ] || die "needs root"
	command -v ip >/dev/null || die "needs iproute2 (ip)"
	# start from nothing, so that "up" twice or after a crash gives the same result
	down
	# another set on the same subnet would take half of our traffic (XLINK_NETNS)
	[ -z "$(ip -o route show "$NET.0/24" 2>/dev/null)" ] ||
		die "$NET.0/24 is already routed: $(ip -o route show "$NET.0/24" | head -1)"
	ip link add "$BR" type bridge || die "cannot create bridge $BR"
	ip addr add "$NET.254/24" dev "$BR" && ip link set "$BR" up || die "cannot bring up $BR"
	for ((i = 0; i < n; i++)); do
		ns=$NODE$i
		ip netns add "$ns" || die "cannot create namespace $ns"
		ip link add "$NS_VETH$i" type veth peer name xleth0 netns "$ns" || die "veth $i"
		ip link set "$NS_VETH$i" master "$BR" && ip link set "$NS_VETH$i" up || die "veth $i up"
		ip -n "$ns" addr add "$NET.$((i + 1))/24" dev xleth0 || die "address in $ns"
		ip -n "$ns" link set xleth0 up && ip -n "$ns" link set lo up || die "links up in $ns"
	done
	{
		echo "$MARK_BEGIN"
		for ((i = 0; i < n; i++)); do echo "$NET.$((i + 1)) $NODE$i"; done
		echo "$MARK_END"
	} >>"$HOSTS" || die "cannot write $HOSTS"
	# the bridge may take a moment to forward on a fresh port
	for ((i = 1; i < n; i++)); do
		wait_reach "$NET.$((i + 1))" || die "${NODE}0 cannot reach $NET.$((i + 1))"
	done
}

# a TCP connect to port 9 of the target: "refused" proves the route (no ping here)
wait_reach() {
	local t out
	for t in 1 2 3 4 5 6 7 8 9 10; do
		out=$(ip netns exec "${NODE}0" timeout 1 bash -c "exec 3<>/dev/tcp/$1/9" 2>&1) && return 0
		case $out in *[Rr]efused*) return 0 ;; esac
		sleep 0.5
	done
	return 1
}

status() {
	ip -br link show "$BR" 2>/dev/null || echo "no bridge $BR"
	ip netns list | grep -E "^${NODE}[0-9]+" || echo "no $NODE namespaces"
	awk -v b="$MARK_BEGIN" -v e="$MARK_END" '$0 == b { p = 1 } p { print } $0 == e { p = 0 }' "$HOSTS"
}

case "${1:-}" in
up) up "${2:-2}" ;;
down) down ;;
status) status ;;
*) echo "usage: $0 up N | down | status" >&2; exit 2 ;;
esac
