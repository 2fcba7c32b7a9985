/* diagnosis.c - the arithmetic behind each conclusion; the words are in diagnosis.json. */
#include "advice/diagnosis.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/values.h"
#include "match/config.h"
#include "match/version.h"

#define MAX_VARS 24

/* The numbers one conclusion is worded with: {name} -> value. */
typedef struct {
    const char *name[MAX_VARS];
    char value[MAX_VARS][160];
    size_t n;
} vars;

static void var(vars *v, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void var(vars *v, const char *name, const char *fmt, ...)
{
    if (v->n >= MAX_VARS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->value[v->n], sizeof v->value[v->n], fmt, ap);
    va_end(ap);
    v->name[v->n++] = name;
}

static void var_bytes(vars *v, const char *name, double bytes)
{
    char b[64];
    values_human_bytes(bytes, b, sizeof b);
    var(v, name, "%s", b);
}

/* `tmpl` with every {name} replaced by its value; an unknown name is kept as written. */
static void render(const char *tmpl, const vars *v, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = tmpl; *p && n + 1 < cap;) {
        const char *end = *p == '{' ? strchr(p, '}') : NULL;
        size_t k = 0;
        if (end) {
            for (k = 0; k < v->n; k++)
                if (strlen(v->name[k]) == (size_t)(end - p - 1) && !strncmp(v->name[k], p + 1, (size_t)(end - p - 1)))
                    break;
        }
        if (end && k < v->n) {
            n += (size_t)snprintf(out + n, cap - n, "%s", v->value[k]);
            if (n >= cap)
                n = cap - 1;
            p = end + 1;
        } else
            out[n++] = *p++;
    }
    out[n < cap ? n : cap - 1] = '\0';
}

/* Adds conclusion `id` of the data, worded with `v`. */
static void conclude(const pdb *db, cJSON *arr, const char *id, const vars *v)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(pdb_conclusions(db), id);
    const cJSON *what = cJSON_GetObjectItemCaseSensitive(c, "what"), *ar = cJSON_GetObjectItemCaseSensitive(c, "arithmetic");
    if (!cJSON_IsString(what))
        return; /* a user's data folder that drops a conclusion drops it from the report */
    char w[1024], a[512];
    render(what->valuestring, v, w, sizeof w);
    render(cJSON_IsString(ar) ? ar->valuestring : "", v, a, sizeof a);
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return;
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "what", w);
    cJSON_AddStringToObject(o, "arithmetic", a);
    cJSON_AddItemToArray(arr, o);
}

static int num(const cJSON *mem, const char *k, double *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(mem, k);
    if (!cJSON_IsNumber(x))
        return 0;
    *v = x->valuedouble;
    return 1;
}

/* A CUDA memory snapshot's fragmentation (memory.snapshot, src/dumps/memsnap.c): 1 - largest free
 * block / free cache. High when the request did not fit any free block although the free cache held
 * enough (`fragmented`), or, with no request known, when half the free cache or more lies outside its
 * largest block. Concludes and returns 1 when the finding has a snapshot, else 0. */
static int measured_fragmentation(const pdb *db, const cJSON *m, double req, vars *v, cJSON *arr)
{
    const cJSON *snap = cJSON_GetObjectItemCaseSensitive(m, "snapshot");
    double frag, fc = 0, lf = 0, sreq = req;
    if (!cJSON_IsObject(snap) || !num(snap, "fragmentation", &frag))
        return 0;
    num(snap, "free_cached_bytes", &fc);
    num(snap, "largest_free_block_bytes", &lf);
    if (sreq < 0)
        num(snap, "requested_bytes", &sreq);
    var(v, "fragmentation", "%.0f%%", 100.0 * frag);
    var_bytes(v, "free_cached", fc);
    var_bytes(v, "largest_free", lf);
    if (req < 0)
        var_bytes(v, "requested", sreq > 0 ? sreq : 0); /* else the message's, already set */
    const cJSON *fragmented = cJSON_GetObjectItemCaseSensitive(snap, "fragmented");
    int high = cJSON_IsBool(fragmented) ? cJSON_IsTrue(fragmented) : frag >= 0.5;
    if (high)
        conclude(db, arr, "snapshot_fragmentation", v);
    else if (sreq > 0 && fc < sreq)
        conclude(db, arr, "snapshot_small_cache", v);
    else
        conclude(db, arr, "snapshot_low_fragmentation", v);
    return 1;
}

