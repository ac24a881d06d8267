/* The provider parameters: declared for fi_info -e, read once in fi_prov_ini. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/params.h"
#include "base/provider.h"
#include "shm/layout.h"
#include "shm/proc.h"
#include "shm/store_choice.h"

struct xshm_params xshm_params;

/* Every parameter is declared, so that fi_info -e lists it. */
static void define_params(void)
{
	fi_param_define(&xshm_prov, "node_id", FI_PARAM_STRING,
		"Identity of this node in xshm addresses, as hex digits "
		"(default: a hash of the boot id and host name). Processes "
		"with different node ids do not talk to each other; tests "
		"use it to simulate several nodes on one machine.");
	fi_param_define(&xshm_prov, "cma", FI_PARAM_BOOL,
		"Copy large messages once, straight from the sender's buffers "
		"to the receiver's, with process_vm_readv and "
		"process_vm_writev (default: yes, when the kernel allows it). "
		"With no, large messages are copied through bounce buffers in "
		"pieces.");
	fi_param_define(&xshm_prov, "path", FI_PARAM_STRING,
		"How large messages choose between bounce buffers and the "
		"single copy: auto (each sender times both to each receiver, "
		"by size, and takes the cheaper) or static (by size and pages: "
		"scopy_threshold, scopy_huge_min, scopy_huge_stream_min). "
		"Default: auto, or static when one of those three is set.");
	fi_param_define(&xshm_prov, "path_min", FI_PARAM_SIZE_T,
		"With path=auto, messages larger than this many bytes take "
		"the path measured cheaper; smaller ones, bounce buffers "
		"(default: %zu).", (size_t) XSHM_PATH_MIN);
	fi_param_define(&xshm_prov, "scopy_threshold", FI_PARAM_SIZE_T,
		"With path=static, messages larger than this many bytes always "
		"take the single copy (default: %zu).",
		(size_t) XSHM_SCOPY_THRESHOLD);
	fi_param_define(&xshm_prov, "scopy_huge_min", FI_PARAM_SIZE_T,
		"Messages larger than this many bytes, up to scopy_threshold, "
		"take the single copy when the buffers of both sides lie on "
		"huge pages, and bounce buffers otherwise, when sent alone "
		"(default: %zu; scopy_threshold or more: lone sends always "
		"bounce).",
		(size_t) XSHM_SCOPY_HUGE_MIN);
	fi_param_define(&xshm_prov, "scopy_huge_stream_min", FI_PARAM_SIZE_T,
		"What scopy_huge_min is for a lone send, for a send in a "
		"stream: one to the receiver of the endpoint's previous "
		"send of such a size, with no receive completed since "
		"(default: %zu).",
		(size_t) XSHM_SCOPY_HUGE_STREAM_MIN);
	fi_param_define(&xshm_prov, "cells_threshold", FI_PARAM_SIZE_T,
		"Messages of more than one cell and at most this many bytes "
		"travel in consecutive ring cells rather than a bounce buffer; "
		"above %zu, only to receivers whose buffers the sender fills "
		"with cached stores (default: %zu, at most %zu).",
		(size_t) XSHM_CELLS_ALWAYS_MAX, (size_t) XSHM_CELLS_THRESHOLD,
		(size_t) XSHM_CELLS_MSG_MAX);
	fi_param_define(&xshm_prov, "bounce_stores", FI_PARAM_STRING,
		"How senders fill bounce buffers: cached (the data waits in the "
		"sender's cache for the receiver), streaming (non-temporal "
		"stores: through memory, for CPUs that share no cache) or auto, "
		"chosen per receiver by timing the sender's fills (default: "
		"auto; on CPUs other than x86-64 every fill is cached).");
	fi_param_define(&xshm_prov, "numa", FI_PARAM_BOOL,
		"Place each endpoint's region (ring and bounce buffers) on the "
		"memory node of the CPU that enables the endpoint (default: "
		"yes; needs libnuma at build time).");
	fi_param_define(&xshm_prov, "signal_handlers", FI_PARAM_BOOL,
		"When the first endpoint opens, install a handler that "
		"removes the process's shared-memory files, then passes the "
		"signal on to what was there before: for SIGINT, SIGTERM and "
		"SIGHUP in front of any handler installed earlier, for "
		"SIGQUIT, SIGABRT, SIGSEGV and SIGBUS only where the "
		"disposition is still the default; ignored signals are left "
		"alone (default: yes).");
	fi_param_define(&xshm_prov, "rma_fast", FI_PARAM_STRING,
		"RMA copied by its initiator straight into or out of the "
		"target's memory (process_vm_writev, process_vm_readv), the "
		"key, access and range checked against the registrations the "
		"target publishes, without a round trip through the target: "
		"1 (wherever the operation allows it: a single-buffer "
		"registration among the first ones, no remote CQ data, no "
		"remote counters), 0 (never: the target copies, and every "
		"operation waits for its ack) or auto (default: operations of "
		"up to 1952 bytes go through the target's ring, writes among "
		"them completing once there where the initiator could check "
		"them, and atomics that fetch nothing likewise; larger ones "
		"the way the initiator measures cheaper to that target, for "
		"their direction and size: through the target's ring, writes "
		"up to rma_posted_max posted through its bounce buffers where "
		"they may, or as 1).");
	fi_param_define(&xshm_prov, "rma_split_min", FI_PARAM_SIZE_T,
		"RMA copied by its initiator (rma_fast) of this many bytes or "
		"more is shared with the target: the initiator copies chunks "
		"from the front and offers the target the chunks from the "
		"back, which it copies when it progresses; the initiator takes "
		"whatever the target has not begun, so it never waits on a "
		"target that does not progress. 0: never (default: %zu).",
		XSHM_RMA_SPLIT_MIN);
	fi_param_define(&xshm_prov, "rma_posted_max", FI_PARAM_SIZE_T,
		"With rma_fast=auto, writes of up to this many bytes may be "
		"posted through the target's bounce buffers, where that way is "
		"measured cheaper: checked by the initiator, they complete "
		"once in the target's ring, while half its pool is free and "
		"the free buffers hold them all; larger ones, and these "
		"otherwise, are copied by the initiator (default: %zu; 1952 "
		"or less: one cell only).", XSHM_RMA_POSTED_MAX);
	fi_param_define(&xshm_prov, "liveness_ms", FI_PARAM_INT,
		"While an endpoint waits on peers (queued sends, sends awaiting "
		"an ack, messages still arriving), it checks this often, in "
		"milliseconds, whether those peers' processes still run, and "
		"fails the operations of dead ones (default: %d).",
		XSHM_LIVENESS_MS);
	fi_param_define(&xshm_prov, "peer_abi", FI_PARAM_STRING,
		"How xshm calls an owner provider's get_tag: spec, with the "
		"size argument of fi_peer(3); libfabric, without it, as "
		"libfabric's own headers up to 1.22 declare it; or auto: "
		"libfabric for an owner that binds its own fid_peer_srx to "
		"xshm's endpoints (as libfabric's owners do), spec for one "
		"that binds the fid fi_srx_context returned (default: auto).");
	fi_param_define(&xshm_prov, "unexp_bytes_max", FI_PARAM_SIZE_T,
		"Memory an endpoint may hold for messages that arrived before "
		"a matching receive (default: %zu). Beyond it the endpoint "
		"leaves further unmatched messages in its ring, and senders "
		"get -FI_EAGAIN, until receives are posted.",
		XSHM_UNEXP_BYTES_MAX);
}

