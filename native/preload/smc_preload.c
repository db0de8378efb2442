/*
 * libsmc-preload.so: transparent SMC for unmodified, dynamically linked programs on kernels that
 * have AF_SMC but neither Alibaba's net.smc.tcp2smc nor IPPROTO_SMC (e.g. 6.1). Loaded through
 * LD_PRELOAD (the webhook adds it for pods bound to such nodes), it answers a program's
 * socket(AF_INET|AF_INET6, SOCK_STREAM, 0 or IPPROTO_TCP) with an AF_SMC socket, which behaves as a
 * TCP socket and falls back to TCP when the peer cannot do SMC. Where AF_SMC cannot be opened the
 * program gets the TCP socket it asked for. Statically linked programs (Go, busybox) never load it:
 * their connections stay on TCP, and `erdma-smcr status` says so. smc-tools' smc_run does the same.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>

#ifndef AF_SMC
#define AF_SMC 43
#endif
/* linux/smc.h: the protocol of an AF_SMC socket names the address family of its TCP side. */
#define SMCPROTO_SMC 0
#define SMCPROTO_SMC6 1
#define SOCK_TYPE_MASK 0xf

typedef int (*socket_fn)(int, int, int);

int socket(int domain, int type, int protocol)
{
	static socket_fn next;
	if (!next)
		next = (socket_fn)dlsym(RTLD_NEXT, "socket");
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
