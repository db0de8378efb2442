/* The SMC selection: which of a pod's connections use SMC and which stay plain TCP from their first
 * packet. The webhook writes it (src/policy/selection.ts: the same text, the same meaning), the
 * preload library reads it from ERDMA_SMCR_SELECT at connect(), bind() and listen(), and our CNI
 * plugin copies it into the map the smc_hs_ctrl program reads (bpf/smc_select.bpf.c) on kernels that
 * have that hook. The struct is that map's value: plain fixed-size types, shared with the BPF side.
 *
 * Text: `nets=CIDR,...;connect=PORTS;listen=PORTS`, each part optional. PORTS is `*` or a list of
 * `N`, `N-M`, `!N`, `!N-M`: a port is selected when an item without `!` covers it (or there is none)
 * and no `!` item does. A connection is selected when its destination is in one of the nets (all
 * addresses when `nets` is absent) and its port is selected for connect; a listener when its port
 * is selected for listen. */
#ifndef ERDMA_SMCR_SELECTION_H
#define ERDMA_SMCR_SELECTION_H

#include <linux/types.h>

#define SEL_MAX_NETS 32
#define SEL_MAX_RANGES 16

struct sel_net {
	__u32 addr; /* network byte order, masked */
	__u32 mask; /* network byte order */
};

struct sel_range {
	__u16 lo, hi;
	__u16 exclude;
	__u16 pad;
};

struct sel_ports {
	__u32 n;
	__u32 includes; /* how many of the n are includes: none means every port */
	struct sel_range r[SEL_MAX_RANGES];
};

struct selection {
	__u32 nnets; /* 0: every address */
	__u32 pad;
	struct sel_net nets[SEL_MAX_NETS];
	struct sel_ports connect, listen;
	/* Counted by the smc_hs_ctrl program per netns: handshakes it kept on TCP, and let offer SMC. */
	__u64 kept, selected;
};

/* 1 when `port` (host order) is selected by `p`. Written once for both sides: the loops are
 * bounded as the BPF verifier wants them. */
static inline int selection_port(const struct sel_ports *p, __u16 port)
{
	int included = p->includes == 0;
	__u32 i;
	for (i = 0; i < SEL_MAX_RANGES; i++) {
		if (i >= p->n)
			break;
		if (port < p->r[i].lo || port > p->r[i].hi)
			continue;
		if (p->r[i].exclude)
			return 0;
		included = 1;
	}
	return included;
}

/* 1 when the IPv4 address `addr` (network order) is in the selection's nets. */
static inline int selection_addr(const struct selection *s, __u32 addr)
{
	__u32 i;
	if (s->nnets == 0)
		return 1;
	for (i = 0; i < SEL_MAX_NETS; i++) {
		if (i >= s->nnets)
			break;
		if ((addr & s->nets[i].mask) == s->nets[i].addr)
			return 1;
	}
	return 0;
}

#ifndef __bpf__
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Parses `text` into `out`; 0, or -1 with `why` saying what is wrong (nothing else changes). */
int selection_parse(const char *text, struct selection *out, char *why, size_t size);
/* 1 when a connection to `sa` uses SMC: an IPv4 (or IPv4-mapped IPv6) destination in the nets on a
 * selected port. Other IPv6 destinations are never selected (SMC-R pods run IPv4). */
int selection_connect(const struct selection *s, const struct sockaddr *sa, socklen_t len);
#endif

#endif
