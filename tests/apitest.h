/* apitest.h - for the suites that drive the pipeline through the public API (check_emit, check_stream,
 * check_state, check_merge): the embedded database loaded once, output caught in memory, temporary
 * files, and a scan of some paths written in some format. */
#ifndef OOMSCAN_APITEST_H
#define OOMSCAN_APITEST_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "oomscan.h"

#define FIXTURE(name) OOMSCAN_SOURCE_DIR "/fixtures/" name

typedef struct {
    char *p;
    size_t len;
} mbuf;

static inline int mbuf_write(void *ud, const char *data, size_t len)
{
    mbuf *b = ud;
    char *g = realloc(b->p, b->len + len + 1);
    if (!g)
        return -1;
    memcpy(g + b->len, data, len);
    b->p = g;
    b->len += len;
    b->p[b->len] = '\0';
    return 0;
}

/* What a log shipper's run writes as it goes: the NDJSON delta after each input (an on_input hook;
 * `s` is set once the scan exists). */
typedef struct {
    oomscan_scan *s;
    mbuf b;
} delta_ctx;

static inline void delta_on_input(void *ud, size_t index)
{
    (void)index;
    delta_ctx *c = ud;
    ck_assert_int_eq(oomscan_scan_write_ndjson_delta(c->s, mbuf_write, &c->b), OOMSCAN_OK);
}

static oomscan_db *g_db;

static inline void db_setup(void)
{
    oomscan_diag d = {0};
    ck_assert_int_eq(oomscan_db_new(&g_db, &d), OOMSCAN_OK);
    ck_assert_int_eq(oomscan_db_compile(g_db, &d), OOMSCAN_OK);
}

static inline void db_teardown(void) { oomscan_db_free(g_db); }

static inline oomscan_scan *new_scan(void)
{
    oomscan_scan *s;
    oomscan_diag d = {0};
    oomscan_options opt = {.jobs = 1};
    ck_assert_int_eq(oomscan_scan_new(&s, g_db, &opt, &d), OOMSCAN_OK);
    return s;
}

/* Write `out` of scan `s` into a new string (never NULL). */
static inline char *write_scan(oomscan_scan *s, const oomscan_output *out)
{
    mbuf b = {0};
    ck_assert_int_eq(oomscan_scan_write(s, out, mbuf_write, &b), OOMSCAN_OK);
    return b.p ? b.p : strdup("");
}

/* Scan `n` paths and write them as `out` says; the caller frees the text. */
static inline char *render_paths(const char *const *paths, size_t n, const oomscan_output *out)
{
    oomscan_scan *s = new_scan();
    oomscan_diag d = {0};
    ck_assert_int_eq(oomscan_scan_paths(s, paths, n, &d), OOMSCAN_OK);
    char *text = write_scan(s, out);
    oomscan_scan_free(s);
    return text;
}

/* A new temporary file (suffix kept) holding data; the caller unlinks and frees the path. */
static inline char *write_temp(const char *suffix, const char *data, size_t len)
{
    char *path = malloc(80);
    snprintf(path, 80, "/tmp/oomscan_test_XXXXXX%s", suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
    return path;
}

/* The whole of a file as a string (NULL when it cannot be read). */
static inline char *slurp_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    mbuf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        mbuf_write(&b, chunk, n);
    fclose(f);
    if (len)
        *len = b.len;
    return b.p ? b.p : strdup("");
}

/* Lines of `text` holding `needle`. */
static inline size_t count_lines_with(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        const char *hit = strstr(p, needle);
        if (hit && hit < p + len)
            n++;
        p = nl ? nl + 1 : NULL;
    }
    return n;
}

/* What a story rebuilt from records must keep, per finding of a JSON document, in document order: id,
 * role, cause, job, sources (every window), memory figures and remediation (with the job's settings).
 * One line per finding. */
static inline char *story_keys_of(const char *json)
{
    static const char *const keys[] = {"id", "role", "caused_by", "job", "sources", "memory", "remediation"};
    cJSON *doc = cJSON_Parse(json);
    ck_assert_ptr_nonnull(doc);
    mbuf b = {0};
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(doc, "findings"))
    {
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
            const cJSON *v = cJSON_GetObjectItem(f, keys[k]);
            char *t = v ? cJSON_PrintUnformatted(v) : strdup("-");
            mbuf_write(&b, t, strlen(t));
            mbuf_write(&b, k + 1 < sizeof keys / sizeof *keys ? " " : "\n", 1);
            free(t);
        }
    }
    cJSON_Delete(doc);
    return b.p ? b.p : strdup("");
}

/* got == want, else a failure naming the first line (finding) that differs, cut short. */
static inline void assert_same_lines(const char *got, const char *want)
{
    const char *g = got, *w = want;
    while (*g && *g == *w) {
        const char *ng = strchr(g, '\n'), *nw = strchr(w, '\n');
        if (!ng || !nw || ng - g != nw - w || strncmp(g, w, (size_t)(ng - g)) != 0)
            break;
        g = ng + 1;
        w = nw + 1;
    }
    ck_assert_msg(strcmp(g, want + (w - want)) == 0, "first difference:\n got: %.300s\nwant: %.300s", g, w);
}

#endif
