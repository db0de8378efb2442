/* The node agent's tools in the plugin binary: `pnet` and `ueid` (SMC generic netlink), `smc`
 * (smc_diag), `net` (rtnetlink) and `sysctls` (the allow-list), each as JSON or text, inside a
 * network namespace when asked (netns_run). No smc-tools or iproute2 on the node is needed. */
#include "node_tools.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/smc.h>
#include "eni.h"
#include "netns.h"
#include "selection.h"
#include "smc_genl.h"
#include "settings.h"
#include "smcbpf.h"
#include "smc_stats.h"
#include "smcdiag.h"
#include "util.h"

/* The smallest MTU IPv4 allows (RFC 791). */
#define MIN_IPV4_MTU 68

/* The tools' usage, on `out`. */
static void usage_to(FILE *out)
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
	      "                           --metric-subnet N --metric-default N [--mtu N] [--netns PATH]\n"
	      "  erdma-smcr sysctls                 the sysctls the plugin may set, with their ranges (JSON)\n"
	      "  erdma-smcr mechanisms [--proc DIR] which transparent SMC mechanisms work on this node (JSON)\n"
	      "  erdma-smcr bpf load|ensure|unload|status [--dir DIR] the IPPROTO_SMC program's pins\n"
	      "  erdma-smcr bpf enable|disable --netns PATH [--dir DIR]\n"
	      "  erdma-smcr preload-install DIR   copies libsmc-preload.so from beside this binary into DIR\n",
	      out);
}

static int usage(void)
{
	usage_to(stderr);
	return 2;
}

/* Asked for help (`--help` or `-h` anywhere, or `help` after the command): the usage on stdout,
 * exit 0, as every command of the CLI answers it (#102). */
static int wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") || (i == 2 && !strcmp(argv[i], "help")))
			return 1;
	return 0;
}

struct opts {
	const char *id, *ib, *eth, *netns;
	int port, json;
};

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"id", required_argument, 0, 'i'},
		{"ib", required_argument, 0, 'b'},
		{"eth", required_argument, 0, 'e'},
		{"port", required_argument, 0, 'p'},
		{"netns", required_argument, 0, 'n'},
		{"json", no_argument, 0, 'j'},
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

/* pnet and ueid, run inside --netns when given (or here). */
struct table_ctx {
	int argc;
	char **argv;
	const struct opts *o;
};

static int table_here(void *p)
{
	struct table_ctx *x = p;
	/* getopt_long moved the operands (verb, ID) to the end: argv+1+optind. */
	if (optind >= x->argc - 1)
		return usage();
	if (!strcmp(x->argv[1], "pnet"))
		return pnet_cmd(x->argv[1 + optind], x->o);
	return ueid_cmd(x->argc - 1 - optind, x->argv + 1 + optind, x->o);
}

/* The message for a --netns we could not enter or leave. */
static int netns_report(const char *path, int rc)
{
	fprintf(stderr, "erdma-smcr: cannot %s netns %s: %s\n", rc == NETNS_ERR_LEAVE ? "leave" : "enter", path,
		netns_strerror(rc));
	return 1;
}

