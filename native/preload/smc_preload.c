/*
 * libsmc-preload.so: transparent SMC for unmodified, dynamically linked programs on kernels that
 * have AF_SMC but neither Alibaba's net.smc.tcp2smc nor IPPROTO_SMC (e.g. 6.1). Loaded through
 * LD_PRELOAD (the webhook adds it for pods bound to such nodes), it answers a program's
 * socket(AF_INET|AF_INET6, SOCK_STREAM, 0 or IPPROTO_TCP) with an AF_SMC socket, which behaves as a
 * TCP socket and falls back to TCP when the peer cannot do SMC. Where AF_SMC cannot be opened the
 * program gets the TCP socket it asked for. Statically linked programs (Go, busybox) never load it:
 * their connections stay on TCP, and `erdma-smcr status` says so. smc-tools' smc_run does the same.
 *
 * Unlike the kernel's mechanisms, the library sees where a socket connects: a connection to a
 * loopback address (a sidecar, a local agent) can never be SMC-R, since no RDMA device serves lo,
 * and as SMC it costs an SMC handshake that ends in a decline on every connect (bench/smc-cost.ts).
 * A connect() to such an address gives the program a plain TCP socket in place of its AF_SMC one,
 * with the same descriptor, flags and the options a client sets before connecting. A non-blocking
 * socket is swapped only when no epoll set of the process watches its descriptor yet: libuv
 * (Node.js), asyncio (CPython), mio (Rust) and Java NIO add a socket to their epoll set after
 * connect() returns EINPROGRESS, but nginx adds its upstream sockets before, and that registration
 * would not follow the new socket: such a socket keeps SMC, and falls back. The library knows
 * which descriptors are watched from the program's own epoll_ctl() and close() calls, which it
 * passes on (an O(1) look at connect). Setting
 * SMC_PRELOAD_LOOPBACK=smc keeps SMC for every loopback connection (the behaviour before).
 *
 * A kernel with loopback-ism (CONFIG_SMC_LO, upstream 6.9+; Alibaba Cloud Linux 4) serves lo: there a
 * loopback connection becomes SMC-D through shared memory and gains, so nothing is swapped. The
 * library asks the kernel once, at the first loopback connect(), with one generic netlink request
 * (SMC's system information: ISMv2 capable, which on x86 and Arm only loopback-ism makes it).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/smc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
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
typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

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

static int is_loopback(const struct sockaddr *a, socklen_t len)
{
	if (a->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in))
		return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
	if (a->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(x) || (IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127);
	}
	return 0;
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

/* Which descriptors an epoll set of this process watches, as its epoll_ctl() calls through libc
 * told us: a count per descriptor (a descriptor can be in several sets), cleared when close()
 * ends it. A count left by a descriptor closed some other way (dup2 over it, exit of a thread's
 * own table) only keeps a socket on SMC: the safe side. Descriptors past the table count as
 * watched. A registration made by a raw epoll_ctl system call is not seen: no program we know
 * connects through libc and registers that way (Go does both by raw system calls, never reaching
 * this library's connect()). */
#ifndef WATCH_TABLE /* smaller in test/preload_threads.c, to reach past it */
#define WATCH_TABLE 65536
#endif
static unsigned char watch_count[WATCH_TABLE];

typedef int (*epoll_ctl_fn)(int, int, int, struct epoll_event *);
typedef int (*close_fn)(int);
static void *next_epoll_ctl, *next_close;

/* Resolved before main(), where a signal handler may call close() (dlsym() is not safe there);
 * and at the first call when that comes first: the constructors of libraries the program links
 * run before this library's and may close descriptors. */
static void resolve_next(void)
{
	next_sym(&next_epoll_ctl, "epoll_ctl");
	next_sym(&next_close, "close");
}

__attribute__((constructor)) static void resolve_at_load(void)
{
	resolve_next();
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	int r;
	epoll_ctl_fn next = (epoll_ctl_fn)next_sym(&next_epoll_ctl, "epoll_ctl");
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	r = next(epfd, op, fd, event);
	if (r == 0 && fd >= 0 && fd < WATCH_TABLE) {
		unsigned char n = __atomic_load_n(&watch_count[fd], __ATOMIC_RELAXED);
		if (op == EPOLL_CTL_ADD && n < 255)
			__atomic_add_fetch(&watch_count[fd], 1, __ATOMIC_RELAXED);
		else if (op == EPOLL_CTL_DEL && n > 0 && n < 255)
			__atomic_sub_fetch(&watch_count[fd], 1, __ATOMIC_RELAXED);
	}
	return r;
}

int close(int fd)
{
	close_fn next = (close_fn)next_sym(&next_close, "close");
	if (fd >= 0 && fd < WATCH_TABLE)
		__atomic_store_n(&watch_count[fd], 0, __ATOMIC_RELAXED);
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(fd);
}

/* Whether an epoll set of this process may watch fd: 0 only when none does. */
static int maybe_watched(int fd)
{
	return fd < 0 || fd >= WATCH_TABLE || __atomic_load_n(&watch_count[fd], __ATOMIC_RELAXED) != 0;
}

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
	/* An event loop may have added a non-blocking socket to its epoll set before connect() (nginx
	 * does): that registration would not follow the new socket. A socket that signals (O_ASYNC)
	 * is watched in a way no table shows. */
	if (fl < 0 || fdfl < 0 || (fl & O_ASYNC) || ((fl & O_NONBLOCK) && maybe_watched(fd)))
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

