/* remedy.c - checklists and diagnosis. */
#include "advice/remedy.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advice/setting.h"
#include "match/config.h"
#include "base/values.h"

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *settings_for(const cJSON *step, const char *fw)
{
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(step, "settings");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(set, fw);
    return cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0 ? v : NULL;
}

/* The settings of one framework, each with the job's value when the log printed it. */
static cJSON *settings_json(const cJSON *list, const config_store *cfg, const char *job)
{
    cJSON *arr = cJSON_Duplicate(list, 1);
    cJSON *set;
    cJSON_ArrayForEach(set, arr)
    {
        const config_entry *e = config_lookup(cfg, jstr(set, "key"), job);
        if (!e) {
            if (setting_publish(set) != 0) {
                cJSON_Delete(arr);
                return NULL;
            }
            continue;
        }
        char proposed[128];
        config_verdict v = config_propose(jstr(set, "change"), e->value, proposed, sizeof proposed);
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
        if (setting_publish(set) != 0) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

static cJSON *step_json(const cJSON *step, const char *fw, const config_store *cfg, const char *job)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    static const char *const keys[] = {"id", "do", "why", "tradeoff"};
    for (size_t i = 0; i < 4; i++)
        if (jstr(step, keys[i]))
            cJSON_AddStringToObject(o, keys[i], jstr(step, keys[i]));
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(step, "source");
    cJSON_AddItemToObject(o, "source", src ? cJSON_Duplicate(src, 1) : cJSON_CreateArray());
    /* the user's framework first, then generic, then the rest for reference */
    const cJSON *mine = settings_for(step, fw);
    const char *used = mine ? fw : "generic";
    if (!mine)
        mine = settings_for(step, "generic");
    cJSON_AddStringToObject(o, "framework", mine ? used : "generic");
    cJSON_AddItemToObject(o, "settings", mine ? settings_json(mine, cfg, job) : cJSON_CreateArray());
    return o;
}

cJSON *remedy_json(const pdb *db, const finding *f, int fw) { return remedy_json_config(db, f, fw, NULL, ""); }

cJSON *remedy_json_config(const pdb *db, const finding *f, int fw, const config_store *cfg, const char *job)
{
    const pdb_checklist *c = pdb_checklist_for(db, f->cls, f->phase);
    if (!c)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    char doc[300];
    snprintf(doc, sizeof doc, "docs/remediation/%s.md", c->id);
    cJSON_AddStringToObject(o, "id", c->id);
    cJSON_AddStringToObject(o, "doc", doc);
    if (jstr(c->json, "title"))
        cJSON_AddStringToObject(o, "title", jstr(c->json, "title"));
    cJSON *steps = cJSON_AddArrayToObject(o, "steps");
    const char *fwname = tax_framework_name((tax_framework)fw);
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(c->json, "steps");
    /* two passes keep the guide's order within each group */
    for (int pass = 0; pass < 2; pass++) {
        const cJSON *st;
        cJSON_ArrayForEach(st, all)
        {
            int has = settings_for(st, fwname) != NULL && fw != FW_UNKNOWN;
            if ((pass == 0) == has)
                cJSON_AddItemToArray(steps, step_json(st, fwname, cfg, job));
        }
    }
    return o;
}

/* ---- diagnosis ---------------------------------------------------------------------------- */

static int num(const cJSON *mem, const char *k, double *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(mem, k);
    if (!cJSON_IsNumber(x))
        return 0;
    *v = x->valuedouble;
    return 1;
}

static void add(cJSON *arr, const char *what, const char *arith)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return;
    cJSON_AddStringToObject(o, "what", what);
    cJSON_AddStringToObject(o, "arithmetic", arith);
    cJSON_AddItemToArray(arr, o);
}

