/* common.c - helpers the dump readers share (common.h). */
#include "dumps/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
                           scan_result *res, char **why, int *nomem)
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

char *dumps_traceback(const cJSON *frames)
{
    int n = cJSON_GetArraySize(frames);
    if (n <= 0)
        return NULL;
    size_t cap = 64 + (size_t)n * 300, len = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    len += (size_t)snprintf(s, cap, "Traceback (most recent call last):\n");
    for (int i = n - 1; i >= 0; i--) {
        const cJSON *f = cJSON_GetArrayItem(frames, i);
        const char *file = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "filename"));
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "name"));
        const cJSON *line = cJSON_GetObjectItemCaseSensitive(f, "line");
        if (!file || !name)
            continue;
        int k = snprintf(s + len, cap - len, "  File \"%.200s\", line %.0f, in %.60s\n", file,
                         cJSON_IsNumber(line) ? line->valuedouble : 0, name);
        if (k < 0 || (size_t)k >= cap - len)
            break;
        len += (size_t)k;
    }
    return s;
}

void dumps_epoch_time(double secs, timefmt *t)
{
    memset(t, 0, sizeof *t);
    time_t tt = (time_t)secs;
    struct tm tm;
    /* Local time, as the job's own logs print theirs: torchelastic writes time.time() into error files
     * but shows it as datetime.fromtimestamp() (local) in its summary, and Python's logging stamps
     * are local too. Stamps carry no zone, so only the same clock orders them (TZ names the job's). */
    if (!localtime_r(&tt, &tm))
        return;
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

