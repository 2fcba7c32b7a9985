/* stream.c - NDJSON records (finding / update), the table of what was written, and live streams:
 * stdin from a pipe or `--follow FILE` (through rotation and truncation), records written as soon as
 * each finding is complete. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pipeline/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/status.h"
#include "emit/emit.h"
#include "match/scan.h"
#include "pipeline/merge.h"

#define LIVE_READ (64u * 1024u)  /* one read from a live stream */
#define COMPLETE_LINES 48        /* lines after a finding's last line: no second wording can join it
                                  * (scan.c's burst window is 40, its lookahead 3) */
#define FOLLOW_TICK_MS 100
#define DRAIN_MAX (64u << 20)    /* read at most this much more once asked to stop */       /* how often a followed file is looked at when nothing is new */

/* ---- the table of ids written ------------------------------------------------------------ */

struct rep_table {
    rep_entry *e;
    size_t n, cap;
    size_t *idx; /* open addressing over e: index + 1, 0 = empty */
    size_t icap;
};

rep_table *rep_new(void) { return calloc(1, sizeof(rep_table)); }

void rep_free(rep_table *t)
{
    if (!t)
        return;
    free(t->e);
    free(t->idx);
    free(t);
}

static size_t id_hash(const char *id)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *id; id++)
        h = (h ^ (unsigned char)*id) * 0x100000001b3ULL;
    return (size_t)h;
}

rep_entry *rep_find(const rep_table *t, const char *id)
{
    if (!t || !t->icap)
        return NULL;
    for (size_t k = id_hash(id) & (t->icap - 1);; k = (k + 1) & (t->icap - 1)) {
        if (!t->idx[k])
            return NULL;
        if (strcmp(t->e[t->idx[k] - 1].id, id) == 0)
            return &t->e[t->idx[k] - 1];
    }
}

static int rep_reindex(rep_table *t, size_t icap)
{
    size_t *idx = calloc(icap, sizeof *idx);
    if (!idx)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        size_t k = id_hash(t->e[i].id) & (icap - 1);
        while (idx[k])
            k = (k + 1) & (icap - 1);
        idx[k] = i + 1;
    }
    free(t->idx);
    t->idx = idx;
    t->icap = icap;
    return 0;
}

rep_entry *rep_put(rep_table *t, const char *id)
{
    rep_entry *e = rep_find(t, id);
    if (e)
        return e;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        rep_entry *g = realloc(t->e, cap * sizeof *g);
        if (!g)
            return NULL;
        t->e = g;
        t->cap = cap;
    }
    if ((t->n + 1) * 2 > t->icap && rep_reindex(t, t->icap ? t->icap * 2 : 128) != 0)
        return NULL;
    e = &t->e[t->n];
    memset(e, 0, sizeof *e);
    snprintf(e->id, sizeof e->id, "%s", id);
    size_t k = id_hash(id) & (t->icap - 1);
    while (t->idx[k])
        k = (k + 1) & (t->icap - 1);
    t->idx[k] = ++t->n;
    return e;
}

size_t rep_count(const rep_table *t) { return t ? t->n : 0; }
const rep_entry *rep_at(const rep_table *t, size_t i) { return &t->e[i]; }

/* ---- records ----------------------------------------------------------------------------- */

double stream_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t fnv(const char *p, uint64_t h)
{
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    return h;
}

/* What a consumer sees: the finding object (resolved by the result, advice included) plus the keys a
 * reducer groups by. */
static cJSON *visible_json(const struct oomscan_scan *s, size_t i)
{
    const finding *f = &s->st->f[i];
    result_scan view;
    result_finding rf;
    session_result_scan(s, &view);
    if (result_finding_init(&rf, &view, i, 1) != 0)
        return NULL;
    cJSON *j = emit_finding_json(&rf);
    result_finding_clear(&rf);
    if (!j)
        return NULL;
    cJSON_AddStringToObject(j, "group", f->group);
    cJSON_AddNumberToObject(j, "echo_level", story_echo_level(f));
    return j;
}

cJSON *stream_record_json(const struct oomscan_scan *s, size_t i)
{
    cJSON *j = visible_json(s, i);
    if (j)
        cJSON_AddItemToObject(j, "merge", merge_info_json(s, &s->st->f[i]));
    return j;
}

/* Everything that can change a finding's record without story_add noticing: its role, its cause, the
 * scan-wide framework. Cheap, so that only findings that may have changed are printed and hashed. */