/* long: one verdict from the message's figures (request, free, total, reserved), its branches in order of
 * precedence over the same locals: the order of the branches is the decision. */
static void cuda_oom(const pdb *db, const finding *f, const config_view *cfg, const char *job, cJSON *arr)
{
    const cJSON *m = f->memory;
    double req = 0, fr = 0, tot = 0, ru = 0, res = 0, alloc = 0, gpu = -1;
    vars v = {0};
    int has_req = num(m, "requested_bytes", &req), has_free = num(m, "free_bytes", &fr);
    int has_tot = num(m, "total_bytes", &tot);
    num(m, "gpu", &gpu);
    if (gpu >= 0)
        var(&v, "on_gpu", " on GPU %.0f", gpu);
    else
        var(&v, "on_gpu", "%s", "");
    var_bytes(&v, "requested", req);
    var_bytes(&v, "total", tot);
    if (has_req && has_tot && req > tot) {
        conclude(db, arr, "too_large", &v);
        return;
    }
    if (has_req && has_free) {
        double need = req - fr;
        var_bytes(&v, "free", fr);
        var_bytes(&v, "shortfall", need > 0 ? need : 0);
        conclude(db, arr, "shortfall", &v);
    }
    int has_ru = num(m, "reserved_unallocated_bytes", &ru);
    if (!has_ru && num(m, "reserved_bytes", &res) && num(m, "allocated_bytes", &alloc)) {
        ru = res - alloc;
        has_ru = 1;
    }
    /* a fifth of the GPU or more is not a buffer's worth: the big levers come first, unless the
     * reserved blocks could have served the request (fragmentation, below) */
    double need = req - fr;
    if (has_req && has_free && has_tot && tot > 0 && need >= 0.2 * tot && !(has_ru && ru >= req)) {
        var(&v, "share", "%.0f%%", 100.0 * need / tot);
        conclude(db, arr, "large_shortfall", &v);
    }
    /* spell the allocator setting as the PyTorch that printed the message does: its own hint says
     * expandable_segments (newer) or max_split_size_mb (older) */
    int expandable = cJSON_GetObjectItemCaseSensitive(m, "reserved_unallocated_bytes") != NULL, hint_old = 0;
    for (size_t k = 0; k < f->n_evidence; k++) {
        if (strstr(f->evidence[k], "expandable_segments"))
            expandable = 1, hint_old = 0;
        else if (strstr(f->evidence[k], "max_split_size_mb"))
            expandable = 0, hint_old = 1;
    }
    /* the PyTorch the log printed settles it: expandable_segments came with 2.1 */
    const config_entry *torch = version_of(cfg, "torch", job);
    int torch_old = torch && version_cmp(torch->value, "2.1") < 0;
    if (torch) {
        expandable = !torch_old;
        hint_old = 0;
        var(&v, "torch", "%s", torch->value);
        var(&v, "at", "%s:%llu", torch->file, (unsigned long long)torch->line);
    }
    var(&v, "setting", "%s", expandable ? "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
                                        : "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512");
    /* a memory snapshot measured what the message only lets us infer: it decides */
    if (!measured_fragmentation(db, m, has_req ? req : -1, &v, arr) && has_req && has_ru) {
        var_bytes(&v, "unallocated", ru);
        /* the caching allocator could have served the request from reserved blocks if they were
         * contiguous: only then is fragmentation the cause */
        conclude(db, arr, ru >= req ? "fragmentation" : "no_fragmentation", &v);
    }
    if (hint_old)
        conclude(db, arr, "old_allocator", &v);
    else if (torch_old)
        conclude(db, arr, "torch_predates_expandable", &v);
    /* PyTorch 0.4-1.3 ended the message with "N cached)": that PyTorch has no memory history recorder
     * (issue 33 item 6), whatever version a later line may print */
    if (f->pattern && f->pattern->id && strcmp(f->pattern->id, "cuda_oom.torch_v0_cached") == 0)
        conclude(db, arr, "torch_v0_no_history", &v);
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
            double x;
            if (self_listed && num(o, "in_use_bytes", &x) && (self_at < 0 || fabs(x - self_est) < best)) {
                self_at = i;
                best = fabs(x - self_est);
            }
            i++;
        }
        double sum = 0;
        int n = 0;
        i = 0;
        cJSON_ArrayForEach(o, others)
        {
            double x;
            if (i++ != self_at && num(o, "in_use_bytes", &x)) {
                sum += x;
                n++;
            }
        }
        if (n > 0 && sum > 0) {
            var(&v, "others_n", "%d", n);
            var_bytes(&v, "others", sum);
            conclude(db, arr, "other_processes", &v);
        }
    }
    if (f->phase == PH_UNKNOWN)
        conclude(db, arr, "phase_unknown", &v);
}

