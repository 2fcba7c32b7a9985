/* state.c - --state FILE: what earlier runs read, found and reported, so a re-run over grown logs
 * reads only new bytes and reports only new or changed findings.
 *
 * Continuing exactly: the story found so far is saved as records (record.h) and restored; each plain
 * input is read on from the end of its last complete line; the context a failure there may need (an
 * open traceback, the phase markers) is rebuilt by replaying the last CTX_BYTES before the cut into a
 * scratch story, plus the last progress marker saved. Anything unusual (a rotated, truncated or
 * replaced file, other inputs, another database, a compressed input) means reading everything again;
 * the table of reported ids still keeps findings from being reported twice. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pipeline/state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/jsonnum.h"
#include "base/status.h"
#include "dumps/dumps.h"
#include "emit/safe.h"
#include "input/input.h"
#include "match/config.h"
#include "pipeline/ndjson.h"
#include "pipeline/record.h"
#include "pipeline/session.h"
#include "base/jsonget.h"

#define STATE_SCHEMA "oomscan-state/1"
#define STATE_MAX_BYTES_DEFAULT (256ull << 20) /* a state holds one record per input and finding */
#define STATE_LOCK_WAIT_DEFAULT 600u             /* seconds: longer than any sane scan of one epilog */
#define HEAD_LEN 4096           /* bytes hashed to recognise a file again */
#define CTX_BYTES (256u * 1024u) /* replayed before the cut: longer than any traceback we keep */
#define RD_CHUNK (256u * 1024u)

typedef enum { MODE_NONE, MODE_FRESH, MODE_RESUME } unit_mode;

typedef struct {
    unit_mode mode;
    /* from the state file (MODE_RESUME) and, after the run, for the next one */
    uint64_t dev, ino, size, head_len, head_hash, offset, line, ctx_offset, ctx_line, marker_line;
    int marker;
    int plain; /* read by this module to a line boundary: the next run may continue it */
} state_input;

struct oomscan_state {
    char *path;
    int lockfd;
    char warning[320];
    cJSON *doc;
    rep_table *rep;
    state_input *in;
    size_t n_in;
};

static uint64_t u64_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? jsonnum_u64(v->valuedouble, UINT64_MAX) : 0;
}

static uint64_t hex_of(const cJSON *o, const char *key)
{
    const char *s = json_str(o, key);
    return s ? strtoull(s, NULL, 16) : 0;
}

static void db_ident(const struct oomscan_scan *s, char *buf, size_t cap)
{
    const pdb *p = s->db->p;
    snprintf(buf, cap, "%s/%zu/%zu/%zu/%zu", OOMSCAN_VERSION, p->n_patterns, p->n_markers, p->n_frames, p->n_fw_rules);
}

/* ---- open, lock, load -------------------------------------------------------------------- */

static char *slurp(int fd, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    while (b) {
        ssize_t r = read(fd, b + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(b);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == cap) {
            char *g = realloc(b, cap * 2 + 1);
            if (!g)
                free(b);
            b = g;
            cap *= 2;
        }
    }
    if (b)
        b[n] = '\0';
    *len = n;
    return b;
}

static void load_reported(oomscan_state *st, const cJSON *arr)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        const char *id = json_str(it, "id"), *role = json_str(it, "role"), *cb = json_str(it, "caused_by");
        rep_entry *e = id ? rep_put(st->rep, id) : NULL;
        if (!e)
            continue;
        e->hash = hex_of(it, "hash");
        e->is_root = role && strcmp(role, "root") == 0;
        snprintf(e->caused_by, sizeof e->caused_by, "%s", cb ? cb : "");
        e->occurrences = u64_of(it, "occurrences");
    }
}

/* flock with a deadline: a hung run holding the lock must not block every later epilog for ever.
 * Returns 0, or -1 with errno (EWOULDBLOCK when the wait ran out). */
