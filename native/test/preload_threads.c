/* The preload library in a process that does to it what real programs do (#79 item 4): threads
 * racing socket/connect/epoll_ctl/close, a connect racing a close of the same descriptor, a signal
 * handler that closes descriptors, dup2() over a watched descriptor, a descriptor past the watch
 * table, fork() then exec, vfork(), and a program that calls libc's close() through a symbol it
 * resolved itself. Included whole, as test/preload_epoll.c is, so that the library's code is
 * instrumented: `make check` builds it with ASan/UBSan and again with ThreadSanitizer, where any
 * data race is a failure. On a kernel without AF_SMC (this machine) the library's socket() gives
 * the TCP socket and its connect() still asks the kernel about loopback-ism (a netlink exchange,
 * concurrently from every thread); on one with AF_SMC the swap runs too. Prints "N checks, 0
 * failed" as test/unit.c does.
 *
 * The watch table is made smaller here (1,024 descriptors, not 65,536): a descriptor past it needs
 * no RLIMIT_NOFILE above 20,000, which this machine's hard limit is and root here cannot raise. The
 * code is the same at any size. */
#define WATCH_TABLE 1024
#include "tsan_next.h"
#include "../preload/smc_preload.c"
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>

#define THREADS 4
#define SIGNAL_CLOSES 64

static int checks, failed;

/* Called from main() only. */
static void expect(int ok, const char *what)
{
	checks++;
	if (!ok) {
		failed++;
		printf("FAIL: %s\n", what);
	}
}

static int listener, ep, rounds = 300, stopping;
static struct sockaddr_in server;
static int connect_errors, racing_errors;

/* Accepts and closes until told to stop (woken by one last connect), so that every connect
 * completes. */
static void *acceptor(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) {
		int c = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
		if (c >= 0)
			close(c);
	}
	return NULL;
}

/* Loopback connects as event loops and blocking clients make them, some watched by the shared epoll
 * set before connect() (as nginx does), some taken out by EPOLL_CTL_DEL, some only by close(). */
static void *racer(void *arg)
{
	long id = (long)arg;
	for (int i = 0; i < rounds; i++) {
		int nonblocking = (i + id) % 2, watched = (i + id) % 3 == 0;
		struct epoll_event ev = {.events = EPOLLOUT};
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
		if (s < 0) {
			__atomic_add_fetch(&connect_errors, 1, __ATOMIC_RELAXED);
			continue;
		}
		ev.data.fd = s;
		if (watched)
			epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
		if (connect(s, (struct sockaddr *)&server, sizeof(server)) != 0 && errno != EINPROGRESS)
			__atomic_add_fetch(&connect_errors, 1, __ATOMIC_RELAXED);
		if (watched && i % 2)
			epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL);
		close(s);
	}
	return NULL;
}

/* A connect() racing a close() of the same descriptor: the program's own race. Either outcome is
 * the kernel's (connected, or EBADF); the library must add no crash and no data race. */
static void *closer(void *arg)
{
	close(*(int *)arg);
	return NULL;
}

static __attribute__((unused)) void connect_racing_close(void)
{
	for (int i = 0; i < 50; i++) {
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		pthread_t t;
		if (s < 0 || pthread_create(&t, NULL, closer, &s)) {
			racing_errors++;
			continue;
		}
		if (connect(s, (struct sockaddr *)&server, sizeof(server)) != 0 && errno != EBADF &&
		    errno != EINPROGRESS)
			racing_errors++;
		pthread_join(t, NULL);
	}
}

/* Descriptors the SIGALRM handler closes, one per signal, and what each close() returned. */
static int to_close[SIGNAL_CLOSES], closed_by_handler, handler_failures;

static void on_alarm(int sig)
{
	int i = __atomic_fetch_add(&closed_by_handler, 1, __ATOMIC_RELAXED);
	(void)sig;
	if (i < SIGNAL_CLOSES && close(to_close[i]) != 0)
		__atomic_add_fetch(&handler_failures, 1, __ATOMIC_RELAXED);
}

static void signal_handler_closes(void)
{
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
	struct itimerval every = {.it_interval = {0, 2000}, .it_value = {0, 2000}}, off = {0};
	int ok = 1;
	for (int i = 0; i < SIGNAL_CLOSES && ok; i++) {
		struct epoll_event ev = {.events = EPOLLIN};
		to_close[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ok = to_close[i] >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, to_close[i], &ev) == 0;
	}
	expect(ok, "sockets for the signal handler, each in the epoll set");
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &every, NULL);
	while (__atomic_load_n(&closed_by_handler, __ATOMIC_RELAXED) < SIGNAL_CLOSES) {
		/* The main thread keeps calling the same functions meanwhile. */
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct epoll_event ev = {.events = EPOLLIN};
		if (s >= 0) {
			epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
			close(s);
		}
	}
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_IGN);
	expect(handler_failures == 0, "close() from a signal handler closes");
	for (int i = 0; i < SIGNAL_CLOSES; i++)
		if (fcntl(to_close[i], F_GETFD) != -1 || errno != EBADF)
			ok = 0;
	expect(ok, "each descriptor the handler closed is closed");
}

