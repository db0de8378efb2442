/* The preload library in a process that does to it what real programs do (#79 item 4): threads
 * racing the library's socket() (its first call resolves libc's) and its setsockopt(SO_REUSEPORT)
 * swap, each socket then connected to a loopback listener and closed; fork() then exec, and
 * vfork(), while they run. The library interposes only socket() and setsockopt() since #85 (no
 * connect(), close() or epoll_ctl() of its own): this checks that those two stay free of data
 * races and leave every descriptor working. Included whole, so that the library's code is
 * instrumented: `make check` builds it with ASan/UBSan and again with ThreadSanitizer, where any
 * data race is a failure. On a kernel without AF_SMC (this machine) the library's socket() gives
 * the TCP socket; on one with AF_SMC (the VM suites) the SO_REUSEPORT swap runs too. Prints
 * "N checks, 0 failed" as test/unit.c does. */
#include "tsan_next.h"
#include "../preload/smc_preload.c" /* record.c is linked beside it */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "expect.h"

#define THREADS 4

static int listener, rounds = 300, stopping;
static struct sockaddr_in server;
static int connect_errors, reuseport_errors;

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

/* Sockets as clients and servers make them: some asked for SO_REUSEPORT first (the library puts a
 * TCP socket in place of an AF_SMC one), blocking and not, each connected and closed. */
static void *racer(void *arg)
{
	long id = (long)arg;
	for (int i = 0; i < rounds; i++) {
		int nonblocking = (i + id) % 2, reuse = (i + id) % 3 == 0, one = 1;
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
		if (s < 0) {
			__atomic_add_fetch(&connect_errors, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (reuse && setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0)
			__atomic_add_fetch(&reuseport_errors, 1, __ATOMIC_RELAXED);
		if (connect(s, (struct sockaddr *)&server, sizeof(server)) != 0 && errno != EINPROGRESS)
			__atomic_add_fetch(&connect_errors, 1, __ATOMIC_RELAXED);
		close(s);
	}
	return NULL;
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
	server.sin_family = AF_INET;
	server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	expect(listener >= 0 && bind(listener, (struct sockaddr *)&server, sizeof(server)) == 0 &&
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
	expect(connect_errors == 0, "every racing thread's socket opened and its loopback connect connected");
	expect(reuseport_errors == 0, "every SO_REUSEPORT asked for was set");
	expect(forked, "fork() then exec, and vfork() then exec, from a threaded process");

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
