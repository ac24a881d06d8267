/* fi_getinfo: attributes, capabilities, versions and rejected hints. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct fi_info *getinfo_ok(const struct xt_cfg *cfg)
{
	struct fi_info *info = NULL;

	XT_ASSERT_OK(xt_getinfo(cfg, &info));
	XT_ASSERT(info != NULL, "no info returned");
	return info;
}

static struct fi_info *default_info(void)
{
	struct xt_cfg cfg = xt_cfg_default();

	return getinfo_ok(&cfg);
}

START_TEST(getinfo_returns_rdm_info_of_the_provider)
{
	struct fi_info *info = default_info();

	XT_ASSERT(strcmp(info->fabric_attr->prov_name, xt_provider()) == 0,
		  "prov_name %s", info->fabric_attr->prov_name);
	/* An owner names its network's fabric and domain. */
	XT_ASSERT(!xt_wanted(XT_XSHM) || strcmp(info->fabric_attr->name, xt_provider()) == 0,
		  "fabric name %s", info->fabric_attr->name);
	XT_ASSERT(!xt_wanted(XT_XSHM) || strcmp(info->domain_attr->name, xt_provider()) == 0,
		  "domain name %s", info->domain_attr->name);
	XT_ASSERT(info->ep_attr->type == FI_EP_RDM, "ep type %d", info->ep_attr->type);
	fi_freeinfo(info);
}
END_TEST

START_TEST(getinfo_caps_include_msg_tagged_send_recv)
{
	struct fi_info *info = default_info();
	uint64_t want = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV;

	XT_ASSERT((info->caps & want) == want, "caps 0x%llx",
		  (unsigned long long)info->caps);
	fi_freeinfo(info);
}
END_TEST

/* FI_RMA and FI_ATOMIC (issue 35) only when asked for: defaults are as before. */
START_TEST(getinfo_caps_exclude_rma_atomic_remote_comm)
{
	struct fi_info *info = default_info();

	XT_ASSERT(!(info->caps & (FI_RMA | FI_ATOMIC | FI_REMOTE_COMM)),
		  "caps 0x%llx", (unsigned long long)info->caps);
	fi_freeinfo(info);
}
END_TEST

static struct fi_info *rma_info(uint64_t caps, uint64_t mr_mode)
{
	struct xt_cfg cfg = xt_cfg_default();

	cfg.caps = caps;
	cfg.mr_mode = mr_mode;
	return getinfo_ok(&cfg);
}

#define FT_MR_MODE	(FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_ALLOCATED | \
			 FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_RAW)
#define RMA_ROLES	(FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

/* With FI_RMA: its roles, one target range, the modes it takes, no atomics. */
START_TEST(getinfo_rma_when_asked)
{
	struct fi_info *info = rma_info(FI_MSG | FI_RMA | FI_RMA_EVENT, FT_MR_MODE);

	XT_ASSERT((info->caps & (FI_RMA | RMA_ROLES | FI_RMA_EVENT)) ==
		  (FI_RMA | RMA_ROLES | FI_RMA_EVENT), "caps 0x%llx",
		  (unsigned long long)info->caps);
	XT_ASSERT(!(info->caps & FI_ATOMIC), "FI_ATOMIC offered");
	XT_ASSERT(info->domain_attr->mr_mode == (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY),
		  "mr_mode 0x%x", info->domain_attr->mr_mode);
	XT_ASSERT(info->tx_attr->rma_iov_limit == 1, "rma_iov_limit");
	fi_freeinfo(info);
	info = rma_info(FI_RMA | FI_WRITE, 0);
	XT_ASSERT((info->caps & RMA_ROLES) == FI_WRITE, "asked roles only");
	XT_ASSERT(info->domain_attr->mr_mode == 0, "mr_mode 0x%x",
		  info->domain_attr->mr_mode);
	fi_freeinfo(info);
}
END_TEST

