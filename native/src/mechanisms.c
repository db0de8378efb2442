/* `erdma-smcr mechanisms` (which ways to make a program's TCP an SMC socket work on this node) and
 * `erdma-smcr bpf ...` (the IPPROTO_SMC program's pins and per-netns switch). The node agent runs
 * both; see smcbpf.h and docs/support-matrix.md. */
#include "smcbpf.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/genetlink.h>
#include <linux/smc.h>
#include "netns.h"
#include "smc_genl.h"

#ifndef AF_SMC
#define AF_SMC 43
#endif
#define IPPROTO_SMC_NUM 256

struct probe {
	int ok;
	char why[256];
};

static void print_probe(FILE *out, const char *name, const struct probe *p, int last)
{
	const char *c;
	fprintf(out, "\"%s\":{\"ok\":%s", name, p->ok ? "true" : "false");
	if (!p->ok) {
		fputs(",\"why\":\"", out);
		for (c = p->why; *c; c++)
			if (*c == '"' || *c == '\\')
				fprintf(out, "\\%c", *c);
			else if ((unsigned char)*c >= 0x20)
				fputc(*c, out);
		fputc('"', out);
	}
	fprintf(out, "}%s", last ? "" : ",");
}

static void probe_socket(struct probe *p, int family, int protocol, const char *missing)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, protocol);
	if (fd >= 0) {
		p->ok = 1;
		close(fd);
		return;
	}
	snprintf(p->why, sizeof(p->why), "%s (%s)", missing, strerror(errno));
}

/* loopback-ism (CONFIG_SMC_LO, upstream 6.9; Alibaba Cloud Linux 4's kernel): the emulated ISM
 * device that gives SMC-D between processes of one kernel. It has no sysfs node (it is initialised,
 * never added) and the SMC-D device dump skips it (smc_nl_prep_smcd_dev), so the probe reads SMC's
 * system information: registering loopback-ism makes the kernel ISMv2 capable
 * (smc_ism_set_v2_capable, SMC_NLA_SYS_IS_ISM_V2). The only other source of that is IBM Z's ISM
 * hardware, which no x86 or Arm node has. */
#define NLA_ALIGN4(n) (((n) + 3u) & ~3u)

static int sys_walk(const unsigned char *p, size_t len, int depth, int *ism_v2)
{
	size_t off = 0;
	while (off + NLA_HDRLEN <= len) {
		const struct nlattr *a = (const struct nlattr *)(p + off);
		unsigned type = a->nla_type & NLA_TYPE_MASK;
		if (a->nla_len < NLA_HDRLEN || off + a->nla_len > len)
			return -1;
		if (depth == 0 && type == SMC_GEN_SYS_INFO)
			sys_walk((const unsigned char *)a + NLA_HDRLEN, a->nla_len - NLA_HDRLEN, 1, ism_v2);
		else if (depth == 1 && type == SMC_NLA_SYS_IS_ISM_V2 && a->nla_len >= NLA_HDRLEN + 1)
			*ism_v2 = *((const unsigned char *)a + NLA_HDRLEN) != 0;
		off += NLA_ALIGN4(a->nla_len);
	}
	return 0;
}

static int on_sys_info(const struct nlmsghdr *h, void *ctx)
{
	if (h->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN)
		return -1;
	return sys_walk((const unsigned char *)h + NLMSG_HDRLEN + GENL_HDRLEN, h->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN, 0,
			ctx);
}

static void probe_loopback_ism(struct probe *p)
{
	int ism_v2 = -1;
	int rc = genl_dump(SMC_GENL_FAMILY_NAME, SMC_NETLINK_GET_SYS_INFO, SMC_GENL_FAMILY_VERSION, on_sys_info, &ism_v2);
	if (rc == 0 && ism_v2 == 1) {
		p->ok = 1;
		return;
	}
	if (rc == -ENOENT)
		snprintf(p->why, sizeof(p->why), "no SMC generic netlink family (smc not loaded)");
	else if (rc)
		snprintf(p->why, sizeof(p->why), "cannot read SMC's system information (%s)", strerror(-rc));
	else
		snprintf(p->why, sizeof(p->why),
			 "no loopback-ism SMC-D device (CONFIG_SMC_LO, upstream 6.9+; on in Alibaba Cloud Linux 4)");
}

/* Whether the chosen mechanism keeps a pod's SMC selection per connection (docs/policy.md). */
static void select_probe(struct probe *p, const char *chosen, const char *proc)
{
	char knob[512];
	snprintf(knob, sizeof(knob), "%s/sys/net/smc/hs_ctrl", proc);
	p->ok = !strcmp(chosen, "preload") || (!strcmp(chosen, "bpf") && access(knob, F_OK) == 0);
	if (p->ok)
		return;
	if (!strcmp(chosen, "tcp2smc"))
		snprintf(p->why, sizeof(p->why), "net.smc.tcp2smc converts every TCP socket of a pod netns");
	else if (!strcmp(chosen, "bpf"))
		snprintf(p->why, sizeof(p->why), "no smc_hs_ctrl on this kernel (6.19+ with CONFIG_SMC_HS_CTRL_BPF)");
	else
		snprintf(p->why, sizeof(p->why), "no mechanism");
}

