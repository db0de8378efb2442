/* What ADD applies inside a pod's network namespace (allow-listed sysctls, the pnet entry, the
 * mechanism through pod_mechanism.h), what CHECK finds drifted there, and what DEL and GC undo: the
 * plugin's work on the pod, apart from the CNI protocol (cni.c) and the state record (pod_record.h). */
#ifndef ERDMA_SMCR_POD_NETNS_H
#define ERDMA_SMCR_POD_NETNS_H

#include <stdint.h>
#include "cJSON.h"
#include "cni.h"
#include "conf.h"
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

/* Applies the pod's settings, mechanism and pnet entry inside its netns; on failure undoes what it
 * applied. 0 or the CNI error code (e set). */
int pod_apply(const struct cni_env *env, struct netconf *c, struct applied *a, const struct logger *lg,
	      struct cni_error *e);

/* CHECK: whether what the record says ADD applied is still so in the pod netns. 0 or the error. */
int pod_check(const cJSON *state, const char *netns, const char *ifname, struct cni_error *e);

/* DEL and GC, best effort: the pod's pnet entry (when its netns still exists) and its mechanism. */
void pod_undo(const cJSON *state, const char *netns, const struct logger *lg);

#endif
