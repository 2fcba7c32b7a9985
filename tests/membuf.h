/* membuf.h - feeding text from memory through the real scanner, for the Check suites.
 *
 * mem_read is a scanner read callback over a string the caller owns (`step` > 0 cuts reads to that
 * size, to put buffer edges anywhere). scan_text runs one whole scan of `data` with database `db` and
 * returns the story; the caller frees both with scan_done. */
#ifndef OOMSCAN_TEST_MEMBUF_H
#define OOMSCAN_TEST_MEMBUF_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "db/patterndb.h"
#include "match/config.h"
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
static inline run_out scan_text_live(pdb *db, const char *data, size_t len, size_t step, int helper, int keep_time,
                                     int eager);
static inline run_out scan_text_as(pdb *db, const char *data, size_t len, size_t step, int helper, int keep_time)
{
    return scan_text_live(db, data, len, step, helper, keep_time, 0);
}

/* scan_text_as for a live stream (scan_source.eager): each read is scanned as it comes. */
static inline run_out scan_text_live(pdb *db, const char *data, size_t len, size_t step, int helper, int keep_time,
                                     int eager)
{
    run_out o = {db, story_new(), {0}};
    ck_assert_ptr_nonnull(o.st);
    scanner *sc = scanner_new(o.db);
    ck_assert_ptr_nonnull(sc);
    if (helper)
        ck_assert_int_eq(scanner_use_helper(sc, 2), 0);
    phase_state *ps = phase_new(o.db);
    membuf m = {data, len, 0, step};
    scan_source src = {.path = "mem.log", .keep_time = keep_time, .eager = eager};
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

/* A text of at least `cap` bytes: the lines line(k, buf, bufcap) writes for k = first, first + 1, ...
 * (one call may write several), then `tail` (a line, or NULL). Malloc'd, its length in *n; the
 * caller frees it. */
typedef void (*text_line_fn)(unsigned k, char *buf, size_t cap);
static inline char *text_of_lines(size_t cap, unsigned first, text_line_fn line, const char *tail, size_t *n)
{
    size_t len = 0, room = cap + 8192 + (tail ? strlen(tail) + 1 : 0);
    char *text = malloc(room);
    ck_assert_ptr_nonnull(text);
    for (unsigned k = first; len < cap; k++) {
        char buf[2048];
        line(k, buf, sizeof buf);
        size_t l = strlen(buf);
        memcpy(text + len, buf, l);
        len += l;
    }
    if (tail) {
        size_t l = strlen(tail);
        memcpy(text + len, tail, l);
        len += l;
        text[len++] = '\n';
    }
    *n = len;
    return text;
}

/* Every entry of the settings of inputs that name no job, one "path=value@line" a line: sorted (what
 * advice reads, whatever the order of reading), or in the store's order with "#seq" (the order of
 * reading too). Malloc'd; the caller frees it. */
static inline char *settings_dump(story *st, int sorted)
{
    const config_store *s = *story_job_settings(st, "");
    ck_assert_ptr_nonnull(s);
    char **rows = calloc(s->n + 1, sizeof *rows);
    ck_assert_ptr_nonnull(rows);
    size_t total = 1;
    for (size_t i = 0; i < s->n; i++) {
        char row[512];
        const config_entry *e = &s->e[i];
        if (sorted)
            snprintf(row, sizeof row, "%s=%s@%llu\n", e->path, e->value, (unsigned long long)e->line);
        else
            snprintf(row, sizeof row, "%s=%s@%llu#%llu\n", e->path, e->value, (unsigned long long)e->line,
                     (unsigned long long)e->seq);
        rows[i] = strdup(row);
        total += strlen(row);
    }
    for (size_t i = 1; sorted && i < s->n; i++) /* insertion sort: a few dozen rows */
        for (size_t j = i; j > 0 && strcmp(rows[j - 1], rows[j]) > 0; j--) {
            char *t = rows[j];
            rows[j] = rows[j - 1];
            rows[j - 1] = t;
        }
    char *out = calloc(1, total);
    ck_assert_ptr_nonnull(out);
    for (size_t i = 0; i < s->n; i++) {
        strcat(out, rows[i]);
        free(rows[i]);
    }
    free(rows);
    return out;
}

static inline void scan_done(run_out *o)
{
    story_free(o->st);
    pdb_free(o->db);
}

#endif
