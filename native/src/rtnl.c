/* rtnetlink dumps and changes for the agent's eRDMA ENI set-up (IPv4, main table). */
#include "rtnl.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#define ALIGN4(n) (((n) + 3u) & ~3u)

/* Starts a NETLINK_ROUTE message with its family header (ifinfomsg, ifaddrmsg or rtmsg). */
static void rt_init(struct nl_msg *m, uint16_t type, uint16_t flags, const void *hdr, size_t hdrlen)
{
	struct nlmsghdr *h = (struct nlmsghdr *)m->buf;
	memset(m->buf, 0, NLMSG_HDRLEN + ALIGN4(hdrlen));
	h->nlmsg_type = type;
	h->nlmsg_flags = flags;
	memcpy(m->buf + NLMSG_HDRLEN, hdr, hdrlen);
	m->len = NLMSG_HDRLEN + ALIGN4(hdrlen);
	h->nlmsg_len = (uint32_t)m->len;
}

static int put_u32(struct nl_msg *m, uint16_t type, uint32_t v)
{
	return nl_put(m, type, &v, sizeof(v));
}

/* Calls fn for each attribute after the family header of hdrlen bytes; -1 when malformed. */
static int each_rtattr(const struct nlmsghdr *h, size_t hdrlen, void (*fn)(const struct rtattr *a, void *ctx), void *ctx)
{
	size_t off = NLMSG_HDRLEN + ALIGN4(hdrlen);
	if (h->nlmsg_len < off)
		return -1;
	while (off + sizeof(struct rtattr) <= h->nlmsg_len) {
		const struct rtattr *a = (const struct rtattr *)((const unsigned char *)h + off);
		if (a->rta_len < sizeof(struct rtattr) || off + a->rta_len > h->nlmsg_len)
			return -1;
		fn(a, ctx);
		off += ALIGN4(a->rta_len);
	}
	return 0;
}

static size_t payload_len(const struct rtattr *a)
{
	return a->rta_len - RTA_LENGTH(0);
}

static int get_u32(const struct rtattr *a, uint32_t *out)
{
	if (payload_len(a) < sizeof(*out))
		return -1;
	memcpy(out, RTA_DATA(a), sizeof(*out));
	return 0;
}

/* ---- decoders ---- */

static void link_attr(const struct rtattr *a, void *ctx)
{
	struct rt_link *l = ctx;
	switch (a->rta_type) {
	case IFLA_IFNAME: {
		size_t n = payload_len(a) < sizeof(l->name) - 1 ? payload_len(a) : sizeof(l->name) - 1;
		memcpy(l->name, RTA_DATA(a), n);
		l->name[n] = '\0';
		break;
	}
	case IFLA_ADDRESS:
		if (payload_len(a) == 6) {
			memcpy(l->mac, RTA_DATA(a), 6);
			l->has_mac = 1;
		}
		break;
	case IFLA_MTU:
		get_u32(a, &l->mtu);
		break;
	default:
		break;
	}
}

int rt_link_parse(const struct nlmsghdr *h, struct rt_link *out)
{
	const struct ifinfomsg *i = NLMSG_DATA(h);
	memset(out, 0, sizeof(*out));
	if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(*i)))
		return -1;
	out->index = i->ifi_index;
	out->flags = i->ifi_flags;
	return each_rtattr(h, sizeof(*i), link_attr, out);
}

static void addr_attr(const struct rtattr *a, void *ctx)
{
	struct rt_addr *r = ctx;
	if (a->rta_type == IFA_LOCAL || (a->rta_type == IFA_ADDRESS && r->addr == 0))
		get_u32(a, &r->addr);
	else if (a->rta_type == IFA_FLAGS)
		get_u32(a, &r->flags);
}

