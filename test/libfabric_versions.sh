#!/usr/bin/env bash
# xshm and xlink under each libfabric at hand, through that libfabric's own
# fi_info, which asks for its own API version: Debian's 1.17, 1.22 (built by
# test/thirdparty.sh, as the suite does for test/peer/peer_shm122.sh) and
# 2.6 where build/libfabric-2.6 holds it (compare.sh builds it; it is not
# counted when absent).  libfabric skips a provider whose fi_version is older
# than the version asked for, so each provider must be listed, and report
# as its fabric's api_version the version asked for.  Under a libfabric
# newer than 1.17, Debian's fi_info (asking for 1.17) must still get 1.17,
# and test/libfabric_versions_app.c, built against that libfabric's own
# headers, must reach xshm's AV calls that 1.17's headers lack natively
# (each of its lines a check).
#
#   XSHM_LIBFABRIC_122, XSHM_LIBFABRIC_26  install prefixes
#
# Ends with "libfabric-versions: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD
passed=0
failed=0

check() { # check WHAT COMMAND...: counts COMMAND's success
	local what=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "libfabric-versions: FAIL: $what"
	fi
}

# api_version_is LIBDIR FI_INFO PROVIDER VERSION: the provider is listed,
# every entry with that api_version.
api_version_is() {
	local out
	out=$(LD_LIBRARY_PATH=$1 FI_PROVIDER_PATH=$top/.libs "$2" -p "$3" -v 2>&1) ||
		{ echo "$out" | head -3; return 1; }
	# Here-strings, not pipes: under pipefail, a grep -q that exits at its
	# first match kills a writer still writing with SIGPIPE, and the check
	# failed about 1 time in 80.
	grep -q "prov_name: $3\$" <<<"$out" &&
		[ -z "$(grep 'api_version:' <<<"$out" | grep -v "api_version: $4\$")" ]
}

# app PREFIX LABEL: test/libfabric_versions_app.c built and run with that
# libfabric; each of its "ok"/"FAIL" lines counts.
app() {
	local bin out line
	bin=$(mktemp)
	if ! gcc -Wall -o "$bin" test/libfabric_versions_app.c -I"$1/include" \
		-L"$1/lib" -lfabric; then
		check "libfabric_versions_app built against $2" false
		rm -f "$bin"
		return
	fi
	out=$(LD_LIBRARY_PATH=$1/lib FI_PROVIDER_PATH=$top/.libs timeout 60 "$bin" 2>&1)
	rm -f "$bin"
	while IFS= read -r line; do
		case $line in
		"ok "*) passed=$((passed + 1)) ;;
		"FAIL "*) failed=$((failed + 1))
			echo "libfabric-versions: $2: $line" ;;
		esac
	done <<<"$out"
	grep -qE '^(ok|FAIL) ' <<<"$out" ||
		check "libfabric_versions_app under $2 printed its checks" false
}

under() { # under LABEL PREFIX VERSION: the checks with that libfabric
	local label=$1 lib=$2/lib fi_info=$2/bin/fi_info version=$3
	for prov in xshm xlink; do
		check "$prov listed by $label's fi_info, api_version $version" \
			api_version_is "$lib" "$fi_info" "$prov" "$version"
		[ "$label" = 1.17 ] ||
			check "$prov under $label, asked for 1.17 by Debian's fi_info" \
				api_version_is "$lib" /usr/bin/fi_info "$prov" 1.17
	done
	[ "$label" = 1.17 ] || app "$2" "$label"
}

under 1.17 /usr 1.17
prefix=${XSHM_LIBFABRIC_122:-$(test/thirdparty.sh libfabric-1.22)}
if [ -x "$prefix/bin/fi_info" ]; then
	under 1.22 "$prefix" 1.22
else
	check "libfabric 1.22 built in '$prefix'" false
fi
prefix=${XSHM_LIBFABRIC_26:-$top/build/libfabric-2.6}
if [ -x "$prefix/bin/fi_info" ]; then
	under 2.6 "$prefix" 2.6
else
	echo "libfabric-versions: no libfabric 2.6 in '$prefix' (test/thirdparty.sh libfabric-2.6): its checks not run"
fi
echo "libfabric-versions: $passed passed, $failed failed"
[ "$failed" = 0 ]
