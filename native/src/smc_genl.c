/* Generic netlink messages for SMC_PNETID and SMC_GEN_NETLINK, and a minimal request/ack loop. */
#include "smc_genl.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/genetlink.h>
#include <linux/smc.h>

#define NLA_ALIGN_UP(n) (((n) + NLA_ALIGNTO - 1) & ~(NLA_ALIGNTO - 1))

void genl_init(struct nl_msg *m, uint16_t family, uint16_t flags, uint32_t seq, uint8_t cmd, uint8_t version)
{
	struct nlmsghdr *h = (struct nlmsghdr *)m->buf;
	struct genlmsghdr *g = (struct genlmsghdr *)(m->buf + NLMSG_HDRLEN);
	memset(m->buf, 0, NLMSG_HDRLEN + GENL_HDRLEN);
	h->nlmsg_type = family;
	h->nlmsg_flags = flags;
	h->nlmsg_seq = seq;
	g->cmd = cmd;
	g->version = version;
	m->len = NLMSG_HDRLEN + GENL_HDRLEN;
	h->nlmsg_len = (uint32_t)m->len;
}

int nl_put(struct nl_msg *m, uint16_t type, const void *data, size_t len)
{
	struct nlattr *a;
	size_t total = NLA_HDRLEN + len;
	if (m->len + NLA_ALIGN_UP(total) > sizeof(m->buf) || total > UINT16_MAX)
		return -1;
	a = (struct nlattr *)(m->buf + m->len);
	a->nla_type = type;
	a->nla_len = (uint16_t)total;
	memcpy(m->buf + m->len + NLA_HDRLEN, data, len);
	memset(m->buf + m->len + total, 0, NLA_ALIGN_UP(total) - total);
	m->len += NLA_ALIGN_UP(total);
	((struct nlmsghdr *)m->buf)->nlmsg_len = (uint32_t)m->len;
	return 0;
}

int nl_put_str(struct nl_msg *m, uint16_t type, const char *s)
{
	return nl_put(m, type, s, strlen(s) + 1);
}

int nl_put_u8(struct nl_msg *m, uint16_t type, uint8_t v)
{
	return nl_put(m, type, &v, 1);
}

int pnetid_normalize(const char *in, char *out, size_t size)
{
	size_t n = strlen(in), i;
	if (n == 0 || n > PNETID_MAX_LEN || size <= n)
		return -1;
	for (i = 0; i < n; i++) {
		if (!isalnum((unsigned char)in[i]))
			return -1;
		out[i] = (char)toupper((unsigned char)in[i]);
	}
	out[n] = '\0';
	return 0;
}

/* The kernel wants exactly EID_LEN bytes, blank-padded, plus a NUL (smc_nl_add_ueid). */
int ueid_normalize(const char *in, char out[EID_LEN + 1])
{
	size_t n = strlen(in), i;
	if (n == 0 || n > EID_LEN)
		return -1;
	for (i = 0; i < n; i++) {
		char c = (char)toupper((unsigned char)in[i]);
		if (!(isdigit((unsigned char)c) || isupper((unsigned char)c) || (i > 0 && (c == '.' || c == '-'))))
			return -1;
		out[i] = c;
	}
	memset(out + n, ' ', EID_LEN - n);
	out[EID_LEN] = '\0';
	return 0;
}

