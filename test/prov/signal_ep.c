/*
 * A process with an xshm endpoint that waits to be killed, for the signal
 * tests (test_cleanup, test/signals.sh).  It is what any program linked
 * with libfabric is: libfabric and the libraries it loads (Debian's
 * libinfinipath among them) install their signal handlers before main,
 * libfabric's shm when its first endpoint opens.
 *
 *   signal_ep [-n] [-s] [-S] [-F] [-U] [-D SIG] [-I SIG] [-P SIG] [-K SIG]
 *             [-R SIG] [-A SIG]
 *
 *   -n      no xshm endpoint: what the process does without xshm (control)
 *   -s, -S  a libfabric shm endpoint opened before, after xshm's
 *   -D SIG  SIG_DFL for SIG before xshm's endpoint (no handler at all)
 *   -I SIG  SIG_IGN for SIG before
 *   -P SIG  before: a plain handler that prints "plain SIG", _exit(7)
 *   -K SIG  before: a plain handler that prints "kept SIG" and returns
 *   -R SIG  before: an SA_SIGINFO | SA_RESETHAND handler that prints
 *           "reset SIG" and raises SIG again, to the default action
 *   -A SIG  after xshm's endpoint: an SA_SIGINFO handler that prints
 *           "after SIG" and passes the signal to the action it replaced
 *   -F      fork a child that only waits (it prints "forked PID")
 *   -U      open xshm's endpoint through the provider library loaded by
 *           hand, then unload it as libfabric does at exit (cleanup,
 *           dlclose), after -A, and print for SIGINT, SIGTERM, SIGHUP
 *           and SIGQUIT "unloaded SIG same" where the disposition is the
 *           one before the endpoint opened, else "unloaded SIG other"
 *
 * It prints (on stdout, one write per line) "before SIG dfl|ign|plain|
 * siginfo" for SIGINT, SIGTERM, SIGHUP and SIGQUIT as they are just before
 * xshm's endpoint opens, "region /dev/shm/..." (its region), then "ready",
 * and waits (at most 60 seconds).  Exit 2: a setup step failed.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/providers/fi_prov.h>

#define PLAIN_EXIT	7
#define WAIT_SECS	60

static const int shown[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
#define NSHOWN	(sizeof(shown) / sizeof(*shown))

static struct sigaction replaced[NSIG];	/* by -A's handler */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[len++] = '\n';
	if (write(STDOUT_FILENO, line, len) != len)
		_exit(2);
}

static void die(const char *what, int ret)
{
	say("error %s: %d (%s)", what, ret, fi_strerror(-ret));
	_exit(2);
}

/* Async-signal-safe: "<word> <sig>\n" by one write. */
static void say_sig(const char *word, int sig)
{
	char line[32];
	size_t len = strlen(word);

	memcpy(line, word, len);
	line[len++] = ' ';
	if (sig >= 10)
		line[len++] = '0' + sig / 10;
	line[len++] = '0' + sig % 10;
	line[len++] = '\n';
	if (write(STDOUT_FILENO, line, len) < 0)
		return;
}

static void plain_exit(int sig)
{
	say_sig("plain", sig);
	_exit(PLAIN_EXIT);
}

static void plain_kept(int sig)
{
	say_sig("kept", sig);
}

static void reset_reraise(int sig, siginfo_t *info, void *uc)
{
	say_sig("reset", sig);
	raise(sig);
}

/* Chains as a well-behaved library does to the action it replaced. */
static void after(int sig, siginfo_t *info, void *uc)
{
	const struct sigaction *old = &replaced[sig];

	say_sig("after", sig);
	if (old->sa_flags & SA_SIGINFO) {
		old->sa_sigaction(sig, info, uc);
	} else if (old->sa_handler == SIG_DFL) {
		signal(sig, SIG_DFL);
		raise(sig);
	} else if (old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
	}
}

static void set_handler(int sig, void (*plain)(int),
			void (*info)(int, siginfo_t *, void *), int flags,
			struct sigaction *old)
{
	struct sigaction action = { .sa_flags = flags };

	sigemptyset(&action.sa_mask);
	if (info) {
		action.sa_sigaction = info;
		action.sa_flags |= SA_SIGINFO;
	} else {
		action.sa_handler = plain;
	}
	if (sigaction(sig, &action, old))
		die("sigaction", -1);
}

static const char *kind(int sig, struct sigaction *out)
{
	struct sigaction cur;

	sigaction(sig, NULL, &cur);
	if (out)
		*out = cur;
	if (cur.sa_flags & SA_SIGINFO)
		return "siginfo";
	return cur.sa_handler == SIG_DFL ? "dfl" :
	       cur.sa_handler == SIG_IGN ? "ign" : "plain";
}

/* How endpoints open: through libfabric, or straight through a provider. */
struct opener {
	const struct fi_provider *prov;	/* NULL: through libfabric */
};

static struct fi_info *get_info(const struct opener *op, const char *name)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	int ret;

	if (!hints)
		die("fi_allocinfo", -FI_ENOMEM);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED;
	hints->domain_attr->mr_mode = 0;
	hints->fabric_attr->prov_name = strdup(name);
	ret = op->prov ? op->prov->getinfo(FI_VERSION(1, 17), NULL, NULL, 0,
					   hints, &info)
		       : fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				    &info);
	if (ret)
		die("fi_getinfo", ret);
	fi_freeinfo(hints);
	return info;
}

