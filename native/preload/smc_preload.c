/*
 * libsmc-preload.so: transparent SMC for unmodified, dynamically linked programs on kernels that
 * have AF_SMC but neither Alibaba's net.smc.tcp2smc nor IPPROTO_SMC (e.g. 6.1). Loaded through
 * LD_PRELOAD (the webhook adds it for pods bound to such nodes), it answers a program's
 * socket(AF_INET|AF_INET6, SOCK_STREAM, 0 or IPPROTO_TCP) with an AF_SMC socket, which behaves as a
 * TCP socket and falls back to TCP when the peer cannot do SMC. Where AF_SMC cannot be opened the
 * program gets the TCP socket it asked for. Statically linked programs (Go, busybox) never load it:
 * their connections stay on TCP, and `erdma-smcr status` says so. smc-tools' smc_run does the same.
 *
 * A connection to a loopback address (a sidecar, a local agent) stays an SMC socket, as under the
 * kernel's mechanisms: it falls back to TCP in its handshake (no RDMA device serves lo; with
 * loopback-ism it becomes SMC-D), and the agent counts such fallbacks apart, as expected. Before
 * #85 the library swapped such a socket for a TCP one at connect(), which needed its own
 * close() and epoll_ctl() in every process; five rounds on 6.1 in one boot (bench smc-loopback)
 * found it no faster (0.80x to 1.38x), so it went (#85).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef AF_SMC
#define AF_SMC 43
#endif
/* linux/smc.h: the protocol of an AF_SMC socket names the address family of its TCP side. */
#define SMCPROTO_SMC 0
#define SMCPROTO_SMC6 1
#define SOCK_TYPE_MASK 0xf

typedef int (*socket_fn)(int, int, int);

/* libc's function behind ours, resolved once into *slot. Threads may race to resolve it: each gets
 * the same address, and the slot is read and written atomically (no data race, test/preload_threads.c
 * under ThreadSanitizer). */
static void *next_sym(void **slot, const char *name)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (!f) {
		f = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
	return f;
}

static socket_fn next_socket(void)
{
	static void *next;
	return (socket_fn)next_sym(&next, "socket");
}

int socket(int domain, int type, int protocol)
{
	socket_fn next = next_socket();
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	if ((domain == AF_INET || domain == AF_INET6) && (type & SOCK_TYPE_MASK) == SOCK_STREAM &&
	    (protocol == 0 || protocol == IPPROTO_TCP)) {
		int saved = errno;
		int fd = next(AF_SMC, type, domain == AF_INET6 ? SMCPROTO_SMC6 : SMCPROTO_SMC);
		if (fd >= 0)
			return fd;
		errno = saved;
	}
	return next(domain, type, protocol);
}

/* The options a client sets before connect() that the TCP socket must keep; buffer sizes are left
 * out (the kernel doubles what it is given, and reads back the doubled value). */
static const struct {
	int level, name;
} KEPT[] = {
	{SOL_SOCKET, SO_KEEPALIVE},
	{SOL_SOCKET, SO_LINGER},
	{SOL_SOCKET, SO_RCVTIMEO},
	{SOL_SOCKET, SO_SNDTIMEO},
	{SOL_SOCKET, SO_REUSEADDR},
	{SOL_SOCKET, SO_PRIORITY},
	{SOL_SOCKET, SO_MARK},
	{IPPROTO_TCP, TCP_NODELAY},
	{IPPROTO_TCP, TCP_KEEPIDLE},
	{IPPROTO_TCP, TCP_KEEPINTVL},
	{IPPROTO_TCP, TCP_KEEPCNT},
	{IPPROTO_TCP, TCP_USER_TIMEOUT},
};

/* Puts a TCP socket in the place of the unconnected, unbound AF_SMC socket fd; 0 when done, -1
 * when fd is to stay as it is (not ours, bound, or the swap could not be made). */
static int swap_to_tcp(int fd, int family)
{
	struct sockaddr_storage local;
	socklen_t len = sizeof(local);
	int domain = 0, type = 0, fl, fdfl, tcp;
	unsigned i;
	socklen_t l = sizeof(domain);
	socket_fn next = next_socket();
	if (!next || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l) || domain != AF_SMC)
		return -1;
	l = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) || type != SOCK_STREAM)
		return -1;
	/* A socket bound to a port or address before connect() keeps what it was bound to: as it is. */
	memset(&local, 0, sizeof(local));
	if (getsockname(fd, (struct sockaddr *)&local, &len) == 0 &&
	    ((local.ss_family == AF_INET && ((struct sockaddr_in *)&local)->sin_port) ||
	     (local.ss_family == AF_INET6 && ((struct sockaddr_in6 *)&local)->sin6_port)))
		return -1;
	fl = fcntl(fd, F_GETFL);
	fdfl = fcntl(fd, F_GETFD);
	/* A socket that signals (O_ASYNC) is watched in a way the new one would not be. An epoll
	 * registration would not follow it either: servers set SO_REUSEPORT before bind() and watch
	 * the listener after listen(), so none is in an epoll set here. */
	if (fl < 0 || fdfl < 0 || (fl & O_ASYNC))
		return -1;
	tcp = next(family, SOCK_STREAM, IPPROTO_TCP);
	if (tcp < 0)
		return -1;
	for (i = 0; i < sizeof(KEPT) / sizeof(KEPT[0]); i++) {
		char v[64];
		socklen_t vl = sizeof(v);
		if (getsockopt(fd, KEPT[i].level, KEPT[i].name, v, &vl) == 0)
			setsockopt(tcp, KEPT[i].level, KEPT[i].name, v, vl);
	}
	if (fcntl(tcp, F_SETFL, fl) < 0 ||
	    dup3(tcp, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
		close(tcp);
		return -1;
	}
	close(tcp);
	return 0;
}

/* SO_REUSEPORT: the kernel allows it on inet and unix sockets only ("net: restrict SO_REUSEPORT to
 * inet sockets", in every stable kernel since January 2025), so an AF_SMC socket answers
 * EOPNOTSUPP, and a server that asks for it (nginx, Envoy, many Go and Rust servers; CPython's
 * create_server(reuse_port=True)) would not start. Asked of an AF_SMC socket not yet bound, the
 * library first puts the TCP socket the program asked for in its place (swap_to_tcp): the server
 * runs, on TCP. The IPPROTO_SMC mechanism (6.11+) has no such limit: its sockets are inet sockets. */
typedef int (*setsockopt_fn)(int, int, int, const void *, socklen_t);

int setsockopt(int fd, int level, int name, const void *value, socklen_t len)
{
	static void *slot;
	setsockopt_fn next = (setsockopt_fn)next_sym(&slot, "setsockopt");
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	if (level == SOL_SOCKET && name == SO_REUSEPORT) {
		int saved = errno, protocol = -1;
		socklen_t l = sizeof(protocol);
		if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &l) == 0 &&
		    (protocol == SMCPROTO_SMC || protocol == SMCPROTO_SMC6))
			swap_to_tcp(fd, protocol == SMCPROTO_SMC6 ? AF_INET6 : AF_INET);
		errno = saved;
	}
	return next(fd, level, name, value, len);
}
