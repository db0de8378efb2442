/* What the SMC sockets of a network namespace run on (smc_diag), and its SMC counters (SMC
 * generic netlink). See smcdiag.c. */
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
	struct smc_reason_count reasons[SMC_SUMMARY_REASONS];
	size_t n_reasons;
	struct smc_device_count devices[SMC_SUMMARY_DEVICES];
	size_t n_devices;
};

/* The TCP sockets of a netns by their pair of ports (/proc/net/tcp and tcp6): where the addresses
 * of an IPPROTO_SMC socket are, which smc_diag does not fill (smcdiag.c). */
struct tcp_sock {
	uint16_t lport, rport; /* host order */
	int v6;
	uint32_t laddr[4], raddr[4]; /* network order, as in struct inet_diag_sockid */
};
struct tcp_table {
	struct tcp_sock *v;
	size_t n, cap;
};
/* Adds the sockets of a file in /proc/net/tcp's or tcp6's format (the header line is skipped);
 * 0, or -1 when out of memory (the table is then empty). */
int tcp_table_add(FILE *f, struct tcp_table *t);
/* Orders the table for tcp_table_find, once all files are added. */
void tcp_table_sort(struct tcp_table *t);
/* The one socket with these ports (the table sorted); NULL for none or more than one. */
const struct tcp_sock *tcp_table_find(const struct tcp_table *t, uint16_t lport, uint16_t rport);
void tcp_table_free(struct tcp_table *t);

/* Each return 0 or a negative errno (-ENOENT when the kernel has no smc_diag). */
int smc_sockets(FILE *out);
int smc_summary_read(struct smc_summary *sum);
/* One JSON object, no newline. */
void smc_summary_print(FILE *out, const struct smc_summary *sum);
int smc_stats(FILE *out);

#endif
