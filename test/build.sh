# Sourced by test/demo.sh and test/suite.sh: installs what xshm needs from
# Debian when it is missing, then builds xshm and its tests in this tree.

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
