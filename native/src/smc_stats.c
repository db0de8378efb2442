/* `erdma-smcr smc stats`: a network namespace's SMC counters and fallback reasons, from the SMC
 * generic netlink family (SMC_NETLINK_GET_STATS / _GET_FBACK_STATS, <linux/smc.h>, kernels 5.14+),
 * as one JSON object; a section the kernel cannot give says why instead. */
#include "smc_stats.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <linux/genetlink.h>
#include <linux/smc.h>
#include "smc_genl.h"

#define ALIGN4(n) (((n) + 3u) & ~3u)

struct stats_ctx {
	FILE *out;
	int first;
	int got;
};

static int nla_u64(const struct nlattr *a, uint64_t *v)
{
	if (a->nla_len < NLA_HDRLEN + sizeof(*v))
		return -1;
	memcpy(v, (const unsigned char *)a + NLA_HDRLEN, sizeof(*v));
	return 0;
}

/* Walks the attributes in [p, p+len); calls fn for each. */
static int walk(const unsigned char *p, size_t len, int (*fn)(const struct nlattr *a, void *ctx), void *ctx)
{
	size_t off = 0;
	while (off + NLA_HDRLEN <= len) {
		const struct nlattr *a = (const struct nlattr *)(p + off);
		if (a->nla_len < NLA_HDRLEN || off + a->nla_len > len)
			return -1;
		if (fn(a, ctx))
			return -1;
		off += ALIGN4(a->nla_len);
	}
	return 0;
}

struct tech {
	uint64_t v[SMC_NLA_STATS_T_MAX + 1];
};

static int tech_attr(const struct nlattr *a, void *ctx)
{
	struct tech *t = ctx;
	unsigned type = a->nla_type & NLA_TYPE_MASK;
	if (type <= SMC_NLA_STATS_T_MAX && !(a->nla_type & NLA_F_NESTED))
		nla_u64(a, &t->v[type]);
	return 0;
}

static int stats_attr(const struct nlattr *a, void *ctx)
{
	struct stats_ctx *c = ctx;
	unsigned type = a->nla_type & NLA_TYPE_MASK;
	uint64_t v;
	if (type == SMC_NLA_STATS_SMCR_TECH || type == SMC_NLA_STATS_SMCD_TECH) {
		struct tech t;
		memset(&t, 0, sizeof(t));
		if (walk((const unsigned char *)a + NLA_HDRLEN, a->nla_len - NLA_HDRLEN, tech_attr, &t))
			return -1;
		fprintf(c->out, "%s\"%s\":{\"clientSuccessV1\":%" PRIu64 ",\"clientSuccessV2\":%" PRIu64 ",\"serverSuccessV1\":%" PRIu64 ",\"serverSuccessV2\":%" PRIu64 ",\"txBytes\":%" PRIu64 ",\"rxBytes\":%" PRIu64 ",\"txCalls\":%" PRIu64 ",\"rxCalls\":%" PRIu64 "}",
			c->first ? "" : ",", type == SMC_NLA_STATS_SMCR_TECH ? "smcr" : "smcd", t.v[SMC_NLA_STATS_T_CLNT_V1_SUCC], t.v[SMC_NLA_STATS_T_CLNT_V2_SUCC],
			t.v[SMC_NLA_STATS_T_SRV_V1_SUCC], t.v[SMC_NLA_STATS_T_SRV_V2_SUCC], t.v[SMC_NLA_STATS_T_TX_BYTES], t.v[SMC_NLA_STATS_T_RX_BYTES],
			t.v[SMC_NLA_STATS_T_TX_CNT], t.v[SMC_NLA_STATS_T_RX_CNT]);
		c->first = 0;
	} else if ((type == SMC_NLA_STATS_CLNT_HS_ERR_CNT || type == SMC_NLA_STATS_SRV_HS_ERR_CNT) && nla_u64(a, &v) == 0) {
		fprintf(c->out, "%s\"%s\":%" PRIu64, c->first ? "" : ",", type == SMC_NLA_STATS_CLNT_HS_ERR_CNT ? "clientHandshakeErrors" : "serverHandshakeErrors", v);
		c->first = 0;
	}
	return 0;
}