static int lock_within(int fd, unsigned seconds)
{
    struct timespec start, now, nap = {0, 50 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if (errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9 >= (double)seconds) {
            errno = EWOULDBLOCK;
            return -1;
        }
        nanosleep(&nap, NULL);
    }
}

oomscan_status oomscan_state_open(oomscan_state **out, const char *path, oomscan_diag *diag)
{
    return oomscan_state_open_limited(out, path, NULL, diag);
}

oomscan_status oomscan_state_open_limited(oomscan_state **out, const char *path, const oomscan_limits *lim,
                                          oomscan_diag *diag)
{
    *out = NULL;
    unsigned wait_s = lim && lim->lock_wait_s ? lim->lock_wait_s : STATE_LOCK_WAIT_DEFAULT;
    uint64_t max_bytes = lim && lim->max_state_bytes ? lim->max_state_bytes : STATE_MAX_BYTES_DEFAULT;
    oomscan_state *st = calloc(1, sizeof *st);
    size_t plen = strlen(path);
    char *lock = malloc(plen + 6);
    if (!st || !lock || !(st->path = strdup(path)) || !(st->rep = rep_new())) {
        free(lock);
        oomscan_state_free(st);
        return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    }
    /* A separate lock file: the state itself is replaced by rename, which a lock on it would not survive. */
    snprintf(lock, plen + 6, "%s.lock", path);
    /* O_NOFOLLOW: a symlink planted at FILE.lock would have the open create its target (an epilog runs
     * as root); and a FIFO or device there is no lock either */
    st->lockfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    struct stat lsb;
    int lerr = st->lockfd < 0 ? errno : fstat(st->lockfd, &lsb) != 0 ? errno : !S_ISREG(lsb.st_mode) ? -1 : 0;
    if (lerr) {
        if (lerr == ELOOP)
            diag_set(diag, OOMSCAN_ERR_IO, lock, "%s: cannot create the lock file: it is a symbolic link", lock);
        else if (lerr < 0)
            diag_set(diag, OOMSCAN_ERR_IO, lock, "%s: cannot use the lock file: not a regular file", lock);
        else
            diag_set(diag, OOMSCAN_ERR_IO, lock, "%s: cannot create the lock file: %s", lock, strerror(lerr));
        free(lock);
        oomscan_state_free(st);
        return OOMSCAN_ERR_IO;
    }
    if (lock_within(st->lockfd, wait_s) != 0) {
        oomscan_status code = errno == EWOULDBLOCK ? OOMSCAN_ERR_LIMIT : OOMSCAN_ERR_IO;
        if (code == OOMSCAN_ERR_LIMIT)
            diag_set(diag, code, lock, "%s: another run has held the lock for %u s: giving up (--limit lock-wait=%u)",
                     lock, wait_s, wait_s);
        else
            diag_set(diag, code, lock, "cannot lock: %s", strerror(errno));
        free(lock);
        oomscan_state_free(st);
        return code;
    }
    free(lock);
    /* O_NONBLOCK: a FIFO at the path must not block the open; only a regular file is read. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > max_bytes) {
        if (fd >= 0 && S_ISREG(sb.st_mode))
            snprintf(st->warning, sizeof st->warning,
                     "%s: %llu bytes, more than the limit (--limit state=%llu): starting afresh", path,
                     (unsigned long long)sb.st_size, (unsigned long long)max_bytes);
        else if (fd >= 0)
            snprintf(st->warning, sizeof st->warning, "%s: not a regular file: starting afresh", path);
        else if (errno != ENOENT)
            snprintf(st->warning, sizeof st->warning, "%s: cannot read (%s): starting afresh", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        *out = st;
        return OOMSCAN_OK;
    }
    size_t len = 0;
    char *txt = slurp(fd, &len);
    close(fd);
    cJSON *doc = txt ? cJSON_ParseWithLength(txt, len) : NULL;
    free(txt);
    const char *schema = doc ? json_str(doc, "schema") : NULL;
    if (!doc || !schema || strcmp(schema, STATE_SCHEMA) != 0) {
        snprintf(st->warning, sizeof st->warning, "%s: not an %s state file: starting afresh", path, STATE_SCHEMA);
        cJSON_Delete(doc);
    } else {
        load_reported(st, cJSON_GetObjectItemCaseSensitive(doc, "reported"));
        st->doc = doc;
    }
    *out = st;
    return OOMSCAN_OK;
}

const char *oomscan_state_warning(const oomscan_state *st) { return st && st->warning[0] ? st->warning : NULL; }

void oomscan_state_free(oomscan_state *st)
{
    if (!st)
        return;
    if (st->lockfd > 0)
        close(st->lockfd); /* releases the lock */
    free(st->path);
    cJSON_Delete(st->doc);
    rep_free(st->rep);
    free(st->in);
    free(st);
}

