/* setns(2) into a pod's network namespace; /proc/sys/net then shows that namespace's values. */
#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

int netns_enter(struct netns_guard *g, const char *path)
{
	struct stat self_st, target_st;
	g->self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (g->self < 0)
		return -errno;
	/* O_NONBLOCK: a FIFO at the path must not block the runtime forever. */
	g->target = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (g->target < 0) {
		int err = -errno;
		close(g->self);
		return err;
	}
	if (fstat(g->self, &self_st) || fstat(g->target, &target_st)) {
		int err = -errno;
		close(g->self);
		close(g->target);
		return err;
	}
	/* Namespace files (nsfs, bind mounts of them) are regular files; anything else is not a netns. */
	if (!S_ISREG(target_st.st_mode)) {
		close(g->self);
		close(g->target);
		return NETNS_ERR_NOT_NETNS;
	}
	/* The namespace we run in is the host's: acting there would switch the whole node. */
	if (self_st.st_dev == target_st.st_dev && self_st.st_ino == target_st.st_ino) {
		close(g->self);
		close(g->target);
		return NETNS_ERR_SELF;
	}
	if (setns(g->target, CLONE_NEWNET)) {
		int err = errno == EINVAL ? NETNS_ERR_NOT_NETNS : -errno;
		close(g->self);
		close(g->target);
		return err;
	}
	return 0;
}

int netns_run(const char *path, int flags, int (*fn)(void *ctx), void *ctx, int *result)
{
	struct netns_guard g;
	int rc, entered;
	if (!path) {
		*result = fn(ctx);
		return 0;
	}
	rc = netns_enter(&g, path);
	if (rc && !(rc == NETNS_ERR_SELF && (flags & NETNS_ALLOW_SELF)))
		return rc;
	entered = rc == 0; /* NETNS_ERR_SELF allowed: already there */
	*result = fn(ctx);
	if (entered && netns_leave(&g))
		return NETNS_ERR_LEAVE;
	return 0;
}

const char *netns_strerror(int rc)
{
	if (rc == NETNS_ERR_SELF)
		return "it is the plugin's own network namespace (the host's), which the plugin never changes";
	if (rc == NETNS_ERR_NOT_NETNS)
		return "not a network namespace";
	if (rc == NETNS_ERR_LEAVE)
		return "could not return to the original network namespace";
	return strerror(-rc);
}

int netns_leave(struct netns_guard *g)
{
	int rc = setns(g->self, CLONE_NEWNET) ? -errno : 0;
	close(g->self);
	close(g->target);
	return rc;
}

int sysctl_read(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		buf[--n] = '\0';
	return 0;
}

int sysctl_write(const char *path, const char *value)
{
	size_t len = strlen(value);
	ssize_t n;
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, value, len);
	if (n < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return close(fd) ? -errno : 0;
}
