/* The IPPROTO_SMC path (kernel 6.11+): the BPF program that makes a listed netns's TCP sockets SMC
 * sockets (bpf/smc_proto.bpf.c), its pins, and the per-netns switch our CNI plugin flips. */
#ifndef ERDMA_SMCR_SMCBPF_H
#define ERDMA_SMCR_SMCBPF_H

#include <stdint.h>
#include <stdio.h>
#include "bpf_refused.h"

/* Where the agent pins the program's link and map (bpffs), unless configured otherwise. */
#define SMCBPF_DEFAULT_DIR "/sys/fs/bpf/erdma-smcr"

/* Loads the program, attaches it and pins link and map in `dir`, under a lock on `dir` shared by
 * every loader. An existing map is reused (the pods' entries survive an agent upgrade) and the link
 * is replaced in one rename: the new program is attached before the old one detaches. With
 * `replace` 0, a program already pinned is kept as it is (the plugin's ADD after a reboot); with 1
 * it is replaced (a new agent). 0, SMCBPF_REFUSED or -errno; `why` says what failed. */
int smcbpf_load(const char *dir, int replace, char *why, size_t size);
/* Removes the pins: the program detaches once no process holds it. 0 or -errno. */
int smcbpf_unload(const char *dir);
/* Loads and attaches the program without pinning, then drops it: whether this kernel can run it. */
int smcbpf_probe(char *why, size_t size);
/* The network namespace cookie of the netns at `path` (NULL: ours). 0 or -errno / NETNS_ERR_*. */
int smcbpf_netns_cookie(const char *path, uint64_t *cookie);
/* Lists (enable) or unlists a netns cookie in the pinned map under `dir`. -ENOENT: not loaded. */
int smcbpf_set(const char *dir, uint64_t cookie, int enable);
/* 1 when the pinned map under `dir` lists `cookie`, 0 when not, -errno when it cannot be read. */
int smcbpf_listed(const char *dir, uint64_t cookie);
/* Writes {"progId":..,"tag":"..","loaded":..,"netns":[{"cookie":..,"switched":..}]} for the pins
 * in `dir` (progId and tag only when a link is pinned). */
int smcbpf_status(const char *dir, FILE *out);

/* `erdma-smcr mechanisms` and `erdma-smcr bpf ...`; argv[0] is "mechanisms" or "bpf". */
int smcbpf_tool(int argc, char **argv);

#endif
