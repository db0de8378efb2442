/* What ADD applies inside a pod's network namespace (allow-listed sysctls, the pnet entry, the
 * mechanism through pod_mechanism.h), what CHECK finds drifted there, and what DEL and GC undo: the
 * plugin's work on the pod, apart from the CNI protocol (cni.c) and the state record (pod_record.h). */
#ifndef ERDMA_SMCR_POD_NETNS_H
#define ERDMA_SMCR_POD_NETNS_H

#include "applied.h"
#include "cJSON.h"
#include "cni_env.h"
#include "conf.h"

/* Applies the pod's settings, mechanism and pnet entry inside its netns; on failure undoes what it
 * applied. 0 or the CNI error code (e set). */
int pod_apply(const struct cni_env *env, struct netconf *c, struct applied *a, const struct logger *lg,
	      struct cni_error *e);

/* CHECK: whether what the record says ADD applied is still so in the pod netns. 0 or the error. */
int pod_check(const cJSON *state, const char *netns, const char *ifname, struct cni_error *e);

/* DEL and GC, best effort: the pod's pnet entry (when its netns still exists) and its mechanism. */
void pod_undo(const cJSON *state, const char *netns, const struct logger *lg);

#endif
