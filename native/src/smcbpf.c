/* The IPPROTO_SMC path: loading, pinning and switching per netns (see smcbpf.h). libbpf does the
 * ELF, BTF and CO-RE work; the object is embedded by bpftool's skeleton (build/smc_proto.skel.h). */
#include "smcbpf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "netns.h"
#include "smc_proto.skel.h"
#include "smcselect.h"

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

/*
 * The agent (loading, upgrading, unloading) and our CNI plugin (loading at ADD when a node has just
 * booted and the agent has not pinned yet) change the pins one at a time: an exclusive flock on the
 * pin directory itself (bpffs keeps the VFS's generic flock, and both see the same inode whatever
 * their mount namespace). Waited for up to 10 s, so a stuck holder fails an ADD instead of hanging
 * it. Returns the held fd, or -errno with `why` set.
 */
static int lock_pins(const char *dir, char *why, size_t size)
{
	struct timespec pause = {0, 20 * 1000 * 1000};
	int fd, tries;
	if (mkdir(dir, 0700) && errno != EEXIST) {
		fd = -errno;
		snprintf(why, size, "cannot create %s (is bpffs mounted?): %s", dir, strerror(-fd));
		return fd;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		snprintf(why, size, "cannot open %s: %s", dir, strerror(-fd));
		return fd;
	}
	for (tries = 0; tries < 500; tries++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		if (errno != EWOULDBLOCK && errno != EINTR)
			break;
		nanosleep(&pause, NULL);
	}
	snprintf(why, size, "cannot lock %s (another loader holds it): %s", dir, strerror(errno));
	close(fd);
	return -EBUSY;
}

/* 1 when both pins are there and usable. */
static int pinned(const char *map_pin, const char *link_pin)
{
	int map_fd = bpf_obj_get(map_pin), link_fd = bpf_obj_get(link_pin);
	if (map_fd >= 0)
		close(map_fd);
	if (link_fd >= 0)
		close(link_fd);
	return map_fd >= 0 && link_fd >= 0;
}

static int load_locked(const char *dir, int replace, char *why, size_t size);

int smcbpf_load(const char *dir, int replace, char *why, size_t size)
{
	int lock = lock_pins(dir, why, size), rc;
	char select_why[300] = "";
	if (lock < 0)
		return lock;
	rc = load_locked(dir, replace, why, size);
	/* The selection's program beside it, where the kernel has smc_hs_ctrl: without it pods keep
	 * SMC on every connection, which `erdma-smcr mechanisms` reports; IPPROTO_SMC still works. */
	if (rc == 0 && smcselect_load_locked(dir, select_why, sizeof(select_why)) < 0)
		fprintf(stderr, "erdma-smcr: the SMC selection's program is not loaded: %s\n", select_why);
	close(lock);
	return rc;
}

static int load_locked(const char *dir, int replace, char *why, size_t size)
{
	char map_pin[512], link_pin[512], next_pin[520];
	struct smc_proto *skel = NULL;
	int map_fd, rc;
	pin_path(map_pin, sizeof(map_pin), dir, "netns");
	pin_path(link_pin, sizeof(link_pin), dir, "link");
	if (!replace && pinned(map_pin, link_pin))
		return 0;
	/* bpffs refuses names with a dot. */
	snprintf(next_pin, sizeof(next_pin), "%s_next", link_pin);
	map_fd = bpf_obj_get(map_pin);
	rc = open_attach(&skel, map_fd, why, size);
	if (map_fd >= 0)
		close(map_fd);
	if (rc)
		return SMCBPF_REFUSED;
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
	char path[512], why[300];
	int rc = 0, lock;
	struct stat st;
	if (stat(dir, &st) && errno == ENOENT)
		return 0;
	lock = lock_pins(dir, why, sizeof(why));
	if (lock < 0)
		return lock;
	rc = smcselect_unload_locked(dir);
	pin_path(path, sizeof(path), dir, "link");
	if (unlink(path) && errno != ENOENT && !rc)
		rc = -errno;
	pin_path(path, sizeof(path), dir, "netns");
	if (unlink(path) && errno != ENOENT && !rc)
		rc = -errno;
	/* Removed while locked: a loader waiting on the lock then finds its directory gone and fails. */
	if (rmdir(dir) && errno != ENOENT && !rc)
		rc = -errno;
	close(lock);
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

/* "progId":N,"tag":"hex", of the program behind the pinned link: what an upgrade changes. */
static void print_program(int link_fd, FILE *out)
{
	struct bpf_link_info link;
	struct bpf_prog_info prog;
	__u32 len = sizeof(link);
	int fd, i;
	memset(&link, 0, sizeof(link));
	if (bpf_obj_get_info_by_fd(link_fd, &link, &len))
		return;
	fprintf(out, "\"progId\":%u,", link.prog_id);
	fd = bpf_prog_get_fd_by_id(link.prog_id);
	if (fd < 0)
		return;
	memset(&prog, 0, sizeof(prog));
	len = sizeof(prog);
	if (bpf_obj_get_info_by_fd(fd, &prog, &len) == 0) {
		fputs("\"tag\":\"", out);
		for (i = 0; i < BPF_TAG_SIZE; i++)
			fprintf(out, "%02x", prog.tag[i]);
		fputs("\",", out);
	}
	close(fd);
}

int smcbpf_status(const char *dir, FILE *out)
{
	char map_pin[512], link_pin[512];
	uint64_t key, next, value;
	int fd, first = 1, linked;
	pin_path(map_pin, sizeof(map_pin), dir, "netns");
	pin_path(link_pin, sizeof(link_pin), dir, "link");
	fputc('{', out);
	fd = bpf_obj_get(link_pin);
	linked = fd >= 0;
	if (fd >= 0) {
		print_program(fd, out);
		close(fd);
	}
	fd = bpf_obj_get(map_pin);
	fprintf(out, "\"loaded\":%s,\"netns\":[", linked && fd >= 0 ? "true" : "false");
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
	fputs("],", out);
	smcselect_status(dir, out);
	fputs("}\n", out);
	return 0;
}
