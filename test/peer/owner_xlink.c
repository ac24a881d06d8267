/*
 * The owner provider xlink in the reference owner's role (owner.h): each
 * owner_* call is what an application does through xlink's public API, and
 * xlink, not this file, opens xshm, imports its CQ, counters and
 * fid_peer_srx into it, inserts the senders into xshm's AV (FI_AV_USER_ID),
 * matches, and drives xshm's progress.
 *
 *   owner_open            fi_getinfo("xlink", cfg->caps), fabric, domain, an
 *                         FI_AV_TABLE AV, one CQ of cfg->cq_format, two
 *                         counters (cfg->cntrs), cfg->nep endpoints bound to
 *                         them all; xlink's peer must be the peer under test
 *                         (FI_XLINK_PEER, default xshm) and xlink must have
 *                         opened it (the endpoint's name has a peer part)
 *   owner_post_on         fi_recvv / fi_trecvv on that endpoint
 *   owner_peek            fi_recvmsg / fi_trecvmsg with FI_PEEK, on each
 *                         endpoint in turn; owner_discard: FI_PEEK | FI_DISCARD
 *   owner_cq_read         fi_cq_readfrom / fi_cq_readerr of xlink's CQ
 *   owner_progress        the same read (into a queue kept here, which the
 *                         peeks' own completions never enter), or with
 *                         progress_by_cntr fi_cntr_read alone: the CQ is read
 *                         only once the counters moved
 *   owner_cntr_value/err  fi_cntr_read / fi_cntr_readerr of xlink's counter
 *   owner_loopback_send   real remote traffic: a process of this file's own
 *                         (the same program run again, owner_program_init)
 *                         with FI_XLINK_PEER=none, whose xlink endpoint sends
 *                         to the owner's endpoint 0 over its network provider
 *                         (tcp;ofi_rxm).  Its completions are told by their
 *                         source (this needs FI_SOURCE): origin
 *                         OWNER_FROM_SELF, src OWNER_ADDR_LOOPBACK.
 *
 * What only the reference owner sees (the peer's calls into the owner) is
 * not visible here: owner_stats stays zero but for progress and for the
 * API violations below; owner_posted_count, owner_unexpected and
 * owner_entries_held fail the test.  Violations seen through the API: a CQ
 * read that wrote past the entries of its format, a peek's completion when
 * none was pending, a peek that never completed.
 */
#include "owner.h"
#include "peer_common.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

const char *const owner_provider = "xlink";

const char *const owner_style_name[OWNER_NSTYLES] = {
	[OWNER_STYLE_SPEC] = "spec",
	[OWNER_STYLE_UPSTREAM] = "upstream",
};

#define XO_BATCH	16
#define XO_POISON	0xa5
#define XO_PEEK_MS	5000
#define XO_SENDER_MS	20000
/* Follows each message of the owner's own sender: found, the message is in. */
#define XO_MARK_TAG	0x5e7e000000000001ULL
#define XO_SENDER_ENV	"XSHM_TEST_XLINK_OWN_SENDER_FD"

enum xo_peek_state { XO_PEEK_IDLE, XO_PEEK_PENDING, XO_PEEK_FOUND, XO_PEEK_NONE };

struct xo {
	struct fi_context peek_ctx;	/* the context of the owner's own peeks */
	enum xo_peek_state peek;
	struct owner_comp peeked;
	uint64_t cntr_seen;		/* progress_by_cntr: counters at the last read */
	/* the owner's own sender */
	pid_t sender;
	int sock;
	fi_addr_t sender_addr;
};

/* What the owner's sender is asked. */
struct xo_cmd {
	uint32_t op;		/* XO_SEND, XO_QUIT */
	uint32_t tagged;
	uint64_t len;
	uint64_t tag;
};
enum { XO_SEND = 1, XO_QUIT };

static struct xo *xo_of(const struct owner *o)
{
	return o->backend;
}

