/* What ADD did to a pod's netns, recorded for CHECK, DEL, GC and the node agent. */
#ifndef ERDMA_SMCR_STATE_H
#define ERDMA_SMCR_STATE_H

#include <stddef.h>
#include "cJSON.h"

/* Checks a container ID / interface name may be used in a file name. */
int safe_component(const char *s);

int state_path(const char *dir, const char *container, const char *ifname, char *out, size_t size);

/* Writes atomically with mode 0600, creating dir (0700); fsyncs when durable. 0 or -errno. */
int state_write(const char *dir, const char *path, const cJSON *doc, int durable);

/* Reads a state document; NULL when absent or unreadable. */
cJSON *state_read(const char *path);

#endif
