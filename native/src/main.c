/* erdma-smcr: the CNI plugin (run by the container runtime with CNI_COMMAND set) and, for the
 * node agent, `erdma-smcr pnet ...` and `erdma-smcr ueid ...` (generic netlink, no smc-tools). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/smc.h>
#include "cni.h"
#include "netns.h"
#include "nl.h"
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
	      "  erdma-smcr ueid add|del ID | list [--json] | flush\n",
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

int main(int argc, char **argv)
{
	struct cni_env env;
	char *input;
	size_t len = 0;
	int rc;
	if (argc > 1 && (!strcmp(argv[1], "pnet") || !strcmp(argv[1], "ueid")))
		return subcommand(argc, argv);
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