static void __attribute__((noreturn)) unobservable(const char *what)
{
	pt_fail(__FILE__, __LINE__, "%s: the reference owner's internals, not visible through "
		"xlink (add the case with pt_add_reference_owner_test)", what);
}

/* ---- the owner's queue of what it read from xlink's CQ ---- */

static void comp_push(struct owner *o, const struct owner_comp *c)
{
	if (owner_comp_push(o, c))
		pt_fail(__FILE__, __LINE__, "malloc");
}

static void arrived(struct owner *o, const struct fi_cq_tagged_entry *e, fi_addr_t src)
{
	struct xo *x = xo_of(o);
	struct owner_comp c = { .origin = OWNER_FROM_PEER, .e = *e, .src = src };

	if (e->op_context == &x->peek_ctx) {
		if (x->peek != XO_PEEK_PENDING) {
			o->st.stray_peeks++;
			return;
		}
		x->peek = XO_PEEK_FOUND;
		x->peeked = c;
		return;
	}
	if (x->sender && src == x->sender_addr) {
		c.origin = OWNER_FROM_SELF;
		c.src = OWNER_ADDR_LOOPBACK;
	}
	comp_push(o, &c);
}

/* An error's source is not reported: its origin is taken to be the peer. */
static void arrived_err(struct owner *o, const struct fi_cq_err_entry *err)
{
	struct xo *x = xo_of(o);
	struct owner_comp c = { .origin = OWNER_FROM_PEER, .is_err = true,
				.src = FI_ADDR_NOTAVAIL, .err = *err };

	if (err->op_context == &x->peek_ctx) {
		if (x->peek != XO_PEEK_PENDING) {
			o->st.stray_peeks++;
			return;
		}
		x->peek = err->err == FI_ENOMSG ? XO_PEEK_NONE : XO_PEEK_FOUND;
		x->peeked = c;
		return;
	}
	comp_push(o, &c);
}

static size_t entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	default:
		return sizeof(struct fi_cq_tagged_entry);
	}
}

/* Reads xlink's CQ (which progresses it) until it is empty. */
static void drain(struct owner *o)
{
	size_t size = entry_size(o->cfg.cq_format);
	unsigned char buf[XO_BATCH * sizeof(struct fi_cq_tagged_entry) + 64];

	for (;;) {
		fi_addr_t src[XO_BATCH];
		ssize_t n;

		memset(buf, XO_POISON, sizeof(buf));
		n = fi_cq_readfrom(o->cq, buf, XO_BATCH, src);
		if (n > 0) {
			/* Nothing past the n entries of the CQ's format is written. */
			for (size_t b = (size_t)n * size; b < sizeof(buf); b++) {
				if (buf[b] != XO_POISON) {
					o->st.cq_overruns++;
					break;
				}
			}
			for (ssize_t i = 0; i < n; i++) {
				struct fi_cq_tagged_entry e = { 0 };

				memcpy(&e, buf + (size_t)i * size, size);
				arrived(o, &e, src[i]);
			}
			continue;
		}
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			ssize_t r = fi_cq_readerr(o->cq, &err, 0);

			if (r == 1) {
				arrived_err(o, &err);
				continue;
			}
			n = r;
		}
		if (n != -FI_EAGAIN) {
			o->st.progress_errors++;
			o->st.last_progress_rc = n;
		}
		return;
	}
}

static uint64_t cntrs_total(struct owner *o)
{
	uint64_t v = 0;

	for (int i = 0; i < 2; i++) {
		struct fid_cntr *c = i ? o->rx_cntr.xshm : o->tx_cntr.xshm;

		v += fi_cntr_read(c) + fi_cntr_readerr(c);
	}
	return v;
}

void owner_progress(struct owner *o)
{
	struct xo *x = xo_of(o);

	o->st.progress_calls++;
	if (o->cfg.progress_by_cntr && o->cfg.cntrs) {
		/* Counters alone progress; the CQ is read once they moved. */
		uint64_t v = cntrs_total(o);

		if (v != x->cntr_seen) {
			x->cntr_seen = v;
			drain(o);
		}
		return;
	}
	drain(o);
}

