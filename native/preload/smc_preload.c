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
 * loopback-ism it becomes SMC-D), and the agent counts such fallbacks apart, as expected (#85).
 *
 * The selection (#93, src/selection.h): with ERDMA_SMCR_SELECT set (the webhook sets it), socket()
 * gives the program the TCP socket it asked for, and only a connection to a destination inside the
 * selection, or a listener on a port inside it, becomes SMC before its first packet: connect(),
 * bind() and listen() put an AF_SMC socket in the place of that one (carry()). Every other
 * connection is plain TCP from its SYN and costs nothing more: no AF_SMC socket is made for it.
 * Without ERDMA_SMCR_SELECT every socket is SMC from socket(); a selection that does not parse is
 * written once to stderr and selects nothing (every socket TCP: the safe side).
 *
 * A swapped socket is a new open file (#99). What the program built on the old one belongs to that
 * file, and dup3() of a new socket over the descriptor keeps only its number. nginx registers an
 * upstream socket in its epoll set before connect() (ngx_event_connect_peer), as Envoy and Netty's
 * epoll transport do; nginx and redis set IPV6_V6ONLY before bind(). So from socket() until its
 * connect(), bind() or listen() the library records, per socket (record.c): every setsockopt() the
 * kernel accepted, in order, with its value; every epoll set it was added to, with its events and
 * data; a bind() to port 0 under IP_BIND_ADDRESS_NO_PORT (nginx's proxy_bind). carry() makes all of
 * it again on the new socket, in the same order, with the file status flags (O_NONBLOCK, O_ASYNC),
 * the descriptor flag (FD_CLOEXEC), the owner and signal (F_SETOWN_EX, F_SETSIG), and adds it to
 * each epoll set after dup3(). A socket whose state it cannot carry keeps the kind it was made as,
 * and is counted (one line on stderr for the first of each reason; the agent counts the connection
 * as plain TCP): its descriptor duplicated (dup, dup2, dup3, F_DUPFD) or sent (SCM_RIGHTS), a fork()
 * since socket(), an epoll registration the library did not see (checked with kcmp() against the
 * epoll instances it saw made, where the kernel and seccomp allow kcmp), an option the new socket
 * refuses (SO_REUSEPORT on AF_SMC), a port bound before connect(). docs/support-matrix.md lists them.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "record.h"
#include "selection.h"

#ifndef AF_SMC
#define AF_SMC 43
#endif
/* linux/smc.h: the protocol of an AF_SMC socket names the address family of its TCP side. */
#define SMCPROTO_SMC 0
#define SMCPROTO_SMC6 1
#define SOCK_TYPE_MASK 0xf
#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

/* The family of the socket the selection puts in place: AF_SMC. The host tests (native/test/
 * preload_carry.c, on a kernel without SMC) build the library with PRELOAD_TEST_FAMILY=AF_INET, so
 * that the swap runs with a TCP socket in place of AF_SMC's and what it carries can be checked. */
#ifdef PRELOAD_TEST_FAMILY
#define SWAP_FAMILY(domain) (domain)
#define SWAP_PROTOCOL(domain) ((void)(domain), IPPROTO_TCP)
#else
#define SWAP_FAMILY(domain) ((void)(domain), AF_SMC)
#define SWAP_PROTOCOL(domain) ((domain) == AF_INET6 ? SMCPROTO_SMC6 : SMCPROTO_SMC)
#endif

/* Built with -fvisibility=hidden: only what we interpose is exported. */
#define PUBLIC __attribute__((visibility("default")))

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

/* Each libc function the library both interposes and calls itself: its own calls must reach libc's. */
#define NEXT(type, name)                             \
	static type next_##name(void)                \
	{                                            \
		static void *slot;                   \
		return (type)next_sym(&slot, #name); \
	}
typedef int (*socket_fn)(int, int, int);
typedef int (*setsockopt_fn)(int, int, int, const void *, socklen_t);
typedef int (*addr_fn)(int, const struct sockaddr *, socklen_t);
typedef int (*listen_fn)(int, int);
typedef int (*close_fn)(int);
typedef int (*dup_fn)(int);
typedef int (*dup2_fn)(int, int);
typedef int (*dup3_fn)(int, int, int);
typedef int (*fcntl_fn)(int, int, ...);
typedef int (*epoll_create_fn)(int);
typedef int (*epoll_ctl_fn)(int, int, int, struct epoll_event *);
typedef ssize_t (*sendmsg_fn)(int, const struct msghdr *, int);
typedef int (*sendmmsg_fn)(int, struct mmsghdr *, unsigned int, int);
NEXT(socket_fn, socket)
NEXT(setsockopt_fn, setsockopt)
NEXT(addr_fn, connect)
NEXT(addr_fn, bind)
NEXT(listen_fn, listen)
NEXT(close_fn, close)
NEXT(dup_fn, dup)
NEXT(dup2_fn, dup2)
NEXT(dup3_fn, dup3)
NEXT(fcntl_fn, fcntl)
NEXT(fcntl_fn, fcntl64)
NEXT(epoll_create_fn, epoll_create)
NEXT(epoll_create_fn, epoll_create1)
NEXT(epoll_ctl_fn, epoll_ctl)
NEXT(sendmsg_fn, sendmsg)
NEXT(sendmmsg_fn, sendmmsg)

static const struct selection *selection(void);

/* ------------------------------------------------------------------------------------------------
 * What stays as it was made, and why: counted per process, the first of each reason on stderr. */

static unsigned long kept[KEEP_NREASONS];

static const char *const KEEP_WHY[KEEP_NREASONS] = {
	[KEEP_NONE] = "",
	[KEEP_DUP] = "its descriptor was duplicated (dup, dup2, dup3, F_DUPFD)",
	[KEEP_SENT] = "its descriptor was sent to another process (SCM_RIGHTS)",
	[KEEP_FORK] = "a fork() shares it with another process (it has no FD_CLOEXEC)",
	[KEEP_UNSEEN] = "it is in an epoll set the library did not see it added to (or removed from)",
	[KEEP_OPTION] = "the new socket refuses an option the program set",
	[KEEP_BOUND] = "it was bound to a port before",
	[KEEP_UNKNOWN] = "the library did not see it made",
	[KEEP_FULL] = "it holds more options or epoll sets than the library records",
	[KEEP_FAILED] = "the new socket could not be made or put in its place",
};

static void count_kept(int why, int level, int name)
{
	if (why <= KEEP_NONE || why >= KEEP_NREASONS)
		return;
	if (__atomic_add_fetch(&kept[why], 1, __ATOMIC_RELAXED) == 1) {
		if (why == KEEP_OPTION)
			dprintf(2, "libsmc-preload: a socket could not be swapped and keeps the kind it was "
				   "made as: %s (level %d, option %d); counted, said once\n",
				KEEP_WHY[why], level, name);
		else
			dprintf(2, "libsmc-preload: a socket could not be swapped and keeps the kind it was "
				   "made as: %s; counted, said once\n",
				KEEP_WHY[why]);
	}
}

/* ------------------------------------------------------------------------------------------------
 * The swap. */

/* The port fd is bound to, 0 when none (an unbound socket, or one bound under
 * IP_BIND_ADDRESS_NO_PORT, whose port comes with connect()). */
static int bound_port(int fd)
{
	struct sockaddr_storage local;
	socklen_t len = sizeof(local);
	memset(&local, 0, sizeof(local));
	if (getsockname(fd, (struct sockaddr *)&local, &len))
		return 0;
	if (local.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&local)->sin_port);
	if (local.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&local)->sin6_port);
	return 0;
}

/* A socket with FD_CLOEXEC made before a fork() is the parent's alone past the child's exec: the
 * children of threaded programs fork and exec while other threads make sockets (the VM's
 * preload_threads: SO_REUSEPORT on such a socket must still get its TCP socket back). One without
 * it, a child keeps: that one stays as it is. */
static int cloexec(int fd)
{
	int fl = next_fcntl()(fd, F_GETFD);
	return fl >= 0 && (fl & FD_CLOEXEC);
}

static ino_t inode_of(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

/* Checks r's epoll registrations against the kernel's: a recorded set whose instance is gone is
 * dropped (its registration went with it); then, where kcmp(KCMP_EPOLL_TFD) answers, every epoll
 * instance the library saw made must hold fd exactly when r says so. KEEP_UNSEEN when not. */
static int check_epoll(int fd, struct rec *r)
{
	int known[64], n, i, j;
	pid_t pid = getpid();
	for (i = 0; i < r->neps;)
		if (inode_of(r->eps[i].epfd) != r->eps[i].ino)
			r->eps[i] = r->eps[--r->neps];
		else
			i++;
	rec_lock();
	n = rec_epoll_instances(known, (int)(sizeof(known) / sizeof(known[0])));
	rec_unlock();
	for (i = 0; i < n; i++) {
		struct kcmp_epoll_slot slot = {.efd = (__u32)known[i], .tfd = (__u32)fd, .toff = 0};
		long k = syscall(SYS_kcmp, pid, pid, KCMP_EPOLL_TFD, fd, &slot);
		int recorded = 0;
		if (k < 0 && errno != ENOENT) {
			if (errno == EBADF || errno == EINVAL)
				continue; /* closed, or no longer an epoll instance */
			return KEEP_NONE; /* ENOSYS, EPERM (seccomp): the records are what we know */
		}
		for (j = 0; j < r->neps; j++)
			recorded |= r->eps[j].epfd == known[i];
		if ((k == 0) != recorded)
			return KEEP_UNSEEN;
	}
	return KEEP_NONE;
}

/* Makes a socket (domain, protocol) with everything r says the program built on fd, puts it in fd's
 * place and adds it to fd's epoll sets. KEEP_NONE when done; else fd is as it was, and why not. */
static int replace(int fd, struct rec *r, int domain, int protocol, int *opt)
{
	struct f_owner_ex owner = {0};
	int fl = next_fcntl()(fd, F_GETFL), fdfl = next_fcntl()(fd, F_GETFD);
	int sig = next_fcntl()(fd, F_GETSIG), other, i, nopts = r->nopts, neps = r->neps;
	if (fl < 0 || fdfl < 0 || next_fcntl()(fd, F_GETOWN_EX, &owner) < 0)
		return KEEP_FAILED;
	other = next_socket()(domain, SOCK_STREAM | SOCK_CLOEXEC, protocol);
	if (other < 0)
		return KEEP_FAILED;
#ifdef PRELOAD_TEST_NO_CARRY
	/* The negative control of the host tests: a swap that makes nothing again, as before #99. */
	nopts = neps = 0;
#endif
	for (i = 0; i < nopts; i++) {
		struct rec_opt *o = r->opts[i];
		if (next_setsockopt()(other, o->level, o->name, o->val, o->len)) {
			opt[0] = o->level;
			opt[1] = o->name;
			next_close()(other);
			return KEEP_OPTION;
		}
	}
	if ((r->boundlen && next_bind()(other, (struct sockaddr *)&r->bound, r->boundlen)) ||
	    next_fcntl()(other, F_SETFL, fl) ||
	    (owner.pid && next_fcntl()(other, F_SETOWN_EX, &owner)) ||
	    (sig > 0 && next_fcntl()(other, F_SETSIG, sig)) ||
	    next_dup3()(other, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
		next_close()(other);
		return KEEP_FAILED;
	}
	next_close()(other);
	/* The old file left its epoll sets as it closed; the new one joins them, with the program's
	 * events and data. Readiness is polled again as epoll_wait() reports, so nothing stale is said. */
	for (i = 0; i < neps; i++)
		if (next_epoll_ctl()(r->eps[i].epfd, EPOLL_CTL_ADD, fd, &r->eps[i].ev))
			dprintf(2, "libsmc-preload: adding fd %d to epoll %d again after its swap: %s\n", fd,
				r->eps[i].epfd, strerror(errno));
	return KEEP_NONE;
}

#define NOT_OPEN (-1)

/* Puts a socket (domain, protocol) in the place of the socket fd, not yet connected, carrying what
 * the program built on it (see the top of the file). Its record is settled either way. 0 when done,
 * -1 when fd stays as it is (counted). */
static int carry(int fd, int domain, int protocol)
{
	struct rec *r;
	int why, opt[2] = {0, 0}, saved = errno;
	rec_lock();
	r = rec_take(fd);
	rec_unlock();
	if (!r && bound_port(fd))
		why = NOT_OPEN; /* connected, or connecting: nothing to decide, nothing to count */
	else if (!r || inode_of(fd) != r->ino)
		why = KEEP_UNKNOWN;
	else if (r->keep)
		why = r->keep;
	else if (r->gen != __atomic_load_n(&rec_generation, __ATOMIC_ACQUIRE) && !cloexec(fd))
		why = KEEP_FORK;
	else if (bound_port(fd))
		why = KEEP_BOUND;
	else if ((why = check_epoll(fd, r)) == KEEP_NONE)
		why = replace(fd, r, domain, protocol, opt);
	rec_free(r);
	count_kept(why, opt[0], opt[1]);
	errno = saved;
	return why == KEEP_NONE ? 0 : -1;
}

/* fd's record is settled: the socket stays what it is. */
static void settle(int fd)
{
	if (!rec_maybe(fd))
		return;
	rec_lock();
	rec_free(rec_take(fd));
	rec_unlock();
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
	return carry(fd, family, IPPROTO_TCP);
}

/* An AF_SMC socket in the place of the TCP socket fd, when it is one (the selection chose SMC for
 * it). Not a TCP socket (already AF_SMC, a Unix socket): nothing to do, nothing counted. */
static int swap_to_smc(int fd)
{
	int domain = 0, protocol = 0;
	socklen_t l = sizeof(domain);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l) || (domain != AF_INET && domain != AF_INET6))
		return -1;
	l = sizeof(protocol);
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &l) || protocol != IPPROTO_TCP)
		return -1;
	return carry(fd, SWAP_FAMILY(domain), SWAP_PROTOCOL(domain));
}

/* ------------------------------------------------------------------------------------------------
 * The calls that make, change, share and close a socket before its connect(), bind() or listen(). */

static int tcp_request(int domain, int type, int protocol)
{
	return (domain == AF_INET || domain == AF_INET6) && (type & SOCK_TYPE_MASK) == SOCK_STREAM &&
		(protocol == 0 || protocol == IPPROTO_TCP);
}

/* A record for the socket we just gave the program. Without memory there is none, and the socket
 * keeps its kind (KEEP_UNKNOWN at its connect()). */
static void note_socket(int fd)
{
	ino_t ino = inode_of(fd);
	rec_lock();
	rec_open(fd, ino);
	rec_unlock();
}

PUBLIC int socket(int domain, int type, int protocol)
{
	socket_fn next = next_socket();
	int fd;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	if (!tcp_request(domain, type, protocol))
		return next(domain, type, protocol);
	if (!selection()) {
		int saved = errno;
		fd = next(AF_SMC, type, domain == AF_INET6 ? SMCPROTO_SMC6 : SMCPROTO_SMC);
		if (fd >= 0) {
			note_socket(fd);
			return fd;
		}
		errno = saved;
		return next(domain, type, protocol);
	}
	fd = next(domain, type, protocol);
	if (fd >= 0)
		note_socket(fd);
	return fd;
}

/* SO_REUSEPORT: the kernel allows it on inet and unix sockets only ("net: restrict SO_REUSEPORT to
 * inet sockets", in every stable kernel since January 2025), so an AF_SMC socket answers
 * EOPNOTSUPP, and a server that asks for it (nginx, Envoy, many Go and Rust servers; CPython's
 * create_server(reuse_port=True)) would not start. Asked of an AF_SMC socket not yet bound, the
 * library first puts the TCP socket the program asked for in its place (swap_to_tcp): the server
 * runs, on TCP. The IPPROTO_SMC mechanism (6.11+) has no such limit: its sockets are inet sockets.
 * Under the selection the socket is TCP until its bind(), and a selected listener with SO_REUSEPORT
 * stays TCP (the option is refused by AF_SMC as carry() makes it again: KEEP_OPTION). */
PUBLIC int setsockopt(int fd, int level, int name, const void *value, socklen_t len)
{
	setsockopt_fn next = next_setsockopt();
	int rc;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	if (level == SOL_SOCKET && name == SO_REUSEPORT && !selection()) {
		int saved = errno, protocol = -1;
		socklen_t l = sizeof(protocol);
		if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &l) == 0 &&
		    (protocol == SMCPROTO_SMC || protocol == SMCPROTO_SMC6) &&
		    swap_to_tcp(fd, protocol == SMCPROTO_SMC6 ? AF_INET6 : AF_INET) == 0)
			settle(fd);
		errno = saved;
	}
	rc = next(fd, level, name, value, len);
	if (rc == 0 && rec_maybe(fd)) {
		struct rec *r;
		rec_lock();
		if ((r = rec_get(fd)))
			rec_option(r, level, name, value, len);
		rec_unlock();
	}
	return rc;
}

