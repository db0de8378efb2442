/* How an SMC-R pod's TCP becomes SMC (docs/support-matrix.md): choosing the mechanism inside its
 * netns at ADD (tcp2smc, the webhook's preload library, the IPPROTO_SMC program), switching it on,
 * checking it is still on, and switching it off at DEL. */
#ifndef ERDMA_SMCR_POD_MECHANISM_H
#define ERDMA_SMCR_POD_MECHANISM_H

#include "cJSON.h"
#include "applied.h"
#include "cni_env.h"
#include "conf.h"

/* Inside the pod netns: sets a->mechanism (and drops knobs it does not need from s). 0 or the CNI
 * error (e set: "try again later" when the IPPROTO_SMC program cannot be pinned yet). */
int mechanism_choose(struct applied *a, struct settings *s, const struct netconf *c, const struct logger *lg,
		     struct cni_error *e);
/* Undoes what mechanism_choose switched on (ADD failed after it). */
void mechanism_rollback(struct applied *a, const struct netconf *c);
/* The record's part for the mechanism: its name, why none, the program's pins and cookie. */
void mechanism_record(cJSON *doc, const struct applied *a, const struct netconf *c);
/* CHECK: 0 when the recorded mechanism still switches the netns, else the drift error. */
int mechanism_check(const cJSON *state, struct cni_error *e);
/* DEL, GC: switches the recorded mechanism off for the netns (by cookie: the netns may be gone). */
void mechanism_undo(const cJSON *state, const struct logger *lg);

#endif
