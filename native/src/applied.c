/* Warnings of what ADD applied (applied.h): to the log and to the record. */
#include "applied.h"

#include <stdarg.h>
#include <stdio.h>

void pod_warn(struct applied *a, const struct logger *lg, const char *fmt, ...)
{
	char line[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_msg(lg, "warning", "%s", line);
	cJSON_AddItemToArray(a->warnings, cJSON_CreateString(line));
}