oomscan_status oomscan_scan_use_state(oomscan_scan *s, oomscan_state *st)
{
    s->state = st;
    rep_free(s->rep);
    s->rep = st->rep; /* what earlier runs reported counts as written */
    st->rep = NULL;
    return OOMSCAN_OK;
}

/* ---- files ------------------------------------------------------------------------------- */

static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static uint64_t head_hash(int fd, uint64_t len)
{
    unsigned char b[HEAD_LEN];
    if (len > HEAD_LEN || read_at(fd, b, (size_t)len, 0) != 0)
        return 0;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* The offset just after the last '\n' in [from, size), or `from` when there is none: a line still
 * being written is left for the next run. */
static uint64_t last_line_end(int fd, uint64_t from, uint64_t size)
{
    static const size_t blk = 65536;
    unsigned char *b = malloc(blk);
    uint64_t hi = size, found = from;
    while (b && hi > from) {
        uint64_t lo = hi - from > blk ? hi - blk : from;
        if (read_at(fd, b, (size_t)(hi - lo), lo) != 0)
            break;
        const unsigned char *nl = memrchr(b, '\n', (size_t)(hi - lo));
        if (nl) {
            found = lo + (uint64_t)(nl - b) + 1;
            break;
        }
        hi = lo;
    }
    free(b);
    return found;
}

/* A log this module may read on from an offset: text, and not a crash dump (a kernel log, an error
 * file, ...), which src/dumps/ reads whole: its findings (the kernel's oom-killer block as one, an error
 * file's kind and time) are not those of its lines scanned as a log. */
static int is_plain(int fd, uint64_t size)
{
    unsigned char b[DUMPS_SNIFF_BYTES];
    size_t n = size < sizeof b ? (size_t)size : sizeof b;
    return n == 0 || (read_at(fd, b, n, 0) == 0 && strcmp(input_sniff(b, n < 512 ? n : 512), "text") == 0 &&
                      dumps_sniff(b, n) == DUMP_NONE);
}

/* ---- planning ---------------------------------------------------------------------------- */

static int input_continues(const cJSON *rec, const char *path, state_input *in)
{
    const char *p = json_str(rec, "path");
    if (!p || strcmp(p, path) != 0 || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rec, "plain")))
        return 0;
    in->dev = u64_of(rec, "dev");
    in->ino = u64_of(rec, "ino");
    in->size = u64_of(rec, "size");
    in->head_len = u64_of(rec, "head_len");
    in->head_hash = hex_of(rec, "head_hash");
    in->offset = u64_of(rec, "offset");
    in->line = u64_of(rec, "line");
    in->ctx_offset = u64_of(rec, "ctx_offset");
    in->ctx_line = u64_of(rec, "ctx_line");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(rec, "marker");
    in->marker = cJSON_IsNumber(m) && jsonnum_in(m->valuedouble, 0, INT32_MAX) ? (int)m->valuedouble : -1;
    in->marker_line = u64_of(rec, "marker_line");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat sb;
    /* same file (device, inode), not shorter than what was read, same first bytes: it only grew */
    int ok = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_dev == in->dev &&
             (uint64_t)sb.st_ino == in->ino && (uint64_t)sb.st_size >= in->offset && (uint64_t)sb.st_size >= in->head_len &&
             in->ctx_offset <= in->offset && head_hash(fd, in->head_len) == in->head_hash;
    close(fd);
    return ok;
}

