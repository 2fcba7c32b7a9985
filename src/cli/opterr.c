/* opterr.c - one line for a refused option (opterr.h). */
#include "opterr.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

void cli_option_error(const char *prog, const char *help, int got, char *const *argv, const struct option *longopts)
{
    /* getopt_long leaves the refused word at argv[optind - 1]; a short option in a bundle (-qZ) is
     * named by optopt alone, a long one by its word up to any "=value" */
    char name[64];
    const char *word = optind > 0 ? argv[optind - 1] : "";
    int is_long = word[0] == '-' && word[1] == '-';
    if (optopt && !is_long)
        snprintf(name, sizeof name, "-%c", optopt);
    else
        snprintf(name, sizeof name, "%.*s", (int)strcspn(word, "="), word);
    if (got == ':') {
        fprintf(stderr, "%s: option '%s' needs a value; usage: %s\n", prog, name, help);
        return;
    }
    const char *what = "unknown option";
    if (is_long) {
        size_t len = strlen(name + 2), hits = 0;
        for (const struct option *o = longopts; o && o->name; o++)
            hits += strncmp(o->name, name + 2, len) == 0;
        if (hits > 1)
            what = "ambiguous option";
    }
    fprintf(stderr, "%s: %s '%s'; usage: %s\n", prog, what, name, help);
}
