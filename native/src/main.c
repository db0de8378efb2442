/* erdma-smcr: the CNI plugin (run by the container runtime with CNI_COMMAND set) and, for the
 * node agent, `erdma-smcr pnet ...` and `erdma-smcr ueid ...` (generic netlink, no smc-tools). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/smc.h>
#include "cni.h"
#include "net.h"
#include "netns.h"
#include "nl.h"
#include "smcdiag.h"
#include "util.h"

#define STDIN_LIMIT (16u << 20)

static int usage(void)
{
	fputs("usage:\n"
	      "  erdma-smcr                      CNI plugin (CNI_COMMAND=ADD|CHECK|DEL|GC|STATUS|VERSION, config on stdin)\n"
	      "  erdma-smcr pnet add --id ID (--ib DEV [--port N] | --eth IF) [--netns PATH]\n"
	      "  erdma-smcr pnet del --id ID [--netns PATH]\n"
	      "  erdma-smcr pnet list [--json] [--netns PATH]\n"
	      "  erdma-smcr pnet flush [--netns PATH]\n"
	      "  erdma-smcr ueid add|del ID | list [--json] | flush\n"
	      "  erdma-smcr smc sockets|summary|stats [--netns PATH]\n"
	      "  erdma-smcr smc summary --netns PATH [--netns PATH ...]   one JSON line per netns: {netns, summary|error}\n"
	      "  erdma-smcr net show [--netns PATH]\n"
	      "  erdma-smcr net configure --dev IF --addr A.B.C.D/LEN --cidr NET/LEN --gateway A.B.C.D\n"
	      "                           --metric-subnet N --metric-default N [--mtu N] [--netns PATH]\n",
	      stderr);
	return 2;
}

struct opts {
	const char *id, *ib, *eth, *netns;
	int port, json;
};

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"id", required_argument, 0, 'i'}, {"ib", required_argument, 0, 'b'},
		{"eth", required_argument, 0, 'e'}, {"port", required_argument, 0, 'p'},
		{"netns", required_argument, 0, 'n'}, {"json", no_argument, 0, 'j'},
		{0, 0, 0, 0},
	};
	int ch;
	memset(o, 0, sizeof(*o));
	o->port = 1;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'i': o->id = optarg; break;
		case 'b': o->ib = optarg; break;
		case 'e': o->eth = optarg; break;
		case 'p': o->port = atoi(optarg); break;
		case 'n': o->netns = optarg; break;
		case 'j': o->json = 1; break;
		default: return -1;
		}
	}
	return 0;
}

static int print_pnet(const struct nlmsghdr *h, void *ctx)
{
	struct pnet_entry e;
	int *first = ctx;
	if (pnet_parse(h, &e))
		return -1;
	if (*first >= 0) {
		printf("%s{\"id\":\"%s\",\"eth\":\"%s\",\"ib\":\"%s\",\"port\":%d}", *first ? "" : ",", e.name, e.eth, e.ib,
		       e.ib[0] ? e.port : 0);
		*first = 0;
	} else if (e.eth[0]) {
		printf("%s eth %s\n", e.name, e.eth);
	} else {
		printf("%s ib %s port %d\n", e.name, e.ib, e.port);
	}
	return 0;
}

static int report(const char *what, int rc)
{
	if (rc == 0)
		return 0;
	if (rc == -ENOENT)
		fprintf(stderr, "erdma-smcr: %s: the SMC netlink family is missing (is the smc module loaded?) or the entry does not exist\n", what);
	else
		fprintf(stderr, "erdma-smcr: %s: %s\n", what, strerror(-rc));
	return 1;
}

static int pnet_cmd(const char *verb, const struct opts *o)
{
	struct pnet_entry e;
	int first = 1, rc;
	if (!strcmp(verb, "add")) {
		if (!o->id || (!o->ib == !o->eth))
			return usage();
		memset(&e, 0, sizeof(e));
		if (copy_str(e.name, sizeof(e.name), o->id) || copy_str(e.eth, sizeof(e.eth), o->eth ? o->eth : "") ||
		    copy_str(e.ib, sizeof(e.ib), o->ib ? o->ib : "")) {
			fputs("erdma-smcr: pnet add: an argument is too long\n", stderr);
			return 2;
		}
		e.port = o->port;
		rc = pnet_add(&e);
		return report("pnet add", rc == -EEXIST ? 0 : rc);
	}
	if (!strcmp(verb, "del"))
		return o->id ? report("pnet del", pnet_del(o->id)) : usage();
	if (!strcmp(verb, "flush"))
		return report("pnet flush", pnet_flush());
	if (!strcmp(verb, "list")) {
		if (o->json)
			fputs("[", stdout);
		else
			first = -1;
		rc = pnet_list(print_pnet, &first);
		if (o->json)
			fputs("]\n", stdout);
		return report("pnet list", rc);
	}
	return usage();
}

static int print_ueid(const struct nlmsghdr *h, void *ctx)
{
	char id[EID_LEN + 1];
	int *first = ctx;
	if (ueid_parse(h, id, sizeof(id)))
		return -1;
	if (*first >= 0)
		printf("%s\"%s\"", *first ? "" : ",", id), *first = 0;
	else
		printf("%s\n", id);
	return 0;
}

static int ueid_cmd(int argc, char **argv, const struct opts *o)
{
	const char *verb = argv[0];
	int first = o->json ? 1 : -1, rc;
	if (!strcmp(verb, "add") || !strcmp(verb, "del")) {
		if (argc < 2)
			return usage();
		rc = ueid_op(!strcmp(verb, "add") ? SMC_NETLINK_ADD_UEID : SMC_NETLINK_REMOVE_UEID, argv[1]);
		return report(!strcmp(verb, "add") ? "ueid add" : "ueid del", rc == -EEXIST ? 0 : rc);
	}
	if (!strcmp(verb, "flush"))
		return report("ueid flush", ueid_op(SMC_NETLINK_FLUSH_UEID, NULL));
	if (!strcmp(verb, "list")) {
		if (o->json)
			fputs("[", stdout);
		rc = ueid_list(print_ueid, &first);
		if (o->json)
			fputs("]\n", stdout);
		return report("ueid list", rc);
	}
	return usage();
}

static int subcommand(int argc, char **argv)
{
	struct opts o;
	struct netns_guard g;
	int rc, entered = 0;
	if (argc < 3 || parse_opts(argc - 1, argv + 1, &o))
		return usage();
	if (o.netns) {
		rc = netns_enter(&g, o.netns);
		if (rc && rc != NETNS_ERR_SELF) { /* already in it: nothing to enter */
			fprintf(stderr, "erdma-smcr: cannot enter netns %s: %s\n", o.netns, netns_strerror(rc));
			return 1;
		}
		entered = rc == 0;
	}
	/* getopt_long moved the operands (verb, ID) to the end: argv+1+optind. */
	if (!strcmp(argv[1], "pnet"))
		rc = optind < argc - 1 ? pnet_cmd(argv[1 + optind], &o) : usage();
	else
		rc = optind < argc - 1 ? ueid_cmd(argc - 1 - optind, argv + 1 + optind, &o) : usage();
	if (entered)
		netns_leave(&g);
	return rc;
}

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || s[0] == '-' || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

