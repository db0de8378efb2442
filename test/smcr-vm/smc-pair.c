/* smc-pair: an AF_SMC client/server that moves data and reports how its own socket ended up,
 * read from the kernel with smc_diag (NETLINK_SOCK_DIAG, AF_SMC): "mode=SMCR" or
 * "mode=TCP fallback=0x...". Built static for the SMC-R kernel test VM.
 *
 *   smc-pair server PORT BYTES        accept one connection, read BYTES, echo them back
 *   smc-pair client ADDR PORT BYTES   connect, send BYTES, check the echo
 *
 * With SMCPAIR_HOLD=FILE the client keeps the connection open after its report until FILE
 * exists, so the connection can be inspected from outside while it is established. An IPv6
 * ADDR makes the client an IPv6 one (SMCPROTO_SMC6); SMCPAIR_V6=1 makes the server listen on
 * IPv6 (SMCPROTO_SMC6).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/smc_diag.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef AF_SMC
#define AF_SMC 43
#endif
#define SMCPROTO_SMC 0
#define SMCPROTO_SMC6 1

static void die(const char *what)
{
	fprintf(stderr, "smc-pair: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* Finds our socket (by local and peer port) among the SMC sockets of this netns. */
static int smc_mode(unsigned short lport, unsigned short rport, unsigned *fallback)
{
	struct {
		struct nlmsghdr h;
		struct smc_diag_req r;
	} req;
	char buf[32768];
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), mode = -1;
	if (fd < 0)
		die("netlink socket");
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = sizeof(req);
	req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.r.diag_family = AF_SMC;
	req.r.diag_ext = 1 << (SMC_DIAG_FALLBACK - 1);
	if (send(fd, &req, sizeof(req), 0) < 0)
		die("smc_diag request");
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h;
		if (n <= 0)
			die("smc_diag reply");
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			struct smc_diag_msg *m;
			struct rtattr *a;
			int len;
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
				close(fd);
				return mode;
			}
			m = NLMSG_DATA(h);
			if (ntohs(m->id.idiag_sport) != lport || ntohs(m->id.idiag_dport) != rport)
				continue;
			mode = m->diag_mode;
			len = h->nlmsg_len - NLMSG_LENGTH(sizeof(*m));
			for (a = (struct rtattr *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len))
				if (a->rta_type == SMC_DIAG_FALLBACK)
					*fallback = ((struct smc_diag_fallback *)RTA_DATA(a))->reason;
		}
	}
}

static void report(const char *who, int fd, long bytes)
{
	struct sockaddr_storage l, r;
	socklen_t ll = sizeof(l), rl = sizeof(r);
	unsigned fallback = 0;
	int mode;
	if (getsockname(fd, (struct sockaddr *)&l, &ll) || getpeername(fd, (struct sockaddr *)&r, &rl))
		die("getsockname");
	/* sin_port and sin6_port sit at the same offset. */
	mode = smc_mode(ntohs(((struct sockaddr_in *)&l)->sin_port), ntohs(((struct sockaddr_in *)&r)->sin_port), &fallback);
	printf("SMCPAIR %s mode=%s fallback=0x%08x bytes=%ld\n", who,
	       mode == SMC_DIAG_MODE_SMCR ? "SMCR" : mode == SMC_DIAG_MODE_FALLBACK_TCP ? "TCP" : mode == SMC_DIAG_MODE_SMCD ? "SMCD" : "unknown",
	       fallback, bytes);
	fflush(stdout);
}

static long pump(int fd, long bytes, int echo)
{
	static char buf[65536];
	long done = 0, sent = 0;
	size_t i;
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 7);
	while (done < bytes) {
		ssize_t n;
		if (!echo && sent < bytes) {
			size_t chunk = (size_t)(bytes - sent) < sizeof(buf) ? (size_t)(bytes - sent) : sizeof(buf);
			n = write(fd, buf, chunk);
			if (n < 0)
				die("write");
			sent += n;
		}
		n = read(fd, buf, sizeof(buf));
		if (n < 0)
			die("read");
		if (n == 0)
			break;
		if (echo && write(fd, buf, n) != n)
			die("echo");
		done += n;
	}
	return done;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	int fd, one = 1;
	if (argc == 4 && !strcmp(argv[1], "server")) {
		int c;
		long got;
		int v6 = getenv("SMCPAIR_V6") != NULL && getenv("SMCPAIR_V6")[0] != '\0';
		struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
		fd = socket(AF_SMC, SOCK_STREAM, v6 ? SMCPROTO_SMC6 : SMCPROTO_SMC);
		if (fd < 0)
			die("socket(AF_SMC)");
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		a.sin_port = htons((unsigned short)atoi(argv[2]));
		a6.sin6_port = a.sin_port;
		if ((v6 ? bind(fd, (struct sockaddr *)&a6, sizeof(a6)) : bind(fd, (struct sockaddr *)&a, sizeof(a))) || listen(fd, 4))
			die("bind/listen");
		printf("SMCPAIR server listening\n");
		fflush(stdout);
		c = accept(fd, NULL, NULL);
		if (c < 0)
			die("accept");
		got = pump(c, atol(argv[3]), 1);
		report("server", c, got);
		/* Both ends report while connected: wait for the client's shutdown before closing. */
		while (read(c, &one, sizeof(one)) > 0)
			;
		close(c);
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "client")) {
		long got;
		int v6 = strchr(argv[2], ':') != NULL;
		struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
		fd = socket(AF_SMC, SOCK_STREAM, v6 ? SMCPROTO_SMC6 : SMCPROTO_SMC);
		if (fd < 0)
			die("socket(AF_SMC)");
		a.sin_port = htons((unsigned short)atoi(argv[3]));
		a6.sin6_port = a.sin_port;
		if (v6 ? (inet_pton(AF_INET6, argv[2], &a6.sin6_addr) != 1 || connect(fd, (struct sockaddr *)&a6, sizeof(a6)))
		       : (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1 || connect(fd, (struct sockaddr *)&a, sizeof(a))))
			die("connect");
		got = pump(fd, atol(argv[4]), 0);
		report("client", fd, got);
		if (getenv("SMCPAIR_HOLD"))
			while (access(getenv("SMCPAIR_HOLD"), F_OK) != 0)
				usleep(50000);
		shutdown(fd, SHUT_WR);
		while (read(fd, &one, sizeof(one)) > 0)
			;
		close(fd);
		return got == atol(argv[4]) ? 0 : 1;
	}
	fputs("usage: smc-pair server PORT BYTES | client ADDR PORT BYTES\n", stderr);
	return 2;
}