static void cuda_oom(const finding *f, cJSON *arr)
{
    const cJSON *m = f->memory;
    double req = 0, fr = 0, tot = 0, ru = 0, res = 0, alloc = 0, gpu = -1;
    char a[64], b[64], c[64], what[400], ar[400];
    int has_req = num(m, "requested_bytes", &req), has_free = num(m, "free_bytes", &fr);
    num(m, "gpu", &gpu);
    char on_gpu[32] = "";
    if (gpu >= 0)
        snprintf(on_gpu, sizeof on_gpu, " on GPU %.0f", gpu);
    if (has_req && num(m, "total_bytes", &tot) && req > tot) {
        values_human_bytes(req, a, sizeof a);
        values_human_bytes(tot, b, sizeof b);
        snprintf(what, sizeof what, "one allocation of %s is larger than the whole GPU%s (%s): no memory setting "
                 "can fit it; shard the model or the sequence (tensor/sequence/context parallelism) or shorten it", a, on_gpu, b);
        snprintf(ar, sizeof ar, "requested %s > total capacity %s", a, b);
        add(arr, what, ar);
        return;
    }
    if (has_req && has_free) {
        double need = req - fr;
        values_human_bytes(req, a, sizeof a);
        values_human_bytes(fr, b, sizeof b);
        values_human_bytes(need > 0 ? need : 0, c, sizeof c);
        snprintf(what, sizeof what, "needs at least %s more%s", c, on_gpu);
        snprintf(ar, sizeof ar, "requested %s - free %s = %s", a, b, c);
        add(arr, what, ar);
    }
    int has_ru = num(m, "reserved_unallocated_bytes", &ru);
    if (!has_ru && num(m, "reserved_bytes", &res) && num(m, "allocated_bytes", &alloc)) {
        ru = res - alloc;
        has_ru = 1;
    }
    if (has_req && has_ru) {
        values_human_bytes(ru, a, sizeof a);
        values_human_bytes(req, b, sizeof b);
        /* the caching allocator could have served the request from reserved blocks if they were
         * contiguous: only then is fragmentation the cause */
        int frag = ru >= req;
        /* spell the allocator setting as the PyTorch that printed the message does: its own hint says
         * expandable_segments (2.2+) or max_split_size_mb (older) */
        int expandable = cJSON_GetObjectItemCaseSensitive(m, "reserved_unallocated_bytes") != NULL;
        for (size_t k = 0; k < f->n_evidence; k++) {
            if (strstr(f->evidence[k], "expandable_segments"))
                expandable = 1;
            else if (strstr(f->evidence[k], "max_split_size_mb"))
                expandable = 0;
        }
        const char *setting = expandable ? "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
                                         : "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128";
        if (frag)
            snprintf(what, sizeof what, "%s is reserved but unallocated, more than the %s requested: fragmentation "
                     "is likely the cause; set %s", a, b, setting);
        else
            snprintf(what, sizeof what, "only %s is reserved but unallocated, less than the %s requested, so "
                     "fragmentation is not the cause; reduce memory use (micro-batch first)", a, b);
        snprintf(ar, sizeof ar, "reserved-but-unallocated %s %s requested %s", a, frag ? ">=" : "<", b);
        add(arr, what, ar);
    }
    /* PyTorch 2.1-2.3 list every process on the GPU as "Process N has X memory in use", the failing
     * one included; later versions print the failing one apart ("this process has ...") and list only
     * the others. So without that clause, exactly one listed entry is the failing process: the one
     * closest to PyTorch's own share (allocated + reserved-but-unallocated), or the only one. */
    const cJSON *others = cJSON_GetObjectItemCaseSensitive(m, "other_processes");
    double self_est = 0;
    int self_listed = !cJSON_GetObjectItemCaseSensitive(m, "process_in_use_bytes");
    if (num(m, "allocated_bytes", &alloc))
        self_est = alloc + (has_ru ? ru : 0);
    if (cJSON_IsArray(others) && cJSON_GetArraySize(others) > 0) {
        int self_at = -1, i = 0;
        double best = 0;
        const cJSON *o;
        cJSON_ArrayForEach(o, others)
        {
            double v;
            if (self_listed && num(o, "in_use_bytes", &v) && (self_at < 0 || fabs(v - self_est) < best)) {
                self_at = i;
                best = fabs(v - self_est);
            }
            i++;
        }
        double sum = 0;
        int n = 0;
        i = 0;
        cJSON_ArrayForEach(o, others)
        {
            double v;
            if (i++ != self_at && num(o, "in_use_bytes", &v)) {
                sum += v;
                n++;
            }
        }
        if (n > 0 && sum > 0) {
            values_human_bytes(sum, a, sizeof a);
            snprintf(what, sizeof what, "%d other process(es) hold %s on this GPU: a co-located inference engine "
                     "keeps its pool; lower its memory fraction or make it release memory (sleep/offload) during "
                     "training", n, a);
            snprintf(ar, sizeof ar, "in-use memory of the processes listed, less the failing one = %s", a);
            add(arr, what, ar);
        }
    }
}

