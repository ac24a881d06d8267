#!/bin/bash
# libfabric's fi_pingpong over the provider (default xshm; XSHM_TEST_PROVIDER
# overrides it), server and client on this host.  Passes (exit 0) when both
# exit 0 and the client printed results; otherwise prints their output and
# fails (exit 1).  FI_PROVIDER_PATH comes from the environment.

prov=${XSHM_TEST_PROVIDER:-xshm}
limit=120
workdir=$(mktemp -d) || exit 1
server_pid=

cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	rm -rf "$workdir"
}
trap cleanup EXIT

fail() {
	echo "FAIL: fi_pingpong -p $prov: $*"
	for f in server client; do
		[ -f "$workdir/$f.out" ] && { echo "--- $f output:"; cat "$workdir/$f.out"; }
	done
	exit 1
}

command -v fi_pingpong >/dev/null || fail "fi_pingpong not found"

have_ss=$(command -v ss)

listening() {
	[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

free_port() {
	local port
	for _ in $(seq 50); do
		port=$((20000 + RANDOM % 40000))
		[ -n "$have_ss" ] && listening "$port" && continue
		echo "$port"
		return 0
	done
	return 1
}

# Starts the server on a free port; returns nonzero if it did not listen.
start_server() {
	port=$(free_port) || fail "no free port"
	timeout "$limit" fi_pingpong -p "$prov" -e rdm -S all -B "$port" \
		>"$workdir/server.out" 2>&1 &
	server_pid=$!
	for _ in $(seq 100); do
		# without ss(8), a server still alive after a second is taken as ready
		if [ -z "$have_ss" ]; then
			sleep 1
			kill -0 "$server_pid" 2>/dev/null && return 0
		fi
		listening "$port" && return 0
		kill -0 "$server_pid" 2>/dev/null || { server_pid=; return 1; }
		sleep 0.1
	done
	return 1
}

started=
for _ in 1 2 3; do
	start_server && { started=1; break; }
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	server_pid=
done
[ -n "$started" ] || fail "the server did not start listening"

timeout "$limit" fi_pingpong -p "$prov" -e rdm -S all -P "$port" 127.0.0.1 \
	>"$workdir/client.out" 2>&1
client_rc=$?
wait "$server_pid"
server_rc=$?
server_pid=

[ "$client_rc" -eq 0 ] || fail "client exited with $client_rc"
[ "$server_rc" -eq 0 ] || fail "server exited with $server_rc"
grep -Eq '^[0-9]+[kmg]?[[:space:]]+[0-9]+[[:space:]]+=[0-9]+' "$workdir/client.out" ||
	fail "the client printed no results"
echo "PASS: fi_pingpong -p $prov -e rdm -S all ($(grep -Ec '^[0-9]' "$workdir/client.out") sizes)"
exit 0
