/* erdma-smcr: a chained CNI plugin. The container runtime runs it with CNI_COMMAND and the other
 * CNI_* variables set and the network configuration on stdin (cni.c does the work); with an
 * argument, it is one of the node agent's tools instead (node_tools.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cni.h"
#include "node_tools.h"
#include "util.h"

/* The largest network configuration read from stdin. */
#define STDIN_LIMIT (16u << 20)

int main(int argc, char **argv)
{
	struct cni_env env;
	char *input;
	size_t len = 0;
	int rc;
	if (argc > 1)
		return node_tools_main(argc, argv);
	env.command = getenv("CNI_COMMAND");
	env.container_id = getenv("CNI_CONTAINERID");
	env.netns = getenv("CNI_NETNS");
	env.ifname = getenv("CNI_IFNAME");
	env.args = getenv("CNI_ARGS");
	env.path = getenv("CNI_PATH");
	input = (env.command && strcmp(env.command, "VERSION")) ? read_all(stdin, STDIN_LIMIT, &len) : strdup("{}");
	if (!input) {
		fputs("{\"cniVersion\":\"1.1.0\",\"code\":6,\"msg\":\"cannot read the network configuration from stdin (over 16 MiB?)\"}\n", stdout);
		return 1;
	}
	rc = cni_run(&env, input, stdout, stderr);
	free(input);
	return rc;
}
