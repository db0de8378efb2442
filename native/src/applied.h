/* What ADD applied to one pod netns: what rolls it back, and what its record says (pod_record.h).
 * Filled by pod_netns.c (sysctls, pnet entry) and pod_mechanism.c (the mechanism, the selection). */
#ifndef ERDMA_SMCR_APPLIED_H
#define ERDMA_SMCR_APPLIED_H

#include <stdint.h>
#include "cJSON.h"
#include "settings.h"
#include "util.h"

/* What ADD applied to one pod netns, for its rollback and its record. */
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
	const char *selection;	 /* the SMC selection: enforced, or none (every connection SMC) */
	char selection_why[200]; /* none: why */
	int select_set;		 /* bpf: the netns's selection is in the program's map */
	char select_text[1024];	 /* the selection the webhook wrote (settings "select"), "" when none */
	cJSON *missing;		 /* array of missing knobs */
	cJSON *warnings;	 /* array of strings */
};

/* A warning for the log and the record (the agent turns the record's warnings into Events). */
void pod_warn(struct applied *a, const struct logger *lg, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
