/* Entering a pod's network namespace and coming back, and sysctl reads and writes inside it. */
#ifndef ERDMA_SMCR_NETNS_H
#define ERDMA_SMCR_NETNS_H

#include <stddef.h>

struct netns_guard {
	int self;   /* our original netns */
	int target; /* the pod netns */
};

/* Opens both and enters the target; 0 or -errno (-ENOENT: netns gone). */
int netns_enter(struct netns_guard *g, const char *path);
/* Returns to the original netns and closes both; 0 or -errno. */
int netns_leave(struct netns_guard *g);

int sysctl_read(const char *path, char *buf, size_t size);
int sysctl_write(const char *path, const char *value);

#endif
