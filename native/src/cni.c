/* ADD, CHECK, DEL, STATUS, GC and VERSION of the erdma-smcr chained plugin (CNI spec 1.0/1.1).
 * ADD changes only what the plugin owns (allow-listed sysctls, the pod's pnet entry) and records
 * it; any failure undoes what ADD applied so no netns is left half-configured. */
#include "cni.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "conf.h"
#include "netns.h"
#include "smc_genl.h"
#include "settings.h"
#include "smcbpf.h"
#include "state.h"
#include "util.h"

struct applied {
	struct sysctl_kv done[MAX_SYSCTLS];
	char before[MAX_SYSCTLS][SYSCTL_VALUE_MAX + 16];
	int n;
	int pnet_added;
	int ipv6_only;		 /* IPv6 kept on: the pod has no IPv4 address */
	const char *mechanism;	 /* how the pod's TCP becomes SMC: tcp2smc, bpf, preload or none */
	char mechanism_why[400]; /* none: why no mechanism was active at ADD */
	uint64_t cookie;	 /* bpf: the pod netns's cookie, listed in the program's map */
	int bpf_enabled;
	cJSON *missing;	 /* array of missing knobs */
	cJSON *warnings; /* array of strings */
};

static void print_json(FILE *out, cJSON *doc)
{
	char *text = cJSON_PrintUnformatted(doc);
	if (text) {
		fputs(text, out);
		fputc('\n', out);
		free(text);
	}
}

static int emit_error(FILE *out, const char *version, const struct cni_error *e)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "cniVersion", version ? version : "1.1.0");
	cJSON_AddNumberToObject(doc, "code", e->code);
	cJSON_AddStringToObject(doc, "msg", e->msg);
	if (e->details[0])
		cJSON_AddStringToObject(doc, "details", e->details);
	print_json(out, doc);
	cJSON_Delete(doc);
	return 1;
}

/* prevResult unchanged, stamped with the requested cniVersion. */
static int emit_prev_result(FILE *out, const struct netconf *c)
{
	cJSON *copy = cJSON_Duplicate(c->prev_result, 1);
	if (!copy)
		return -1;
	cJSON_DeleteItemFromObjectCaseSensitive(copy, "cniVersion");
	cJSON_AddStringToObject(copy, "cniVersion", c->cni_version);
	print_json(out, copy);
	cJSON_Delete(copy);
	return 0;
}

static int need_env(const struct cni_env *env, int netns, struct cni_error *e)
{
	if (!env->container_id || !env->container_id[0])
		return cni_fail(e, CNI_ERR_INVALID_ENV, "CNI_CONTAINERID is not set");
	if (!safe_component(env->container_id))
		return cni_fail(e, CNI_ERR_INVALID_ENV, "CNI_CONTAINERID holds characters outside [A-Za-z0-9._-]");
	if (!env->ifname || !env->ifname[0] || strlen(env->ifname) >= 16 || !safe_component(env->ifname))
		return cni_fail(e, CNI_ERR_INVALID_ENV, "CNI_IFNAME is not set or not a valid interface name");
	if (netns && (!env->netns || !env->netns[0]))
		return cni_fail(e, CNI_ERR_INVALID_ENV, "CNI_NETNS is not set");
	return 0;
}

