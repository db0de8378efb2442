/* The network configuration the runtime passes on stdin, with our plugin's options. */
#ifndef ERDMA_SMCR_CONF_H
#define ERDMA_SMCR_CONF_H

#include "cJSON.h"
#include "util.h"

#define DEFAULT_STATE_DIR "/var/lib/cni/erdma-smcr"
#define DEFAULT_PNETID_FILE "/run/erdma-smcr/pnetid"
#define ANNOTATIONS_CAP "io.kubernetes.cri.pod-annotations"

struct netconf {
	cJSON *root; /* owns everything below */
	const char *cni_version;
	const char *name;
	cJSON *prev_result;	  /* may be NULL */
	const cJSON *annotations; /* runtimeConfig[io.kubernetes.cri.pod-annotations], may be NULL */
	const cJSON *attachments; /* cni.dev/valid-attachments (GC), may be NULL */
	char pnet_id[17];	  /* from config or pnetIdFile; "" when none */
	const char *pnet_id_file;
	const char *state_dir;
	const char *log_file; /* may be NULL */
	const char *bpf_dir;  /* bpfDir: where the agent pins the IPPROTO_SMC program */
	int fail_on_missing;  /* failOnMissingKnob */
	int disable_ipv6;     /* disableIPv6 default for pods without settings */
};

extern const char *const SUPPORTED_VERSIONS[];
int version_supported(const char *v);

/* Parses stdin; 0 or a CNI error code with e filled. conf_free always safe after. */
int conf_parse(const char *text, struct netconf *c, struct cni_error *e);
void conf_free(struct netconf *c);

/* Reads the PNETID from the configured file when the config names none; 0 ok, -1 none. */
int conf_load_pnetid(struct netconf *c, const struct logger *lg);

#endif