static bool param_bool(const char *name, bool dflt)
{
	int value = dflt;

	fi_param_get_bool(&xshm_prov, name, &value);
	return value;
}

static size_t param_size(const char *name, size_t dflt, size_t max)
{
	size_t value = dflt;

	fi_param_get_size_t(&xshm_prov, name, &value);
	return value < max ? value : max;
}

static int param_positive_int(const char *name, int dflt)
{
	int value;

	return !fi_param_get_int(&xshm_prov, name, &value) && value > 0 ?
	       value : dflt;
}

static uint64_t param_node_id(void)
{
	char *text = NULL;
	uint64_t id;

	if (fi_param_get_str(&xshm_prov, "node_id", &text) || !text)
		return xshm_node_id();
	id = strtoull(text, NULL, 16);
	if (!id) {
		XSHM_WARN(FI_LOG_CORE, "ignoring FI_XSHM_NODE_ID=%s\n", text);
		return xshm_node_id();
	}
	return id;
}

static enum xshm_bounce_stores param_bounce_stores(void)
{
	enum xshm_bounce_stores dflt = XSHM_HAVE_CYCLES ?
		XSHM_BOUNCE_STORES_AUTO : XSHM_BOUNCE_STORES_CACHED;
	char *text = NULL;

	if (fi_param_get_str(&xshm_prov, "bounce_stores", &text) || !text)
		return dflt;
	if (!strcmp(text, "cached"))
		return XSHM_BOUNCE_STORES_CACHED;
	if (!strcmp(text, "streaming"))
		return XSHM_BOUNCE_STORES_STREAMING;
	if (strcmp(text, "auto"))
		XSHM_WARN(FI_LOG_CORE, "ignoring FI_XSHM_BOUNCE_STORES=%s\n",
			  text);
	return dflt;
}

