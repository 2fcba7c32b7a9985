/* advice.c - diagnosis and checklist, resolved once per finding and ordered by the diagnosis. */
#include "advice/advice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advice/diagnosis.h"
#include "advice/setting.h"
#include "match/config.h"
#include "match/version.h"
#include "base/jsonget.h"

static const cJSON *settings_for(const cJSON *step, const char *fw)
{
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(step, "settings");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(set, fw);
    return cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0 ? v : NULL;
}

/* The first conclusion of `diag` that refutes (key "refutes") or supports ("supports") one of the
 * premises `p` names (a string or an array of them); its index into the conclusions, or -1. */
static int conclusion_on(const pdb *db, const cJSON *diag, const cJSON *p, const char *key, const cJSON **which)
{
    if (!p)
        return -1;
    int i = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(diag, "conclusions"))
    {
        /* a conclusion worded by one of several rules (memory_trend) is read by its rule's premises */
        const char *id = json_str(c, "rule") ? json_str(c, "rule") : json_str(c, "id");
        const cJSON *one;
        if (cJSON_IsString(p) && id && diagnosis_says(db, id, key, p->valuestring)) {
            *which = c;
            return i;
        }
        cJSON_ArrayForEach(one, p) if (cJSON_IsString(one) && id && diagnosis_says(db, id, key, one->valuestring))
        {
            *which = c;
            return i;
        }
        i++;
    }
    return -1;
}

/* 1 when the job's logs printed a version outside the range a setting exists in: "since" {component:
 * version} (first in that version) or "before" {component: version} (gone in it). A version the logs
 * never printed excludes nothing: both forms are then given. */
static int version_excludes(const cJSON *set, const config_view *cfg, const char *job)
{
    static const char *const keys[] = {"since", "before"};
    for (int k = 0; k < 2; k++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(set, keys[k]))
        {
            const config_entry *v = cJSON_IsString(c) ? version_of(cfg, c->string, job) : NULL;
            if (v && (version_cmp(v->value, c->valuestring) < 0) == (k == 0))
                return 1;
        }
    }
    return 0;
}

/* A command naming "<jobid>" (sacct -j <jobid>) names the job itself when the finding's job is known:
 * a placeholder beside a known id reads as if the id were not known (issue 31). */
static void fill_job(cJSON *set, const char *job)
{
    cJSON *key = cJSON_GetObjectItemCaseSensitive(set, "key");
    const char *at = cJSON_IsString(key) && job && *job ? strstr(key->valuestring, "<jobid>") : NULL;
    if (!at)
        return;
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - key->valuestring), key->valuestring, job, at + strlen("<jobid>"));
    cJSON_SetValuestring(key, buf);
}

/* The settings of one framework as the user writes them, each with the job's value when the log
 * printed it; a setting whose premise the diagnosis refutes (one this PyTorch does not have) is
 * left out. */
