/* The record of what ADD did to a pod (pod_record.h). */
#include "pod_record.h"

#include <string.h>
#include "pod_mechanism.h"

/* Value of KEY in CNI_ARGS ("K1=V1;K2=V2", any order); "" when absent. */
static void cni_arg(const char *args, const char *key, char *out, size_t size)
{
	size_t klen = strlen(key);
	const char *p = args;
	out[0] = '\0';
	while (p && *p) {
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			size_t vlen = len - klen - 1;
			if (vlen >= size)
				vlen = size - 1;
			memcpy(out, p + klen + 1, vlen);
			out[vlen] = '\0';
			return;
		}
		p = end ? end + 1 : NULL;
	}
}

cJSON *pod_record(const struct cni_env *env, const struct netconf *c, const struct applied *a, const char *outcome)
{
	cJSON *doc = cJSON_CreateObject(), *sys = cJSON_CreateObject(), *pnet;
	char ns[254], name[254], uid[64];
	int i;
	cni_arg(env->args, "K8S_POD_NAMESPACE", ns, sizeof(ns));
	cni_arg(env->args, "K8S_POD_NAME", name, sizeof(name));
	cni_arg(env->args, "K8S_POD_UID", uid, sizeof(uid));
	cJSON_AddStringToObject(doc, "podNamespace", ns);
	cJSON_AddStringToObject(doc, "podName", name);
	cJSON_AddStringToObject(doc, "podUid", uid);
	cJSON_AddStringToObject(doc, "containerId", env->container_id);
	cJSON_AddStringToObject(doc, "ifname", env->ifname);
	cJSON_AddStringToObject(doc, "netns", env->netns ? env->netns : "");
	cJSON_AddStringToObject(doc, "outcome", outcome);
	for (i = 0; i < a->n; i++)
		cJSON_AddStringToObject(sys, a->done[i].key, a->done[i].value);
	cJSON_AddItemToObject(doc, "sysctls", sys);
	cJSON_AddItemToObject(doc, "missing", cJSON_Duplicate(a->missing, 1));
	pnet = cJSON_AddObjectToObject(doc, "pnet");
	cJSON_AddStringToObject(pnet, "id", c->pnet_id);
	cJSON_AddStringToObject(pnet, "eth", env->ifname);
	cJSON_AddBoolToObject(pnet, "added", a->pnet_added);
	cJSON_AddItemToObject(doc, "warnings", cJSON_Duplicate(a->warnings, 1));
	cJSON_AddBoolToObject(doc, "ipv6Only", a->ipv6_only);
	mechanism_record(doc, a, c);
	return doc;
}