/* The memory series each job printed (match/telemetry.h: settings entries "telemetry/..." of the
 * job's store), kept in the state so that a re-run reading only new bytes continues them: the trend of
 * a failure in those bytes has the points printed before them. Only a run that resumes every input
 * takes them back (a run that reads everything again would count the old points twice). */
static cJSON *telemetry_json(const story *st)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t j = 0; arr && j < st->n_settings; j++) {
        const config_store *cs = st->settings[j];
        for (size_t i = 0; cs && i < cs->n; i++) {
            const config_entry *e = &cs->e[i];
            if (strncmp(e->path, "telemetry/", 10) != 0)
                continue;
            cJSON *o = cJSON_CreateObject();
            if (!o)
                break;
            cJSON_AddStringToObject(o, "job", st->settings_job[j]);
            cJSON_AddStringToObject(o, "series", e->path);
            cJSON_AddStringToObject(o, "points", e->value);
            cJSON_AddStringToObject(o, "file", e->file ? e->file : "");
            cJSON_AddNumberToObject(o, "line", (double)e->line);
            cJSON_AddItemToArray(arr, o);
        }
    }
    return arr;
}

/* The series of arr into story st (those read from input `path` only, when it is not NULL: a resumed
 * input continues its own series). 0, -1 out of memory; entries that are not series are passed over. */
static int restore_telemetry(story *st, const cJSON *arr, const char *path)
{
    const cJSON *o;
    cJSON_ArrayForEach(o, arr)
    {
        const char *job = json_str(o, "job"), *series = json_str(o, "series"), *points = json_str(o, "points");
        const char *file = json_str(o, "file");
        if (!job || !series || !points || strncmp(series, "telemetry/", 10) != 0 || strlen(job) >= 32 ||
            (path && (!file || strcmp(file, path) != 0)))
            continue;
        config_store **cs = story_job_settings(st, job);
        if (!cs || config_put(cs, series, points, job, file ? file : "", u64_of(o, "line")) < 0)
            return -1;
    }
    return 0;
}

oomscan_status state_plan(struct oomscan_scan *s)
{
    oomscan_state *st = s->state;
    free(st->in);
    st->n_in = s->n_units;
    if (!(st->in = calloc(s->n_units + 1, sizeof *st->in)))
        return OOMSCAN_ERR_NOMEM;
    char ident[128];
    db_ident(s, ident, sizeof ident);
    const cJSON *doc = st->doc;
    const cJSON *inputs = doc ? cJSON_GetObjectItemCaseSensitive(doc, "inputs") : NULL;
    const char *dbid = doc ? json_str(doc, "db") : NULL;
    int resume = doc && dbid && strcmp(dbid, ident) == 0 && cJSON_GetArraySize(inputs) == (int)s->n_units &&
                 s->n_units > 0;
    for (size_t i = 0; resume && i < s->n_units; i++)
        resume = input_continues(cJSON_GetArrayItem(inputs, (int)i), s->units[i].path, &st->in[i]);
    if (resume) {
        const cJSON *it;
        char err[200];
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(doc, "story"))
        {
            int rc = record_to_finding(s->db->p, it, 0, s->st, err, sizeof err);
            if (rc == -2)
                return OOMSCAN_ERR_NOMEM;
            if (rc) {
                resume = 0; /* cannot continue a story we cannot rebuild: read everything again */
                break;
            }
        }
        if (resume) {
            record_scan_into(s, cJSON_GetObjectItemCaseSensitive(doc, "scan"));
            if (restore_telemetry(s->st, cJSON_GetObjectItemCaseSensitive(doc, "telemetry"), NULL) != 0)
                return OOMSCAN_ERR_NOMEM;
        } else {
            story_free(s->st);
            if (!(s->st = story_new()))
                return OOMSCAN_ERR_NOMEM;
        }
    }
    for (size_t i = 0; i < s->n_units; i++) {
        state_input *in = &st->in[i];
        if (resume) {
            in->mode = MODE_RESUME;
            continue;
        }
        memset(in, 0, sizeof *in);
        in->marker = -1;
        struct stat sb;
        int fd = strcmp(s->units[i].path, "-") == 0 ? -1 : open(s->units[i].path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && is_plain(fd, (uint64_t)sb.st_size))
            in->mode = MODE_FRESH;
        if (fd >= 0)
            close(fd);
    }
    return OOMSCAN_OK;
}

