/*
 * Shared-memory files of dead processes do not outlive them.
 *
 * A child opens an endpoint (its region /dev/shm/xshm-<uid>-<ep id>, the id
 * carrying its pid) and a named AV, then is killed.  SIGTERM: the provider's
 * handler removes its region before it dies of the signal.  SIGKILL: the
 * files stay until the next process opens a fabric, which removes them.
 * A handler the application installed first is still called, after the
 * region is removed, and FI_XSHM_SIGNAL_HANDLERS=0 installs none.  Only
 * this test's files are looked at.
 *
 * The "chain" cases run test/prov/signal_ep, a fresh program linked with
 * libfabric, so that whatever libfabric and the libraries it loads install
 * before xshm's endpoint opens is there, as in any application (on Debian
 * 12, libinfinipath's handlers for SIGINT and SIGTERM, which exit(1), and
 * libfabric shm's when a shm endpoint opened first).  Each kills it with a
 * signal and checks that its region is gone and that it ended as the same
 * program without an xshm endpoint ends (signal_ep -n), or as the handler
 * it had wants.
 */
#include "harness.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEATH_MS	10000
#define APP_EXIT	7	/* the application's own SIGTERM handler */

#define PLAIN_EXIT	7	/* signal_ep -P's handler */

enum child_kind { PLAIN, APP_HANDLER, HANDLERS_OFF };

static const int default_signals[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS,
};

static void av_name(char *buf, size_t len, pid_t pid)
{
	snprintf(buf, len, "xshm-cleanup-test-%d", (int) pid);
}

/* How many of pid's regions and named-AV files /dev/shm holds. */
static int files_of(pid_t pid)
{
	char av_file[96], av[64];
	struct dirent *entry;
	int count = 0;
	DIR *dir = opendir("/dev/shm");

	XT_ASSERT(dir, "opendir /dev/shm");
	av_name(av, sizeof(av), pid);
	snprintf(av_file, sizeof(av_file), "xshm-av-%u-%s", (unsigned) geteuid(),
		 av);
	while ((entry = readdir(dir)) != NULL) {
		const char *name = entry->d_name;

		if (!strcmp(name, av_file) || xt_region_creator(name) == pid)
			count++;
	}
	closedir(dir);
	return count;
}

static void app_handler(int sig)
{
	_exit(APP_EXIT);
}

/* The child: an endpoint and a named AV open, then wait to be killed. */
static void child_main(int ready_fd, enum child_kind kind)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	struct fid_av *av;
	struct xt_ep x;
	char name[64];

	alarm(XT_CHILD_SECS);
	/* Like an application with no handlers (check and the harness have some). */
	for (size_t i = 0; i < sizeof(default_signals) / sizeof(*default_signals); i++)
		signal(default_signals[i], SIG_DFL);
	if (kind == APP_HANDLER)
		signal(SIGTERM, app_handler);
	if (kind == HANDLERS_OFF)
		setenv("FI_XSHM_SIGNAL_HANDLERS", "0", 1);
	xt_open(&x, &cfg);
	av_name(name, sizeof(name), getpid());
	attr.name = name;
	XT_ASSERT_OK(fi_av_open(x.domain, &attr, &av, NULL));
	if (write(ready_fd, "r", 1) != 1)
		_exit(2);
	for (;;)
		pause();
}

static pid_t spawn_child(enum child_kind kind)
{
	int fds[2];
	char byte;
	pid_t pid;

	XT_ASSERT(pipe(fds) == 0, "pipe");
	pid = fork();
	XT_ASSERT(pid >= 0, "fork");
	if (pid == 0) {
		close(fds[0]);
		child_main(fds[1], kind);
	}
	close(fds[1]);
	XT_ASSERT(read(fds[0], &byte, 1) == 1, "child %d failed to open", (int) pid);
	close(fds[0]);
	return pid;
}

