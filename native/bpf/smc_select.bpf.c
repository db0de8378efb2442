// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The SMC selection in the kernel (#93): an smc_hs_ctrl (net/smc/smc_hs_bpf.c, 6.19+ with
 * CONFIG_SMC_HS_CTRL_BPF) whose syn_option and synack_option leave SMC's TCP option out of the SYN
 * and the SYN-ACK of connections outside a pod's selection, so they are plain TCP from their first
 * packet, static binaries too. A pod netns uses it when our CNI plugin writes its name into the
 * netns's net.smc.hs_ctrl and its selection into smc_select, keyed by the netns cookie; a netns
 * with no entry keeps SMC on every connection (what it had before). The selection's layout is
 * src/selection.h, shared with the preload library and the plugin.
 *
 * Built CO-RE without vmlinux.h: the kernel structures read are declared with only the fields used.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "selection.h"

#define AF_INET 2

struct net {
	__u64 net_cookie;
} __attribute__((preserve_access_index));

typedef struct {
	struct net *net;
} possible_net_t;

struct sock_common {
	__be32 skc_daddr;
	__be16 skc_dport;
	__u16 skc_num;
	unsigned short skc_family;
	possible_net_t skc_net;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
} __attribute__((preserve_access_index));

struct inet_sock {
	struct sock sk;
} __attribute__((preserve_access_index));

struct inet_connection_sock {
	struct inet_sock icsk_inet;
} __attribute__((preserve_access_index));

struct tcp_sock {
	struct inet_connection_sock inet_conn;
} __attribute__((preserve_access_index));

struct request_sock {
	struct sock_common __req_common;
} __attribute__((preserve_access_index));

struct inet_request_sock {
	struct request_sock req;
} __attribute__((preserve_access_index));

/* include/net/smc.h: only the members we set; libbpf matches them to the kernel's by name. */
struct smc_hs_ctrl {
	char name[16];
	int flags;
	int (*syn_option)(struct tcp_sock *tp);
	int (*synack_option)(const struct tcp_sock *tp, struct inet_request_sock *ireq);
};

/* Pods' selections by netns cookie; filled by our CNI plugin at ADD, emptied at DEL. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct selection);
} smc_select SEC(".maps");

/* Counts the decision in the netns's own entry (what `erdma-smcr bpf status` and the agent read). */
static __always_inline int count(struct selection *s, int selected)
{
	if (selected)
		__sync_fetch_and_add(&s->selected, 1);
	else
		__sync_fetch_and_add(&s->kept, 1);
	return selected;
}

static __always_inline struct selection *selection_of(const struct sock_common *skc)
{
	__u64 cookie = skc->skc_net.net->net_cookie;
	return bpf_map_lookup_elem(&smc_select, &cookie);
}

/* The SYN of a connection the pod opens: its destination and port. */
SEC("struct_ops/syn_option")
int BPF_PROG(erdma_smcr_syn, struct tcp_sock *tp)
{
	const struct sock_common *skc = &tp->inet_conn.icsk_inet.sk.__sk_common;
	struct selection *s = selection_of(skc);
	if (!s)
		return 1;
	/* An IPv6 socket to a non-mapped address holds no IPv4 destination: never selected. */
	return count(s, selection_addr(s, skc->skc_daddr) && selection_port(&s->connect, bpf_ntohs(skc->skc_dport)));
}

/* The SYN-ACK to a peer whose SYN offered SMC: the listener's port and the peer's address. */
SEC("struct_ops/synack_option")
int BPF_PROG(erdma_smcr_synack, const struct tcp_sock *tp, struct inet_request_sock *ireq)
{
	const struct sock_common *skc = &tp->inet_conn.icsk_inet.sk.__sk_common;
	struct selection *s = selection_of(skc);
	if (!s)
		return 1;
	return count(s, selection_addr(s, ireq->req.__req_common.skc_daddr) && selection_port(&s->listen, skc->skc_num));
}

SEC(".struct_ops")
struct smc_hs_ctrl erdma_smcr = {
	.name = "erdma_smcr",
	.syn_option = (void *)erdma_smcr_syn,
	.synack_option = (void *)erdma_smcr_synack,
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";
