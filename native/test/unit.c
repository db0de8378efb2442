/* C unit tests of the plugin's pure parts: netlink message bytes (encode and decode, generic and
 * rtnetlink), the sysctl allow-list, Go's ParseBool, IPv4 argument parsing. Built with ASan and UBSan by `make check`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/genetlink.h>
#include <linux/smc.h>
#include <arpa/inet.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include "eni.h"
#include "smc_genl.h"
#include "rtnl.h"
#include "selection.h"
#include "settings.h"
#include "smcdiag.h"
#include "tcp_table.h"

static int failures, checks;

#define EXPECT(cond)                                                                        \
	do {                                                                                \
		checks++;                                                                   \
		if (!(cond)) {                                                              \
			failures++;                                                         \
			fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
		}                                                                           \
	} while (0)

static const struct nlattr *attr_at(const struct nl_msg *m, size_t off)
{
	return (const struct nlattr *)(m->buf + off);
}

static void test_pnet_add_eth(void)
{
	struct nl_msg m;
	struct pnet_entry e = {"00163e10f8b0", "eth0", "", 0}, back;
	const struct nlmsghdr *h = (const struct nlmsghdr *)m.buf;
	const struct genlmsghdr *g = (const struct genlmsghdr *)(m.buf + NLMSG_HDRLEN);
	const struct nlattr *a;
	EXPECT(pnet_build_add(&m, 0x1d, 7, &e) == 0);
	EXPECT(h->nlmsg_type == 0x1d);
	EXPECT(h->nlmsg_flags == (NLM_F_REQUEST | NLM_F_ACK));
	EXPECT(h->nlmsg_seq == 7);
	EXPECT(g->cmd == SMC_PNETID_ADD && g->version == 1);
	/* NAME: 4-byte header + "00163E10F8B0\0" (13) = 17, padded to 20 */
	a = attr_at(&m, NLMSG_HDRLEN + GENL_HDRLEN);
	EXPECT(a->nla_type == SMC_PNETID_NAME && a->nla_len == 17);
	EXPECT(!memcmp((const char *)a + NLA_HDRLEN, "00163E10F8B0", 13));
	a = attr_at(&m, NLMSG_HDRLEN + GENL_HDRLEN + 20);
	EXPECT(a->nla_type == SMC_PNETID_ETHNAME && a->nla_len == 9);
	EXPECT(!strcmp((const char *)a + NLA_HDRLEN, "eth0"));
	EXPECT(h->nlmsg_len == NLMSG_HDRLEN + GENL_HDRLEN + 20 + 12);
	EXPECT(m.len == h->nlmsg_len);
	/* decoding the same attributes gives the entry back (upper-cased id) */
	EXPECT(pnet_parse(h, &back) == 0);
	EXPECT(!strcmp(back.name, "00163E10F8B0") && !strcmp(back.eth, "eth0") && back.ib[0] == '\0');
}

static void test_pnet_add_ib(void)
{
	struct nl_msg m;
	struct pnet_entry e = {"ABC", "", "erdma_0", 1}, back;
	EXPECT(pnet_build_add(&m, 30, 1, &e) == 0);
	EXPECT(pnet_parse((const struct nlmsghdr *)m.buf, &back) == 0);
	EXPECT(!strcmp(back.ib, "erdma_0") && back.port == 1 && back.eth[0] == '\0');
	e.port = 3;
	EXPECT(pnet_build_add(&m, 30, 1, &e) == -1);
	e.port = 1;
	strcpy(e.ib, "../x");
	EXPECT(pnet_build_add(&m, 30, 1, &e) == -1);
}

static void test_pnet_invalid_ids(void)
{
	struct nl_msg m;
	struct pnet_entry e = {"", "eth0", "", 0};
	char out[17];
	EXPECT(pnet_build_add(&m, 30, 1, &e) == -1);
	strcpy(e.name, "has space");
	EXPECT(pnet_build_add(&m, 30, 1, &e) == -1);
	EXPECT(pnetid_normalize("0123456789ABCDEF", out, sizeof(out)) == 0);
	EXPECT(pnetid_normalize("0123456789ABCDEF0", out, sizeof(out)) == -1);
	EXPECT(pnetid_normalize("a-b", out, sizeof(out)) == -1);
}