/* One request/reply on a generic netlink socket; the reply's length, or -1. */
static ssize_t genl_ask(int nl, void *req, size_t len, void *buf, size_t size)
{
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	if (sendto(nl, req, len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) != (ssize_t)len)
		return -1;
	return recv(nl, buf, size, 0);
}

/* The first attribute of type `type` in [p, p+len), or NULL. */
static const struct nlattr *nla_find(const unsigned char *p, size_t len, unsigned type)
{
	size_t off = 0;
	while (off + NLA_HDRLEN <= len) {
		const struct nlattr *a = (const struct nlattr *)(p + off);
		if (a->nla_len < NLA_HDRLEN || off + a->nla_len > len)
			return NULL;
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
		off += NLA_ALIGN(a->nla_len);
	}
	return NULL;
}

/* Whether the kernel has loopback-ism: SMC_GEN_NETLINK's GET_SYS_INFO says ISMv2 capable. 0 on any
 * doubt (no family, no answer): the library then swaps as before. */
static int kernel_has_loopback_ism(void)
{
	struct {
		struct nlmsghdr h;
		struct genlmsghdr g;
		unsigned char attrs[32];
	} req;
	unsigned char buf[4096] __attribute__((aligned(4))); /* each caller its own: threads may ask at once */
	const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
	const struct nlattr *a;
	uint16_t family;
	ssize_t n;
	int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC), found = 0;
	struct timeval tv = {.tv_sec = 1};
	if (nl < 0)
		return 0;
	setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* The family's id, by name. */
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_type = GENL_ID_CTRL;
	req.h.nlmsg_flags = NLM_F_REQUEST;
	req.g.cmd = CTRL_CMD_GETFAMILY;
	req.g.version = 1;
	a = (const struct nlattr *)req.attrs;
	((struct nlattr *)req.attrs)->nla_type = CTRL_ATTR_FAMILY_NAME;
	((struct nlattr *)req.attrs)->nla_len = NLA_HDRLEN + sizeof(SMC_GENL_FAMILY_NAME);
	memcpy(req.attrs + NLA_HDRLEN, SMC_GENL_FAMILY_NAME, sizeof(SMC_GENL_FAMILY_NAME));
	req.h.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN + NLA_ALIGN(a->nla_len));
	n = genl_ask(nl, &req, req.h.nlmsg_len, buf, sizeof(buf));
	if (n < (ssize_t)(NLMSG_HDRLEN + GENL_HDRLEN) || h->nlmsg_type != GENL_ID_CTRL ||
	    !(a = nla_find(buf + NLMSG_HDRLEN + GENL_HDRLEN, (size_t)n - NLMSG_HDRLEN - GENL_HDRLEN,
			   CTRL_ATTR_FAMILY_ID)))
		goto out;
	memcpy(&family, (const unsigned char *)a + NLA_HDRLEN, sizeof(family));
	/* SMC's system information (a dump of one message). */
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_type = family;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.h.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	req.g.cmd = SMC_NETLINK_GET_SYS_INFO;
	req.g.version = SMC_GENL_FAMILY_VERSION;
	n = genl_ask(nl, &req, req.h.nlmsg_len, buf, sizeof(buf));
	if (n < (ssize_t)(NLMSG_HDRLEN + GENL_HDRLEN) || h->nlmsg_type != family)
		goto out;
	a = nla_find(buf + NLMSG_HDRLEN + GENL_HDRLEN, (size_t)n - NLMSG_HDRLEN - GENL_HDRLEN, SMC_GEN_SYS_INFO);
	if (a)
		a = nla_find((const unsigned char *)a + NLA_HDRLEN, a->nla_len - NLA_HDRLEN, SMC_NLA_SYS_IS_ISM_V2);
	found = a && a->nla_len > NLA_HDRLEN && *((const unsigned char *)a + NLA_HDRLEN) != 0;
out:
	close(nl);
	return found;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	static void *slot;
	static int keep_smc = -1;
	connect_fn next = (connect_fn)next_sym(&slot, "connect");
	int keep = __atomic_load_n(&keep_smc, __ATOMIC_RELAXED);
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	if (keep < 0) {
		const char *v = getenv("SMC_PRELOAD_LOOPBACK");
		keep = v && !strcmp(v, "smc");
		__atomic_store_n(&keep_smc, keep, __ATOMIC_RELAXED);
	}
	if (!keep && addr && is_loopback(addr, len)) {
		int saved = errno;
		/* Asked once per process, at its first loopback connect; a race asks twice, harmlessly. */
		static int lo_ism = -1;
		int has = __atomic_load_n(&lo_ism, __ATOMIC_RELAXED);
		if (has < 0) {
			has = kernel_has_loopback_ism();
			__atomic_store_n(&lo_ism, has, __ATOMIC_RELAXED);
		}
		if (!has)
			swap_to_tcp(fd, addr->sa_family);
		errno = saved;
	}
	return next(fd, addr, len);
}
