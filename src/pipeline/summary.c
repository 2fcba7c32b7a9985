/* summary.c - the fleet view over oomscan's NDJSON output (include/oomscan_summary.h).
 *
 * Records are kept in one array and counted by sorting it, not by hashing: the output must be in a
 * stable order anyway, distinct-job counts fall out of runs of equal keys, and n log n over the
 * findings of a week of jobs is far below the cost of reading them. */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/sink.h"
#include "base/status.h"
#include "oomscan_summary.h"

typedef struct {
    char *job, *id, *cls, *phase, *framework;
    char *when; /* ISO date-time, "" when unknown */
    int root;
    long long occurrences;
    size_t seq; /* order added: the later record of a finding replaces the earlier */
} rec;

struct oomscan_summary {
    rec *v;
    size_t n, cap, seq, bad;
    /* inputs that were not read (status error) or read in part, from NDJSON's input records and a
     * document's inputs[] (issue 33: a spool alone tells what could not be scanned); the jobs of the
     * unread ones, to count the jobs with nothing found where something was not read */
    size_t inputs_error, inputs_partial;
    char **unread_jobs;
    size_t n_unread, cap_unread;
};

oomscan_status oomscan_summary_new(oomscan_summary **out, oomscan_diag *diag)
{
    *out = calloc(1, sizeof **out);
    return *out ? OOMSCAN_OK : diag_set(diag, OOMSCAN_ERR_NOMEM, "summary", "out of memory");
}

static void rec_free(rec *r)
{
    free(r->job);
    free(r->id);
    free(r->cls);
    free(r->phase);
    free(r->framework);
    free(r->when);
}

void oomscan_summary_free(oomscan_summary *sum)
{
    if (!sum)
        return;
    for (size_t i = 0; i < sum->n; i++)
        rec_free(&sum->v[i]);
    free(sum->v);
    for (size_t i = 0; i < sum->n_unread; i++)
        free(sum->unread_jobs[i]);
    free(sum->unread_jobs);
    free(sum);
}

size_t oomscan_summary_bad_lines(const oomscan_summary *sum) { return sum ? sum->bad : 0; }

static const char *str_or(const cJSON *o, const char *key, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : dflt;
}

/* The job of a record: `job`, `context.job_id` (a string or, from older writers, a number), the
 * epilog's spool name `<job>.<node>.ndjson`, or the document's name. */
static char *record_job(const cJSON *o, const char *name)
{
    const char *j = str_or(o, "job", NULL);
    if (j)
        return strdup(j);
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(o, "context");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(ctx, "job_id");
    if (cJSON_IsString(id) && id->valuestring[0])
        return strdup(id->valuestring);
    if (cJSON_IsNumber(id) && id->valuedouble >= 0 && id->valuedouble < 9e15) {
        char b[32];
        snprintf(b, sizeof b, "%.0f", id->valuedouble);
        return strdup(b);
    }
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    size_t digits = strspn(base, "0123456789_");
    const char *dot2 = digits ? strchr(base + digits + 1, '.') : NULL;
    if (digits && base[digits] == '.' && dot2 && strcmp(dot2, ".ndjson") == 0)
        return strndup(base, digits);
    return strdup(name);
}

/* A full date-time the finding states (context.time with a year), else the document's mtime. */
static char *record_when(const cJSON *o, time_t mtime)
{
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(o, "context");
    const char *t = str_or(ctx, "time", NULL);
    if (t && strlen(t) >= 10 && t[4] == '-' && t[7] == '-')
        return strdup(t);
    char b[32] = "";
    struct tm tm;
    if (mtime > 0 && gmtime_r(&mtime, &tm))
        strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return strdup(b);
}

/* The fleet fingerprint: the `id` the finding would have in a scan that knows no job, i.e. FNV-1a 64
 * over "<class>|<group>|" (docs/output.md: the id hashes "<class>|<pattern>|<phase>|<masked>|<job>"
 * and NDJSON's `group` is its middle). One failure then has one fingerprint across all jobs. Records
 * without `group` (the JSON document form) keep their own id. */
static char *fleet_id(const cJSON *o, const char *cls, const char *id)
{
    const char *group = str_or(o, "group", NULL);
    if (!group)
        return strdup(id);
    uint64_t h = 0xcbf29ce484222325ULL;
    const char *parts[] = {cls, "|", group, "|"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++)
            h = (h ^ *p) * 0x100000001b3ULL;
    char b[17];
    snprintf(b, sizeof b, "%016llx", (unsigned long long)h);
    return strdup(b);
}

