/* `erdma-smcr smc sockets|summary`: what SMC connections in a network namespace really run on,
 * from the kernel. Sockets come from smc_diag (NETLINK_SOCK_DIAG, family AF_SMC,
 * <linux/smc_diag.h>) with the connection, link group and fallback extensions (the per-netns
 * counters of `smc stats` are smc_stats.c's). Sockets are printed as they arrive and never kept: a netns with
 * 100,000 of them costs no memory; `summary` keeps only bounded counters. Only where a socket's
 * addresses are all zero (smc_diag leaves out an IPPROTO_SMC socket's) does `sockets` read the
 * netns's TCP sockets, once, 40 bytes each. */
#include "smcdiag.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/genetlink.h>
#include <linux/inet_diag.h>
#include <linux/rtnetlink.h>
#include <linux/smc.h>
#include <linux/smc_diag.h>
#include <linux/sock_diag.h>
#include "selection.h"
#include "smc_genl.h"
#include "tcp_table.h"

#ifndef AF_SMC
#define AF_SMC 43
#endif
#define ALIGN4(n) (((n) + 3u) & ~3u)

/* Socket states of net/smc/smc.h (not in the uapi headers; smc-tools uses the same values). */
static const char *state_name(unsigned s)
{
	switch (s) {
	case 1: return "ACTIVE";
	case 2: return "INIT";
	case 7: return "CLOSED";
	case 10: return "LISTEN";
	case 20: return "PEERCLOSEWAIT1";
	case 21: return "PEERCLOSEWAIT2";
	case 22: return "APPCLOSEWAIT1";
	case 23: return "APPCLOSEWAIT2";
	case 24: return "APPFINCLOSEWAIT";
	case 25: return "PEERFINCLOSEWAIT";
	case 26: return "PEERABORTWAIT";
	case 27: return "PROCESSABORT";
	default: return "UNKNOWN";
	}
}

static const char *mode_name(unsigned m)
{
	return m == SMC_DIAG_MODE_SMCR ? "SMCR" : m == SMC_DIAG_MODE_FALLBACK_TCP ? "TCP"
		: m == SMC_DIAG_MODE_SMCD					  ? "SMCD"
										  : "UNKNOWN";
}

/* The parsed reply of one socket. */
struct smc_sock {
	const struct smc_diag_msg *msg;
	int v6;
	int has_conn, has_lgr, has_fallback;
	struct smc_diag_conninfo conn;
	struct smc_diag_lgrinfo lgr;
	struct smc_diag_fallback fb;
};

static int parse_sock(const struct nlmsghdr *h, struct smc_sock *s)
{
	size_t off = NLMSG_HDRLEN + ALIGN4(sizeof(struct smc_diag_msg));
	const uint32_t *src, *dst;
	memset(s, 0, sizeof(*s));
	if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < off)
		return -1;
	s->msg = NLMSG_DATA(h);
	src = s->msg->id.idiag_src;
	dst = s->msg->id.idiag_dst;
	/* smc_diag fills idiag_src[0]/idiag_dst[0] for IPv4 AF_SMC sockets and all 16 bytes for IPv6.
	 * An IPPROTO_SMC socket (family AF_INET or AF_INET6; AF_SMC once accepted, as it keeps the
	 * listener's protocol) gets its ports and no address. */
	s->v6 = s->msg->diag_family == AF_INET6 ||
		(s->msg->diag_family == AF_SMC && (src[1] | src[2] | src[3] | dst[1] | dst[2] | dst[3]) != 0);
	while (off + sizeof(struct rtattr) <= h->nlmsg_len) {
		const struct rtattr *a = (const struct rtattr *)((const unsigned char *)h + off);
		size_t n;
		if (a->rta_len < sizeof(*a) || off + a->rta_len > h->nlmsg_len)
			return -1;
		n = a->rta_len - RTA_LENGTH(0);
		if (a->rta_type == SMC_DIAG_CONNINFO && n >= sizeof(s->conn)) {
			memcpy(&s->conn, RTA_DATA(a), sizeof(s->conn));
			s->has_conn = 1;
		} else if (a->rta_type == SMC_DIAG_LGRINFO && n >= sizeof(s->lgr)) {
			memcpy(&s->lgr, RTA_DATA(a), sizeof(s->lgr));
			s->has_lgr = 1;
		} else if (a->rta_type == SMC_DIAG_FALLBACK && n >= sizeof(s->fb)) {
			memcpy(&s->fb, RTA_DATA(a), sizeof(s->fb));
			s->has_fallback = 1;
		}
		off += ALIGN4(a->rta_len);
	}
	return 0;
}

