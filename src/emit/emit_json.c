/* emit_json.c - the oomscan/1 JSON document (docs/output.md) and its finding objects, from a
 * result. Writers only read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit/emit.h"

#include "base/timefmt.h"
#include "emit/report.h"
#include "emit/safe.h"

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
    if (l->kind) /* a crash dump, not a log line (docs/inputs.md) */
        cJSON_AddStringToObject(o, "kind", l->kind);
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

/* The object of emit_finding_json, its remediation and diagnosis given (and consumed) by the caller:
 * copies for a result that stays, the trees themselves for one about to be cleared.
 * long: one finding's JSON object written key by key in the order docs/output.md lists them; the order is
 * the contract. */
static cJSON *finding_json(const result_finding *rf, cJSON *remediation, cJSON *diagnosis)
{
    const finding *f = rf->f;
    cJSON *o = cJSON_CreateObject();
    if (!o) {
        cJSON_Delete(remediation);
        cJSON_Delete(diagnosis);
        return NULL;
    }
    char title[320];
    report_title(f, title, sizeof title);
    cJSON_AddStringToObject(o, "id", f->id);
    cJSON_AddStringToObject(o, "class", tax_class_name(f->cls));
    cJSON_AddStringToObject(o, "phase", tax_phase_name(f->phase));
    if (rf->phase_confidence)
        cJSON_AddStringToObject(o, "phase_confidence", rf->phase_confidence);
    cJSON_AddStringToObject(o, "framework", tax_framework_name(rf->framework));
    if (rf->job && rf->job[0])
        cJSON_AddStringToObject(o, "job", rf->job);
    else
        cJSON_AddNullToObject(o, "job");
    if (f->run[0]) /* the run of a finding of no job, when the scan holds several (docs/taxonomy.md) */
        cJSON_AddStringToObject(o, "run", f->run);
    cJSON_AddStringToObject(o, "role", rf->is_root ? "root" : "consequence");
    if (rf->backend)
        cJSON_AddStringToObject(o, "backend", rf->backend);
    cJSON_AddStringToObject(o, "title", title);
    cJSON_AddStringToObject(o, "pattern", f->pattern->id);
    cJSON_AddItemToObject(o, "source", loc_json(&f->first));
    /* one failure seen through several windows (story_finish joined them): every window */
    if (rf->n_sources > 1) {
        cJSON *src = cJSON_AddArrayToObject(o, "sources");
        for (size_t k = 0; src && k < rf->n_sources; k++) {
            cJSON *w = cJSON_CreateObject();
            if (!w)
                break;
            cJSON_AddStringToObject(w, "path", rf->sources[k].path);
            if (rf->sources[k].member)
                cJSON_AddStringToObject(w, "member", rf->sources[k].member);
            else
                cJSON_AddNullToObject(w, "member");
            cJSON_AddNumberToObject(w, "line", (double)rf->sources[k].line);
            cJSON_AddStringToObject(w, "kind", rf->sources[k].kind);
            cJSON_AddItemToArray(src, w);
        }
    }
    cJSON *ev = cJSON_AddArrayToObject(o, "evidence");
    for (size_t k = 0; ev && k < f->n_evidence; k++)
        cJSON_AddItemToArray(ev, cJSON_CreateString(f->evidence[k]));
    cJSON_AddItemToObject(o, "memory", cJSON_Duplicate(f->memory, 1));
    cJSON_AddItemToObject(o, "remediation", remediation);
    if (diagnosis)
        cJSON_AddItemToObject(o, "diagnosis", diagnosis);
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
        /* always a string: a Slurm id of 20 digits does not survive a JSON number, and a consumer
         * should not have to accept both types (issue 17) */
        if (rf->job && rf->job[0])
            cJSON_AddStringToObject(ctx, "job_id", rf->job);
        add_str_or_num(ctx, "host", f->host);
        add_str_or_num(ctx, "rank", f->rank);
        add_str_or_num(ctx, "local_rank", f->local_rank);
        add_str_or_num(ctx, "pid", f->pid);
        /* text, never numbers: a container may be all digits, a Ray job id (01000000) is hex */
        if (f->container[0])
            cJSON_AddStringToObject(ctx, "container", f->container);
        if (f->ray_job[0])
            cJSON_AddStringToObject(ctx, "ray_job", f->ray_job);
        if (f->first.has_time) {
            char t[64];
            timefmt_format(&f->first.time, t, sizeof t);
            cJSON_AddStringToObject(ctx, "time", t);
        }
        if (rf->versions)
            cJSON_AddItemToObject(ctx, "versions", cJSON_Duplicate(rf->versions, 1));
    }
    if (rf->caused_by)
        cJSON_AddStringToObject(o, "caused_by", rf->caused_by);
    else
        cJSON_AddNullToObject(o, "caused_by");
    if (f->note)
        cJSON_AddStringToObject(o, "note", f->note);
    (void)safe_json(o); /* names and log text may hold any bytes; out of memory leaves them blanked */
    return o;
}

cJSON *emit_finding_json(const result_finding *rf)
{
    return finding_json(rf, cJSON_Duplicate(rf->remediation, 1), rf->diagnosis ? cJSON_Duplicate(rf->diagnosis, 1) : NULL);
}

cJSON *emit_finding_json_take(result_finding *rf)
{
    cJSON *rem = rf->remediation, *diag = rf->diagnosis;
    rf->remediation = rf->diagnosis = NULL;
    return finding_json(rf, rem, diag);
}

