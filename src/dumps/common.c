/* common.c - helpers the dump readers share (common.h). */
#include "dumps/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>

#include "base/jsonnum.h"
#include "match/lines.h"

char *dumps_strf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

unsigned char *dumps_slurp(const unsigned char *head, size_t nhead, scan_read_fn rd, void *ud, size_t cap, size_t *n,
                           scan_result *res, char **why, int *nomem, int *cut)
{
    size_t have = nhead, size = nhead + 65536;
    unsigned char *buf = malloc(size + 1);
    if (!buf) {
        *nomem = 1;
        return NULL;
    }
    memcpy(buf, head, nhead);
    for (;;) {
        if (have == size) {
            if (size >= cap && cut) {
                *cut = 1;
                break;
            }
            if (size >= cap) {
                free(buf);
                *why = dumps_strf("dump larger than the %zu MiB this reader accepts", cap >> 20);
                return NULL;
            }
            size_t grow = size * 2 > cap ? cap : size * 2;
            unsigned char *g = realloc(buf, grow + 1);
            if (!g) {
                free(buf);
                *nomem = 1;
                return NULL;
            }
            buf = g;
            size = grow;
        }
        ssize_t r = rd(ud, buf + have, size - have);
        if (r == SCAN_READ_IDLE)
            continue;
        if (r < 0) {
            res->read_error = 1;
            res->bytes = have;
            free(buf);
            return NULL;
        }
        if (r == 0)
            break;
        have += (size_t)r;
    }
    buf[have] = 0;
    res->bytes = have;
    res->lines = scan_count_lines(buf, have);
    *n = have;
    return buf;
}

oomscan_status dumps_text_scan(scanner *sc, phase_state *ps, const scan_source *src, const char *text, size_t n,
                               story *tmp)
{
    scan_result r;
    return scanner_run_text(sc, text, n, src, ps, story_sink(tmp), &r);
}

void dumps_tag(story *tmp, const char *kind, const timefmt *time, const char *rank, const char *local_rank,
               const char *host, uint64_t line)
{
    for (size_t i = 0; i < tmp->n; i++) {
        finding *f = &tmp->f[i];
        story_loc *locs[2] = {&f->first, &f->last};
        for (int k = 0; k < 2; k++) {
            locs[k]->kind = kind;
            if (line) {
                locs[k]->line = line;
                locs[k]->offset = 0;
            }
            if (time && !locs[k]->has_time) {
                locs[k]->has_time = 1;
                locs[k]->time = *time;
            }
        }
        /* the windows too: a dump's text was scanned as lines of its own (an error file's call stack),
         * whose numbers are not lines of the file */
        for (size_t k = 0; k < f->n_windows; k++) {
            f->windows[k].kind = kind;
            if (line)
                f->windows[k].line = line;
        }
        if (rank && rank[0] && !f->rank[0])
            snprintf(f->rank, sizeof f->rank, "%s", rank);
        if (local_rank && local_rank[0] && !f->local_rank[0])
            snprintf(f->local_rank, sizeof f->local_rank, "%s", local_rank);
        if (host && host[0] && !f->host[0])
            snprintf(f->host, sizeof f->host, "%s", host);
    }
}

/* ---- checked reads ------------------------------------------------------------------------------ */

const cJSON *dumps_get(const cJSON *o, const char *key)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

const cJSON *dumps_obj(const cJSON *o, const char *key)
{
    const cJSON *v = dumps_get(o, key);
    return cJSON_IsObject(v) ? v : NULL;
}

const cJSON *dumps_arr(const cJSON *o, const char *key)
{
    const cJSON *v = dumps_get(o, key);
    return cJSON_IsArray(v) ? v : NULL;
}

const char *dumps_str(const cJSON *o, const char *key)
{
    const cJSON *v = dumps_get(o, key);
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : NULL;
}

const char *dumps_item_str(const cJSON *a, int i)
{
    if (!cJSON_IsArray(a) || i < 0)
        return NULL;
    const cJSON *v = a->child;
    while (v && i-- > 0)
        v = v->next;
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : NULL;
}

int dumps_num(const cJSON *v, double *out)
{
    double d;
    if (cJSON_IsNumber(v)) {
        d = v->valuedouble;
    } else if (cJSON_IsString(v) && v->valuestring && v->valuestring[0]) {
        char *e;
        d = strtod(v->valuestring, &e);
        if (*e)
            return 0;
    } else {
        return 0;
    }
    if (!isfinite(d))
        return 0;
    *out = d;
    return 1;
}

