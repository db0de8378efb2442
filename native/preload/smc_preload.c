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
 * would not follow the new socket: such a socket keeps SMC, and falls back. Setting
 * SMC_PRELOAD_LOOPBACK=smc keeps SMC for every loopback connection (the behaviour before).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

static socket_fn next_socket(void)
{
	static socket_fn next;
	if (!next)
		next = (socket_fn)dlsym(RTLD_NEXT, "socket");
	return next;
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

/* Past this many open descriptors the epoll sets are not looked for: the socket keeps SMC, as if
 * watched, and so do the process's later ones (looking once was enough to know). Looking costs
 * about 0.7 µs a descriptor on our development machine (getdents and an fstat), against an SMC
 * handshake that ends in a fallback, about 240 µs in the bench's VM (bench/smc-cost.ts). */
#define EPOLL_SCAN_LIMIT 256

/* Whether the epoll descriptor epfd watches fd: its fdinfo lists each watched descriptor on a line
 * "tfd: N events: ...". */
static int epoll_watches(int epfd, int fd)
{
	char path[64], line[256];
	int found = 0, tfd;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
	f = fopen(path, "re");
	if (!f)
		return 1; /* cannot tell: as if it did */
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "tfd: %d", &tfd) == 1 && tfd == fd;
	fclose(f);
	return found;
}

/* The inode every epoll descriptor shares with eventfds, timerfds and signalfds (the kernel's one
 * anonymous inode, there for its lifetime: read once); 0 when it cannot be told. */
static int anon_inode(struct stat *anon)
{
	static struct stat known;
	static int ok;
	if (!ok) {
		int e = epoll_create1(EPOLL_CLOEXEC);
		ok = e >= 0 && fstat(e, &known) == 0;
		if (e >= 0)
			close(e);
	}
	*anon = known;
	return ok;
}

/* Whether an epoll set of this process watches fd, or that cannot be told (no /proc, too many
 * descriptors to look at): 0 only when none does. Only descriptors on the anonymous inode are read
 * further (readlink, then the fdinfo of the epoll ones). */
static int maybe_watched(int fd)
{
	static int too_many;
	struct stat anon, st;
	DIR *d;
	struct dirent *e;
	int watched = 0, seen = 0;
	if (too_many || !anon_inode(&anon) || !(d = opendir("/proc/self/fd")))
		return 1;
	while (!watched && (e = readdir(d))) {
		char link[32];
		ssize_t n;
		int other;
		if (e->d_name[0] == '.')
			continue;
		if (++seen > EPOLL_SCAN_LIMIT) {
			watched = too_many = 1;
			break;
		}
		other = atoi(e->d_name);
		if (other == fd || fstat(other, &st) || st.st_ino != anon.st_ino ||
		    st.st_dev != anon.st_dev)
			continue;
		n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = 0;
		if (!strcmp(link, "anon_inode:[eventpoll]"))
			watched = epoll_watches(other, fd);
	}
	closedir(d);
	return watched;
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

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	static connect_fn next;
	static int keep = -1;
	if (!next)
		next = (connect_fn)dlsym(RTLD_NEXT, "connect");
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	if (keep < 0) {
		const char *v = getenv("SMC_PRELOAD_LOOPBACK");
		keep = v && !strcmp(v, "smc");
	}
	if (!keep && addr && is_loopback(addr, len)) {
		int saved = errno;
		swap_to_tcp(fd, addr->sa_family);
		errno = saved;
	}
	return next(fd, addr, len);
}
