/* What the preload library's swap carries to the new socket (#99), checked on this machine's kernel,
 * which has no AF_SMC: the library is built with PRELOAD_TEST_FAMILY, so the selection puts a new TCP
 * socket where it would put an AF_SMC one, through the same carry() (the SMC VM suites run the real
 * AF_SMC swap under nginx, redis and the rest). A swap shows as a new inode behind the descriptor.
 * Built a second time with PRELOAD_TEST_NO_CARRY (a swap that makes nothing again, as before #99),
 * it must fail as nginx did: an upstream socket registered in epoll before connect() never reports
 * (`make check` runs both). Prints "N checks, 0 failed" as test/unit.c does. */
#include "../preload/smc_preload.c" /* record.c is linked beside it */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <sys/wait.h>

#include "expect.h"

/* A listener made with libc's own calls (the library's would be swapped too): its port. */
static int server(struct sockaddr_in *addr, int *port)
{
	socklen_t len = sizeof(*addr);
	int fd = next_socket()(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || next_bind()(fd, (struct sockaddr *)addr, sizeof(*addr)) || next_listen()(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)addr, &len))
		return -1;
	*port = ntohs(addr->sin_port);
	return fd;
}

static int free_port(void)
{
	struct sockaddr_in a;
	int port = 0, fd = server(&a, &port);
	next_close()(fd);
	return port;
}

static struct sockaddr_in sel, excl; /* a selected destination, an excluded one */
static int sel_fd, excl_fd, listen_port;

/* Connects fd to `to` and waits for it, whether blocking or not. */
static int connect_wait(int fd, const struct sockaddr_in *to)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int err = 0;
	socklen_t l = sizeof(err);
	if (connect(fd, (const struct sockaddr *)to, sizeof(*to)) == 0)
		return 0;
	if (errno != EINPROGRESS || poll(&p, 1, 2000) != 1)
		return -1;
	return getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) || err ? -1 : 0;
}

/* The connection the listener holds for the client: what it reads. */
static int server_reads(int listener, const char *want)
{
	char buf[32] = {0};
	size_t n = strlen(want);
	int c = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	int ok = c >= 0 && (n == 0 || (recv(c, buf, n, MSG_WAITALL) == (ssize_t)n && !strcmp(buf, want)));
	next_close()(c);
	return ok;
}

static void epoll_before_connect(void)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int ep = epoll_create1(EPOLL_CLOEXEC), n;
	ino_t before = inode_of(s);
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.u64 = 0xfeed};
	struct epoll_event got[4];
	epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
	/* As nginx's ngx_event_connect_peer: added, then connect(), then wait for EPOLLOUT. */
	if (connect(s, (struct sockaddr *)&sel, sizeof(sel)) && errno != EINPROGRESS)
		expect(0, "set-up: a non-blocking connect to the selected listener");
	expect(inode_of(s) != before, "a selected destination swaps the socket (a new inode)");
	n = epoll_wait(ep, got, 4, 2000);
	expect(n == 1 && got[0].data.u64 == 0xfeed && (got[0].events & EPOLLOUT),
	       "an epoll registration made before connect() reports the connection, with its data");
	expect(send(s, "hello", 5, 0) == 5 && server_reads(sel_fd, "hello"), "the bytes reach the server");
	close(s);
	close(ep);
}

static void options_before_connect(void)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, tos = 0x28, rcv = 65536;
	int v[6] = {0}, w[6] = {0};
	char cc[16] = {0}, cc2[16] = {0};
	socklen_t l;
	ino_t before = inode_of(s);
	expect(setsockopt(s, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) == 0 &&
		       setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)) == 0 &&
		       setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0 &&
		       setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) == 0 &&
		       setsockopt(s, IPPROTO_TCP, TCP_CONGESTION, "reno", 4) == 0,
	       "set-up: IP_TOS, SO_RCVBUF, TCP_NODELAY, SO_KEEPALIVE, TCP_CONGESTION set");
	const int lv[5][2] = {{IPPROTO_IP, IP_TOS},
			      {SOL_SOCKET, SO_RCVBUF},
			      {IPPROTO_TCP, TCP_NODELAY},
			      {SOL_SOCKET, SO_KEEPALIVE},
			      {SOL_SOCKET, SO_RCVLOWAT}};
	for (int i = 0; i < 5; i++) {
		l = sizeof(int);
		getsockopt(s, lv[i][0], lv[i][1], &v[i], &l);
	}
	l = sizeof(cc);
	getsockopt(s, IPPROTO_TCP, TCP_CONGESTION, cc, &l);
	expect(connect_wait(s, &sel) == 0, "set-up: connected");
	expect(inode_of(s) != before, "the socket was swapped");
	for (int i = 0; i < 5; i++) {
		l = sizeof(int);
		getsockopt(s, lv[i][0], lv[i][1], &w[i], &l);
	}
	l = sizeof(cc2);
	getsockopt(s, IPPROTO_TCP, TCP_CONGESTION, cc2, &l);
	expect(!memcmp(v, w, sizeof(v)) && v[0] == tos && v[2] == 1,
	       "every option set before connect() reads back the same after the swap (IP_TOS, SO_RCVBUF, "
	       "TCP_NODELAY, SO_KEEPALIVE)");
	expect(!strcmp(cc, "reno") && !strcmp(cc2, "reno"), "TCP_CONGESTION is carried");
	expect(send(s, "opts", 4, 0) == 4 && server_reads(sel_fd, "opts"), "the bytes reach the server");
	close(s);
}

