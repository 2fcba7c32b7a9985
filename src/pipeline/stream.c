/* stream.c - live streams: stdin from a pipe or `--follow FILE` (through rotation and truncation),
 * each source scanned by the pipeline's one path (session_scan_source) and records written by the
 * NDJSON writer (ndjson.c) as soon as each finding is complete. Only what is live is here: waiting,
 * rotation, the completeness of a finding, draining on stop. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "oomscan.h"

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
#include "input/input.h"
#include "match/scan.h"
#include "pipeline/ndjson.h"
#include "pipeline/session.h"

#define LIVE_READ (64u * 1024u)  /* one read from a live stream */
#define COMPLETE_LINES 48        /* lines after a finding's last line: no second wording can join it
                                  * (scan.c's burst window is 40, its lookahead 3) */
#define FOLLOW_TICK_MS 100       /* how often a followed file is looked at when nothing is new */
#define DRAIN_MAX (64u << 20)    /* read at most this much more once asked to stop */

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
    unsigned char *packed; /* stdin's first read when it is compressed or archived: decoded, not live */
    size_t packed_n;
} live;

static int live_ready(void *ud, size_t i)
{
    live *r = ud;
    const finding *f = &r->s->st->f[i];
    if (r->idle_flush || r->lines >= f->last.line + COMPLETE_LINES)
        return 1;
    return i < r->n_seen && ndjson_now() - r->seen[i] >= r->flush;
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
            double now = ndjson_now();
            while (r->n_seen < s->st->n)
                r->seen[r->n_seen++] = now;
        }
    }
    if (ndjson_emit(s, final ? NULL : live_ready, r, NULL, r->flush, r->fn, r->ud) != OOMSCAN_OK) {
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

/* long: the live read callback: one poll loop handling growth, truncation and replacement of the followed
 * file. */
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
        double quiet = ndjson_now() - r->last_data;
        if (!r->follow) {
            int wait = r->idle_sent ? 1000 : (int)((r->flush - quiet) * 1000.0) + 1;
            struct pollfd p = {.fd = r->fd, .events = POLLIN};
            int pr = poll(&p, 1, wait < 0 ? 0 : wait);
            if (pr < 0 && errno != EINTR) {
                snprintf(r->err, sizeof r->err, "%s", strerror(errno));
                return -1;
            }
            if (pr <= 0) {
                if (!r->idle_sent && ndjson_now() - r->last_data >= r->flush) {
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
            if (!r->checked && strcmp(input_sniff(buf, (size_t)n), "text") != 0 && !r->follow) {
                /* a compressed file through a pipe is a file, not a live log: decoded as one (issue 33) */
                if (!(r->packed = malloc((size_t)n))) {
                    snprintf(r->err, sizeof r->err, "out of memory");
                    return -1;
                }
                memcpy(r->packed, buf, (size_t)n);
                r->packed_n = (size_t)n;
                return 0;
            }
            if (!r->checked && strcmp(input_sniff(buf, (size_t)n), "text") != 0) {
                snprintf(r->err, sizeof r->err, "compressed or archived data cannot be followed as a stream "
                                                "(give it as a file, or decompress it into the pipe)");
                return -1;
            }
            r->checked = 1;
            r->pos += (uint64_t)n;
            r->lines += scan_count_lines(buf, (size_t)n);
            r->last_data = ndjson_now();
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

/* A compressed or archived stream on stdin: each source decoded and scanned as a file's would be. */
typedef struct {
    live *r;
    scanner *sc;
    oomscan_status st;
} packed_ctx;

static ssize_t packed_read(void *ud, void *buf, size_t cap) { return input_read(ud, buf, cap); }
static const char *packed_why(void *ud) { return input_stream_error(ud); }

static int packed_source(void *ud, const input_source_info *info, input_stream *in)
{
    packed_ctx *c = ud;
    oomscan_scan *s = c->r->s;
    input_record *rec = session_add_record(&s->recs, &s->n_recs, info->path, info->member);
    if (!rec || (info->container && !(rec->container = strdup(info->container)))) {
        c->st = OOMSCAN_ERR_NOMEM;
        return 1;
    }
    size_t ri = (size_t)(rec - s->recs);
    phase_reset_source(c->r->ps);
    session_source src = {.src = {.path = info->path, .member = info->member, .input = 0},
                          .read = packed_read, .read_ud = in, .why = packed_why};
    scan_result res;
    c->st = session_scan_source(c->sc, c->r->ps, &src, s->st, s->job_id, &s->job_conflict, rec, &res);
    if (res.read_error && session_add_error(s, &s->recs[ri]) != 0 && !c->st)
        c->st = OOMSCAN_ERR_NOMEM;
    return c->st != OOMSCAN_OK || s->cancel;
}

/* The stream turned out compressed: its empty "text" record goes, the data is decoded from the bytes
 * already read on. Returns the scan's status (a bad container is an input error, not a failure). */
static oomscan_status read_packed(live *r, scanner *sc, const char *name)
{
    oomscan_scan *s = r->s;
    input_record *last = &s->recs[--s->n_recs];
    free(last->path);
    free(last->member);
    free(last->container);
    free(last->error);
    const oomscan_limits *l = &s->opt.limits;
    input_limits lim = {.max_bytes = l->max_bytes, .max_ratio = l->max_ratio, .max_members = l->max_members,
                        .max_depth = l->max_depth, .stop = &s->cancel};
    packed_ctx c = {.r = r, .sc = sc};
    oomscan_diag d;
    diag_clear(&d);
    oomscan_status st = input_open_fd_after(r->fd, name, r->packed, r->packed_n, &lim, packed_source, &c, &d);
    if (st && st != OOMSCAN_ERR_CANCELLED && !c.st) {
        input_record *rec = session_add_record(&s->recs, &s->n_recs, name, NULL);
        if (!rec)
            return OOMSCAN_ERR_NOMEM;
        rec->status = INPUT_ERROR;
        rec->error = strdup(d.msg[0] ? d.msg : status_name(st));
        if (rec->error && session_add_error(s, rec) != 0)
            return OOMSCAN_ERR_NOMEM;
    }
    return c.st;
}

static input_record *live_rec(oomscan_scan *s, const char *name)
{
    input_record *rec = session_add_record(&s->recs, &s->n_recs, name, NULL);
    if (rec && !(rec->container = strdup("text")))
        rec = NULL; /* the record stays counted and is freed with the scan */
    return rec;
}

/* The followed file could not be opened: the record says why, and so does the scan's error list. */
static void live_error(oomscan_scan *s, input_record *rec, const char *why)
{
    rec->status = INPUT_ERROR;
    rec->error = strdup(why);
    if (rec->error)
        (void)session_add_error(s, rec); /* out of memory: the record still says it */
}

static const char *live_why(void *ud) { return ((live *)ud)->err; }

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
    const char *name = !is_stdin ? path : s->opt.stdin_label ? s->opt.stdin_label : "<stdin>";
    live r = {.s = s, .ps = ps, .path = path, .follow = follow, .flush = (flush_ms ? flush_ms : 2000) / 1000.0,
              .fn = fn, .ud = ud, .last_data = ndjson_now()};
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
                live_error(s, rec, why);
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
        phase_reset_source(ps);
        session_source in = {.src = {.path = name, .input = 0, .eager = 1}, .read = live_read, .read_ud = &r,
                             .why = live_why};
        scan_result res;
        st = session_scan_source(sc, ps, &in, s->st, s->job_id, &s->job_conflict, rec, &res);
        if (res.read_error && session_add_error(s, rec) != 0 && !st)
            st = OOMSCAN_ERR_NOMEM;
        if (!st && r.packed)
            st = read_packed(&r, sc, name);
        if (!is_stdin)
            close(r.fd);
        if (!r.rotated || s->cancel || r.broken || res.read_error)
            break;
        live_emit(&r, 1); /* the old file is over: everything in it is complete */
    }
    live_emit(&r, 1);
    free(r.seen);
    free(r.packed);
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