/* With FI_ATOMIC: the roles, one target range and the modes RMA has. */
START_TEST(getinfo_atomic_when_asked)
{
	struct fi_info *info = rma_info(FI_MSG | FI_ATOMIC, FT_MR_MODE);

	XT_ASSERT((info->caps & (FI_ATOMIC | RMA_ROLES)) ==
		  (FI_ATOMIC | RMA_ROLES), "caps 0x%llx",
		  (unsigned long long)info->caps);
	XT_ASSERT(!(info->caps & FI_RMA), "FI_RMA offered");
	XT_ASSERT(info->tx_attr->caps & FI_ATOMIC, "tx caps");
	XT_ASSERT(info->rx_attr->caps & FI_ATOMIC, "rx caps");
	XT_ASSERT(info->domain_attr->mr_mode == (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY),
		  "mr_mode 0x%x", info->domain_attr->mr_mode);
	XT_ASSERT(info->tx_attr->rma_iov_limit == 1, "rma_iov_limit");
	fi_freeinfo(info);
	info = rma_info(FI_ATOMIC | FI_READ, 0);
	XT_ASSERT((info->caps & RMA_ROLES) == FI_READ, "asked roles only");
	fi_freeinfo(info);
}
END_TEST

/* Without FI_RMA, mr_mode hints ask nothing of xshm, as before it. */
START_TEST(getinfo_no_rma_no_mr_mode)
{
	struct fi_info *info = rma_info(FI_MSG | FI_TAGGED, FT_MR_MODE);

	XT_ASSERT(!(info->caps & (FI_RMA | RMA_ROLES)), "caps 0x%llx",
		  (unsigned long long)info->caps);
	XT_ASSERT(info->domain_attr->mr_mode == 0, "mr_mode 0x%x",
		  info->domain_attr->mr_mode);
	XT_ASSERT(info->tx_attr->rma_iov_limit == 0, "rma_iov_limit");
	fi_freeinfo(info);
}
END_TEST

START_TEST(getinfo_secondary_caps_only_when_requested)
{
	struct fi_info *info = default_info();

	XT_ASSERT(!(info->caps & FI_SOURCE), "FI_SOURCE returned unasked");
	XT_ASSERT(!(info->caps & FI_DIRECTED_RECV), "FI_DIRECTED_RECV returned unasked");
	XT_ASSERT(!(info->caps & FI_SHARED_AV), "FI_SHARED_AV returned unasked");
	fi_freeinfo(info);
}
END_TEST

START_TEST(getinfo_secondary_caps_returned_when_requested)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_info *info;

	cfg.caps |= FI_SOURCE | FI_DIRECTED_RECV | FI_LOCAL_COMM | FI_SHARED_AV;
	info = getinfo_ok(&cfg);
	XT_ASSERT((info->caps & cfg.caps) == cfg.caps, "caps 0x%llx",
		  (unsigned long long)info->caps);
	fi_freeinfo(info);
}
END_TEST

/*
 * Domain capabilities belong to the info and the domain, not to the
 * transmit and receive contexts (fabtests' getinfo_caps checks).
 */
START_TEST(getinfo_context_caps_hold_no_domain_caps)
{
	struct xt_cfg cfg = xt_cfg_default();
	const uint64_t domain_caps = FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV;
	struct fi_info *info;

	cfg.caps |= FI_LOCAL_COMM;
	info = getinfo_ok(&cfg);
	XT_ASSERT(info->caps & FI_LOCAL_COMM, "FI_LOCAL_COMM asked, not given");
	XT_ASSERT(!(info->tx_attr->caps & domain_caps), "tx_attr caps 0x%llx",
		  (unsigned long long)info->tx_attr->caps);
	XT_ASSERT(!(info->rx_attr->caps & domain_caps), "rx_attr caps 0x%llx",
		  (unsigned long long)info->rx_attr->caps);
	fi_freeinfo(info);
}
END_TEST

START_TEST(getinfo_requires_no_mode_bits)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_info *hints = xt_hints(&cfg), *info = NULL;

	hints->mode = ~0ULL;
	XT_ASSERT_OK(fi_getinfo(XT_API, NULL, NULL, 0, hints, &info));
	XT_ASSERT(info->mode == 0, "mode 0x%llx", (unsigned long long)info->mode);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	info = default_info();	/* hints->mode == 0 */
	XT_ASSERT(info->mode == 0, "mode 0x%llx", (unsigned long long)info->mode);
	fi_freeinfo(info);
}
END_TEST

