/* The TCP sockets of a network namespace by their pair of ports, read from /proc/net/tcp and
 * tcp6: where an IPPROTO_SMC socket's addresses are, which smc_diag leaves out (smcdiag.c). 40
 * bytes a socket, sorted once, found by binary search. */
#include "tcp_table.h"

#include <stdlib.h>
#include <string.h>

static int tcp_cmp(const void *a, const void *b)
{
	const struct tcp_sock *x = a, *y = b;
	if (x->lport != y->lport)
		return x->lport < y->lport ? -1 : 1;
	return x->rport < y->rport ? -1 : x->rport > y->rport;
}

/* An address as /proc/net/tcp{,6} print it: each 32-bit word of the network-order address printed
 * as a number (8 hex digits for IPv4, 32 for IPv6). 1 for IPv4, 4 for IPv6, 0 if neither. */
static int proc_addr(const char *hex, uint32_t *a)
{
	size_t n = strlen(hex), i;
	if (n != 8 && n != 32)
		return 0;
	memset(a, 0, 16);
	for (i = 0; i < n / 8; i++) {
		char w[9];
		memcpy(w, hex + i * 8, 8);
		w[8] = '\0';
		a[i] = (uint32_t)strtoul(w, NULL, 16);
	}
	return (int)(n / 8);
}

int tcp_table_add(FILE *f, struct tcp_table *t)
{
	char line[512], lh[33], rh[33], end;
	unsigned lp, rp;
	while (fgets(line, sizeof(line), f)) {
		struct tcp_sock e;
		int lw, rw;
		/* "  sl  local_address rem_address   st ...": the header does not match. */
		if (sscanf(line, " %*u: %32[0-9A-Fa-f]:%4x %32[0-9A-Fa-f]:%4x%c", lh, &lp, rh, &rp, &end) != 5 ||
		    (end != ' ' && end != '\n'))
			continue;
		lw = proc_addr(lh, e.laddr);
		rw = proc_addr(rh, e.raddr);
		if (!lw || lw != rw)
			continue;
		e.lport = (uint16_t)lp;
		e.rport = (uint16_t)rp;
		e.v6 = lw == 4;
		if (sscanf(line, " %*u: %*s %*s %x", &e.state) != 1)
			e.state = 0;
		if (t->n == t->cap) {
			size_t next = t->cap ? t->cap * 2 : 64;
			struct tcp_sock *v = realloc(t->v, next * sizeof(*v));
			if (!v) {
				tcp_table_free(t);
				return -1;
			}
			t->v = v;
			t->cap = next;
		}
		t->v[t->n++] = e;
	}
	return 0;
}

void tcp_table_sort(struct tcp_table *t)
{
	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), tcp_cmp);
}

const struct tcp_sock *tcp_table_find(const struct tcp_table *t, uint16_t lport, uint16_t rport)
{
	struct tcp_sock key;
	size_t lo = 0, hi = t->n;
	key.lport = lport;
	key.rport = rport;
	while (lo < hi) { /* the first entry not below the key */
		size_t mid = lo + (hi - lo) / 2;
		if (tcp_cmp(&t->v[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == t->n || tcp_cmp(&t->v[lo], &key) != 0)
		return NULL;
	if (lo + 1 < t->n && tcp_cmp(&t->v[lo + 1], &key) == 0)
		return NULL; /* two sockets with these ports (another address, or TIME_WAIT): not known */
	return &t->v[lo];
}

int tcp_table_listens(const struct tcp_table *t, uint16_t lport)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) { /* the first entry of lport */
		size_t mid = lo + (hi - lo) / 2;
		if (t->v[mid].lport < lport)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < t->n && t->v[lo].lport == lport; lo++)
		if (t->v[lo].state == 10)
			return 1;
	return 0;
}

void tcp_table_free(struct tcp_table *t)
{
	free(t->v);
	t->v = NULL;
	t->n = t->cap = 0;
}
