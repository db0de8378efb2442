/* The preload library's record of which descriptors an epoll set watches (maybe_watched), on the
 * host's own kernel: no AF_SMC is needed to watch descriptors. Included whole, so that the static
 * functions are reachable and the program's epoll_ctl() and close() are the library's; its
 * socket() falls back to the TCP socket the host gives. Prints "N checks, 0 failed" as
 * test/unit.c does. */
#include "tsan_next.h"
#include "../preload/smc_preload.c"
#include <stdio.h>

static int checks, failed;

/* A constructor that runs before the library's (a library the program links, initialised first),
 * and closes a descriptor: close() must reach libc all the same. */
static int early_close = -2;
__attribute__((constructor(101))) static void close_before_the_library(void)
{
	int p[2];
	if (pipe(p) == 0) {
		early_close = close(p[0]);
		close(p[1]);
	}
}

static void expect(int ok, const char *what)
{
	checks++;
	if (!ok) {
		failed++;
		printf("FAIL: %s\n", what);
	}
}

int main(void)
{
	struct epoll_event ev = {.events = EPOLLOUT};
	int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int a = epoll_create1(EPOLL_CLOEXEC), b = epoll_create1(EPOLL_CLOEXEC);
	int again;
	expect(s >= 0 && a >= 0 && b >= 0, "set-up");
	expect(early_close == 0, "close() before the library's constructor closes");
	expect(maybe_watched(s) == 0, "a socket no epoll set watches is not watched");
	expect(epoll_ctl(a, EPOLL_CTL_ADD, s, &ev) == 0 && maybe_watched(s) == 1,
	       "a socket added to an epoll set is watched");
	expect(epoll_ctl(a, EPOLL_CTL_ADD, s, &ev) == -1 && errno == EEXIST,
	       "adding it twice to one set fails");
	expect(epoll_ctl(b, EPOLL_CTL_ADD, s, &ev) == 0, "it is added to a second set");
	expect(epoll_ctl(a, EPOLL_CTL_DEL, s, NULL) == 0 && maybe_watched(s) == 1,
	       "taken out of one of its two sets, it is still watched");
	expect(epoll_ctl(b, EPOLL_CTL_DEL, s, NULL) == 0 && maybe_watched(s) == 0,
	       "taken out of both (the failed second add counted nothing), it is not");
	expect(epoll_ctl(a, EPOLL_CTL_ADD, s, &ev) == 0 && maybe_watched(s) == 1, "added again");
	expect(close(s) == 0, "closed");
	again = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	expect(again == s && maybe_watched(again) == 0,
	       "a new socket on the closed one's number is not watched (close ended the registration)");
	expect(maybe_watched(WATCH_TABLE) == 1 && maybe_watched(-1) == 1,
	       "a descriptor past the table counts as watched");
	expect(close(-1) == -1 && errno == EBADF, "close() passes errors on");
	printf("%d checks, %d failed\n", checks, failed);
	return failed != 0;
}