static int kill_and_reap(pid_t pid, int sig)
{
	uint64_t end = xt_now_ms() + DEATH_MS;
	int status;

	XT_ASSERT(kill(pid, sig) == 0, "kill");
	while (waitpid(pid, &status, WNOHANG) != pid) {
		if (xt_now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			XT_ASSERT(false, "child %d did not die of signal %d", (int) pid, sig);
		}
		usleep(1000);
	}
	return status;
}

/* The next process to open a fabric removes what the dead left. */
static void sweep_by_fabric_open(void)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_ep x;

	xt_open_upto(&x, &cfg, XT_DOMAIN);
	xt_close(&x);
}

/* The child's two files outlived it, and the next fi_fabric removes them. */
static void expect_left_then_swept(pid_t child)
{
	XT_ASSERT(files_of(child) == 2, "files left: %d", files_of(child));
	sweep_by_fabric_open();
	XT_ASSERT(files_of(child) == 0, "files left: %d", files_of(child));
}

START_TEST(sigterm_removes_region)
{
	pid_t child = spawn_child(PLAIN);
	int status;

	XT_ASSERT(files_of(child) == 2, "child's files: %d", files_of(child));
	status = kill_and_reap(child, SIGTERM);
	XT_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
		  "child did not die of SIGTERM (status %#x)", status);
	/*
	 * The region by the handler; the AV, shared by nature, by the sweep,
	 * which another test's process may have run already (make -j check).
	 */
	XT_ASSERT(files_of(child) <= 1, "files left: %d", files_of(child));
	sweep_by_fabric_open();
	XT_ASSERT(files_of(child) == 0, "files left: %d", files_of(child));
}
END_TEST

START_TEST(sigkill_files_removed_by_next_open)
{
	pid_t child = spawn_child(PLAIN);
	int status;

	status = kill_and_reap(child, SIGKILL);
	XT_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "status %#x", status);
	expect_left_then_swept(child);
}
END_TEST

START_TEST(application_handler_chained)
{
	pid_t child = spawn_child(APP_HANDLER);
	int status = kill_and_reap(child, SIGTERM);

	XT_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == APP_EXIT,
		  "the application's handler did not run (status %#x)", status);
	/* as in sigterm_removes_region */
	XT_ASSERT(files_of(child) <= 1, "files left: %d", files_of(child));
	sweep_by_fabric_open();
	XT_ASSERT(files_of(child) == 0, "files left: %d", files_of(child));
}
END_TEST

START_TEST(handlers_disabled_by_parameter)
{
	pid_t child = spawn_child(HANDLERS_OFF);
	int status = kill_and_reap(child, SIGTERM);

	XT_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
		  "status %#x", status);
	expect_left_then_swept(child);
}
END_TEST

/* ---- signal_ep: a program of its own, killed ---- */

struct run {
	pid_t pid;
	int out;		/* its stdout */
	char text[4096];	/* what it printed */
	size_t len;
	char region[128];	/* "/dev/shm/xshm-..." or "" */
	pid_t forked;		/* its child (-F) */
};

static const int chain_sigs[] = { SIGINT, SIGTERM, SIGHUP };	/* shm: 2 first */
#define NCHAIN_SIGS	(int) (sizeof(chain_sigs) / sizeof(*chain_sigs))

static const char *helper_path(void)
{
	static char path[4096];
	const char *dir = getenv("XSHM_BUILDDIR");

	snprintf(path, sizeof(path), "%s/test/prov/signal_ep", dir ? dir : ".");
	return path;
}