START_TEST(getinfo_addr_format_is_str)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_info *hints = xt_hints(&cfg), *info = NULL;

	hints->addr_format = FI_ADDR_STR;
	XT_ASSERT_OK(fi_getinfo(XT_API, NULL, NULL, 0, hints, &info));
	XT_ASSERT(info->addr_format == FI_ADDR_STR, "addr_format %u", info->addr_format);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	info = default_info();
	XT_ASSERT(info->addr_format == FI_ADDR_STR, "addr_format %u", info->addr_format);
	fi_freeinfo(info);
}
END_TEST

START_TEST(getinfo_data_progress_is_manual)
{
	struct fi_info *info = default_info();

	XT_ASSERT(info->domain_attr->data_progress == FI_PROGRESS_MANUAL,
		  "data_progress %d", info->domain_attr->data_progress);
	fi_freeinfo(info);
}
END_TEST

START_TEST(getinfo_inject_size_is_4096)
{
	struct fi_info *info = default_info();

	XT_ASSERT(info->tx_attr->inject_size == 4096, "inject_size %zu",
		  info->tx_attr->inject_size);
	fi_freeinfo(info);
}
END_TEST

START_TEST(getinfo_iov_limits_are_at_least_4)
{
	struct fi_info *info = default_info();

	XT_ASSERT(info->tx_attr->iov_limit >= 4, "tx iov_limit %zu", info->tx_attr->iov_limit);
	XT_ASSERT(info->rx_attr->iov_limit >= 4, "rx iov_limit %zu", info->rx_attr->iov_limit);
	fi_freeinfo(info);
}
END_TEST

START_TEST(getinfo_max_msg_size_is_1GiB)
{
	struct fi_info *info = default_info();

	XT_ASSERT(info->ep_attr->max_msg_size == (size_t)1 << 30, "max_msg_size %zu",
		  info->ep_attr->max_msg_size);
	fi_freeinfo(info);
}
END_TEST

/*
 * The hint's AV type comes back as asked, FI_AV_UNSPEC included, as shm
 * reports it: fabtests send to index 0 of an FI_AV_TABLE after a second
 * client's insert (fi_rdm_multi_client), which only an unspecified type
 * spares them.  Every type opens the same table.
 */
START_TEST(getinfo_av_type_echoes_the_hint)
{
	static const enum fi_av_type asked[] = {
		FI_AV_UNSPEC, FI_AV_TABLE, FI_AV_MAP,
	};
	struct xt_cfg cfg = xt_cfg_default();

	for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
		struct fi_info *hints = xt_hints(&cfg), *info = NULL;

		hints->domain_attr->av_type = asked[i];
		XT_ASSERT_OK(fi_getinfo(XT_API, NULL, NULL, 0, hints, &info));
		XT_ASSERT(info->domain_attr->av_type == asked[i],
			  "asked %d, got av_type %d", asked[i], info->domain_attr->av_type);
		fi_freeinfo(info);
		fi_freeinfo(hints);
	}
}
END_TEST

/* API versions 1.5 .. 1.17: one loop iteration each. */
START_TEST(getinfo_works_for_api_version)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_info *info;

	cfg.api = FI_VERSION(1, _i);
	info = getinfo_ok(&cfg);
	XT_ASSERT(strcmp(info->fabric_attr->prov_name, xt_provider()) == 0,
		  "API 1.%d: prov_name %s", _i, info->fabric_attr->prov_name);
	fi_freeinfo(info);
}
END_TEST

