/* Shared helpers of the erdma-smcr CNI plugin: CNI error codes, logging, small string tools. */
#ifndef ERDMA_SMCR_UTIL_H
#define ERDMA_SMCR_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Error codes of the CNI spec (SPEC.md "Error"), and ours from 100 up. */
enum cni_code {
	CNI_OK = 0,
	CNI_ERR_INCOMPATIBLE_VERSION = 1,
	CNI_ERR_UNSUPPORTED_FIELD = 2,
	CNI_ERR_UNKNOWN_CONTAINER = 3,
	CNI_ERR_INVALID_ENV = 4,
	CNI_ERR_IO = 5,
	CNI_ERR_DECODE = 6,
	CNI_ERR_INVALID_CONFIG = 7,
	CNI_ERR_TRY_AGAIN = 11,
	CNI_ERR_NOT_AVAILABLE = 50,
	CNI_ERR_SMC_UNAVAILABLE = 100, /* a knob or the SMC netlink family is missing (failOnMissingKnob) */
	CNI_ERR_DRIFT = 101,	       /* CHECK: the netns no longer has what ADD applied */
};

/* An error being reported: code, message and optional details. */
struct cni_error {
	int code;
	char msg[256];
	char details[512];
};

int cni_fail(struct cni_error *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A logger writing to stderr and, when set, appending to a log file. */
struct logger {
	FILE *err;
	const char *file;
	const char *container;
};

void log_msg(const struct logger *lg, const char *level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Copies at most size-1 bytes and always terminates; returns -1 when truncated. */
int copy_str(char *dst, size_t size, const char *src);

/* Reads a whole stream into a malloc'd NUL-terminated buffer (limit bytes at most). */
char *read_all(FILE *in, size_t limit, size_t *len);

#endif
