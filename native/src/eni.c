/* `erdma-smcr net show|configure` over rtnetlink. configure applies its steps in order and, when
 * one fails, undoes the ones before it in reverse: a failed pass leaves the link as it found it. */
#include "eni.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include "rtnl.h"

static void put_ip(FILE *out, const char *key, uint32_t a)
{
	char buf[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &a, buf, sizeof(buf));
	fprintf(out, "\"%s\":\"%s\"", key, buf);
}

struct show_ctx {
	FILE *out;
	int first;
};

static void sep(struct show_ctx *s)
{
	fputs(s->first ? "" : ",", s->out);
	s->first = 0;
}

/* Interface names are at most 15 bytes with no '/' or whitespace, but may hold '"' or '\\'. */
static void put_name(FILE *out, const char *name)
{
	fputs("\"name\":\"", out);
	for (; *name; name++) {
		unsigned char c = (unsigned char)*name;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static int show_link(const struct rt_link *l, void *ctx)
{
	struct show_ctx *s = ctx;
	sep(s);
	fprintf(s->out, "{\"index\":%d,", l->index);
	put_name(s->out, l->name);
	if (l->has_mac)
		fprintf(s->out, ",\"mac\":\"%02x:%02x:%02x:%02x:%02x:%02x\"", l->mac[0], l->mac[1], l->mac[2], l->mac[3], l->mac[4], l->mac[5]);
	fprintf(s->out, ",\"mtu\":%u,\"up\":%s}", l->mtu, (l->flags & IFF_UP) ? "true" : "false");
	return 0;
}

static int show_addr(const struct rt_addr *a, void *ctx)
{
	struct show_ctx *s = ctx;
	sep(s);
	fprintf(s->out, "{\"index\":%d,", a->index);
	put_ip(s->out, "addr", a->addr);
	fprintf(s->out, ",\"prefix\":%u,\"scope\":%u,\"noprefixroute\":%s}", a->prefix, a->scope,
		(a->flags & IFA_F_NOPREFIXROUTE) ? "true" : "false");
	return 0;
}

static int show_route(const struct rt_route *r, void *ctx)
{
	struct show_ctx *s = ctx;
	char dst[INET_ADDRSTRLEN];
	if (r->type != RTN_UNICAST)
		return 0;
	inet_ntop(AF_INET, &r->dst, dst, sizeof(dst));
	sep(s);
	fprintf(s->out, "{\"dst\":\"%s/%u\",\"oif\":%d,\"metric\":%u,\"protocol\":%u,\"scope\":%u", dst, r->dst_len, r->oif, r->metric,
		r->protocol, r->scope);
	if (r->gateway) {
		fputc(',', s->out);
		put_ip(s->out, "gateway", r->gateway);
	}
	if (r->prefsrc) {
		fputc(',', s->out);
		put_ip(s->out, "prefsrc", r->prefsrc);
	}
	fputc('}', s->out);
	return 0;
}

int net_show(FILE *out)
{
	struct show_ctx s = {out, 1};
	int rc;
	fputs("{\"links\":[", out);
	rc = rt_dump_links(show_link, &s);
	fputs("],\"addrs\":[", out);
	s.first = 1;
	if (rc == 0)
		rc = rt_dump_addrs(show_addr, &s);
	fputs("],\"routes\":[", out);
	s.first = 1;
	if (rc == 0)
		rc = rt_dump_routes(show_route, &s);
	fputs("]}\n", out);
	return rc;
}

int parse_ipv4(const char *s, uint32_t *addr, uint8_t *len, int want_len)
{
	char buf[INET_ADDRSTRLEN + 4];
	char *slash, *end;
	long n;
	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (!slash != !want_len)
		return -1;
	if (slash) {
		*slash = '\0';
		errno = 0;
		n = strtol(slash + 1, &end, 10);
		if (errno || *end || end == slash + 1 || n < 0 || n > 32)
			return -1;
		*len = (uint8_t)n;
	}
	return inet_pton(AF_INET, buf, addr) == 1 ? 0 : -1;
}

struct find_ctx {
	const char *name;
	struct rt_link link;
	int found;
	int has_global_addr;
};

static int find_link(const struct rt_link *l, void *ctx)
{
	struct find_ctx *f = ctx;
	if (!strcmp(l->name, f->name)) {
		f->link = *l;
		f->found = 1;
	}
	return 0;
}

static int find_addr(const struct rt_addr *a, void *ctx)
{
	struct find_ctx *f = ctx;
	if (a->index == f->link.index && a->scope == RT_SCOPE_UNIVERSE)
		f->has_global_addr = 1;
	return 0;
}

/* What configure has done so far, for the undo. */
struct done {
	int mtu, up, addr, subnet, deflt;
};

static void undo(const struct net_conf *c, const struct find_ctx *f, const struct rt_route *subnet, const struct rt_route *deflt,
		 const struct done *d, FILE *err)
{
	int rc;
	if (d->deflt && (rc = rt_route_change(0, deflt)))
		fprintf(err, "erdma-smcr: net configure: undo: cannot remove the default route: %s\n", strerror(-rc));
	if (d->subnet && (rc = rt_route_change(0, subnet)))
		fprintf(err, "erdma-smcr: net configure: undo: cannot remove the subnet route: %s\n", strerror(-rc));
	if (d->addr && (rc = rt_addr_change(0, f->link.index, c->addr, c->prefix, 1)))
		fprintf(err, "erdma-smcr: net configure: undo: cannot remove the address: %s\n", strerror(-rc));
	if (d->up && (rc = rt_link_set(f->link.index, 0, 0)))
		fprintf(err, "erdma-smcr: net configure: undo: cannot set the link down: %s\n", strerror(-rc));
	if (d->mtu && (rc = rt_link_set(f->link.index, f->link.mtu, -1)))
		fprintf(err, "erdma-smcr: net configure: undo: cannot restore MTU %u: %s\n", f->link.mtu, strerror(-rc));
}

int net_configure(const struct net_conf *c, FILE *out, FILE *err)
{
	struct find_ctx f;
	struct done d = {0, 0, 0, 0, 0};
	struct rt_route subnet, deflt;
	const char *step = "read the links";
	int rc;
	memset(&f, 0, sizeof(f));
	f.name = c->dev;
	rc = rt_dump_links(find_link, &f);
	if (rc == 0 && f.found) {
		step = "read the addresses";
		rc = rt_dump_addrs(find_addr, &f);
	}
	if (rc) {
		fprintf(err, "erdma-smcr: net configure: %s: %s\n", step, strerror(-rc));
		return 1;
	}
	if (!f.found) {
		fprintf(err, "erdma-smcr: net configure: no link named %s\n", c->dev);
		return NET_EXIT_NO_LINK;
	}
	if ((f.link.flags & IFF_UP) && f.has_global_addr) {
		fprintf(err, "erdma-smcr: net configure: %s is up with an address already; it is left alone\n", c->dev);
		return NET_EXIT_CONFIGURED;
	}
	memset(&subnet, 0, sizeof(subnet));
	subnet.dst = c->cidr;
	subnet.dst_len = c->cidr_len;
	subnet.prefsrc = c->addr;
	subnet.oif = f.link.index;
	subnet.metric = c->metric_subnet;
	memset(&deflt, 0, sizeof(deflt));
	deflt.gateway = c->gateway;
	deflt.prefsrc = c->addr;
	deflt.oif = f.link.index;
	deflt.metric = c->metric_default;

	if (c->mtu && c->mtu != f.link.mtu) {
		step = "set the MTU";
		if ((rc = rt_link_set(f.link.index, c->mtu, -1)))
			goto fail;
		d.mtu = 1;
	}
	if (!(f.link.flags & IFF_UP)) {
		step = "set the link up";
		if ((rc = rt_link_set(f.link.index, 0, 1)))
			goto fail;
		d.up = 1;
	}
	step = "add the address";
	rc = rt_addr_change(1, f.link.index, c->addr, c->prefix, 1);
	if (rc && rc != -EEXIST)
		goto fail;
	d.addr = rc == 0;
	step = "add the subnet route";
	if ((rc = rt_route_change(1, &subnet)))
		goto fail;
	d.subnet = 1;
	step = "add the default route";
	if ((rc = rt_route_change(1, &deflt)))
		goto fail;
	d.deflt = 1;
	fputc('{', out);
	put_name(out, c->dev);
	fprintf(out, ",\"index\":%d,\"mtuChanged\":%s,\"broughtUp\":%s,\"addressAdded\":%s}\n", f.link.index, d.mtu ? "true" : "false",
		d.up ? "true" : "false", d.addr ? "true" : "false");
	return 0;
fail:
	fprintf(err, "erdma-smcr: net configure %s: %s: %s; undoing what was done\n", c->dev, step, strerror(-rc));
	undo(c, &f, &subnet, &deflt, &d, err);
	return 1;
}
