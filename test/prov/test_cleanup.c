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
 */
#include "harness.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEATH_MS	10000
#define APP_EXIT	7	/* the application's own SIGTERM handler */

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
	/* The region by the handler; the AV, shared by nature, by the sweep. */
	XT_ASSERT(files_of(child) == 1, "files left: %d", files_of(child));
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
	XT_ASSERT(files_of(child) == 1, "files left: %d", files_of(child));
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
	TCase *names = tcase_create("names");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, sigterm_removes_region);
	tcase_add_test(tc, sigkill_files_removed_by_next_open);
	tcase_add_test(tc, application_handler_chained);
	tcase_add_test(tc, handlers_disabled_by_parameter);
	suite_add_tcase(s, tc);
	tcase_add_test(names, region_names_tell_their_creator);
	suite_add_tcase(s, names);
	return s;
}

int main(void)
{
	return xt_run_suite(cleanup_suite());
}
