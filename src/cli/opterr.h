/* opterr.h - the command's one-line message for an option getopt_long refused (unknown, ambiguous, or
 * missing its value), in place of getopt's own message and the whole usage. Part of the command: it
 * prints.
 *
 * Ownership: nothing is kept; argv and longopts are only read. */
#ifndef OOMSCAN_OPTERR_H
#define OOMSCAN_OPTERR_H

struct option;

/* After getopt_long returned '?' or ':' (with opterr = 0 and an optstring starting with ':'): write
 * one line to stderr naming the option and pointing to `help` ("oomscan --help"). `prog` opens it. */
void cli_option_error(const char *prog, const char *help, int got, char *const *argv, const struct option *longopts);

#endif
