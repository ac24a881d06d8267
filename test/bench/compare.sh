#!/usr/bin/env bash
# Benchmarks xshm against libfabric's built-in shm, on Debian's libfabric 1.17
# and on libfabric 2.6 (shm-1.17, shm-2.6): builds if needed, then runs
# test/bench/compare.py (--help for its options; --anchors 1.17 or 2.6 for
# one libfabric), which prints a table per benchmark and writes CSV and PNG
# files under bench-results/.  libfabric 2.6 comes from --libfabric-26 or
# $XSHM_LIBFABRIC_26, else test/thirdparty.sh builds it once into build/;
# without it compare.py says so and runs on 1.17 only.
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/build.sh
xshm_install_deps
xshm_build

anchors=1.17,2.6 lf26=${XSHM_LIBFABRIC_26:-} prev=
for arg in "$@"; do
	case $prev in --anchors) anchors=$arg ;; --libfabric-26) lf26=$arg ;; esac
	case $arg in --anchors=*) anchors=${arg#*=} ;; --libfabric-26=*) lf26=${arg#*=} ;; esac
	prev=$arg
done
if [ -z "$lf26" ] && [[ ,$anchors, == *,2.6,* ]]; then
	if lf26=$(test/thirdparty.sh libfabric-2.6); then
		export XSHM_LIBFABRIC_26=$lf26
	else
		echo "compare.sh: no libfabric 2.6 (see above)" >&2
	fi
fi

XSHM_BENCH_COMMAND="$(printf '%q ' "$0" "$@")"
export XSHM_BENCH_COMMAND="${XSHM_BENCH_COMMAND% }"
export FI_PROVIDER_PATH="$PWD/.libs"
# Debian's python3, which has python3-matplotlib (not one earlier in PATH)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
exec "$PY" test/bench/compare.py "$@"