static int table_cmd(int argc, char **argv)
{
	struct opts o;
	struct table_ctx x = {argc, argv, &o};
	int result, rc;
	if (argc < 3 || parse_opts(argc - 1, argv + 1, &o))
		return usage();
	rc = netns_run(o.netns, NETNS_ALLOW_SELF, table_here, &x, &result);
	return rc ? netns_report(o.netns, rc) : result;
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
/* Distinct --select texts of one `smc summary` call (the agent gives one per pod of a batch). */
#define SMC_MAX_SELECTIONS 4096

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

struct summary_job {
	struct smc_summary sum;
	const struct selection *sel;
};

static int summary_here(void *p)
{
	struct summary_job *j = p;
	return smc_summary_read(&j->sum, j->sel);
}

/* `smc summary [--select SEL] --netns A [--select SEL2] --netns B ...`: one JSON line per
 * namespace, in order, in one process (the agent samples every SMC-R pod of a node with one call).
 * A --select applies to the namespaces after it (an empty one: none), so that connections each
 * pod's selection kept on TCP are counted apart (selectionKept). */
static int smc_summaries(char **paths, struct selection **sels, int n)
{
	static struct summary_job job;
	int i, rc, result, failed = 0;
	for (i = 0; i < n; i++) {
		fputs("{\"netns\":\"", stdout);
		put_json_str(stdout, paths[i]);
		fputs("\",", stdout);
		job.sel = sels[i];
		/* Reading our own netns is fine: NETNS_ALLOW_SELF. */
		rc = netns_run(paths[i], NETNS_ALLOW_SELF, summary_here, &job, &result);
		if (rc) {
			fprintf(stdout, "\"error\":\"cannot enter the netns: %s\"}\n", netns_strerror(rc));
			failed = 1;
			continue;
		}
		if (result) {
			fprintf(stdout, "\"error\":\"%s\"}\n", smc_strerror(result));
			failed = 1;
			continue;
		}
		fputs("\"summary\":", stdout);
		smc_summary_print(stdout, &job.sum);
		fputs("}\n", stdout);
	}
	return failed;
}

static int smc_here(void *p)
{
	const char *verb = p;
	struct smc_summary sum;
	int rc;
	if (!strcmp(verb, "sockets"))
		return smc_sockets(stdout);
	if (!strcmp(verb, "stats"))
		return smc_stats(stdout);
	rc = smc_summary_read(&sum, NULL);
	if (rc == 0) {
		smc_summary_print(stdout, &sum);
		fputc('\n', stdout);
	}
	return rc;
}

/* `smc sockets|summary|stats` (smc_diag, smcdiag.h; SMC generic netlink, smc_stats.h). */
static int smc_cmd(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"netns", required_argument, 0, 'n'}, {"select", required_argument, 0, 's'}, {0, 0, 0, 0}};
	static char *paths[SMC_MAX_NETNS];
	static struct selection *sels[SMC_MAX_NETNS], parsed[SMC_MAX_SELECTIONS];
	struct selection *current = NULL;
	const char *verb;
	char why[160];
	int ch, rc, result, n = 0, nsel = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (ch == 's') {
			current = NULL;
			if (!*optarg)
				continue;
			if (nsel >= SMC_MAX_SELECTIONS)
				return usage();
			if (selection_parse(optarg, &parsed[nsel], why, sizeof(why))) {
				fprintf(stderr, "erdma-smcr: smc summary --select: %s\n", why);
				return 2;
			}
			current = &parsed[nsel++];
			continue;
		}
		if (ch != 'n' || n >= SMC_MAX_NETNS)
			return usage();
		sels[n] = current;
		paths[n++] = optarg;
	}
	if (optind != argc - 1)
		return usage();
	verb = argv[optind];
	if (strcmp(verb, "sockets") && strcmp(verb, "summary") && strcmp(verb, "stats"))
		return usage();
	if (n > 1 && strcmp(verb, "summary"))
		return usage();
	if (nsel > 0 && strcmp(verb, "summary"))
		return usage();
	if (n >= 1 && !strcmp(verb, "summary"))
		return smc_summaries(paths, sels, n);
	rc = netns_run(n == 1 ? paths[0] : NULL, NETNS_ALLOW_SELF, smc_here, (void *)verb, &result);
	if (rc)
		return netns_report(paths[0], rc);
	if (result) {
		fprintf(stderr, "erdma-smcr: smc %s: %s\n", verb, smc_strerror(result));
		return 1;
	}
	return 0;
}

/* The options `net configure` requires, as bits of what was given. */
enum {
	NET_HAVE_DEV = 1 << 0,
	NET_HAVE_ADDR = 1 << 1,
	NET_HAVE_CIDR = 1 << 2,
	NET_HAVE_GATEWAY = 1 << 3,
	NET_HAVE_METRIC_SUBNET = 1 << 4,
	NET_HAVE_METRIC_DEFAULT = 1 << 5,
	NET_HAVE_ALL = (1 << 6) - 1,
};

struct net_ctx {
	const char *verb;
	struct net_conf c;
};

static int net_here(void *p)
{
	struct net_ctx *x = p;
	int rc;
	if (strcmp(x->verb, "show"))
		return net_configure(&x->c, stdout, stderr);
	rc = net_show(stdout);
	if (rc)
		fprintf(stderr, "erdma-smcr: net show: %s\n", strerror(-rc));
	return rc ? 1 : 0;
}