static void test_pnet_dump_request(void)
{
	struct nl_msg m;
	const struct nlmsghdr *h = (const struct nlmsghdr *)m.buf;
	EXPECT(pnet_build_simple(&m, 30, 2, SMC_PNETID_GET, NULL) == 0);
	EXPECT(h->nlmsg_flags == (NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP));
	EXPECT(h->nlmsg_len == NLMSG_HDRLEN + GENL_HDRLEN);
	EXPECT(pnet_build_simple(&m, 30, 2, SMC_PNETID_DEL, "abc") == 0);
	EXPECT(!(h->nlmsg_flags & NLM_F_DUMP));
	EXPECT(!strcmp((const char *)m.buf + NLMSG_HDRLEN + GENL_HDRLEN + NLA_HDRLEN, "ABC"));
}

static void test_ueid(void)
{
	struct nl_msg m;
	char back[EID_LEN + 1];
	const struct nlattr *a = attr_at(&m, NLMSG_HDRLEN + GENL_HDRLEN);
	const struct genlmsghdr *g = (const struct genlmsghdr *)(m.buf + NLMSG_HDRLEN);
	EXPECT(ueid_build(&m, 31, 3, SMC_NETLINK_ADD_UEID, "smcr-pods.1") == 0);
	EXPECT(g->cmd == SMC_NETLINK_ADD_UEID);
	/* exactly 32 blank-padded characters plus NUL, as smc_nl_add_ueid requires */
	EXPECT(a->nla_type == SMC_NLA_EID_TABLE_ENTRY && a->nla_len == NLA_HDRLEN + EID_LEN + 1);
	EXPECT(!memcmp((const char *)a + NLA_HDRLEN, "SMCR-PODS.1                     ", 32));
	EXPECT(ueid_parse((const struct nlmsghdr *)m.buf, back, sizeof(back)) == 0);
	EXPECT(!strcmp(back, "SMCR-PODS.1"));
	EXPECT(ueid_build(&m, 31, 3, SMC_NETLINK_ADD_UEID, ".bad") == -1);
	EXPECT(ueid_build(&m, 31, 3, SMC_NETLINK_ADD_UEID, "THIS-ID-IS-LONGER-THAN-32-CHARACTERS") == -1);
	EXPECT(ueid_build(&m, 31, 3, SMC_NETLINK_DUMP_UEID, NULL) == 0);
	EXPECT(((const struct nlmsghdr *)m.buf)->nlmsg_flags & NLM_F_DUMP);
}

static void test_truncated_reply(void)
{
	struct nl_msg m;
	struct pnet_entry e = {"ABC", "eth0", "", 0}, back;
	struct nlattr *a;
	EXPECT(pnet_build_add(&m, 30, 1, &e) == 0);
	a = (struct nlattr *)(m.buf + NLMSG_HDRLEN + GENL_HDRLEN);
	a->nla_len = 200; /* claims more than the message holds */
	EXPECT(pnet_parse((const struct nlmsghdr *)m.buf, &back) == -1);
}