static void warn(struct applied *a, const struct logger *lg, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void warn(struct applied *a, const struct logger *lg, const char *fmt, ...)
{
	char line[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_msg(lg, "warning", "%s", line);
	cJSON_AddItemToArray(a->warnings, cJSON_CreateString(line));
}

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
	if (a->bpf_enabled)
		smcbpf_set(c->bpf_dir, a->cookie, 0);
	a->n = 0;
	a->pnet_added = 0;
	a->bpf_enabled = 0;
}

/* 1 when this netns can open an IPPROTO_SMC socket: the kernel has the BPF path's target. */
static int ipproto_smc_works(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 256 /* IPPROTO_SMC */);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* Lists this netns in the pinned program's map; loads and pins the program first when nothing is
 * pinned (a node just rebooted: bpffs is empty until the agent runs, but the conflist stays and the
 * runtime calls us). 0, SMCBPF_REFUSED or -errno, with `why` set. */
static int switch_on_bpf(struct applied *a, const struct netconf *c, char *why, size_t size)
{
	int rc = smcbpf_netns_cookie(NULL, &a->cookie);
	if (rc) {
		snprintf(why, size, "cannot read this netns's cookie: %s", rc < 0 ? strerror(-rc) : netns_strerror(rc));
		return rc < 0 ? rc : -EIO;
	}
	rc = smcbpf_set(c->bpf_dir, a->cookie, 1);
	if (rc == -ENOENT) {
		rc = smcbpf_load(c->bpf_dir, 0, why, size);
		if (rc)
			return rc;
		rc = smcbpf_set(c->bpf_dir, a->cookie, 1);
	}
	if (rc)
		snprintf(why, size, "cannot switch on the IPPROTO_SMC program for this netns: %s", strerror(-rc));
	return rc;
}

/* Mechanism none, with why: the record says it and the agent tells the pod. */
static void no_mechanism(struct applied *a, const struct logger *lg, const char *why)
{
	a->mechanism = "none";
	snprintf(a->mechanism_why, sizeof(a->mechanism_why), "%s", why);
	warn(a, lg, "no SMC mechanism was active at ADD: %s", why);
}

/*
 * How this pod's TCP becomes SMC (docs/support-matrix.md), decided inside its netns: Alibaba's
 * net.smc.tcp2smc knob where the kernel has it; else the webhook's preload library when it gave the
 * pod one; else, where the kernel has IPPROTO_SMC, the BPF program switched on for this netns (loaded
 * and pinned by us when the agent has not yet: a node that has just booted). A program that cannot
 * be pinned there is a passing state (bpffs not mounted yet, the lock held): the ADD fails with "try
 * again later", which the kubelet retries, rather than starting the pod on TCP for its lifetime.
 * With no mechanism at all, the record says so and why; tcp2smc stays in the settings and is
 * reported missing, as before.
 */
static int choose_mechanism(struct applied *a, struct settings *s, const struct netconf *c, const struct logger *lg,
			    struct cni_error *e)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(c->annotations, MECHANISM_ANNOTATION);
	char why[300] = "";
	int rc;
	a->mechanism = "tcp2smc";
	if (access("/proc/sys/net/smc/tcp2smc", F_OK) == 0)
		return 0;
	if (cJSON_IsString(m) && !strcmp(m->valuestring, "preload")) {
		settings_drop(s, "net.smc.tcp2smc");
		a->mechanism = "preload";
		return 0;
	}
	if (!ipproto_smc_works()) {
		no_mechanism(a, lg,
			     "no net.smc.tcp2smc, no preload library given to the pod, and no IPPROTO_SMC sockets on this "
			     "kernel (6.11+ with the smc module loaded)");
		return 0;
	}
	rc = switch_on_bpf(a, c, why, sizeof(why));
	if (rc == 0) {
		settings_drop(s, "net.smc.tcp2smc");
		a->mechanism = "bpf";
		a->bpf_enabled = 1;
		return 0;
	}
	if (rc == SMCBPF_REFUSED) {
		no_mechanism(a, lg, why);
		return 0;
	}
	return cni_fail(e, CNI_ERR_TRY_AGAIN,
			"the node's IPPROTO_SMC program is not active and could not be loaded (%s): try again later; "
			"the pod would otherwise start on TCP",
			why);
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
			warn(a, lg, "%s does not exist on this kernel: SMC-R stays off for this pod (TCP is used)", kv->key);
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
		warn(a, lg, "no PNETID configured (pnetId or %s): no pnet entry for the pod interface", c->pnet_id_file);
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
		warn(a, lg, "%s", "the SMC_PNETID netlink family is missing (smc module not loaded?): no pnet entry");
		return 0;
	}
	return cni_fail(e, CNI_ERR_IO, "cannot add pnet entry %s for %s: %s", c->pnet_id, ifname, strerror(-rc));
}

/* Value of KEY in CNI_ARGS ("K1=V1;K2=V2", any order); "" when absent. */
static void cni_arg(const char *args, const char *key, char *out, size_t size)
{
	size_t klen = strlen(key);
	const char *p = args;
	out[0] = '\0';
	while (p && *p) {
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			size_t vlen = len - klen - 1;
			if (vlen >= size)
				vlen = size - 1;
			memcpy(out, p + klen + 1, vlen);
			out[vlen] = '\0';
			return;
		}
		p = end ? end + 1 : NULL;
	}
}

