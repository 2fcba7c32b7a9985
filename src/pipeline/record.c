/* record.c - the record codec (record.h): findings to self-contained NDJSON records and back, for
 * NDJSON output, --state and merge alike. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pipeline/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "emit/emit.h"
#include "emit/safe.h"
#include "pipeline/session.h"
#include "base/jsonnum.h"
#include "match/config.h"
#include "result/result.h"
#include "base/jsonget.h"

/* Inputs one merged record may claim: far beyond any run, small enough that offsets cannot wrap. */
#define MERGE_INPUTS_MAX (1ull << 40)

cJSON *record_visible_json(const struct oomscan_scan *s, size_t i, int with_advice)
{
    const finding *f = &s->st->f[i];
    result_scan view;
    result_finding rf;
    session_result_scan(s, &view);
    if (result_finding_init(&rf, &view, i, with_advice) != 0)
        return NULL;
    cJSON *j = emit_finding_json_take(&rf);
    result_finding_clear(&rf);
    if (!j)
        return NULL;
    cJSON_AddStringToObject(j, "group", f->group);
    cJSON_AddNumberToObject(j, "echo_level", story_echo_level(f));
    return j;
}

cJSON *record_json(const struct oomscan_scan *s, size_t i, int with_advice)
{
    cJSON *j = record_visible_json(s, i, with_advice);
    if (j)
        cJSON_AddItemToObject(j, "merge", record_merge_json(s, &s->st->f[i]));
    return j;
}

/* ---- finding -> record ------------------------------------------------------------------- */

static cJSON *time_json(const story_loc *l)
{
    if (!l->has_time)
        return cJSON_CreateNull();
    /* every field, not the formatted text: ordering compares keys of stamps of the same kind. As
     * text with 17 digits: cJSON prints numbers with 15 when that is "close enough", and a key one
     * ulp off reorders two lines of the same millisecond. */
    const timefmt *t = &l->time;
    char b[256];
    snprintf(b, sizeof b, "%d %d %d %d %d %d %d %d %d %.17g %.17g %.17g", t->has_date, t->has_md, t->has_clock,
             t->uptime_only, t->year, t->month, t->day, t->hour, t->min, t->sec, t->uptime, t->key);
    return cJSON_CreateString(b);
}

static cJSON *raw_set_json(const story_set *set)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < set->n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(set->items[i]));
    return a;
}

cJSON *record_scan_json(const struct oomscan_scan *s)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "inputs", (double)(s->n_units + s->extra_inputs));
    cJSON_AddStringToObject(o, "job_id", s->job_id);
    cJSON_AddBoolToObject(o, "job_conflict", s->job_conflict);
    cJSON_AddStringToObject(o, "job_given", s->job_given);
    cJSON *v = cJSON_AddObjectToObject(o, "votes");
    for (int k = 0; v && k < FW__COUNT; k++)
        if (s->votes[k])
            cJSON_AddNumberToObject(v, tax_framework_name((tax_framework)k), (double)s->votes[k]);
    cJSON_AddNumberToObject(o, "dropped", (double)s->st->dropped);
    return o;
}

/* The settings the log printed that finding f's job uses (config_lookup's rule: an entry of no job
 * serves every job), oldest read first: advice shows them as "current -> proposed". */
typedef struct {
    const config_entry **e;
    size_t n, cap;
    int nomem;
} entries;

static void gather(const config_store *st, void *ud)
{
    entries *x = ud;
    for (size_t i = 0; i < st->n && !x->nomem; i++) {
        if (GROW(x->e, x->n, x->cap, 16)) {
            x->nomem = 1;
            break;
        }
        x->e[x->n++] = &st->e[i];
    }
}