/* `proc`: where the host's /proc is (the agent passes its own; tests a fake one). */
static int mechanisms_cmd(const char *proc)
{
	struct probe tcp2smc = {0, ""}, ipproto = {0, ""}, bpf = {0, ""}, afsmc = {0, ""}, lo = {0, ""}, sel = {0, ""};
	const char *chosen = "none";
	char knob[512];
	snprintf(knob, sizeof(knob), "%s/sys/net/smc/tcp2smc", proc);
	if (access(knob, F_OK) == 0)
		tcp2smc.ok = 1;
	else
		snprintf(tcp2smc.why, sizeof(tcp2smc.why), "no net.smc.tcp2smc (an Alibaba Cloud Linux 3 kernel's knob)");
	probe_socket(&afsmc, AF_SMC, 0, "no AF_SMC sockets: the smc module is not loaded or not built");
	probe_socket(&ipproto, AF_INET, IPPROTO_SMC_NUM, "no IPPROTO_SMC sockets (kernel 6.11+ with smc loaded)");
	if (smcbpf_probe(bpf.why, sizeof(bpf.why)) == 0)
		bpf.ok = 1;
	/* After the socket probes: the first SMC socket made the kernel load smc. */
	probe_loopback_ism(&lo);
	if (tcp2smc.ok)
		chosen = "tcp2smc";
	else if (ipproto.ok && bpf.ok)
		chosen = "bpf";
	else if (afsmc.ok)
		chosen = "preload";
	select_probe(&sel, chosen, proc);
	printf("{\"mechanism\":\"%s\",", chosen);
	print_probe(stdout, "tcp2smc", &tcp2smc, 0);
	print_probe(stdout, "ipprotoSmc", &ipproto, 0);
	print_probe(stdout, "bpf", &bpf, 0);
	print_probe(stdout, "afSmc", &afsmc, 0);
	/* Not a mechanism: a transport the CLC handshake prefers between two ends on this kernel. */
	print_probe(stdout, "loopbackIsm", &lo, 0);
	/* Not a mechanism either: whether the chosen one keeps a pod's SMC selection (#93). */
	print_probe(stdout, "selection", &sel, 1);
	puts("}");
	return 0;
}

static int bpf_usage(void)
{
	fputs("usage: erdma-smcr bpf load|ensure|unload|status [--dir DIR]\n"
	      "       erdma-smcr bpf enable|disable --netns PATH [--dir DIR]\n"
	      "       erdma-smcr bpf cookie [--netns PATH]\n",
	      stderr);
	return 2;
}

static int bpf_cmd(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dir", required_argument, 0, 'd'}, {"netns", required_argument, 0, 'n'}, {0, 0, 0, 0}};
	const char *dir = SMCBPF_DEFAULT_DIR, *netns = NULL, *verb;
	char why[300] = "";
	uint64_t cookie;
	int ch, rc;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (ch == 'd')
			dir = optarg;
		else if (ch == 'n')
			netns = optarg;
		else
			return bpf_usage();
	}
	if (optind != argc - 1)
		return bpf_usage();
	verb = argv[optind];
	/* load replaces what is pinned (a new agent's program); ensure keeps a program already pinned. */
	if (!strcmp(verb, "load") || !strcmp(verb, "ensure")) {
		rc = smcbpf_load(dir, !strcmp(verb, "load"), why, sizeof(why));
		if (rc)
			fprintf(stderr, "erdma-smcr: bpf %s: %s\n", verb, why);
		return rc ? 1 : 0;
	}
	if (!strcmp(verb, "unload")) {
		rc = smcbpf_unload(dir);
		if (rc)
			fprintf(stderr, "erdma-smcr: bpf unload %s: %s\n", dir, strerror(-rc));
		return rc ? 1 : 0;
	}
	if (!strcmp(verb, "status"))
		return smcbpf_status(dir, stdout);
	if (strcmp(verb, "enable") && strcmp(verb, "disable") && strcmp(verb, "cookie"))
		return bpf_usage();
	if (strcmp(verb, "cookie") && !netns)
		return bpf_usage();
	rc = smcbpf_netns_cookie(netns, &cookie);
	if (rc) {
		fprintf(stderr, "erdma-smcr: cannot read the netns cookie of %s: %s\n", netns ? netns : "this netns",
			rc < 0 && rc > -4096 ? strerror(-rc) : netns_strerror(rc));
		return 1;
	}
	if (!strcmp(verb, "cookie")) {
		printf("%llu\n", (unsigned long long)cookie);
		return 0;
	}
	rc = smcbpf_set(dir, cookie, !strcmp(verb, "enable"));
	if (rc) {
		fprintf(stderr, "erdma-smcr: bpf %s %s: %s\n", verb, netns,
			rc == -ENOENT ? "not loaded (no pinned map; run bpf load) or not listed" : strerror(-rc));
		return 1;
	}
	return 0;
}

int smcbpf_tool(int argc, char **argv)
{
	if (!strcmp(argv[0], "mechanisms")) {
		if (argc == 1)
			return mechanisms_cmd("/proc");
		if (argc == 3 && !strcmp(argv[1], "--proc"))
			return mechanisms_cmd(argv[2]);
		fputs("usage: erdma-smcr mechanisms [--proc DIR]\n", stderr);
		return 2;
	}
	return bpf_cmd(argc, argv);
}