PUBLIC int close(int fd)
{
	close_fn next = next_close();
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	/* close() may be called from a signal handler: never wait for the lock there. A record left
	 * behind is never used for another socket (carry() compares inodes). */
	if (rec_maybe(fd) && rec_trylock() == 0) {
		rec_forget(fd);
		rec_unlock();
	}
	return next(fd);
}

/* The descriptor `from` now has another name: its record can no longer be carried alone. */
static void shared(int from, int why)
{
	if (!rec_maybe(from))
		return;
	rec_lock();
	rec_keep(rec_get(from), why);
	rec_unlock();
}

/* `fd` names another file now (dup2 or dup3 over it). */
static void replaced(int fd)
{
	if (!rec_maybe(fd))
		return;
	rec_lock();
	rec_forget(fd);
	rec_unlock();
}

PUBLIC int dup(int fd)
{
	dup_fn next = next_dup();
	int rc;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	rc = next(fd);
	if (rc >= 0) {
		shared(fd, KEEP_DUP);
		replaced(rc);
	}
	return rc;
}

PUBLIC int dup2(int from, int to)
{
	dup2_fn next = next_dup2();
	int rc;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	rc = next(from, to);
	if (rc >= 0 && from != to) {
		shared(from, KEEP_DUP);
		replaced(to);
	}
	return rc;
}

