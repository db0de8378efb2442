/* rtnetlink (NETLINK_ROUTE) for the node agent's eRDMA ENI set-up: dumps of links, IPv4 addresses
 * and IPv4 routes of the main table, and the few changes an ENI needs (MTU, up, an address without
 * its prefix route, a route with a metric). Constants from <linux/rtnetlink.h>, <linux/if_link.h>
 * and <linux/if_addr.h>. Message building is separate from the socket so tests can check bytes. */
#ifndef ERDMA_SMCR_RTNL_H
#define ERDMA_SMCR_RTNL_H

#include <net/if.h>
#include <stdint.h>
#include "smc_genl.h"

struct rt_link {
	int index;
	char name[IF_NAMESIZE];
	unsigned char mac[6];
	int has_mac;
	uint32_t mtu;
	uint32_t flags; /* IFF_* */
};

struct rt_addr {
	int index;
	uint32_t addr; /* network byte order */
	uint8_t prefix;
	uint8_t scope;
	uint32_t flags; /* IFA_F_* */
};

struct rt_route {
	uint32_t dst; /* network byte order */
	uint8_t dst_len;
	uint32_t gateway; /* 0: none */
	uint32_t prefsrc; /* 0: none */
	int oif;
	uint32_t metric;
	uint8_t protocol, scope, type;
	uint32_t table;
};

typedef int (*rt_link_fn)(const struct rt_link *l, void *ctx);
typedef int (*rt_addr_fn)(const struct rt_addr *a, void *ctx);
typedef int (*rt_route_fn)(const struct rt_route *r, void *ctx);

/* Decoders of one dump reply (0, or -1 for a malformed message; other types are skipped). */
int rt_link_parse(const struct nlmsghdr *h, struct rt_link *out);
int rt_addr_parse(const struct nlmsghdr *h, struct rt_addr *out);
int rt_route_parse(const struct nlmsghdr *h, struct rt_route *out);

/* Builders (0, or -1 when the message does not fit). `up`: 1 up, 0 down, -1 unchanged; `mtu` 0: unchanged. */
int rt_build_link_set(struct nl_msg *m, int index, uint32_t mtu, int up);
int rt_build_addr(struct nl_msg *m, int add, int index, uint32_t addr, uint8_t prefix, int noprefixroute);
int rt_build_route(struct nl_msg *m, int add, const struct rt_route *r);

/* Socket side: 0 or a negative errno. */
int rt_dump_links(rt_link_fn fn, void *ctx);
int rt_dump_addrs(rt_addr_fn fn, void *ctx);
int rt_dump_routes(rt_route_fn fn, void *ctx);
int rt_link_set(int index, uint32_t mtu, int up);
int rt_addr_change(int add, int index, uint32_t addr, uint8_t prefix, int noprefixroute);
int rt_route_change(int add, const struct rt_route *r);

#endif