/* The settings finding f's job sees (story_settings_view), in the order they were read. */
static cJSON *settings_json(const story *st, const finding *f)
{
    cJSON *a = cJSON_CreateArray();
    config_view v;
    story_settings_view(st, f->job, &v);
    entries all = {0};
    config_view_each(&v, gather, &all);
    const config_entry **e = all.e;
    size_t k = 0;
    for (size_t i = 0; a && e && i < all.n; i++)
        if (!e[i]->job[0] || !f->job[0] || strcmp(e[i]->job, f->job) == 0)
            e[k++] = e[i];
    /* by seq, few entries (one per setting per job): insertion sort */
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && e[j - 1]->seq > e[j]->seq; j--) {
            const config_entry *t = e[j];
            e[j] = e[j - 1];
            e[j - 1] = t;
        }
    for (size_t i = 0; a && i < k; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddStringToObject(o, "path", e[i]->path);
        cJSON_AddStringToObject(o, "value", e[i]->value);
        cJSON_AddStringToObject(o, "job", e[i]->job);
        cJSON_AddStringToObject(o, "file", e[i]->file ? e[i]->file : "");
        cJSON_AddNumberToObject(o, "line", (double)e[i]->line);
        cJSON_AddItemToArray(a, o);
    }
    free(e);
    return a;
}

cJSON *record_merge_json(const struct oomscan_scan *s, const finding *f)
{
    cJSON *m = cJSON_CreateObject();
    if (!m)
        return NULL;
    cJSON_AddNumberToObject(m, "v", 1);
    cJSON_AddStringToObject(m, "group", f->group);
    cJSON_AddStringToObject(m, "job", f->job_id);
    if (f->framework >= 0)
        cJSON_AddStringToObject(m, "framework", tax_framework_name((tax_framework)f->framework));
    else
        cJSON_AddNullToObject(m, "framework");
    cJSON_AddNumberToObject(m, "input", (double)f->first.input);
    cJSON_AddNumberToObject(m, "last_input", (double)f->last.input);
    cJSON_AddItemToObject(m, "first_time", time_json(&f->first));
    cJSON_AddItemToObject(m, "last_time", time_json(&f->last));
    cJSON_AddStringToObject(m, "rank", f->rank);
    cJSON_AddStringToObject(m, "local_rank", f->local_rank);
    cJSON_AddStringToObject(m, "pid", f->pid);
    cJSON_AddStringToObject(m, "host", f->host);
    if (f->container[0]) /* only when known: older records stay as they were */
        cJSON_AddStringToObject(m, "container", f->container);
    if (f->ray_job[0])
        cJSON_AddStringToObject(m, "ray_job", f->ray_job);
    cJSON_AddItemToObject(m, "ranks", raw_set_json(&f->ranks));
    cJSON_AddNumberToObject(m, "ranks_dropped", (double)f->ranks.dropped);
    cJSON_AddItemToObject(m, "hosts", raw_set_json(&f->hosts));
    cJSON_AddNumberToObject(m, "hosts_dropped", (double)f->hosts.dropped);
    /* the kind of window its first line is (a dump's; a log line's kind follows from its pattern) */
    if (f->first.kind)
        cJSON_AddStringToObject(m, "kind", f->first.kind);
    if (f->last.kind)
        cJSON_AddStringToObject(m, "last_kind", f->last.kind);
    /* the job's settings, so that advice from merged records shows the values a scan would */
    int any = 0;
    for (size_t i = 0; i < s->st->n_settings && !any; i++)
        any = s->st->settings[i] && s->st->settings[i]->n;
    if (any)
        cJSON_AddItemToObject(m, "settings", settings_json(s->st, f));
    cJSON_AddItemToObject(m, "scan", record_scan_json(s));
    (void)safe_json(m); /* group, hosts, paths: log text and names, any bytes */
    return m;
}

/* ---- record -> finding ------------------------------------------------------------------- */

static int num_of(const cJSON *o, const char *key, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0)
        return -1;
    *out = v->valuedouble;
    return 0;
}

