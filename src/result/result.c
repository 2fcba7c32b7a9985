/* result.c - every finding resolved once, for all writers: framework, job, role, cause and the
 * advice (asked of advice/remedy.h once per finding). */
#include "result/result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advice/advice.h"
#include "match/config.h"

tax_framework result_framework(const uint32_t votes[FW__COUNT], const finding *f)
{
    int best = FW_UNKNOWN;
    for (int k = 0; k < FW__COUNT; k++) {
        if (k == FW_UNKNOWN || !votes[k])
            continue;
        int rk = tax_framework_rank((tax_framework)k), rb = tax_framework_rank((tax_framework)best);
        if (best == FW_UNKNOWN || rk > rb || (rk == rb && votes[k] > votes[best]))
            best = k;
    }
    int own = f->framework >= 0 ? f->framework : (f->pattern->engine >= 0 ? f->pattern->engine : FW_UNKNOWN);
    if (own != FW_UNKNOWN && tax_framework_rank((tax_framework)own) >= tax_framework_rank((tax_framework)best))
        return (tax_framework)own;
    return (tax_framework)best;
}

void result_tally_inputs(const input_record *in, size_t n, result_tally *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        const char *c = in[i].container ? in[i].container : "";
        if (in[i].status == INPUT_ERROR)
            out->unreadable++;
        else if (strcmp(c, "binary") == 0)
            out->binary++;
        else if (strcmp(c, "oomscan") == 0)
            out->own_output++;
        else
            out->read++;
        out->bytes += in[i].bytes;
        out->lines += in[i].lines;
    }
}

void result_finding_clear(result_finding *rf)
{
    if (!rf)
        return;
    cJSON_Delete(rf->remediation);
    cJSON_Delete(rf->diagnosis);
    cJSON_Delete(rf->versions);
    free(rf->sources);
    memset(rf, 0, sizeof *rf);
}

/* s with every `<name>` of ph (name, value pairs, NULL-ended) replaced by its value; NULL when none
 * occurs or out of memory. The caller frees. */
static char *fill(const char *s, const char *const *ph)
{
    size_t cap = strlen(s) + 1, n = 0, hits = 0;
    for (const char *const *p = ph; *p; p += 2)
        cap += strlen(p[1]) * 4;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    for (const char *c = s; *c;) {
        const char *const *p = ph;
        for (; *p; p += 2) {
            size_t k = strlen(*p);
            if (*c == '<' && strncmp(c + 1, *p, k) == 0 && c[k + 1] == '>')
                break;
        }
        if (*p && n + strlen(p[1]) < cap) {
            n += (size_t)snprintf(out + n, cap - n, "%s", p[1]);
            c += strlen(*p) + 2;
            hits++;
        } else if (n + 1 < cap) {
            out[n++] = *c++;
        } else {
            break;
        }
    }
    out[n] = '\0';
    if (!hits) {
        free(out);
        return NULL;
    }
    return out;
}

/* Every value the finding carries goes into the commands it is told to run (issue 33): `sacct -j
 * <jobid>` for a job whose id is known is `sacct -j 4242`. Only placeholders whose value is known are
 * filled; the others stay for the user. */
static void fill_placeholders(cJSON *remediation, const finding *f, const char *job)
{
    char xid[32] = "";
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(f->memory, "xid");
    if (cJSON_IsNumber(x))
        snprintf(xid, sizeof xid, "Xid_%d", x->valueint);
    const char *ph[12];
    size_t k = 0;
    if (job && job[0])
        ph[k++] = "jobid", ph[k++] = job;
    if (f->host[0])
        ph[k++] = "node", ph[k++] = f->host;
    if (f->pid[0])
        ph[k++] = "pid", ph[k++] = f->pid;
    if (xid[0])
        ph[k++] = "xid", ph[k++] = xid;
    ph[k] = NULL;
    if (!k)
        return;
    cJSON *step, *set;
    cJSON_ArrayForEach(step, cJSON_GetObjectItemCaseSensitive(remediation, "steps"))
    {
        cJSON_ArrayForEach(set, cJSON_GetObjectItemCaseSensitive(step, "settings"))
        {
            cJSON *t = cJSON_GetObjectItemCaseSensitive(set, "text");
            char *filled = cJSON_IsString(t) ? fill(t->valuestring, ph) : NULL;
            if (filled)
                cJSON_ReplaceItemInObjectCaseSensitive(set, "text", cJSON_CreateString(filled));
            free(filled);
        }
    }
}

