/* The smc_hs_ctrl program: registering, pinning, per-netns selections (smcselect.h). */
#include "smcselect.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpf_refused.h"
#include "netns.h"
#include "smc_select.skel.h"

#define HS_CTRL_SYSCTL "/proc/sys/net/smc/hs_ctrl"

static void pins(const char *dir, char *map_pin, char *ops_pin, size_t size)
{
	snprintf(map_pin, size, "%s/select", dir);
	snprintf(ops_pin, size, "%s/hs_ctrl", dir);
}

int smcselect_available(void)
{
	return access(HS_CTRL_SYSCTL, F_OK) == 0;
}

int smcselect_load_locked(const char *dir, char *why, size_t size)
{
	char map_pin[512], ops_pin[512];
	struct smc_select *skel;
	struct bpf_link *link;
	int map_fd, ops_fd, rc;
	pins(dir, map_pin, ops_pin, sizeof(map_pin));
	map_fd = bpf_obj_get(map_pin);
	ops_fd = bpf_obj_get(ops_pin);
	if (ops_fd >= 0) {
		/* Registered already: its name is unique, so a new program would need the old one
		 * unregistered first (bpf unload). The pods' selections stay where they are. */
		close(ops_fd);
		if (map_fd >= 0)
			close(map_fd);
		return 0;
	}
	if (!smcselect_available()) {
		if (map_fd >= 0)
			close(map_fd);
		snprintf(why, size, "no net.smc.hs_ctrl: the kernel has no smc_hs_ctrl (6.19+ with CONFIG_SMC_HS_CTRL_BPF)");
		return SMCBPF_REFUSED;
	}
	skel = smc_select__open();
	if (!skel) {
		rc = -errno;
		snprintf(why, size, "cannot open the selection program: %s", strerror(-rc));
		goto out_fd;
	}
	if (map_fd >= 0 && (rc = bpf_map__reuse_fd(skel->maps.smc_select, map_fd))) {
		snprintf(why, size, "cannot reuse the pinned selection map: %s", strerror(-rc));
		goto out;
	}
	rc = smc_select__load(skel);
	if (rc) {
		snprintf(why, size, "the kernel refused the smc_hs_ctrl program: %s", strerror(-rc));
		rc = SMCBPF_REFUSED;
		goto out;
	}
	/* Registered by a map update: it stays registered after we exit (the kernel holds the map)
	 * until the element is deleted, which smcselect_unload_locked does through the pin. */
	link = bpf_map__attach_struct_ops(skel->maps.erdma_smcr);
	if (!link) {
		rc = -errno;
		snprintf(why, size, "cannot register smc_hs_ctrl %s: %s", SMCSELECT_NAME, strerror(-rc));
		goto out;
	}
	bpf_link__disconnect(link);
	bpf_link__destroy(link);
	if ((rc = bpf_map__pin(skel->maps.erdma_smcr, ops_pin))) {
		snprintf(why, size, "cannot pin smc_hs_ctrl at %s: %s", ops_pin, strerror(-rc));
		goto out;
	}
	if (map_fd < 0 && (rc = bpf_map__pin(skel->maps.smc_select, map_pin)))
		snprintf(why, size, "cannot pin the selection map at %s: %s", map_pin, strerror(-rc));
out:
	smc_select__destroy(skel);
out_fd:
	if (map_fd >= 0)
		close(map_fd);
	return rc;
}

int smcselect_unload_locked(const char *dir)
{
	char map_pin[512], ops_pin[512];
	__u32 zero = 0;
	int fd, rc = 0;
	pins(dir, map_pin, ops_pin, sizeof(map_pin));
	fd = bpf_obj_get(ops_pin);
	if (fd >= 0) {
		if (bpf_map_delete_elem(fd, &zero) && errno != ENOENT)
			rc = -errno;
		close(fd);
	}
	if (unlink(ops_pin) && errno != ENOENT && !rc)
		rc = -errno;
	if (unlink(map_pin) && errno != ENOENT && !rc)
		rc = -errno;
	return rc;
}

int smcselect_set(const char *dir, uint64_t cookie, const struct selection *s)
{
	char map_pin[512], ops_pin[512];
	int fd, rc;
	pins(dir, map_pin, ops_pin, sizeof(map_pin));
	fd = bpf_obj_get(map_pin);
	if (fd < 0)
		return -errno;
	rc = s ? bpf_map_update_elem(fd, &cookie, s, BPF_ANY) : bpf_map_delete_elem(fd, &cookie);
	if (rc)
		rc = -errno;
	close(fd);
	return rc;
}

int smcselect_use_here(void)
{
	return sysctl_write(HS_CTRL_SYSCTL, SMCSELECT_NAME);
}

void smcselect_status(const char *dir, FILE *out)
{
	char map_pin[512], ops_pin[512];
	struct selection s;
	uint64_t key, next;
	int fd, first = 1;
	pins(dir, map_pin, ops_pin, sizeof(map_pin));
	fd = bpf_obj_get(ops_pin);
	fprintf(out, "\"select\":{\"registered\":%s,\"netns\":[", fd >= 0 ? "true" : "false");
	if (fd >= 0)
		close(fd);
	fd = bpf_obj_get(map_pin);
	if (fd >= 0) {
		void *prev = NULL;
		while (bpf_map_get_next_key(fd, prev, &next) == 0) {
			key = next;
			prev = &key;
			if (bpf_map_lookup_elem(fd, &key, &s))
				continue;
			fprintf(out, "%s{\"cookie\":%llu,\"kept\":%llu,\"selected\":%llu}", first ? "" : ",",
				(unsigned long long)key, (unsigned long long)s.kept, (unsigned long long)s.selected);
			first = 0;
		}
		close(fd);
	}
	fputs("]}", out);
}