static void kv_cache(const pdb *db, const finding *f, cJSON *arr)
{
    double need = 0, avail = 0;
    vars v = {0};
    if (f->phase == PH_MODEL_INIT || f->phase == PH_UNKNOWN) {
        if ((num(f->memory, "kv_required_bytes", &need) || num(f->memory, "requested_bytes", &need)) &&
            (num(f->memory, "kv_available_bytes", &avail) || num(f->memory, "free_bytes", &avail))) {
            var_bytes(&v, "kv_need", need);
            var_bytes(&v, "kv_avail", avail);
            conclude(db, arr, "kv_startup_sizes", &v);
        } else
            conclude(db, arr, "kv_startup", &v);
    } else
        conclude(db, arr, "kv_generating", &v);
}

/* A host-memory failure's figures: the node's use against its total (Ray's monitors, whichever class
 * they gave), else the killed process's resident memory against its limit. */
static void host_oom(const pdb *db, const finding *f, cJSON *arr)
{
    double rss = 0, lim = 0, used = 0, tot = 0, thr = 0;
    const cJSON *m = f->memory;
    vars v = {0};
    /* Ray's memory monitor states the node's use against its total (stored as limit_bytes, the
     * amount the monitor guards) and the threshold; the worker's own memory comes apart. */
    if (num(m, "used_bytes", &used) && (num(m, "total_bytes", &tot) || num(m, "limit_bytes", &tot)) && tot > 0) {
        var_bytes(&v, "used", used);
        var_bytes(&v, "total", tot);
        var(&v, "pct", "%.1f%%", 100.0 * used / tot);
        int worker = num(m, "rss_bytes", &rss);
        if (worker)
            var_bytes(&v, "rss", rss);
        if (num(m, "threshold_fraction", &thr)) {
            var(&v, "threshold", "%.0f%%", 100.0 * thr);
            conclude(db, arr, worker ? "ray_node_worker" : "ray_node", &v);
        } else if (num(m, "threshold_percent", &thr)) {
            /* Ray before 2.0 refused the task instead of killing a worker: the memory was in use */
            var(&v, "threshold", "%.0f%%", thr);
            conclude(db, arr, "ray_node_refused", &v);
        } else
            conclude(db, arr, worker ? "node_used_worker" : "node_used", &v);
    } else if (num(m, "rss_bytes", &rss) && num(m, "limit_bytes", &lim) && lim > 0) {
        var_bytes(&v, "rss", rss);
        var_bytes(&v, "limit", lim);
        var(&v, "pct", "%.0f%%", 100.0 * rss / lim);
        conclude(db, arr, "rss_limit", &v);
    } else if (num(m, "rss_bytes", &rss)) {
        var_bytes(&v, "rss", rss);
        conclude(db, arr, "rss", &v);
    }
}

/* What the log itself rules out: a loader with no worker processes, error files already written.
 * long: one test per premise the log can refute, in the order the checklist reads them; each is a few
 * lines and they share the finding's settings view. */