double dumps_numk(const cJSON *o, const char *key, double dflt)
{
    double d;
    return dumps_num(dumps_get(o, key), &d) ? d : dflt;
}

int dumps_int(const cJSON *v, int64_t lo, int64_t hi, int64_t *out)
{
    double d;
    if (!dumps_num(v, &d) || !jsonnum_in(d, (double)lo, (double)hi))
        return 0;
    *out = (int64_t)d;
    return 1;
}

/* Frames written into a traceback: the innermost and the outermost TB_KEEP each (the phase rules read
 * the innermost mapped frame; the outer ones name the loop), so a stack of 100,000 frames costs what
 * 2 * TB_KEEP do. */
#define TB_KEEP 64

char *dumps_traceback(const cJSON *frames)
{
    if (!cJSON_IsArray(frames) || !frames->child)
        return NULL;
    /* one walk into an array: cJSON_GetArrayItem walks from the start each time (quadratic) */
    size_t n = 0, cap_f = 0;
    const cJSON **v = NULL;
    for (const cJSON *f = frames->child; f; f = f->next) {
        if (n == cap_f) {
            size_t c = cap_f ? cap_f * 2 : 64;
            const cJSON **g = realloc(v, c * sizeof *g);
            if (!g) {
                free(v);
                return NULL;
            }
            v = g;
            cap_f = c;
        }
        v[n++] = f;
    }
    size_t cap = 64 + (n < 2 * TB_KEEP ? n : 2 * TB_KEEP) * 300, len = 0;
    char *s = malloc(cap);
    if (!s) {
        free(v);
        return NULL;
    }
    len += (size_t)snprintf(s, cap, "Traceback (most recent call last):\n");
    for (size_t k = n; k-- > 0;) {
        if (k >= TB_KEEP && k < n - TB_KEEP && n > 2 * TB_KEEP)
            continue;
        const cJSON *f = v[k];
        const char *file = dumps_str(f, "filename");
        const char *name = dumps_str(f, "name");
        if (!file || !name)
            continue;
        int64_t line = 0;
        dumps_int(dumps_get(f, "line"), 0, INT32_MAX, &line);
        int w = snprintf(s + len, cap - len, "  File \"%.200s\", line %lld, in %.60s\n", file, (long long)line, name);
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
    }
    free(v);
    return s;
}

int dumps_epoch_time(double secs, timefmt *t)
{
    memset(t, 0, sizeof *t);
    /* 253402300799: 9999-12-31T23:59:59Z; a cast of a value outside time_t is undefined */
    if (!(secs >= 0 && secs < 253402300800.0))
        return -1;
    time_t tt = (time_t)secs;
    struct tm tm;
    /* Local time, as the job's own logs print theirs: torchelastic writes time.time() into error files
     * but shows it as datetime.fromtimestamp() (local) in its summary, and Python's logging stamps
     * are local too. Stamps carry no zone, so only the same clock orders them (TZ names the job's). */
    if (!localtime_r(&tt, &tm))
        return -1;
    t->has_date = t->has_clock = 1;
    t->year = tm.tm_year + 1900;
    t->month = tm.tm_mon + 1;
    t->day = tm.tm_mday;
    t->hour = tm.tm_hour;
    t->min = tm.tm_min;
    t->sec = tm.tm_sec + (secs - (double)tt);
    /* the same ordering key timefmt_parse gives an ISO stamp of this time */
    char iso[64];
    snprintf(iso, sizeof iso, "%04d-%02d-%02dT%02d:%02d:%02d", t->year, t->month, t->day, t->hour, t->min, tm.tm_sec);
    timefmt p;
    if (timefmt_parse(iso, strlen(iso), &p) == 0)
        *t = p;
    return 0;
}

int dumps_finish_scan(const pdb *db, const char *text, const char *path, const char *member, size_t input,
                      const char *kind, const char *rank, const timefmt *time, story *st, long *idx)
{
    *idx = -1;
    scanner *sc = scanner_new(db);
    phase_state *ps = phase_new(db);
    story *tmp = story_new();
    int rc = -1;
    if (sc && ps && tmp) {
        scan_source src = {.path = path, .member = member, .input = input};
        if (dumps_text_scan(sc, ps, &src, text, strlen(text), tmp) == OOMSCAN_OK) {
            dumps_tag(tmp, kind, time, rank, NULL, NULL, 1);
            char *group = tmp->n ? strdup(tmp->f[0].group) : NULL;
            char job[32], ray[48];
            snprintf(job, sizeof job, "%s", tmp->n ? tmp->f[0].job_id : "");
            snprintf(ray, sizeof ray, "%s", tmp->n ? tmp->f[0].ray_job : "");
            if (story_merge(st, tmp) == 0) {
                rc = 0;
                /* the finding of this job, or of this run: another run's same line is not this dump's */
                if (group)
                    *idx = story_find(st, group, job, ray, path, member);
            }
            free(group);
        }
    }
    story_free(tmp);
    phase_free(ps);
    scanner_free(sc);
    return rc;
}