PUBLIC int dup3(int from, int to, int flags)
{
	dup3_fn next = next_dup3();
	int rc;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	rc = next(from, to, flags);
	if (rc >= 0) {
		shared(from, KEEP_DUP);
		replaced(to);
	}
	return rc;
}

/* fcntl() and fcntl64() (what programs built with _FILE_OFFSET_BITS=64 call): F_DUPFD and
 * F_DUPFD_CLOEXEC duplicate. The flags, owner and signal it sets are read back by carry(). Its third
 * argument is an int or a pointer: passed on as a pointer-sized value, as glibc reads it. */
static int fcntl_common(fcntl_fn next, int fd, int cmd, void *arg)
{
	int rc;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	rc = next(fd, cmd, arg);
	if (rc >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)) {
		shared(fd, KEEP_DUP);
		replaced(rc);
	}
	return rc;
}

PUBLIC int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;
	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_common(next_fcntl(), fd, cmd, arg);
}

PUBLIC int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;
	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_common(next_fcntl64(), fd, cmd, arg);
}

/* Descriptors in a message's SCM_RIGHTS go to another process (or another name in this one). */
static void sent_rights(const struct msghdr *msg)
{
	struct cmsghdr *c;
	if (!msg || !msg->msg_control || msg->msg_controllen < sizeof(struct cmsghdr))
		return;
	for (c = CMSG_FIRSTHDR((struct msghdr *)msg); c; c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0))
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			shared(fd, KEEP_SENT);
		}
	}
}

