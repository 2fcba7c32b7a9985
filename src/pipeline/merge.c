/* merge.c - `oomscan merge`: NDJSON records of other runs (the last per id winning) combined into one
 * story through the record codec (record.h), then ids and roles elected by the same code as a scan
 * (story_merge, story_finish). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "base/strmap.h"
#include "pipeline/record.h"
#include "pipeline/session.h"
#include "base/jsonget.h"

/* ---- oomscan merge ----------------------------------------------------------------------- */

#define MERGE_MAX_RECORD_DEFAULT (1u << 20) /* a finding's record is a few KiB; 256 ranks and 3 evidence
                                             * lines stay far below */

/* One line of `f` into *buf (grown up to `max` bytes, NUL-terminated, the newline kept; NUL bytes in it
 * are kept too, so no string function may measure it): its length, 0 at the end, -1 a read error, -2 a
 * line longer than `max` (what was read of it is dropped), -3 out of memory. */
static ssize_t read_record(FILE *f, char **buf, size_t *cap, size_t max)
{
    size_t len = 0;
    int c;
    while ((c = getc_unlocked(f)) != EOF) {
        if (len + 2 > *cap) {
            if (len >= max)
                return -2;
            size_t nc = *cap ? *cap * 2 : 4096;
            if (nc > max + 2)
                nc = max + 2;
            char *g = realloc(*buf, nc);
            if (!g)
                return -3;
            *buf = g;
            *cap = nc;
        }
        (*buf)[len++] = (char)c;
        if (c == '\n')
            break;
    }
    if (len == 0)
        return ferror(f) ? -1 : 0;
    (*buf)[len] = '\0';
    return (ssize_t)len;
}

/* A record kept until the input ends (the last per id wins): its text, not its tree. A parsed record
 * costs ~100 bytes a value, five times its text: 20,000 records held as trees took 265 MB. */
typedef struct {
    char *text;
    size_t len;
    double input, offset; /* its birth, for cmp_birth */
} kept_rec;

typedef struct {
    kept_rec *v;
    size_t n, cap;
} recvec;

static const cJSON *rec_merge(const cJSON *r) { return cJSON_GetObjectItemCaseSensitive(r, "merge"); }

static double rec_num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* Creation order within one scan: findings are born at their first line, input by input. Rebuilding a
 * story in that order keeps ties in root election exactly as the scan had them. */
