/*
 * Time to insert 4096 addresses into an AV: one fi_av_insert of all of
 * them, and 4096 calls of one.  Usage: av_insert [provider] [rounds]
 * (default xshm, 9); prints the median of the rounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#define COUNT	4096
#define ADDRLEN	44

struct bench {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	char name[256];
};

#define CHECK(call) \
	do { \
		int _r = (call); \
		if (_r) { \
			fprintf(stderr, "%s: %s\n", #call, fi_strerror(-_r)); \
			exit(1); \
		} \
	} while (0)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void open_bench(struct bench *b, const char *prov)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	size_t len = sizeof(b->name);

	hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->addr_format = FI_ADDR_STR;
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &b->info));
	fi_freeinfo(hints);
	CHECK(fi_fabric(b->info->fabric_attr, &b->fabric, NULL));
	CHECK(fi_domain(b->fabric, b->info, &b->domain, NULL));
	CHECK(fi_av_open(b->domain, &av_attr, &b->av, NULL));
	CHECK(fi_cq_open(b->domain, &cq_attr, &b->cq, NULL));
	CHECK(fi_endpoint(b->domain, b->info, &b->ep, NULL));
	CHECK(fi_ep_bind(b->ep, &b->av->fid, 0));
	CHECK(fi_ep_bind(b->ep, &b->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(b->ep));
	CHECK(fi_getname(&b->ep->fid, b->name, &len));
}

static void close_bench(struct bench *b)
{
	fi_close(&b->ep->fid);
	fi_close(&b->av->fid);
	fi_close(&b->cq->fid);
	fi_close(&b->domain->fid);
	fi_close(&b->fabric->fid);
	fi_freeinfo(b->info);
}

/* COUNT addresses of this node naming endpoints that do not exist. */
static char *fake_addrs(const char *name)
{
	char *buf = calloc(COUNT, ADDRLEN);

	for (int i = 0; i < COUNT; i++)
		snprintf(buf + i * ADDRLEN, ADDRLEN, "%.27s%016llx", name,
			 0x5500000000ULL + i);
	return buf;
}

static double time_inserts(struct bench *b, const char *addrs, int per_call)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	struct fid_av *av;
	double start, ms;

	CHECK(fi_av_open(b->domain, &attr, &av, NULL));
	start = now_ms();
	for (int i = 0; i < COUNT; i += per_call) {
		if (fi_av_insert(av, addrs + i * ADDRLEN, per_call, NULL, 0,
				 NULL) != per_call) {
			fprintf(stderr, "insert failed\n");
			exit(1);
		}
	}
	ms = now_ms() - start;
	fi_close(&av->fid);
	return ms;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	const char *prov = argc > 1 ? argv[1] : "xshm";
	int rounds = argc > 2 ? atoi(argv[2]) : 9;
	double batch[64], single[64];
	struct bench b;
	char *addrs;

	if (rounds < 1 || rounds > 64)
		rounds = 9;
	open_bench(&b, prov);
	addrs = fake_addrs(b.name);
	for (int r = 0; r < rounds; r++) {
		batch[r] = time_inserts(&b, addrs, COUNT);
		single[r] = time_inserts(&b, addrs, 1);
	}
	printf("%s: %d addresses, median of %d rounds: one call %.3f ms, "
	       "%d calls %.3f ms\n", prov, COUNT, rounds, median(batch, rounds),
	       COUNT, median(single, rounds));
	free(addrs);
	close_bench(&b);
	return 0;
}