static int time_from(const cJSON *a, story_loc *l)
{
    if (!a || cJSON_IsNull(a))
        return 0;
    timefmt *t = &l->time;
    /* Read as doubles and range-checked: "%d" on an out-of-range number is undefined, and a year of
     * 2^31-1 would overflow later date arithmetic. */
    double v[12];
    if (!cJSON_IsString(a) || sscanf(a->valuestring, "%lg %lg %lg %lg %lg %lg %lg %lg %lg %lg %lg %lg", &v[0], &v[1],
                                     &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11]) != 12)
        return -1;
    static const double lo[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}, hi[9] = {1, 1, 1, 1, 9999, 12, 31, 24, 60};
    for (int i = 0; i < 9; i++)
        if (!jsonnum_in(v[i], lo[i], hi[i]))
            return -1;
    if (!(v[9] >= 0 && v[9] <= 61) || !(v[10] >= 0 && v[10] <= 1e12) || !(v[11] >= -1e13 && v[11] <= 1e13))
        return -1;
    int *ints[9] = {&t->has_date, &t->has_md, &t->has_clock, &t->uptime_only, &t->year, &t->month, &t->day, &t->hour,
                    &t->min};
    for (int i = 0; i < 9; i++)
        *ints[i] = (int)v[i];
    t->sec = v[9];
    t->uptime = v[10];
    t->key = v[11];
    l->has_time = 1;
    return 0;
}

static int loc_from(const cJSON *o, const cJSON *input, const cJSON *time, size_t off, story_loc *l)
{
    double line, offset;
    const char *path = json_str(o, "path"), *member = json_str(o, "member");
    if (!cJSON_IsObject(o) || !path || num_of(o, "line", &line) || num_of(o, "offset", &offset) ||
        !cJSON_IsNumber(input) || input->valuedouble < 0)
        return -1;
    l->input = (size_t)jsonnum_u64(input->valuedouble, MERGE_INPUTS_MAX) + off;
    l->line = jsonnum_u64(line, UINT64_MAX);
    l->offset = jsonnum_u64(offset, UINT64_MAX);
    if (!(l->path = strdup(path)) || (member && !(l->member = strdup(member))))
        return -2;
    return time_from(time, l);
}

static int raw_set_from(const cJSON *a, const cJSON *dropped, story_set *set)
{
    if (!cJSON_IsArray(a))
        return -1;
    int n = cJSON_GetArraySize(a);
    if (n > 0 && !(set->items = calloc((size_t)n, sizeof *set->items)))
        return -2;
    const cJSON *it;
    cJSON_ArrayForEach(it, a)
    {
        if (!cJSON_IsString(it))
            return -1;
        if (!(set->items[set->n] = strdup(it->valuestring)))
            return -2;
        set->n++;
    }
    set->dropped = cJSON_IsNumber(dropped) ? (size_t)jsonnum_u64(dropped->valuedouble, SIZE_MAX / 2) : 0;
    return 0;
}

static void drop_finding(finding *f)
{
    for (size_t i = 0; i < f->n_windows; i++) {
        free(f->windows[i].path);
        free(f->windows[i].member);
    }
    free(f->windows);
    free(f->phase_evidence);
    free(f->group);
    free(f->first.path);
    free(f->first.member);
    free(f->last.path);
    free(f->last.member);
    for (size_t i = 0; i < f->n_evidence; i++)
        free(f->evidence[i]);
    cJSON_Delete(f->memory);
    for (size_t i = 0; i < f->ranks.n; i++)
        free(f->ranks.items[i]);
    free(f->ranks.items);
    for (size_t i = 0; i < f->hosts.n; i++)
        free(f->hosts.items[i]);
    free(f->hosts.items);
}

/* The windows of a record's "sources" (every window of a joined failure) into f. */
static int windows_from(const cJSON *sources, finding *f)
{
    if (!sources || cJSON_IsNull(sources))
        return 0;
    if (!cJSON_IsArray(sources))
        return -1;
    const cJSON *w;
    cJSON_ArrayForEach(w, sources)
    {
        double line;
        const char *path = json_str(w, "path"), *member = json_str(w, "member"), *kind = story_kind(json_str(w, "kind"));
        if (!path || !kind || num_of(w, "line", &line))
            return -1;
        if (story_add_window(f, kind, path, member, jsonnum_u64(line, UINT64_MAX)) != 0)
            return -2;
    }
    return 0;
}