static oomscan_status add_finding(oomscan_summary *sum, const cJSON *o, const char *name, time_t mtime,
                                  oomscan_diag *diag);

/* An input that was not read cleanly (an NDJSON input record, or a document's inputs[] entry): counted,
 * and an unread one's job kept. A clean input ("ok") counts nothing. */
static oomscan_status add_input(oomscan_summary *sum, const cJSON *in, const char *job_of, const char *name,
                                oomscan_diag *diag)
{
    const char *status = str_or(in, "status", "");
    if (!strcmp(status, "partial")) {
        sum->inputs_partial++;
        return OOMSCAN_OK;
    }
    if (strcmp(status, "error") != 0)
        return OOMSCAN_OK;
    sum->inputs_error++;
    if (sum->n_unread == sum->cap_unread) {
        size_t cap = sum->cap_unread ? sum->cap_unread * 2 : 16;
        char **v = realloc(sum->unread_jobs, cap * sizeof *v);
        if (!v)
            return diag_set(diag, OOMSCAN_ERR_NOMEM, name, "out of memory");
        sum->unread_jobs = v;
        sum->cap_unread = cap;
    }
    char *job = job_of ? strdup(job_of) : record_job(in, name);
    if (!job)
        return diag_set(diag, OOMSCAN_ERR_NOMEM, name, "out of memory");
    sum->unread_jobs[sum->n_unread++] = job;
    return OOMSCAN_OK;
}

/* One parsed record: a finding (NDJSON), or a whole JSON document whose findings are added. */
static oomscan_status add_record(oomscan_summary *sum, const cJSON *o, const char *name, time_t mtime,
                                 oomscan_diag *diag)
{
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(o, "findings");
    if (!strcmp(str_or(o, "type", ""), "input"))
        return add_input(sum, o, NULL, name, diag);
    if (cJSON_IsArray(all) && cJSON_GetObjectItemCaseSensitive(o, "schema")) {
        const cJSON *f, *in;
        /* a document's inputs name no job: the job its findings agree on, else the document's name */
        const cJSON *first = cJSON_GetArrayItem(all, 0);
        char *doc_job = first ? record_job(first, name) : record_job(o, name);
        cJSON_ArrayForEach(in, cJSON_GetObjectItemCaseSensitive(o, "inputs"))
        {
            oomscan_status st = add_input(sum, in, doc_job, name, diag);
            if (st != OOMSCAN_OK) {
                free(doc_job);
                return st;
            }
        }
        free(doc_job);
        cJSON_ArrayForEach(f, all)
        {
            oomscan_status st = add_finding(sum, f, name, mtime, diag);
            if (st != OOMSCAN_OK)
                return st;
        }
        return OOMSCAN_OK;
    }
    return add_finding(sum, o, name, mtime, diag);
}

static oomscan_status add_finding(oomscan_summary *sum, const cJSON *o, const char *name, time_t mtime,
                                  oomscan_diag *diag)
{
    const char *id = str_or(o, "id", NULL), *cls = str_or(o, "class", NULL);
    if (!id || !cls)
        return OOMSCAN_OK; /* not a finding (an input record, a run header, ...) */
    if (GROW(sum->v, sum->n, sum->cap, 256))
        return diag_set(diag, OOMSCAN_ERR_NOMEM, name, "out of memory");
    const cJSON *occ = cJSON_GetObjectItemCaseSensitive(o, "occurrences");
    rec r = {
        .job = record_job(o, name),
        .id = fleet_id(o, cls, id),
        .cls = strdup(cls),
        .phase = strdup(str_or(o, "phase", "unknown")),
        .framework = strdup(str_or(o, "framework", "unknown")),
        .when = record_when(o, mtime),
        .root = strcmp(str_or(o, "role", "root"), "root") == 0,
        .occurrences = cJSON_IsNumber(occ) && occ->valuedouble >= 1 && occ->valuedouble < 9e15
                           ? (long long)occ->valuedouble
                           : 1,
        .seq = sum->seq++,
    };
    if (!r.job || !r.id || !r.cls || !r.phase || !r.framework || !r.when) {
        rec_free(&r);
        return diag_set(diag, OOMSCAN_ERR_NOMEM, name, "out of memory");
    }
    sum->v[sum->n++] = r;
    return OOMSCAN_OK;
}

