/* literals.c - the compiled embedded database's prefilter literals, one per line: all of them, or
 * with --settings only those whose every target is a setting (LIT_CONFIG). A probe for
 * docs/performance.md (issue 18, fourth round), not part of the build:
 *   cc -O2 -Isrc -Iinclude -Ibuild bench/probes/literals.c build/liboomscan.a \
 *      -lhs -lpcre2-8 -lz -lcjson -larchive -lisal -lpthread -lm -o /tmp/literals
 *   /tmp/literals > /tmp/lits.txt; /tmp/literals --settings > /tmp/setlits.txt */
#include <stdio.h>
#include <string.h>

#include "db/patterndb.h"

int main(int argc, char **argv)
{
    int settings = argc > 1 && strcmp(argv[1], "--settings") == 0;
    oomscan_diag d = {0};
    pdb *db = pdb_new();
    if (!db || pdb_load_embedded(db, &d) || pdb_compile(db, &d)) {
        fprintf(stderr, "literals: %s\n", d.msg);
        return 1;
    }
    for (size_t i = 0; i < db->n_literals; i++) {
        int only = db->literals[i].n_targets > 0;
        for (size_t t = 0; t < db->literals[i].n_targets; t++)
            only &= db->literals[i].targets[t].kind == LIT_CONFIG;
        if (!settings || only)
            printf("%s\n", db->literals[i].text);
    }
    pdb_free(db);
    return 0;
}
