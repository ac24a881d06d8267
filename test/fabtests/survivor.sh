#!/usr/bin/env bash
# fabtests' survivor check: a fi_rdm_tagged_bw server whose client is
# SIGKILLed mid-stream must exit, with an error, within 1 s, at 64 B,
# 64 KiB and 4 MiB.  Its receives name the client as their source; they are
# directed only with FI_DIRECTED_RECV, which fabtests never ask for, so the
# server runs with directed_recv.so preloaded (see directed_recv.c).
#
# Usage: test/fabtests/survivor.sh FABTESTS_PREFIX
# Prints "survivor <size>: PASS|FAIL ..." per size, ends with
# "survivor: N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
bin=$1/bin
shim=$top/build/directed_recv.so
port=$((30000 + RANDOM % 20000))
passed=0
failed=0

${CC:-cc} -shared -fPIC -O2 -o "$shim" "$here/directed_recv.c" -ldl || {
	echo "survivor: 0 passed, 1 failed (directed_recv.so did not build)"
	exit 1
}
export FI_PROVIDER_PATH=$top/.libs

# A SIGKILLed process leaves its region for the next xshm process to
# reclaim; the check removes what it killed.  The owner's pid is
# struct xshm_region_hdr.owner_pid, at byte 28.
remove_regions_of() {
	local f
	for f in /dev/shm/xshm-*; do
		[ -f "$f" ] || continue
		[ "$(od -An -t d4 -j 28 -N 4 "$f" 2>/dev/null | tr -d ' ')" = "$1" ] &&
			rm -f "$f"
	done
}

now_ms() {
	date +%s%3N
}

# check SIZE: 0 when the server ended with an error within 1 s of the kill.
check() {
	local size=$1 out server client status killed_at ended_at
	out=$(mktemp -d)
	port=$((port + 1))
	# No timeout(1) around them: the kills must reach the programs.
	LD_PRELOAD=$shim "$bin/fi_rdm_tagged_bw" -p xshm -S "$size" \
		-I 100000000 -s 127.0.0.1 -B "$port" >"$out/server" 2>&1 &
	server=$!
	sleep 1
	"$bin/fi_rdm_tagged_bw" -p xshm -S "$size" -I 100000000 \
		-s 127.0.0.1 -P "$port" 127.0.0.1 >"$out/client" 2>&1 &
	client=$!
	sleep 2
	kill -KILL "$client"
	killed_at=$(now_ms)
	while kill -0 "$server" 2>/dev/null && [ $(($(now_ms) - killed_at)) -lt 5000 ]; do
		sleep 0.01
	done
	ended_at=$(now_ms)
	kill -KILL "$server" 2>/dev/null
	wait "$server" 2>/dev/null
	status=$?
	wait "$client" 2>/dev/null
	remove_regions_of "$client"
	if [ $((ended_at - killed_at)) -le 1000 ] && [ "$status" -ne 0 ] &&
		[ "$status" -ne 137 ]; then
		echo "survivor $size: PASS, server exited $status $((ended_at - killed_at)) ms after the kill"
		passed=$((passed + 1))
	else
		echo "survivor $size: FAIL, server status $status $((ended_at - killed_at)) ms after the kill"
		sed 's/^/    server: /' "$out/server" | tail -n 5
		failed=$((failed + 1))
	fi
	rm -rf "$out"
}

for size in 64 65536 4194304; do
	check "$size"
done
echo "survivor: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