static cJSON *state_doc(const struct cni_env *env, const struct netconf *c, const struct applied *a, const char *outcome)
{
	cJSON *doc = cJSON_CreateObject(), *sys = cJSON_CreateObject(), *pnet;
	char ns[254], name[254], uid[64];
	int i;
	cni_arg(env->args, "K8S_POD_NAMESPACE", ns, sizeof(ns));
	cni_arg(env->args, "K8S_POD_NAME", name, sizeof(name));
	cni_arg(env->args, "K8S_POD_UID", uid, sizeof(uid));
	cJSON_AddStringToObject(doc, "podNamespace", ns);
	cJSON_AddStringToObject(doc, "podName", name);
	cJSON_AddStringToObject(doc, "podUid", uid);
	cJSON_AddStringToObject(doc, "containerId", env->container_id);
	cJSON_AddStringToObject(doc, "ifname", env->ifname);
	cJSON_AddStringToObject(doc, "netns", env->netns ? env->netns : "");
	cJSON_AddStringToObject(doc, "outcome", outcome);
	for (i = 0; i < a->n; i++)
		cJSON_AddStringToObject(sys, a->done[i].key, a->done[i].value);
	cJSON_AddItemToObject(doc, "sysctls", sys);
	cJSON_AddItemToObject(doc, "missing", cJSON_Duplicate(a->missing, 1));
	pnet = cJSON_AddObjectToObject(doc, "pnet");
	cJSON_AddStringToObject(pnet, "id", c->pnet_id);
	cJSON_AddStringToObject(pnet, "eth", env->ifname);
	cJSON_AddBoolToObject(pnet, "added", a->pnet_added);
	cJSON_AddItemToObject(doc, "warnings", cJSON_Duplicate(a->warnings, 1));
	cJSON_AddBoolToObject(doc, "ipv6Only", a->ipv6_only);
	cJSON_AddStringToObject(doc, "mechanism", a->mechanism ? a->mechanism : "none");
	if (a->mechanism_why[0])
		cJSON_AddStringToObject(doc, "mechanismWhy", a->mechanism_why);
	if (a->bpf_enabled) {
		cJSON *bpf = cJSON_AddObjectToObject(doc, "bpf");
		char cookie[24];
		snprintf(cookie, sizeof(cookie), "%llu", (unsigned long long)a->cookie);
		cJSON_AddStringToObject(bpf, "dir", c->bpf_dir);
		cJSON_AddStringToObject(bpf, "cookie", cookie);
	}
	return doc;
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
		warn(a, lg, "%s", "the pod has only IPv6 addresses: IPv6 kept so it stays reachable; SMC-R carries IPv4 only, so its connections use TCP");
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
		choose_mechanism(x->a, &s, x->c, x->lg, x->e);
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

static int apply_in_netns(const struct cni_env *env, struct netconf *c, struct applied *a, const struct logger *lg,
			  struct cni_error *e)
{
	struct apply_ctx x = {env, c, a, lg, e};
	int result, rc = netns_run(env->netns, 0, apply_here, &x, &result);
	return rc ? netns_fail(e, rc, env->netns) : e->code;
}

static int cmd_add(const struct cni_env *env, struct netconf *c, FILE *out, const struct logger *lg, struct cni_error *e)
{
	struct applied a;
	char path[512];
	cJSON *doc;
	int want, rc;
	if (need_env(env, 1, e))
		return e->code;
	if (!c->prev_result)
		return cni_fail(e, CNI_ERR_INVALID_CONFIG, "prevResult is missing: erdma-smcr must be chained after the primary CNI plugin");
	want = smcr_requested(c->annotations);
	if (want == -1)
		log_msg(lg, "warning", "%s has a value that is not a boolean: SMC-R stays off", SMCR_ANNOTATION);
	if (want != 1)
		return emit_prev_result(out, c) ? cni_fail(e, CNI_ERR_IO, "cannot write the result") : 0;
	if (state_path(c->state_dir, env->container_id, env->ifname, path, sizeof(path)))
		return cni_fail(e, CNI_ERR_INVALID_CONFIG, "stateDir path too long");
	memset(&a, 0, sizeof(a));
	a.missing = cJSON_CreateArray();
	a.warnings = cJSON_CreateArray();
	conf_load_pnetid(c, lg);
	/* Record intent first: if the state cannot be written, nothing is touched. */
	doc = state_doc(env, c, &a, "pending");
	rc = state_write(c->state_dir, path, doc, 0);
	cJSON_Delete(doc);
	if (rc) {
		cni_fail(e, CNI_ERR_IO, "cannot write state in %s: %s", c->state_dir, strerror(-rc));
	} else if (apply_in_netns(env, c, &a, lg, e) == 0) {
		doc = state_doc(env, c, &a, cJSON_GetArraySize(a.missing) ? "partial" : "applied");
		rc = state_write(c->state_dir, path, doc, 1);
		cJSON_Delete(doc);
		if (rc)
			log_msg(lg, "warning", "cannot update state %s: %s", path, strerror(-rc));
		log_msg(lg, "info", "SMC-R %s (%s): %d sysctl(s), pnet %s",
			cJSON_GetArraySize(a.missing) ? "partly applied" : "applied", a.mechanism ? a.mechanism : "none", a.n,
			a.pnet_added ? c->pnet_id : "none");
		if (emit_prev_result(out, c))
			cni_fail(e, CNI_ERR_IO, "cannot write the result");
	} else {
		unlink(path);
	}
	cJSON_Delete(a.missing);
	cJSON_Delete(a.warnings);
	return e->code;
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

static int state_bpf(const cJSON *state, const char **dir, unsigned long long *cookie);

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
	{
		const char *dir;
		unsigned long long cookie;
		if (state_bpf(x->state, &dir, &cookie) == 0 && smcbpf_listed(dir, cookie) != 1)
			return cni_fail(x->e, CNI_ERR_DRIFT, "the IPPROTO_SMC program in %s no longer switches this netns (unloaded?)", dir);
	}
	return 0;
}

static int cmd_check(const struct cni_env *env, struct netconf *c, const struct logger *lg, struct cni_error *e)
{
	char path[512];
	struct drift_ctx x;
	cJSON *state;
	int result, rc;
	(void)lg;
	if (need_env(env, 1, e))
		return e->code;
	if (!c->prev_result)
		return cni_fail(e, CNI_ERR_INVALID_CONFIG, "prevResult is missing");
	if (smcr_requested(c->annotations) != 1)
		return 0;
	if (state_path(c->state_dir, env->container_id, env->ifname, path, sizeof(path)))
		return cni_fail(e, CNI_ERR_INVALID_CONFIG, "stateDir path too long");
	state = state_read(path);
	if (!state)
		return cni_fail(e, CNI_ERR_DRIFT, "no state recorded for %s/%s: ADD did not run or its state was lost", env->container_id, env->ifname);
	x.state = state;
	x.ifname = env->ifname;
	x.e = e;
	rc = netns_run(env->netns, 0, check_drift, &x, &result);
	cJSON_Delete(state);
	return rc ? netns_fail(e, rc, env->netns) : e->code;
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

/* The pin directory and netns cookie a state records for the IPPROTO_SMC program; 0 when it has them. */
static int state_bpf(const cJSON *state, const char **dir, unsigned long long *cookie)
{
	const cJSON *bpf = cJSON_GetObjectItemCaseSensitive(state, "bpf");
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(bpf, "dir");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(bpf, "cookie");
	char *end;
	if (!cJSON_IsString(d) || !cJSON_IsString(c))
		return -1;
	errno = 0;
	*cookie = strtoull(c->valuestring, &end, 10);
	if (errno || *end || end == c->valuestring)
		return -1;
	*dir = d->valuestring;
	return 0;
}

/* Switches the IPPROTO_SMC program off for the pod's netns (by cookie: the netns may be gone). */
static void undo_bpf(const cJSON *state, const struct logger *lg)
{
	const char *dir;
	unsigned long long value;
	int rc;
	if (state_bpf(state, &dir, &value))
		return;
	rc = smcbpf_set(dir, value, 0);
	if (rc && rc != -ENOENT)
		log_msg(lg, "warning", "cannot switch off the IPPROTO_SMC program for netns cookie %llu: %s", value, strerror(-rc));
}

static int cmd_del(const struct cni_env *env, struct netconf *c, const struct logger *lg, struct cni_error *e)
{
	char path[512];
	cJSON *state;
	if (need_env(env, 0, e))
		return e->code;
	if (state_path(c->state_dir, env->container_id, env->ifname, path, sizeof(path)))
		return cni_fail(e, CNI_ERR_INVALID_CONFIG, "stateDir path too long");
	state = state_read(path);
	if (state) {
		undo_pnet(state, env->netns, lg);
		undo_bpf(state, lg);
		cJSON_Delete(state);
	}
	if (unlink(path) && errno != ENOENT)
		return cni_fail(e, CNI_ERR_IO, "cannot remove state %s: %s", path, strerror(errno));
	return 0;
}

static int is_valid_attachment(const cJSON *list, const char *cid, const char *ifname)
{
	const cJSON *item;
	cJSON_ArrayForEach(item, list)
	{
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(item, "containerID");
		const cJSON *i = cJSON_GetObjectItemCaseSensitive(item, "ifname");
		if (cJSON_IsString(c) && cJSON_IsString(i) && !strcmp(c->valuestring, cid) && !strcmp(i->valuestring, ifname))
			return 1;
	}
	return 0;
}

static void gc_entry(const struct netconf *c, const char *file, const struct logger *lg)
{
	char path[768];
	cJSON *state;
	const cJSON *cid, *ifn, *ns;
	snprintf(path, sizeof(path), "%s/%s", c->state_dir, file);
	state = state_read(path);
	cid = cJSON_GetObjectItemCaseSensitive(state, "containerId");
	ifn = cJSON_GetObjectItemCaseSensitive(state, "ifname");
	ns = cJSON_GetObjectItemCaseSensitive(state, "netns");
	if (cJSON_IsString(cid) && cJSON_IsString(ifn) && is_valid_attachment(c->attachments, cid->valuestring, ifn->valuestring)) {
		cJSON_Delete(state);
		return;
	}
	if (state) {
		undo_pnet(state, cJSON_IsString(ns) ? ns->valuestring : NULL, lg);
		undo_bpf(state, lg);
	}
	cJSON_Delete(state);
	if (unlink(path) == 0)
		log_msg(lg, "info", "gc: removed stale state %s", file);
}

static int cmd_gc(struct netconf *c, const struct logger *lg, struct cni_error *e)
{
	DIR *d;
	struct dirent *ent;
	if (c->attachments && !cJSON_IsArray(c->attachments))
		return cni_fail(e, CNI_ERR_INVALID_CONFIG, "cni.dev/valid-attachments must be an array");
	d = opendir(c->state_dir);
	if (!d)
		return errno == ENOENT ? 0 : cni_fail(e, CNI_ERR_IO, "cannot read %s: %s", c->state_dir, strerror(errno));
	while ((ent = readdir(d))) {
		size_t n = strlen(ent->d_name);
		if (n > 5 && !strcmp(ent->d_name + n - 5, ".json"))
			gc_entry(c, ent->d_name, lg);
	}
	closedir(d);
	return 0;
}

static int cmd_status(struct netconf *c, struct cni_error *e)
{
	char probe[600];
	cJSON *doc = cJSON_CreateObject();
	int rc;
	snprintf(probe, sizeof(probe), "%s/.status-probe", c->state_dir);
	rc = state_write(c->state_dir, probe, doc, 0);
	cJSON_Delete(doc);
	unlink(probe);
	if (rc)
		return cni_fail(e, CNI_ERR_NOT_AVAILABLE, "state directory %s is not writable: %s", c->state_dir, strerror(-rc));
	return 0;
}

static int cmd_version(FILE *out)
{
	cJSON *doc = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(doc, "supportedVersions");
	int i;
	cJSON_AddStringToObject(doc, "cniVersion", "1.1.0");
	for (i = 0; SUPPORTED_VERSIONS[i]; i++)
		cJSON_AddItemToArray(list, cJSON_CreateString(SUPPORTED_VERSIONS[i]));
	print_json(out, doc);
	cJSON_Delete(doc);
	return 0;
}

static int dispatch(const struct cni_env *env, struct netconf *c, FILE *out, const struct logger *lg, struct cni_error *e)
{
	const char *cmd = env->command;
	if (!strcmp(cmd, "ADD"))
		return cmd_add(env, c, out, lg, e);
	if (!strcmp(cmd, "CHECK"))
		return cmd_check(env, c, lg, e);
	if (!strcmp(cmd, "DEL"))
		return cmd_del(env, c, lg, e);
	if (!strcmp(cmd, "GC"))
		return cmd_gc(c, lg, e);
	if (!strcmp(cmd, "STATUS"))
		return cmd_status(c, e);
	return cni_fail(e, CNI_ERR_INVALID_ENV, "CNI_COMMAND %.20s is not one of ADD, CHECK, DEL, GC, STATUS, VERSION", cmd);
}

int cni_run(const struct cni_env *env, const char *input, FILE *out, FILE *err)
{
	struct cni_error e = {0, "", ""};
	struct netconf c;
	/* The container ID is named in log lines only once it is known to be safe (need_env refuses
	 * the call otherwise); log_msg escapes every line anyway. */
	struct logger lg = {err, NULL, env->container_id && safe_component(env->container_id) ? env->container_id : NULL};
	int rc;
	if (!env->command || !env->command[0]) {
		cni_fail(&e, CNI_ERR_INVALID_ENV, "CNI_COMMAND is not set");
		return emit_error(out, NULL, &e);
	}
	if (!strcmp(env->command, "VERSION"))
		return cmd_version(out);
	if (conf_parse(input, &c, &e)) {
		rc = emit_error(out, c.cni_version && version_supported(c.cni_version) ? c.cni_version : NULL, &e);
		conf_free(&c);
		return rc;
	}
	lg.file = c.log_file;
	rc = dispatch(env, &c, out, &lg, &e) ? emit_error(out, c.cni_version, &e) : 0;
	if (rc)
		log_msg(&lg, "error", "%s failed: %s", env->command, e.msg);
	conf_free(&c);
	return rc;
}
