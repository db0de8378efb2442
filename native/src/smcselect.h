/* The SMC selection in the kernel (#93): the smc_hs_ctrl program (bpf/smc_select.bpf.c, kernels
 * 6.19+ with CONFIG_SMC_HS_CTRL_BPF) registered under the name "erdma_smcr", its per-netns map of
 * selections, and what a pod netns needs to use it (net.smc.hs_ctrl). Pinned beside the IPPROTO_SMC
 * program (smcbpf.h), under the same lock. */
#ifndef ERDMA_SMCR_SMCSELECT_H
#define ERDMA_SMCR_SMCSELECT_H

#include <stdint.h>
#include <stdio.h>
#include "selection.h"

/* The name a pod netns writes into net.smc.hs_ctrl. */
#define SMCSELECT_NAME "erdma_smcr"

/* 1 when this netns's kernel has smc_hs_ctrl (net.smc.hs_ctrl exists), else 0. */
int smcselect_available(void);
/* Registers the program and pins its maps in `dir` unless they are pinned already; the caller holds
 * the pins' lock (smcbpf_load). 0, SMCBPF_REFUSED (the kernel has no smc_hs_ctrl) or -errno. */
int smcselect_load_locked(const char *dir, char *why, size_t size);
/* Unregisters the program and removes its pins; the caller holds the lock. 0 or -errno. */
int smcselect_unload_locked(const char *dir);
/* Writes (s) or removes (NULL) the selection of the netns `cookie`. -ENOENT: not loaded. */
int smcselect_set(const char *dir, uint64_t cookie, const struct selection *s);
/* Inside a pod netns: points its net.smc.hs_ctrl at our program. 0 or -errno. */
int smcselect_use_here(void);
/* Writes "select":{"registered":..,"netns":[{"cookie":..,"kept":..,"selected":..}]} (no braces around). */
void smcselect_status(const char *dir, FILE *out);

#endif