static int top_stats(const struct nlattr *a, void *ctx)
{
	struct stats_ctx *c = ctx;
	if ((a->nla_type & NLA_TYPE_MASK) != SMC_GEN_STATS)
		return 0;
	c->got = 1;
	return walk((const unsigned char *)a + NLA_HDRLEN, a->nla_len - NLA_HDRLEN, stats_attr, c);
}

static int on_stats(const struct nlmsghdr *h, void *ctx)
{
	if (h->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN)
		return -1;
	return walk((const unsigned char *)h + NLMSG_HDRLEN + GENL_HDRLEN, h->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN, top_stats, ctx);
}

struct fback {
	int have_type, server;
	uint32_t code;
	uint64_t count;
	int have_code;
};

static int fback_attr(const struct nlattr *a, void *ctx)
{
	struct fback *f = ctx;
	unsigned type = a->nla_type & NLA_TYPE_MASK;
	const unsigned char *d = (const unsigned char *)a + NLA_HDRLEN;
	size_t n = a->nla_len - NLA_HDRLEN;
	if (type == SMC_NLA_FBACK_STATS_TYPE && n >= 1) {
		f->server = d[0] != 0;
		f->have_type = 1;
	} else if (type == SMC_NLA_FBACK_STATS_RSN_CODE && n >= 4) {
		memcpy(&f->code, d, 4);
		f->have_code = 1;
	} else if (type == SMC_NLA_FBACK_STATS_RSN_CNT && n >= 2) {
		uint16_t c16;
		memcpy(&c16, d, 2);
		f->count = c16;
	}
	return 0;
}

static int top_fback(const struct nlattr *a, void *ctx)
{
	struct stats_ctx *c = ctx;
	struct fback f;
	if ((a->nla_type & NLA_TYPE_MASK) != SMC_GEN_FBACK_STATS)
		return 0;
	c->got = 1;
	memset(&f, 0, sizeof(f));
	if (walk((const unsigned char *)a + NLA_HDRLEN, a->nla_len - NLA_HDRLEN, fback_attr, &f))
		return -1;
	if (!f.have_code || f.code == 0)
		return 0;
	fprintf(c->out, "%s{\"side\":\"%s\",\"reason\":\"0x%08x\",\"count\":%" PRIu64 "}", c->first ? "" : ",", f.server ? "server" : "client", f.code, f.count);
	c->first = 0;
	return 0;
}

static int on_fback(const struct nlmsghdr *h, void *ctx)
{
	if (h->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN)
		return -1;
	return walk((const unsigned char *)h + NLMSG_HDRLEN + GENL_HDRLEN, h->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN, top_fback, ctx);
}

static const char *why_unavailable(int rc)
{
	if (rc == -ENOENT)
		return "no SMC generic netlink family here (smc module not loaded)";
	if (rc == -EOPNOTSUPP || rc == -EINVAL)
		return "this kernel does not report it (SMC statistics came with Linux 5.14)";
	return strerror(-rc);
}

/* One dump into a memory buffer, so a failure prints {"available":false,...} instead of half an object. */
static void section(FILE *out, const char *name, uint8_t cmd, nl_reply_fn fn, const char *open, const char *close)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	struct stats_ctx c = {mem, 1, 0};
	int rc;
	if (!mem) {
		fprintf(out, "\"%s\":{\"available\":false,\"reason\":\"out of memory\"}", name);
		return;
	}
	rc = genl_dump(SMC_GENL_FAMILY_NAME, cmd, SMC_GENL_FAMILY_VERSION, fn, &c);
	fclose(mem);
	if (rc)
		fprintf(out, "\"%s\":{\"available\":false,\"reason\":\"%s\"}", name, why_unavailable(rc));
	else
		fprintf(out, "\"%s\":{\"available\":true,%s%s%s}", name, open, buf ? buf : "", close);
	free(buf);
}

int smc_stats(FILE *out)
{
	fputc('{', out);
	section(out, "stats", SMC_NETLINK_GET_STATS, on_stats, "\"counters\":{", "}");
	fputc(',', out);
	section(out, "fallbacks", SMC_NETLINK_GET_FBACK_STATS, on_fback, "\"reasons\":[", "]");
	fputs("}\n", out);
	return 0;
}