START_TEST(getinfo_mr_mode_is_zero_for_api_1_5_and_later)
{
	static const int minors[] = { 5, 9, 12, 17 };
	struct xt_cfg cfg = xt_cfg_default();

	for (size_t i = 0; i < sizeof(minors) / sizeof(minors[0]); i++) {
		struct fi_info *info;

		cfg.api = FI_VERSION(1, minors[i]);
		info = getinfo_ok(&cfg);
		XT_ASSERT(info->domain_attr->mr_mode == 0, "API 1.%d: mr_mode 0x%x",
			  minors[i], info->domain_attr->mr_mode);
		fi_freeinfo(info);
	}
}
END_TEST

static const enum fi_threading threading_models[] = {
	FI_THREAD_DOMAIN, FI_THREAD_SAFE, FI_THREAD_COMPLETION, FI_THREAD_ENDPOINT,
};

/* Returning FI_THREAD_SAFE also satisfies every requested model. */
START_TEST(getinfo_honours_threading_hint)
{
	enum fi_threading asked = threading_models[_i];
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_info *hints = xt_hints(&cfg), *info = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *domain;

	hints->domain_attr->threading = asked;
	XT_ASSERT_OK(fi_getinfo(XT_API, NULL, NULL, 0, hints, &info));
	XT_ASSERT(info->domain_attr->threading == asked ||
		  info->domain_attr->threading == FI_THREAD_SAFE,
		  "asked threading %d, got %d", asked, info->domain_attr->threading);
	XT_ASSERT_OK(fi_fabric(info->fabric_attr, &fabric, NULL));
	XT_ASSERT_OK(fi_domain(fabric, info, &domain, NULL));
	XT_ASSERT_OK(fi_close(&domain->fid));
	XT_ASSERT_OK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
}
END_TEST

/* ---- hints the provider must refuse with -FI_ENODATA ---- */

static void want_auto_progress(struct fi_info *h) { h->domain_attr->data_progress = FI_PROGRESS_AUTO; }
static void want_msg_ep(struct fi_info *h) { h->ep_attr->type = FI_EP_MSG; }
static void want_dgram_ep(struct fi_info *h) { h->ep_attr->type = FI_EP_DGRAM; }
static void want_remote_comm(struct fi_info *h) { h->caps |= FI_REMOTE_COMM; }
static void want_sockaddr_in(struct fi_info *h) { h->addr_format = FI_SOCKADDR_IN; }
static void want_other_fabric(struct fi_info *h) { h->fabric_attr->name = strdup("other"); }
static void want_other_domain(struct fi_info *h) { h->domain_attr->name = strdup("other"); }

static const struct {
	const char *what;
	void (*apply)(struct fi_info *h);
} refused_hints[] = {
	{ "data_progress FI_PROGRESS_AUTO", want_auto_progress },
	{ "ep_type FI_EP_MSG", want_msg_ep },
	{ "ep_type FI_EP_DGRAM", want_dgram_ep },
	{ "caps FI_REMOTE_COMM", want_remote_comm },
	{ "addr_format FI_SOCKADDR_IN", want_sockaddr_in },
	{ "fabric name \"other\"", want_other_fabric },
	{ "domain name \"other\"", want_other_domain },
};

START_TEST(getinfo_refuses_unsupported_hint_with_enodata)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_info *hints = xt_hints(&cfg), *info = NULL;
	int rc;

	refused_hints[_i].apply(hints);
	rc = fi_getinfo(XT_API, NULL, NULL, 0, hints, &info);
	XT_ASSERT(rc == -FI_ENODATA, "hint %s: fi_getinfo returned %d (%s)",
		  refused_hints[_i].what, rc, fi_strerror(-rc));
	fi_freeinfo(info);
	fi_freeinfo(hints);
}
END_TEST

START_TEST(getinfo_refuses_other_host_with_enodata)
{
	static const char *hosts[] = { "192.0.2.1", "no-such-host.invalid" };
	static const uint64_t flags[] = { 0, FI_SOURCE };
	struct xt_cfg cfg = xt_cfg_default();

	for (size_t h = 0; h < 2; h++) {
		for (size_t f = 0; f < 2; f++) {
			struct fi_info *info = NULL;
			int rc;

			cfg.node = hosts[h];
			cfg.service = "4242";
			cfg.gi_flags = flags[f];
			rc = xt_getinfo(&cfg, &info);
			XT_ASSERT(rc == -FI_ENODATA, "node %s flags 0x%llx: rc %d (%s)",
				  hosts[h], (unsigned long long)flags[f], rc, fi_strerror(-rc));
			fi_freeinfo(info);
		}
	}
}
END_TEST

