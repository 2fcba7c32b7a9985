/* summary_cmd.h - the `oomscan summary` subcommand (src/cli/summary_cmd.c). Ownership: none kept. */
#ifndef OOMSCAN_SUMMARY_CMD_H
#define OOMSCAN_SUMMARY_CMD_H

/* Run `oomscan summary` with argv[0] = "summary"; returns the exit status (0 written, 2 an input or the
 * output failed: what could be read is still summarised). Prints to stdout and stderr. */
int summary_main(int argc, char **argv);

#endif