static void ruled_out(const pdb *db, const finding *f, const config_view *cfg, const char *job, cJSON *arr)
{
    vars v = {0};
    if (f->cls == CLS_HOST_OOM_KILL || f->cls == CLS_HOST_MEMORY_ERROR || f->cls == CLS_SHM_EXHAUSTED) {
        static const char *const keys[] = {"num_workers", "data.dataloader_num_workers", "dataloader_num_workers"};
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
            const config_entry *e = config_view_lookup(cfg, keys[i], job);
            if (e && strcmp(e->value, "0") == 0) {
                var(&v, "key", "%s", e->path);
                var(&v, "value", "%s", e->value);
                var(&v, "at", "%s:%llu", e->file, (unsigned long long)e->line);
                conclude(db, arr, "no_loader_workers", &v);
                break;
            }
        }
    }
    /* Settings of a source naming no job (a batch script beside several jobs' outputs) were held back:
     * say which, and how the user ties them to this job (issue 31). The latest read names them. */
    if (cfg && cfg->withheld && cfg->withheld->n && job && *job) {
        const config_entry *e = &cfg->withheld->e[0];
        for (size_t i = 1; i < cfg->withheld->n; i++)
            if (cfg->withheld->e[i].seq > e->seq)
                e = &cfg->withheld->e[i];
        vars w = {0};
        var(&w, "key", "%s", e->path);
        var(&w, "value", "%s", e->value);
        var(&w, "file", "%s", e->file);
        var(&w, "at", "%s:%llu", e->file, (unsigned long long)e->line);
        var(&w, "job", "%s", job);
        conclude(db, arr, "settings_withheld", &w);
    }
    /* "Fatal Python error: <signal name>" is the fault handler's own line (joined into the crash it
     * reports): it is on already. Other lines naming a signal say SIGABRT, or give its number (signo). */
    const cJSON *sig = cJSON_GetObjectItemCaseSensitive(f->memory, "signal");
    if (f->cls == CLS_SEGFAULT && cJSON_IsString(sig) && strncmp(sig->valuestring, "SIG", 3) != 0 &&
        !cJSON_GetObjectItemCaseSensitive(f->memory, "signo")) {
        var(&v, "signal", "%.40s", sig->valuestring);
        conclude(db, arr, "fault_handler_on", &v);
    }
    /* an allocation the training process itself was refused in a known phase other than data loading
     * (no DataLoader worker named): a limit on the process comes before the loader's workers (issue 33
     * item 6: a prlimit refusal in backward was told to use fewer loader workers first) */
    if (f->cls == CLS_HOST_MEMORY_ERROR && f->phase != PH_UNKNOWN && f->phase != PH_DATA_LOADING) {
        int in_worker = 0;
        for (size_t k = 0; k < f->n_evidence && !in_worker; k++)
            in_worker = strstr(f->evidence[k], "DataLoader worker") != NULL || strstr(f->evidence[k], "worker process") != NULL;
        if (!in_worker) {
            var(&v, "phase", "%s", tax_phase_name(f->phase));
            conclude(db, arr, "main_process_refused", &v);
        }
    }
    /* a finding read from the NCCL flight recorder's dumps: the recorder is on, and its dumps already
     * name the ranks that never joined (issue 33 item 6) */
    const cJSON *missing = cJSON_GetObjectItemCaseSensitive(f->memory, "missing_ranks");
    const cJSON *waiting = cJSON_GetObjectItemCaseSensitive(f->memory, "waiting_ranks");
    if ((f->first.kind && strcmp(f->first.kind, "flight_recorder") == 0) || (missing && waiting)) {
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(f->memory, "seq");
        var(&v, "seq", "%d", cJSON_IsNumber(seq) ? seq->valueint : 0);
        if (cJSON_IsNumber(missing)) {
            var(&v, "missing", "%d", missing->valueint);
            conclude(db, arr, "flight_recorder_read", &v);
        } else /* the dumps compared the ranks (a mismatch): the recorder is on, no rank is missing */
            conclude(db, arr, "flight_recorder_on", &v);
    }
    /* torchelastic prints "error_file: <N/A>" when the worker wrote none. Only what the finding itself
     * carries is used (its memory, its evidence), not the job's settings: records merged from several
     * nodes (oomscan merge, --state) carry findings, not settings, and must conclude the same. */
    const cJSON *ef = cJSON_GetObjectItemCaseSensitive(f->memory, "error_file");
    if (cJSON_IsString(ef) && ef->valuestring[0] && ef->valuestring[0] != '<') {
        var(&v, "path", "%.150s", ef->valuestring);
        conclude(db, arr, "error_files_in_use", &v);
        return;
    }
    for (size_t k = 0; k < f->n_evidence; k++) {
        const char *p = strstr(f->evidence[k], "error_file:");
        if (!p)
            continue;
        p += strlen("error_file:");
        while (*p == ' ')
            p++;
        if (*p && *p != '<') {
            size_t n = strcspn(p, " \t\r\n");
            var(&v, "path", "%.*s", (int)(n < 150 ? n : 150), p);
            conclude(db, arr, "error_files_in_use", &v);
            break;
        }
    }
}