static void test_allow_list(void)
{
	char why[160];
	EXPECT(sysctl_allowed("net.smc.tcp2smc", "1", "eth0", why, sizeof(why)) == 0);
	EXPECT(sysctl_allowed("net.smc.wmem", "16384", "eth0", why, sizeof(why)) == 0);
	EXPECT(sysctl_allowed("net.smc.wmem", "16383", "eth0", why, sizeof(why)) == -1);
	EXPECT(sysctl_allowed("net.smc.smcr_buf_type", "3", "eth0", why, sizeof(why)) == -1);
	EXPECT(sysctl_allowed("net.smc.rmem", "99999999999", "eth0", why, sizeof(why)) == -1);
	EXPECT(sysctl_allowed("net.smc.rmem", "-1", "eth0", why, sizeof(why)) == -1);
	EXPECT(sysctl_allowed("net.smc.future_knob", "7", "eth0", why, sizeof(why)) == 0);
	EXPECT(sysctl_allowed("net.ipv6.conf.all.disable_ipv6", "1", "eth0", why, sizeof(why)) == 0);
	EXPECT(sysctl_allowed("net.ipv6.conf.eth0.disable_ipv6", "1", "eth0", why, sizeof(why)) == 0);
	EXPECT(sysctl_allowed("net.ipv6.conf.eth1.disable_ipv6", "1", "eth0", why, sizeof(why)) == -1);
	EXPECT(sysctl_allowed("net.ipv6.conf.all.forwarding", "1", "eth0", why, sizeof(why)) == -1);
	EXPECT(sysctl_allowed("net.ipv4.ip_forward", "1", "eth0", why, sizeof(why)) == -1);
	EXPECT(sysctl_allowed("kernel.core_pattern", "|/bin/sh", "eth0", why, sizeof(why)) == -1);
	EXPECT(sysctl_allowed("net.smc..tcp2smc", "1", "eth0", why, sizeof(why)) == -1);
	EXPECT(sysctl_allowed("net.smc/../../kernel", "1", "eth0", why, sizeof(why)) == -1);
	EXPECT(sysctl_allowed("net.smc.Tcp2smc", "1", "eth0", why, sizeof(why)) == -1);
}

static void test_paths(void)
{
	char p[128];
	EXPECT(sysctl_path("net.smc.autocorking_size", "eth0", p, sizeof(p)) == 0 && !strcmp(p, "/proc/sys/net/smc/autocorking_size"));
	EXPECT(sysctl_path("net.ipv6.conf.eth0.100.disable_ipv6", "eth0.100", p, sizeof(p)) == 0 &&
	       !strcmp(p, "/proc/sys/net/ipv6/conf/eth0.100/disable_ipv6"));
}

static void test_parse_bool(void)
{
	EXPECT(parse_go_bool("true") == 1 && parse_go_bool("T") == 1 && parse_go_bool("1") == 1);
	EXPECT(parse_go_bool("False") == 0 && parse_go_bool("0") == 0);
	EXPECT(parse_go_bool("yes") == -1 && parse_go_bool("") == -1 && parse_go_bool("tRUE") == -1);
}

/* Finds attribute `type` after a family header of hdrlen bytes; NULL when absent. */
static const struct rtattr *rta_find(const struct nl_msg *m, size_t hdrlen, unsigned short type)
{
	size_t off = NLMSG_HDRLEN + NLMSG_ALIGN(hdrlen);
	while (off + sizeof(struct rtattr) <= m->len) {
		const struct rtattr *a = (const struct rtattr *)(m->buf + off);
		if (a->rta_len < sizeof(*a))
			return NULL;
		if (a->rta_type == type)
			return a;
		off += RTA_ALIGN(a->rta_len);
	}
	return NULL;
}

static uint32_t rta_u32(const struct rtattr *a)
{
	uint32_t v;
	memcpy(&v, RTA_DATA(a), sizeof(v));
	return v;
}

