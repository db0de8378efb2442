/* Shared helpers: error filling, logging, bounded string copies, reading stdin. */
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int cni_fail(struct cni_error *e, int code, const char *fmt, ...)
{
	va_list ap;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return code;
}

/* Writes s with control bytes escaped (\xNN): a value from the runtime or a pod (a container ID,
 * an annotation) that holds a newline must not start a log line of its own. */
static void put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\x%02x", ch);
		else
			fputc(ch, f);
	}
}

static void vlog_line(FILE *f, const char *when, const char *level, const char *container, const char *line)
{
	fprintf(f, "%s erdma-smcr %s container=", when, level);
	put_escaped(f, container ? container : "-");
	fputs(": ", f);
	put_escaped(f, line);
	fputc('\n', f);
}

/* A line is made in memory and written with one write(2): stderr is unbuffered, and a byte at a
 * time cost a system call each (the CNI bench's ADD row) and let the lines of plugins that run
 * side by side interleave. Straight to f only if no memory is left for the line. */
static void vlog_to(FILE *f, const char *level, const char *container, const char *fmt, va_list ap)
{
	char when[32], line[1024], *buf = NULL;
	size_t n = 0;
	FILE *mem;
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	vsnprintf(line, sizeof(line), fmt, ap);
	mem = open_memstream(&buf, &n);
	if (!mem) {
		vlog_line(f, when, level, container, line);
		return;
	}
	vlog_line(mem, when, level, container, line);
	if (fclose(mem) == 0)
		fwrite(buf, 1, n, f);
	else
		vlog_line(f, when, level, container, line);
	free(buf);
}

void log_msg(const struct logger *lg, const char *level, const char *fmt, ...)
{
	va_list ap;
	if (lg->err) {
		va_start(ap, fmt);
		vlog_to(lg->err, level, lg->container, fmt, ap);
		va_end(ap);
	}
	if (lg->file && lg->file[0]) {
		FILE *f = fopen(lg->file, "a");
		if (f) {
			va_start(ap, fmt);
			vlog_to(f, level, lg->container, fmt, ap);
			va_end(ap);
			fclose(f);
		}
	}
}

int copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);
	if (size == 0)
		return -1;
	if (n >= size) {
		memcpy(dst, src, size - 1);
		dst[size - 1] = '\0';
		return -1;
	}
	memcpy(dst, src, n + 1);
	return 0;
}

char *read_all(FILE *in, size_t limit, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	if (!buf)
		return NULL;
	for (;;) {
		size_t got;
		if (n == cap) {
			char *next;
			if (cap >= limit) {
				free(buf);
				return NULL;
			}
			cap *= 2;
			next = realloc(buf, cap + 1);
			if (!next) {
				free(buf);
				return NULL;
			}
			buf = next;
		}
		got = fread(buf + n, 1, cap - n, in);
		n += got;
		if (got == 0)
			break;
	}
	if (n > limit) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}
