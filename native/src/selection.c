/* Parsing and matching of the SMC selection (selection.h): no I/O, no allocation, so the preload
 * library can call it from inside a program's connect(). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "selection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A decimal number of at most `max`, its end in *end; -1 when there is none or it is too large. */
static long number(const char *p, const char **end, long max)
{
	long v = 0;
	const char *q = p;
	while (*q >= '0' && *q <= '9') {
		v = v * 10 + (*q - '0');
		if (v > max)
			return -1;
		q++;
	}
	*end = q;
	return q == p ? -1 : v;
}

static int parse_ports(const char *p, const char *stop, struct sel_ports *out, char *why, size_t size)
{
	memset(out, 0, sizeof(*out));
	if (stop - p == 1 && *p == '*')
		return 0;
	while (p < stop) {
		struct sel_range r = {0, 0, 0, 0};
		const char *e;
		long lo, hi;
		if (*p == '!') {
			r.exclude = 1;
			p++;
		}
		lo = number(p, &e, 65535);
		hi = lo;
		if (lo >= 0 && e < stop && *e == '-')
			hi = number(e + 1, &e, 65535);
		if (lo < 1 || hi < lo || (e < stop && *e != ',')) {
			snprintf(why, size, "ports: \"%.*s\" is not a port (1-65535), a range N-M or either with !",
				 (int)(stop - p), p);
			return -1;
		}
		if (out->n == SEL_MAX_RANGES) {
			snprintf(why, size, "ports: more than %d items", SEL_MAX_RANGES);
			return -1;
		}
		r.lo = (__u16)lo;
		r.hi = (__u16)hi;
		out->r[out->n++] = r;
		if (!r.exclude)
			out->includes++;
		p = e < stop ? e + 1 : e;
	}
	return 0;
}

static int parse_nets(const char *p, const char *stop, struct selection *out, char *why, size_t size)
{
	out->nnets = 0;
	while (p < stop) {
		const char *comma = memchr(p, ',', (size_t)(stop - p)), *e;
		char buf[32];
		char *slash;
		struct in_addr a;
		long bits;
		size_t n;
		if (!comma)
			comma = stop;
		n = (size_t)(comma - p);
		if (n == 0 || n >= sizeof(buf))
			goto bad;
		memcpy(buf, p, n);
		buf[n] = 0;
		slash = strchr(buf, '/');
		if (!slash)
			goto bad;
		*slash = 0;
		bits = number(slash + 1, &e, 32);
		if (bits < 0 || *e || inet_pton(AF_INET, buf, &a) != 1)
			goto bad;
		if (out->nnets == SEL_MAX_NETS) {
			snprintf(why, size, "nets: more than %d networks", SEL_MAX_NETS);
			return -1;
		}
		out->nets[out->nnets].mask = bits == 0 ? 0 : htonl(0xffffffffu << (32 - bits));
		out->nets[out->nnets].addr = a.s_addr & out->nets[out->nnets].mask;
		out->nnets++;
		p = comma < stop ? comma + 1 : comma;
		continue;
	bad:
		snprintf(why, size, "nets: \"%.*s\" is not an IPv4 CIDR", (int)(comma - p), p);
		return -1;
	}
	return 0;
}

int selection_parse(const char *text, struct selection *out, char *why, size_t size)
{
	struct selection s;
	const char *p = text;
	memset(&s, 0, sizeof(s));
	while (p && *p) {
		const char *end = strchr(p, ';'), *eq;
		if (!end)
			end = p + strlen(p);
		eq = memchr(p, '=', (size_t)(end - p));
		if (!eq) {
			snprintf(why, size, "\"%.*s\" is not key=value", (int)(end - p), p);
			return -1;
		}
		if (eq - p == 4 && !strncmp(p, "nets", 4)) {
			if (parse_nets(eq + 1, end, &s, why, size))
				return -1;
		} else if (eq - p == 7 && !strncmp(p, "connect", 7)) {
			if (parse_ports(eq + 1, end, &s.connect, why, size))
				return -1;
		} else if (eq - p == 6 && !strncmp(p, "listen", 6)) {
			if (parse_ports(eq + 1, end, &s.listen, why, size))
				return -1;
		} else {
			snprintf(why, size, "unknown part \"%.*s\" (nets, connect, listen)", (int)(eq - p), p);
			return -1;
		}
		p = *end ? end + 1 : end;
	}
	*out = s;
	return 0;
}

int selection_connect(const struct selection *s, const struct sockaddr *sa, socklen_t len)
{
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		return selection_addr(s, in->sin_addr.s_addr) && selection_port(&s->connect, ntohs(in->sin_port));
	}
	if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		uint32_t v4;
		if (!IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
			return 0;
		memcpy(&v4, &in6->sin6_addr.s6_addr[12], 4);
		return selection_addr(s, v4) && selection_port(&s->connect, ntohs(in6->sin6_port));
	}
	return 0;
}