#define SMC_MAX_NETNS 65536

/* JSON string body for a path (quotes and backslashes escaped, control bytes as \u00XX). */
static void put_json_str(FILE *out, const char *v)
{
	for (; *v; v++) {
		unsigned char c = (unsigned char)*v;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
}

static const char *smc_strerror(int rc)
{
	return rc == -ENOENT || rc == -EINVAL ? "the kernel has no SMC socket diagnostics (load smc and smc_diag)" : strerror(-rc);
}

/* `smc summary --netns A --netns B ...`: one JSON line per namespace, in order, in one process
 * (the agent samples every SMC-R pod of a node with one call). */
static int smc_summaries(char **paths, int n)
{
	struct smc_summary sum;
	struct netns_guard g;
	int i, rc, entered, failed = 0;
	for (i = 0; i < n; i++) {
		fputs("{\"netns\":\"", stdout);
		put_json_str(stdout, paths[i]);
		fputs("\",", stdout);
		rc = netns_enter(&g, paths[i]);
		if (rc && rc != NETNS_ERR_SELF) {
			fprintf(stdout, "\"error\":\"cannot enter the netns: %s\"}\n", netns_strerror(rc));
			failed = 1;
			continue;
		}
		entered = rc == 0; /* NETNS_ERR_SELF: already there, which is fine for reading */
		rc = smc_summary_read(&sum);
		if (entered)
			netns_leave(&g);
		if (rc) {
			fprintf(stdout, "\"error\":\"%s\"}\n", smc_strerror(rc));
			failed = 1;
			continue;
		}
		fputs("\"summary\":", stdout);
		smc_summary_print(stdout, &sum);
		fputs("}\n", stdout);
	}
	return failed;
}

/* `smc sockets|summary|stats` (smc_diag and SMC generic netlink; see smcdiag.h). */
static int smc_cmd(int argc, char **argv)
{
	static const struct option longopts[] = {{"netns", required_argument, 0, 'n'}, {0, 0, 0, 0}};
	static char *paths[SMC_MAX_NETNS];
	struct netns_guard g;
	struct smc_summary sum;
	const char *verb;
	int ch, rc, entered = 0, n = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (ch != 'n' || n >= SMC_MAX_NETNS)
			return usage();
		paths[n++] = optarg;
	}
	if (optind != argc - 1)
		return usage();
	verb = argv[optind];
	if (strcmp(verb, "sockets") && strcmp(verb, "summary") && strcmp(verb, "stats"))
		return usage();
	if (n > 1 && strcmp(verb, "summary"))
		return usage();
	if (n >= 1 && !strcmp(verb, "summary"))
		return smc_summaries(paths, n);
	if (n == 1) {
		rc = netns_enter(&g, paths[0]);
		if (rc && rc != NETNS_ERR_SELF) {
			fprintf(stderr, "erdma-smcr: cannot enter netns %s: %s\n", paths[0], netns_strerror(rc));
			return 1;
		}
		entered = rc == 0;
	}
	if (!strcmp(verb, "sockets")) {
		rc = smc_sockets(stdout);
	} else if (!strcmp(verb, "summary")) {
		rc = smc_summary_read(&sum);
		if (rc == 0) {
			smc_summary_print(stdout, &sum);
			fputc('\n', stdout);
		}
	} else {
		rc = smc_stats(stdout);
	}
	if (entered)
		netns_leave(&g);
	if (rc) {
		fprintf(stderr, "erdma-smcr: smc %s: %s\n", verb, smc_strerror(rc));
		return 1;
	}
	return 0;
}

