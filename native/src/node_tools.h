/* The node tools of the plugin binary (node_tools.c; the CLI runs them as `erdma-smcr node-tools`). */
#ifndef ERDMA_SMCR_NODE_TOOLS_H
#define ERDMA_SMCR_NODE_TOOLS_H

/* Runs `erdma-smcr <tool> ...` (argv[1] names the tool); returns the exit code. */
int node_tools_main(int argc, char **argv);

#endif