/* ---- scanning a unit --------------------------------------------------------------------- */

typedef struct {
    int fd;
    uint64_t pos, end;
    char err[160];
} range_rd;

static ssize_t range_read(void *ud, void *buf, size_t cap)
{
    range_rd *r = ud;
    if (r->pos >= r->end)
        return 0;
    size_t n = cap < RD_CHUNK ? cap : RD_CHUNK;
    if (n > r->end - r->pos)
        n = (size_t)(r->end - r->pos);
    ssize_t got;
    while ((got = pread(r->fd, buf, n, (off_t)r->pos)) < 0 && errno == EINTR)
        ;
    if (got < 0) {
        snprintf(r->err, sizeof r->err, "%s", strerror(errno));
        return -1;
    }
    if (got == 0) {
        snprintf(r->err, sizeof r->err, "the file shrank while being read");
        return -1;
    }
    r->pos += (uint64_t)got;
    return got;
}

static const char *range_why(void *ud) { return ((range_rd *)ud)->err; }

/* The line boundary about CTX_BYTES before `end` and its line number (`end_line` lines precede end);
 * `floor` is the earliest point known (the previous context start). */
static void choose_ctx(int fd, uint64_t floor, uint64_t floor_line, uint64_t end, uint64_t end_line, uint64_t *ctx,
                       uint64_t *ctx_line)
{
    *ctx = floor;
    *ctx_line = floor_line;
    if (end < floor + CTX_BYTES)
        return;
    unsigned char *b = malloc(CTX_BYTES);
    if (b && read_at(fd, b, CTX_BYTES, end - CTX_BYTES) == 0) {
        unsigned char *nl = memchr(b, '\n', CTX_BYTES);
        if (nl) {
            size_t from = (size_t)(nl - b) + 1;
            *ctx = end - CTX_BYTES + from;
            *ctx_line = end_line - scan_count_lines(b + from, CTX_BYTES - from);
        }
    }
    free(b);
}

/* long: one input under --state: resume, the context before the cut, the scan, the next offset, sharing the
 * file and the record. */
