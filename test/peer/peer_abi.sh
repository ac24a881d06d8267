#!/usr/bin/env bash
# FI_XSHM_PEER_ABI forced against xshm's default choice: an owner of
# libfabric's style whose get_tag takes fi_peer(3)'s size (spec), and an
# owner of the page's style whose get_tag takes none (libfabric).  Runs the
# flows of test_peer_srx in each, with the reference owner declaring the
# same signature (XSHM_TEST_PEER_ABI); exits 0 when both pass.
cd "$(dirname "$0")"
status=0
run() {
	local xshm_abi=$1 owner_abi=$2 case=$3
	if FI_XSHM_PEER_ABI=$xshm_abi XSHM_TEST_PEER_ABI=$owner_abi \
		CK_RUN_CASE=$case ./test_peer_srx; then
		echo "PASS: FI_XSHM_PEER_ABI=$xshm_abi, $case"
	else
		echo "FAIL: FI_XSHM_PEER_ABI=$xshm_abi, $case"
		status=1
	fi
}
run spec spec upstream/flows
run libfabric libfabric-1.22 spec/flows
exit $status
