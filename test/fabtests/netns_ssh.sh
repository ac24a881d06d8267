#!/usr/bin/env bash
# "ssh" for runfabtests.sh into the simulated nodes of test/mpi/netns.sh:
# run.sh's two-node mode puts it first on PATH, named ssh, and runfabtests.sh
# runs "timeout T ssh -n -o ... HOST COMMAND" for every server and client.
# HOST (ftnodeK or its address, XLINK_NETNS) and COMMAND go to
# test/mpi/rsh_agent.sh: COMMAND runs in HOST's network namespace, with
# HOST's name as host name.  Two things ssh does that the agent alone would
# not:
#   - runfabtests.sh's cleanup, "ps -eo comm,pid | grep '^fi_' | ... kill -9",
#     would kill every fi_* process of the machine (the "nodes" share one
#     process table, and other people's tests run there too): here it kills
#     those in HOST's namespace only;
#   - a remote command dies with its connection: runfabtests.sh kills a
#     server whose client failed with kill -9 of its timeout, which would
#     leave the server running, holding its port, into the next test.  Here
#     the parent's death (prctl PDEATHSIG, set by setpriv) kills the command.
set -u
here=$(dirname "$(readlink -f "$0")")
agent=$here/../mpi/rsh_agent.sh

[ $# -ge 2 ] || { echo "netns_ssh.sh: usage: ssh [OPTIONS] HOST COMMAND" >&2; exit 255; }
host=${*: -2:1}
cmd=${*: -1}

# The fi_* processes of the namespace this runs in.
# shellcheck disable=SC2016
ns_cleanup='for p in $(ip netns pids "$(ip netns identify)"); do
	case $(cat /proc/$p/comm 2>/dev/null) in fi_*) kill -9 $p ;; esac
done'

case $cmd in
"ps -eo comm,pid"*) exec "$agent" "$host" "$ns_cleanup" ;;
esac

# Once more under setpriv, so that this shell learns of its parent's death.
if [ -z "${NETNS_SSH_PDEATHSIG:-}" ]; then
	NETNS_SSH_PDEATHSIG=1 exec setpriv --pdeathsig HUP "$0" "$@"
fi
unset NETNS_SSH_PDEATHSIG
"$agent" "$host" "$cmd" &
child=$!
# the agent's pid ends as the namespace's bash, the test its child
trap 'pkill -KILL -P "$child"; kill -KILL "$child"; exit 255' HUP
wait "$child"