static int cmp_birth(const void *a, const void *b)
{
    const kept_rec *x = a, *y = b;
    if (x->input != y->input)
        return x->input < y->input ? -1 : 1;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

/* Keep record r (parsed from text[0..len)) in slot *k of recs: its text and birth; r is not kept. */
static int keep_rec(kept_rec *k, const cJSON *r, const char *text, size_t len)
{
    char *t = malloc(len + 1);
    if (!t)
        return -1;
    memcpy(t, text, len);
    t[len] = '\0';
    free(k->text);
    k->text = t;
    k->len = len;
    k->input = rec_num(rec_merge(r), "input");
    k->offset = rec_num(cJSON_GetObjectItemCaseSensitive(r, "first"), "offset");
    return 0;
}

static int add_input(struct oomscan_scan *s, const char *path, const char *error, uint64_t bytes, uint64_t lines,
                     int partial)
{
    input_record *r = session_add_record(&s->recs, &s->n_recs, path, NULL);
    if (!r)
        return -1;
    r->container = strdup("ndjson");
    r->status = !error ? INPUT_OK : partial ? INPUT_PARTIAL : INPUT_ERROR;
    r->error = error ? strdup(error) : NULL;
    r->bytes = bytes;
    r->lines = lines;
    if (!r->container || (error && !r->error))
        return -1;
    return error ? session_add_error(s, r) : 0;
}

/* One NDJSON file: the last record per id wins (an update replaces the finding it updates).
 * long: one NDJSON file read record by record, the last per id kept, then added in order; the map and the
 * records are freed at its end. */
static oomscan_status merge_file(struct oomscan_scan *s, const char *path, size_t *offset)
{
    const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!f)
        return add_input(s, name, strerror(errno), 0, 0, 0) ? OOMSCAN_ERR_NOMEM : OOMSCAN_OK;
    recvec recs = {0};
    cJSON *scan = NULL;
    char *line = NULL, err[256] = "";
    size_t cap = 0, max = s->opt.limits.max_record_bytes ? (size_t)s->opt.limits.max_record_bytes
                                                        : MERGE_MAX_RECORD_DEFAULT;
    ssize_t len;
    uint64_t lineno = 0, bytes = 0;
    oomscan_status st = OOMSCAN_OK;
    strmap *by_id = strmap_new(); /* id -> its slot in recs, plus one: each id was compared with every record */
    int cut = 0;
    if (!by_id)
        st = OOMSCAN_ERR_NOMEM;
    while (!st && (len = read_record(f, &line, &cap, max)) != 0) {
        if (len == -3) {
            st = OOMSCAN_ERR_NOMEM;
            break;
        }
        if (len == -1)
            break; /* ferror says it below */
        if (len == -2) {
            /* /dev/zero had no end and grew until memory ran out: a record past the limit stops the input */
            snprintf(err, sizeof err, "line %llu: a record longer than %zu bytes: stopped reading (--limit record=%zu)",
                     (unsigned long long)lineno + 1, max, max);
            cut = 1;
            break;
        }
        lineno++;
        bytes += (uint64_t)len;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0)
            continue;
        cJSON *r = cJSON_ParseWithLength(line, (size_t)len);
        const char *id = r ? json_str(r, "id") : NULL;
        const char *type = r ? json_str(r, "type") : NULL;
        if (!r || !cJSON_IsObject(r) || (!id && !type)) {
            if (!err[0])
                snprintf(err, sizeof err, "line %llu: not an oomscan NDJSON record", (unsigned long long)lineno);
            cJSON_Delete(r);
            continue;
        }
        if (!id || (type && strcmp(type, "finding") != 0 && strcmp(type, "update") != 0)) {
            cJSON_Delete(r); /* a record type this version does not merge */
            continue;
        }
        const cJSON *m = rec_merge(r);
        cJSON *sc = m ? cJSON_GetObjectItemCaseSensitive(m, "scan") : NULL;
        if (sc) {
            /* the scan context only grows along a stream: the last record has all of it */
            cJSON_Delete(scan);
            scan = cJSON_Duplicate(sc, 1);
        }
        size_t k = (size_t)(uintptr_t)strmap_get(by_id, id);
        if (k > 0) {
            if (keep_rec(&recs.v[k - 1], r, line, (size_t)len) != 0)
                st = OOMSCAN_ERR_NOMEM;
            cJSON_Delete(r);
            continue;
        }
        if (GROW(recs.v, recs.n, recs.cap, 64)) {
            cJSON_Delete(r);
            st = OOMSCAN_ERR_NOMEM;
            break;
        }
        memset(&recs.v[recs.n], 0, sizeof recs.v[recs.n]);
        int kept = keep_rec(&recs.v[recs.n], r, line, (size_t)len);
        if (kept == 0)
            recs.n++;
        /* the map is searched with the tree's id: put it before the tree goes */
        if (kept != 0 || strmap_put(by_id, id, (void *)(uintptr_t)recs.n) != 0) {
            cJSON_Delete(r);
            st = OOMSCAN_ERR_NOMEM;
            break;
        }
        cJSON_Delete(r);
    }
    strmap_free(by_id);
    int read_failed = ferror(f);
    if (f != stdin)
        fclose(f);
    free(line);
    story *fs = st ? NULL : story_new();
    if (!st && !fs)
        st = OOMSCAN_ERR_NOMEM;
    if (recs.n > 1)
        qsort(recs.v, recs.n, sizeof *recs.v, cmp_birth);
    for (size_t k = 0; !st && k < recs.n; k++) {
        char why[200];
        cJSON *r = cJSON_ParseWithLength(recs.v[k].text, recs.v[k].len); /* parsed once already: whole */
        int rc = r ? record_to_finding(s->db->p, r, *offset, fs, why, sizeof why) : -2;
        if (rc == -2)
            st = OOMSCAN_ERR_NOMEM;
        else if (rc && !err[0])
            snprintf(err, sizeof err, "finding %s: %s", json_str(r, "id"), why);
        cJSON_Delete(r);
        free(recs.v[k].text); /* each as it is rebuilt: the story grows as the texts go */
        recs.v[k].text = NULL;
    }
    if (!st) {
        *offset += record_scan_into(s, scan);
        if (story_merge(s->st, fs) != 0)
            st = OOMSCAN_ERR_NOMEM;
    }
    if (!st && read_failed && !err[0])
        snprintf(err, sizeof err, "read error");
    if (!st && add_input(s, name, err[0] ? err : NULL, bytes, lineno, recs.n > 0 || cut))
        st = OOMSCAN_ERR_NOMEM;
    story_free(fs);
    for (size_t k = 0; k < recs.n; k++)
        free(recs.v[k].text);
    free(recs.v);
    cJSON_Delete(scan);
    return st;
}

oomscan_status oomscan_scan_merge(oomscan_scan *s, const char *const *paths, size_t n, oomscan_diag *diag)
{
    size_t offset = s->n_units + s->extra_inputs;
    for (size_t i = 0; i < n; i++) {
        oomscan_status st = merge_file(s, paths[i], &offset);
        if (st)
            return diag_set(diag, st, paths[i], "%s", status_name(st));
    }
    s->extra_inputs = offset - s->n_units;
    return OOMSCAN_OK;
}