/* Bytes through a cursor: wraps of the buffer times its size, plus the count (the kernel keeps
 * 16 bits of wraps, so this is exact up to 65,536 wraps of the buffer). */
static uint64_t cursor_bytes(const struct smc_diag_cursor *c, uint32_t size)
{
	return (uint64_t)c->wrap * size + c->count;
}

static void addr(int v6, const uint32_t *a, uint16_t port_be, char *out, size_t size)
{
	char ip[INET6_ADDRSTRLEN];
	inet_ntop(v6 ? AF_INET6 : AF_INET, a, ip, sizeof(ip));
	snprintf(out, size, v6 ? "[%s]:%u" : "%s:%u", ip, ntohs(port_be));
}

/* A NUL-terminated copy of a fixed-size kernel string, JSON-safe (printable ASCII only). */
static void safe(const uint8_t *in, size_t n, char *out, size_t size)
{
	size_t i, j = 0;
	for (i = 0; i < n && in[i] && j + 1 < size; i++)
		out[j++] = (in[i] >= 0x20 && in[i] < 0x7f && in[i] != '"' && in[i] != '\\') ? (char)in[i] : '?';
	out[j] = '\0';
}

struct sockets_ctx {
	FILE *out;
	int first;
	struct smc_summary *sum;
	/* This netns's TCP sockets, read at the first IPPROTO_SMC socket (tcp_read). */
	struct tcp_table tcp;
	int tcp_read;
	/* The pod's SMC selection (summary only), and the port pairs of its SMC connections. */
	const struct selection *sel;
	uint32_t *smc_ports;
	size_t n_smc, cap_smc;
};

/* This netns's TCP sockets, read once. */
static void read_tcp(struct sockets_ctx *c)
{
	static const char *const files[] = {"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"};
	size_t i;
	if (!c->tcp_read) {
		c->tcp_read = 1;
		for (i = 0; i < 2; i++) {
			FILE *f = fopen(files[i], "re");
			if (!f)
				continue;
			tcp_table_add(f, &c->tcp);
			fclose(f);
		}
		tcp_table_sort(&c->tcp);
	}
}

/* The TCP socket SMC made for an IPPROTO_SMC socket: the one socket in this thread's netns with
 * the same ports. NULL when not exactly one. */
static const struct tcp_sock *clc_socket(struct sockets_ctx *c, const struct smc_diag_msg *m)
{
	read_tcp(c);
	return tcp_table_find(&c->tcp, ntohs(m->id.idiag_sport), ntohs(m->id.idiag_dport));
}

/* Whether the pod's selection keeps this connection on TCP (selection.h): one the pod accepted
 * (its local port listens here) when the listen selection leaves the port out or the peer is
 * outside the networks; one it opened when its destination is outside the selection. A peer with
 * an IPv6 address (not IPv4-mapped) is never selected. */
static int kept(struct sockets_ctx *c, int v6, const uint32_t *raddr, uint16_t lport, uint16_t rport)
{
	uint32_t v4;
	if (!c->sel)
		return 0;
	if (v6 && !((raddr[0] | raddr[1]) == 0 && ntohl(raddr[2]) == 0xffff))
		return 1;
	v4 = v6 ? raddr[3] : raddr[0];
	read_tcp(c);
	if (tcp_table_listens(&c->tcp, lport))
		return !selection_port(&c->sel->listen, lport) || !selection_addr(c->sel, v4);
	return !selection_addr(c->sel, v4) || !selection_port(&c->sel->connect, rport);
}

/* A fallen-back SMC socket the selection kept on TCP (its addresses: smc_diag's, or for an
 * IPPROTO_SMC socket its TCP socket's). */
static int kept_smc(struct sockets_ctx *c, const struct smc_sock *s)
{
	const uint32_t *dst = s->msg->id.idiag_dst;
	if (!c->sel)
		return 0;
	if (!(dst[0] | dst[1] | dst[2] | dst[3])) {
		const struct tcp_sock *t = clc_socket(c, s->msg);
		return t && kept(c, t->v6, t->raddr, t->lport, t->rport);
	}
	return kept(c, s->v6, dst, ntohs(s->msg->id.idiag_sport), ntohs(s->msg->id.idiag_dport));
}

/* Notes the ports of an SMC connection, whose TCP socket is no plain connection (summary with a
 * selection only). */
