/* fuzz_util.h - what every fuzz target shares: the database loaded once, a byte sink for the writers,
 * and the fuzz input as a file (the library reads paths and file descriptors).
 *
 * Ownership: fuzz_db() returns a database kept for the whole process (libFuzzer never exits cleanly
 * between inputs, and loading it per input would be most of the time). fuzz_file() writes into one
 * per-process temporary file and returns its borrowed path, valid until the next call. */
#ifndef OOMSCAN_FUZZ_UTIL_H
#define OOMSCAN_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oomscan.h"

static oomscan_db *fuzz_db(void)
{
    static oomscan_db *db;
    if (!db) {
        oomscan_diag d = {0};
        if (oomscan_db_new(&db, &d) || oomscan_db_compile(db, &d))
            abort(); /* the embedded database is broken: nothing to fuzz */
    }
    return db;
}

/* Writers must produce something; where it goes does not matter. Counting keeps the call honest. */
static int fuzz_sink(void *ud, const char *data, size_t len)
{
    (void)data;
    *(size_t *)ud += len;
    return 0;
}

static const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/oomscan-fuzz-%d%s", (int)getpid(), suffix);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    return path;
}

/* Every writer over a finished scan. */
static void fuzz_write_all(oomscan_scan *scan)
{
    static const oomscan_format fmts[] = {OOMSCAN_FMT_TEXT, OOMSCAN_FMT_JSON, OOMSCAN_FMT_NDJSON, OOMSCAN_FMT_TICKET};
    for (size_t i = 0; i < sizeof fmts / sizeof *fmts; i++) {
        oomscan_output out = {.format = fmts[i], .verbose = 1};
        size_t n = 0;
        (void)oomscan_scan_write(scan, &out, fuzz_sink, &n);
    }
}

#endif