static void test_rtnl_builders(void)
{
	struct nl_msg m;
	struct rt_route r, back;
	struct rt_addr a;
	const struct rtattr *at;
	uint32_t ip;
	inet_pton(AF_INET, "192.168.1.10", &ip);
	/* An address without its prefix route: RTM_NEWADDR, create+excl, IFA_F_NOPREFIXROUTE. */
	EXPECT(rt_build_addr(&m, 1, 7, ip, 24, 1) == 0);
	EXPECT(((const struct nlmsghdr *)m.buf)->nlmsg_type == RTM_NEWADDR);
	EXPECT((((const struct nlmsghdr *)m.buf)->nlmsg_flags & (NLM_F_CREATE | NLM_F_EXCL)) == (NLM_F_CREATE | NLM_F_EXCL));
	at = rta_find(&m, sizeof(struct ifaddrmsg), IFA_FLAGS);
	EXPECT(at && rta_u32(at) == IFA_F_NOPREFIXROUTE);
	EXPECT(rt_build_addr(&m, 1, 7, ip, 33, 1) == -1);
	/* A default route: gateway, oif and metric; universe scope. */
	memset(&r, 0, sizeof(r));
	inet_pton(AF_INET, "192.168.1.253", &r.gateway);
	r.oif = 7;
	r.metric = 201;
	EXPECT(rt_build_route(&m, 1, &r) == 0);
	EXPECT(((const struct rtmsg *)(m.buf + NLMSG_HDRLEN))->rtm_scope == RT_SCOPE_UNIVERSE);
	at = rta_find(&m, sizeof(struct rtmsg), RTA_PRIORITY);
	EXPECT(at && rta_u32(at) == 201);
	EXPECT(rta_find(&m, sizeof(struct rtmsg), RTA_DST) == NULL);
	/* The same bytes read back as the kernel's dump reply would be. */
	((struct nlmsghdr *)m.buf)->nlmsg_type = RTM_NEWROUTE;
	EXPECT(rt_route_parse((const struct nlmsghdr *)m.buf, &back) == 0);
	EXPECT(back.metric == 201 && back.oif == 7 && back.gateway == r.gateway && back.dst_len == 0);
	/* An address reply that claims more than it holds is refused. */
	EXPECT(rt_build_addr(&m, 1, 7, ip, 24, 0) == 0);
	((struct rtattr *)(m.buf + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct ifaddrmsg))))->rta_len = 400;
	EXPECT(rt_addr_parse((const struct nlmsghdr *)m.buf, &a) == -1);
	/* Link up with an MTU. */
	EXPECT(rt_build_link_set(&m, 7, 8500, 1) == 0);
	EXPECT(((const struct ifinfomsg *)(m.buf + NLMSG_HDRLEN))->ifi_change == IFF_UP);
	at = rta_find(&m, sizeof(struct ifinfomsg), IFLA_MTU);
	EXPECT(at && rta_u32(at) == 8500);
}

static void test_parse_ipv4(void)
{
	uint32_t a;
	uint8_t len = 0;
	EXPECT(parse_ipv4("10.1.2.3/24", &a, &len, 1) == 0 && len == 24);
	EXPECT(parse_ipv4("10.1.2.3", &a, &len, 1) == -1);
	EXPECT(parse_ipv4("10.1.2.3/24", &a, NULL, 0) == -1);
	EXPECT(parse_ipv4("10.1.2.3/33", &a, &len, 1) == -1);
	EXPECT(parse_ipv4("10.1.2.3/", &a, &len, 1) == -1);
	EXPECT(parse_ipv4("10.1.2.300", &a, NULL, 0) == -1);
	EXPECT(parse_ipv4("10.1.2.3/24/1", &a, &len, 1) == -1);
	EXPECT(parse_ipv4("1111111111111111111111111111", &a, NULL, 0) == -1);
}

/* /proc/net/tcp and tcp6 as 6.12 prints them in pods running iperf3 over IPPROTO_SMC: the
 * listener, the SMC handshake sockets of two connections, a TIME_WAIT sharing a pair with a live
 * one; a dual-stack listener's accepted socket (IPv4-mapped). */
static const char proc_tcp[] =
	"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	"   0: 00000000:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 379 1 0 100 0 0 10 0\n"
	"   1: 0300580A:1451 0200580A:DB80 01 00000000:00000000 00:00000000 00000000     0        0 1596 1 0 20 4 30 10 -1\n"
	"   2: 0300580A:1451 0200580A:DB78 01 00000000:00000000 00:00000000 00000000     0        0 414 1 0 20 4 30 10 -1\n"
	"   3: 0300580A:1F90 0200580A:9C40 06 00000000:00000000 03:00000F9C 00000000     0        0 0 3\n"
	"   4: 0400580A:1F90 0200580A:9C40 01 00000000:00000000 00:00000000 00000000     0        0 77 1\n"
	"garbage\n"
	"   5: 0300580A:1451 0200580A:FFFFF 01\n";