/* ---- services: well-known addresses ---- */

static char *service_name(int delta)
{
	static char buf[4][16];
	static int next;
	char *s = buf[next++ % 4];

	snprintf(s, 16, "%d", 20000 + (int)(getpid() % 20000) + delta);
	return s;
}

/* Returns a copy of src_addr (FI_SOURCE) or dest_addr for node + service. */
static char *service_addr(const char *node, const char *service, uint64_t flags)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_info *info;
	const void *addr;
	size_t len;
	char *copy;

	cfg.node = node;
	cfg.service = service;
	cfg.gi_flags = flags;
	info = getinfo_ok(&cfg);
	XT_ASSERT(info->addr_format == FI_ADDR_STR, "addr_format %u", info->addr_format);
	addr = flags & FI_SOURCE ? info->src_addr : info->dest_addr;
	len = flags & FI_SOURCE ? info->src_addrlen : info->dest_addrlen;
	XT_ASSERT(addr != NULL && len > 0, "node %s service %s flags 0x%llx: no %s",
		  node ? node : "NULL", service, (unsigned long long)flags,
		  flags & FI_SOURCE ? "src_addr" : "dest_addr");
	XT_ASSERT(xt_is_xshm_addr(addr, len), "not an xshm address: %.*s (len %zu)",
		  (int)len, (const char *)addr, len);
	copy = strdup(addr);
	fi_freeinfo(info);
	return copy;
}

START_TEST(getinfo_source_service_gives_well_known_src_addr)
{
	const char *svc = service_name(0);
	char *a = service_addr(NULL, svc, FI_SOURCE);
	char *b = service_addr("localhost", svc, FI_SOURCE);
	char *again = service_addr(NULL, svc, FI_SOURCE);

	XT_ASSERT(strcmp(a, b) == 0, "NULL node %s, localhost %s", a, b);
	XT_ASSERT(strcmp(a, again) == 0, "first %s, then %s", a, again);
	free(a);
	free(b);
	free(again);
}
END_TEST

START_TEST(getinfo_different_services_give_different_addrs)
{
	char *a = service_addr(NULL, service_name(0), FI_SOURCE);
	char *b = service_addr(NULL, service_name(1), FI_SOURCE);

	XT_ASSERT(strcmp(a, b) != 0, "both %s", a);
	free(a);
	free(b);
}
END_TEST

START_TEST(getinfo_localhost_service_gives_dest_addr_of_that_service)
{
	const char *svc = service_name(0);
	char *src = service_addr(NULL, svc, FI_SOURCE);
	char *dest = service_addr("localhost", svc, 0);

	XT_ASSERT(strcmp(src, dest) == 0, "src %s dest %s", src, dest);
	free(src);
	free(dest);
}
END_TEST

#define SERVICE_MSG "hello by service"

static void client_by_service(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_comp c;
	struct xt_ep x;
	fi_addr_t server;

	cfg.node = "localhost";
	cfg.service = arg;
	xt_open(&x, &cfg);
	XT_ASSERT(x.info->dest_addr != NULL, "no dest_addr");
	xt_wait(sock);	/* the server is enabled */
	server = xt_av_insert(&x, x.info->dest_addr);
	XT_POST(&x, fi_tsend(x.ep, SERVICE_MSG, sizeof(SERVICE_MSG), NULL, server, 7, NULL));
	xt_wait_tx(&x, &c);
	xt_close(&x);
}