static void kv_cache(const finding *f, cJSON *arr)
{
    char what[400], ar[300], a[64], b[64];
    double need = 0, avail = 0;
    if (f->phase == PH_MODEL_INIT || f->phase == PH_UNKNOWN) {
        snprintf(what, sizeof what, "%s", "the engine could not fit its KV cache at start-up: give the engine more "
                 "memory (raise its memory fraction) or need less (shorter max model length, fewer sequences)");
        snprintf(ar, sizeof ar, "%s", "pool sized at start-up");
        if ((num(f->memory, "kv_required_bytes", &need) || num(f->memory, "requested_bytes", &need)) &&
            (num(f->memory, "kv_available_bytes", &avail) || num(f->memory, "free_bytes", &avail))) {
            values_human_bytes(need, a, sizeof a);
            values_human_bytes(avail, b, sizeof b);
            snprintf(ar, sizeof ar, "KV cache needed %s > available %s", a, b);
        }
    } else {
        snprintf(what, sizeof what, "%s", "the engine ran out of memory while generating: it needs less memory "
                 "(lower its memory fraction, fewer concurrent requests), not more");
        snprintf(ar, sizeof ar, "%s", "failure during rollout, after start-up succeeded");
    }
    add(arr, what, ar);
}

static void host_oom(const finding *f, cJSON *arr)
{
    double rss = 0, lim = 0, used = 0, tot = 0, thr = 0;
    char a[64], b[64], c[64], what[512], ar[300];
    const cJSON *m = f->memory;
    /* Ray's memory monitor states the node's use against its total (stored as limit_bytes, the
     * amount the monitor guards) and the threshold; the worker's own memory comes apart. */
    if (num(m, "used_bytes", &used) && (num(m, "total_bytes", &tot) || num(m, "limit_bytes", &tot)) && tot > 0) {
        values_human_bytes(used, a, sizeof a);
        values_human_bytes(tot, b, sizeof b);
        int n = num(m, "threshold_fraction", &thr)
                    ? snprintf(what, sizeof what, "the node used %s of %s (%.1f%%), above Ray's kill threshold of "
                               "%.0f%%: reduce host memory (CPU offload, data loader workers) or raise "
                               "RAY_memory_usage_threshold only if the node really has headroom",
                               a, b, 100.0 * used / tot, 100.0 * thr)
                    : snprintf(what, sizeof what, "the node used %s of %s (%.1f%%)", a, b, 100.0 * used / tot);
        if (n > 0 && (size_t)n < sizeof what && num(m, "rss_bytes", &rss)) {
            values_human_bytes(rss, c, sizeof c);
            snprintf(what + n, sizeof what - (size_t)n, "; the worker it killed held %s", c);
        }
        snprintf(ar, sizeof ar, "%s / %s = %.1f%%", a, b, 100.0 * used / tot);
        add(arr, what, ar);
    } else if (num(m, "rss_bytes", &rss) && num(m, "limit_bytes", &lim) && lim > 0) {
        values_human_bytes(rss, a, sizeof a);
        values_human_bytes(lim, b, sizeof b);
        snprintf(what, sizeof what, "the process held %s against a limit of %s", a, b);
        snprintf(ar, sizeof ar, "%s / %s = %.0f%%", a, b, 100.0 * rss / lim);
        add(arr, what, ar);
    } else if (num(m, "rss_bytes", &rss)) {
        values_human_bytes(rss, a, sizeof a);
        snprintf(what, sizeof what, "the killed process held %s of resident memory: compare it with the Slurm "
                 "--mem request or the container limit", a);
        snprintf(ar, sizeof ar, "anon-rss %s", a);
        add(arr, what, ar);
    }
}

