/* A network namespace's SMC counters (SMC generic netlink). See smc_stats.c. */
#ifndef ERDMA_SMCR_SMC_STATS_H
#define ERDMA_SMCR_SMC_STATS_H

#include <stdio.h>

/* Prints one JSON object and a newline; 0 (a section the kernel cannot give says why). */
int smc_stats(FILE *out);

#endif