/* Reads what it prints until line (a whole line) shows, or EOF. */
static bool run_read_until(struct run *r, const char *line, int ms)
{
	uint64_t end = xt_now_ms() + ms;
	char want[64];

	snprintf(want, sizeof(want), "%s\n", line);
	for (;;) {
		struct pollfd pfd = { .fd = r->out, .events = POLLIN };
		const char *at = r->text;
		ssize_t got;
		int left = (int) (end - xt_now_ms());

		while ((at = strstr(at, want)) != NULL) {
			if (at == r->text || at[-1] == '\n')
				return true;
			at++;
		}
		if (xt_now_ms() >= end || poll(&pfd, 1, left > 0 ? left : 0) <= 0)
			return false;
		got = read(r->out, r->text + r->len, sizeof(r->text) - 1 - r->len);
		if (got <= 0)
			return false;
		r->len += got;
		r->text[r->len] = '\0';
	}
}

/* The value after "<key> " on a line of its own, or NULL. */
static const char *run_value(const struct run *r, const char *key, char *buf,
			     size_t size)
{
	char want[64];
	const char *at = r->text;
	size_t n;

	snprintf(want, sizeof(want), "%s ", key);
	while ((at = strstr(at, want)) != NULL) {
		if (at == r->text || at[-1] == '\n') {
			at += strlen(want);
			n = strcspn(at, "\n");
			if (n >= size)
				n = size - 1;
			memcpy(buf, at, n);
			buf[n] = '\0';
			return buf;
		}
		at++;
	}
	return NULL;
}

/* Starts signal_ep with args (NULL-terminated) and waits for its "ready". */
static void run_start(struct run *r, const char *const *args)
{
	const char *argv[16] = { "signal_ep" };
	char forked[32];
	int fds[2];
	size_t n = 1;

	memset(r, 0, sizeof(*r));
	while (*args && n < 15)
		argv[n++] = *args++;
	XT_ASSERT(pipe(fds) == 0, "pipe");
	r->pid = fork();
	XT_ASSERT(r->pid >= 0, "fork");
	if (r->pid == 0) {
		close(fds[0]);
		if (dup2(fds[1], STDOUT_FILENO) < 0)
			_exit(126);
		execv(helper_path(), (char *const *) argv);
		_exit(127);
	}
	close(fds[1]);
	r->out = fds[0];
	if (!run_read_until(r, "ready", DEATH_MS)) {
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, 0);
		XT_ASSERT(false, "%s did not get ready: %s", helper_path(), r->text);
	}
	run_value(r, "region", r->region, sizeof(r->region));
	if (run_value(r, "forked", forked, sizeof(forked)))
		r->forked = atoi(forked);
}

/* How it saw sig's disposition before xshm's endpoint opened. */
static const char *run_before(const struct run *r, int sig)
{
	static char kind[16];
	char key[16];

	snprintf(key, sizeof(key), "before %d", sig);
	return run_value(r, key, kind, sizeof(kind)) ? kind : "?";
}

static bool run_printed(struct run *r, const char *word, int sig)
{
	char line[32];

	snprintf(line, sizeof(line), "%s %d", word, sig);
	return run_read_until(r, line, 1000);
}

static int run_kill(struct run *r, int sig)
{
	int status = kill_and_reap(r->pid, sig);

	/* Whatever it printed on its way out. */
	run_read_until(r, "(eof)", 100);
	close(r->out);
	return status;
}

static bool region_exists(const struct run *r)
{
	XT_ASSERT(r->region[0], "no region printed: %s", r->text);
	return access(r->region, F_OK) == 0;
}

/* How signal_ep with args plus -n (no xshm endpoint) ends on sig. */
static int control_status(const char *const *args, int sig)
{
	const char *with_n[16] = { "-n" };
	struct run r;
	size_t n = 1;
	int status;

	while (*args && n < 15)
		with_n[n++] = *args++;
	run_start(&r, with_n);
	status = run_kill(&r, sig);
	if (r.forked > 0)
		kill(r.forked, SIGKILL);
	return status;
}

static void describe(char *buf, size_t len, int status)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
	else if (WIFEXITED(status))
		snprintf(buf, len, "exit %d", WEXITSTATUS(status));
	else
		snprintf(buf, len, "status %#x", status);
}