uint64_t owner_cntr_value(struct owner *o, struct owner_cntr *c)
{
	if (c->xshm)
		c->value = fi_cntr_read(c->xshm);
	return c->value;
}

uint64_t owner_cntr_err(struct owner *o, struct owner_cntr *c)
{
	if (c->xshm)
		c->err = fi_cntr_readerr(c->xshm);
	return c->err;
}

/* ---- receives, peeks, discards ---- */

static int retry(struct owner *o, ssize_t (*post)(struct owner *, void *), void *arg)
{
	uint64_t end = owner_now_ms() + PT_TIMEOUT_MS;
	ssize_t ret;

	while ((ret = post(o, arg)) == -FI_EAGAIN && owner_now_ms() < end)
		owner_progress(o);
	return (int)ret;
}

struct post_args {
	int ep;
	bool tagged;
	const struct iovec *iov;
	void **desc;
	size_t count;
	fi_addr_t src;
	uint64_t tag, ignore;
	void *context;
	uint64_t flags;		/* a peek's: fi_recvmsg / fi_trecvmsg */
};

static ssize_t post_recv(struct owner *o, void *arg)
{
	const struct post_args *a = arg;
	struct fid_ep *ep = o->ep[a->ep];

	if (a->flags) {
		struct fi_msg_tagged tm = {
			.msg_iov = a->iov, .desc = a->desc, .iov_count = a->count, .addr = a->src,
			.tag = a->tag, .ignore = a->ignore, .context = a->context,
		};
		struct fi_msg m = {
			.msg_iov = a->iov, .desc = a->desc, .iov_count = a->count, .addr = a->src,
			.context = a->context,
		};

		return a->tagged ? fi_trecvmsg(ep, &tm, a->flags) : fi_recvmsg(ep, &m, a->flags);
	}
	if (a->tagged)
		return fi_trecvv(ep, a->iov, a->desc, a->count, a->src, a->tag, a->ignore,
				 a->context);
	return fi_recvv(ep, a->iov, a->desc, a->count, a->src, a->context);
}

int owner_post_on(struct owner *o, int ep, bool tagged, const struct iovec *iov,
		  size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	void *desc[OWNER_IOV_MAX] = { NULL };
	struct post_args a = {
		.ep = ep, .tagged = tagged, .iov = iov, .desc = desc, .count = count,
		.src = src, .tag = tag, .ignore = ignore, .context = context,
	};

	if (ep < 0 || ep >= o->cfg.nep || count > OWNER_IOV_MAX || (count && !iov))
		return -FI_EINVAL;
	return retry(o, post_recv, &a);
}

int owner_post(struct owner *o, bool tagged, const struct iovec *iov, size_t count,
	       fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	return owner_post_on(o, 0, tagged, iov, count, src, tag, ignore, context);
}

int owner_post_recv(struct owner *o, void *buf, size_t len, fi_addr_t src, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return owner_post(o, false, &iov, 1, src, 0, 0, context);
}

int owner_post_trecv(struct owner *o, void *buf, size_t len, fi_addr_t src,
		     uint64_t tag, uint64_t ignore, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return owner_post(o, true, &iov, 1, src, tag, ignore, context);
}

/*
 * A peek on one endpoint (flags: FI_PEEK and maybe FI_DISCARD); its
 * completion is taken out of the CQ here.  0 and *out when a message
 * matched, -FI_ENOMSG when none did, or an error.
 */
