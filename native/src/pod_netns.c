/* The plugin's work inside a pod's network namespace: apply, check, undo (pod_netns.h). */
#include "pod_netns.h"

#include <errno.h>
#include <string.h>
#include "netns.h"
#include "pod_mechanism.h"
#include "smc_genl.h"

/* Puts back every sysctl ADD changed and removes its pnet entry (we are inside the netns). */
static void rollback(struct applied *a, const struct netconf *c, const char *ifname)
{
	char path[128];
	int i;
	for (i = a->n - 1; i >= 0; i--)
		if (!sysctl_path(a->done[i].key, ifname, path, sizeof(path)))
			sysctl_write(path, a->before[i]);
	if (a->pnet_added)
		pnet_del(c->pnet_id);
	mechanism_rollback(a, c);
	a->n = 0;
	a->pnet_added = 0;
}

static int apply_sysctls(struct applied *a, const struct settings *s, const struct netconf *c, const char *ifname,
			 const struct logger *lg, struct cni_error *e)
{
	char path[128];
	int i, rc;
	for (i = 0; i < s->n; i++) {
		const struct sysctl_kv *kv = &s->kv[i];
		if (sysctl_path(kv->key, ifname, path, sizeof(path)))
			return cni_fail(e, CNI_ERR_INVALID_CONFIG, "cannot map %s to /proc/sys", kv->key);
		rc = sysctl_read(path, a->before[a->n], sizeof(a->before[a->n]));
		if (rc == -ENOENT) {
			cJSON_AddItemToArray(a->missing, cJSON_CreateString(kv->key));
			if (c->fail_on_missing)
				return cni_fail(e, CNI_ERR_SMC_UNAVAILABLE, "%s does not exist in the pod netns (kernel without SMC-R support?)", kv->key);
			pod_warn(a, lg, "%s does not exist on this kernel: SMC-R stays off for this pod (TCP is used)", kv->key);
			continue;
		}
		if (rc == 0)
			rc = sysctl_write(path, kv->value);
		if (rc)
			return cni_fail(e, CNI_ERR_IO, "cannot set %s=%s: %s", kv->key, kv->value, strerror(-rc));
		a->done[a->n++] = *kv;
	}
	return 0;
}

static int apply_pnet(struct applied *a, const struct netconf *c, const char *ifname, const struct logger *lg,
		      struct cni_error *e)
{
	struct pnet_entry pe;
	int rc;
	if (!c->pnet_id[0]) {
		pod_warn(a, lg, "no PNETID configured (pnetId or %s): no pnet entry for the pod interface", c->pnet_id_file);
		return 0;
	}
	memset(&pe, 0, sizeof(pe));
	copy_str(pe.name, sizeof(pe.name), c->pnet_id);
	copy_str(pe.eth, sizeof(pe.eth), ifname);
	rc = pnet_add(&pe);
	if (rc == 0 || rc == -EEXIST) {
		a->pnet_added = 1;
		return 0;
	}
	if (rc == -ENOENT || rc == -EPROTONOSUPPORT || rc == -EOPNOTSUPP) {
		cJSON_AddItemToArray(a->missing, cJSON_CreateString("SMC_PNETID"));
		if (c->fail_on_missing)
			return cni_fail(e, CNI_ERR_SMC_UNAVAILABLE, "the SMC_PNETID netlink family is missing (smc module not loaded?)");
		pod_warn(a, lg, "%s", "the SMC_PNETID netlink family is missing (smc module not loaded?): no pnet entry");
		return 0;
	}
	return cni_fail(e, CNI_ERR_IO, "cannot add pnet entry %s for %s: %s", c->pnet_id, ifname, strerror(-rc));
}

/* 1 when prevResult gives the pod addresses and all of them are IPv6 (an IPv6-only pod). */
static int ipv6_only(const cJSON *prev)
{
	const cJSON *ip;
	int v4 = 0, v6 = 0;
	cJSON_ArrayForEach(ip, cJSON_GetObjectItemCaseSensitive(prev, "ips"))
	{
		const cJSON *addr = cJSON_GetObjectItemCaseSensitive(ip, "address");
		if (!cJSON_IsString(addr))
			continue;
		if (strchr(addr->valuestring, ':'))
			v6++;
		else
			v4++;
	}
	return v6 > 0 && v4 == 0;
}

/*
 * SMC-R carries only IPv4, so an SMC-R pod normally gets IPv6 turned off. For a pod whose only
 * addresses are IPv6 that would cut it off the network: keep IPv6 and say why (the agent turns
 * the warning into the pod's Event). Its connections stay on TCP.
 */
static void keep_ipv6_if_only_family(struct applied *a, struct settings *s, const cJSON *prev, const struct logger *lg)
{
	if (!ipv6_only(prev))
		return;
	a->ipv6_only = 1;
	if (settings_drop_ipv6(s) > 0)
		pod_warn(a, lg, "%s", "the pod has only IPv6 addresses: IPv6 kept so it stays reachable; SMC-R carries IPv4 only, so its connections use TCP");
}

/* What apply_here needs, inside the pod netns. */
struct apply_ctx {
	const struct cni_env *env;
	struct netconf *c;
	struct applied *a;
	const struct logger *lg;
	struct cni_error *e;
};