/* A record's settings into the story's store (later records of the same setting win, as later reads). */
static int settings_from(const cJSON *a, story *st)
{
    if (!a)
        return 0;
    if (!cJSON_IsArray(a))
        return -1;
    /* validate the whole array first: a bad record adds nothing */
    const cJSON *o;
    cJSON_ArrayForEach(o, a)
    {
        double line;
        if (!json_str(o, "path") || !json_str(o, "value") || !json_str(o, "job") || !json_str(o, "file") ||
            num_of(o, "line", &line))
            return -1;
    }
    /* each setting into its job's store (story_job_settings), in the order the record lists them */
    cJSON_ArrayForEach(o, a)
    {
        double line = 0;
        num_of(o, "line", &line);
        const char *job = json_str(o, "job");
        config_store **to = story_job_settings(st, job);
        if (!to || config_put(to, json_str(o, "path"), json_str(o, "value"), job, json_str(o, "file"),
                              jsonnum_u64(line, UINT64_MAX)) != 0)
            return -2;
    }
    return 0;
}

static int fail(char *err, size_t cap, int rc, const char *msg, const char *arg)
{
    snprintf(err, cap, msg, arg ? arg : "");
    return rc;
}

/* The fields of finding record `rec` (its merge data `m`) past the ones record_to_finding checks first:
 * group, occurrences, first and last places, ranks and hosts, window kinds, sources, the job's settings
 * (into st), evidence and memory, into *f. 0, -1 malformed (err says which field), -2 out of memory
 * (err not yet set). What was set in *f is the caller's to free. */
static int finding_fields_from(const cJSON *rec, const cJSON *m, const char *group, size_t off, story *st, finding *f,
                               char *err, size_t cap)
{
    double occ = 0;
    int rc = 0;
    const char *pe = json_str(rec, "phase_evidence");
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(rec, "memory");
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(rec, "evidence");
    if (!(f->group = strdup(group)) || (pe && !(f->phase_evidence = strdup(pe))))
        rc = -2;
    if (!rc && num_of(rec, "occurrences", &occ))
        rc = fail(err, cap, -1, "record lacks occurrences", NULL);
    f->occurrences = jsonnum_u64(occ, UINT64_MAX / 2);
    if (!rc) {
        rc = loc_from(cJSON_GetObjectItemCaseSensitive(rec, "first"), cJSON_GetObjectItemCaseSensitive(m, "input"),
                      cJSON_GetObjectItemCaseSensitive(m, "first_time"), off, &f->first);
        if (!rc)
            rc = loc_from(cJSON_GetObjectItemCaseSensitive(rec, "last"),
                          cJSON_GetObjectItemCaseSensitive(m, "last_input"),
                          cJSON_GetObjectItemCaseSensitive(m, "last_time"), off, &f->last);
        if (rc == -1)
            fail(err, cap, -1, "record has a malformed first/last location or time", NULL);
    }
    if (!rc) {
        rc = raw_set_from(cJSON_GetObjectItemCaseSensitive(m, "ranks"),
                          cJSON_GetObjectItemCaseSensitive(m, "ranks_dropped"), &f->ranks);
        if (!rc)
            rc = raw_set_from(cJSON_GetObjectItemCaseSensitive(m, "hosts"),
                              cJSON_GetObjectItemCaseSensitive(m, "hosts_dropped"), &f->hosts);
        if (rc == -1)
            fail(err, cap, -1, "record has malformed merge.ranks or merge.hosts", NULL);
    }
    if (!rc) {
        const char *kind = json_str(m, "kind"), *last = json_str(m, "last_kind");
        f->first.kind = story_kind(kind);
        f->last.kind = story_kind(last);
        if ((kind && !f->first.kind) || (last && !f->last.kind))
            rc = fail(err, cap, -1, "unknown window kind '%s'", kind && !f->first.kind ? kind : last);
    }
    if (!rc) {
        rc = windows_from(cJSON_GetObjectItemCaseSensitive(rec, "sources"), f);
        if (rc == -1)
            fail(err, cap, -1, "record has malformed sources", NULL);
    }
    if (!rc) {
        rc = settings_from(cJSON_GetObjectItemCaseSensitive(m, "settings"), st);
        if (rc == -1)
            fail(err, cap, -1, "record has malformed merge.settings", NULL);
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, ev)
    {
        if (rc || f->n_evidence >= STORY_MAX_EVIDENCE)
            break;
        if (cJSON_IsString(it) && !(f->evidence[f->n_evidence++] = strdup(it->valuestring)))
            rc = -2;
    }
    if (!rc && !(f->memory = cJSON_IsObject(mem) ? cJSON_Duplicate(mem, 1) : cJSON_CreateObject()))
        rc = -2;
    return rc;
}

