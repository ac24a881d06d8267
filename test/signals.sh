#!/bin/bash
# A program with an xshm endpoint, as it is started (libfabric and what it
# loads have installed their signal handlers: on Debian 12 libinfinipath's
# for SIGINT and SIGTERM), stopped by `timeout -s SIG 1`: its region must be
# gone from /dev/shm, and it must end with the status the same program ends
# with when it opens no xshm endpoint (signal_ep -n).  SIGTERM, SIGINT and
# SIGHUP.  Passes (exit 0) or prints what went wrong and fails (exit 1).
# FI_PROVIDER_PATH and XSHM_BUILDDIR come from the environment (make check).

builddir=${XSHM_BUILDDIR:-.}
prog=$builddir/test/prov/signal_ep
workdir=$(mktemp -d) || exit 1
trap 'rm -rf "$workdir"' EXIT
failed=0

[ -x "$prog" ] || { echo "FAIL: $prog not built"; exit 1; }

# Runs timeout -s $1 $2 signal_ep ${@:3} into $workdir/out; sets status.
stop_after() {
	local sig=$1 secs=$2
	shift 2
	timeout --preserve-status -s "$sig" "$secs" "$prog" "$@" \
		>"$workdir/out" 2>&1
	status=$?
}

for sig in TERM INT HUP; do
	num=$(kill -l "$sig")
	# The endpoint must be open before the signal: a slow start retries longer.
	for secs in 1 3 6; do
		stop_after "$sig" "$secs"
		grep -qx ready "$workdir/out" && break
	done
	region=$(sed -n 's/^region //p' "$workdir/out")
	before=$(sed -n "s/^before $num //p" "$workdir/out")
	if [ -z "$region" ] || ! grep -qx ready "$workdir/out"; then
		echo "FAIL: SIG$sig: signal_ep did not get ready:"
		cat "$workdir/out"
		failed=1
		continue
	fi
	stop_after "$sig" "$secs" -n
	control=$status
	stop_after "$sig" "$secs"
	region=$(sed -n 's/^region //p' "$workdir/out")
	result="SIG$sig after ${secs}s (before xshm: $before): status $status, without xshm $control"
	if [ -e "$region" ]; then
		echo "FAIL: $result: $region left"
		rm -f "$region"
		failed=1
	elif [ "$status" != "$control" ]; then
		echo "FAIL: $result"
		failed=1
	else
		echo "PASS: $result, $region removed"
	fi
done
exit $failed