/*
 * Kills r (started with args) with sig: it must end as the same program
 * without an xshm endpoint ends, and leave no region.
 */
static int expect_as_control(struct run *r, const char *const *args, int sig)
{
	int expected = control_status(args, sig), status;
	char want[48], got[48];

	XT_ASSERT(region_exists(r), "%s missing before the signal", r->region);
	status = run_kill(r, sig);
	describe(want, sizeof(want), expected);
	describe(got, sizeof(got), status);
	XT_ASSERT(status == expected, "signal %d: %s, without xshm %s", sig, got,
		  want);
	XT_ASSERT(!region_exists(r), "signal %d (%s) left %s", sig, got,
		  r->region);
	return status;
}

static int kill_expect_control(const char *const *args, int sig, struct run *r)
{
	run_start(r, args);
	return expect_as_control(r, args, sig);
}

static void expect_signaled(int status, int sig)
{
	XT_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == sig,
		  "status %#x, not killed by signal %d", status, sig);
}

/*
 * As the program is: SIGINT and SIGTERM already have a handler (Debian's
 * libfabric loads libinfinipath, whose handlers exit(1)); SIGHUP has none.
 */
START_TEST(chained_in_default_process)
{
	int sig = chain_sigs[_i], status;
	const char *args[] = { NULL };
	struct run r;

	status = kill_expect_control(args, sig, &r);
	if (sig != SIGHUP)
		XT_ASSERT(strcmp(run_before(&r, sig), "dfl") != 0,
			  "signal %d had no handler before xshm's endpoint", sig);
	if (!strcmp(run_before(&r, sig), "dfl"))
		expect_signaled(status, sig);
}
END_TEST

/* libfabric's shm endpoint opened first: its handler, which chains itself. */
START_TEST(chained_behind_libfabric_shm)
{
	int sig = chain_sigs[_i];
	const char *args[] = { "-s", NULL };
	struct run r;

	kill_expect_control(args, sig, &r);
	XT_ASSERT(!strcmp(run_before(&r, sig), "siginfo"),
		  "signal %d: %s before xshm's endpoint", sig,
		  run_before(&r, sig));
}
END_TEST

/* libfabric's shm endpoint opened after: shm saved ours and calls it. */
START_TEST(shm_installed_after_calls_ours)
{
	const char *args[] = { "-S", NULL };
	struct run r;

	kill_expect_control(args, chain_sigs[_i], &r);
}
END_TEST

/* The application's handler, installed after, passes the signal back. */
START_TEST(application_after_chains_back)
{
	int sig = chain_sigs[_i];
	char num[8];
	const char *args[] = { "-A", num, NULL };
	struct run r;

	snprintf(num, sizeof(num), "%d", sig);
	kill_expect_control(args, sig, &r);
	XT_ASSERT(strstr(r.text, "after "), "its handler did not run");
}
END_TEST

/* A plain (not SA_SIGINFO) handler from before: called, and it exits. */
START_TEST(plain_handler_before)
{
	int sig = chain_sigs[_i], status;
	char num[8];
	const char *args[] = { "-P", num, NULL };
	struct run r;

	snprintf(num, sizeof(num), "%d", sig);
	run_start(&r, args);
	XT_ASSERT(!strcmp(run_before(&r, sig), "plain"), "%s", r.text);
	status = run_kill(&r, sig);
	XT_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == PLAIN_EXIT,
		  "status %#x", status);
	XT_ASSERT(strstr(r.text, "plain "), "its handler did not run");
	XT_ASSERT(!region_exists(&r), "%s left", r.region);
}
END_TEST

/*
 * An SA_RESETHAND handler from before, which raises the signal again: it
 * finds SIG_DFL, as it asked, and the process dies of the signal (it would
 * loop, ours called again and again, had ours not taken its flags).
 */