cJSON *remedy_diagnosis_json(const finding *f)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return NULL;
    if (f->cls == CLS_CUDA_OOM)
        cuda_oom(f, arr);
    else if (f->cls == CLS_KV_CACHE_OOM)
        kv_cache(f, arr);
    else if (f->cls == CLS_HOST_OOM_KILL)
        host_oom(f, arr);
    if (cJSON_GetArraySize(arr) == 0) {
        cJSON_Delete(arr);
        return NULL;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "conclusions", arr);
    return o;
}

/* ---- markdown ----------------------------------------------------------------------------- */

typedef struct {
    oomscan_write_fn fn;
    void *ud;
    int failed;
} md;

static void w(md *m, const char *fmt, ...)
{
    if (m->failed)
        return;
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof buf)
        n = sizeof buf - 1;
    if (m->fn(m->ud, buf, (size_t)n) != 0)
        m->failed = 1;
}

int remedy_markdown(const pdb_checklist *c, oomscan_write_fn fn, void *ud)
{
    md m = {fn, ud, 0};
    const cJSON *j = c->json;
    w(&m, "# %s\n\n", jstr(j, "title") ? jstr(j, "title") : c->id);
    w(&m, "Checklist `%s`. Applies to:", c->id);
    const cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(j, "applies"))
    w(&m, " `%s`/`%s`", jstr(a, "class") ? jstr(a, "class") : "?", jstr(a, "phase") ? jstr(a, "phase") : "?");
    w(&m, ".\n\n");
    if (jstr(j, "summary"))
        w(&m, "%s\n\n", jstr(j, "summary"));
    int n = 0;
    const cJSON *st;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(j, "steps"))
    {
        w(&m, "## %d. %s\n\n", ++n, jstr(st, "do") ? jstr(st, "do") : "(step)");
        if (jstr(st, "why"))
            w(&m, "Why: %s\n\n", jstr(st, "why"));
        if (jstr(st, "tradeoff"))
            w(&m, "Trade-off: %s\n\n", jstr(st, "tradeoff"));
        const cJSON *set = cJSON_GetObjectItemCaseSensitive(st, "settings");
        if (cJSON_GetArraySize(set) > 0) {
            w(&m, "| framework | what to write or do |\n| --- | --- |\n");
            const cJSON *fwk;
            cJSON_ArrayForEach(fwk, set)
            {
                const cJSON *s1;
                cJSON_ArrayForEach(s1, fwk)
                {
                    const char *note = jstr(s1, "note");
                    char text[1024];
                    setting_text(s1, text, sizeof text);
                    /* a table cell cannot hold a bare '|' (shell pipelines in commands) */
                    char cell[1100];
                    size_t k = 0;
                    for (const char *p = text; *p && k + 2 < sizeof cell; p++) {
                        if (*p == '|')
                            cell[k++] = '\\';
                        cell[k++] = *p;
                    }
                    cell[k] = 0;
                    w(&m, "| %s | `%s`%s%s%s |\n", fwk->string, cell, note ? " (" : "", note ? note : "", note ? ")" : "");
                }
            }
            w(&m, "\n");
        }
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(st, "source");
        w(&m, "Source:");
        const cJSON *s2;
        cJSON_ArrayForEach(s2, src) w(&m, " %s", cJSON_IsString(s2) ? s2->valuestring : "?");
        w(&m, "\n\n");
    }
    return m.failed ? -1 : 0;
}