/* ---- findings stated as data -------------------------------------------------------------------- */

struct dumps_prober {
    const pdb *db;
    scanner *sc;
    phase_state *ps;
};

dumps_prober *dumps_prober_new(const pdb *db)
{
    dumps_prober *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->db = db;
    p->sc = scanner_new(db);
    p->ps = phase_new(db);
    if (!p->sc || !p->ps) {
        dumps_prober_free(p);
        return NULL;
    }
    return p;
}

void dumps_prober_free(dumps_prober *p)
{
    if (!p)
        return;
    scanner_free(p->sc);
    phase_free(p->ps);
    free(p);
}

int dumps_put_value(cJSON *obj, const char *key, const char *s)
{
    size_t k = 0;
    while (s[k] >= '0' && s[k] <= '9')
        k++;
    cJSON *v = k > 0 && k <= 15 && !s[k] ? cJSON_CreateNumber(strtod(s, NULL)) : cJSON_CreateString(s);
    if (!v || !cJSON_AddItemToObject(obj, key, v)) {
        cJSON_Delete(v);
        return -1;
    }
    return 0;
}

int dumps_state_finding(dumps_prober *p, const dumps_stated *d, story *st, long *idx)
{
    *idx = -1;
    cJSON *values = d->values;
    char *probe = dumps_strf("%s%s\n", d->traceback ? d->traceback : "", d->probe);
    story *tmp = story_new(), *out = story_new();
    int rc = -1;
    if (!probe || !tmp || !out || !values)
        goto done;
    phase_reset_source(p->ps);
    scan_source src = {.path = d->path, .member = d->member, .input = d->input};
    if (dumps_text_scan(p->sc, p->ps, &src, probe, strlen(probe), tmp) != OOMSCAN_OK)
        goto done;
    rc = 0;
    if (tmp->n == 0)
        goto done; /* the probe is the pattern's own sample: only a broken database gets here */
    const finding *pf = &tmp->f[tmp->n - 1];
    /* what the scanner keeps of a line: valid UTF-8 without control characters (names come from the dump) */
    size_t len = strlen(d->text);
    char *clean = malloc(len + 5), match[256]; /* lines_sanitize keeps 4 bytes spare */
    if (!clean) {
        rc = -1;
        goto done;
    }
    size_t clen = lines_sanitize(d->text, len, clean, len + 5);
    size_t mlen = lines_sanitize(d->text, len, match, sizeof match);
    story_event ev = {
        .pattern = pf->pattern,
        .phase = pf->phase,
        .phase_weak = pf->phase_weak,
        .phase_evidence = pf->phase_evidence,
        .framework = pf->framework,
        .match = match,
        .match_len = mlen,
        .evidence = clean,
        .evidence_len = clen,
        .memory = values,
        .input = d->input,
        .path = d->path,
        .member = d->member,
        .line = 1,
        .time = d->time,
        .rank = "", /* dumps_tag names it, and leaves the ranks list as a dump's finding has it */
        .local_rank = "",
        .pid = "",
        .host = "",
        .job_id = pf->job_id,
        .kind = d->kind,
        .merge_into = -1,
    };
    values = NULL; /* story_add consumes it */
    long k = story_add(out, &ev);
    free(clean);
    if (k < 0) {
        rc = out->dropped ? 0 : -1;
        goto done;
    }
    dumps_tag(out, d->kind, d->time, d->rank, NULL, NULL, 1);
    char *group = strdup(out->f[0].group);
    char job[32];
    snprintf(job, sizeof job, "%s", out->f[0].job_id);
    if (!group || story_merge(st, out) != 0) {
        free(group);
        rc = -1;
        goto done;
    }
    /* the finding merged into: the newest with its group and job (story_merge appends or merges) */
    for (size_t i = st->n; i-- > 0;)
        if (strcmp(st->f[i].group, group) == 0 && strcmp(st->f[i].job_id, job) == 0) {
            *idx = (long)i;
            break;
        }
    free(group);
done:
    cJSON_Delete(values);
    free(probe);
    story_free(tmp);
    story_free(out);
    return rc;
}
