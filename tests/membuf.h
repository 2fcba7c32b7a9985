/* membuf.h - feeding text from memory through the real scanner, for the Check suites.
 *
 * mem_read is a scanner read callback over a string the caller owns (`step` > 0 cuts reads to that
 * size, to put buffer edges anywhere). scan_text runs one whole scan of `data` with database `db` and
 * returns the story; the caller frees both with scan_done. */
#ifndef OOMSCAN_TEST_MEMBUF_H
#define OOMSCAN_TEST_MEMBUF_H

#include <check.h>
#include <string.h>
#include <sys/types.h>

#include "db/patterndb.h"
#include "match/phase.h"
#include "match/scan.h"
#include "story/story.h"

typedef struct {
    const char *data;
    size_t len, pos, step;
} membuf;

static inline ssize_t mem_read(void *ud, void *buf, size_t cap)
{
    membuf *m = ud;
    size_t n = m->len - m->pos < cap ? m->len - m->pos : cap;
    if (m->step && n > m->step)
        n = m->step;
    memcpy(buf, m->data + m->pos, n);
    m->pos += n;
    return (ssize_t)n;
}

typedef struct {
    pdb *db; /* owned by the result */
    story *st;
    scan_result res;
} run_out;

/* The database the binary embeds, compiled: for scans of what the shipped data does. */
static inline pdb *embedded_db(void)
{
    pdb *db = pdb_new();
    ck_assert_ptr_nonnull(db);
    oomscan_diag d = {0};
    ck_assert_int_eq(pdb_load_embedded(db, &d), OOMSCAN_OK);
    ck_assert_int_eq(pdb_compile(db, &d), OOMSCAN_OK);
    return db;
}

/* One scan of data[0..len) read in `step`-byte pieces (0: as much as fits); `helper` splits the
 * prefilter pass with a second thread, as a big single input does; `keep_time` as scan_source's (o.res
 * then holds the source's last stamp, not only its last failure's). Takes ownership of `db`. */
static inline run_out scan_text_as(pdb *db, const char *data, size_t len, size_t step, int helper, int keep_time)
{
    run_out o = {db, story_new(), {0}};
    ck_assert_ptr_nonnull(o.st);
    scanner *sc = scanner_new(o.db);
    ck_assert_ptr_nonnull(sc);
    if (helper)
        ck_assert_int_eq(scanner_use_helper(sc, 2), 0);
    phase_state *ps = phase_new(o.db);
    membuf m = {data, len, 0, step};
    scan_source src = {.path = "mem.log", .keep_time = keep_time};
    ck_assert_int_eq(scanner_run(sc, mem_read, &m, &src, ps, story_sink(o.st), &o.res, NULL, NULL), OOMSCAN_OK);
    story_finish(o.st, "");
    scanner_free(sc);
    phase_free(ps);
    return o;
}

/* scan_text_as reading every stamp (the tests that compare clocks see them all). */
static inline run_out scan_text(pdb *db, const char *data, size_t len, size_t step, int helper)
{
    return scan_text_as(db, data, len, step, helper, 1);
}

static inline void scan_done(run_out *o)
{
    story_free(o->st);
    pdb_free(o->db);
}

#endif