static int apply_here(void *p)
{
	struct apply_ctx *x = p;
	struct settings s;
	if (settings_resolve(x->c->annotations, x->env->ifname, x->c->disable_ipv6, &s, x->lg))
		cni_fail(x->e, CNI_ERR_INVALID_CONFIG, "%s holds more than %d sysctls: refusing it rather than dropping any",
			 SETTINGS_ANNOTATION, MAX_SYSCTLS);
	else {
		keep_ipv6_if_only_family(x->a, &s, x->c->prev_result, x->lg);
		mechanism_choose(x->a, &s, x->c, x->lg, x->e);
	}
	if (x->e->code || apply_sysctls(x->a, &s, x->c, x->env->ifname, x->lg, x->e) ||
	    apply_pnet(x->a, x->c, x->env->ifname, x->lg, x->e))
		rollback(x->a, x->c, x->env->ifname);
	return x->e->code;
}

/* The CNI error for a pod netns we could not enter, or not come back from. */
static int netns_fail(struct cni_error *e, int rc, const char *netns)
{
	if (rc == NETNS_ERR_LEAVE)
		return e->code ? e->code : cni_fail(e, CNI_ERR_IO, "cannot return to the host netns");
	return cni_fail(e, NETNS_NOT_A_POD(rc) ? CNI_ERR_INVALID_ENV : CNI_ERR_IO, "cannot enter netns %s: %s", netns,
			netns_strerror(rc));
}

int pod_apply(const struct cni_env *env, struct netconf *c, struct applied *a, const struct logger *lg,
	      struct cni_error *e)
{
	struct apply_ctx x = {env, c, a, lg, e};
	int result, rc = netns_run(env->netns, 0, apply_here, &x, &result);
	return rc ? netns_fail(e, rc, env->netns) : e->code;
}

/* The pnet entry CHECK looks for, and whether the kernel lists it. */
struct pnet_search {
	struct pnet_entry want;
	int found;
};

static int pnet_entry_match(const struct nlmsghdr *h, void *ctx)
{
	struct pnet_search *search = ctx;
	struct pnet_entry pe;
	if (pnet_parse(h, &pe) == 0 && !strcmp(pe.name, search->want.name) && !strcmp(pe.eth, search->want.eth))
		search->found = 1;
	return 0;
}

struct drift_ctx {
	const cJSON *state;
	const char *ifname;
	struct cni_error *e;
};

static int check_drift(void *p)
{
	struct drift_ctx *x = p;
	const cJSON *item, *pnet = cJSON_GetObjectItemCaseSensitive(x->state, "pnet");
	char path[128], actual[64];
	int rc;
	cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(x->state, "sysctls"))
	{
		if (!cJSON_IsString(item) || sysctl_path(item->string, x->ifname, path, sizeof(path)))
			continue;
		rc = sysctl_read(path, actual, sizeof(actual));
		if (rc) /* e.g. the interface was renamed or removed since ADD */
			return cni_fail(x->e, CNI_ERR_DRIFT, "%s could not be read (%s), expected %s", item->string, strerror(-rc),
					item->valuestring);
		if (strcmp(actual, item->valuestring))
			return cni_fail(x->e, CNI_ERR_DRIFT, "%s is %s, expected %s", item->string, actual, item->valuestring);
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pnet, "added"))) {
		struct pnet_search search;
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(pnet, "id");
		memset(&search, 0, sizeof(search));
		copy_str(search.want.name, sizeof(search.want.name), cJSON_IsString(id) ? id->valuestring : "");
		copy_str(search.want.eth, sizeof(search.want.eth), x->ifname);
		if (pnet_list(pnet_entry_match, &search) || !search.found)
			return cni_fail(x->e, CNI_ERR_DRIFT, "the pnet entry %s for %s is gone", search.want.name, x->ifname);
	}
	return mechanism_check(x->state, x->e);
}

struct undo_ctx {
	const char *id;
	const struct logger *lg;
};

static int undo_here(void *p)
{
	struct undo_ctx *x = p;
	int rc = pnet_del(x->id);
	if (rc && rc != -ENOENT)
		log_msg(x->lg, "warning", "cannot remove pnet entry %s: %s", x->id, strerror(-rc));
	return 0;
}

/* Best effort: removes the pod's pnet entry when its netns still exists (gone: its pnet table went with it). */
static void undo_pnet(const cJSON *state, const char *netns, const struct logger *lg)
{
	const cJSON *pnet = cJSON_GetObjectItemCaseSensitive(state, "pnet");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(pnet, "id");
	struct undo_ctx x;
	int result;
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pnet, "added")) || !cJSON_IsString(id) || !netns || !netns[0])
		return;
	x.id = id->valuestring;
	x.lg = lg;
	netns_run(netns, 0, undo_here, &x, &result);
}

int pod_check(const cJSON *state, const char *netns, const char *ifname, struct cni_error *e)
{
	struct drift_ctx x = {state, ifname, e};
	int result, rc = netns_run(netns, 0, check_drift, &x, &result);
	return rc ? netns_fail(e, rc, netns) : e->code;
}

void pod_undo(const cJSON *state, const char *netns, const struct logger *lg)
{
	undo_pnet(state, netns, lg);
	mechanism_undo(state, lg);
}