static void flags_before_connect(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0), sig = 0, fl, fdfl;
	struct f_owner_ex own = {.type = F_OWNER_PID, .pid = getpid()}, own2 = {0};
	ino_t before = inode_of(s);
	fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
	fcntl(s, F_SETFD, FD_CLOEXEC);
	fcntl(s, F_SETOWN_EX, &own);
	fcntl(s, F_SETSIG, SIGURG);
	expect(connect_wait(s, &sel) == 0, "set-up: connected");
	expect(inode_of(s) != before, "the socket was swapped");
	fl = fcntl(s, F_GETFL);
	fdfl = fcntl(s, F_GETFD);
	fcntl(s, F_GETOWN_EX, &own2);
	sig = fcntl(s, F_GETSIG);
	expect((fl & O_NONBLOCK) && (fdfl & FD_CLOEXEC) && own2.pid == getpid() && sig == SIGURG,
	       "O_NONBLOCK, FD_CLOEXEC, the owner (F_SETOWN_EX) and the signal (F_SETSIG) are carried");
	server_reads(sel_fd, "");
	close(s);
}

/* nginx's and redis's default servers: 0.0.0.0:P, then [::]:P with IPV6_V6ONLY, both selected. */
static void v6only_listeners(void)
{
	struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)listen_port)};
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)listen_port)};
	int one = 1, v = 0, s4 = socket(AF_INET, SOCK_STREAM, 0), s6 = socket(AF_INET6, SOCK_STREAM, 0);
	socklen_t l = sizeof(v);
	ino_t before = inode_of(s6);
	if (s6 < 0) {
		printf("note: no IPv6 here, the IPV6_V6ONLY check did not run\n");
		close(s4);
		return;
	}
	setsockopt(s4, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(s6, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(s6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	expect(bind(s4, (struct sockaddr *)&a4, sizeof(a4)) == 0 && listen(s4, 8) == 0,
	       "set-up: 0.0.0.0 listener");
	expect(bind(s6, (struct sockaddr *)&a6, sizeof(a6)) == 0 && listen(s6, 8) == 0,
	       "[::] with IPV6_V6ONLY binds beside 0.0.0.0 on the same port (nginx's and redis's default)");
	expect(inode_of(s6) != before, "the selected [::] listener was swapped");
	expect(getsockopt(s6, IPPROTO_IPV6, IPV6_V6ONLY, &v, &l) == 0 && v == 1, "IPV6_V6ONLY is carried");
	close(s4);
	close(s6);
}

/* nginx's proxy_bind: IP_BIND_ADDRESS_NO_PORT, bind(address, port 0), connect(). */
static void proxy_bind(void)
{
	struct sockaddr_in src = {.sin_family = AF_INET}, local, peer;
	socklen_t l = sizeof(local), pl = sizeof(peer);
	int one = 1, s = socket(AF_INET, SOCK_STREAM, 0), c;
	ino_t before = inode_of(s);
	src.sin_addr.s_addr = htonl(0x7f000002); /* 127.0.0.2 */
	setsockopt(s, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	expect(bind(s, (struct sockaddr *)&src, sizeof(src)) == 0, "set-up: bind to 127.0.0.2, port 0");
	expect(connect_wait(s, &sel) == 0, "set-up: connected");
	expect(inode_of(s) != before, "a bound client to a selected destination is swapped");
	getsockname(s, (struct sockaddr *)&local, &l);
	c = accept4(sel_fd, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC);
	expect(local.sin_addr.s_addr == src.sin_addr.s_addr && c >= 0 && peer.sin_addr.s_addr == src.sin_addr.s_addr,
	       "its source address (proxy_bind) is carried: the server sees 127.0.0.2");
	next_close()(c);
	close(s);
}

/* One socket that cannot be carried: it stays TCP, connects, and is counted under `why`. */
static void stays(int s, int why, const char *what)
{
	ino_t before = inode_of(s);
	unsigned long was = kept[why];
	char msg[200];
	expect(connect_wait(s, &sel) == 0, "set-up: connected");
	snprintf(msg, sizeof(msg), "%s: the socket stays as it was (TCP) and is counted", what);
	expect(inode_of(s) == before && kept[why] == was + 1, msg);
	server_reads(sel_fd, "");
}

static void uncarried(void)
{
	int s, d, sv[2];
	struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = 1};
	char byte = 0;
	struct iovec io = {.iov_base = &byte, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	pid_t pid;

	s = socket(AF_INET, SOCK_STREAM, 0);
	d = dup(s);
	stays(s, KEEP_DUP, "duplicated with dup()");
	close(d);
	close(s);

	s = socket(AF_INET, SOCK_STREAM, 0);
	d = fcntl(s, F_DUPFD_CLOEXEC, 100);
	stays(s, KEEP_DUP, "duplicated with F_DUPFD_CLOEXEC");
	close(d);
	close(s);

	s = socket(AF_INET, SOCK_STREAM, 0);
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	memset(&u, 0, sizeof(u));
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &s, sizeof(int));
	expect(sendmsg(sv[0], &m, 0) == 1, "set-up: the descriptor sent over a Unix socket");
	stays(s, KEEP_SENT, "sent with SCM_RIGHTS");
	close(sv[0]);
	close(sv[1]);
	close(s);

	s = socket(AF_INET, SOCK_STREAM, 0);
	pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	stays(s, KEEP_FORK, "shared by fork()");
	close(s);

	/* A registration made past the library (a raw system call), in an epoll instance it saw made. */
	s = socket(AF_INET, SOCK_STREAM, 0);
	d = epoll_create1(EPOLL_CLOEXEC);
	syscall(SYS_epoll_ctl, d, EPOLL_CTL_ADD, s, &ev);
	{
		struct kcmp_epoll_slot slot = {.efd = (__u32)d, .tfd = (__u32)s};
		if (syscall(SYS_kcmp, getpid(), getpid(), KCMP_EPOLL_TFD, s, &slot) != 0)
			printf("note: kcmp(KCMP_EPOLL_TFD) unavailable here (%s): unseen registrations are not "
			       "checked\n",
			       strerror(errno));
		else
			stays(s, KEEP_UNSEEN, "in an epoll set the library did not see it added to");
	}
	close(d);
	close(s);

	/* A descriptor closed past the library, its number reused by a socket made past it. */
	s = socket(AF_INET, SOCK_STREAM, 0);
	syscall(SYS_close, s);
	d = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
	if (d == s)
		stays(d, KEEP_UNKNOWN, "a socket the library did not see made, at a number it had a record for");
	close(d);
}

/* A destination outside the selection: the socket is never swapped, its registration untouched. */
static void excluded(void)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), ep = epoll_create1(0), n;
	unsigned long total = 0;
	struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = 7}, got;
	ino_t before = inode_of(s);
	for (int i = 0; i < KEEP_NREASONS; i++)
		total += kept[i];
	epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
	connect(s, (struct sockaddr *)&excl, sizeof(excl));
	n = epoll_wait(ep, &got, 1, 2000);
	for (int i = 0; i < KEEP_NREASONS; i++)
		total -= kept[i];
	expect(inode_of(s) == before && n == 1 && got.data.u64 == 7 && total == 0,
	       "an excluded destination keeps the socket the program made, uncounted");
	server_reads(excl_fd, "");
	close(s);
	close(ep);
}