START_TEST(resethand_handler_before)
{
	int sig = chain_sigs[_i], status;
	char num[8];
	const char *args[] = { "-R", num, NULL };
	struct run r;

	snprintf(num, sizeof(num), "%d", sig);
	run_start(&r, args);
	status = run_kill(&r, sig);
	expect_signaled(status, sig);
	XT_ASSERT(strstr(r.text, "reset "), "its handler did not run");
	XT_ASSERT(!region_exists(&r), "%s left", r.region);
}
END_TEST

/*
 * A handler from before that returns: the process lives on, its region
 * name removed (what fi_xshm(7) says: peers already connected go on).
 */
START_TEST(returning_handler_lives_on)
{
	const char *args[] = { "-K", "15", NULL };
	struct run r;

	run_start(&r, args);
	XT_ASSERT(kill(r.pid, SIGTERM) == 0, "kill");
	XT_ASSERT(run_printed(&r, "kept", SIGTERM), "its handler did not run");
	usleep(100 * 1000);
	XT_ASSERT(waitpid(r.pid, NULL, WNOHANG) == 0, "it died");
	XT_ASSERT(!region_exists(&r), "%s left", r.region);
	run_kill(&r, SIGKILL);
}
END_TEST

/* Whether pid's SigIgn mask in /proc has sig. */
static bool ignores(pid_t pid, int sig)
{
	char path[64], line[128];
	unsigned long long mask = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
	f = fopen(path, "r");
	XT_ASSERT(f, "%s", path);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigIgn: %llx", &mask) == 1)
			break;
	fclose(f);
	return mask >> (sig - 1) & 1;
}

/* An ignored SIGHUP stays ignored: the process goes on, region and all. */
START_TEST(ignored_signal_left_alone)
{
	const char *args[] = { "-I", "1", NULL };
	struct run r;

	run_start(&r, args);
	XT_ASSERT(!strcmp(run_before(&r, SIGHUP), "ign"), "%s", r.text);
	XT_ASSERT(ignores(r.pid, SIGHUP), "SIGHUP no longer ignored");
	XT_ASSERT(kill(r.pid, SIGHUP) == 0, "kill");
	usleep(200 * 1000);
	XT_ASSERT(waitpid(r.pid, NULL, WNOHANG) == 0, "SIGHUP killed it");
	XT_ASSERT(region_exists(&r), "SIGHUP removed %s", r.region);
	/* The signals it does not ignore still remove it. */
	expect_as_control(&r, args, SIGTERM);
}
END_TEST

/* A forked child inherits the handler, never the right to unlink. */
static bool gone_or_zombie(pid_t pid)
{
	char path[64], state = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = 0;
	fclose(f);
	return state == 'Z' || state == 'X';
}

START_TEST(forked_child_keeps_parents_region)
{
	int sig = chain_sigs[_i];
	const char *args[] = { "-F", NULL };
	uint64_t end = xt_now_ms() + DEATH_MS;
	struct run r;

	run_start(&r, args);
	XT_ASSERT(r.forked > 0, "%s", r.text);
	XT_ASSERT(kill(r.forked, sig) == 0, "kill");
	while (!gone_or_zombie(r.forked) && xt_now_ms() < end)
		usleep(1000);
	XT_ASSERT(gone_or_zombie(r.forked), "its child lives on");
	XT_ASSERT(region_exists(&r), "its child removed %s", r.region);
	/* Its own death still removes it. */
	expect_as_control(&r, args, sig);
}
END_TEST

/*
 * The provider unloaded as libfabric does (cleanup, dlclose) after the
 * application installed a handler in front of ours: every other signal has
 * its old disposition back, and the application's handler still reaches
 * ours, whose code stays mapped, and through it the default action.
 */