struct ep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

static void open_ep(struct ep *e, const struct opener *op, const char *name)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	int ret;

	e->info = get_info(op, name);
	ret = op->prov ? op->prov->fabric(e->info->fabric_attr, &e->fabric,
					  NULL)
		       : fi_fabric(e->info->fabric_attr, &e->fabric, NULL);
	if (ret)
		die("fi_fabric", ret);
	if ((ret = fi_domain(e->fabric, e->info, &e->domain, NULL)) ||
	    (ret = fi_av_open(e->domain, &av_attr, &e->av, NULL)) ||
	    (ret = fi_cq_open(e->domain, &cq_attr, &e->cq, NULL)) ||
	    (ret = fi_endpoint(e->domain, e->info, &e->ep, NULL)) ||
	    (ret = fi_ep_bind(e->ep, &e->av->fid, 0)) ||
	    (ret = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(e->ep)))
		die(name, ret);
}

static void close_ep(struct ep *e)
{
	fi_close(&e->ep->fid);
	fi_close(&e->cq->fid);
	fi_close(&e->av->fid);
	fi_close(&e->domain->fid);
	fi_close(&e->fabric->fid);
	fi_freeinfo(e->info);
}

/* fi_xshm://<node id>/<endpoint id>: the region is xshm-<uid>-<endpoint id>. */
static void say_region(struct ep *e)
{
	char addr[64] = "";
	size_t len = sizeof(addr) - 1;
	const char *id;
	int ret = fi_getname(&e->ep->fid, addr, &len);

	id = strrchr(addr, '/');
	if (ret || !id)
		die("fi_getname", ret ? ret : -FI_EINVAL);
	say("region /dev/shm/xshm-%u-%s", (unsigned) geteuid(), id + 1);
}

/* As libfabric loads a DL provider, from the first FI_PROVIDER_PATH entry. */
static const struct fi_provider *load_by_hand(void **handle)
{
	const char *dirs = getenv("FI_PROVIDER_PATH");
	struct fi_provider *(*ini)(void);
	char path[4096];

	if (!dirs)
		die("FI_PROVIDER_PATH unset", -FI_EINVAL);
	snprintf(path, sizeof(path), "%.*s/libxshm-fi.so",
		 (int) strcspn(dirs, ":"), dirs);
	*handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!*handle)
		die(dlerror(), -FI_ENOENT);
	ini = (struct fi_provider *(*)(void)) dlsym(*handle, "fi_prov_ini");
	if (!ini)
		die("fi_prov_ini", -FI_ENOENT);
	return ini();
}

static int sig_arg(const char *text)
{
	int sig = atoi(text);

	if (sig <= 0 || sig >= NSIG)
		die("signal number", -FI_EINVAL);
	return sig;
}

int main(int argc, char **argv)
{
	bool no_xshm = false, shm_before = false, shm_after = false;
	bool fork_child = false, unload = false;
	int after_sig = 0, opt;
	struct sigaction before[NSHOWN];
	struct opener op = { NULL }, lib = { NULL };
	struct ep xshm, shm;
	void *handle = NULL;

	alarm(WAIT_SECS);
	while ((opt = getopt(argc, argv, "nsSFUD:I:P:K:R:A:")) != -1) {
		switch (opt) {
		case 'n': no_xshm = true; break;
		case 's': shm_before = true; break;
		case 'S': shm_after = true; break;
		case 'F': fork_child = true; break;
		case 'U': unload = true; break;
		case 'D': signal(sig_arg(optarg), SIG_DFL); break;
		case 'I': signal(sig_arg(optarg), SIG_IGN); break;
		case 'P':
			set_handler(sig_arg(optarg), plain_exit, NULL, 0, NULL);
			break;
		case 'K':
			set_handler(sig_arg(optarg), plain_kept, NULL, 0, NULL);
			break;
		case 'R':
			set_handler(sig_arg(optarg), NULL, reset_reraise,
				    SA_RESETHAND, NULL);
			break;
		case 'A': after_sig = sig_arg(optarg); break;
		default: die("usage", -FI_EINVAL);
		}
	}
	if (shm_before)
		open_ep(&shm, &lib, "shm");
	for (size_t i = 0; i < NSHOWN; i++)
		say("before %d %s", shown[i], kind(shown[i], &before[i]));
	if (unload)
		op.prov = load_by_hand(&handle);
	if (!no_xshm) {
		open_ep(&xshm, &op, "xshm");
		say_region(&xshm);
	}
	if (shm_after)
		open_ep(&shm, &lib, "shm");
	if (after_sig)
		set_handler(after_sig, NULL, after, 0, &replaced[after_sig]);
	if (unload) {
		close_ep(&xshm);
		op.prov->cleanup();
		dlclose(handle);
		for (size_t i = 0; i < NSHOWN; i++) {
			struct sigaction cur;

			kind(shown[i], &cur);
			say("unloaded %d %s", shown[i],
			    !((cur.sa_flags ^ before[i].sa_flags) &
			      SA_SIGINFO) &&
			    cur.sa_handler == before[i].sa_handler ?
			    "same" : "other");
		}
	}
	if (fork_child) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork", -FI_EOTHER);
		if (pid == 0) {
			alarm(WAIT_SECS);
			for (;;)
				pause();
		}
		say("forked %d", (int) pid);
	}
	say("ready");
	for (;;)
		pause();
}