static int peek_on(struct owner *o, int ep, bool tagged, fi_addr_t src, uint64_t tag,
		   uint64_t ignore, uint64_t flags, struct owner_comp *out)
{
	struct xo *x = xo_of(o);
	struct post_args a = {
		.ep = ep, .tagged = tagged, .src = src, .tag = tag, .ignore = ignore,
		.context = &x->peek_ctx, .flags = FI_PEEK | flags,
	};
	uint64_t end;
	int ret;

	x->peek = XO_PEEK_PENDING;
	ret = retry(o, post_recv, &a);
	if (ret) {
		x->peek = XO_PEEK_IDLE;
		return ret;
	}
	end = owner_now_ms() + XO_PEEK_MS;
	while (x->peek == XO_PEEK_PENDING && owner_now_ms() < end)
		drain(o);
	if (x->peek == XO_PEEK_PENDING) {
		o->st.lost_peeks++;
		x->peek = XO_PEEK_IDLE;
		return -FI_ETIMEDOUT;
	}
	ret = x->peek == XO_PEEK_FOUND ? 0 : -FI_ENOMSG;
	if (!ret && x->peeked.is_err)
		ret = x->peeked.err.err ? -x->peeked.err.err : -FI_EOTHER;
	if (!ret && out)
		*out = x->peeked;
	x->peek = XO_PEEK_IDLE;
	return ret;
}

/* The first endpoint on which a peek matches. */
static int peek_any(struct owner *o, bool tagged, fi_addr_t src, uint64_t tag,
		    uint64_t ignore, uint64_t flags, struct owner_comp *out)
{
	for (int ep = 0; ep < o->cfg.nep; ep++) {
		int ret = peek_on(o, ep, tagged, src, tag, ignore, flags, out);

		if (ret != -FI_ENOMSG)
			return ret;
	}
	return -FI_ENOMSG;
}

int owner_peek(struct owner *o, bool tagged, fi_addr_t src, uint64_t tag, uint64_t ignore,
	       struct owner_comp *out)
{
	return peek_any(o, tagged, src, tag, ignore, 0, out);
}

int owner_discard(struct owner *o, bool tagged, fi_addr_t src, uint64_t tag, uint64_t ignore)
{
	return peek_any(o, tagged, src, tag, ignore, FI_DISCARD, NULL);
}

size_t owner_unexpected_count(struct owner *o, bool tagged)
{
	size_t n = 0;

	for (int ep = 0; ep < o->cfg.nep; ep++)
		n += peek_on(o, ep, tagged, FI_ADDR_UNSPEC, 0, ~0ULL, 0, NULL) == 0;
	return n;
}

size_t owner_posted_count(const struct owner *o, bool tagged)
{
	unobservable("owner_posted_count");
}

const struct fi_peer_rx_entry *owner_unexpected(const struct owner *o, bool tagged,
						size_t i)
{
	unobservable("owner_unexpected");
}

uint64_t owner_entries_held(const struct owner *o)
{
	unobservable("owner_entries_held");
}

const char *owner_violations(const struct owner *o, char *buf, size_t len)
{
	const struct owner_stats *s = &o->st;

	snprintf(buf, len, "%s%s%s%s",
		 s->cq_overruns ? "a CQ read wrote past the entries of its format; " : "",
		 s->stray_peeks ? "a peek's completion when no peek was pending; " : "",
		 s->lost_peeks ? "a peek that never completed; " : "",
		 s->progress_errors ? "fi_cq_readfrom or fi_cq_readerr failed; " : "");
	return buf;
}

/* ---- the owner's own sender: another process, over the network path ---- */

static int write_all(int fd, const void *buf, size_t len)
{
	const char *b = buf;

	while (len) {
		ssize_t n = write(fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads len bytes within ms, progressing o (if any) meanwhile. */
static int read_all(struct owner *o, int fd, void *buf, size_t len, int ms)
{
	uint64_t end = owner_now_ms() + (uint64_t)ms;
	char *b = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, o ? 0 : 10) <= 0) {
			if (owner_now_ms() >= end)
				return -1;
			if (o)
				owner_progress(o);
			continue;
		}
		n = read(fd, b, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

#define SENDER_CHECK(cond, what) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "owner_xlink sender: %s failed\n", what); \
			_exit(1); \
		} \
	} while (0)

static ssize_t sender_wait(struct fid_cq *cq, int n)
{
	uint64_t end = owner_now_ms() + XO_SENDER_MS;

	while (n > 0 && owner_now_ms() < end) {
		struct fi_cq_tagged_entry e;
		ssize_t r = fi_cq_read(cq, &e, 1);

		if (r == 1) {
			n--;
		} else if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(cq, &err, 0);
			return -(ssize_t)err.err;
		} else if (r != -FI_EAGAIN) {
			return r;
		}
	}
	return n ? -FI_ETIMEDOUT : 0;
}