PUBLIC ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	sendmsg_fn next = next_sendmsg();
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	if (msg && msg->msg_controllen)
		sent_rights(msg);
	return next(fd, msg, flags);
}

PUBLIC int sendmmsg(int fd, struct mmsghdr *msgs, unsigned int n, int flags)
{
	sendmmsg_fn next = next_sendmmsg();
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	for (unsigned int i = 0; msgs && i < n; i++)
		if (msgs[i].msg_hdr.msg_controllen)
			sent_rights(&msgs[i].msg_hdr);
	return next(fd, msgs, n, flags);
}

PUBLIC int epoll_create(int size)
{
	epoll_create_fn next = next_epoll_create();
	int fd;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	fd = next(size);
	if (fd >= 0)
		rec_epoll_instance(fd);
	return fd;
}

PUBLIC int epoll_create1(int flags)
{
	epoll_create_fn next = next_epoll_create1();
	int fd;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	fd = next(flags);
	if (fd >= 0)
		rec_epoll_instance(fd);
	return fd;
}

/* Event loops call it for every change of interest: for a descriptor with no record it costs one or
 * two atomic loads (bench preload-calls). */
PUBLIC int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	epoll_ctl_fn next = next_epoll_ctl();
	int rc;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	rc = next(epfd, op, fd, ev);
	if (rc == 0 && rec_maybe(fd)) {
		ino_t epino = inode_of(epfd);
		struct rec *r;
		rec_lock();
		if ((r = rec_get(fd)))
			rec_epoll(r, epfd, epino, op, ev);
		rec_unlock();
	}
	return rc;
}

