/* The sysctl allow-list with ranges (Documentation/networking/smc-sysctl.rst), and how the
 * settings of a pod are resolved from its annotations. */
#include "settings.h"

#include <stdlib.h>
#include <string.h>

struct knob {
	const char *name; /* under net.smc. */
	unsigned long long min, max;
};

/* Known per-netns knobs; tcp2smc is Alibaba Cloud Linux 3's. Unknown net.smc.* names get 0..2^32-1. */
static const struct knob KNOBS[] = {
	{"tcp2smc", 0, 1},
	{"wmem", 16384, 1073741823ULL},
	{"rmem", 16384, 1073741823ULL},
	{"autocorking_size", 0, 4294967295ULL},
	{"smcr_buf_type", 0, 2},
	{"smcr_testlink_time", 0, 2147483},
};

void settings_print_knobs(FILE *out)
{
	size_t i;
	fputs("{\"knobs\":[", out);
	for (i = 0; i < sizeof(KNOBS) / sizeof(KNOBS[0]); i++)
		fprintf(out, "%s{\"sysctl\":\"net.smc.%s\",\"min\":%llu,\"max\":%llu}", i ? "," : "", KNOBS[i].name,
			KNOBS[i].min, KNOBS[i].max);
	fputs("]}\n", out);
}

int parse_go_bool(const char *s)
{
	static const char *yes[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *no[] = {"0", "f", "F", "FALSE", "false", "False"};
	size_t i;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcmp(s, yes[i]))
			return 1;
		if (!strcmp(s, no[i]))
			return 0;
	}
	return -1;
}

int smcr_requested(const cJSON *annotations)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(annotations, SMCR_ANNOTATION);
	if (!cJSON_IsString(v))
		return 0;
	return parse_go_bool(v->valuestring);
}

static int is_name(const char *s, size_t n)
{
	size_t i;
	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	return 1;
}

static int parse_value(const char *v, unsigned long long *out)
{
	size_t n = strlen(v), i;
	if (n == 0 || n > 10)
		return -1;
	for (i = 0; i < n; i++)
		if (v[i] < '0' || v[i] > '9')
			return -1;
	*out = strtoull(v, NULL, 10);
	return 0;
}

static int check_range(const char *key, const char *value, unsigned long long min, unsigned long long max, char *why,
		       size_t whylen)
{
	unsigned long long v;
	if (parse_value(value, &v)) {
		snprintf(why, whylen, "%s: value \"%.20s\" is not a whole number", key, value);
		return -1;
	}
	if (v < min || v > max) {
		snprintf(why, whylen, "%s: %llu is outside %llu..%llu", key, v, min, max);
		return -1;
	}
	return 0;
}

static int smc_knob(const char *key, const char *value, char *why, size_t whylen)
{
	const char *name = key + strlen("net.smc.");
	size_t i;
	if (!is_name(name, strlen(name))) {
		snprintf(why, whylen, "%.60s: not a valid net.smc knob name", key);
		return -1;
	}
	for (i = 0; i < sizeof(KNOBS) / sizeof(KNOBS[0]); i++)
		if (!strcmp(name, KNOBS[i].name))
			return check_range(key, value, KNOBS[i].min, KNOBS[i].max, why, whylen);
	return check_range(key, value, 0, 4294967295ULL, why, whylen);
}

/* net.ipv6.conf.<all|default|ifname>.disable_ipv6 */
static int ipv6_knob(const char *key, const char *value, const char *ifname, char *why, size_t whylen)
{
	const char *mid = key + strlen("net.ipv6.conf.");
	const char *suffix = ".disable_ipv6";
	size_t n = strlen(mid), sl = strlen(suffix);
	if (n <= sl || strcmp(mid + n - sl, suffix)) {
		snprintf(why, whylen, "%.60s: only disable_ipv6 may be set under net.ipv6.conf", key);
		return -1;
	}
	n -= sl;
	if (!((n == 3 && !strncmp(mid, "all", 3)) || (n == 7 && !strncmp(mid, "default", 7)) ||
	      (ifname && n == strlen(ifname) && !strncmp(mid, ifname, n)))) {
		snprintf(why, whylen, "%.60s: only all, default or the pod's interface may be set", key);
		return -1;
	}
	return check_range(key, value, 0, 1, why, whylen);
}

int sysctl_allowed(const char *key, const char *value, const char *ifname, char *why, size_t whylen)
{
	size_t n = strlen(key);
	if (n == 0 || n >= SYSCTL_KEY_MAX || strstr(key, "..") || strchr(key, '/') || key[n - 1] == '.') {
		snprintf(why, whylen, "%.60s: malformed sysctl key", key);
		return -1;
	}
	if (!strncmp(key, "net.smc.", 8))
		return smc_knob(key, value, why, whylen);
	if (!strncmp(key, "net.ipv6.conf.", 14))
		return ipv6_knob(key, value, ifname, why, whylen);
	snprintf(why, whylen, "%.60s: not on the allow-list (net.smc.*, net.ipv6.conf.*.disable_ipv6)", key);
	return -1;
}