static void note_ports(struct sockets_ctx *c, const struct smc_diag_msg *m)
{
	if (!c->sel)
		return;
	if (c->n_smc == c->cap_smc) {
		size_t next = c->cap_smc ? c->cap_smc * 2 : 64;
		uint32_t *v = realloc(c->smc_ports, next * sizeof(*v));
		if (!v)
			return;
		c->smc_ports = v;
		c->cap_smc = next;
	}
	c->smc_ports[c->n_smc++] = (uint32_t)ntohs(m->id.idiag_sport) << 16 | ntohs(m->id.idiag_dport);
}

/* Whether an address (network order, as smc_diag and tcp_table hold it) is a loopback one. */
static int loopback_addr(int v6, const uint32_t *a)
{
	if (!v6)
		return (ntohl(a[0]) >> 24) == 127;
	if ((a[0] | a[1]) == 0 && ntohl(a[2]) == 0xffff) /* ::ffff:127.x.y.z */
		return (ntohl(a[3]) >> 24) == 127;
	return (a[0] | a[1] | a[2]) == 0 && ntohl(a[3]) == 1; /* ::1 */
}

/* Whether a connection's peer is a loopback address; an IPPROTO_SMC socket's address is its TCP
 * socket's (clc_socket). */
static int loopback_peer(struct sockets_ctx *c, const struct smc_sock *s)
{
	const uint32_t *dst = s->msg->id.idiag_dst;
	if (!(dst[0] | dst[1] | dst[2] | dst[3])) {
		const struct tcp_sock *t = clc_socket(c, s->msg);
		return t && loopback_addr(t->v6, t->raddr);
	}
	return loopback_addr(s->v6, dst);
}

static void count(struct sockets_ctx *c, const struct smc_sock *s)
{
	struct smc_summary *sum = c->sum;
	const struct smc_diag_msg *m = s->msg;
	size_t i;
	if (m->diag_state == 10) {
		sum->listening++;
		return;
	}
	sum->sockets++;
	note_ports(c, m);
	/* Kept on TCP by the selection: counted apart, neither a fallback nor in byMode.TCP. */
	if (m->diag_mode == SMC_DIAG_MODE_FALLBACK_TCP && !loopback_peer(c, s) && kept_smc(c, s)) {
		sum->selection_kept++;
		return;
	}
	if (m->diag_mode == SMC_DIAG_MODE_SMCR)
		sum->smcr++;
	else if (m->diag_mode == SMC_DIAG_MODE_SMCD)
		sum->smcd++;
	else
		sum->tcp++;
	if (s->has_conn && m->diag_mode != SMC_DIAG_MODE_FALLBACK_TCP) {
		sum->tx_bytes += cursor_bytes(&s->conn.tx_sent, s->conn.sndbuf_size);
		sum->rx_bytes += cursor_bytes(&s->conn.rx_prod, s->conn.rmbe_size);
	}
	if (m->diag_mode == SMC_DIAG_MODE_FALLBACK_TCP && loopback_peer(c, s)) {
		sum->loopback_fallbacks++;
		return;
	}
	if (m->diag_mode == SMC_DIAG_MODE_FALLBACK_TCP && s->has_fallback) {
		for (i = 0; i < sum->n_reasons && sum->reasons[i].code != s->fb.reason; i++)
			;
		if (i < sum->n_reasons)
			sum->reasons[i].count++;
		else if (sum->n_reasons < SMC_SUMMARY_REASONS)
			sum->reasons[sum->n_reasons++] = (struct smc_reason_count){s->fb.reason, 1};
		else
			sum->other_reasons++;
	}
	if (m->diag_mode == SMC_DIAG_MODE_SMCR && s->has_lgr) {
		char dev[IB_DEVICE_NAME_MAX + 1];
		safe(s->lgr.lnk[0].ibname, sizeof(s->lgr.lnk[0].ibname), dev, sizeof(dev));
		for (i = 0; i < sum->n_devices && (strcmp(sum->devices[i].dev, dev) || sum->devices[i].port != s->lgr.lnk[0].ibport); i++)
			;
		if (i < sum->n_devices)
			sum->devices[i].count++;
		else if (sum->n_devices < SMC_SUMMARY_DEVICES) {
			snprintf(sum->devices[sum->n_devices].dev, sizeof(sum->devices[0].dev), "%s", dev);
			sum->devices[sum->n_devices].port = s->lgr.lnk[0].ibport;
			sum->devices[sum->n_devices++].count = 1;
		}
	}
}