/*
 * The sender's process: an xlink endpoint without a peer provider
 * (FI_XLINK_PEER=none), which reaches the owner over the network provider
 * as another node's would.  Each message is followed by a 0-byte one
 * tagged XO_MARK_TAG: xlink takes one source's network messages in order,
 * so once the owner finds the mark its message is in.
 */
static void sender_main(int sock)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	char name[OWNER_NAME_MAX];
	size_t namelen = sizeof(name);
	uint64_t len;
	fi_addr_t dest = FI_ADDR_NOTAVAIL;
	struct xo_cmd cmd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(300);
	SENDER_CHECK(hints, "fi_allocinfo");
	hints->fabric_attr->prov_name = strdup("xlink");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED;
	hints->mode = 0;
	hints->domain_attr->mr_mode = 0;
	SENDER_CHECK(!fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), "fi_getinfo");
	fi_freeinfo(hints);
	SENDER_CHECK(!fi_fabric(info->fabric_attr, &fabric, NULL), "fi_fabric");
	SENDER_CHECK(!fi_domain(fabric, info, &domain, NULL), "fi_domain");
	SENDER_CHECK(!fi_av_open(domain, &av_attr, &av, NULL), "fi_av_open");
	SENDER_CHECK(!fi_cq_open(domain, &cq_attr, &cq, NULL), "fi_cq_open");
	SENDER_CHECK(!fi_endpoint(domain, info, &ep, NULL), "fi_endpoint");
	SENDER_CHECK(!fi_ep_bind(ep, &av->fid, 0), "fi_ep_bind(av)");
	SENDER_CHECK(!fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
	SENDER_CHECK(!fi_enable(ep), "fi_enable");
	SENDER_CHECK(!fi_getname(&ep->fid, name, &namelen), "fi_getname");
	len = namelen;
	SENDER_CHECK(!write_all(sock, &len, sizeof(len)) && !write_all(sock, name, namelen),
		     "sending its name");
	SENDER_CHECK(!read_all(NULL, sock, &len, sizeof(len), XO_SENDER_MS) &&
		     len <= sizeof(name) && !read_all(NULL, sock, name, len, XO_SENDER_MS),
		     "reading the owner's name");
	SENDER_CHECK(fi_av_insert(av, name, 1, &dest, 0, NULL) == 1, "fi_av_insert");
	while (!read_all(NULL, sock, &cmd, sizeof(cmd), 3600 * 1000) && cmd.op == XO_SEND) {
		char *buf = malloc(cmd.len ? cmd.len : 1);
		int64_t rc;

		SENDER_CHECK(buf && !read_all(NULL, sock, buf, cmd.len, XO_SENDER_MS),
			     "reading a message");
		do {
			rc = cmd.tagged ? fi_tsend(ep, buf, cmd.len, NULL, dest, cmd.tag, NULL)
					: fi_send(ep, buf, cmd.len, NULL, dest, NULL);
			if (rc == -FI_EAGAIN)
				fi_cq_read(cq, NULL, 0);
		} while (rc == -FI_EAGAIN);
		while (!rc && (rc = fi_tsend(ep, NULL, 0, NULL, dest, XO_MARK_TAG, NULL)) ==
			      -FI_EAGAIN)
			fi_cq_read(cq, NULL, 0);
		if (!rc)
			rc = sender_wait(cq, 2);
		free(buf);
		SENDER_CHECK(!write_all(sock, &rc, sizeof(rc)), "answering");
	}
	fi_close(&ep->fid);
	fi_close(&cq->fid);
	fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	_exit(0);
}