int record_to_finding(const pdb *db, const cJSON *rec, size_t off, story *st, char *err, size_t cap)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(rec, "merge");
    if (!cJSON_IsObject(m))
        return fail(err, cap, -1, "record without \"merge\" data (not an oomscan NDJSON finding record)", NULL);
    const char *pid = json_str(rec, "pattern"), *group = json_str(m, "group"), *job = json_str(m, "job");
    const char *phase = json_str(rec, "phase");
    if (!pid || !group || !job || !phase)
        return fail(err, cap, -1, "record lacks pattern, phase, merge.group or merge.job", NULL);
    const pdb_pattern *p = NULL;
    for (size_t i = 0; i < db->n_patterns && !p; i++)
        if (strcmp(db->patterns[i].id, pid) == 0)
            p = &db->patterns[i];
    if (!p)
        return fail(err, cap, -1, "unknown pattern '%s' (merge with the --patterns the scan used)", pid);
    int ph = tax_phase_from_name(phase);
    if (ph < 0)
        return fail(err, cap, -1, "unknown phase '%s'", phase);
    finding f;
    memset(&f, 0, sizeof f);
    f.pattern = p;
    f.cls = p->cls;
    f.phase = (tax_phase)ph;
    const char *conf = json_str(rec, "phase_confidence");
    f.phase_weak = f.phase != PH_UNKNOWN && conf && strcmp(conf, "weak") == 0;
    f.framework = -1;
    f.caused_by = -1;
    f.echo = p->echo || tax_class_is_echo(p->cls);
    const char *fw = json_str(m, "framework");
    if (fw)
        f.framework = tax_framework_from_name(fw);
    snprintf(f.job_id, sizeof f.job_id, "%s", job);
    snprintf(f.rank, sizeof f.rank, "%s", json_str(m, "rank") ? json_str(m, "rank") : "");
    snprintf(f.local_rank, sizeof f.local_rank, "%s", json_str(m, "local_rank") ? json_str(m, "local_rank") : "");
    snprintf(f.pid, sizeof f.pid, "%s", json_str(m, "pid") ? json_str(m, "pid") : "");
    snprintf(f.host, sizeof f.host, "%s", json_str(m, "host") ? json_str(m, "host") : "");
    snprintf(f.container, sizeof f.container, "%s", json_str(m, "container") ? json_str(m, "container") : "");
    snprintf(f.ray_job, sizeof f.ray_job, "%s", json_str(m, "ray_job") ? json_str(m, "ray_job") : "");
    int rc = finding_fields_from(rec, m, group, off, st, &f, err, cap);
    if (!rc && GROW(st->f, st->n, st->cap, 16))
        rc = -2;
    if (rc) {
        if (rc == -2)
            snprintf(err, cap, "out of memory");
        drop_finding(&f);
        return rc;
    }
    st->f[st->n++] = f;
    return 0;
}

size_t record_scan_into(struct oomscan_scan *s, const cJSON *scan)
{
    double inputs = 0, d;
    if (!cJSON_IsObject(scan))
        return 0;
    num_of(scan, "inputs", &inputs);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(scan, "votes"), *it;
    cJSON_ArrayForEach(it, v)
    {
        int fw = tax_framework_from_name(it->string);
        if (fw >= 0 && cJSON_IsNumber(it)) {
            uint64_t sum = (uint64_t)s->votes[fw] + jsonnum_u64(it->valuedouble, UINT32_MAX);
            s->votes[fw] = sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
        }
    }
    /* the same rule as merging inputs of one scan: the first job named, a conflict if another differs */
    const char *job = json_str(scan, "job_id"), *given = json_str(scan, "job_given");
    session_note_job(s->job_id, &s->job_conflict, job);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(scan, "job_conflict")))
        s->job_conflict = 1;
    if (given && *given && !s->job_given[0])
        snprintf(s->job_given, sizeof s->job_given, "%s", given);
    if (!num_of(scan, "dropped", &d))
        s->st->dropped += (size_t)jsonnum_u64(d, SIZE_MAX / 4);
    return (size_t)jsonnum_u64(inputs, MERGE_INPUTS_MAX);
}

