/* The record ADD writes of a pod (before touching its netns, then with what it applied), which
 * CHECK, DEL, GC and the node agent read: what our plugin did to which pod. */
#ifndef ERDMA_SMCR_POD_RECORD_H
#define ERDMA_SMCR_POD_RECORD_H

#include "cJSON.h"
#include "applied.h"
#include "cni_env.h"
#include "conf.h"

/* The record for the pod named by env's CNI_ARGS, with `outcome` (pending, applied, partial). */
cJSON *pod_record(const struct cni_env *env, const struct netconf *c, const struct applied *a, const char *outcome);

#endif