void owner_program_init(void)
{
	const char *fd = getenv(XO_SENDER_ENV);

	if (fd)
		sender_main(atoi(fd));
}

/* The program again, as the sender: exec'ed, so that it loads xlink afresh. */
static int start_sender(struct owner *o)
{
	extern char **environ;
	struct xo *x = xo_of(o);
	char fdvar[64], **envp;
	char *argv[] = { "xlink-owner-sender", NULL };
	size_t n = 0, k = 0;
	uint64_t len;
	char name[OWNER_NAME_MAX];
	int sv[2], ret;

	while (environ[n])
		n++;
	envp = calloc(n + 3, sizeof(*envp));
	if (!envp || socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		free(envp);
		return -FI_ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "FI_XLINK_PEER=", 14) &&
		    strncmp(environ[i], XO_SENDER_ENV "=", sizeof(XO_SENDER_ENV)))
			envp[k++] = environ[i];
	snprintf(fdvar, sizeof(fdvar), XO_SENDER_ENV "=%d", sv[1]);
	envp[k++] = fdvar;
	envp[k++] = "FI_XLINK_PEER=none";
	envp[k] = NULL;
	x->sender = fork();
	if (x->sender == 0) {
		close(sv[0]);
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	free(envp);
	close(sv[1]);
	if (x->sender < 0) {
		x->sender = 0;
		close(sv[0]);
		return -FI_EOTHER;
	}
	x->sock = sv[0];
	if (read_all(o, x->sock, &len, sizeof(len), XO_SENDER_MS) || len > sizeof(name) ||
	    read_all(o, x->sock, name, len, XO_SENDER_MS))
		return -FI_EIO;
	ret = owner_av_insert(o, name, &x->sender_addr);
	if (ret)
		return ret;
	len = o->namelen[0];
	if (write_all(x->sock, &len, sizeof(len)) ||
	    write_all(x->sock, o->name[0], o->namelen[0]))
		return -FI_EIO;
	return 0;
}

static void stop_sender(struct xo *x)
{
	struct xo_cmd cmd = { .op = XO_QUIT };
	uint64_t end = owner_now_ms() + 5000;
	int status;

	if (!x->sender)
		return;
	write_all(x->sock, &cmd, sizeof(cmd));
	while (waitpid(x->sender, &status, WNOHANG) == 0) {
		if (owner_now_ms() >= end) {
			kill(x->sender, SIGKILL);
			waitpid(x->sender, &status, 0);
			break;
		}
		usleep(1000);
	}
	close(x->sock);
	x->sender = 0;
}

int owner_loopback_send(struct owner *o, bool tagged, const void *buf, size_t len,
			uint64_t tag)
{
	struct xo *x = xo_of(o);
	struct xo_cmd cmd = { .op = XO_SEND, .tagged = tagged, .len = len, .tag = tag };
	uint64_t end;
	int64_t rc;
	int ret;

	/* Its completions are told from the peer's by their source. */
	if (!(o->cfg.caps & FI_SOURCE)) {
		fprintf(stderr, "owner_loopback_send: the xlink owner needs FI_SOURCE\n");
		return -FI_EINVAL;
	}
	if (!x->sender) {
		ret = start_sender(o);
		if (ret) {
			stop_sender(x);
			return ret;
		}
	}
	if (write_all(x->sock, &cmd, sizeof(cmd)) || write_all(x->sock, buf, len) ||
	    read_all(o, x->sock, &rc, sizeof(rc), XO_SENDER_MS))
		return -FI_EIO;
	if (rc)
		return (int)rc;
	/* Its mark, found (and dropped), says the message is in. */
	end = owner_now_ms() + PT_TIMEOUT_MS;
	while ((ret = peek_on(o, 0, true, FI_ADDR_UNSPEC, XO_MARK_TAG, 0, FI_DISCARD, NULL)) ==
	       -FI_ENOMSG && owner_now_ms() < end)
		owner_progress(o);
	return ret;
}

