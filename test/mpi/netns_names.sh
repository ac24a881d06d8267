# shellcheck shell=bash
# Names of one set of simulated nodes, sourced by netns.sh, rsh_agent.sh and
# the scripts that use them.  XLINK_NETNS=PREFIX:NET names another set beside
# the default one, so that two runs at once (the MPI tests, the two-node
# fabtests) never share a namespace, a bridge, a subnet or an /etc/hosts block:
#
#   unset       namespaces xlnode0.., bridge xlbr0, veths xlveth<i>, 10.77.0.0/24
#   ft:10.78.0  namespaces ftnode0.., bridge ftbr0, veths ftveth<i>, 10.78.0.0/24
#
# PREFIX is 1 to 6 lower-case letters (interface names have at most 15
# characters); NET the first three bytes of a /24 that nothing else uses.
# The interface inside every namespace is xleth0 whatever the set.
# Sets NS_PREFIX, NS_NET, NS_BR, NS_VETH, NS_MARK; returns 1 on a bad value.

# shellcheck disable=SC2034 # set for the scripts that source this
netns_names() {
	local spec=${XLINK_NETNS:-xl:10.77.0}

	NS_PREFIX=${spec%%:*}
	NS_NET=${spec#*:}
	[ "$NS_NET" != "$spec" ] || {
		echo "XLINK_NETNS=$spec: expected PREFIX:NET, e.g. ft:10.78.0" >&2
		return 1
	}
	[[ $NS_PREFIX =~ ^[a-z]{1,6}$ && $NS_NET =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || {
		echo "XLINK_NETNS=$spec: PREFIX must be 1-6 letters a-z, NET like 10.78.0" >&2
		return 1
	}
	NS_BR=${NS_PREFIX}br0
	NS_VETH=${NS_PREFIX}veth
	# the default set keeps the marker it always had
	if [ "$NS_PREFIX" = xl ]; then
		NS_MARK=xshm-mpi-netns
	else
		NS_MARK=xshm-netns-$NS_PREFIX
	fi
}
