// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A server "outside the cluster" that replays a TCP option it does not implement, as Alibaba's SMC
 * FAQ ("Communication fails after SMC is enabled") describes: every SYN-ACK of the sockets of its
 * cgroup carries SMC's experimental option (kind 254, length 6, ExID 0xE2D4C3D9, RFC 7609), with no
 * SMC behind it. A client whose SYN offered SMC then believes the peer speaks SMC and starts SMC's
 * CLC handshake over a connection whose server reads it as application data. A sockops program
 * (5.10+: BPF_SOCK_OPS_WRITE_HDR_OPT_CB) attached to the server's cgroup by the selection scenario.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define TCPHDR_SYN 0x02
#define TCPHDR_ACK 0x10

SEC("sockops")
int replay_smc_option(struct bpf_sock_ops *skops)
{
	__u8 opt[6] = {254, 6, 0xe2, 0xd4, 0xc3, 0xd9};
	int synack = (skops->skb_tcp_flags & (TCPHDR_SYN | TCPHDR_ACK)) == (TCPHDR_SYN | TCPHDR_ACK);
	switch (skops->op) {
	case BPF_SOCK_OPS_TCP_LISTEN_CB:
		/* The listener's flag is what the kernel reads for its SYN-ACKs. */
		bpf_sock_ops_cb_flags_set(skops, BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		if (synack)
			bpf_reserve_hdr_opt(skops, sizeof(opt), 0);
		break;
	case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:
		if (synack)
			bpf_store_hdr_opt(skops, opt, sizeof(opt), 0);
		break;
	}
	return 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