/* ---- open and close ---- */

/* xlink's address names its peer address last ("fi_xlink://node/net/peer"). */
static bool has_peer_part(struct owner *o)
{
	char str[512];
	size_t len = sizeof(str);
	const char *s = fi_av_straddr(o->av, o->name[0], str, &len);
	const char *slash;

	if (!s || strncmp(s, "fi_xlink://", 11))
		return false;
	slash = strchr(s + 11, '/');
	slash = slash ? strchr(slash + 1, '/') : NULL;
	return slash && slash[1];
}

static int open_ep(struct owner *o, int i)
{
	int ret;

	o->failed_call = "fi_endpoint";
	ret = fi_endpoint(o->domain, o->info, &o->ep[i], NULL);
	if (ret)
		return ret;
	o->failed_call = "fi_ep_bind(av)";
	ret = fi_ep_bind(o->ep[i], &o->av->fid, 0);
	if (ret)
		return ret;
	o->failed_call = "fi_ep_bind(cq)";
	ret = fi_ep_bind(o->ep[i], &o->cq->fid, FI_TRANSMIT | FI_RECV);
	if (ret)
		return ret;
	if (o->cfg.cntrs) {
		o->failed_call = "fi_ep_bind(cntr)";
		ret = fi_ep_bind(o->ep[i], &o->tx_cntr.xshm->fid, FI_SEND);
		if (!ret)
			ret = fi_ep_bind(o->ep[i], &o->rx_cntr.xshm->fid, FI_RECV);
		if (ret)
			return ret;
	}
	o->failed_call = "fi_enable";
	ret = fi_enable(o->ep[i]);
	if (ret)
		return ret;
	o->failed_call = "fi_getname";
	o->namelen[i] = OWNER_NAME_MAX;
	return fi_getname(&o->ep[i]->fid, o->name[i], &o->namelen[i]);
}

static int open_all(struct owner *o)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = o->cfg.cq_format, .wait_obj = FI_WAIT_NONE };
	struct fi_cntr_attr cntr_attr = {
		.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE,
	};
	int ret;

	o->failed_call = "fi_allocinfo";
	if (!hints)
		return -FI_ENOMEM;
	hints->fabric_attr->prov_name = strdup(owner_provider);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = o->cfg.caps;
	hints->mode = 0;
	hints->domain_attr->mr_mode = 0;
	o->failed_call = "fi_getinfo";
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &o->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	o->failed_call = "fi_fabric";
	ret = fi_fabric(o->info->fabric_attr, &o->fabric, NULL);
	if (ret)
		return ret;
	o->failed_call = "fi_domain";
	ret = fi_domain(o->fabric, o->info, &o->domain, NULL);
	if (ret)
		return ret;
	o->failed_call = "fi_av_open";
	ret = fi_av_open(o->domain, &av_attr, &o->av, NULL);
	if (ret)
		return ret;
	o->failed_call = "fi_cq_open";
	ret = fi_cq_open(o->domain, &cq_attr, &o->cq, NULL);
	if (ret)
		return ret;
	if (o->cfg.cntrs) {
		o->failed_call = "fi_cntr_open";
		ret = fi_cntr_open(o->domain, &cntr_attr, &o->tx_cntr.xshm, NULL);
		if (!ret)
			ret = fi_cntr_open(o->domain, &cntr_attr, &o->rx_cntr.xshm, NULL);
		if (ret)
			return ret;
	}
	for (int i = 0; i < o->cfg.nep; i++) {
		ret = open_ep(o, i);
		if (ret)
			return ret;
	}
	o->failed_call = "xlink opened no peer provider (its endpoint's name has no peer "
			 "address)";
	if (!has_peer_part(o))
		return -FI_ENODATA;
	o->failed_call = NULL;
	return 0;
}