int state_run_unit(struct oomscan_scan *s, size_t i, scanner *sc, phase_state *ps)
{
    state_input *in = &s->state->in[i];
    scan_unit *u = &s->units[i];
    if (in->mode == MODE_NONE)
        return 0;
    input_record *rec = session_add_record(&u->recs, &u->n_recs, u->path, NULL);
    if (rec && !(rec->container = strdup("text")))
        rec = NULL; /* the record stays counted and is freed with the unit */
    if (!rec) {
        u->status = OOMSCAN_ERR_NOMEM;
        return 1;
    }
    int fd = open(u->path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        rec->status = INPUT_ERROR;
        rec->error = strdup(strerror(errno));
        in->plain = 0;
        if (fd >= 0)
            close(fd);
        return 1;
    }
    uint64_t size = (uint64_t)sb.st_size;
    uint64_t start = in->mode == MODE_RESUME ? in->offset : 0;
    uint64_t line0 = in->mode == MODE_RESUME ? in->line : 0;
    uint64_t end = last_line_end(fd, start, size);
    scan_source src = {.path = u->path, .input = i};
    scan_source_from_name(&src);
    session_note_job(u->job_id, &u->job_conflict, src.job_id);
    uint32_t before[FW__COUNT] = {0};
    scan_result res = {0}, ctx_res = {0};
    range_rd rd = {.fd = fd};
    oomscan_status st = OOMSCAN_OK;
    if (in->mode == MODE_RESUME && end > start) {
        /* the context: the marker the log was in, then the bytes before the cut, into a scratch story */
        if (in->marker >= 0 && (size_t)in->marker < s->db->p->n_markers)
            phase_marker(ps, (size_t)in->marker, in->marker_line);
        story *scratch = story_new();
        scan_source csrc = src;
        csrc.base_offset = in->ctx_offset;
        csrc.base_line = in->ctx_line;
        csrc.keep_time = 1; /* its last stamp is the resumed scan's time0 */
        rd.pos = in->ctx_offset;
        rd.end = start;
        st = scratch ? scanner_run(sc, range_read, &rd, &csrc, ps, story_sink(scratch), &ctx_res, NULL, NULL) : OOMSCAN_ERR_NOMEM;
        story_free(scratch);
        memcpy(before, phase_framework_votes(ps), sizeof before);
    }
    if (!st && in->mode == MODE_RESUME && end > start && s->state->doc &&
        restore_telemetry(u->st, cJSON_GetObjectItemCaseSensitive(s->state->doc, "telemetry"), u->path) != 0)
        st = OOMSCAN_ERR_NOMEM; /* the input's own series, continued by its new lines */
    if (!st && end > start) {
        src.base_offset = start;
        src.base_line = line0;
        src.time0 = ctx_res.have_time ? &ctx_res.last_time : NULL;
        src.time0_end = ctx_res.last_time_end;
        rd.pos = start;
        rd.end = end;
        rd.err[0] = '\0';
        session_source nsrc = {.src = src, .read = range_read, .read_ud = &rd, .why = range_why};
        st = session_scan_source(sc, ps, &nsrc, u->st, u->job_id, &u->job_conflict, rec, &res);
    }
    const uint32_t *v = phase_framework_votes(ps);
    for (int k = 0; k < FW__COUNT; k++)
        u->votes[k] = v[k] - before[k]; /* votes of the new bytes only: the old ones are in the state */
    if (ctx_res.read_error && rec->status == INPUT_OK) {
        rec->status = INPUT_PARTIAL; /* the context before the cut could not be read again */
        rec->error = strdup(rd.err[0] ? rd.err : "read error");
    }
    if (st)
        u->status = st;
    /* where the next run continues */
    uint64_t new_line = line0 + res.lines;
    in->plain = !res.read_error && !ctx_res.read_error && !st;
    in->dev = (uint64_t)sb.st_dev;
    in->ino = (uint64_t)sb.st_ino;
    in->size = size;
    in->head_len = size < HEAD_LEN ? size : HEAD_LEN;
    in->head_hash = head_hash(fd, in->head_len);
    if (end > start) {
        uint64_t floor = in->mode == MODE_RESUME ? in->ctx_offset : 0;
        uint64_t floor_line = in->mode == MODE_RESUME ? in->ctx_line : 0;
        choose_ctx(fd, floor, floor_line, end, new_line, &in->ctx_offset, &in->ctx_line);
        uint64_t ml;
        int m = phase_last_marker(ps, &ml);
        if (m >= 0 || in->mode != MODE_RESUME) {
            in->marker = m;
            in->marker_line = ml;
        }
    }
    in->offset = end;
    in->line = new_line;
    close(fd);
    return 1;
}

/* ---- saving ------------------------------------------------------------------------------ */

static void add_hex(cJSON *o, const char *key, uint64_t v)
{
    char b[24];
    snprintf(b, sizeof b, "%016llx", (unsigned long long)v);
    cJSON_AddStringToObject(o, key, b);
}

