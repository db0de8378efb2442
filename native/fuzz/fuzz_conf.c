/* libFuzzer target: the network configuration parser and settings resolution (stdin of ADD). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "conf.h"
#include "settings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct netconf c;
	struct cni_error e = {0, "", ""};
	struct settings s;
	struct logger lg = {NULL, NULL, NULL};
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (conf_parse(text, &c, &e) == 0 && c.annotations) {
		smcr_requested(c.annotations);
		settings_resolve(c.annotations, "eth0", c.disable_ipv6, &s, &lg);
	}
	conf_free(&c);
	free(text);
	return 0;
}
