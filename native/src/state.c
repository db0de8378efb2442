/* State files: <stateDir>/<containerID>_<ifname>.json, written atomically with mode 0600. */
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util.h"

int safe_component(const char *s)
{
	size_t n = strlen(s), i;
	if (n == 0 || n > 200 || !strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
			return 0;
	}
	return 1;
}

int state_path(const char *dir, const char *container, const char *ifname, char *out, size_t size)
{
	int n;
	if (!safe_component(container) || !safe_component(ifname))
		return -1;
	n = snprintf(out, size, "%s/%s_%s.json", dir, container, ifname);
	return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

static int mkdirs(const char *dir)
{
	char tmp[512];
	size_t i;
	if (copy_str(tmp, sizeof(tmp), dir))
		return -ENAMETOOLONG;
	for (i = 1; tmp[i]; i++) {
		if (tmp[i] != '/')
			continue;
		tmp[i] = '\0';
		if (mkdir(tmp, 0700) && errno != EEXIST)
			return -errno;
		tmp[i] = '/';
	}
	if (mkdir(tmp, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

int state_write(const char *dir, const char *path, const cJSON *doc, int durable)
{
	char tmp[600];
	char *text;
	int fd, rc = mkdirs(dir);
	size_t len;
	if (rc)
		return rc;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	text = cJSON_PrintUnformatted(doc);
	if (!text)
		return -ENOMEM;
	len = strlen(text);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
	} else {
		if (write(fd, text, len) != (ssize_t)len || (durable && fsync(fd)))
			rc = errno ? -errno : -EIO;
		close(fd);
		if (rc == 0 && rename(tmp, path))
			rc = -errno;
		if (rc)
			unlink(tmp);
	}
	free(text);
	return rc;
}

cJSON *state_read(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t len;
	char *text;
	cJSON *doc;
	if (!f)
		return NULL;
	text = read_all(f, 1 << 20, &len);
	fclose(f);
	if (!text)
		return NULL;
	doc = cJSON_Parse(text);
	free(text);
	return doc;
}
