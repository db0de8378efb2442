/* The agent's tool subcommands of the plugin binary (tools.c). */
#ifndef ERDMA_SMCR_TOOLS_H
#define ERDMA_SMCR_TOOLS_H

/* Runs `erdma-smcr <tool> ...` (argv[1] names the tool); returns the exit code. */
int tools_main(int argc, char **argv);

#endif
