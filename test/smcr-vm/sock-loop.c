/*
 * sock-loop: opens TCP sockets the ways runtimes do and counts which came back as SMC sockets.
 * Every combination of family (AF_INET, AF_INET6), flags (none, SOCK_NONBLOCK, SOCK_CLOEXEC, both:
 * Go always passes both; CPython, Rust's std and libuv add SOCK_CLOEXEC) and protocol (0,
 * IPPROTO_TCP) is tried in turn, round after round, until the file STOP exists or ROUNDS rounds ran.
 * A socket counts as SMC when the kernel says so: SO_PROTOCOL IPPROTO_SMC (the BPF program's
 * IPPROTO_SMC socket) or SO_DOMAIN AF_SMC (the preload library's). Prints one JSON line:
 *   {"rounds":N,"sockets":N,"smc":N,"tcp":N,"failed":N,"combos":[{"family":..,"flags":..,"protocol":..,"smc":N,"tcp":N}]}
 * Dynamically linked on purpose: under LD_PRELOAD it is a program the preload library reaches.
 * Usage: sock-loop ROUNDS [STOP]
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef AF_SMC
#define AF_SMC 43
#endif
#define IPPROTO_SMC_NUM 256

struct combo {
	int family, flags, protocol;
	unsigned long smc, tcp;
};

static const char *flag_name(int flags)
{
	switch (flags) {
	case 0:
		return "";
	case SOCK_NONBLOCK:
		return "SOCK_NONBLOCK";
	case SOCK_CLOEXEC:
		return "SOCK_CLOEXEC";
	default:
		return "SOCK_NONBLOCK|SOCK_CLOEXEC";
	}
}

int main(int argc, char **argv)
{
	static const int families[] = {AF_INET, AF_INET6};
	static const int flagsets[] = {0, SOCK_NONBLOCK, SOCK_CLOEXEC, SOCK_NONBLOCK | SOCK_CLOEXEC};
	static const int protocols[] = {0, IPPROTO_TCP};
	struct combo combos[16];
	unsigned long rounds = 0, max = argc > 1 ? strtoul(argv[1], NULL, 10) : 1, failed = 0, smc = 0, tcp = 0;
	const char *stop = argc > 2 ? argv[2] : NULL;
	int n = 0, i, j, k;
	for (i = 0; i < 2; i++)
		for (j = 0; j < 4; j++)
			for (k = 0; k < 2; k++)
				combos[n++] = (struct combo){families[i], flagsets[j], protocols[k], 0, 0};
	while (rounds < max && !(stop && access(stop, F_OK) == 0)) {
		for (i = 0; i < n; i++) {
			struct combo *c = &combos[i];
			int fd = socket(c->family, SOCK_STREAM | c->flags, c->protocol), domain = 0, proto = 0;
			socklen_t len = sizeof(int);
			if (fd < 0) {
				failed++;
				continue;
			}
			getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len);
			len = sizeof(int);
			getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len);
			if (domain == AF_SMC || proto == IPPROTO_SMC_NUM) {
				c->smc++;
				smc++;
			} else {
				c->tcp++;
				tcp++;
			}
			close(fd);
		}
		rounds++;
	}
	printf("{\"rounds\":%lu,\"sockets\":%lu,\"smc\":%lu,\"tcp\":%lu,\"failed\":%lu,\"combos\":[", rounds, smc + tcp, smc, tcp,
	       failed);
	for (i = 0; i < n; i++)
		printf("%s{\"family\":\"%s\",\"flags\":\"%s\",\"protocol\":%d,\"smc\":%lu,\"tcp\":%lu}", i ? "," : "",
		       combos[i].family == AF_INET ? "AF_INET" : "AF_INET6", flag_name(combos[i].flags), combos[i].protocol,
		       combos[i].smc, combos[i].tcp);
	puts("]}");
	return 0;
}