cJSON *emit_input_json(const input_record *in)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    /* whole, however long (a path past PATH_MAX is read now): a fixed buffer cut it at 4095 bytes */
    char *name = NULL;
    if (asprintf(&name, "%s%s%s", in->path, in->member ? ":" : "", in->member ? in->member : "") < 0)
        name = NULL;
    cJSON_AddStringToObject(o, "path", name ? name : in->path);
    free(name);
    cJSON_AddStringToObject(o, "status", in->status == INPUT_OK ? "ok" : in->status == INPUT_PARTIAL ? "partial" : "error");
    if (in->error)
        cJSON_AddStringToObject(o, "error", in->error);
    cJSON_AddNumberToObject(o, "bytes", (double)in->bytes);
    cJSON_AddNumberToObject(o, "lines", (double)in->lines);
    if (in->member)
        cJSON_AddStringToObject(o, "member", in->member);
    if (in->container)
        cJSON_AddStringToObject(o, "container", in->container);
    if (in->lines_cut)
        cJSON_AddNumberToObject(o, "lines_cut", (double)in->lines_cut);
    (void)safe_json(o);
    return o;
}

/* The document without its findings ("findings": [] holds their place). */
static cJSON *json_head(const result *r)
{
    cJSON *doc = cJSON_CreateObject();
    if (!doc)
        return NULL;
    cJSON_AddStringToObject(doc, "schema", OOMSCAN_SCHEMA);
    cJSON *tool = cJSON_AddObjectToObject(doc, "tool");
    cJSON_AddStringToObject(tool, "name", "oomscan");
    cJSON_AddStringToObject(tool, "version", OOMSCAN_VERSION);
    cJSON *inputs = cJSON_AddArrayToObject(doc, "inputs");
    for (size_t i = 0; i < r->scan.n_inputs; i++)
        cJSON_AddItemToArray(inputs, emit_input_json(&r->scan.inputs[i]));
    /* files a folder's walk left out by name or size: counted, not inputs (docs/output.md) */
    if (r->scan.excluded || r->scan.too_large) {
        cJSON *sk = cJSON_AddObjectToObject(doc, "skipped");
        cJSON_AddNumberToObject(sk, "excluded", (double)r->scan.excluded);
        cJSON_AddNumberToObject(sk, "too_large", (double)r->scan.too_large);
    }
    cJSON_AddArrayToObject(doc, "findings");
    if (r->scan.st->dropped)
        cJSON_AddNumberToObject(doc, "findings_dropped", (double)r->scan.st->dropped);
    return doc;
}

cJSON *emit_json(const result *r)
{
    cJSON *doc = json_head(r);
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, "findings");
    for (size_t k = 0; arr && k < r->n; k++) {
        result_finding tmp;
        const result_finding *rf = result_advised(r, k, &tmp);
        cJSON_AddItemToArray(arr, rf == &tmp ? emit_finding_json_take(&tmp) : rf ? emit_finding_json(rf) : NULL);
        if (rf == &tmp)
            result_finding_clear(&tmp);
    }
    return doc;
}

/* Write `txt` with every newline followed by `indent` (cJSON_Print's layout one level deeper). */
static int write_indented(oomscan_write_fn fn, void *ud, const char *txt, const char *indent)
{
    size_t il = strlen(indent);
    for (const char *nl; (nl = strchr(txt, '\n')); txt = nl + 1)
        if (fn(ud, txt, (size_t)(nl + 1 - txt)) != 0 || fn(ud, indent, il) != 0)
            return -1;
    return fn(ud, txt, strlen(txt));
}

/* The document streams: the head (everything but the findings) is printed once, then each finding
 * is built, printed and freed in turn, its advice asked as it comes (result_new_deferred), so memory
 * holds one finding's JSON and checklist, not the run's (20,000 jobs' findings took most of a GiB
 * as one tree). The bytes are cJSON_Print's for the whole
 * document: a finding sits two levels deep, so its lines gain two tabs, and array elements are
 * joined by ", " (tests/golden.sh holds the output to the goldens). */
oomscan_status emit_json_write(const result *r, oomscan_write_fn fn, void *ud)
{
    cJSON *doc = json_head(r);
    char *head = doc ? cJSON_Print(doc) : NULL;
    cJSON_Delete(doc);
    if (!head)
        return OOMSCAN_ERR_NOMEM;
    /* the only place a newline, a tab and this key meet: string values have their newlines escaped */
    static const char slot[] = "\n\t\"findings\":\t[]";
    char *at = strstr(head, slot);
    if (!at) {
        free(head);
        return OOMSCAN_ERR_NOMEM; /* cannot happen: json_head always adds the key */
    }
    size_t before = (size_t)(at - head) + sizeof slot - 2; /* up to and with the '[' */
    int bad = fn(ud, head, before) != 0;
    oomscan_status st = OOMSCAN_OK;
    for (size_t k = 0; !bad && k < r->n; k++) {
        result_finding tmp;
        const result_finding *rf = result_advised(r, k, &tmp);
        cJSON *o = rf == &tmp ? emit_finding_json_take(&tmp) : rf ? emit_finding_json(rf) : NULL;
        if (rf == &tmp)
            result_finding_clear(&tmp);
        char *txt = o ? cJSON_Print(o) : NULL;
        cJSON_Delete(o);
        if (!txt) {
            st = OOMSCAN_ERR_NOMEM;
            break;
        }
        bad = (k > 0 && fn(ud, ", ", 2) != 0) || write_indented(fn, ud, txt, "\t\t") != 0;
        free(txt);
    }
    if (!bad && st == OOMSCAN_OK) {
        const char *rest = head + before;
        bad = fn(ud, rest, strlen(rest)) != 0 || fn(ud, "\n", 1) != 0;
    }
    free(head);
    return bad ? OOMSCAN_ERR_IO : st;
}
