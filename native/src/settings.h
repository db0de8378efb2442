/* Which sysctls the plugin may write, and the settings it applies to an SMC-R pod. */
#ifndef ERDMA_SMCR_SETTINGS_H
#define ERDMA_SMCR_SETTINGS_H

#include <stddef.h>
#include <stdio.h>
#include "cJSON.h"
#include "util.h"

#define SMCR_ANNOTATION "network.alibabacloud.com/erdma-smcr"
#define SETTINGS_ANNOTATION "smcr.erdma.io/settings"
#define KEEP_IPV6_ANNOTATION "smcr.erdma.io/keep-ipv6"
/* Set by the webhook on pods it gave the preload library (nodes with AF_SMC only). */
#define MECHANISM_ANNOTATION "smcr.erdma.io/mechanism"
#define MAX_SYSCTLS 32
#define SYSCTL_KEY_MAX 64
#define SYSCTL_VALUE_MAX 16

struct sysctl_kv {
	char key[SYSCTL_KEY_MAX];
	char value[SYSCTL_VALUE_MAX];
};

struct settings {
	struct sysctl_kv kv[MAX_SYSCTLS];
	int n;
	int overflow; /* more distinct keys were asked for than fit */
};

/* Go strconv.ParseBool: 1 true, 0 false, -1 anything else. */
int parse_go_bool(const char *s);

/* 1 SMC-R asked for, 0 not (absent or false), -1 invalid value. */
int smcr_requested(const cJSON *annotations);

/* 0 when key=value may be written for a pod whose interface is ifname; else -1 and why. */
int sysctl_allowed(const char *key, const char *value, const char *ifname, char *why, size_t whylen);

/* /proc/sys path of an allowed key (interface names may hold dots). */
int sysctl_path(const char *key, const char *ifname, char *out, size_t size);

/*
 * Resolves the settings of an SMC-R pod: the webhook-owned annotation when present and valid
 * (entries off the allow-list are dropped with a warning), else safe defaults. net.smc.tcp2smc
 * always comes first. Returns -1 when the document asks for more than MAX_SYSCTLS keys: no key
 * is ever dropped silently.
 */
int settings_resolve(const cJSON *annotations, const char *ifname, int disable_ipv6_default, struct settings *out,
		     const struct logger *lg);

/* Removes every net.ipv6.conf.*.disable_ipv6 entry; returns how many. */
/* Removes `key` from the resolved settings (a mechanism other than tcp2smc needs no knob). */
void settings_drop(struct settings *s, const char *key);
int settings_drop_ipv6(struct settings *s);

/* Prints the net.smc knobs and their ranges as JSON: {"knobs":[{"sysctl","min","max"},...]}. */
void settings_print_knobs(FILE *out);

#endif