int result_finding_init(result_finding *rf, const result_scan *scan, size_t i, int with_advice)
{
    const story *st = scan->st;
    const finding *f = &st->f[i];
    memset(rf, 0, sizeof *rf);
    rf->index = i;
    rf->f = f;
    /* story_finish resolved the job: its own, else the one its source states, else the scan's */
    rf->job = f->job[0] ? f->job : f->job_id[0] ? f->job_id : scan->job;
    /* the votes of the finding's own job when inputs were told apart by job: never another job's. With
     * one job in the scan its votes are the scan's, which also hold what earlier --state runs and
     * merged records read (the story's per-job votes only see the bytes read in this run). */
    static const uint32_t none[FW__COUNT];
    const uint32_t *votes = scan->votes;
    if (st->n_votes > 1 && !(votes = story_job_votes(st, rf->job)))
        votes = none;
    rf->framework = result_framework(votes, f);
    rf->backend = story_backend(f);
    story_window win[STORY_MAX_WINDOWS * 4];
    size_t nw = story_sources(st, i, win, sizeof win / sizeof *win);
    if (nw > 1) {
        if (!(rf->sources = malloc(nw * sizeof *rf->sources))) {
            result_finding_clear(rf);
            return -1;
        }
        memcpy(rf->sources, win, nw * sizeof *win);
        rf->n_sources = nw;
    }
    rf->is_root = f->is_root;
    rf->caused_by = f->caused_by >= 0 ? st->f[f->caused_by].id : NULL;
    /* taxonomy.md: "strong" or "weak", absent when the phase is unknown */
    rf->phase_confidence = f->phase == PH_UNKNOWN ? NULL : f->phase_weak ? "weak" : "strong";
    if (with_advice) {
        /* diagnosis and checklist resolved together, so the steps follow the diagnosis */
        /* the settings of the finding's own job (story.h owns them per job) */
        config_view cfg;
        story_settings_view(st, rf->job, &cfg);
        advice *a = advice_resolve(scan->db, f, (int)rf->framework, &cfg, rf->job);
        if (a) {
            rf->remediation = a->remediation;
            rf->diagnosis = a->diagnosis;
            rf->versions = a->versions;
            a->remediation = a->diagnosis = a->versions = NULL;
            advice_free(a);
            fill_placeholders(rf->remediation, f, rf->job);
        }
    }
    if (!rf->remediation)
        rf->remediation = cJSON_CreateNull();
    if (!rf->remediation) {
        result_finding_clear(rf);
        return -1;
    }
    return 0;
}

int result_filter_wants(const result_filter *flt, const result_finding *rf)
{
    if (!flt)
        return 1;
    if (flt->roots_only && !rf->is_root)
        return 0;
    if (flt->class_mask && !(flt->class_mask & (1u << rf->f->cls)))
        return 0;
    if (flt->job && strcmp(rf->job ? rf->job : "", flt->job) != 0)
        return 0;
    const story_loc *at = &rf->f->first;
    if (flt->has_since) {
        int c = at->has_time ? timefmt_cmp(&at->time, &flt->since) : TIMEFMT_INCOMPARABLE;
        if (c == TIMEFMT_INCOMPARABLE || c < 0)
            return 0;
    }
    if (flt->has_until) {
        int c = at->has_time ? timefmt_cmp(&at->time, &flt->until) : TIMEFMT_INCOMPARABLE;
        if (c == TIMEFMT_INCOMPARABLE || c > 0)
            return 0;
    }
    return 1;
}

static result *build(const result_scan *scan, int with_advice)
{
    result *r = calloc(1, sizeof *r);
    size_t n = scan->st->n;
    size_t *order = malloc((n + 1) * sizeof *order);
    if (!r || !order || !(r->items = calloc(n + 1, sizeof *r->items)) || !(r->pos = malloc((n + 1) * sizeof *r->pos))) {
        free(order);
        result_free(r);
        return NULL;
    }
    r->scan = *scan;
    size_t shown = story_order(scan->st, order);
    for (size_t k = shown; k < n; k++)
        r->pos[order[k]] = (size_t)-1; /* joined into another finding: no item of its own */
    for (size_t k = 0; k < shown; k++) {
        result_finding *rf = &r->items[r->n];
        /* the filter needs the role and job, not the advice: a finding left out costs no advice */
        if (result_finding_init(rf, scan, order[k], 0) != 0) {
            free(order);
            result_free(r);
            return NULL;
        }
        if (!result_filter_wants(scan->filter, rf)) {
            result_finding_clear(rf);
            r->pos[order[k]] = (size_t)-1;
            continue;
        }
        if (with_advice) {
            result_finding_clear(rf);
            if (result_finding_init(rf, scan, order[k], 1) != 0) {
                free(order);
                result_free(r);
                return NULL;
            }
        }
        r->pos[order[k]] = r->n;
        r->n++;
    }
    free(order);
    return r;
}

result *result_new(const result_scan *scan)
{
    return build(scan, 1);
}

result *result_new_deferred(const result_scan *scan)
{
    result *r = build(scan, 0);
    if (r)
        r->deferred = 1;
    return r;
}

const result_finding *result_advised(const result *r, size_t k, result_finding *tmp)
{
    if (!r->deferred)
        return &r->items[k];
    return result_finding_init(tmp, &r->scan, r->items[k].index, 1) == 0 ? tmp : NULL;
}

void result_free(result *r)
{
    if (!r)
        return;
    for (size_t k = 0; k < r->n; k++)
        result_finding_clear(&r->items[k]);
    free(r->items);
    free(r->pos);
    free(r);
}

const result_finding *result_item(const result *r, size_t index)
{
    return index < r->scan.st->n && r->pos[index] < r->n ? &r->items[r->pos[index]] : NULL;
}
