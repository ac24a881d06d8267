/*
 * An application built against a newer libfabric's own headers (1.22,
 * 2.6), run with that libfabric: it must find xshm at its own API version,
 * also with the hints that libfabric's own owners (efa, lnx) give shm,
 * and reach the AV calls that 1.17's headers lack natively, with the flag
 * values of its headers.  test/libfabric_versions.sh builds and runs it.
 *
 *   libfabric_versions_app    prints "ok N what" or "FAIL N what" per check,
 *                             exits 0 when all passed
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

static int failures;
static int checks;

static void check(int ok, const char *what, long value)
{
	checks++;
	printf("%s %d %s (%ld)\n", ok ? "ok" : "FAIL", checks, what, value);
	failures += !ok;
}

static struct fi_info *xshm_hints(void)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->fabric_attr->prov_name = strdup("xshm");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED;
	return hints;
}

/*
 * An owner's hints, as libfabric 2.6 asks shm: efa's name FI_PEER and
 * FI_AV_USER_ID among the domain's capabilities, lnx's among the primary
 * ones.  Both must be granted.
 */
static void owner_hints(uint32_t version, struct fi_info *hints, bool in_domain)
{
	uint64_t peer_caps = FI_PEER | FI_AV_USER_ID;
	struct fi_info *info = NULL;
	int ret;

	if (in_domain)
		hints->domain_attr->caps = FI_LOCAL_COMM | peer_caps;
	else
		hints->caps |= peer_caps;
	ret = fi_getinfo(version, NULL, NULL, 0, hints, &info);
	check(ret == 0 && (in_domain ?
			   (info->domain_attr->caps & peer_caps) == peer_caps :
			   (info->caps & peer_caps) == peer_caps),
	      in_domain ? "an owner's hints as efa's: FI_PEER and FI_AV_USER_ID "
			  "in the domain's capabilities" :
			  "an owner's hints as lnx's: FI_PEER and FI_AV_USER_ID "
			  "among the capabilities", ret);
	fi_freeinfo(info);
	hints->domain_attr->caps = 0;
	hints->caps &= ~peer_caps;
}

/* Keys and user ids through the calls of the application's headers. */
static void av_calls(struct fi_info *info)
{
	static const char key[] = "job-42";
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .flags = FI_AV_USER_ID };
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	fi_addr_t handle = FI_ADDR_NOTAVAIL, addr;
	char back[sizeof(key)];
	size_t len = sizeof(back);
	int ret;

	if (fi_fabric(info->fabric_attr, &fabric, NULL) ||
	    fi_domain(fabric, info, &domain, NULL) ||
	    fi_av_open(domain, &attr, &av, NULL)) {
		check(0, "fabric, domain and AV open", -1);
		return;
	}
	ret = fi_av_insert_auth_key(av, key, sizeof(key), &handle, 0);
	check(ret == 0, "fi_av_insert_auth_key", ret);
	ret = fi_av_lookup_auth_key(av, handle, back, &len);
	check(ret == 0 && len == sizeof(key) && !memcmp(back, key, len),
	      "fi_av_lookup_auth_key gives the key back", ret);
	addr = handle;
	ret = fi_av_insert(av, info->src_addr, 1, &addr, FI_AUTH_KEY, NULL);
	check(ret == 1, "fi_av_insert with FI_AUTH_KEY", ret);
	len = sizeof(back);
	ret = fi_av_lookup_auth_key(av, addr, back, &len);
	check(ret == 0 && len == sizeof(key), "the inserted address holds the key",
	      ret);
	ret = fi_av_set_user_id(av, addr, 77, 0);
	check(ret == 0, "fi_av_set_user_id", ret);
	fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
}

int main(void)
{
	uint32_t version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
	struct fi_info *hints = xshm_hints(), *info = NULL;
	int ret;

	if (!hints)
		return 2;
	ret = fi_getinfo(version, NULL, NULL, 0, hints, &info);
	check(ret == 0, "fi_getinfo at the headers' version finds xshm", ret);
	if (ret)
		return 1;
	check(info->fabric_attr->api_version == version,
	      "api_version is the version asked for",
	      (long) info->fabric_attr->api_version);
	av_calls(info);
	fi_freeinfo(info);
	owner_hints(version, hints, true);
	owner_hints(version, hints, false);

	hints->domain_attr->auth_key_size = FI_AV_AUTH_KEY;
	info = NULL;
	ret = fi_getinfo(version, NULL, NULL, 0, hints, &info);
	check(ret == -FI_ENODATA, "FI_AV_AUTH_KEY declined", ret);
	fi_freeinfo(info);
	hints->domain_attr->auth_key_size = 0;
	fi_freeinfo(hints);
	return failures ? 1 : 0;
}