static int racing_stop;

/* Makes and closes sockets until told to stop: the records' lock is taken all the time. */
static void *socket_racer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&racing_stop, __ATOMIC_ACQUIRE))
		close(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	return NULL;
}

/* fork() while other threads make sockets, the child making one before it exits, as a threaded
 * program's child does before exec: the child must never wait for a lock a parent's thread held
 * at fork() (the VM's ThreadSanitizer run hung so before the lock was held across fork). */
static void fork_while_racing(void)
{
	pthread_t t[2];
	int hung = 0;
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, socket_racer, NULL);
	for (int i = 0; i < 200 && !hung; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			int s = socket(AF_INET, SOCK_STREAM, 0);
			_exit(s >= 0 && close(s) == 0 ? 0 : 3);
		}
		int status = -1, waited = 0;
		while (waitpid(pid, &status, WNOHANG) == 0 && waited < 2000) {
			usleep(1000);
			waited++;
		}
		if (waited == 2000) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			hung = 1;
		} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			hung = 1;
	}
	__atomic_store_n(&racing_stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	expect(!hung, "200 forks while two threads make sockets: every child makes one and exits");
}

int main(void)
{
	char text[160];
	setvbuf(stdout, NULL, _IONBF, 0);
	sel_fd = server(&sel, &(int){0});
	excl_fd = server(&excl, &(int){0});
	listen_port = free_port();
	expect(sel_fd >= 0 && excl_fd >= 0 && listen_port > 0, "set-up: two listeners on 127.0.0.1");
	snprintf(text, sizeof(text), "nets=127.0.0.0/8;connect=%d;listen=%d", ntohs(sel.sin_port), listen_port);
	setenv("ERDMA_SMCR_SELECT", text, 1);

	epoll_before_connect();
	options_before_connect();
	flags_before_connect();
	v6only_listeners();
	proxy_bind();
	uncarried();
	excluded();
	fork_while_racing();
	printf("%d checks, %d failed\n", checks, failed);
	return failed != 0;
}
