/* emit_json.c - the oomscan/1 JSON document (shared/spec/output.md) from a finished session.
 * Writers only read findings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advice/remedy.h"
#include "emit/report.h"
#include "pipeline/session.h"
#include "base/timefmt.h"

static cJSON *loc_json(const story_loc *l)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "path", l->path ? l->path : "");
    if (l->member)
        cJSON_AddStringToObject(o, "member", l->member);
    else
        cJSON_AddNullToObject(o, "member");
    cJSON_AddNumberToObject(o, "line", (double)l->line);
    cJSON_AddNumberToObject(o, "offset", (double)l->offset);
    if (l->has_time) {
        char t[64];
        timefmt_format(&l->time, t, sizeof t);
        cJSON_AddStringToObject(o, "time", t);
    }
    return o;
}

static cJSON *set_json(const story_set *s)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < s->n; i++) {
        char *end;
        long v = strtol(s->items[i], &end, 10);
        if (*end == '\0' && end != s->items[i])
            cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v));
        else
            cJSON_AddItemToArray(a, cJSON_CreateString(s->items[i]));
    }
    return a;
}

static void add_str_or_num(cJSON *o, const char *key, const char *v)
{
    if (!v || !*v)
        return;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end == '\0')
        cJSON_AddNumberToObject(o, key, (double)n);
    else
        cJSON_AddStringToObject(o, key, v);
}

const char *session_scan_job(const struct oomscan_scan *s)
{
    return s->job_given[0] ? s->job_given : s->job_conflict ? "" : s->job_id;
}

const char *session_job_id(const struct oomscan_scan *s, const finding *f)
{
    return f->job_id[0] ? f->job_id : session_scan_job(s);
}

cJSON *session_finding_json(const struct oomscan_scan *s, size_t i)
{
    const finding *f = &s->st->f[i];
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    char title[320];
    report_title(f, title, sizeof title);
    int fw = session_framework(s, f);
    cJSON_AddStringToObject(o, "id", f->id);
    cJSON_AddStringToObject(o, "class", tax_class_name(f->cls));
    cJSON_AddStringToObject(o, "phase", tax_phase_name(f->phase));
    if (f->phase != PH_UNKNOWN) /* output.md 1.1: absent when the phase is unknown */
        cJSON_AddStringToObject(o, "phase_confidence", f->phase_weak ? "weak" : "strong");
    cJSON_AddStringToObject(o, "framework", tax_framework_name((tax_framework)fw));
    cJSON_AddStringToObject(o, "role", f->is_root ? "root" : "consequence");
    cJSON_AddStringToObject(o, "title", title);
    cJSON_AddStringToObject(o, "pattern", f->pattern->id);
    cJSON_AddItemToObject(o, "source", loc_json(&f->first));
    cJSON *ev = cJSON_AddArrayToObject(o, "evidence");
    for (size_t k = 0; ev && k < f->n_evidence; k++)
        cJSON_AddItemToArray(ev, cJSON_CreateString(f->evidence[k]));
    cJSON_AddItemToObject(o, "memory", cJSON_Duplicate(f->memory, 1));
    cJSON_AddItemToObject(o, "remediation", remedy_json_config(s->db->p, f, fw, s->st->config, session_job_id(s, f)));
    cJSON *diag = remedy_diagnosis_json(f);
    if (diag)
        cJSON_AddItemToObject(o, "diagnosis", diag);
    /* additions beyond the stable core (docs/output.md) */
    if (f->phase_evidence)
        cJSON_AddStringToObject(o, "phase_evidence", f->phase_evidence);
    else
        cJSON_AddNullToObject(o, "phase_evidence");
    cJSON_AddNumberToObject(o, "occurrences", (double)f->occurrences);
    cJSON_AddItemToObject(o, "ranks", set_json(&f->ranks));
    cJSON_AddItemToObject(o, "hosts", set_json(&f->hosts));
    cJSON_AddItemToObject(o, "first", loc_json(&f->first));
    cJSON_AddItemToObject(o, "last", loc_json(&f->last));
    cJSON *ctx = cJSON_AddObjectToObject(o, "context");
    if (ctx) {
        add_str_or_num(ctx, "job_id", session_job_id(s, f));
        add_str_or_num(ctx, "host", f->host);
        add_str_or_num(ctx, "rank", f->rank);
        add_str_or_num(ctx, "local_rank", f->local_rank);
        add_str_or_num(ctx, "pid", f->pid);
        if (f->first.has_time) {
            char t[64];
            timefmt_format(&f->first.time, t, sizeof t);
            cJSON_AddStringToObject(ctx, "time", t);
        }
    }
    if (f->caused_by >= 0)
        cJSON_AddStringToObject(o, "caused_by", s->st->f[f->caused_by].id);
    else
        cJSON_AddNullToObject(o, "caused_by");
    if (f->note)
        cJSON_AddStringToObject(o, "note", f->note);
    return o;
}

cJSON *session_json(const struct oomscan_scan *s)
{
    cJSON *doc = cJSON_CreateObject();
    if (!doc)
        return NULL;
    cJSON_AddStringToObject(doc, "schema", OOMSCAN_SCHEMA);
    cJSON *tool = cJSON_AddObjectToObject(doc, "tool");
    cJSON_AddStringToObject(tool, "name", "oomscan");
    cJSON_AddStringToObject(tool, "version", OOMSCAN_VERSION);
    cJSON *inputs = cJSON_AddArrayToObject(doc, "inputs");
    for (size_t i = 0; i < s->n_recs; i++) {
        const input_record *r = &s->recs[i];
        cJSON *o = cJSON_CreateObject();
        char name[4096];
        snprintf(name, sizeof name, "%s%s%s", r->path, r->member ? ":" : "", r->member ? r->member : "");
        cJSON_AddStringToObject(o, "path", name);
        cJSON_AddStringToObject(o, "status", r->status == INPUT_OK ? "ok" : r->status == INPUT_PARTIAL ? "partial" : "error");
        if (r->error)
            cJSON_AddStringToObject(o, "error", r->error);
        cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
        cJSON_AddNumberToObject(o, "lines", (double)r->lines);
        if (r->member)
            cJSON_AddStringToObject(o, "member", r->member);
        if (r->container)
            cJSON_AddStringToObject(o, "container", r->container);
        if (r->lines_cut)
            cJSON_AddNumberToObject(o, "lines_cut", (double)r->lines_cut);
        cJSON_AddItemToArray(inputs, o);
    }
    cJSON *arr = cJSON_AddArrayToObject(doc, "findings");
    size_t *order = malloc((s->st->n + 1) * sizeof *order);
    if (!order) {
        cJSON_Delete(doc);
        return NULL;
    }
    story_order(s->st, order);
    for (size_t i = 0; i < s->st->n; i++)
        cJSON_AddItemToArray(arr, session_finding_json(s, order[i]));
    free(order);
    if (s->st->dropped)
        cJSON_AddNumberToObject(doc, "findings_dropped", (double)s->st->dropped);
    return doc;
}
