/* The IPPROTO_SMC path: loading, pinning and switching per netns (see smcbpf.h). libbpf does the
 * ELF, BTF and CO-RE work; the object is embedded by bpftool's skeleton (build/smc_proto.skel.h). */
#include "smcbpf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "netns.h"
#include "smc_proto.skel.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

static void pin_path(char *out, size_t size, const char *dir, const char *name)
{
	snprintf(out, size, "%s/%s", dir, name);
}

/* Opens, loads and attaches; the skeleton is destroyed by the caller. */
static int open_attach(struct smc_proto **out, int reuse_map_fd, char *why, size_t size)
{
	struct smc_proto *skel;
	int rc;
	libbpf_set_print(quiet);
	skel = smc_proto__open();
	if (!skel) {
		rc = -errno;
		snprintf(why, size, "cannot open the BPF object: %s", strerror(-rc));
		return rc;
	}
	if (reuse_map_fd >= 0 && (rc = bpf_map__reuse_fd(skel->maps.smc_netns, reuse_map_fd))) {
		snprintf(why, size, "cannot reuse the pinned netns map: %s", strerror(-rc));
		smc_proto__destroy(skel);
		return rc;
	}
	rc = smc_proto__load(skel);
	if (rc) {
		snprintf(why, size, "the kernel refused the program (needs BTF and fmod_ret on update_socket_protocol, 6.6+): %s",
			 strerror(-rc));
		smc_proto__destroy(skel);
		return rc;
	}
	rc = smc_proto__attach(skel);
	if (rc) {
		snprintf(why, size, "cannot attach to update_socket_protocol: %s", strerror(-rc));
		smc_proto__destroy(skel);
		return rc;
	}
	*out = skel;
	return 0;
}

int smcbpf_probe(char *why, size_t size)
{
	struct smc_proto *skel = NULL;
	int rc = open_attach(&skel, -1, why, size);
	if (!rc)
		smc_proto__destroy(skel);
	return rc;
}

int smcbpf_load(const char *dir, char *why, size_t size)
{
	char map_pin[512], link_pin[512], next_pin[520];
	struct smc_proto *skel = NULL;
	int map_fd, rc;
	if (mkdir(dir, 0700) && errno != EEXIST) {
		rc = -errno;
		snprintf(why, size, "cannot create %s (is bpffs mounted?): %s", dir, strerror(-rc));
		return rc;
	}
	pin_path(map_pin, sizeof(map_pin), dir, "netns");
	pin_path(link_pin, sizeof(link_pin), dir, "link");
	/* bpffs refuses names with a dot. */
	snprintf(next_pin, sizeof(next_pin), "%s_next", link_pin);
	map_fd = bpf_obj_get(map_pin);
	rc = open_attach(&skel, map_fd, why, size);
	if (map_fd >= 0)
		close(map_fd);
	if (rc)
		return rc;
	if (map_fd < 0 && (rc = bpf_map__pin(skel->maps.smc_netns, map_pin))) {
		snprintf(why, size, "cannot pin the netns map at %s: %s", map_pin, strerror(-rc));
		goto out;
	}
	unlink(next_pin);
	rc = bpf_link__pin(skel->links.smc_socket_protocol, next_pin);
	if (rc) {
		snprintf(why, size, "cannot pin the link at %s: %s", next_pin, strerror(-rc));
		goto out;
	}
	/* The old link (if any) detaches when its pin is replaced: no window without the program. */
	if (rename(next_pin, link_pin)) {
		rc = -errno;
		snprintf(why, size, "cannot move the link pin to %s: %s", link_pin, strerror(-rc));
		unlink(next_pin);
	}
out:
	smc_proto__destroy(skel);
	return rc;
}

int smcbpf_unload(const char *dir)
{
	char path[512];
	int rc = 0;
	pin_path(path, sizeof(path), dir, "link");
	if (unlink(path) && errno != ENOENT)
		rc = -errno;
	pin_path(path, sizeof(path), dir, "netns");
	if (unlink(path) && errno != ENOENT && !rc)
		rc = -errno;
	if (rmdir(dir) && errno != ENOENT && !rc)
		rc = -errno;
	return rc;
}

static int cookie_here(void *p)
{
	uint64_t *cookie = p;
	socklen_t len = sizeof(*cookie);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;
	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, cookie, &len))
		rc = -errno;
	close(fd);
	return rc;
}

int smcbpf_netns_cookie(const char *path, uint64_t *cookie)
{
	int result = 0, rc = netns_run(path, NETNS_ALLOW_SELF, cookie_here, cookie, &result);
	return rc ? rc : result;
}

int smcbpf_set(const char *dir, uint64_t cookie, int enable)
{
	char map_pin[512];
	uint64_t zero = 0;
	int fd, rc = 0;
	pin_path(map_pin, sizeof(map_pin), dir, "netns");
	fd = bpf_obj_get(map_pin);
	if (fd < 0)
		return -errno;
	if (enable)
		rc = bpf_map_update_elem(fd, &cookie, &zero, BPF_NOEXIST);
	else
		rc = bpf_map_delete_elem(fd, &cookie);
	if (rc)
		rc = -errno;
	if (enable && rc == -EEXIST)
		rc = 0;
	close(fd);
	return rc;
}

int smcbpf_listed(const char *dir, uint64_t cookie)
{
	char map_pin[512];
	uint64_t value;
	int fd, rc;
	pin_path(map_pin, sizeof(map_pin), dir, "netns");
	fd = bpf_obj_get(map_pin);
	if (fd < 0)
		return -errno;
	rc = bpf_map_lookup_elem(fd, &cookie, &value) == 0 ? 1 : (errno == ENOENT ? 0 : -errno);
	close(fd);
	return rc;
}

int smcbpf_status(const char *dir, FILE *out)
{
	char map_pin[512], link_pin[512];
	uint64_t key, next, value;
	int fd, first = 1, linked;
	pin_path(map_pin, sizeof(map_pin), dir, "netns");
	pin_path(link_pin, sizeof(link_pin), dir, "link");
	fd = bpf_obj_get(link_pin);
	linked = fd >= 0;
	if (fd >= 0)
		close(fd);
	fd = bpf_obj_get(map_pin);
	fprintf(out, "{\"loaded\":%s,\"netns\":[", linked && fd >= 0 ? "true" : "false");
	if (fd >= 0) {
		void *prev = NULL;
		while (bpf_map_get_next_key(fd, prev, &next) == 0) {
			key = next;
			prev = &key;
			if (bpf_map_lookup_elem(fd, &key, &value))
				continue;
			fprintf(out, "%s{\"cookie\":%llu,\"switched\":%llu}", first ? "" : ",", (unsigned long long)key,
				(unsigned long long)value);
			first = 0;
		}
		close(fd);
	}
	fputs("]}\n", out);
	return 0;
}
