/* What the SMC sockets of a network namespace run on (smc_diag). See smcdiag.c. */
#ifndef ERDMA_SMCR_SMCDIAG_H
#define ERDMA_SMCR_SMCDIAG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SMC_SUMMARY_REASONS 32
#define SMC_SUMMARY_DEVICES 16

struct smc_reason_count {
	uint32_t code;
	uint64_t count;
};

struct smc_device_count {
	char dev[65];
	unsigned port;
	uint64_t count;
};

/* Bounded counters of one netns's SMC sockets (listening sockets counted apart). */
struct smc_summary {
	uint64_t sockets, listening, smcr, smcd, tcp, tx_bytes, rx_bytes, other_reasons;
	/* Established TCP connections of the netns beyond the SMC sockets' own (plain TCP: a program
	 * that did not go through tcp2smc, the BPF program or the preload library). */
	uint64_t plain_tcp;
	/* Fallen-back connections to or from a loopback address: expected (no RDMA device serves lo,
	 * and without loopback-ism no SMC-D either), counted here and in tcp, not in reasons. */
	uint64_t loopback_fallbacks;
	/* Connections the pod's SMC selection kept on TCP (#93): fallen-back SMC sockets and plain
	 * TCP connections outside it, counted here and not in tcp, reasons or plain_tcp. */
	uint64_t selection_kept;
	struct smc_reason_count reasons[SMC_SUMMARY_REASONS];
	size_t n_reasons;
	struct smc_device_count devices[SMC_SUMMARY_DEVICES];
	size_t n_devices;
};

/* Each return 0 or a negative errno (-ENOENT when the kernel has no smc_diag). */
int smc_sockets(FILE *out);
/* `sel`: the pod's SMC selection (selection.h), or NULL: no connection is counted as kept by it. */
struct selection;
int smc_summary_read(struct smc_summary *sum, const struct selection *sel);
/* One JSON object, no newline. */
void smc_summary_print(FILE *out, const struct smc_summary *sum);

#endif