/* `net show` / `net configure` (rtnetlink; see net.h). */
static int net_cmd(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dev", required_argument, 0, 'd'},
		{"addr", required_argument, 0, 'a'},
		{"cidr", required_argument, 0, 'c'},
		{"gateway", required_argument, 0, 'g'},
		{"metric-subnet", required_argument, 0, 's'},
		{"metric-default", required_argument, 0, 'f'},
		{"mtu", required_argument, 0, 'm'},
		{"netns", required_argument, 0, 'n'},
		{0, 0, 0, 0},
	};
	struct net_ctx x;
	struct net_conf *c = &x.c;
	const char *netns = NULL;
	int ch, rc, result, bad = 0, have = 0;
	memset(&x, 0, sizeof(x));
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			c->dev = optarg;
			have |= NET_HAVE_DEV;
			break;
		case 'a':
			bad |= parse_ipv4(optarg, &c->addr, &c->prefix, 1);
			have |= NET_HAVE_ADDR;
			break;
		case 'c':
			bad |= parse_ipv4(optarg, &c->cidr, &c->cidr_len, 1);
			have |= NET_HAVE_CIDR;
			break;
		case 'g':
			bad |= parse_ipv4(optarg, &c->gateway, NULL, 0);
			have |= NET_HAVE_GATEWAY;
			break;
		case 's':
			bad |= parse_u32(optarg, &c->metric_subnet);
			have |= NET_HAVE_METRIC_SUBNET;
			break;
		case 'f':
			bad |= parse_u32(optarg, &c->metric_default);
			have |= NET_HAVE_METRIC_DEFAULT;
			break;
		case 'm': bad |= parse_u32(optarg, &c->mtu) || c->mtu < MIN_IPV4_MTU; break;
		case 'n': netns = optarg; break;
		default: return usage();
		}
	}
	if (optind != argc - 1)
		return usage();
	x.verb = argv[optind];
	if (strcmp(x.verb, "show") && strcmp(x.verb, "configure"))
		return usage();
	if (!strcmp(x.verb, "configure") && (bad || have != NET_HAVE_ALL || strlen(c->dev) >= IFNAMSIZ)) {
		fputs("erdma-smcr: net configure: --dev, --addr A.B.C.D/LEN, --cidr NET/LEN, --gateway A.B.C.D, --metric-subnet and "
		      "--metric-default are required and must be valid (--mtu at least 68)\n",
		      stderr);
		return 2;
	}
	rc = netns_run(netns, NETNS_ALLOW_SELF, net_here, &x, &result);
	return rc ? netns_report(netns, rc) : result;
}

/* `sysctls`: the allow-list the plugin applies, as JSON (the agent's and the tests' contract). */
static int sysctls_cmd(int argc)
{
	if (argc != 2)
		return usage();
	settings_print_knobs(stdout);
	return 0;
}

/* Copies `from` to `dir`/libsmc-preload.so through a temporary name, mode 0644. 0 or -errno. */
static int copy_library(const char *from, const char *dir)
{
	char tmp[4096], to[4096], buf[65536];
	ssize_t n = 0;
	int in, out, rc = 0;
	if (snprintf(tmp, sizeof(tmp), "%s/.libsmc-preload.so.tmp", dir) >= (int)sizeof(tmp) ||
	    snprintf(to, sizeof(to), "%s/libsmc-preload.so", dir) >= (int)sizeof(to))
		return -ENAMETOOLONG;
	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	unlink(tmp);
	out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	while (rc == 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			rc = errno ? -errno : -EIO;
	if (n < 0 && rc == 0)
		rc = -errno;
	close(in);
	if (fchmod(out, 0644) && rc == 0)
		rc = -errno;
	if (close(out) && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, to))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

/*
 * `preload-install DIR`: what the init container the webhook gives pods of preload nodes runs, from
 * our image, into an emptyDir the pod's containers mount read-only: the preload library reaches
 * them with no hostPath (Pod Security baseline and restricted allow emptyDir only).
 */
static int preload_install_cmd(int argc, char **argv)
{
	char self[4096], from[4200];
	ssize_t n;
	int rc;
	if (argc != 3)
		return usage();
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0) {
		fprintf(stderr, "erdma-smcr: preload-install: cannot find this binary: %s\n", strerror(errno));
		return 1;
	}
	self[n] = 0;
	snprintf(from, sizeof(from), "%s/libsmc-preload.so", dirname(self));
	rc = copy_library(from, argv[2]);
	if (rc) {
		fprintf(stderr, "erdma-smcr: preload-install: cannot copy %s into %s: %s\n", from, argv[2], strerror(-rc));
		return 1;
	}
	return 0;
}

int node_tools_main(int argc, char **argv)
{
	if (wants_help(argc, argv)) {
		usage_to(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "preload-install"))
		return preload_install_cmd(argc, argv);
	if (!strcmp(argv[1], "pnet") || !strcmp(argv[1], "ueid"))
		return table_cmd(argc, argv);
	if (!strcmp(argv[1], "net"))
		return net_cmd(argc - 1, argv + 1);
	if (!strcmp(argv[1], "smc"))
		return smc_cmd(argc - 1, argv + 1);
	if (!strcmp(argv[1], "sysctls"))
		return sysctls_cmd(argc);
	if (!strcmp(argv[1], "bpf") || !strcmp(argv[1], "mechanisms"))
		return smcbpf_tool(argc - 1, argv + 1);
	return usage();
}
