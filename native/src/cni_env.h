/* What the runtime tells a CNI plugin in its environment (CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS,
 * CNI_IFNAME, CNI_ARGS, CNI_PATH): the dispatcher (cni.h) reads it, the pod's work (pod_*.h) uses it. */
#ifndef ERDMA_SMCR_CNI_ENV_H
#define ERDMA_SMCR_CNI_ENV_H

struct cni_env {
	const char *command;
	const char *container_id;
	const char *netns;
	const char *ifname;
	const char *args;
	const char *path;
};

#endif
