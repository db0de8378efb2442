/* The CNI protocol of the erdma-smcr chained plugin (spec 1.0/1.1): ADD, CHECK, DEL, STATUS, GC and
 * VERSION over the environment, stdin and stdout. ADD records its intent first (pod_record.h), then
 * changes only what the plugin owns in the pod netns (pod_netns.h); any failure undoes what it
 * applied, so no netns is left half-configured. */
#include "cni.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "conf.h"
#include "pod_netns.h"
#include "pod_record.h"
#include "settings.h"
#include "state.h"
#include "util.h"

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
	doc = pod_record(env, c, &a, "pending");
	rc = state_write(c->state_dir, path, doc, 0);
	cJSON_Delete(doc);
	if (rc) {
		cni_fail(e, CNI_ERR_IO, "cannot write state in %s: %s", c->state_dir, strerror(-rc));
	} else if (pod_apply(env, c, &a, lg, e) == 0) {
		doc = pod_record(env, c, &a, cJSON_GetArraySize(a.missing) ? "partial" : "applied");
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

static int cmd_check(const struct cni_env *env, struct netconf *c, const struct logger *lg, struct cni_error *e)
{
	char path[512];
	cJSON *state;
	int rc;
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
	rc = pod_check(state, env->netns, env->ifname, e);
	cJSON_Delete(state);
	return rc;
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
		pod_undo(state, env->netns, lg);
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
		pod_undo(state, cJSON_IsString(ns) ? ns->valuestring : NULL, lg);
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
