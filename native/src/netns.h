/* Entering a pod's network namespace and coming back, and sysctl reads and writes inside it. */
#ifndef ERDMA_SMCR_NETNS_H
#define ERDMA_SMCR_NETNS_H

#include <stddef.h>

struct netns_guard {
	int self;   /* our original netns */
	int target; /* the pod netns */
};

/* Not errno values: the target is our own netns, or not a network namespace at all. */
#define NETNS_ERR_SELF (-10001)
#define NETNS_ERR_NOT_NETNS (-10002)

/* Opens both and enters the target; 0, -errno (-ENOENT: netns gone) or NETNS_ERR_*. */
int netns_enter(struct netns_guard *g, const char *path);
/* A message for a netns_enter result. */
const char *netns_strerror(int rc);
/* Returns to the original netns and closes both; 0 or -errno. */
int netns_leave(struct netns_guard *g);

int sysctl_read(const char *path, char *buf, size_t size);
int sysctl_write(const char *path, const char *value);

#endif
