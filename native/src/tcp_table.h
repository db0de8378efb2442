/* The TCP sockets of a netns by their pair of ports. See tcp_table.c. */
#ifndef ERDMA_SMCR_TCP_TABLE_H
#define ERDMA_SMCR_TCP_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The TCP sockets of a netns by their pair of ports (/proc/net/tcp and tcp6): where the addresses
 * of an IPPROTO_SMC socket are, which smc_diag does not fill (smcdiag.c). */
struct tcp_sock {
	uint16_t lport, rport; /* host order */
	int v6;
	unsigned state;		     /* TCP_ESTABLISHED 1, TCP_LISTEN 10 (/proc/net/tcp's st) */
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
/* 1 when a socket of the table (sorted) listens on lport. */
int tcp_table_listens(const struct tcp_table *t, uint16_t lport);
void tcp_table_free(struct tcp_table *t);

#endif