static cJSON *settings_json(const pdb *db, const cJSON *list, const cJSON *diag, const config_view *cfg, const char *job)
{
    cJSON *arr = cJSON_CreateArray();
    const cJSON *src;
    cJSON_ArrayForEach(src, list)
    {
        const cJSON *why = NULL;
        if (conclusion_on(db, diag, cJSON_GetObjectItemCaseSensitive(src, "premise"), "refutes", &why) >= 0 ||
            version_excludes(src, cfg, job))
            continue;
        cJSON *set = cJSON_Duplicate(src, 1);
        if (!set || !arr) {
            cJSON_Delete(set);
            cJSON_Delete(arr);
            return NULL;
        }
        fill_job(set, job);
        cJSON_DeleteItemFromObjectCaseSensitive(set, "premise");
        cJSON_DeleteItemFromObjectCaseSensitive(set, "since");
        cJSON_DeleteItemFromObjectCaseSensitive(set, "before");
        cJSON_AddItemToArray(arr, set);
        const config_entry *e = config_view_lookup(cfg, json_str(set, "key"), job);
        if (e) {
            char proposed[128];
            config_verdict v = config_propose(json_str(set, "change"), e->value, proposed, sizeof proposed);
            cJSON_AddStringToObject(set, "current", e->value);
            if (v == CONFIG_PROPOSED)
                cJSON_AddStringToObject(set, "proposed", proposed);
            else if (v == CONFIG_ALREADY)
                cJSON_AddTrueToObject(set, "already");
            cJSON *at = cJSON_AddObjectToObject(set, "read_at");
            if (at) {
                cJSON_AddStringToObject(at, "path", e->file);
                cJSON_AddNumberToObject(at, "line", (double)e->line);
                cJSON_AddStringToObject(at, "key", e->path);
            }
            cJSON_DeleteItemFromObjectCaseSensitive(set, "default");
            cJSON_DeleteItemFromObjectCaseSensitive(set, "default_source");
        } else if (json_str(set, "default")) {
            /* the log never printed the job's value: the framework's documented default (cited in
             * the data) gives a concrete value, written as a suggestion (issue 33 item 4) */
            char suggested[128];
            const char *ch = json_str(set, "change");
            int numeric = ch && (!strcmp(ch, "halve") || !strcmp(ch, "double") || !strcmp(ch, "decrease") ||
                                 !strcmp(ch, "increase"));
            if (numeric && config_propose(ch, json_str(set, "default"), suggested, sizeof suggested) == CONFIG_PROPOSED)
                cJSON_AddStringToObject(set, "suggested", suggested);
            else {
                cJSON_DeleteItemFromObjectCaseSensitive(set, "default");
                cJSON_DeleteItemFromObjectCaseSensitive(set, "default_source");
            }
        }
        if (setting_publish(set) != 0) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

static cJSON *step_json(const pdb *db, const cJSON *step, const char *fw, const cJSON *diag, const config_view *cfg,
                        const char *job)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    static const char *const keys[] = {"id", "do", "why", "tradeoff"};
    for (size_t i = 0; i < 4; i++)
        if (json_str(step, keys[i]))
            cJSON_AddStringToObject(o, keys[i], json_str(step, keys[i]));
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(step, "source");
    cJSON_AddItemToObject(o, "source", src ? cJSON_Duplicate(src, 1) : cJSON_CreateArray());
    /* the user's framework, else generic; never another framework's keys */
    const cJSON *mine = settings_for(step, fw);
    const char *used = mine ? fw : "generic";
    if (!mine)
        mine = settings_for(step, "generic");
    cJSON_AddStringToObject(o, "framework", mine ? used : "generic");
    cJSON *sets = mine ? settings_json(db, mine, diag, cfg, job) : cJSON_CreateArray();
    if (!sets) {
        cJSON_Delete(o);
        return NULL;
    }
    cJSON_AddItemToObject(o, "settings", sets);
    return o;
}

typedef struct {
    const cJSON *step;
    int bucket, priority, index;
    const cJSON *because; /* the conclusion that moved the step */
} placed;

static int by_place(const void *a, const void *b)
{
    const placed *x = a, *y = b;
    if (x->bucket != y->bucket)
        return x->bucket - y->bucket;
    if (x->priority != y->priority)
        return x->priority - y->priority;
    return x->index - y->index;
}

/* Where a step goes: 0 the diagnosis supports it (ordered by that conclusion), 1 it names the user's
 * framework, 2 generic, 3 the diagnosis refutes its premise. */
static placed place(const pdb *db, const cJSON *st, int i, const char *fwname, int fw, const cJSON *diag)
{
    placed p = {st, 2, 0, i, NULL};
    const cJSON *c = NULL;
    int at;
    if ((at = conclusion_on(db, diag, cJSON_GetObjectItemCaseSensitive(st, "premise"), "refutes", &c)) >= 0) {
        p.bucket = 3;
        p.because = c;
    } else if ((at = conclusion_on(db, diag, cJSON_GetObjectItemCaseSensitive(st, "first_when"), "supports", &c)) >= 0) {
        p.bucket = 0;
        p.priority = at;
        p.because = c;
    } else if (fw != FW_UNKNOWN && settings_for(st, fwname))
        p.bucket = 1;
    return p;
}

/* Whether `list` (a JSON array of framework names) names fw. */
static int names_framework(const cJSON *list, const char *fw)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, list)
    if (cJSON_IsString(x) && fw && strcmp(x->valuestring, fw) == 0)
        return 1;
    return 0;
}

/* A step written for some frameworks only ("only_for": JAX's preallocation) or wrong for some
 * ("not_for": PyTorch's allocator for a JAX or TensorFlow job) is given by the job's framework
 * (issue 33 item 6). A job of no known framework gets every step but the "only_for" ones. */