static enum xshm_peer_abi param_peer_abi(void)
{
	char *text = NULL;

	if (fi_param_get_str(&xshm_prov, "peer_abi", &text) || !text)
		return XSHM_PEER_ABI_AUTO;
	if (!strcmp(text, "spec"))
		return XSHM_PEER_ABI_SPEC;
	if (!strcmp(text, "libfabric"))
		return XSHM_PEER_ABI_LIBFABRIC;
	if (strcmp(text, "auto"))
		XSHM_WARN(FI_LOG_CORE, "ignoring FI_XSHM_PEER_ABI=%s\n", text);
	return XSHM_PEER_ABI_AUTO;
}

static enum xshm_rma_fast_mode param_rma_fast(void)
{
	char *text = NULL;

	if (fi_param_get_str(&xshm_prov, "rma_fast", &text) || !text ||
	    !strcmp(text, "auto"))
		return XSHM_RMA_FAST_AUTO;
	if (!strcmp(text, "1") || !strcmp(text, "yes") || !strcmp(text, "on"))
		return XSHM_RMA_FAST_ON;
	if (!strcmp(text, "0") || !strcmp(text, "no") || !strcmp(text, "off"))
		return XSHM_RMA_FAST_OFF;
	XSHM_WARN(FI_LOG_CORE, "ignoring FI_XSHM_RMA_FAST=%s\n", text);
	return XSHM_RMA_FAST_AUTO;
}

/* A size parameter set in the environment. */
static bool param_is_set(const char *name)
{
	size_t value;

	return !fi_param_get_size_t(&xshm_prov, name, &value);
}

/*
 * FI_XSHM_PATH, else static when a size of the static choice is set: a
 * user or a test that sets one wants it obeyed.
 */
static bool param_path_auto(void)
{
	char *text = NULL;

	if (!fi_param_get_str(&xshm_prov, "path", &text) && text) {
		if (!strcmp(text, "auto"))
			return true;
		if (!strcmp(text, "static"))
			return false;
		XSHM_WARN(FI_LOG_CORE, "ignoring FI_XSHM_PATH=%s\n", text);
	}
	return !param_is_set("scopy_threshold") &&
	       !param_is_set("scopy_huge_min") &&
	       !param_is_set("scopy_huge_stream_min");
}

/* The smallest size whose path is not bounce buffers whatever happens. */
static size_t path_min(void)
{
	size_t min = xshm_params.scopy_threshold;

	if (xshm_params.path_auto)
		return param_size("path_min", XSHM_PATH_MIN, SIZE_MAX);
	if (xshm_params.scopy_huge_min < min)
		min = xshm_params.scopy_huge_min;
	if (xshm_params.scopy_huge_stream_min < min)
		min = xshm_params.scopy_huge_stream_min;
	return min;
}

void xshm_read_params(void)
{
	define_params();
	xshm_params.node_id = param_node_id();
	xshm_params.cma = param_bool("cma", true);
	xshm_params.scopy_threshold = param_size("scopy_threshold",
						 XSHM_SCOPY_THRESHOLD, SIZE_MAX);
	xshm_params.scopy_huge_min = param_size("scopy_huge_min",
						XSHM_SCOPY_HUGE_MIN, SIZE_MAX);
	xshm_params.scopy_huge_stream_min =
		param_size("scopy_huge_stream_min", XSHM_SCOPY_HUGE_STREAM_MIN,
			   SIZE_MAX);
	xshm_params.path_auto = param_path_auto();
	xshm_params.path_min = path_min();
	xshm_params.cells_threshold = param_size("cells_threshold",
						 XSHM_CELLS_THRESHOLD,
						 XSHM_CELLS_MSG_MAX);
	xshm_params.bounce_stores = param_bounce_stores();
	xshm_params.numa = param_bool("numa", true);
	xshm_params.signal_handlers = param_bool("signal_handlers", true);
	xshm_params.liveness_ms = param_positive_int("liveness_ms",
						     XSHM_LIVENESS_MS);
	xshm_params.unexp_bytes_max = param_size("unexp_bytes_max",
						 XSHM_UNEXP_BYTES_MAX, SIZE_MAX);
	xshm_params.peer_abi = param_peer_abi();
	xshm_params.rma_fast = param_rma_fast();
	xshm_params.rma_split_min = param_size("rma_split_min",
					       XSHM_RMA_SPLIT_MIN, SIZE_MAX);
	xshm_params.rma_posted_max = param_size("rma_posted_max",
						XSHM_RMA_POSTED_MAX,
						XSHM_MAX_MSG_SIZE);
}