static const char proc_tcp6[] =
	"  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	"   0: 0000000000000000FFFF00000300580A:1452 0000000000000000FFFF00000200580A:C350 01 00000000:00000000 00:00000000 00000000     0        0 88 1\n"
	"   1: 0000000000000000FFFF00000300580A:1453 0200580A:C350 01\n";

static void read_proc(struct tcp_table *t, const char *text, size_t len)
{
	FILE *f = fmemopen((void *)text, len, "r");
	EXPECT(f && tcp_table_add(f, t) == 0);
	if (f)
		fclose(f);
}

static void test_tcp_table(void)
{
	struct tcp_table t = {NULL, 0, 0};
	const struct tcp_sock *e;
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	read_proc(&t, proc_tcp, sizeof(proc_tcp) - 1);
	EXPECT(t.n == 5); /* the header, "garbage" and a port of five digits are not sockets */
	read_proc(&t, proc_tcp6, sizeof(proc_tcp6) - 1);
	EXPECT(t.n == 6); /* an IPv6 address with an IPv4 peer is not a socket */
	tcp_table_sort(&t);
	e = tcp_table_find(&t, 5201, 56192);
	EXPECT(e && !e->v6);
	if (e) {
		inet_ntop(AF_INET, e->laddr, a, sizeof(a));
		inet_ntop(AF_INET, e->raddr, b, sizeof(b));
		EXPECT(!strcmp(a, "10.88.0.3") && !strcmp(b, "10.88.0.2"));
	}
	e = tcp_table_find(&t, 5201, 0);
	EXPECT(e && !e->v6 && e->laddr[0] == 0 && e->raddr[0] == 0);
	/* Its state (st): the listener is 0A, the connection 01; who listens where. */
	EXPECT(e && e->state == 10);
	e = tcp_table_find(&t, 5201, 56192);
	EXPECT(e && e->state == 1);
	EXPECT(tcp_table_listens(&t, 5201) == 1 && tcp_table_listens(&t, 56192) == 0);
	e = tcp_table_find(&t, 5202, 50000);
	EXPECT(e && e->v6);
	if (e) {
		inet_ntop(AF_INET6, e->laddr, a, sizeof(a));
		inet_ntop(AF_INET6, e->raddr, b, sizeof(b));
		EXPECT(!strcmp(a, "::ffff:10.88.0.3") && !strcmp(b, "::ffff:10.88.0.2"));
	}
	EXPECT(tcp_table_find(&t, 8080, 40000) == NULL); /* two with these ports: not known */
	EXPECT(tcp_table_find(&t, 5201, 1) == NULL);
	EXPECT(tcp_table_find(&t, 1, 0) == NULL);
	tcp_table_free(&t);
	EXPECT(t.n == 0 && tcp_table_find(&t, 5201, 0) == NULL);
	read_proc(&t, proc_tcp, (size_t)(strchr(proc_tcp, '\n') - proc_tcp + 1)); /* the header only */
	tcp_table_sort(&t);
	EXPECT(t.n == 0 && tcp_table_find(&t, 5201, 0) == NULL);
	tcp_table_free(&t);
}

static struct sockaddr_in v4(const char *a, int port)
{
	struct sockaddr_in in;
	memset(&in, 0, sizeof(in));
	in.sin_family = AF_INET;
	in.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, a, &in.sin_addr);
	return in;
}

/* The selection as the webhook writes it (src/policy/selection.ts) and the preload library and the
 * smc_hs_ctrl program read it. */
