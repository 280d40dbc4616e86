/* Subcommands of `hrmt`; each gets argv starting at its own name and returns
 * the process exit status (0 ok, 1 runtime failure, 2 usage error). */
#ifndef HRMT_CLI_COMMANDS_H
#define HRMT_CLI_COMMANDS_H

int hrmt_cmd_info(int argc, char **argv);  /* cli/cmd_info.c */
int hrmt_cmd_run(int argc, char **argv);   /* cli/cmd_run.c */
int hrmt_cmd_bench(int argc, char **argv); /* cli/cmd_bench.c */
int hrmt_cmd_probe(int argc, char **argv); /* cli/cmd_probe.c */

#endif