static cJSON *state_json(oomscan_state *st, oomscan_scan *s)
{
    session_finish(s);
    cJSON *doc = cJSON_CreateObject();
    if (!doc)
        return NULL;
    char ident[128];
    db_ident(s, ident, sizeof ident);
    cJSON_AddStringToObject(doc, "schema", STATE_SCHEMA);
    cJSON_AddStringToObject(doc, "db", ident);
    cJSON *inputs = cJSON_AddArrayToObject(doc, "inputs");
    for (size_t i = 0; inputs && i < s->n_units && i < st->n_in; i++) {
        const state_input *in = &st->in[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "path", s->units[i].path);
        cJSON_AddBoolToObject(o, "plain", in->mode != MODE_NONE && in->plain);
        cJSON_AddNumberToObject(o, "dev", (double)in->dev);
        cJSON_AddNumberToObject(o, "ino", (double)in->ino);
        cJSON_AddNumberToObject(o, "size", (double)in->size);
        cJSON_AddNumberToObject(o, "head_len", (double)in->head_len);
        add_hex(o, "head_hash", in->head_hash);
        cJSON_AddNumberToObject(o, "offset", (double)in->offset);
        cJSON_AddNumberToObject(o, "line", (double)in->line);
        cJSON_AddNumberToObject(o, "ctx_offset", (double)in->ctx_offset);
        cJSON_AddNumberToObject(o, "ctx_line", (double)in->ctx_line);
        cJSON_AddNumberToObject(o, "marker", in->marker);
        cJSON_AddNumberToObject(o, "marker_line", (double)in->marker_line);
        cJSON_AddItemToArray(inputs, o);
    }
    cJSON_AddItemToObject(doc, "scan", record_scan_json(s));
    cJSON_AddItemToObject(doc, "telemetry", telemetry_json(s->st));
    cJSON *story_arr = cJSON_AddArrayToObject(doc, "story");
    for (size_t i = 0; story_arr && i < s->st->n; i++)
        cJSON_AddItemToArray(story_arr, record_json(s, i, 0)); /* merge needs no advice */
    cJSON *rep = cJSON_AddArrayToObject(doc, "reported");
    for (size_t i = 0; rep && i < rep_count(s->rep); i++) {
        const rep_entry *e = rep_at(s->rep, i);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", e->id);
        add_hex(o, "hash", e->hash);
        cJSON_AddStringToObject(o, "role", e->is_root ? "root" : "consequence");
        if (e->caused_by[0])
            cJSON_AddStringToObject(o, "caused_by", e->caused_by);
        cJSON_AddNumberToObject(o, "occurrences", (double)e->occurrences);
        cJSON_AddItemToArray(rep, o);
    }
    (void)safe_json(doc); /* input paths may hold any bytes */
    return doc;
}

oomscan_status oomscan_state_save(oomscan_state *st, oomscan_scan *s, oomscan_diag *diag)
{
    cJSON *doc = state_json(st, s);
    char *txt = doc ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    size_t plen = strlen(st->path);
    char *tmp = malloc(plen + 16);
    if (!txt || !tmp) {
        free(txt);
        free(tmp);
        return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    }
    /* beside the target, so that rename() replaces it in one step */
    snprintf(tmp, plen + 16, "%s.tmpXXXXXX", st->path);
    int fd = mkstemp(tmp);
    size_t len = strlen(txt), done = 0;
    int bad = fd < 0;
    while (!bad && done < len) {
        ssize_t w = write(fd, txt + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            bad = 1;
        else
            done += (size_t)w;
    }
    if (!bad && (write(fd, "\n", 1) != 1 || fsync(fd) != 0))
        bad = 1;
    int err = errno;
    if (fd >= 0 && close(fd) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (!bad && rename(tmp, st->path) != 0) {
        bad = 1;
        err = errno;
    }
    if (bad && fd >= 0)
        unlink(tmp);
    free(tmp);
    free(txt);
    if (bad)
        return diag_set(diag, OOMSCAN_ERR_IO, st->path, "cannot write the state: %s", strerror(err));
    return OOMSCAN_OK;
}