/* What owner_cfg asks of the reference owner alone. */
static const char *reference_only(const struct owner_cfg *cfg)
{
	if (cfg->srx_peer_ops_null)
		return "an fid_peer_srx with a NULL peer_ops (the reference owner's choice)";
	if (cfg->peer_av)
		return "fi_av_open(FI_PEER) (xlink inserts into the peer's own AV)";
	if (cfg->peer_domain)
		return "fi_domain2(FI_PEER) (not an import xlink makes)";
	if (cfg->peer_eq)
		return "fi_eq_open(FI_PEER) (not an import xlink makes)";
	return NULL;
}

int owner_open(struct owner *o, const struct owner_cfg *cfg)
{
	const char *peer = getenv("FI_XLINK_PEER");
	int ret;

	memset(o, 0, sizeof(*o));
	if (cfg)
		o->cfg = *cfg;
	if (!o->cfg.prov_name)
		o->cfg.prov_name = "xshm";
	if (!o->cfg.caps)
		o->cfg.caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV;
	if (o->cfg.cq_format == FI_CQ_FORMAT_UNSPEC)
		o->cfg.cq_format = FI_CQ_FORMAT_TAGGED;
	if (o->cfg.nep <= 0)
		o->cfg.nep = 1;
	/* xlink takes libfabric's style, and its get_tag has no size. */
	o->cfg.style = OWNER_STYLE_UPSTREAM;
	o->cfg.get_tag_no_size = true;
	if (o->cfg.nep > OWNER_MAX_EPS)
		return -FI_EINVAL;
	o->failed_call = reference_only(&o->cfg);
	if (o->failed_call)
		return -FI_ENOSYS;
	o->failed_call = "FI_XLINK_PEER names another peer than the one under test";
	if (strcmp(peer && *peer ? peer : "xshm", o->cfg.prov_name))
		return -FI_EINVAL;
	o->backend = calloc(1, sizeof(struct xo));
	o->failed_call = "calloc";
	if (!o->backend)
		return -FI_ENOMEM;
	ret = open_all(o);
	if (ret) {
		const char *failed = o->failed_call;

		owner_close(o);
		o->failed_call = failed;
	}
	return ret;
}

static void close_fid(struct fid *fid, int *ret)
{
	int r = fid ? fi_close(fid) : 0;

	if (r && !*ret)
		*ret = r;
}

int owner_close(struct owner *o)
{
	struct xo *x = xo_of(o);
	int ret = 0;

	if (!x)
		return 0;
	stop_sender(x);
	for (int i = 0; i < OWNER_MAX_EPS; i++)
		close_fid(o->ep[i] ? &o->ep[i]->fid : NULL, &ret);
	close_fid(o->tx_cntr.xshm ? &o->tx_cntr.xshm->fid : NULL, &ret);
	close_fid(o->rx_cntr.xshm ? &o->rx_cntr.xshm->fid : NULL, &ret);
	close_fid(o->cq ? &o->cq->fid : NULL, &ret);
	close_fid(o->av ? &o->av->fid : NULL, &ret);
	close_fid(o->domain ? &o->domain->fid : NULL, &ret);
	close_fid(o->fabric ? &o->fabric->fid : NULL, &ret);
	fi_freeinfo(o->info);
	free(o->comps);
	free(x);
	o->backend = NULL;
	o->comps = NULL;
	o->comp_count = o->comp_cap = o->comp_head = 0;
	o->info = NULL;
	o->fabric = NULL;
	o->domain = NULL;
	o->av = NULL;
	o->cq = NULL;
	o->tx_cntr.xshm = o->rx_cntr.xshm = NULL;
	memset(o->ep, 0, sizeof(o->ep));
	return ret;
}

int owner_av_insert(struct owner *o, const void *name, fi_addr_t *addr)
{
	int ret;

	*addr = FI_ADDR_NOTAVAIL;
	ret = fi_av_insert(o->av, name, 1, addr, 0, NULL);
	if (ret == 1)
		return 0;
	return ret < 0 ? ret : -FI_EINVAL;
}