/* fork() shares every socket with the child: one not settled before can no longer be swapped in
 * either process. The records' lock is held across fork() (taken before, released after in both
 * processes): a thread of the parent inside socket() at that moment must not leave the child a lock
 * that no thread of its own will ever release (the child of a threaded program calls socket()
 * before exec: test/preload_carry.c's fork race). vfork() and posix_spawn() children exec at once
 * and run no handler. */
static void before_fork(void)
{
	rec_lock();
	__atomic_add_fetch(&rec_generation, 1, __ATOMIC_ACQ_REL);
}

static void after_fork(void)
{
	rec_unlock();
}

/* pthread_atfork() in a shared object links glibc's __register_atfork() (libc_nonshared.a), which
 * musl lacks: musl's loader, binding every symbol at load, would then refuse the library in every
 * Alpine program (the VM's musl sock-loop found it). So both are looked up at run time: glibc's
 * with this object's handle, as its pthread_atfork() passes it, else musl's pthread_atfork(). */
extern void *__dso_handle __attribute__((weak, visibility("hidden")));
typedef int (*register_atfork_fn)(void (*)(void), void (*)(void), void (*)(void), void *);
typedef int (*pthread_atfork_fn)(void (*)(void), void (*)(void), void (*)(void));

__attribute__((constructor)) static void preload_init(void)
{
	register_atfork_fn reg = (register_atfork_fn)dlsym(RTLD_DEFAULT, "__register_atfork");
	pthread_atfork_fn at;
	if (reg) {
		reg(before_fork, after_fork, after_fork, &__dso_handle ? __dso_handle : NULL);
		return;
	}
	at = (pthread_atfork_fn)dlsym(RTLD_DEFAULT, "pthread_atfork");
	if (at)
		at(before_fork, after_fork, after_fork);
}

