/* The CNI dispatcher: one entry point over CNI_COMMAND with environment, stdin and stdout
 * passed in, so tests (and main) drive it the same way. */
#ifndef ERDMA_SMCR_CNI_H
#define ERDMA_SMCR_CNI_H

#include <stddef.h>
#include <stdio.h>
#include "cni_env.h"

/* Runs one CNI command; writes the result or error JSON to out, logs to err. Returns exit code. */
int cni_run(const struct cni_env *env, const char *input, FILE *out, FILE *err);

#endif