static int valid_ifname(const char *s, size_t max)
{
	size_t n = strlen(s);
	return n > 0 && n < max && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

int pnet_build_add(struct nl_msg *m, uint16_t family, uint32_t seq, const struct pnet_entry *e)
{
	char name[PNETID_MAX_LEN + 1];
	if (pnetid_normalize(e->name, name, sizeof(name)))
		return -1;
	genl_init(m, family, NLM_F_REQUEST | NLM_F_ACK, seq, SMC_PNETID_ADD, SMCR_GENL_FAMILY_VERSION);
	if (nl_put_str(m, SMC_PNETID_NAME, name))
		return -1;
	if (e->eth[0])
		return valid_ifname(e->eth, sizeof(e->eth)) ? nl_put_str(m, SMC_PNETID_ETHNAME, e->eth) : -1;
	if (!valid_ifname(e->ib, sizeof(e->ib)) || e->port < 1 || e->port > 2)
		return -1;
	if (nl_put_str(m, SMC_PNETID_IBNAME, e->ib))
		return -1;
	return nl_put_u8(m, SMC_PNETID_IBPORT, (uint8_t)e->port);
}

int pnet_build_simple(struct nl_msg *m, uint16_t family, uint32_t seq, uint8_t cmd, const char *name)
{
	char norm[PNETID_MAX_LEN + 1];
	uint16_t flags = NLM_F_REQUEST | NLM_F_ACK;
	if (cmd == SMC_PNETID_GET)
		flags |= NLM_F_DUMP;
	genl_init(m, family, flags, seq, cmd, SMCR_GENL_FAMILY_VERSION);
	if (!name)
		return 0;
	if (pnetid_normalize(name, norm, sizeof(norm)))
		return -1;
	return nl_put_str(m, SMC_PNETID_NAME, norm);
}

int ueid_build(struct nl_msg *m, uint16_t family, uint32_t seq, uint8_t cmd, const char *ueid)
{
	char norm[EID_LEN + 1];
	uint16_t flags = NLM_F_REQUEST | NLM_F_ACK;
	if (cmd == SMC_NETLINK_DUMP_UEID)
		flags |= NLM_F_DUMP;
	genl_init(m, family, flags, seq, cmd, SMC_GENL_FAMILY_VERSION);
	if (!ueid)
		return 0;
	if (ueid_normalize(ueid, norm))
		return -1;
	return nl_put(m, SMC_NLA_EID_TABLE_ENTRY, norm, EID_LEN + 1);
}

/* Calls fn for each attribute of a generic netlink message; stops at the first malformed one. */
static int each_attr(const struct nlmsghdr *h, int (*fn)(const struct nlattr *a, void *ctx), void *ctx)
{
	size_t off = NLMSG_HDRLEN + GENL_HDRLEN;
	if (h->nlmsg_len < off)
		return -1;
	while (off + NLA_HDRLEN <= h->nlmsg_len) {
		const struct nlattr *a = (const struct nlattr *)((const unsigned char *)h + off);
		if (a->nla_len < NLA_HDRLEN || off + a->nla_len > h->nlmsg_len)
			return -1;
		if (fn(a, ctx))
			return -1;
		off += NLA_ALIGN_UP(a->nla_len);
	}
	return 0;
}

static void attr_str(const struct nlattr *a, char *out, size_t size)
{
	size_t n = a->nla_len - NLA_HDRLEN;
	const char *data = (const char *)a + NLA_HDRLEN;
	if (n >= size)
		n = size - 1;
	memcpy(out, data, n);
	out[n] = '\0';
	out[strnlen(out, n)] = '\0';
}

static int pnet_attr(const struct nlattr *a, void *ctx)
{
	struct pnet_entry *e = ctx;
	switch (a->nla_type & NLA_TYPE_MASK) {
	case SMC_PNETID_NAME:
		attr_str(a, e->name, sizeof(e->name));
		break;
	case SMC_PNETID_ETHNAME:
		attr_str(a, e->eth, sizeof(e->eth));
		break;
	case SMC_PNETID_IBNAME:
		attr_str(a, e->ib, sizeof(e->ib));
		break;
	case SMC_PNETID_IBPORT:
		if (a->nla_len < NLA_HDRLEN + 1)
			return -1;
		e->port = *((const unsigned char *)a + NLA_HDRLEN);
		break;
	default:
		break;
	}
	return 0;
}

int pnet_parse(const struct nlmsghdr *h, struct pnet_entry *out)
{
	memset(out, 0, sizeof(*out));
	return each_attr(h, pnet_attr, out);
}

struct str_out {
	char *buf;
	size_t size;
};

static int ueid_attr(const struct nlattr *a, void *ctx)
{
	struct str_out *o = ctx;
	if ((a->nla_type & NLA_TYPE_MASK) == SMC_NLA_EID_TABLE_ENTRY) {
		size_t n;
		attr_str(a, o->buf, o->size);
		n = strlen(o->buf);
		while (n > 0 && o->buf[n - 1] == ' ')
			o->buf[--n] = '\0';
	}
	return 0;
}

int ueid_parse(const struct nlmsghdr *h, char *out, size_t size)
{
	struct str_out o = {out, size};
	out[0] = '\0';
	return each_attr(h, ueid_attr, &o);
}

/* ---- socket side ---- */

int nl_open(void)
{
	return nl_open_proto(NETLINK_GENERIC);
}

int nl_open_proto(int protocol)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Handles one datagram of replies; returns 1 when the exchange is over, 0 to read more. */
static int handle_replies(unsigned char *buf, ssize_t n, uint32_t seq, nl_reply_fn fn, void *ctx, int *result)
{
	struct nlmsghdr *h;
	int len = (int)n;
	for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
		if (h->nlmsg_seq != seq)
			continue;
		if (h->nlmsg_type == NLMSG_DONE)
			return 1;
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e))) {
				*result = -EBADMSG;
				return 1;
			}
			if (e->error != 0 || !(h->nlmsg_flags & NLM_F_MULTI)) {
				*result = e->error;
				return 1;
			}
			continue;
		}
		if (fn && fn(h, ctx) < 0) {
			*result = -EBADMSG;
			return 1;
		}
	}
	return 0;
}

