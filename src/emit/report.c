/* report.c - shared wording of findings for the text report, tickets and JSON titles. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include "emit/report.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/values.h"

/* Append to a buffer that is always terminated; output past `cap` is cut, never overflows. */
static void append(char *buf, size_t cap, const char *fmt, const char *a)
{
    size_t len = strlen(buf);
    if (len + 1 < cap)
        snprintf(buf + len, cap - len, fmt, a);
}

/* Whether a parenthesised part of a pattern's title speaks of the wording matched, not the failure. */
static int about_wording(const char *p, size_t n)
{
    static const char *const words[] = {"wording", "wrapped", "message", " line"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (memmem(p, n, words[i], strlen(words[i])))
            return 1;
    return 0;
}

void report_what(const finding *f, char *buf, size_t cap)
{
    const char *t = f->pattern->title;
    /* a title that names the witness rather than the failure says the class instead */
    if (!t || strstr(t, "summary line") || strstr(t, "failure summary:")) {
        snprintf(buf, cap, "%s", tax_class_human(f->cls));
        if (cap)
            buf[0] = (char)toupper((unsigned char)buf[0]);
        return;
    }
    size_t n = 0;
    for (const char *p = t; *p && n + 1 < cap;) {
        const char *close = *p == ' ' && p[1] == '(' ? strchr(p, ')') : NULL;
        if (close && about_wording(p, (size_t)(close - p))) {
            p = close + 1; /* "(PyTorch caching allocator, 2.1+ wording)": the pattern's, not the failure's */
            continue;
        }
        buf[n++] = *p++;
    }
    if (cap)
        buf[n] = '\0';
}

void report_title(const finding *f, char *buf, size_t cap)
{
    report_what(f, buf, cap);
    if (f->phase != PH_UNKNOWN)
        append(buf, cap, " during %s", tax_phase_human(f->phase));
    if (f->rank[0])
        append(buf, cap, " on rank %s", f->rank);
    else if (f->local_rank[0]) /* single-node torchrun's [default1]:, attempt_0/1/ */
        append(buf, cap, " on local rank %s", f->local_rank);
    else if (f->host[0])
        append(buf, cap, " on %s", f->host);
}

void report_sentence(const finding *f, char *buf, size_t cap)
{
    report_what(f, buf, cap);
    if (f->phase != PH_UNKNOWN)
        append(buf, cap, " during %s", tax_phase_human(f->phase));
    if (f->phase == PH_UNKNOWN)
        append(buf, cap, "%s", " (phase not stated in the log)");
    if (f->first.has_time) {
        char tm[64];
        timefmt_format(&f->first.time, tm, sizeof tm);
        append(buf, cap, " at %s", tm);
    }
    if (f->rank[0])
        append(buf, cap, " on rank %s", f->rank);
    else if (f->local_rank[0])
        append(buf, cap, " on local rank %s", f->local_rank);
    /* a kubectl --prefix line's host is its pod: say so, with the container */
    if (f->host[0] && f->container[0]) {
        append(buf, cap, " (pod %s", f->host);
        append(buf, cap, ", container %s)", f->container);
    } else if (f->host[0])
        append(buf, cap, " (host %s)", f->host);
    if (f->ray_job[0])
        append(buf, cap, " in Ray job %s", f->ray_job);
}

void report_where(const finding *f, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s%s:%llu", f->first.path, f->first.member ? ":" : "", f->first.member ? f->first.member : "",
             (unsigned long long)f->first.line);
}

/* The numbers in human units, in the order the message states them. */
void report_numbers(const finding *f, char *buf, size_t cap)
{
    buf[0] = '\0';
    size_t len = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, f->memory)
    {
        char v[96];
        size_t kl = strlen(it->string);
        if (cJSON_IsNumber(it) && kl > 6 && strcmp(it->string + kl - 6, "_bytes") == 0)
            values_human_bytes(it->valuedouble, v, sizeof v);
        else if (cJSON_IsNumber(it))
            snprintf(v, sizeof v, "%.15g", it->valuedouble);
        else if (cJSON_IsString(it))
            snprintf(v, sizeof v, "%s", it->valuestring);
        else if (cJSON_IsArray(it))
            snprintf(v, sizeof v, "%d entries", cJSON_GetArraySize(it));
        else
            continue;
        int n = snprintf(buf + len, cap - len, "%s%s=%s", len ? ", " : "", it->string, v);
        if (n < 0 || (size_t)n >= cap - len)
            break;
        len += (size_t)n;
    }
}

void report_setting_change(const cJSON *set, char *buf, size_t cap)
{
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(set, "change");
    const cJSON *cur = cJSON_GetObjectItemCaseSensitive(set, "current");
    const cJSON *pro = cJSON_GetObjectItemCaseSensitive(set, "proposed");
    const char *chs = cJSON_IsString(ch) ? ch->valuestring : "";
    if (cJSON_IsString(cur) && cJSON_IsString(pro))
        snprintf(buf, cap, "%s -> %s (%s)", cur->valuestring, pro->valuestring, chs);
    else if (cJSON_IsString(cur) && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(set, "already")))
        snprintf(buf, cap, "%s already (%s)", cur->valuestring, chs);
    else if (cJSON_IsString(cur))
        snprintf(buf, cap, "now %s (%s)", cur->valuestring, chs);
    else
        snprintf(buf, cap, "%s", chs);
}

size_t report_cascade(const story *st, size_t root, report_cascade_row rows[CLS__COUNT])
{
    memset(rows, 0, CLS__COUNT * sizeof *rows);
    size_t rl[CLS__COUNT] = {0}, total = 0;
    /* a root's consequences are in its job: walk that job only, once story_finish has listed it */
    int by_job = st->n_jobs > 0 && st->f[root].job_head >= 0;
    for (long k = by_job ? st->f[root].job_head : 0; by_job ? k >= 0 : (size_t)k < st->n;
         k = by_job ? st->f[k].job_next : k + 1) {
        const finding *g = &st->f[k];
        if (g->is_root || g->joined_into >= 0 || g->caused_by != (long)root)
            continue;
        report_cascade_row *r = &rows[g->cls];
        r->findings++;
        r->lines += g->occurrences;
        total++;
        for (size_t i = 0; i < g->ranks.n && rl[g->cls] + 16 < sizeof r->ranks; i++)
            rl[g->cls] += (size_t)snprintf(r->ranks + rl[g->cls], sizeof r->ranks - rl[g->cls], "%s%s",
                                           rl[g->cls] ? "," : "", g->ranks.items[i]);
    }
    return total;
}

void report_group_by_job(const story *st, const size_t *order, size_t n, size_t *out)
{
    /* a counting sort on the job number: linear in the findings */
    size_t *first = calloc(st->n_jobs + 1, sizeof *first), *rank = malloc((st->n_jobs + 1) * sizeof *rank);
    if (!first || !rank) { /* out of memory: keep the order as it is */
        memcpy(out, order, n * sizeof *out);
        free(first);
        free(rank);
        return;
    }
    size_t seen = 0;
    for (size_t i = 0; i < st->n_jobs; i++)
        rank[i] = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t j = st->f[order[i]].job_no;
        if (rank[j] == (size_t)-1)
            rank[j] = seen++;
        first[rank[j]]++;
    }
    size_t sum = 0;
    for (size_t r = 0; r < seen; r++) {
        size_t c = first[r];
        first[r] = sum;
        sum += c;
    }
    for (size_t i = 0; i < n; i++)
        out[first[rank[st->f[order[i]].job_no]]++] = order[i];
    free(first);
    free(rank);
}
