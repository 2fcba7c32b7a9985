/* singlematch.c - what Vectorscan charges for the setting names of a log that echoes them, by how the
 * names are compiled: as they are (every occurrence reported), with HS_FLAG_SINGLEMATCH (reported once
 * per scan call), reversed and scanned over the reversed block (the last occurrence of each, once), and
 * as regexes that require a non-name byte on each side. Best of five, one thread, BLOCK-byte calls.
 * A probe for docs/performance.md (issue 18, seventh round), not part of the build:
 *   cc -O2 bench/probes/singlematch.c -lhs -o /tmp/singlematch
 *   /tmp/singlematch /tmp/setlits.txt bench/data/shape-settings-64.log MODE 524288
 * MODE is a sum of 1 (HS_FLAG_SINGLEMATCH), 2 (reversed literals over the reversed block) and 4 (the
 * literals as regexes with a boundary class on each side). /tmp/setlits.txt: bench/probes/literals.c. */
#include <hs/hs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

#define MAXL 4096

/* lit as a Vectorscan regex: reversed when `rev`, each byte that is not a name byte escaped, and with
 * `bound` a class on each side that no name byte matches (the '-' goes after the name, in reading order) */
static char *pattern_of(const char *lit, int rev, int bound)
{
    size_t n = strlen(lit), o = 0;
    char *p = malloc(n * 2 + 64);
    if (!p)
        return NULL;
    if (bound)
        o += (size_t)sprintf(p + o, "(?:^|[^A-Za-z0-9_%s])", rev ? "-" : "");
    for (size_t k = 0; k < n; k++) {
        char c = rev ? lit[n - 1 - k] : lit[k];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
            p[o++] = '\\';
        p[o++] = c;
    }
    if (bound)
        o += (size_t)sprintf(p + o, "(?:$|[^A-Za-z0-9_%s])", rev ? "" : "-");
    p[o] = '\0';
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return fprintf(stderr, "usage: singlematch LITS FILE MODE BLOCK\n"), 2;
    static char *lits[MAXL], *pats[MAXL];
    static unsigned ids[MAXL], flags[MAXL];
    int n = probe_read_lines(argv[1], lits, MAXL), mode = atoi(argv[3]);
    long blk = atol(argv[4]);
    for (int i = 0; i < n; i++) {
        ids[i] = (unsigned)i;
        flags[i] = (mode & 1) ? HS_FLAG_SINGLEMATCH : 0;
        if (!(pats[i] = pattern_of(lits[i], mode & 2, mode & 4)))
            return 1;
    }
    hs_database_t *db;
    hs_compile_error_t *err;
    hs_scratch_t *scratch = NULL;
    if (hs_compile_multi((const char *const *)pats, flags, ids, (unsigned)n, HS_MODE_BLOCK, NULL, &db, &err) ||
        hs_alloc_scratch(db, &scratch))
        return fprintf(stderr, "singlematch: compile failed\n"), 1;
    long size;
    char *buf = (char *)probe_slurp(argv[2], 0, &size), *rb = malloc((size_t)blk);
    if (!buf || !rb)
        return 1;
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        probe_hits = 0;
        double t = probe_now();
        for (long off = 0; off < size; off += blk) {
            long len = size - off < blk ? size - off : blk;
            char *s = buf + off;
            if (mode & 2) { /* the reversing is timed too: a scanner would have to do it */
                for (long k = 0; k < len; k++)
                    rb[k] = s[len - 1 - k];
                s = rb;
            }
            hs_scan(db, s, (unsigned)len, 0, scratch, probe_count, NULL);
        }
        t = probe_now() - t;
        if (t < best)
            best = t;
    }
    printf("mode %d, %ld-byte blocks: %.3f s, %ld matches\n", mode, blk, best, probe_hits);
    return 0;
}
