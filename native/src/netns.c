/* setns(2) into a pod's network namespace; /proc/sys/net then shows that namespace's values. */
#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

int netns_enter(struct netns_guard *g, const char *path)
{
	g->self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (g->self < 0)
		return -errno;
	g->target = open(path, O_RDONLY | O_CLOEXEC);
	if (g->target < 0) {
		int err = -errno;
		close(g->self);
		return err;
	}
	if (setns(g->target, CLONE_NEWNET)) {
		int err = -errno;
		close(g->self);
		close(g->target);
		/* EINVAL: the path is not a network namespace. */
		return err;
	}
	return 0;
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
