#!/usr/bin/env bash
# Builds software xshm is tested against, once, into build/ (git-ignored),
# and prints the install prefix on stdout.
#
#   test/thirdparty.sh fabtests        fabtests 1.17.0 against Debian's libfabric
#   test/thirdparty.sh libfabric-1.22  libfabric 1.22.0: shm, tcp, rxm only
#   test/thirdparty.sh libfabric-2.6   libfabric 2.6.0: shm, tcp, rxm only
#
# Sources come from $XSHM_THIRDPARTY (default ../shared/thirdparty beside
# the checkout), or for fabtests from $FABTESTS_SRC (a tarball or an
# unpacked source tree).  $FABTESTS_PREFIX names a fabtests installed
# elsewhere: it is used as it is.  The build log is build/<name>.log; a
# failure or a missing source says so on stderr and exits 1.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
thirdparty=${XSHM_THIRDPARTY:-$top/../shared/thirdparty}
build=$top/build

fail() {
	echo "thirdparty: $*" >&2
	exit 1
}

# unpack SOURCE DIR: a tarball is unpacked into DIR's parent (it holds DIR);
# a source tree is copied to DIR.
unpack() {
	local source=$1 dir=$2
	rm -rf "$dir"
	mkdir -p "$build/src"
	if [ -d "$source" ]; then
		cp -a "$source" "$dir"
	else
		tar -xf "$source" -C "$build/src"
	fi
	[ -d "$dir" ] || fail "$source did not unpack into $dir"
}

# build_once NAME SOURCE SRCDIR CONFIGURE-ARGS...: configure, make, install
# into build/NAME unless build/NAME/.built names the same source.
build_once() {
	local name=$1 source=$2 srcdir=$3
	shift 3
	local prefix=$build/$name log=$build/$name.log
	local stamp
	stamp=$(stat -c '%n %s %Y' "$source")
	if [ "$(cat "$prefix/.built" 2>/dev/null)" = "$stamp" ]; then
		echo "$prefix"
		return
	fi
	echo "thirdparty: building $name from $source (log: $log)" >&2
	unpack "$source" "$srcdir"
	rm -rf "$prefix"
	if ! (cd "$srcdir" &&
		{ [ -x configure ] || ./autogen.sh; } &&
		./configure --prefix="$prefix" "$@" &&
		make -j"$(nproc)" && make install) >"$log" 2>&1; then
		tail -n 20 "$log" >&2
		fail "building $name failed"
	fi
	echo "$stamp" >"$prefix/.built"
	echo "$prefix"
}

fabtests() {
	local source=${FABTESTS_SRC:-$thirdparty/fabtests-1.17.0.tar.gz}

	if [ -n "${FABTESTS_PREFIX:-}" ]; then
		[ -x "$FABTESTS_PREFIX/bin/runfabtests.sh" ] ||
			fail "FABTESTS_PREFIX=$FABTESTS_PREFIX has no bin/runfabtests.sh"
		echo "$FABTESTS_PREFIX"
		return
	fi
	[ -e "$source" ] || fail "no fabtests source at $source: set FABTESTS_SRC to a
fabtests tarball or source tree, or FABTESTS_PREFIX to an installed fabtests"
	build_once fabtests "$source" "$build/src/fabtests-1.17.0" \
		--with-libfabric=/usr
}

libfabric() {
	local version=$1
	local source=$thirdparty/libfabric-$version.0.tar.xz

	[ -e "$source" ] || fail "no libfabric $version source at $source"
	build_once "libfabric-$version" "$source" \
		"$build/src/libfabric-$version.0" \
		--enable-only --enable-shm --enable-tcp --enable-rxm
}

case "${1:-}" in
fabtests) fabtests ;;
libfabric-1.22) libfabric 1.22 ;;
libfabric-2.6) libfabric 2.6 ;;
*) fail "usage: $0 fabtests|libfabric-1.22|libfabric-2.6" ;;
esac