static void print_sock(struct sockets_ctx *c, const struct smc_sock *s)
{
	FILE *out = c->out;
	const struct smc_diag_msg *m = s->msg;
	const uint32_t *src = m->id.idiag_src, *dst = m->id.idiag_dst;
	int v6 = s->v6;
	char local[64], peer[64];
	/* An IPPROTO_SMC socket (parse_sock), or a listener on the any-address. */
	if (!(src[0] | src[1] | src[2] | src[3] | dst[0] | dst[1] | dst[2] | dst[3])) {
		const struct tcp_sock *t = clc_socket(c, m);
		if (t) {
			src = t->laddr;
			dst = t->raddr;
			v6 = t->v6;
		}
	}
	addr(v6, src, m->id.idiag_sport, local, sizeof(local));
	addr(v6, dst, m->id.idiag_dport, peer, sizeof(peer));
	fprintf(out, "{\"state\":\"%s\",\"mode\":\"%s\",\"family\":\"%s\",\"local\":\"%s\",\"peer\":\"%s\",\"uid\":%u,\"inode\":%" PRIu64,
		state_name(m->diag_state), mode_name(m->diag_mode), v6 ? "IPv6" : "IPv4", local, peer, m->diag_uid, (uint64_t)m->diag_inode);
	if (s->has_fallback && m->diag_mode == SMC_DIAG_MODE_FALLBACK_TCP)
		fprintf(out, ",\"fallback\":{\"reason\":\"0x%08x\",\"peerReason\":\"0x%08x\"}", s->fb.reason, s->fb.peer_diagnosis);
	if (s->has_lgr && m->diag_mode == SMC_DIAG_MODE_SMCR) {
		char dev[IB_DEVICE_NAME_MAX + 1], gid[41], pgid[41];
		safe(s->lgr.lnk[0].ibname, sizeof(s->lgr.lnk[0].ibname), dev, sizeof(dev));
		safe(s->lgr.lnk[0].gid, sizeof(s->lgr.lnk[0].gid), gid, sizeof(gid));
		safe(s->lgr.lnk[0].peer_gid, sizeof(s->lgr.lnk[0].peer_gid), pgid, sizeof(pgid));
		fprintf(out, ",\"link\":{\"dev\":\"%s\",\"port\":%u,\"gid\":\"%s\",\"peerGid\":\"%s\",\"role\":\"%s\"}", dev, s->lgr.lnk[0].ibport, gid, pgid,
			s->lgr.role ? "server" : "client");
	}
	if (s->has_conn && m->diag_mode != SMC_DIAG_MODE_FALLBACK_TCP)
		fprintf(out, ",\"conn\":{\"token\":%u,\"sndbuf\":%u,\"rmbe\":%u,\"txBytes\":%" PRIu64 ",\"rxBytes\":%" PRIu64 "}", s->conn.token,
			s->conn.sndbuf_size, s->conn.rmbe_size, cursor_bytes(&s->conn.tx_sent, s->conn.sndbuf_size),
			cursor_bytes(&s->conn.rx_prod, s->conn.rmbe_size));
	fputc('}', out);
}

static int on_sock(const struct nlmsghdr *h, void *arg)
{
	struct sockets_ctx *c = arg;
	struct smc_sock s;
	if (parse_sock(h, &s))
		return h->nlmsg_type == SOCK_DIAG_BY_FAMILY ? -1 : 0;
	if (c->sum) {
		count(c, &s);
		return 0;
	}
	fputs(c->first ? "[\n" : ",\n", c->out); /* "[" only once the kernel answered */
	c->first = 0;
	print_sock(c, &s);
	return 0;
}

static int dump_sockets(struct sockets_ctx *c)
{
	struct nl_msg m;
	struct nlmsghdr *h = (struct nlmsghdr *)m.buf;
	struct smc_diag_req *r = (struct smc_diag_req *)(m.buf + NLMSG_HDRLEN);
	int fd, rc;
	memset(m.buf, 0, NLMSG_HDRLEN + sizeof(*r));
	h->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	r->diag_family = AF_SMC;
	r->diag_ext = (1 << (SMC_DIAG_CONNINFO - 1)) | (1 << (SMC_DIAG_LGRINFO - 1)) | (1 << (SMC_DIAG_FALLBACK - 1));
	m.len = NLMSG_HDRLEN + sizeof(*r);
	h->nlmsg_len = (uint32_t)m.len;
	fd = nl_open_proto(NETLINK_SOCK_DIAG);
	if (fd < 0)
		return fd;
	rc = nl_transact(fd, &m, on_sock, c);
	close(fd);
	return rc;
}

