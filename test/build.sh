# Sourced by test/demo.sh, test/suite.sh and the benchmark scripts: installs
# what xshm needs from Debian when it is missing, then builds xshm and its
# tests in this tree.

# openmpi-bin and libopenmpi-dev: test/mpi/run.sh and test/bench/osu.sh;
# iproute2: their simulated nodes (test/mpi/netns.sh), the two-node fabtests'
XSHM_DEBS="build-essential autoconf automake libtool pkg-config libfabric-dev
libfabric-bin check liburing-dev libnuma-dev libhwloc-dev python3-matplotlib
clang-14 libclang-rt-14-dev openmpi-bin libopenmpi-dev iproute2"

xshm_install_deps() {
	local missing=""
	for deb in $XSHM_DEBS; do
		dpkg -s "$deb" >/dev/null 2>&1 || missing="$missing $deb"
	done
	[ -z "$missing" ] && [ -z "${CI:-}" ] && return 0
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq $XSHM_DEBS >/dev/null
}

xshm_build() {
	[ -x configure ] || ./autogen.sh >/dev/null
	[ -f Makefile ] || ./configure --quiet
	make -j"$(nproc)" >/dev/null
	make -j"$(nproc)" check TESTS= >/dev/null
}

# Builds the configured tree in $1 as provider $2 (XSHM_NAME) into
# $1/provider-$2/lib$2-fi.so, to load beside this tree's xshm: test/bench/ab.sh
# and test/bench/paths.sh.
xshm_build_as() {
	(cd "$1" && make clean >/dev/null &&
	 make -j"$(nproc)" CFLAGS="-g -O2 -DXSHM_NAME=\\\"$2\\\"" >/dev/null)
	mkdir -p "$1/provider-$2"
	cp "$1/.libs/libxshm-fi.so" "$1/provider-$2/lib$2-fi.so"
}