int sysctl_path(const char *key, const char *ifname, char *out, size_t size)
{
	int n;
	if (!strncmp(key, "net.ipv6.conf.", 14)) {
		const char *mid = key + 14;
		size_t len = strlen(mid) - strlen(".disable_ipv6");
		n = snprintf(out, size, "/proc/sys/net/ipv6/conf/%.*s/disable_ipv6", (int)len, mid);
	} else {
		size_t i;
		n = snprintf(out, size, "/proc/sys/%s", key);
		for (i = strlen("/proc/sys/"); n > 0 && (size_t)n < size && out[i]; i++)
			if (out[i] == '.')
				out[i] = '/';
	}
	(void)ifname;
	return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

static void add(struct settings *s, const char *key, const char *value)
{
	int i;
	for (i = 0; i < s->n; i++)
		if (!strcmp(s->kv[i].key, key)) {
			copy_str(s->kv[i].value, sizeof(s->kv[i].value), value);
			return;
		}
	if (s->n >= MAX_SYSCTLS) {
		s->overflow = 1;
		return;
	}
	copy_str(s->kv[s->n].key, sizeof(s->kv[s->n].key), key);
	copy_str(s->kv[s->n].value, sizeof(s->kv[s->n].value), value);
	s->n++;
}

static void defaults(const cJSON *annotations, int disable_ipv6_default, struct settings *out)
{
	const cJSON *keep = cJSON_GetObjectItemCaseSensitive(annotations, KEEP_IPV6_ANNOTATION);
	int keep_ipv6 = cJSON_IsString(keep) ? parse_go_bool(keep->valuestring) == 1 : !disable_ipv6_default;
	add(out, "net.smc.tcp2smc", "1");
	if (!keep_ipv6) {
		add(out, "net.ipv6.conf.all.disable_ipv6", "1");
		add(out, "net.ipv6.conf.default.disable_ipv6", "1");
	}
}

int settings_resolve(const cJSON *annotations, const char *ifname, int disable_ipv6_default, struct settings *out,
		     const struct logger *lg)
{
	const cJSON *raw = cJSON_GetObjectItemCaseSensitive(annotations, SETTINGS_ANNOTATION);
	cJSON *doc, *sysctls, *item;
	char why[160];
	memset(out, 0, sizeof(*out));
	if (!cJSON_IsString(raw)) {
		log_msg(lg, "warning", "no %s annotation (was the webhook down?): applying safe defaults", SETTINGS_ANNOTATION);
		defaults(annotations, disable_ipv6_default, out);
		return 0;
	}
	doc = cJSON_Parse(raw->valuestring);
	sysctls = cJSON_GetObjectItemCaseSensitive(doc, "sysctls");
	if (!cJSON_IsObject(sysctls) || !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(doc, "version")) ||
	    cJSON_GetObjectItemCaseSensitive(doc, "version")->valueint != 1) {
		log_msg(lg, "warning", "%s is not a version 1 settings document: applying safe defaults", SETTINGS_ANNOTATION);
		cJSON_Delete(doc);
		defaults(annotations, disable_ipv6_default, out);
		return 0;
	}
	add(out, "net.smc.tcp2smc", "1");
	cJSON_ArrayForEach(item, sysctls)
	{
		if (!item->string || !cJSON_IsString(item) || sysctl_allowed(item->string, item->valuestring, ifname, why, sizeof(why))) {
			log_msg(lg, "warning", "ignoring setting: %s", item->string && cJSON_IsString(item) ? why : "non-string value");
			continue;
		}
		add(out, item->string, item->valuestring);
	}
	cJSON_Delete(doc);
	add(out, "net.smc.tcp2smc", "1"); /* the document may not switch it off */
	return out->overflow ? -1 : 0;
}

void settings_drop(struct settings *s, const char *key)
{
	int i, kept = 0;
	for (i = 0; i < s->n; i++)
		if (strcmp(s->kv[i].key, key))
			s->kv[kept++] = s->kv[i];
	s->n = kept;
}

int settings_drop_ipv6(struct settings *s)
{
	int i, kept = 0, dropped = 0;
	for (i = 0; i < s->n; i++) {
		size_t n = strlen(s->kv[i].key);
		if (!strncmp(s->kv[i].key, "net.ipv6.conf.", 14) && n > 13 && !strcmp(s->kv[i].key + n - 13, ".disable_ipv6")) {
			dropped++;
			continue;
		}
		s->kv[kept++] = s->kv[i];
	}
	s->n = kept;
	return dropped;
}
