/* fuzz_internal.h - what the targets that drive internal readers directly share (fuzz_scan, fuzz_dumps,
 * fuzz_pickle): the pattern database loaded once and the fuzz input served from memory, as the readers'
 * read and reread callbacks. fuzz_util.h is the same for the targets of the public API.
 *
 * Ownership: fuzz_pdb() returns a database kept for the whole process (loading it per input would be
 * most of the time). A fuzz_mem borrows its bytes from libFuzzer's input for the length of one run. */
#ifndef OOMSCAN_FUZZ_INTERNAL_H
#define OOMSCAN_FUZZ_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "db/patterndb.h"

/* Bytes read in pieces of at most `step` (0: as many as asked), so that readers refill their windows
 * inside every record or opcode. */
typedef struct {
    const uint8_t *d;
    size_t n, pos, step;
} fuzz_mem;

static ssize_t fuzz_mem_read(void *ud, void *buf, size_t cap)
{
    fuzz_mem *m = ud;
    size_t k = m->n - m->pos < cap ? m->n - m->pos : cap;
    if (m->step && k > m->step)
        k = m->step;
    memcpy(buf, m->d + m->pos, k);
    m->pos += k;
    return (ssize_t)k;
}

/* n bytes at offset off, as a reader asks for a region again; -1 past the end */
static ssize_t fuzz_mem_reread(void *ud, void *buf, size_t n, uint64_t off)
{
    const fuzz_mem *m = ud;
    if (off > m->n || n > m->n - off)
        return -1;
    memcpy(buf, m->d + off, n);
    return (ssize_t)n;
}

static pdb *fuzz_pdb(void)
{
    static pdb *db;
    if (!db) {
        oomscan_diag diag = {0};
        db = pdb_new();
        if (!db || pdb_load_embedded(db, &diag) || pdb_compile(db, &diag))
            abort(); /* the embedded database is broken: nothing to fuzz */
    }
    return db;
}

#endif
