/* hs_only.c - Vectorscan alone over a file, with a callback that does nothing: the literals of
 * LITS (one per line) less those of DROP, 1 MiB blocks, best of five. A probe for
 * docs/performance.md (issue 18, fourth round), not part of the build:
 *   cc -O2 bench/probes/hs_only.c -lhs -o /tmp/hs_only
 *   /tmp/hs_only /tmp/lits.txt bench/data/shape-settings-64.log [/tmp/setlits.txt] */
#include <hs/hs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

#define MAXL 4096

int main(int argc, char **argv)
{
    if (argc < 3)
        return fprintf(stderr, "usage: hs_only LITS FILE [DROP]\n"), 2;
    static char *all[MAXL], *drop[MAXL], *lits[MAXL];
    static unsigned ids[MAXL], flags[MAXL];
    static size_t lens[MAXL];
    int na = probe_read_lines(argv[1], all, MAXL), nd = argc > 3 ? probe_read_lines(argv[3], drop, MAXL) : 0, n = 0;
    for (int i = 0; i < na; i++) {
        int skip = 0;
        for (int j = 0; j < nd && !skip; j++)
            skip = strcmp(all[i], drop[j]) == 0;
        if (!skip) {
            lits[n] = all[i], lens[n] = strlen(all[i]), ids[n] = (unsigned)n, flags[n] = 0;
            n++;
        }
    }
    hs_database_t *db;
    hs_compile_error_t *err;
    hs_scratch_t *scratch = NULL;
    if (hs_compile_lit_multi((const char *const *)lits, flags, ids, lens, (unsigned)n, HS_MODE_BLOCK, NULL, &db, &err) ||
        hs_alloc_scratch(db, &scratch))
        return fprintf(stderr, "hs_only: compile failed\n"), 1;
    long size;
    char *buf = (char *)probe_slurp(argv[2], 0, &size);
    if (!buf)
        return 1;
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        probe_hits = 0;
        double t = probe_now();
        for (long off = 0; off < size; off += 1 << 20)
            hs_scan(db, buf + off, (unsigned)(size - off < (1 << 20) ? size - off : (1 << 20)), 0, scratch, probe_count, NULL);
        t = probe_now() - t;
        if (t < best)
            best = t;
    }
    printf("%d literals: %.3f s, %ld matches\n", n, best, probe_hits);
    return 0;
}
