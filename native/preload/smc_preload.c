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
 *
 * The selection (#93, src/selection.h): with ERDMA_SMCR_SELECT set (the webhook sets it), socket()
 * gives the program the TCP socket it asked for, and only a connection to a destination inside the
 * selection, or a listener on a port inside it, becomes SMC before its first packet: connect(),
 * bind() and listen() swap that socket, not yet bound, for an AF_SMC one (swap_socket). Every other
 * connection is plain TCP from its SYN and costs nothing more: no AF_SMC socket is made for it (the
 * other way round, an AF_SMC socket made at socket() and swapped for TCP at connect(), cost 1.6x to
 * 2.9x a TCP connect in bench smc-cost). Without ERDMA_SMCR_SELECT every socket is SMC from
 * socket(), as before; a selection that does not parse is written once to stderr and selects
 * nothing (every socket TCP: the safe side).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "selection.h"

#ifndef AF_SMC
#define AF_SMC 43
#endif
/* linux/smc.h: the protocol of an AF_SMC socket names the address family of its TCP side. */
#define SMCPROTO_SMC 0
#define SMCPROTO_SMC6 1
#define SOCK_TYPE_MASK 0xf

/* Built with -fvisibility=hidden: only what we interpose is exported. */
#define PUBLIC __attribute__((visibility("default")))

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

static const struct selection *selection(void);

PUBLIC int socket(int domain, int type, int protocol)
{
	socket_fn next = next_socket();
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	if ((domain == AF_INET || domain == AF_INET6) && (type & SOCK_TYPE_MASK) == SOCK_STREAM &&
	    (protocol == 0 || protocol == IPPROTO_TCP) && !selection()) {
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

/* Whether fd is bound to a port (a socket bound before connect() keeps what it was bound to). */
static int bound(int fd)
{
	struct sockaddr_storage local;
	socklen_t len = sizeof(local);
	memset(&local, 0, sizeof(local));
	return getsockname(fd, (struct sockaddr *)&local, &len) == 0 &&
		((local.ss_family == AF_INET && ((struct sockaddr_in *)&local)->sin_port) ||
		 (local.ss_family == AF_INET6 && ((struct sockaddr_in6 *)&local)->sin6_port));
}

/* Puts a new socket (domain, protocol) in the place of the unconnected, unbound stream socket fd,
 * with the options and flags the program set; 0 when done, -1 when fd stays as it is (bound, or the
 * swap could not be made). */
static int swap_socket(int fd, int domain, int protocol)
{
	int fl, fdfl, other;
	unsigned i;
	socket_fn next = next_socket();
	if (!next || bound(fd))
		return -1;
	fl = fcntl(fd, F_GETFL);
	fdfl = fcntl(fd, F_GETFD);
	/* A socket that signals (O_ASYNC) is watched in a way the new one would not be. An epoll
	 * registration would not follow it either: servers set SO_REUSEPORT before bind() and watch
	 * the listener after listen(), clients watch after connect(), so none is in an epoll set here. */
	if (fl < 0 || fdfl < 0 || (fl & O_ASYNC))
		return -1;
	other = next(domain, SOCK_STREAM, protocol);
	if (other < 0)
		return -1;
	for (i = 0; i < sizeof(KEPT) / sizeof(KEPT[0]); i++) {
		char v[64];
		socklen_t vl = sizeof(v);
		if (getsockopt(fd, KEPT[i].level, KEPT[i].name, v, &vl) == 0)
			setsockopt(other, KEPT[i].level, KEPT[i].name, v, vl);
	}
	if (fcntl(other, F_SETFL, fl) < 0 || dup3(other, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
		close(other);
		return -1;
	}
	close(other);
	return 0;
}

/* The TCP socket the program asked for in the place of the AF_SMC socket fd (of `family`). */
static int swap_to_tcp(int fd, int family)
{
	int domain = 0, type = 0;
	socklen_t l = sizeof(domain);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l) || domain != AF_SMC)
		return -1;
	l = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) || type != SOCK_STREAM)
		return -1;
	return swap_socket(fd, family, IPPROTO_TCP);
}

/* An AF_SMC socket in the place of the TCP socket fd, when it is one (the selection chose SMC for
 * it). A socket with SO_REUSEPORT stays TCP: AF_SMC cannot have it (setsockopt below). */