oomscan_status oomscan_summary_add_ndjson(oomscan_summary *sum, const char *name, const char *data, size_t len,
                                          time_t mtime, oomscan_diag *diag)
{
    oomscan_status st = OOMSCAN_OK;
    size_t lineno = 0, first_bad = 0;
    /* `--format json` output, pretty-printed or not, is one document: take it whole */
    cJSON *whole = cJSON_ParseWithLength(data, len);
    if (cJSON_IsObject(whole) && cJSON_GetObjectItemCaseSensitive(whole, "findings")) {
        st = add_record(sum, whole, name, mtime, diag);
        cJSON_Delete(whole);
        return st;
    }
    cJSON_Delete(whole);
    for (size_t at = 0; at < len && st == OOMSCAN_OK;) {
        const char *nl = memchr(data + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - data) : len;
        lineno++;
        size_t a = at;
        while (a < end && (data[a] == ' ' || data[a] == '\t' || data[a] == '\r'))
            a++;
        if (a < end) {
            cJSON *o = cJSON_ParseWithLength(data + a, end - a);
            if (cJSON_IsObject(o))
                st = add_record(sum, o, name, mtime, diag);
            else if (sum->bad++, !first_bad)
                first_bad = lineno;
            cJSON_Delete(o);
        }
        at = end + 1;
    }
    if (st == OOMSCAN_OK && first_bad)
        return diag_set(diag, OOMSCAN_ERR_FORMAT, name, "line %zu is not an oomscan NDJSON record (skipped)",
                        first_bad);
    return st;
}

/* ---- counting ------------------------------------------------------------------------------ */

static int cmp_str(const char *a, const char *b) { return strcmp(a, b); }

static int by_job_id_seq(const void *x, const void *y)
{
    const rec *a = x, *b = y;
    int c = cmp_str(a->job, b->job);
    if (!c)
        c = cmp_str(a->id, b->id);
    return c ? c : (a->seq > b->seq) - (a->seq < b->seq);
}

static int by_group_job(const void *x, const void *y)
{
    const rec *a = *(rec *const *)x, *b = *(rec *const *)y;
    int c = cmp_str(a->cls, b->cls);
    if (!c)
        c = cmp_str(a->phase, b->phase);
    if (!c)
        c = cmp_str(a->framework, b->framework);
    return c ? c : cmp_str(a->job, b->job);
}

static int by_id_job(const void *x, const void *y)
{
    const rec *a = *(rec *const *)x, *b = *(rec *const *)y;
    int c = cmp_str(a->id, b->id);
    return c ? c : cmp_str(a->job, b->job);
}

typedef struct {
    const rec *first; /* carries class, phase, framework, id */
    size_t jobs, findings;
    long long occurrences;
    const char *seen_first, *seen_last;
} tally;

static int by_jobs_desc(const void *x, const void *y)
{
    const tally *a = x, *b = y;
    if (a->jobs != b->jobs)
        return a->jobs < b->jobs ? 1 : -1;
    if (a->findings != b->findings)
        return a->findings < b->findings ? 1 : -1;
    return 0; /* qsort is not stable: ties are broken by the caller's secondary pass (see tally_runs) */
}

/* Runs of equal `same` keys in `p[0..n)` (sorted by that key, then by job) become tallies: distinct
 * jobs, records, occurrences, earliest and latest date. Returns the number written to `out`. */
static size_t tally_runs(rec **p, size_t n, int (*same)(const rec *, const rec *), tally *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        tally t = {.first = p[i], .seen_first = "", .seen_last = ""};
        size_t j = i;
        for (; j < n && same(p[i], p[j]); j++) {
            if (j == i || strcmp(p[j]->job, p[j - 1]->job) != 0)
                t.jobs++;
            t.findings++;
            t.occurrences += p[j]->occurrences;
            const char *w = p[j]->when;
            if (w[0] && (!t.seen_first[0] || strcmp(w, t.seen_first) < 0))
                t.seen_first = w;
            if (w[0] && strcmp(w, t.seen_last) > 0)
                t.seen_last = w;
        }
        out[k++] = t;
        i = j;
    }
    /* most jobs first; equal counts keep the key order they were found in (merge of two stable
     * orders: insertion sort over the few ties is enough and keeps the output deterministic) */
    for (size_t i = 1; i < k; i++) {
        tally x = out[i];
        size_t j = i;
        while (j > 0 && by_jobs_desc(&out[j - 1], &x) > 0) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = x;
    }
    return k;
}