static uint64_t signature(const struct oomscan_scan *s, const finding *f)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    h = (h ^ f->version) * 0x100000001b3ULL;
    h = (h ^ (uint64_t)f->is_root) * 0x100000001b3ULL;
    h = (h ^ (uint64_t)(f->caused_by + 2)) * 0x100000001b3ULL;
    h = (h ^ (uint64_t)result_framework(s->votes, f)) * 0x100000001b3ULL;
    h = (h ^ (uint64_t)(uintptr_t)f->note) * 0x100000001b3ULL;
    if (f->caused_by >= 0)
        h = fnv(s->st->f[f->caused_by].id, h);
    return h | 1; /* 0 means "never considered" */
}

oomscan_status stream_emit(struct oomscan_scan *s, stream_ready_fn ready, void *ready_ud, double min_gap,
                           oomscan_write_fn fn, void *ud)
{
    session_finish(s);
    if (!s->rep && !(s->rep = rep_new()))
        return OOMSCAN_ERR_NOMEM;
    size_t *order = malloc((s->st->n + 1) * sizeof *order);
    if (!order)
        return OOMSCAN_ERR_NOMEM;
    story_order(s->st, order);
    double now = stream_now();
    oomscan_status st = OOMSCAN_OK;
    for (size_t k = 0; k < s->st->n && !st; k++) {
        size_t i = order[k];
        finding *f = &s->st->f[i];
        uint64_t sig = signature(s, f);
        if (f->written_version == sig)
            continue;
        rep_entry *e = rep_find(s->rep, f->id);
        if (!e && ready && !ready(ready_ud, i))
            continue;
        cJSON *j = visible_json(s, i);
        char *txt = j ? cJSON_PrintUnformatted(j) : NULL;
        if (!txt) {
            cJSON_Delete(j);
            st = OOMSCAN_ERR_NOMEM;
            break;
        }
        uint64_t hash = fnv(txt, 0xcbf29ce484222325ULL);
        free(txt);
        const char *cb = f->caused_by >= 0 ? s->st->f[f->caused_by].id : "";
        int role_changed = e && (e->is_root != f->is_root || strcmp(e->caused_by, cb) != 0);
        if (e && e->hash == hash) {
            f->written_version = sig;
            cJSON_Delete(j);
            continue;
        }
        if (e && ready && !role_changed && now - e->at < min_gap) {
            cJSON_Delete(j); /* only more of the same: say it at most every min_gap seconds */
            continue;
        }
        cJSON_AddStringToObject(j, "type", e ? "update" : "finding");
        if (e) {
            cJSON *ch = cJSON_AddArrayToObject(j, "changes");
            if (e->is_root != f->is_root)
                cJSON_AddItemToArray(ch, cJSON_CreateString("role"));
            if (strcmp(e->caused_by, cb) != 0)
                cJSON_AddItemToArray(ch, cJSON_CreateString("caused_by"));
            if (e->occurrences != f->occurrences)
                cJSON_AddItemToArray(ch, cJSON_CreateString("occurrences"));
            if (cJSON_GetArraySize(ch) == 0)
                cJSON_AddItemToArray(ch, cJSON_CreateString("details"));
        }
        cJSON_AddItemToObject(j, "merge", merge_info_json(s, f));
        txt = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        size_t len = txt ? strlen(txt) : 0;
        char *line = txt ? realloc(txt, len + 2) : NULL;
        if (!line) {
            free(txt);
            st = OOMSCAN_ERR_NOMEM;
            break;
        }
        line[len] = '\n';
        line[len + 1] = '\0';
        /* one call per record: a line-buffered reader never sees half of one */
        int bad = fn(ud, line, len + 1);
        free(line);
        if (bad) {
            st = OOMSCAN_ERR_IO;
            break;
        }
        if (!(e = rep_put(s->rep, f->id))) {
            st = OOMSCAN_ERR_NOMEM;
            break;
        }
        e->hash = hash;
        e->is_root = f->is_root;
        snprintf(e->caused_by, sizeof e->caused_by, "%s", cb);
        e->occurrences = f->occurrences;
        e->at = now;
        f->written_version = sig;
    }
    free(order);
    return st;
}

int stream_looks_packed(const unsigned char *p, size_t n)
{
    static const struct {
        const char *magic;
        size_t len, at;
    } m[] = {
        {"\x1f\x8b", 2, 0}, {"\x28\xb5\x2f\xfd", 4, 0}, {"\xfd" "7zXZ\x00", 6, 0}, {"BZh", 3, 0},
        {"PK\x03\x04", 4, 0}, {"ustar", 5, 257},
    };
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        if (n >= m[i].at + m[i].len && memcmp(p + m[i].at, m[i].magic, m[i].len) == 0)
            return 1;
    return 0;
}

/* ---- live streams ------------------------------------------------------------------------ */