/* The job's own memory telemetry (memory.trend, src/advice/memtrend.c): a conclusion `memory_trend`
 * whose wording and premises follow the verdict (data: memory_trend_growth / memory_trend_flat, named
 * in the conclusion's "rule"). It goes first: whether the memory leaked or peaked decides what to
 * change before any other number does. */
static void memory_trend(const pdb *db, const finding *f, cJSON *arr)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(f->memory, "trend");
    const char *verdict = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "verdict"));
    const char *metric = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "metric"));
    double from, to, first, last, steady, slope;
    if (!verdict || !metric || !num(t, "from_step", &from) || !num(t, "to_step", &to) || !num(t, "first_bytes", &first) ||
        !num(t, "last_bytes", &last) || !num(t, "last_steady_bytes", &steady) || !num(t, "slope_per_step", &slope))
        return;
    static const struct {
        const char *metric, *words;
    } names[] = {{"gpu_max_allocated", "the GPU's peak allocated memory"},
                 {"gpu_allocated", "the GPU's allocated memory"},
                 {"gpu_max_reserved", "the GPU's peak reserved memory"},
                 {"gpu_reserved", "the GPU's reserved memory"},
                 {"host_used", "host memory"}};
    const char *words = metric;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(names[i].metric, metric) == 0)
            words = names[i].words;
    vars v = {0};
    var(&v, "trend_metric", "%s", words);
    var(&v, "trend_from", "%.0f", from);
    var(&v, "trend_to", "%.0f", to);
    var_bytes(&v, "trend_first", first);
    var_bytes(&v, "trend_last", last);
    var_bytes(&v, "trend_steady", steady);
    var_bytes(&v, "trend_slope", slope > 0 ? slope : 0);
    var(&v, "trend_points", "%d", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "points")));
    const char *rule = strcmp(verdict, "growth") == 0 ? "memory_trend_growth" : "memory_trend_flat";
    int before = cJSON_GetArraySize(arr);
    conclude(db, arr, rule, &v);
    cJSON *c = cJSON_GetArrayItem(arr, before);
    if (c) {
        cJSON_ReplaceItemInObjectCaseSensitive(c, "id", cJSON_CreateString("memory_trend"));
        cJSON_AddStringToObject(c, "rule", rule);
        cJSON_AddStringToObject(c, "verdict", verdict);
    }
}

cJSON *diagnosis_json(const pdb *db, const finding *f, const config_view *cfg, const char *job)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return NULL;
    memory_trend(db, f, arr);
    if (f->cls == CLS_CUDA_OOM)
        cuda_oom(db, f, cfg, job ? job : "", arr);
    else if (f->cls == CLS_KV_CACHE_OOM)
        kv_cache(db, f, arr);
    else if (f->cls == CLS_HOST_OOM_KILL || (f->cls == CLS_HOST_MEMORY_ERROR && num(f->memory, "used_bytes", &(double){0})))
        host_oom(db, f, arr); /* a host_memory_error states the node's figures only from Ray's old monitor */
    ruled_out(db, f, cfg, job ? job : "", arr);
    if (cJSON_GetArraySize(arr) == 0) {
        cJSON_Delete(arr);
        return NULL;
    }
    cJSON *o = cJSON_CreateObject();
    if (!o) {
        cJSON_Delete(arr);
        return NULL;
    }
    cJSON_AddItemToObject(o, "conclusions", arr);
    return o;
}

int diagnosis_says(const pdb *db, const char *id, const char *key, const char *premise)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(pdb_conclusions(db), id);
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(c, key))
    if (cJSON_IsString(p) && strcmp(p->valuestring, premise) == 0)
        return 1;
    return 0;
}
