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
/* The path does not name a pod's network namespace (as opposed to an I/O failure reaching it). */
#define NETNS_NOT_A_POD(rc) ((rc) == NETNS_ERR_SELF || (rc) == NETNS_ERR_NOT_NETNS)

/* Opens both and enters the target; 0, -errno (-ENOENT: netns gone) or NETNS_ERR_*. */
int netns_enter(struct netns_guard *g, const char *path);
/* A message for a netns_enter result. */
const char *netns_strerror(int rc);
/* Returns to the original netns and closes both; 0 or -errno. */
int netns_leave(struct netns_guard *g);

/* Could not come back to our own netns after the function ran (netns_run). */
#define NETNS_ERR_LEAVE (-10003)
/* netns_run flags: a path naming our own netns runs `fn` here instead of refusing (tools that only read). */
#define NETNS_ALLOW_SELF 1

/*
 * Runs fn(ctx) inside the network namespace at `path` and always comes back, as the CNI reference
 * plugins' ns.WithNetNSPath does; fn's return value goes to *result. Returns 0 when fn ran and we
 * came back, a netns_enter error when we could not enter (fn did not run), or NETNS_ERR_LEAVE when
 * fn ran but we could not come back. A NULL path runs fn where we are.
 */
int netns_run(const char *path, int flags, int (*fn)(void *ctx), void *ctx, int *result);

int sysctl_read(const char *path, char *buf, size_t size);
int sysctl_write(const char *path, const char *value);

#endif