typedef struct {
    oomscan_scan *s;
    phase_state *ps;
    const char *path; /* followed file, re-examined for rotation */
    int fd, follow;
    double flush;     /* seconds of quiet after which everything is complete */
    uint64_t pos;     /* bytes read from the current file */
    uint64_t lines;   /* line ends delivered from the current file */
    int checked;      /* the first bytes were looked at */
    dev_t dev;
    ino_t ino;
    int rotated;      /* follow: replaced or truncated: end this source, start on the new file */
    double last_data;
    int idle_sent;    /* SCAN_READ_IDLE returned since the last data */
    int idle_flush;   /* ... and not yet followed by an emit: every finding is complete */
    double *seen;     /* per finding index: when it was first seen */
    size_t n_seen;
    oomscan_write_fn fn;
    void *ud;
    int broken;       /* the writer refused: stop */
    uint64_t drained; /* bytes read after the stop was asked for */
    unsigned char head[256]; /* first bytes of the followed file, to notice a truncate-and-rewrite */
    size_t head_n;
    char err[200];
} live;

static int live_ready(void *ud, size_t i)
{
    live *r = ud;
    const finding *f = &r->s->st->f[i];
    if (r->idle_flush || r->lines >= f->last.line + COMPLETE_LINES)
        return 1;
    return i < r->n_seen && stream_now() - r->seen[i] >= r->flush;
}

static void live_emit(live *r, int final)
{
    oomscan_scan *s = r->s;
    if (r->broken)
        return;
    memcpy(s->votes, phase_framework_votes(r->ps), sizeof s->votes);
    if (s->st->n > r->n_seen) {
        double *g = realloc(r->seen, s->st->n * sizeof *g);
        if (g) {
            r->seen = g;
            double now = stream_now();
            while (r->n_seen < s->st->n)
                r->seen[r->n_seen++] = now;
        }
    }
    if (stream_emit(s, final ? NULL : live_ready, r, r->flush, r->fn, r->ud) != OOMSCAN_OK) {
        r->broken = 1;
        s->cancel = 1;
    }
}

static void nap(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL); /* a signal cuts it short, which is what we want */
}

/* The followed file's first bytes are not what we read there: it was truncated and written again
 * (copytruncate), perhaps past our offset, which a size check alone would miss. */
static int head_changed(live *r)
{
    unsigned char now[sizeof r->head];
    ssize_t n = pread(r->fd, now, r->head_n, 0);
    return n >= 0 && ((size_t)n < r->head_n || memcmp(now, r->head, r->head_n) != 0);
}

static ssize_t live_read(void *ud, void *buf, size_t cap)
{
    live *r = ud;
    live_emit(r, 0);
    r->idle_flush = 0;
    if (cap > LIVE_READ)
        cap = LIVE_READ;
    for (;;) {
        if (r->rotated)
            return 0;
        if (r->s->cancel) {
            /* stopping: take what was already written to us (bounded), not what may come */
            struct pollfd p = {.fd = r->fd, .events = POLLIN};
            if (r->broken || r->drained >= DRAIN_MAX || (!r->follow && poll(&p, 1, 0) <= 0))
                return 0;
            ssize_t n = read(r->fd, buf, cap);
            if (n <= 0)
                return 0;
            r->drained += (uint64_t)n;
            r->pos += (uint64_t)n;
            return n;
        }
        double quiet = stream_now() - r->last_data;
        if (!r->follow) {
            int wait = r->idle_sent ? 1000 : (int)((r->flush - quiet) * 1000.0) + 1;
            struct pollfd p = {.fd = r->fd, .events = POLLIN};
            int pr = poll(&p, 1, wait < 0 ? 0 : wait);
            if (pr < 0 && errno != EINTR) {
                snprintf(r->err, sizeof r->err, "%s", strerror(errno));
                return -1;
            }
            if (pr <= 0) {
                if (!r->idle_sent && stream_now() - r->last_data >= r->flush) {
                    r->idle_sent = r->idle_flush = 1;
                    return SCAN_READ_IDLE;
                }
                continue;
            }
        }
        ssize_t n = read(r->fd, buf, cap);
        if (n > 0 && r->follow && r->pos > 0 && head_changed(r)) {
            r->rotated = 1; /* truncated and written again past where we were: start over */
            return 0;
        }
        if (n > 0) {
            if (r->follow && r->head_n < sizeof r->head) {
                size_t k = sizeof r->head - r->head_n < (size_t)n ? sizeof r->head - r->head_n : (size_t)n;
                memcpy(r->head + r->head_n, buf, k);
                r->head_n += k;
            }
            if (!r->checked && stream_looks_packed(buf, (size_t)n)) {
                snprintf(r->err, sizeof r->err, "compressed or archived data cannot be followed as a stream "
                                                "(give it as a file, or decompress it into the pipe)");
                return -1;
            }
            r->checked = 1;
            r->pos += (uint64_t)n;
            r->lines += scan_count_lines(buf, (size_t)n);
            r->last_data = stream_now();
            r->idle_sent = 0;
            return n;
        }
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            snprintf(r->err, sizeof r->err, "%s", strerror(errno));
            return -1;
        }
        if (!r->follow)
            return 0;
        /* At the end of what is written so far. Replaced (new inode) or truncated: start over on the
         * file now at the path, like tail -F. */
        struct stat sb;
        if (stat(r->path, &sb) == 0 &&
            (sb.st_ino != r->ino || sb.st_dev != r->dev || (uint64_t)sb.st_size < r->pos)) {
            r->rotated = 1;
            return 0;
        }
        if (!r->idle_sent && quiet >= r->flush) {
            r->idle_sent = r->idle_flush = 1;
            return SCAN_READ_IDLE;
        }
        nap(FOLLOW_TICK_MS);
    }
}