static int step_applies(const cJSON *st, const char *fw)
{
    const cJSON *only = cJSON_GetObjectItemCaseSensitive(st, "only_for");
    if (only && !names_framework(only, fw))
        return 0;
    return !names_framework(cJSON_GetObjectItemCaseSensitive(st, "not_for"), fw);
}

static cJSON *checklist_json(const pdb *db, const finding *f, int fw, const cJSON *diag, const config_view *cfg,
                             const char *job)
{
    const pdb_checklist *c = pdb_checklist_for(db, f->cls, f->phase);
    if (!c || !c->json)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    char doc[300];
    snprintf(doc, sizeof doc, "docs/remediation/%s.md", c->id);
    cJSON_AddStringToObject(o, "id", c->id);
    cJSON_AddStringToObject(o, "doc", doc);
    if (json_str(c->json, "title"))
        cJSON_AddStringToObject(o, "title", json_str(c->json, "title"));
    cJSON *steps = cJSON_AddArrayToObject(o, "steps");
    const char *fwname = tax_framework_name((tax_framework)fw);
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(c->json, "steps");
    int n = cJSON_GetArraySize(all);
    placed *order = calloc((size_t)n + 1, sizeof *order);
    if (!order || !steps) {
        free(order);
        cJSON_Delete(o);
        return NULL;
    }
    int i = 0;
    const cJSON *st, *c1;
    cJSON_ArrayForEach(st, all)
    {
        /* a step for one cause only (the leak steps): listed when a conclusion supports that cause */
        const cJSON *only = cJSON_GetObjectItemCaseSensitive(st, "only_when");
        if (!step_applies(st, fwname) || (only && conclusion_on(db, diag, only, "supports", &c1) < 0))
            continue;
        order[i] = place(db, st, i, fwname, fw, diag);
        i++;
    }
    n = i;
    qsort(order, (size_t)n, sizeof *order, by_place);
    for (i = 0; i < n; i++) {
        cJSON *s = step_json(db, order[i].step, fwname, diag, cfg, job);
        if (!s) {
            free(order);
            cJSON_Delete(o);
            return NULL;
        }
        /* the reason a step moved, in the diagnosis' own words */
        if (order[i].because) {
            cJSON *why = cJSON_AddObjectToObject(s, order[i].bucket == 3 ? "premise_refuted" : "first_because");
            if (why) {
                cJSON_AddStringToObject(why, "conclusion", json_str(order[i].because, "id"));
                cJSON_AddStringToObject(why, "what", json_str(order[i].because, "what"));
            }
        }
        cJSON_AddItemToArray(steps, s);
    }
    free(order);
    return o;
}

/* The versions the job's logs printed, as {"component": "version"}; NULL when none or out of memory. */
typedef struct {
    const config_view *cfg;
    const char *job;
    cJSON *o;
    int nomem;
} versions_ctx;

static void versions_in(const config_store *st, void *ud)
{
    versions_ctx *x = ud;
    for (size_t i = 0; i < st->n && !x->nomem; i++) {
        const config_entry *e = &st->e[i];
        if (strncmp(e->path, "version.", 8) != 0 || config_view_get(x->cfg, e->path, x->job) != e)
            continue; /* not a version, another job's, or another read of the same component wins */
        if (!x->o && !(x->o = cJSON_CreateObject()))
            x->nomem = 1;
        else
            cJSON_AddStringToObject(x->o, e->path + 8, e->value);
    }
}

static cJSON *versions_json(const config_view *cfg, const char *job)
{
    versions_ctx x = {cfg, job, NULL, 0};
    config_view_each(cfg, versions_in, &x);
    return x.o;
}

advice *advice_resolve(const pdb *db, const finding *f, int fw, const config_view *cfg, const char *job)
{
    advice *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    if (!job)
        job = "";
    a->versions = versions_json(cfg, job);
    a->diagnosis = diagnosis_json(db, f, cfg, job);
    a->remediation = checklist_json(db, f, fw, a->diagnosis, cfg, job);
    if (!a->remediation) {
        advice_free(a);
        return NULL;
    }
    return a;
}

void advice_free(advice *a)
{
    if (!a)
        return;
    cJSON_Delete(a->remediation);
    cJSON_Delete(a->diagnosis);
    cJSON_Delete(a->versions);
    free(a);
}
