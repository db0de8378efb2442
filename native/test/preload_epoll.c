/* The preload library's test of whether an epoll set watches a socket (maybe_watched), on the
 * host's own kernel: no AF_SMC is needed to watch descriptors. Included whole, so that the static
 * functions are reachable; its socket() falls back to the TCP socket the host gives. Prints
 * "N checks, 0 failed" as test/unit.c does. */
#include "../preload/smc_preload.c"
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

static int checks, failed;

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
	int ev_fd = eventfd(0, EFD_CLOEXEC);
	int i, extra[300];
	expect(s >= 0 && a >= 0 && b >= 0 && ev_fd >= 0, "set-up");
	expect(maybe_watched(s) == 0, "a socket no epoll set watches is not watched");
	/* An eventfd shares the anonymous inode and is no epoll: read past. */
	epoll_ctl(a, EPOLL_CTL_ADD, ev_fd, &ev);
	expect(maybe_watched(s) == 0, "a socket is not watched because another descriptor is");
	epoll_ctl(b, EPOLL_CTL_ADD, s, &ev);
	expect(maybe_watched(s) == 1, "a socket the second epoll set watches is watched");
	epoll_ctl(b, EPOLL_CTL_DEL, s, NULL);
	expect(maybe_watched(s) == 0, "a socket taken out of its epoll set is not watched");
	for (i = 0; i < 300; i++)
		extra[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	expect(maybe_watched(s) == 1, "past the scan limit a socket counts as watched");
	for (i = 0; i < 300; i++)
		close(extra[i]);
	expect(maybe_watched(s) == 1, "and the process's later sockets too, without looking again");
	printf("%d checks, %d failed\n", checks, failed);
	return failed != 0;
}