/* `net show` / `net configure` (rtnetlink; see net.h). */
static int net_cmd(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dev", required_argument, 0, 'd'}, {"addr", required_argument, 0, 'a'},
		{"cidr", required_argument, 0, 'c'}, {"gateway", required_argument, 0, 'g'},
		{"metric-subnet", required_argument, 0, 's'}, {"metric-default", required_argument, 0, 'f'},
		{"mtu", required_argument, 0, 'm'}, {"netns", required_argument, 0, 'n'},
		{0, 0, 0, 0},
	};
	struct net_conf c;
	struct netns_guard g;
	const char *netns = NULL, *verb;
	int ch, rc, bad = 0, have = 0, entered = 0;
	memset(&c, 0, sizeof(c));
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'd': c.dev = optarg; have |= 1; break;
		case 'a': bad |= parse_ipv4(optarg, &c.addr, &c.prefix, 1); have |= 2; break;
		case 'c': bad |= parse_ipv4(optarg, &c.cidr, &c.cidr_len, 1); have |= 4; break;
		case 'g': bad |= parse_ipv4(optarg, &c.gateway, NULL, 0); have |= 8; break;
		case 's': bad |= parse_u32(optarg, &c.metric_subnet); have |= 16; break;
		case 'f': bad |= parse_u32(optarg, &c.metric_default); have |= 32; break;
		case 'm': bad |= parse_u32(optarg, &c.mtu) || c.mtu < 68; break;
		case 'n': netns = optarg; break;
		default: return usage();
		}
	}
	if (optind != argc - 1)
		return usage();
	verb = argv[optind];
	if (strcmp(verb, "show") && strcmp(verb, "configure"))
		return usage();
	if (!strcmp(verb, "configure") && (bad || have != 63 || strlen(c.dev) >= 16)) {
		fputs("erdma-smcr: net configure: --dev, --addr A.B.C.D/LEN, --cidr NET/LEN, --gateway A.B.C.D, --metric-subnet and "
		      "--metric-default are required and must be valid (--mtu at least 68)\n",
		      stderr);
		return 2;
	}
	if (netns) {
		rc = netns_enter(&g, netns);
		if (rc && rc != NETNS_ERR_SELF) {
			fprintf(stderr, "erdma-smcr: cannot enter netns %s: %s\n", netns, netns_strerror(rc));
			return 1;
		}
		entered = rc == 0;
	}
	if (!strcmp(verb, "show")) {
		rc = net_show(stdout);
		if (rc)
			fprintf(stderr, "erdma-smcr: net show: %s\n", strerror(-rc));
		rc = rc ? 1 : 0;
	} else {
		rc = net_configure(&c, stdout, stderr);
	}
	if (entered)
		netns_leave(&g);
	return rc;
}

int main(int argc, char **argv)
{
	struct cni_env env;
	char *input;
	size_t len = 0;
	int rc;
	if (argc > 1 && (!strcmp(argv[1], "pnet") || !strcmp(argv[1], "ueid")))
		return subcommand(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "net"))
		return net_cmd(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "smc"))
		return smc_cmd(argc - 1, argv + 1);
	if (argc > 1)
		return usage();
	env.command = getenv("CNI_COMMAND");
	env.container_id = getenv("CNI_CONTAINERID");
	env.netns = getenv("CNI_NETNS");
	env.ifname = getenv("CNI_IFNAME");
	env.args = getenv("CNI_ARGS");
	env.path = getenv("CNI_PATH");
	input = (env.command && strcmp(env.command, "VERSION")) ? read_all(stdin, STDIN_LIMIT, &len) : strdup("{}");
	if (!input) {
		fputs("{\"cniVersion\":\"1.1.0\",\"code\":6,\"msg\":\"cannot read the network configuration from stdin (over 16 MiB?)\"}\n", stdout);
		return 1;
	}
	rc = cni_run(&env, input, stdout, stderr);
	free(input);
	return rc;
}