static int same_group(const rec *a, const rec *b)
{
    return !strcmp(a->cls, b->cls) && !strcmp(a->phase, b->phase) && !strcmp(a->framework, b->framework);
}

static int same_id(const rec *a, const rec *b) { return !strcmp(a->id, b->id); }

/* ---- writing ------------------------------------------------------------------------------- */

typedef sink out_t;
#define put(o, ...) sink_printf((o), __VA_ARGS__) /* base/sink.h */

static int by_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Jobs with an unread input and no finding: what an epilog pointed at the wrong folder leaves. The
 * records are sorted by job already (oomscan_summary_write). */
static size_t jobs_not_scanned(oomscan_summary *sum)
{
    if (!sum->n_unread)
        return 0; /* qsort takes no NULL array, even empty */
    qsort(sum->unread_jobs, sum->n_unread, sizeof *sum->unread_jobs, by_str);
    size_t n = 0;
    for (size_t i = 0; i < sum->n_unread; i++) {
        if (i && !strcmp(sum->unread_jobs[i], sum->unread_jobs[i - 1]))
            continue;
        int found = 0;
        for (size_t lo = 0, hi = sum->n; lo < hi && !found;) {
            size_t mid = lo + (hi - lo) / 2;
            int c = cmp_str(sum->v[mid].job, sum->unread_jobs[i]);
            if (!c)
                found = 1;
            else if (c < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        n += !found;
    }
    return n;
}

static void write_text(out_t *o, const oomscan_summary *sum, size_t not_scanned, size_t jobs, size_t roots,
                       const tally *g, size_t ng, const tally *f, size_t nf)
{
    put(o, "oomscan summary: %zu job%s, %zu root failure%s\n", jobs, jobs == 1 ? "" : "s", roots,
        roots == 1 ? "" : "s");
    if (sum->inputs_error || sum->inputs_partial)
        put(o, "Inputs not scanned: %zu not read, %zu read in part; %zu job%s with nothing found had an input not read\n",
            sum->inputs_error, sum->inputs_partial, not_scanned, not_scanned == 1 ? "" : "s");
    if (ng) {
        put(o, "\nRoot failures by class, phase and framework\n");
        put(o, "  %5s %8s %11s  %-22s %-15s %s\n", "jobs", "findings", "occurrences", "class", "phase", "framework");
        for (size_t i = 0; i < ng; i++)
            put(o, "  %5zu %8zu %11lld  %-22s %-15s %s\n", g[i].jobs, g[i].findings, g[i].occurrences, g[i].first->cls,
                g[i].first->phase, g[i].first->framework);
    }
    put(o, "\nFingerprints seen in more than one job\n");
    if (!nf)
        put(o, "  none\n");
    else
        put(o, "  %-16s %5s  %-22s %-20s %s\n", "id", "jobs", "class", "first", "last");
    for (size_t i = 0; i < nf; i++)
        put(o, "  %-16s %5zu  %-22s %-20s %s\n", f[i].first->id, f[i].jobs, f[i].first->cls,
            f[i].seen_first[0] ? f[i].seen_first : "-", f[i].seen_last[0] ? f[i].seen_last : "-");
}

static oomscan_status write_json(out_t *o, const oomscan_summary *sum, size_t not_scanned, size_t jobs, size_t roots,
                                 const tally *g, size_t ng, const tally *f, size_t nf, size_t bad, oomscan_diag *diag)
{
    cJSON *doc = cJSON_CreateObject(), *groups = cJSON_CreateArray(), *fps = cJSON_CreateArray();
    if (!doc || !groups || !fps) {
        cJSON_Delete(doc), cJSON_Delete(groups), cJSON_Delete(fps);
        return diag_set(diag, OOMSCAN_ERR_NOMEM, "summary", "out of memory");
    }
    cJSON_AddStringToObject(doc, "schema", "oomscan-summary/1");
    cJSON_AddNumberToObject(doc, "jobs", (double)jobs);
    cJSON_AddNumberToObject(doc, "findings", (double)roots);
    cJSON_AddNumberToObject(doc, "bad_lines", (double)bad);
    cJSON_AddNumberToObject(doc, "inputs_not_read", (double)sum->inputs_error);
    cJSON_AddNumberToObject(doc, "inputs_partial", (double)sum->inputs_partial);
    cJSON_AddNumberToObject(doc, "jobs_not_scanned", (double)not_scanned);
    cJSON_AddItemToObject(doc, "groups", groups);
    cJSON_AddItemToObject(doc, "fingerprints", fps);
    for (size_t i = 0; i < ng; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToArray(groups, e);
        cJSON_AddStringToObject(e, "class", g[i].first->cls);
        cJSON_AddStringToObject(e, "phase", g[i].first->phase);
        cJSON_AddStringToObject(e, "framework", g[i].first->framework);
        cJSON_AddNumberToObject(e, "jobs", (double)g[i].jobs);
        cJSON_AddNumberToObject(e, "findings", (double)g[i].findings);
        cJSON_AddNumberToObject(e, "occurrences", (double)g[i].occurrences);
    }
    for (size_t i = 0; i < nf; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToArray(fps, e);
        cJSON_AddStringToObject(e, "id", f[i].first->id);
        cJSON_AddStringToObject(e, "class", f[i].first->cls);
        cJSON_AddNumberToObject(e, "jobs", (double)f[i].jobs);
        if (f[i].seen_first[0])
            cJSON_AddStringToObject(e, "first", f[i].seen_first);
        else
            cJSON_AddNullToObject(e, "first");
        if (f[i].seen_last[0])
            cJSON_AddStringToObject(e, "last", f[i].seen_last);
        else
            cJSON_AddNullToObject(e, "last");
    }
    char *s = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    if (!s)
        return diag_set(diag, OOMSCAN_ERR_NOMEM, "summary", "out of memory");
    if (!o->failed && (o->fn(o->ud, s, strlen(s)) || o->fn(o->ud, "\n", 1)))
        o->failed = 1;
    free(s);
    return OOMSCAN_OK;
}

oomscan_status oomscan_summary_write(oomscan_summary *sum, oomscan_summary_format format, oomscan_write_fn fn,
                                     void *ud, oomscan_diag *diag)
{
    /* the last record of each (job, id) stands for that finding */
    qsort(sum->v, sum->n, sizeof *sum->v, by_job_id_seq);
    size_t kept = 0, jobs = 0;
    for (size_t i = 0; i < sum->n; i++) {
        if (i + 1 < sum->n && !strcmp(sum->v[i].job, sum->v[i + 1].job) && !strcmp(sum->v[i].id, sum->v[i + 1].id)) {
            rec_free(&sum->v[i]);
            continue;
        }
        if (!kept || strcmp(sum->v[kept - 1].job, sum->v[i].job) != 0)
            jobs++;
        sum->v[kept++] = sum->v[i];
    }
    sum->n = kept;

    rec **roots = malloc((kept ? kept : 1) * sizeof *roots), **all = malloc((kept ? kept : 1) * sizeof *all);
    tally *g = malloc((kept ? kept : 1) * sizeof *g), *f = malloc((kept ? kept : 1) * sizeof *f);
    oomscan_status st = OOMSCAN_OK;
    if (!roots || !all || !g || !f) {
        st = diag_set(diag, OOMSCAN_ERR_NOMEM, "summary", "out of memory");
        goto done;
    }
    size_t nr = 0;
    for (size_t i = 0; i < kept; i++) {
        all[i] = &sum->v[i];
        if (sum->v[i].root)
            roots[nr++] = &sum->v[i];
    }
    qsort(roots, nr, sizeof *roots, by_group_job);
    size_t ng = tally_runs(roots, nr, same_group, g);
    /* a fingerprint recurs when one failure (same id: same pattern, phase and message) is a root or an
     * echo in two or more jobs */
    qsort(all, kept, sizeof *all, by_id_job);
    size_t nf = tally_runs(all, kept, same_id, f), nf2 = 0;
    for (size_t i = 0; i < nf; i++)
        if (f[i].jobs > 1)
            f[nf2++] = f[i];

    /* sum->v is in job order again for the lookups (the tallies sorted pointers, not the records) */
    size_t not_scanned = jobs_not_scanned(sum);
    out_t o = {fn, ud, 0};
    if (format == OOMSCAN_SUMMARY_JSON)
        st = write_json(&o, sum, not_scanned, jobs, nr, g, ng, f, nf2, sum->bad, diag);
    else
        write_text(&o, sum, not_scanned, jobs, nr, g, ng, f, nf2);
    if (st == OOMSCAN_OK && o.failed)
        st = diag_set(diag, OOMSCAN_ERR_CANCELLED, "summary", "the writer stopped");
done:
    free(roots);
    free(all);
    free(g);
    free(f);
    return st;
}