int rt_addr_parse(const struct nlmsghdr *h, struct rt_addr *out)
{
	const struct ifaddrmsg *i = NLMSG_DATA(h);
	memset(out, 0, sizeof(*out));
	if (h->nlmsg_type != RTM_NEWADDR || h->nlmsg_len < NLMSG_LENGTH(sizeof(*i)) || i->ifa_family != AF_INET)
		return -1;
	out->index = (int)i->ifa_index;
	out->prefix = i->ifa_prefixlen;
	out->scope = i->ifa_scope;
	out->flags = i->ifa_flags;
	return each_rtattr(h, sizeof(*i), addr_attr, out);
}

static void route_attr(const struct rtattr *a, void *ctx)
{
	struct rt_route *r = ctx;
	uint32_t v;
	switch (a->rta_type) {
	case RTA_DST: get_u32(a, &r->dst); break;
	case RTA_GATEWAY: get_u32(a, &r->gateway); break;
	case RTA_PREFSRC: get_u32(a, &r->prefsrc); break;
	case RTA_PRIORITY: get_u32(a, &r->metric); break;
	case RTA_TABLE: get_u32(a, &r->table); break;
	case RTA_OIF:
		if (get_u32(a, &v) == 0)
			r->oif = (int)v;
		break;
	default: break;
	}
}

int rt_route_parse(const struct nlmsghdr *h, struct rt_route *out)
{
	const struct rtmsg *r = NLMSG_DATA(h);
	memset(out, 0, sizeof(*out));
	if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof(*r)) || r->rtm_family != AF_INET)
		return -1;
	out->dst_len = r->rtm_dst_len;
	out->protocol = r->rtm_protocol;
	out->scope = r->rtm_scope;
	out->type = r->rtm_type;
	out->table = r->rtm_table;
	return each_rtattr(h, sizeof(*r), route_attr, out);
}

/* ---- builders ---- */

int rt_build_link_set(struct nl_msg *m, int index, uint32_t mtu, int up)
{
	struct ifinfomsg i = {.ifi_family = AF_UNSPEC, .ifi_index = index};
	if (up >= 0) { /* 1 up, 0 down, -1 unchanged */
		i.ifi_flags = up ? IFF_UP : 0;
		i.ifi_change = IFF_UP;
	}
	rt_init(m, RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, &i, sizeof(i));
	return mtu ? put_u32(m, IFLA_MTU, mtu) : 0;
}

int rt_build_addr(struct nl_msg *m, int add, int index, uint32_t addr, uint8_t prefix, int noprefixroute)
{
	struct ifaddrmsg i = {.ifa_family = AF_INET, .ifa_prefixlen = prefix, .ifa_scope = RT_SCOPE_UNIVERSE, .ifa_index = (uint32_t)index};
	if (prefix > 32)
		return -1;
	rt_init(m, add ? RTM_NEWADDR : RTM_DELADDR, NLM_F_REQUEST | NLM_F_ACK | (add ? NLM_F_CREATE | NLM_F_EXCL : 0), &i, sizeof(i));
	if (put_u32(m, IFA_LOCAL, addr) || put_u32(m, IFA_ADDRESS, addr))
		return -1;
	return noprefixroute ? put_u32(m, IFA_FLAGS, IFA_F_NOPREFIXROUTE) : 0;
}

int rt_build_route(struct nl_msg *m, int add, const struct rt_route *r)
{
	struct rtmsg h = {
		.rtm_family = AF_INET,
		.rtm_dst_len = r->dst_len,
		.rtm_table = RT_TABLE_MAIN,
		.rtm_protocol = r->protocol ? r->protocol : RTPROT_STATIC,
		.rtm_scope = r->gateway ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK,
		.rtm_type = RTN_UNICAST,
	};
	if (r->dst_len > 32)
		return -1;
	rt_init(m, add ? RTM_NEWROUTE : RTM_DELROUTE, NLM_F_REQUEST | NLM_F_ACK | (add ? NLM_F_CREATE | NLM_F_EXCL : 0), &h, sizeof(h));
	if (r->dst_len && put_u32(m, RTA_DST, r->dst))
		return -1;
	if (r->gateway && put_u32(m, RTA_GATEWAY, r->gateway))
		return -1;
	if (r->prefsrc && put_u32(m, RTA_PREFSRC, r->prefsrc))
		return -1;
	if (put_u32(m, RTA_OIF, (uint32_t)r->oif) || put_u32(m, RTA_PRIORITY, r->metric))
		return -1;
	return 0;
}