/* ------------------------------------------------------------------------------------------------
 * The selection, and the calls that decide. */

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

static int inet(const struct sockaddr *sa)
{
	return sa && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6);
}

/* connect(): a destination inside the selection gets an AF_SMC socket before its SYN; every other
 * one keeps the socket as it is. */
PUBLIC int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	addr_fn next = next_connect();
	const struct selection *s;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	s = selection();
	if (s && inet(sa) && selection_connect(s, sa, len))
		swap_to_smc(fd);
	settle(fd);
	return next(fd, sa, len);
}

/* Whether the program asked for IP_BIND_ADDRESS_NO_PORT on r's socket (and left it on). */
static int no_port(const struct rec *r)
{
	int on = 0;
	for (int i = 0; i < r->nopts; i++)
		if (r->opts[i]->level == IPPROTO_IP && r->opts[i]->name == IP_BIND_ADDRESS_NO_PORT &&
		    r->opts[i]->len >= sizeof(int))
			memcpy(&on, r->opts[i]->val, sizeof(int));
	return on;
}

/* bind(): a port inside the listen selection gets an AF_SMC socket before anything can connect. A
 * bind() to port 0 under IP_BIND_ADDRESS_NO_PORT is a client's (nginx's proxy_bind): it decides
 * nothing, and its connect() makes it again on the new socket. */
PUBLIC int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	addr_fn next = next_bind();
	const struct selection *s;
	int rc;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	s = selection();
	if (s && inet(sa) && rec_maybe(fd)) {
		uint16_t port = port_of(sa, len);
		struct rec *r;
		int client = 0;
		if (port == 0) {
			rec_lock();
			client = (r = rec_get(fd)) && no_port(r) && len <= (socklen_t)sizeof(r->bound);
			rec_unlock();
		}
		if (client) {
			rc = next(fd, sa, len);
			rec_lock();
			if (rc == 0 && (r = rec_get(fd))) {
				memcpy(&r->bound, sa, len);
				r->boundlen = len;
			}
			rec_unlock();
			return rc;
		}
		if (selection_port(&s->listen, port))
			swap_to_smc(fd);
	}
	settle(fd);
	return next(fd, sa, len);
}

/* listen() on a socket never bound (the kernel picks a port): the same rule, for port 0. A socket
 * bound before (bind() decided) stays what it is. */
PUBLIC int listen(int fd, int backlog)
{
	listen_fn next = next_listen();
	const struct selection *s;
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	s = selection();
	if (s && rec_maybe(fd) && selection_port(&s->listen, 0))
		swap_to_smc(fd);
	settle(fd);
	return next(fd, backlog);
}