START_TEST(getinfo_client_reaches_server_opened_with_same_service)
{
	struct xt_cfg cfg = xt_cfg_default();
	char buf[64] = "";
	struct xt_child client;
	struct xt_comp c;
	struct xt_ep x;

	cfg.service = service_name(2);
	cfg.gi_flags = FI_SOURCE;
	xt_spawn(&client, client_by_service, (void *)cfg.service);
	xt_open(&x, &cfg);
	XT_ASSERT(x.info->src_addr && strcmp(x.name, x.info->src_addr) == 0,
		  "fi_getname %s differs from src_addr %s", x.name,
		  x.info->src_addr ? (char *)x.info->src_addr : "NULL");
	XT_POST(&x, fi_trecv(x.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 7, 0, NULL));
	xt_signal(client.sock, 1);
	xt_wait_rx(&x, &c);
	XT_ASSERT(strcmp(buf, SERVICE_MSG) == 0, "received '%s'", buf);
	xt_join(&client);
	xt_close(&x);
}
END_TEST

/* fi_getinfo's info for node, service and flags, asserting success. */
static struct fi_info *info_for(const char *node, const char *service,
				uint64_t flags, const struct fi_info *hints)
{
	struct fi_info *info = NULL;

	XT_ASSERT_OK(fi_getinfo(XT_API, node, service, flags, hints, &info));
	XT_ASSERT(info != NULL, "no info returned");
	return info;
}

static void assert_src_addr(const struct fi_info *info, const char *what)
{
	XT_ASSERT(xt_is_xshm_addr(info->src_addr, info->src_addrlen),
		  "%s: src_addr %p of length %zu is not an xshm address", what,
		  info->src_addr, info->src_addrlen);
}

/* fabtests' fi_getinfo_test checks that every info names a source. */
START_TEST(getinfo_every_info_carries_a_source_address)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_info *hints = xt_hints(&cfg), *info;

	info = info_for(NULL, NULL, 0, hints);
	assert_src_addr(info, "no node, service or flags");
	fi_freeinfo(info);
	info = info_for("localhost", service_name(0), 0, hints);
	assert_src_addr(info, "a node and a service");
	XT_ASSERT(xt_is_xshm_addr(info->dest_addr, info->dest_addrlen),
		  "a node and a service give no destination");
	fi_freeinfo(info);
	fi_freeinfo(hints);
}
END_TEST

/*
 * A source named by a node alone is an address of this process's own, a
 * fresh one each time, as an ephemeral port would be: fabtests' clients ask
 * for it and pass it back in their hints.
 */
START_TEST(getinfo_source_node_alone_gives_a_fresh_address)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_info *hints = xt_hints(&cfg);
	struct fi_info *a = info_for("127.0.0.1", NULL, FI_SOURCE, hints);
	struct fi_info *b = info_for("127.0.0.1", NULL, FI_SOURCE, hints);

	assert_src_addr(a, "first");
	assert_src_addr(b, "second");
	XT_ASSERT(strcmp(a->src_addr, b->src_addr) != 0, "both %s",
		  (char *)a->src_addr);
	XT_ASSERT(a->dest_addr == NULL, "a source request gave a destination");
	fi_freeinfo(a);
	fi_freeinfo(b);
	fi_freeinfo(hints);
}
END_TEST

/* fabtests' client: its source into the hints, then the server's service. */
START_TEST(getinfo_source_in_the_hints_is_kept_beside_a_destination)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_info *hints = xt_hints(&cfg);
	struct fi_info *src = info_for("127.0.0.1", NULL, FI_SOURCE, hints);
	struct fi_info *info;

	hints->src_addr = strdup(src->src_addr);
	hints->src_addrlen = src->src_addrlen;
	info = info_for("127.0.0.1", service_name(0), 0, hints);
	XT_ASSERT(info->src_addr && strcmp(info->src_addr, src->src_addr) == 0,
		  "src_addr %s, hinted %s",
		  info->src_addr ? (char *)info->src_addr : "NULL",
		  (char *)src->src_addr);
	XT_ASSERT(xt_is_xshm_addr(info->dest_addr, info->dest_addrlen),
		  "no destination for the service");
	fi_freeinfo(info);
	fi_freeinfo(src);
	fi_freeinfo(hints);
}
END_TEST

/*
 * fabtests copy a NULL address of length 0 with malloc(0): a hint whose
 * length is 0 names no address, whatever its pointer.
 */
