/* `erdma-smcr net show|configure`: the node's IPv4 links, addresses and main-table routes as JSON,
 * and the all-or-nothing set-up of one secondary eRDMA ENI (the agent decides what; this does it). */
#ifndef ERDMA_SMCR_ENI_H
#define ERDMA_SMCR_ENI_H

#include <stdint.h>
#include <stdio.h>

struct net_conf {
	const char *dev;
	uint32_t addr; /* network byte order */
	uint8_t prefix;
	uint32_t cidr; /* the vSwitch's network, network byte order */
	uint8_t cidr_len;
	uint32_t gateway;
	uint32_t metric_subnet, metric_default;
	uint32_t mtu; /* 0: leave it */
};

/* Exit codes of `net configure` besides 0, 1 (a netlink step failed, everything undone), 2 (usage). */
#define NET_EXIT_CONFIGURED 3 /* the link is up with an address already: never touched */
#define NET_EXIT_NO_LINK 4

int net_show(FILE *out);
int net_configure(const struct net_conf *c, FILE *out, FILE *err);
/* Parses "a.b.c.d" or "a.b.c.d/len" (len required when want_len). */
int parse_ipv4(const char *s, uint32_t *addr, uint8_t *len, int want_len);

#endif
