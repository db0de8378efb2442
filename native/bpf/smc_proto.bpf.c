// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Transparent SMC for unmodified programs on kernels with IPPROTO_SMC (6.11+): an fmod_ret program
 * on update_socket_protocol() (6.6+) turns socket(AF_INET|AF_INET6, SOCK_STREAM, 0 or IPPROTO_TCP)
 * into an IPPROTO_SMC socket, for the processes of the network namespaces listed in smc_netns only.
 * __sys_socket() calls the hook before it masks the flags off `type`, so a runtime's
 * SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC (Go always, CPython, Rust's std and libuv: SOCK_CLOEXEC)
 * arrives with them set: the type is compared without them.
 * The node agent loads and pins it; our CNI plugin adds a pod's netns cookie at ADD and removes it at
 * DEL. Sockets the kernel creates for itself (SMC's own TCP clcsock) never pass through here.
 *
 * Built CO-RE without vmlinux.h: the three kernel structures read are declared below with only the
 * fields used, and libbpf relocates their offsets against the running kernel's BTF.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define AF_INET 2
#define AF_INET6 10
#define SOCK_STREAM 1
/* include/linux/net.h: the socket type proper; the bits above it are SOCK_NONBLOCK, SOCK_CLOEXEC. */
#define SOCK_TYPE_MASK 0xf
#define IPPROTO_TCP 6
#define IPPROTO_SMC 256

struct net {
	__u64 net_cookie;
} __attribute__((preserve_access_index));

struct nsproxy {
	struct net *net_ns;
} __attribute__((preserve_access_index));

struct task_struct {
	struct nsproxy *nsproxy;
} __attribute__((preserve_access_index));

/* The enabled network namespaces, by cookie (SO_NETNS_COOKIE); the value counts switched sockets. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} smc_netns SEC(".maps");

SEC("fmod_ret/update_socket_protocol")
int BPF_PROG(smc_socket_protocol, int family, int type, int protocol)
{
	struct task_struct *task;
	__u64 cookie, *switched;

	if ((family != AF_INET && family != AF_INET6) || (type & SOCK_TYPE_MASK) != SOCK_STREAM)
		return protocol;
	if (protocol != 0 && protocol != IPPROTO_TCP)
		return protocol;
	task = (struct task_struct *)bpf_get_current_task();
	cookie = BPF_CORE_READ(task, nsproxy, net_ns, net_cookie);
	switched = bpf_map_lookup_elem(&smc_netns, &cookie);
	if (!switched)
		return protocol;
	__sync_fetch_and_add(switched, 1);
	return IPPROTO_SMC;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