START_TEST(unloaded_provider_chain_intact)
{
	const char *args[] = { "-U", "-A", "1", NULL };
	const int same[] = { SIGINT, SIGTERM, SIGQUIT };
	struct run r;
	int status;

	run_start(&r, args);
	for (size_t i = 0; i < sizeof(same) / sizeof(*same); i++) {
		char key[32], value[16];

		snprintf(key, sizeof(key), "unloaded %d", same[i]);
		XT_ASSERT(run_value(&r, key, value, sizeof(value)) &&
			  !strcmp(value, "same"),
			  "signal %d not restored: %s", same[i], r.text);
	}
	status = run_kill(&r, SIGHUP);
	XT_ASSERT(strstr(r.text, "after 1"), "the application's handler did not run");
	expect_signaled(status, SIGHUP);
}
END_TEST

/*
 * files_of and the harness's leak check find a region's creator in its
 * name: this user's "xshm-<uid>-" and 16 hex digits of an endpoint id made
 * by a process, not taken from a service.
 */
START_TEST(region_names_tell_their_creator)
{
	char name[64];

	snprintf(name, sizeof(name), "xshm-%u-0000004ee10000f2", (unsigned) geteuid());
	XT_ASSERT(xt_region_creator(name) == 0x4ee1, "%s", name);
	snprintf(name, sizeof(name), "xshm-%u-8000000100abcdef", (unsigned) geteuid());
	XT_ASSERT(xt_region_creator(name) == 0, "a service's id: %s", name);
	snprintf(name, sizeof(name), "xshm-%u-4ee10000f2", (unsigned) geteuid());
	XT_ASSERT(xt_region_creator(name) == 0, "short: %s", name);
	snprintf(name, sizeof(name), "xshm-%u-0000004ee10000f2x", (unsigned) geteuid());
	XT_ASSERT(xt_region_creator(name) == 0, "long: %s", name);
	snprintf(name, sizeof(name), "xshm-%u-0000004ee10000f2", (unsigned) geteuid() + 1);
	XT_ASSERT(xt_region_creator(name) == 0, "another user's: %s", name);
	snprintf(name, sizeof(name), "xshm-av-%u-0000004ee10000f2", (unsigned) geteuid());
	XT_ASSERT(xt_region_creator(name) == 0, "an AV file: %s", name);
}
END_TEST

static Suite *cleanup_suite(void)
{
	Suite *s = suite_create("cleanup");
	TCase *tc = tcase_create("signals");
	TCase *chain = tcase_create("chain");
	TCase *names = tcase_create("names");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, sigterm_removes_region);
	tcase_add_test(tc, sigkill_files_removed_by_next_open);
	tcase_add_test(tc, application_handler_chained);
	tcase_add_test(tc, handlers_disabled_by_parameter);
	suite_add_tcase(s, tc);
	tcase_set_timeout(chain, 60);
	tcase_add_loop_test(chain, chained_in_default_process, 0, NCHAIN_SIGS);
	tcase_add_loop_test(chain, chained_behind_libfabric_shm, 0, 2);
	tcase_add_loop_test(chain, shm_installed_after_calls_ours, 0, 2);
	tcase_add_loop_test(chain, application_after_chains_back, 0, NCHAIN_SIGS);
	tcase_add_loop_test(chain, plain_handler_before, 0, NCHAIN_SIGS);
	tcase_add_loop_test(chain, resethand_handler_before, 0, NCHAIN_SIGS);
	tcase_add_test(chain, returning_handler_lives_on);
	tcase_add_test(chain, ignored_signal_left_alone);
	tcase_add_loop_test(chain, forked_child_keeps_parents_region, 0,
			    NCHAIN_SIGS);
	tcase_add_test(chain, unloaded_provider_chain_intact);
	suite_add_tcase(s, chain);
	tcase_add_test(names, region_names_tell_their_creator);
	suite_add_tcase(s, names);
	return s;
}

int main(void)
{
	if (!xt_wanted(XT_XSHM))	/* none of its cases is selected */
		return xt_run_suite(suite_create("cleanup"));
	return xt_run_suite(cleanup_suite());
}
