#!/bin/bash
# "ssh" for Open MPI's rsh launcher (--mca plm_rsh_agent <this>) onto the simulated
# nodes of netns.sh: "rsh_agent.sh [options] HOST COMMAND..." runs COMMAND in the
# network namespace of HOST (xlnodeK, or its address 10.77.0.K+1) inside a fresh UTS
# namespace whose host name is HOST, so that Open MPI sees another node.
#
# Open MPI builds COMMAND for a remote shell (it quotes for one), so, like ssh, the
# words are joined with spaces and handed to bash -c.
#
# XLINK_NETNS (netns_names.sh) names the set of nodes, as for netns.sh.
set -u

# shellcheck source=netns_names.sh
. "$(dirname "$(readlink -f "$0")")/netns_names.sh"
netns_names || exit 255

# ssh-style options Open MPI might put before the host (none by default): skip them
while [ $# -gt 0 ]; do
	case $1 in
	-[1246AaCfgKkMNnqsTtVvXxYy]) shift ;;
	-*) shift 2 ;;
	*) break ;;
	esac
done
[ $# -ge 2 ] || { echo "usage: $0 HOST COMMAND..." >&2; exit 255; }
host=$1
shift

case $host in
"$NS_PREFIX"node[0-9]*) ns=${host%%.*} ;;
"$NS_NET".[0-9]*) ns=${NS_PREFIX}node$((${host##*.} - 1)) ;;
*) echo "rsh_agent.sh: unknown host '$host' (expected ${NS_PREFIX}nodeK)" >&2; exit 255 ;;
esac
host=$ns

# exit code 255 as ssh does when the connection (here: the namespace) is missing
ip netns list | awk '{print $1}' | grep -qx "$ns" ||
	{ echo "rsh_agent.sh: no namespace $ns (run netns.sh up)" >&2; exit 255; }

exec ip netns exec "$ns" unshare --uts bash -c "hostname $host && { $*; }"