int nl_transact(int fd, struct nl_msg *m, nl_reply_fn fn, void *ctx)
{
	static uint32_t next_seq = 1;
	unsigned char buf[NL_BUF_SIZE] __attribute__((aligned(4)));
	struct nlmsghdr *h = (struct nlmsghdr *)m->buf;
	int result = 0;
	h->nlmsg_seq = next_seq++;
	if (send(fd, m->buf, m->len, 0) < 0)
		return -errno;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (handle_replies(buf, n, h->nlmsg_seq, fn, ctx, &result))
			return result;
	}
}

static int family_reply(const struct nlmsghdr *h, void *ctx)
{
	size_t off = NLMSG_HDRLEN + GENL_HDRLEN;
	while (off + NLA_HDRLEN <= h->nlmsg_len) {
		const struct nlattr *a = (const struct nlattr *)((const unsigned char *)h + off);
		if (a->nla_len < NLA_HDRLEN)
			return -1;
		if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID && a->nla_len >= NLA_HDRLEN + 2)
			memcpy(ctx, (const unsigned char *)a + NLA_HDRLEN, 2);
		off += NLA_ALIGN_UP(a->nla_len);
	}
	return 0;
}

int genl_family(int fd, const char *name, uint16_t *id)
{
	struct nl_msg m;
	int rc;
	*id = 0;
	genl_init(&m, GENL_ID_CTRL, NLM_F_REQUEST | NLM_F_ACK, 0, CTRL_CMD_GETFAMILY, 1);
	if (nl_put_str(&m, CTRL_ATTR_FAMILY_NAME, name))
		return -EINVAL;
	rc = nl_transact(fd, &m, family_reply, id);
	if (rc < 0)
		return rc; /* -ENOENT: the family (module) is not there */
	return *id ? 0 : -ENOENT;
}

typedef int (*build_fn)(struct nl_msg *m, uint16_t family, const void *arg);

static int run(const char *family_name, build_fn build, const void *arg, nl_reply_fn fn, void *ctx)
{
	struct nl_msg m;
	uint16_t family;
	int rc, fd = nl_open();
	if (fd < 0)
		return fd;
	rc = genl_family(fd, family_name, &family);
	if (rc == 0)
		rc = build(&m, family, arg) ? -EINVAL : nl_transact(fd, &m, fn, ctx);
	close(fd);
	return rc;
}

static int b_pnet_add(struct nl_msg *m, uint16_t f, const void *arg)
{
	return pnet_build_add(m, f, 0, arg);
}
static int b_pnet_del(struct nl_msg *m, uint16_t f, const void *arg)
{
	return pnet_build_simple(m, f, 0, SMC_PNETID_DEL, arg);
}
static int b_pnet_flush(struct nl_msg *m, uint16_t f, const void *arg)
{
	(void)arg;
	return pnet_build_simple(m, f, 0, SMC_PNETID_FLUSH, NULL);
}
static int b_pnet_get(struct nl_msg *m, uint16_t f, const void *arg)
{
	(void)arg;
	return pnet_build_simple(m, f, 0, SMC_PNETID_GET, NULL);
}

int pnet_add(const struct pnet_entry *e)
{
	return run(SMCR_GENL_FAMILY_NAME, b_pnet_add, e, NULL, NULL);
}
int pnet_del(const char *name)
{
	return run(SMCR_GENL_FAMILY_NAME, b_pnet_del, name, NULL, NULL);
}
int pnet_flush(void)
{
	return run(SMCR_GENL_FAMILY_NAME, b_pnet_flush, NULL, NULL, NULL);
}
struct dump_arg {
	uint8_t cmd, version;
};

static int b_dump(struct nl_msg *m, uint16_t f, const void *arg)
{
	const struct dump_arg *a = arg;
	genl_init(m, f, NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP, 0, a->cmd, a->version);
	return 0;
}

int genl_dump(const char *family_name, uint8_t cmd, uint8_t version, nl_reply_fn fn, void *ctx)
{
	struct dump_arg a = {cmd, version};
	return run(family_name, b_dump, &a, fn, ctx);
}

int pnet_list(nl_reply_fn fn, void *ctx)
{
	return run(SMCR_GENL_FAMILY_NAME, b_pnet_get, NULL, fn, ctx);
}

struct ueid_arg {
	uint8_t cmd;
	const char *ueid;
};

static int b_ueid(struct nl_msg *m, uint16_t f, const void *arg)
{
	const struct ueid_arg *a = arg;
	return ueid_build(m, f, 0, a->cmd, a->ueid);
}

int ueid_op(uint8_t cmd, const char *ueid)
{
	struct ueid_arg a = {cmd, ueid};
	return run(SMC_GENL_FAMILY_NAME, b_ueid, &a, NULL, NULL);
}

int ueid_list(nl_reply_fn fn, void *ctx)
{
	struct ueid_arg a = {SMC_NETLINK_DUMP_UEID, NULL};
	return run(SMC_GENL_FAMILY_NAME, b_ueid, &a, fn, ctx);
}
