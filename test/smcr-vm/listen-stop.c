/*
 * listen-stop: how a server's way of stopping its accept loop behaves on the socket a pod's
 * mechanism gives it (#88). One listener on ADDR:PORT, opened with socket(AF_INET, SOCK_STREAM, 0)
 * as a program does (the preload library and the IPPROTO_SMC program see it as any other), and:
 *
 *   shutdown  a thread blocks in accept(); another calls shutdown(fd, SHUT_RDWR)
 *   close     a thread blocks in accept(); another calls close(fd)
 *   epoll     a non-blocking listener in an epoll set, a thread in epoll_wait(); another calls
 *             shutdown(fd, SHUT_RDWR)
 *
 * It prints one line: what the socket is (domain and protocol), what shutdown() or close()
 * returned, and whether the waiting thread woke within WAIT_MS and with what. A thread that did
 * not wake is then released with a connection to the listener (or left: the process exits).
 * Usage: listen-stop MODE ADDR PORT
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 2000

static int lfd, epfd;
static volatile int woke, wake_errno, wake_events;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void done(int err, int events)
{
	pthread_mutex_lock(&mu);
	woke = 1;
	wake_errno = err;
	wake_events = events;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
}

static void *acceptor(void *arg)
{
	(void)arg;
	int c = accept(lfd, NULL, NULL);
	done(c < 0 ? errno : 0, 0);
	if (c >= 0)
		close(c);
	return NULL;
}

static void *poller(void *arg)
{
	(void)arg;
	struct epoll_event ev;
	int n = epoll_wait(epfd, &ev, 1, -1);
	done(n < 0 ? errno : 0, n > 0 ? (int)ev.events : 0);
	return NULL;
}

/* Whether the waiting thread woke within ms. */
static int wait_woke(int ms)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec += 1;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&mu);
	while (!woke)
		if (pthread_cond_timedwait(&cv, &mu, &until) == ETIMEDOUT)
			break;
	int w = woke;
	pthread_mutex_unlock(&mu);
	return w;
}

static const char *err_name(int e)
{
	switch (e) {
	case 0:
		return "-";
	case EINVAL:
		return "EINVAL";
	case ENOTCONN:
		return "ENOTCONN";
	case EBADF:
		return "EBADF";
	case ECONNABORTED:
		return "ECONNABORTED";
	case EOPNOTSUPP:
		return "EOPNOTSUPP";
	default:
		return strerrorname_np(e) ? strerrorname_np(e) : "?";
	}
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: listen-stop shutdown|close|epoll ADDR PORT\n");
		return 2;
	}
	const char *mode = argv[1];
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[3]))};
	if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1) {
		fprintf(stderr, "listen-stop: bad address %s\n", argv[2]);
		return 2;
	}
	int epoll_mode = !strcmp(mode, "epoll");
	lfd = socket(AF_INET, SOCK_STREAM | (epoll_mode ? SOCK_NONBLOCK : 0), 0);
	int one = 1;
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 16)) {
		perror("listen-stop: listener");
		return 1;
	}
	int domain = 0, proto = 0;
	socklen_t l = sizeof(domain);
	getsockopt(lfd, SOL_SOCKET, SO_DOMAIN, &domain, &l);
	l = sizeof(proto);
	getsockopt(lfd, SOL_SOCKET, SO_PROTOCOL, &proto, &l);
	/* AF_SMC (43) is the preload library's; IPPROTO_SMC (256) on AF_INET the BPF program's. */
	const char *sock = domain == 43 ? "af_smc" : proto == 256 ? "ipproto_smc" : "tcp";

	pthread_t t;
	if (epoll_mode) {
		struct epoll_event ev = {.events = EPOLLIN};
		epfd = epoll_create1(0);
		if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev)) {
			perror("listen-stop: epoll");
			return 1;
		}
		pthread_create(&t, NULL, poller, NULL);
	} else
		pthread_create(&t, NULL, acceptor, NULL);
	usleep(300 * 1000); /* the waiting thread is in accept() or epoll_wait() by now */

	int rc, call_errno;
	if (!strcmp(mode, "close"))
		rc = close(lfd);
	else
		rc = shutdown(lfd, SHUT_RDWR);
	call_errno = rc < 0 ? errno : 0;
	int w = wait_woke(WAIT_MS);
	printf("sock=%s call=%s rc=%d errno=%s woke=%d wake_errno=%s events=0x%x\n", sock,
	       !strcmp(mode, "close") ? "close" : "shutdown", rc, err_name(call_errno), w,
	       w ? err_name(wake_errno) : "-", w ? wake_events : 0);
	fflush(stdout);
	if (!w && strcmp(mode, "close")) {
		/* Released as servers that know this do it: a last connection of their own. */
		int c = socket(AF_INET, SOCK_STREAM, 0);
		connect(c, (struct sockaddr *)&a, sizeof(a));
		wait_woke(WAIT_MS);
		close(c);
	}
	_exit(0);
}
