/* The agent's tool subcommands of the plugin binary (agent_commands.c). */
#ifndef ERDMA_SMCR_AGENT_COMMANDS_H
#define ERDMA_SMCR_AGENT_COMMANDS_H

/* Runs `erdma-smcr <tool> ...` (argv[1] names the tool); returns the exit code. */
int tools_main(int argc, char **argv);

#endif
