#!/bin/bash
# The calls between the folders of prov/xshm/, read from the built objects
# (nm: what each defines, what it leaves undefined), and a check that they
# form no loop.  Prints "caller -> callee: symbols" for every pair of
# folders, then the folders from top to bottom.  Exits 1 on a loop, 77
# (skipped) when the provider is not built.
#
#   test/tools/folder_calls.sh [builddir]
set -u
builddir=${1:-${XSHM_BUILDDIR:-.}}
objs=$(ls "$builddir"/prov/xshm/*/.libs/libxshm_fi_la-*.o 2>/dev/null)
if [ -z "$objs" ]; then
	echo "no objects of libxshm-fi under $builddir/prov/xshm/*/.libs" >&2
	exit 77
fi
if ls "$builddir"/prov/xshm/.libs/libxshm_fi_la-*.o >/dev/null 2>&1; then
	echo "objects outside a folder of prov/xshm/ (a stale build?)" >&2
fi

# "D folder symbol" for what a folder defines, "U folder symbol" for what
# it uses; the folder is the directory above .libs.
syms=$(for o in $objs; do
	folder=$(basename "$(dirname "$(dirname "$o")")")
	nm "$o" | awk -v f="$folder" \
		'$1 == "U" { print "U", f, $2 } NF == 3 && $2 ~ /^[TDRBV]$/ { print "D", f, $3 }'
done)

edges=$(awk '
	$1 == "D" { home[$3] = $2 }
	$1 == "U" { n++; from[n] = $2; sym[n] = $3 }
	END {
		for (i = 1; i <= n; i++)
			if ((sym[i] in home) && home[sym[i]] != from[i])
				print from[i], home[sym[i]], sym[i]
	}' <<<"$syms" | sort -u)

# One line per pair of folders, with the symbols behind it.
awk '{ key = $1 " -> " $2; s[key] = s[key] " " $3 }
     END { for (k in s) print k ":" s[k] }' <<<"$edges" | sort

echo "layers, top to bottom:"
order=$(awk '{ print $1, $2 }' <<<"$edges" | sort -u | tsort 2>&1)
status=$?
if [ $status -ne 0 ] || grep -q 'loop' <<<"$order"; then
	echo "$order"
	echo "FAIL: the calls between the folders of prov/xshm/ form a loop" >&2
	exit 1
fi
echo "$order" | sed 's/^/  /'
