/* What a loader of our BPF programs returns when the kernel cannot run the program (no BTF, no
 * fmod_ret on update_socket_protocol, no smc_hs_ctrl): lasting, unlike a pin or lock that fails.
 * Shared by smcbpf.c and smcselect.c, which include nothing of each other's for it. */
#ifndef ERDMA_SMCR_BPF_REFUSED_H
#define ERDMA_SMCR_BPF_REFUSED_H

#define SMCBPF_REFUSED 1

#endif