static void dup2_over_watched(void)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), p[2];
	expect(s >= 0 && pipe(p) == 0 && epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) == 0, "dup2 set-up");
	expect(dup2(p[0], s) == s, "dup2 over a watched socket");
	/* The library saw no close(): the count stays, which only ever keeps a socket on SMC. */
	expect(maybe_watched(s) == 1, "after dup2 over it, the descriptor still counts as watched (the safe side)");
	expect(close(s) == 0 && maybe_watched(s) == 0, "close() ends the count");
	close(p[0]);
	close(p[1]);
}

static void past_the_table(void)
{
	struct rlimit want = {.rlim_cur = WATCH_TABLE + 512, .rlim_max = WATCH_TABLE + 512}, had;
	struct epoll_event ev = {.events = EPOLLOUT};
	int s, hi;
	getrlimit(RLIMIT_NOFILE, &had);
	if (had.rlim_max < want.rlim_max && setrlimit(RLIMIT_NOFILE, &want) != 0) {
		printf("skip: no descriptor past %d (RLIMIT_NOFILE %lu, not raised)\n", WATCH_TABLE,
		       (unsigned long)had.rlim_max);
		return;
	}
	if (had.rlim_cur < want.rlim_cur) {
		want.rlim_max = had.rlim_max > want.rlim_max ? had.rlim_max : want.rlim_max;
		setrlimit(RLIMIT_NOFILE, &want);
	}
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	hi = fcntl(s, F_DUPFD_CLOEXEC, WATCH_TABLE + 100);
	close(s);
	expect(hi > WATCH_TABLE, "a descriptor past the watch table");
	expect(epoll_ctl(ep, EPOLL_CTL_ADD, hi, &ev) == 0 && maybe_watched(hi) == 1,
	       "epoll_ctl on it passes through; it counts as watched");
	expect(connect(hi, (struct sockaddr *)&server, sizeof(server)) == 0, "connect() on it connects");
	expect(close(hi) == 0, "close() on it closes");
}

static int run_true(int use_vfork)
{
	int status = -1;
	pid_t pid = use_vfork ? vfork() : fork();
	if (pid == 0) {
		if (!use_vfork) {
			/* The library in the child of a threaded parent, before exec. */
			int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (s < 0 || close(s) != 0)
				_exit(3);
		}
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void libc_close_resolved_by_the_program(void)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int (*libc_close)(int) = (int (*)(int))dlsym(RTLD_NEXT, "close");
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	expect(libc_close && s >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) == 0, "re-resolve set-up");
	expect(libc_close(s) == 0, "libc's close() called through the program's own symbol");
	/* Not seen by the library: the next socket on that number counts as watched, so it keeps SMC. */
	expect(maybe_watched(s) == 1,
	       "a close the library did not see leaves the count: a new socket there stays as it is");
	__atomic_store_n(&watch_count[s], 0, __ATOMIC_RELAXED);
}

int main(void)
{
	pthread_t acc, racers[THREADS];
	socklen_t len = sizeof(server);
	int forked = 1;
	const char *r = getenv("PRELOAD_THREADS_ROUNDS");
	setvbuf(stdout, NULL, _IONBF, 0);
	if (r && atoi(r) > 0)
		rounds = atoi(r);
	/* The listener is a plain TCP socket (libc's socket(), not the library's): the clients are what
	 * is under test, and an AF_SMC listener would only add SMC's server side. */
	listener = next_socket()(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
	ep = epoll_create1(EPOLL_CLOEXEC);
	server.sin_family = AF_INET;
	server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	expect(listener >= 0 && ep >= 0 && bind(listener, (struct sockaddr *)&server, sizeof(server)) == 0 &&
		       listen(listener, 4096) == 0 &&
		       getsockname(listener, (struct sockaddr *)&server, &len) == 0 &&
		       pthread_create(&acc, NULL, acceptor, NULL) == 0,
	       "set-up: a listener on 127.0.0.1 and its acceptor");

	for (long i = 0; i < THREADS; i++)
		pthread_create(&racers[i], NULL, racer, (void *)i);
	/* While the racers run: fork then exec, vfork then exec. */
	for (int i = 0; i < 5; i++)
		forked &= run_true(0) & run_true(1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(racers[i], NULL);
	expect(connect_errors == 0, "every racing thread's loopback connect connected");
	expect(forked, "fork() then exec, and vfork() then exec, from a threaded process");

#ifndef __SANITIZE_THREAD__
	/* Under ThreadSanitizer this is the program's own race on the descriptor, which TSan rightly
	 * reports in the program; the library's shared state on that path is the racers' above. */
	connect_racing_close();
	expect(racing_errors == 0, "a connect racing a close of its descriptor: connected or EBADF");
#endif
	signal_handler_closes();
	dup2_over_watched();
	past_the_table();
	libc_close_resolved_by_the_program();

	__atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
	{
		int wake = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		connect(wake, (struct sockaddr *)&server, sizeof(server));
		pthread_join(acc, NULL);
		close(wake);
	}
	close(listener);
	printf("%d checks, %d failed\n", checks, failed);
	return failed != 0;
}
