/* Choosing, switching on, checking and undoing an SMC-R pod's mechanism (pod_mechanism.h). */
#include "pod_mechanism.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "netns.h"
#include "selection.h"
#include "smcbpf.h"
#include "smcselect.h"

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
	pod_warn(a, lg, "no SMC mechanism was active at ADD: %s", why);
}

/*
 * How this pod's TCP becomes SMC (docs/support-matrix.md), decided inside its netns: the webhook's
 * preload library when it gave the pod one; else Alibaba's net.smc.tcp2smc knob where the kernel has
 * it; else, where the kernel has IPPROTO_SMC, the BPF program switched on for this netns (loaded
 * and pinned by us when the agent has not yet: a node that has just booted). A program that cannot
 * be pinned there is a passing state (bpffs not mounted yet, the lock held): the ADD fails with "try
 * again later", which the kubelet retries, rather than starting the pod on TCP for its lifetime.
 * With no mechanism at all, the record says so and why; tcp2smc stays in the settings and is
 * reported missing, as before.
 */
/* The selection text the webhook wrote into the settings document ("select"); NULL when none. */
static char *settings_select(const cJSON *annotations)
{
	const cJSON *raw = cJSON_GetObjectItemCaseSensitive(annotations, SETTINGS_ANNOTATION), *sel;
	cJSON *doc;
	char *out = NULL;
	if (!cJSON_IsString(raw))
		return NULL;
	doc = cJSON_Parse(raw->valuestring);
	sel = cJSON_GetObjectItemCaseSensitive(doc, "select");
	if (cJSON_IsString(sel))
		out = strdup(sel->valuestring);
	cJSON_Delete(doc);
	return out;
}

static void selection_none(struct applied *a, const struct logger *lg, const char *why)
{
	a->selection = "none";
	snprintf(a->selection_why, sizeof(a->selection_why), "%s", why);
	pod_warn(a, lg, "the pod's SMC selection is not enforced: %s; every TCP connection of the pod uses SMC", why);
}

/*
 * The pod's SMC selection under the IPPROTO_SMC program (inside its netns): its selection in the
 * smc_hs_ctrl program's map and net.smc.hs_ctrl naming that program, where the kernel has the hook
 * (6.19+); elsewhere every connection stays SMC, which the record and the pod's Event say.
 */
static void select_bpf(struct applied *a, const struct netconf *c, const struct logger *lg)
{
	char why[300] = "";
	struct selection s;
	int rc;
	if (!a->select_text[0])
		return; /* the webhook gave none: every connection, as before */
	if (selection_parse(a->select_text, &s, why, sizeof(why))) {
		selection_none(a, lg, why);
		return;
	}
	if (!smcselect_available()) {
		selection_none(a, lg, "this kernel has no smc_hs_ctrl (6.19+ with CONFIG_SMC_HS_CTRL_BPF)");
		return;
	}
	rc = smcselect_set(c->bpf_dir, a->cookie, &s);
	if (rc == -ENOENT) {
		/* Pinned before this version (no selection program yet): load it now. */
		rc = smcbpf_load(c->bpf_dir, 0, why, sizeof(why));
		if (rc == 0)
			rc = smcselect_set(c->bpf_dir, a->cookie, &s);
	}
	if (rc == 0) {
		a->select_set = 1;
		rc = smcselect_use_here();
	}
	if (rc) {
		snprintf(why, sizeof(why), "cannot hand it to smc_hs_ctrl: %s", strerror(-rc));
		selection_none(a, lg, why);
		return;
	}
	a->selection = "enforced";
}

int mechanism_choose(struct applied *a, struct settings *s, const struct netconf *c, const struct logger *lg,
		     struct cni_error *e)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(c->annotations, MECHANISM_ANNOTATION);
	char why[300] = "";
	int rc;
	char *text = settings_select(c->annotations);
	/* What the record keeps of the selection, whatever enforces it (the agent counts by it). */
	if (text && strlen(text) < sizeof(a->select_text))
		snprintf(a->select_text, sizeof(a->select_text), "%s", text);
	free(text);
	/*
	 * The webhook's preload library first, even where the tcp2smc knob exists (#100): the knob
	 * converts every TCP socket of the netns, the library keeps the pod's selection.
	 */
	if (cJSON_IsString(m) && !strcmp(m->valuestring, "preload")) {
		settings_drop(s, "net.smc.tcp2smc");
		a->mechanism = "preload";
		/* The library reads the selection from ERDMA_SMCR_SELECT, set by the webhook beside it. */
		if (a->select_text[0])
			a->selection = "enforced";
		return 0;
	}
	a->mechanism = "tcp2smc";
	if (access("/proc/sys/net/smc/tcp2smc", F_OK) == 0) {
		if (a->select_text[0])
			selection_none(a, lg, "net.smc.tcp2smc converts every TCP socket of the netns");
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
		select_bpf(a, c, lg);
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
void mechanism_undo(const cJSON *state, const struct logger *lg)
{
	const char *dir;
	unsigned long long value;
	int rc;
	if (state_bpf(state, &dir, &value))
		return;
	/* The netns's selection goes with it (absent where the kernel has no smc_hs_ctrl). */
	smcselect_set(dir, value, NULL);
	rc = smcbpf_set(dir, value, 0);
	if (rc && rc != -ENOENT)
		log_msg(lg, "warning", "cannot switch off the IPPROTO_SMC program for netns cookie %llu: %s", value, strerror(-rc));
}

void mechanism_rollback(struct applied *a, const struct netconf *c)
{
	if (a->select_set)
		smcselect_set(c->bpf_dir, a->cookie, NULL);
	if (a->bpf_enabled)
		smcbpf_set(c->bpf_dir, a->cookie, 0);
	a->bpf_enabled = 0;
	a->select_set = 0;
}

void mechanism_record(cJSON *doc, const struct applied *a, const struct netconf *c)
{
	cJSON_AddStringToObject(doc, "mechanism", a->mechanism ? a->mechanism : "none");
	if (a->mechanism_why[0])
		cJSON_AddStringToObject(doc, "mechanismWhy", a->mechanism_why);
	if (a->selection)
		cJSON_AddStringToObject(doc, "selection", a->selection);
	if (a->selection_why[0])
		cJSON_AddStringToObject(doc, "selectionWhy", a->selection_why);
	if (a->select_text[0])
		cJSON_AddStringToObject(doc, "select", a->select_text);
	if (a->bpf_enabled) {
		cJSON *bpf = cJSON_AddObjectToObject(doc, "bpf");
		char cookie[24];
		snprintf(cookie, sizeof(cookie), "%llu", (unsigned long long)a->cookie);
		cJSON_AddStringToObject(bpf, "dir", c->bpf_dir);
		cJSON_AddStringToObject(bpf, "cookie", cookie);
	}
}

int mechanism_check(const cJSON *state, struct cni_error *e)
{
	const char *dir;
	unsigned long long cookie;
	if (state_bpf(state, &dir, &cookie) == 0 && smcbpf_listed(dir, cookie) != 1)
		return cni_fail(e, CNI_ERR_DRIFT, "the IPPROTO_SMC program in %s no longer switches this netns (unloaded?)", dir);
	return 0;
}