/* ---- socket side ---- */

static int transact(struct nl_msg *m, nl_reply_fn fn, void *ctx)
{
	int rc, fd = nl_open_proto(NETLINK_ROUTE);
	if (fd < 0)
		return fd;
	rc = nl_transact(fd, m, fn, ctx);
	close(fd);
	return rc;
}

/* One of the three callbacks is set: the dump's kind. */
struct dump_ctx {
	rt_link_fn link;
	rt_addr_fn addr;
	rt_route_fn route;
	void *ctx;
};

/* Messages of another type or family in a dump are skipped, not errors. */
static int dump_reply(const struct nlmsghdr *h, void *arg)
{
	struct dump_ctx *d = arg;
	if (d->link) {
		struct rt_link l;
		return rt_link_parse(h, &l) ? 0 : d->link(&l, d->ctx);
	}
	if (d->addr) {
		struct rt_addr a;
		return rt_addr_parse(h, &a) ? 0 : d->addr(&a, d->ctx);
	}
	{
		struct rt_route r;
		if (rt_route_parse(h, &r) || r.table != RT_TABLE_MAIN)
			return 0;
		return d->route(&r, d->ctx);
	}
}

static int dump(uint16_t type, int family, struct dump_ctx *d)
{
	struct nl_msg m;
	int kind = d->link ? 0 : d->addr ? 1
					 : 2;
	union {
		struct ifinfomsg link;
		struct ifaddrmsg addr;
		struct rtmsg route;
	} hdr;
	size_t len = kind == 0 ? sizeof(hdr.link) : kind == 1 ? sizeof(hdr.addr)
							      : sizeof(hdr.route);
	memset(&hdr, 0, sizeof(hdr));
	if (kind == 0)
		hdr.link.ifi_family = (unsigned char)family;
	else if (kind == 1)
		hdr.addr.ifa_family = (unsigned char)family;
	else
		hdr.route.rtm_family = (unsigned char)family;
	rt_init(&m, type, NLM_F_REQUEST | NLM_F_DUMP, &hdr, len);
	return transact(&m, dump_reply, d);
}

int rt_dump_links(rt_link_fn fn, void *ctx)
{
	struct dump_ctx d = {.link = fn, .ctx = ctx};
	return dump(RTM_GETLINK, AF_UNSPEC, &d);
}

int rt_dump_addrs(rt_addr_fn fn, void *ctx)
{
	struct dump_ctx d = {.addr = fn, .ctx = ctx};
	return dump(RTM_GETADDR, AF_INET, &d);
}

int rt_dump_routes(rt_route_fn fn, void *ctx)
{
	struct dump_ctx d = {.route = fn, .ctx = ctx};
	return dump(RTM_GETROUTE, AF_INET, &d);
}

int rt_link_set(int index, uint32_t mtu, int up)
{
	struct nl_msg m;
	if (rt_build_link_set(&m, index, mtu, up))
		return -EINVAL;
	return transact(&m, NULL, NULL);
}

int rt_addr_change(int add, int index, uint32_t addr, uint8_t prefix, int noprefixroute)
{
	struct nl_msg m;
	if (rt_build_addr(&m, add, index, addr, prefix, noprefixroute))
		return -EINVAL;
	return transact(&m, NULL, NULL);
}

int rt_route_change(int add, const struct rt_route *r)
{
	struct nl_msg m;
	if (rt_build_route(&m, add, r))
		return -EINVAL;
	return transact(&m, NULL, NULL);
}