static input_record *live_rec(oomscan_scan *s, const char *name)
{
    input_record *rec = session_add_record(&s->recs, &s->n_recs, name, NULL);
    if (rec && !(rec->container = strdup("text")))
        rec = NULL; /* the record stays counted and is freed with the scan */
    return rec;
}

/* The input ended badly: the record says why, and so does the scan's error list. */
static void live_error(oomscan_scan *s, input_record *rec, const char *why, int partial)
{
    rec->status = partial ? INPUT_PARTIAL : INPUT_ERROR;
    rec->error = strdup(why);
    if (rec->error)
        (void)session_add_error(s, rec); /* out of memory: the record still says it */
}

/* Open the followed file, waiting for it to appear (tail -F); -1 when cancelled or on a hard error. */
static int live_open(live *r, char *why, size_t cap)
{
    for (;;) {
        int fd = open(r->path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            return fd;
        if (!r->follow || errno != ENOENT) {
            snprintf(why, cap, "%s", strerror(errno));
            return -1;
        }
        if (r->s->cancel)
            return -1;
        nap(FOLLOW_TICK_MS);
    }
}

oomscan_status oomscan_scan_stream(oomscan_scan *s, const char *path, int follow, unsigned flush_ms,
                                   oomscan_write_fn fn, void *ud, oomscan_diag *diag)
{
    int is_stdin = strcmp(path, "-") == 0;
    if (is_stdin && follow)
        return diag_set(diag, OOMSCAN_ERR_USAGE, path, "--follow needs a file, not stdin");
    scanner *sc = scanner_new(s->db->p);
    phase_state *ps = phase_new(s->db->p);
    if (!sc || !ps) {
        scanner_free(sc);
        phase_free(ps);
        return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    }
    const char *name = is_stdin ? "<stdin>" : path;
    live r = {.s = s, .ps = ps, .path = path, .follow = follow, .flush = (flush_ms ? flush_ms : 2000) / 1000.0,
              .fn = fn, .ud = ud, .last_data = stream_now()};
    s->extra_inputs = 1; /* one input, index 0, whatever rotations happen */
    oomscan_status st = OOMSCAN_OK;
    while (!st) {
        input_record *rec = live_rec(s, name);
        if (!rec) {
            st = OOMSCAN_ERR_NOMEM;
            break;
        }
        char why[200] = "";
        r.fd = is_stdin ? STDIN_FILENO : live_open(&r, why, sizeof why);
        if (r.fd < 0) {
            if (why[0])
                live_error(s, rec, why, 0);
            break;
        }
        struct stat sb;
        if (fstat(r.fd, &sb) == 0) {
            r.dev = sb.st_dev;
            r.ino = sb.st_ino;
        }
        r.pos = r.lines = 0;
        r.rotated = 0;
        r.head_n = 0;
        r.err[0] = '\0';
        scan_source src = {.path = name, .input = 0, .eager = 1};
        scan_source_from_name(&src);
        session_note_job(s->job_id, &s->job_conflict, src.job_id);
        phase_reset_source(ps);
        scan_result res;
        st = scanner_run(sc, live_read, &r, &src, ps, s->st, &res, NULL, NULL);
        rec->bytes = res.bytes;
        rec->lines = res.lines;
        if (res.read_error)
            live_error(s, rec, r.err[0] ? r.err : "read error", res.bytes > 0);
        if (!is_stdin)
            close(r.fd);
        if (!r.rotated || s->cancel || r.broken || res.read_error)
            break;
        live_emit(&r, 1); /* the old file is over: everything in it is complete */
    }
    live_emit(&r, 1);
    free(r.seen);
    scanner_free(sc);
    phase_free(ps);
    if (st)
        return diag_set(diag, st, NULL, "%s", status_name(st));
    return r.broken ? OOMSCAN_ERR_IO : OOMSCAN_OK;
}

void oomscan_scan_cancel(oomscan_scan *s)
{
    if (s)
        s->cancel = 1;
}