static void test_selection(void)
{
	struct selection s;
	struct sockaddr_in a;
	struct sockaddr_in6 m;
	char why[160];
	EXPECT(selection_parse("nets=10.0.0.0/8,192.168.1.0/24;connect=6379,8000-8999,!8080;listen=!22", &s, why,
			       sizeof(why)) == 0);
	EXPECT(s.nnets == 2 && s.connect.n == 3 && s.connect.includes == 2 && s.listen.includes == 0);
	a = v4("10.1.2.3", 6379);
	EXPECT(selection_connect(&s, (struct sockaddr *)&a, sizeof(a)) == 1);
	a = v4("10.1.2.3", 8080); /* excluded inside an included range */
	EXPECT(selection_connect(&s, (struct sockaddr *)&a, sizeof(a)) == 0);
	a = v4("10.1.2.3", 8443);
	EXPECT(selection_connect(&s, (struct sockaddr *)&a, sizeof(a)) == 1);
	a = v4("10.1.2.3", 443); /* a port not listed */
	EXPECT(selection_connect(&s, (struct sockaddr *)&a, sizeof(a)) == 0);
	a = v4("192.168.2.1", 6379); /* outside the nets */
	EXPECT(selection_connect(&s, (struct sockaddr *)&a, sizeof(a)) == 0);
	a = v4("192.168.1.200", 6379);
	EXPECT(selection_connect(&s, (struct sockaddr *)&a, sizeof(a)) == 1);
	EXPECT(selection_port(&s.listen, 6379) == 1 && selection_port(&s.listen, 22) == 0);
	/* IPv4-mapped IPv6 is read as IPv4; other IPv6 is never selected. */
	memset(&m, 0, sizeof(m));
	m.sin6_family = AF_INET6;
	m.sin6_port = htons(6379);
	inet_pton(AF_INET6, "::ffff:10.9.9.9", &m.sin6_addr);
	EXPECT(selection_connect(&s, (struct sockaddr *)&m, sizeof(m)) == 1);
	inet_pton(AF_INET6, "fd00::1", &m.sin6_addr);
	EXPECT(selection_connect(&s, (struct sockaddr *)&m, sizeof(m)) == 0);
	/* No nets: every address; `*`: every port. */
	EXPECT(selection_parse("connect=*", &s, why, sizeof(why)) == 0);
	a = v4("8.8.8.8", 53);
	EXPECT(selection_connect(&s, (struct sockaddr *)&a, sizeof(a)) == 1);
	EXPECT(selection_parse("", &s, why, sizeof(why)) == 0 && s.nnets == 0 && s.connect.n == 0);
	/* Bad input: a clear reason, and what was parsed before is not touched. */
	s.nnets = 7;
	EXPECT(selection_parse("nets=10.0.0.0/33", &s, why, sizeof(why)) == -1 && strstr(why, "not an IPv4 CIDR") && s.nnets == 7);
	EXPECT(selection_parse("connect=0", &s, why, sizeof(why)) == -1 && strstr(why, "is not a port"));
	EXPECT(selection_parse("connect=9-3", &s, why, sizeof(why)) == -1);
	EXPECT(selection_parse("connect=65536", &s, why, sizeof(why)) == -1);
	EXPECT(selection_parse("connect=80x", &s, why, sizeof(why)) == -1);
	EXPECT(selection_parse("ports=80", &s, why, sizeof(why)) == -1 && strstr(why, "unknown part"));
	EXPECT(selection_parse("nets", &s, why, sizeof(why)) == -1 && strstr(why, "key=value"));
	EXPECT(selection_parse("connect=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", &s, why, sizeof(why)) == -1 &&
	       strstr(why, "more than 16"));
}

int main(void)
{
	test_tcp_table();
	test_selection();
	test_rtnl_builders();
	test_parse_ipv4();
	test_pnet_add_eth();
	test_pnet_add_ib();
	test_pnet_invalid_ids();
	test_pnet_dump_request();
	test_ueid();
	test_truncated_reply();
	test_allow_list();
	test_paths();
	test_parse_bool();
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