static int swap_to_smc(int fd)
{
	int domain = 0, protocol = 0, reuse = 0;
	socklen_t l = sizeof(domain);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l) || (domain != AF_INET && domain != AF_INET6))
		return -1;
	l = sizeof(protocol);
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &l) || protocol != IPPROTO_TCP)
		return -1;
	l = sizeof(reuse);
	if (getsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &reuse, &l) == 0 && reuse)
		return -1;
	return swap_socket(fd, AF_SMC, domain == AF_INET6 ? SMCPROTO_SMC6 : SMCPROTO_SMC);
}

/* SO_REUSEPORT: the kernel allows it on inet and unix sockets only ("net: restrict SO_REUSEPORT to
 * inet sockets", in every stable kernel since January 2025), so an AF_SMC socket answers
 * EOPNOTSUPP, and a server that asks for it (nginx, Envoy, many Go and Rust servers; CPython's
 * create_server(reuse_port=True)) would not start. Asked of an AF_SMC socket not yet bound, the
 * library first puts the TCP socket the program asked for in its place (swap_to_tcp): the server
 * runs, on TCP. The IPPROTO_SMC mechanism (6.11+) has no such limit: its sockets are inet sockets. */
typedef int (*setsockopt_fn)(int, int, int, const void *, socklen_t);

PUBLIC int setsockopt(int fd, int level, int name, const void *value, socklen_t len)
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

/* The selection from ERDMA_SMCR_SELECT, read once (pthread_once: threads that race to read it wait
 * for the first): NULL when the variable is unset, every socket staying SMC. One that does not parse
 * selects nothing: every connection and listener stays TCP, and stderr says why once. */
static struct selection parsed;
static int have_selection;
static pthread_once_t selection_once = PTHREAD_ONCE_INIT;

static void read_selection(void)
{
	const char *text = getenv("ERDMA_SMCR_SELECT");
	char why[160];
	if (!text)
		return;
	if (selection_parse(text, &parsed, why, sizeof(why))) {
		memset(&parsed, 0, sizeof(parsed));
		parsed.nnets = 1; /* 0.0.0.0/32: no destination */
		parsed.nets[0].mask = 0xffffffffu;
		parsed.listen.n = parsed.listen.includes = 1; /* an empty range: no port */
		parsed.listen.r[0].lo = 1;
		fprintf(stderr, "libsmc-preload: ERDMA_SMCR_SELECT: %s: every connection stays TCP\n", why);
	}
	have_selection = 1;
}

static const struct selection *selection(void)
{
	pthread_once(&selection_once, read_selection);
	return have_selection ? &parsed : NULL;
}

/* The port a bind() or listen() address names (0 when none). */
static uint16_t port_of(const struct sockaddr *sa, socklen_t len)
{
	if (sa && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in))
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa && sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6))
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

typedef int (*addr_fn)(int, const struct sockaddr *, socklen_t);

/* connect(): a destination inside the selection gets an AF_SMC socket before its SYN. */
PUBLIC int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	static void *slot;
	addr_fn next = (addr_fn)next_sym(&slot, "connect");
	const struct selection *s;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	s = selection();
	if (s && sa && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6) && selection_connect(s, sa, len)) {
		int saved = errno;
		swap_to_smc(fd);
		errno = saved;
	}
	return next(fd, sa, len);
}

/* bind(): a port inside the listen selection gets an AF_SMC socket before anything can connect. */
PUBLIC int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	static void *slot;
	addr_fn next = (addr_fn)next_sym(&slot, "bind");
	const struct selection *s;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	s = selection();
	if (s && sa && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6) &&
	    selection_port(&s->listen, port_of(sa, len))) {
		int saved = errno;
		swap_to_smc(fd);
		errno = saved;
	}
	return next(fd, sa, len);
}

typedef int (*listen_fn)(int, int);

/* listen() on a socket never bound (the kernel picks a port): the same rule, for port 0. A socket
 * bound before (bind() decided) stays what it is. */
PUBLIC int listen(int fd, int backlog)
{
	static void *slot;
	listen_fn next = (listen_fn)next_sym(&slot, "listen");
	const struct selection *s;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	s = selection();
	if (s && selection_port(&s->listen, 0)) {
		int saved = errno;
		swap_to_smc(fd);
		errno = saved;
	}
	return next(fd, backlog);
}