int smc_sockets(FILE *out)
{
	struct sockets_ctx c = {out, 1, NULL, {NULL, 0, 0}, 0, NULL, NULL, 0, 0};
	int rc = dump_sockets(&c);
	tcp_table_free(&c.tcp);
	if (rc == 0)
		fputs(c.first ? "[]\n" : "\n]\n", out);
	else if (!c.first)
		fputs("\n]\n", out); /* what arrived before the failure, then the error on stderr */
	return rc;
}

/* Established TCP sockets in /proc/thread-self/net/<file> (this thread's netns). */
static uint64_t established(const char *file)
{
	char path[64], line[256];
	unsigned st;
	uint64_t n = 0;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/thread-self/net/%s", file);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " %*u: %*s %*s %x", &st) == 1 && st == 1 /* TCP_ESTABLISHED */)
			n++;
	fclose(f);
	return n;
}

static int is_smc_pair(const struct sockets_ctx *c, uint16_t lport, uint16_t rport)
{
	uint32_t key = (uint32_t)lport << 16 | rport;
	size_t i;
	for (i = 0; i < c->n_smc; i++)
		if (c->smc_ports[i] == key)
			return 1;
	return 0;
}

/* With a selection: each established TCP connection that is no SMC socket's own is either kept
 * on TCP by the selection or plain TCP (a program the mechanism did not reach). */
static void classify_plain(struct sockets_ctx *c)
{
	size_t i;
	read_tcp(c);
	for (i = 0; i < c->tcp.n; i++) {
		const struct tcp_sock *t = &c->tcp.v[i];
		if (t->state != 1 || is_smc_pair(c, t->lport, t->rport))
			continue;
		if (kept(c, t->v6, t->raddr, t->lport, t->rport))
			c->sum->selection_kept++;
		else
			c->sum->plain_tcp++;
	}
}

int smc_summary_read(struct smc_summary *sum, const struct selection *sel)
{
	struct sockets_ctx c = {NULL, 1, sum, {NULL, 0, 0}, 0, sel, NULL, 0, 0};
	uint64_t tcp, own;
	int rc;
	memset(sum, 0, sizeof(*sum));
	rc = dump_sockets(&c);
	if (rc == 0 && sel) {
		classify_plain(&c);
	} else if (rc == 0) {
		/* Each SMC connection (SMC-R or fallen back; `sockets` leaves out the listening ones)
		 * holds one TCP socket of its own. */
		tcp = established("tcp") + established("tcp6");
		own = sum->sockets;
		sum->plain_tcp = tcp > own ? tcp - own : 0;
	}
	tcp_table_free(&c.tcp);
	free(c.smc_ports);
	return rc;
}

void smc_summary_print(FILE *out, const struct smc_summary *s)
{
	size_t i;
	fprintf(out, "{\"sockets\":%" PRIu64 ",\"listening\":%" PRIu64 ",\"byMode\":{\"SMCR\":%" PRIu64 ",\"SMCD\":%" PRIu64 ",\"TCP\":%" PRIu64 "}",
		s->sockets, s->listening, s->smcr, s->smcd, s->tcp);
	fprintf(out, ",\"plainTcp\":%" PRIu64 ",\"loopbackFallbacks\":%" PRIu64 ",\"selectionKept\":%" PRIu64, s->plain_tcp,
		s->loopback_fallbacks, s->selection_kept);
	fprintf(out, ",\"txBytes\":%" PRIu64 ",\"rxBytes\":%" PRIu64 ",\"fallbacks\":{", s->tx_bytes, s->rx_bytes);
	for (i = 0; i < s->n_reasons; i++)
		fprintf(out, "%s\"0x%08x\":%" PRIu64, i ? "," : "", s->reasons[i].code, s->reasons[i].count);
	fprintf(out, "},\"otherFallbacks\":%" PRIu64 ",\"devices\":[", s->other_reasons);
	for (i = 0; i < s->n_devices; i++)
		fprintf(out, "%s{\"dev\":\"%s\",\"port\":%u,\"connections\":%" PRIu64 "}", i ? "," : "", s->devices[i].dev, s->devices[i].port, s->devices[i].count);
	fputs("]}", out);
}
