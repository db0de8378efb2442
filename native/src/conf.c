/* Parsing of the network configuration: clear precedence (explicit options over files over
 * defaults), every field type-checked, unknown versions refused. */
#include "conf.h"
#include "smcbpf.h"

#include <stdlib.h>
#include <string.h>
#include "smc_genl.h"

const char *const SUPPORTED_VERSIONS[] = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0", NULL};

int version_supported(const char *v)
{
	int i;
	for (i = 0; SUPPORTED_VERSIONS[i]; i++)
		if (!strcmp(v, SUPPORTED_VERSIONS[i]))
			return 1;
	return 0;
}

static const char *opt_string(const cJSON *root, const char *key, const char *fallback, int *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!v || cJSON_IsNull(v))
		return fallback;
	if (!cJSON_IsString(v) || v->valuestring[0] == '\0') {
		*bad = 1;
		return fallback;
	}
	return v->valuestring;
}

static int opt_bool(const cJSON *root, const char *key, int fallback, int *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!v || cJSON_IsNull(v))
		return fallback;
	if (!cJSON_IsBool(v)) {
		*bad = 1;
		return fallback;
	}
	return cJSON_IsTrue(v);
}

static int parse_options(struct netconf *c, struct cni_error *e)
{
	int bad = 0;
	const char *pnet = opt_string(c->root, "pnetId", NULL, &bad);
	if (bad)
		return cni_fail(e, CNI_ERR_INVALID_CONFIG, "pnetId must be a non-empty string");
	if (pnet && pnetid_normalize(pnet, c->pnet_id, sizeof(c->pnet_id)))
		return cni_fail(e, CNI_ERR_INVALID_CONFIG, "pnetId must be 1 to 16 letters or digits");
	c->pnet_id_file = opt_string(c->root, "pnetIdFile", DEFAULT_PNETID_FILE, &bad);
	c->state_dir = opt_string(c->root, "stateDir", DEFAULT_STATE_DIR, &bad);
	c->log_file = opt_string(c->root, "logFile", NULL, &bad);
	c->bpf_dir = opt_string(c->root, "bpfDir", SMCBPF_DEFAULT_DIR, &bad);
	if (bad)
		return cni_fail(e, CNI_ERR_INVALID_CONFIG, "pnetIdFile, stateDir, logFile and bpfDir must be non-empty strings");
	c->fail_on_missing = opt_bool(c->root, "failOnMissingKnob", 0, &bad);
	c->disable_ipv6 = opt_bool(c->root, "disableIPv6", 1, &bad);
	if (bad)
		return cni_fail(e, CNI_ERR_INVALID_CONFIG, "failOnMissingKnob and disableIPv6 must be booleans");
	return 0;
}

static int parse_runtime(struct netconf *c, struct cni_error *e)
{
	const cJSON *rc = cJSON_GetObjectItemCaseSensitive(c->root, "runtimeConfig");
	const cJSON *ann;
	if (!rc || cJSON_IsNull(rc))
		return 0;
	if (!cJSON_IsObject(rc))
		return cni_fail(e, CNI_ERR_INVALID_CONFIG, "runtimeConfig must be an object");
	ann = cJSON_GetObjectItemCaseSensitive(rc, ANNOTATIONS_CAP);
	if (ann && !cJSON_IsNull(ann) && !cJSON_IsObject(ann))
		return cni_fail(e, CNI_ERR_INVALID_CONFIG, "runtimeConfig[\"%s\"] must be an object", ANNOTATIONS_CAP);
	c->annotations = cJSON_IsObject(ann) ? ann : NULL;
	return 0;
}

/*
 * A copy of text where every \u0000 escape reads \ufffd. cJSON would end the decoded C string at
 * the NUL, so "true\u0000x" would read as "true" here while the webhook (and Go) see a string
 * that is not a boolean; with the replacement both read it the same way.
 */
static char *without_nul_escapes(const char *text)
{
	size_t i, n = strlen(text);
	char *copy = malloc(n + 1);
	if (!copy)
		return NULL;
	memcpy(copy, text, n + 1);
	for (i = 0; i + 1 < n; i++) {
		if (copy[i] != '\\')
			continue;
		if (copy[i + 1] == 'u' && i + 5 < n && !strncmp(copy + i + 2, "0000", 4))
			memcpy(copy + i + 2, "fffd", 4);
		i++; /* skip the escaped character: "\\u0000" is a backslash and text */
	}
	return copy;
}

int conf_parse(const char *text, struct netconf *c, struct cni_error *e)
{
	const cJSON *v;
	char *clean;
	memset(c, 0, sizeof(*c));
	clean = without_nul_escapes(text);
	if (!clean)
		return cni_fail(e, CNI_ERR_IO, "out of memory");
	c->root = cJSON_Parse(clean);
	free(clean);
	if (!c->root)
		return cni_fail(e, CNI_ERR_DECODE, "network configuration is not valid JSON");
	if (!cJSON_IsObject(c->root))
		return cni_fail(e, CNI_ERR_DECODE, "network configuration must be a JSON object");
	v = cJSON_GetObjectItemCaseSensitive(c->root, "cniVersion");
	if (!cJSON_IsString(v))
		return cni_fail(e, CNI_ERR_INVALID_CONFIG, "cniVersion is missing");
	c->cni_version = v->valuestring;
	if (!version_supported(c->cni_version))
		return cni_fail(e, CNI_ERR_INCOMPATIBLE_VERSION, "cniVersion %.20s is not supported (0.3.0 to 1.1.0)", c->cni_version);
	v = cJSON_GetObjectItemCaseSensitive(c->root, "name");
	c->name = cJSON_IsString(v) ? v->valuestring : "";
	v = cJSON_GetObjectItemCaseSensitive(c->root, "prevResult");
	if (v && !cJSON_IsNull(v) && !cJSON_IsObject(v))
		return cni_fail(e, CNI_ERR_INVALID_CONFIG, "prevResult must be an object");
	c->prev_result = cJSON_IsObject(v) ? (cJSON *)v : NULL;
	c->attachments = cJSON_GetObjectItemCaseSensitive(c->root, "cni.dev/valid-attachments");
	if (parse_runtime(c, e))
		return e->code;
	return parse_options(c, e);
}

void conf_free(struct netconf *c)
{
	cJSON_Delete(c->root);
	c->root = NULL;
}

int conf_load_pnetid(struct netconf *c, const struct logger *lg)
{
	char line[64] = "";
	FILE *f;
	size_t n;
	if (c->pnet_id[0])
		return 0;
	f = fopen(c->pnet_id_file, "r");
	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	n = strcspn(line, "\r\n \t");
	line[n] = '\0';
	if (pnetid_normalize(line, c->pnet_id, sizeof(c->pnet_id))) {
		log_msg(lg, "warning", "%s does not hold a valid PNETID", c->pnet_id_file);
		c->pnet_id[0] = '\0';
		return -1;
	}
	return 0;
}
