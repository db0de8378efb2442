/* Generic netlink for the kernel's SMC families: SMC_PNETID (the pnet table) and SMC_GEN_NETLINK
 * (user EIDs). Message encoding and decoding are separate from the socket so tests can check the
 * bytes. Constants come from <linux/smc.h> (include/uapi/linux/smc.h). */
#ifndef ERDMA_SMCR_SMC_GENL_H
#define ERDMA_SMCR_SMC_GENL_H

#include <stddef.h>
#include <stdint.h>
#include <linux/netlink.h>

#define NL_BUF_SIZE 8192
#define PNETID_MAX_LEN 16 /* SMC_MAX_PNETID_LEN */
#define EID_LEN 32	  /* SMC_MAX_EID_LEN */

struct nl_msg {
	unsigned char buf[NL_BUF_SIZE] __attribute__((aligned(4)));
	size_t len;
};

/* A pnet table entry as the kernel reports it (one of eth or ib is set). */
struct pnet_entry {
	char name[PNETID_MAX_LEN + 1];
	char eth[16];
	char ib[64];
	int port;
};

void genl_init(struct nl_msg *m, uint16_t family, uint16_t flags, uint32_t seq, uint8_t cmd, uint8_t version);
int nl_put(struct nl_msg *m, uint16_t type, const void *data, size_t len);
int nl_put_str(struct nl_msg *m, uint16_t type, const char *s);
int nl_put_u8(struct nl_msg *m, uint16_t type, uint8_t v);

/* Builders: return 0, or -1 when an argument is invalid (message left unusable). */
int pnet_build_add(struct nl_msg *m, uint16_t family, uint32_t seq, const struct pnet_entry *e);
int pnet_build_simple(struct nl_msg *m, uint16_t family, uint32_t seq, uint8_t cmd, const char *name);
int ueid_build(struct nl_msg *m, uint16_t family, uint32_t seq, uint8_t cmd, const char *ueid);

/* Decoders of one reply message. */
int pnet_parse(const struct nlmsghdr *h, struct pnet_entry *out);
int ueid_parse(const struct nlmsghdr *h, char *out, size_t size);

/* Validation and normalisation (upper case) of a PNETID / user EID. */
int pnetid_normalize(const char *in, char *out, size_t size);
int ueid_normalize(const char *in, char out[EID_LEN + 1]);

/* Socket side. Functions return 0 or a negative errno; -ENOENT for a missing family. */
typedef int (*nl_reply_fn)(const struct nlmsghdr *h, void *ctx);
int nl_open(void);
int nl_open_proto(int protocol); /* NETLINK_GENERIC, NETLINK_ROUTE, ... */
int genl_family(int fd, const char *name, uint16_t *id);
int nl_transact(int fd, struct nl_msg *m, nl_reply_fn fn, void *ctx);
/* A dump of a generic netlink family's command (no attributes in the request). */
int genl_dump(const char *family_name, uint8_t cmd, uint8_t version, nl_reply_fn fn, void *ctx);

int pnet_add(const struct pnet_entry *e);
int pnet_del(const char *name);
int pnet_flush(void);
int pnet_list(nl_reply_fn fn, void *ctx);
int ueid_op(uint8_t cmd, const char *ueid);
int ueid_list(nl_reply_fn fn, void *ctx);

#endif