START_TEST(getinfo_hint_address_of_length_zero_counts_as_none)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_info *hints = xt_hints(&cfg), *info;

	hints->src_addr = malloc(1);
	hints->dest_addr = malloc(1);
	info = info_for("127.0.0.1", service_name(0), 0, hints);
	assert_src_addr(info, "a source hint of length 0");
	XT_ASSERT(xt_is_xshm_addr(info->dest_addr, info->dest_addrlen),
		  "no destination for the service");
	fi_freeinfo(info);
	info = info_for(NULL, NULL, 0, hints);
	assert_src_addr(info, "both hints of length 0");
	XT_ASSERT(info->dest_addr == NULL && info->dest_addrlen == 0,
		  "a destination hint of length 0 gave a destination");
	fi_freeinfo(info);
	fi_freeinfo(hints);
}
END_TEST

static Suite *getinfo_suite(void)
{
	Suite *s = suite_create("getinfo");
	TCase *attrs = tcase_create("attributes");
	TCase *versions = tcase_create("versions");
	TCase *refused = tcase_create("refused");
	TCase *service = tcase_create("service");
	int nrefused = sizeof(refused_hints) / sizeof(refused_hints[0]);
	int nthreading = sizeof(threading_models) / sizeof(threading_models[0]);

	tcase_set_timeout(attrs, 20);
	tcase_add_test(attrs, getinfo_returns_rdm_info_of_the_provider);
	tcase_add_test(attrs, getinfo_caps_include_msg_tagged_send_recv);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(attrs, getinfo_caps_exclude_rma_atomic_remote_comm);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(attrs, getinfo_secondary_caps_only_when_requested);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(attrs, getinfo_secondary_caps_returned_when_requested);
	if (xt_wanted(XT_XSHM)) {
		tcase_add_test(attrs, getinfo_rma_when_asked);
		tcase_add_test(attrs, getinfo_atomic_when_asked);
		tcase_add_test(attrs, getinfo_no_rma_no_mr_mode);
	}
	tcase_add_test(attrs, getinfo_context_caps_hold_no_domain_caps);
	tcase_add_test(attrs, getinfo_requires_no_mode_bits);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(attrs, getinfo_addr_format_is_str);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(attrs, getinfo_data_progress_is_manual);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(attrs, getinfo_inject_size_is_4096);
	tcase_add_test(attrs, getinfo_iov_limits_are_at_least_4);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(attrs, getinfo_max_msg_size_is_1GiB);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(attrs, getinfo_av_type_echoes_the_hint);
	if (xt_wanted(XT_GENERIC))
		tcase_add_loop_test(attrs, getinfo_honours_threading_hint, 0, nthreading);
	suite_add_tcase(s, attrs);

	tcase_set_timeout(versions, 20);
	if (xt_wanted(XT_EXTRA))
		tcase_add_loop_test(versions, getinfo_works_for_api_version, 5, 18);
	tcase_add_test(versions, getinfo_mr_mode_is_zero_for_api_1_5_and_later);
	suite_add_tcase(s, versions);

	tcase_set_timeout(refused, 20);
	if (xt_wanted(XT_XSHM))
		tcase_add_loop_test(refused, getinfo_refuses_unsupported_hint_with_enodata, 0, nrefused);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(refused, getinfo_refuses_other_host_with_enodata);
	suite_add_tcase(s, refused);

	tcase_set_timeout(service, 30);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(service, getinfo_source_service_gives_well_known_src_addr);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(service, getinfo_different_services_give_different_addrs);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(service, getinfo_localhost_service_gives_dest_addr_of_that_service);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(service, getinfo_client_reaches_server_opened_with_same_service);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(service, getinfo_every_info_carries_a_source_address);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(service, getinfo_source_node_alone_gives_a_fresh_address);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(service, getinfo_source_in_the_hints_is_kept_beside_a_destination);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(service, getinfo_hint_address_of_length_zero_counts_as_none);
	suite_add_tcase(s, service);
	return s;
}

int main(void)
{
	return xt_run_suite(getinfo_suite());
}
