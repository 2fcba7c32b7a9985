/* story.c - grouping, fingerprints, jobs, joined windows and root cause. */
#include "story/story.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match/config.h"

/* Enough for 20,000 jobs' logs of a few findings each in one run (docs/performance.md). */
#define STORY_MAX_FINDINGS (1u << 18)

struct story_jobvotes {
    char job[32];
    uint32_t votes[FW__COUNT];
    long next; /* chain of the same hash bucket */
};

#define VOTE_BUCKETS 1024

story *story_new(void) { return calloc(1, sizeof(story)); }

static void free_loc(story_loc *l)
{
    free(l->path);
    free(l->member);
}

static void free_set(story_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->items[i]);
    free(s->items);
}

static void free_windows(finding *f)
{
    for (size_t i = 0; i < f->n_windows; i++) {
        free(f->windows[i].path);
        free(f->windows[i].member);
    }
    free(f->windows);
    f->windows = NULL;
    f->n_windows = 0;
}

static void free_finding(finding *f)
{
    free_windows(f);
    free(f->phase_evidence);
    free(f->group);
    free_loc(&f->first);
    free_loc(&f->last);
    for (size_t i = 0; i < f->n_evidence; i++)
        free(f->evidence[i]);
    cJSON_Delete(f->memory);
    free_set(&f->ranks);
    free_set(&f->hosts);
}

void story_free(story *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free_finding(&s->f[i]);
    free(s->f);
    free(s->bucket);
    free(s->votes);
    free(s->vbucket);
    for (size_t i = 0; i < s->n_settings; i++)
        config_store_free(s->settings[i]);
    free(s->settings);
    free(s->settings_job);
    free(s->sbucket);
    free(s->snext);
    free(s);
}

static uint64_t fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

#define FNV_BASIS 0xcbf29ce484222325ULL

/* A Ray job id as worker log names carry it: 8 hex digits (a submission id, "raysubmit_...", names the
 * same job in another vocabulary and is not one). */
static int is_ray_job(const char *r)
{
    size_t n = 0;
    while (n < 9 && isxdigit((unsigned char)r[n]))
        n++;
    return n == 8 && !r[8];
}

/* A folder that names one rank or node of a run (rank3, rank_3, worker-2, node12, gpu-node-3): its
 * run is the folder holding it. A bare number is not one: runs are numbered folders as often. */
static int names_member(const char *c, size_t n)
{
    static const char *const words[] = {"rank", "worker", "node"};
    for (size_t w = 0; w < sizeof words / sizeof *words; w++) {
        size_t wl = strlen(words[w]);
        if (n <= wl || strncmp(c, words[w], wl) != 0)
            continue;
        size_t k = wl + (c[wl] == '-' || c[wl] == '_');
        while (k < n && isdigit((unsigned char)c[k]))
            k++;
        if (k == n && isdigit((unsigned char)c[n - 1]))
            return 1;
    }
    for (size_t k = 0; k + 5 <= n; k++)
        if (memcmp(c + k, "-node", 5) == 0)
            return 1;
    return 0;
}

void story_run_folder(const char *path, const char *member, char *out, size_t cap, int *attempt)
{
    char name[1024];
    snprintf(name, sizeof name, "%s%s%s", path ? path : "", member ? "/" : "", member ? member : "");
    const char *comp[64];
    size_t len[64], n = 0;
    if (attempt)
        *attempt = -1;
    /* the folders of the name (its last part is the file), without "." and with ".." applied */
    for (const char *c = name;;) {
        while (*c == '/')
            c++;
        const char *e = strchr(c, '/');
        if (!e)
            break;
        size_t l = (size_t)(e - c);
        if (l == 2 && c[0] == '.' && c[1] == '.' && n > 0 && !(len[n - 1] == 2 && memcmp(comp[n - 1], "..", 2) == 0))
            n--;
        else if (!(l == 1 && c[0] == '.') && n < 64)
            comp[n] = c, len[n] = l, n++;
        c = e;
    }
    /* torchrun's log tree: <log dir>/<run id>/attempt_<n>/<local rank>/{stdout,stderr}.log, error.json;
     * the run's folder is the one holding the log dir (its console output beside it) */
    for (size_t i = n; i-- > 0;)
        if (len[i] > 8 && memcmp(comp[i], "attempt_", 8) == 0 && isdigit((unsigned char)comp[i][8]) && i >= 1) {
            size_t k = 8;
            while (k < len[i] && isdigit((unsigned char)comp[i][k]))
                k++;
            if (k != len[i])
                continue;
            if (attempt)
                *attempt = atoi(comp[i] + 8);
            n = i >= 2 ? i - 2 : 0;
            break;
        }
    while (n > 0 && names_member(comp[n - 1], len[n - 1]))
        n--;
    size_t o = 0;
    if (cap == 0)
        return;
    if (name[0] == '/' && o + 1 < cap)
        out[o++] = '/';
    for (size_t i = 0; i < n; i++) {
        if (i && o + 1 < cap)
            out[o++] = '/';
        size_t l = len[i] < cap - 1 - o ? len[i] : cap - 1 - o;
        memcpy(out + o, comp[i], l);
        o += l;
    }
    out[o] = '\0';
}

/* The job lines are grouped under before story_finish decides each finding's job: the job the source
 * states, else a Ray worker log's job id, so that two Ray jobs printing the same line stay two findings
 * (findings are per job). When they turn out to be one job (one Ray job in the scan, --job-id), their
 * ids are equal and story_finish joins them. A source naming no job is grouped under its run folder
 * (story_run_folder), so that the same line in two runs stays two findings until story_finish decides
 * whether they are two runs. buf holds the Ray and folder forms. */
static const char *group_job(const char *job_id, const char *ray_job, const char *path, const char *member, char *buf,
                             size_t cap)
{
    if (job_id && *job_id)
        return job_id;
    if (ray_job && is_ray_job(ray_job)) {
        snprintf(buf, cap, "ray:%s", ray_job);
        return buf;
    }
    if (cap < 5)
        return "";
    memcpy(buf, "dir:", 4);
    story_run_folder(path, member, buf + 4, cap - 4, NULL);
    return buf;
}

#define GROUP_JOB_CAP 1100

static uint64_t group_hash(const char *group, const char *job)
{
    return fnv1a(job, fnv1a("|", fnv1a(group, FNV_BASIS)));
}

/* group_hash of finding f under its group job */
static uint64_t finding_ghash(const finding *f)
{
    char buf[GROUP_JOB_CAP];
    return group_hash(f->group, group_job(f->job_id, f->ray_job, f->first.path, f->first.member, buf, sizeof buf));
}

/* ---- the index by group and job: chained through hnext, so a finding is found in O(1) ---------- */

static void index_put(story *s, long i)
{
    size_t b = (size_t)(s->f[i].ghash & (s->n_bucket - 1));
    s->f[i].hnext = s->bucket[b];
    s->bucket[b] = i;
}

static void index_remove(story *s, long i)
{
    long *p = &s->bucket[s->f[i].ghash & (s->n_bucket - 1)];
    while (*p >= 0 && *p != i)
        p = &s->f[*p].hnext;
    if (*p == i)
        *p = s->f[i].hnext;
}

/* Every finding in the index, with room for one more (load at most 1). Findings appended without
 * story_add (merge.c, state.c build them from records) are indexed here. 0, -1 out of memory. */
static int index_sync(story *s)
{
    if (s->n + 1 > s->n_bucket) {
        size_t nb = s->n_bucket ? s->n_bucket : 64;
        while (nb < s->n + 1)
            nb *= 2;
        long *b = malloc(nb * sizeof *b);
        if (!b)
            return -1;
        free(s->bucket);
        s->bucket = b;
        s->n_bucket = nb;
        for (size_t k = 0; k < nb; k++)
            b[k] = -1;
        s->n_indexed = 0;
    }
    for (; s->n_indexed < s->n; s->n_indexed++) {
        finding *f = &s->f[s->n_indexed];
        f->ghash = finding_ghash(f);
        index_put(s, (long)s->n_indexed);
    }
    return 0;
}

static long index_find(const story *s, uint64_t h, const char *group, const char *job)
{
    if (!s->n_bucket)
        return -1;
    for (long i = s->bucket[h & (s->n_bucket - 1)]; i >= 0; i = s->f[i].hnext) {
        char buf[GROUP_JOB_CAP];
        if (s->f[i].ghash == h && strcmp(s->f[i].group, group) == 0 &&
            strcmp(group_job(s->f[i].job_id, s->f[i].ray_job, s->f[i].first.path, s->f[i].first.member, buf, sizeof buf), job) == 0)
            return i;
    }
    return -1;
}

/* The window a log line is seen through, from its pattern's family: the kernel's log, Slurm's step
 * lines, a launcher's (torchelastic, DeepSpeed) report; anything else is the process's own log. */
static const char *pattern_kind(const pdb_pattern *p)
{
    const char *b = p && p->file ? strrchr(p->file, '/') : NULL;
    b = b ? b + 1 : (p && p->file ? p->file : "");
    if (strncmp(b, "kernel.", 7) == 0)
        return "kernel";
    if (strncmp(b, "slurm.", 6) == 0)
        return "slurm";
    if (strncmp(b, "torchelastic.", 13) == 0)
        return "launcher";
    return "log";
}

const char *story_backend(const finding *f)
{
    if (f->cls != CLS_NCCL_ERROR && f->cls != CLS_NCCL_TIMEOUT)
        return NULL;
    const char *b = f->pattern && f->pattern->file ? strrchr(f->pattern->file, '/') : NULL;
    b = b ? b + 1 : (f->pattern && f->pattern->file ? f->pattern->file : "");
    if (strncmp(b, "gloo.", 5) == 0)
        return "gloo";
    if (strncmp(b, "nccl.", 5) == 0)
        return "nccl";
    return NULL;
}

static int same_str(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

/* Remember a window (kind, path, member) unless the finding has it already. 0, -1 out of memory. */
static int add_window(finding *f, const char *kind, const char *path, const char *member, uint64_t line)
{
    for (size_t i = 0; i < f->n_windows; i++)
        if (strcmp(f->windows[i].kind, kind) == 0 && same_str(f->windows[i].path, path) &&
            same_str(f->windows[i].member, member))
            return 0;
    if (f->n_windows >= STORY_MAX_WINDOWS)
        return 0;
    story_window *grown = realloc(f->windows, (f->n_windows + 1) * sizeof *grown);
    if (!grown)
        return -1;
    f->windows = grown;
    story_window *w = &f->windows[f->n_windows];
    w->path = strdup(path ? path : "");
    w->member = member ? strdup(member) : NULL;
    if (!w->path || (member && !w->member)) {
        free(w->path);
        free(w->member);
        return -1;
    }
    w->line = line;
    w->kind = kind;
    f->n_windows++;
    return 0;
}

int story_add_window(finding *f, const char *kind, const char *path, const char *member, uint64_t line)
{
    return add_window(f, kind, path, member, line);
}

const char *story_kind(const char *name)
{
    static const char *const kinds[] = {"log",          "launcher",        "kernel",          "slurm",
                                        "error_file",   "faulthandler",    "flight_recorder", "memory_snapshot"};
    for (size_t i = 0; name && i < sizeof kinds / sizeof *kinds; i++)
        if (strcmp(name, kinds[i]) == 0)
            return kinds[i];
    return NULL;
}

char *story_mask(const char *t, size_t n)
{
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)t[i];
        if (c == '0' && i + 1 < n && (t[i + 1] == 'x' || t[i + 1] == 'X')) {
            i += 2;
            while (i < n && isxdigit((unsigned char)t[i]))
                i++;
            out[o++] = '#';
        } else if (isdigit(c)) {
            /* 1.5, 1,024, 10.0.0.1: one mask for the whole number-ish run */
            while (i < n && (isdigit((unsigned char)t[i]) ||
                             ((t[i] == '.' || t[i] == ',' || t[i] == ':') && i + 1 < n && isdigit((unsigned char)t[i + 1]))))
                i++;
            out[o++] = '#';
        } else if (isspace(c)) {
            while (i < n && isspace((unsigned char)t[i]))
                i++;
            out[o++] = ' ';
        } else {
            out[o++] = (char)c;
            i++;
        }
    }
    out[o] = '\0';
    return out;
}

static int set_add(story_set *s, const char *v)
{
    if (!v || !*v)
        return 0;
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->items[i], v) == 0)
            return 0;
    if (s->n >= STORY_MAX_SET) {
        s->dropped++;
        return 0;
    }
    char **grown = realloc(s->items, (s->n + 1) * sizeof *grown);
    if (!grown)
        return -1;
    s->items = grown;
    if (!(s->items[s->n] = strdup(v)))
        return -1;
    s->n++;
    return 0;
}

static int set_cmp(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    /* numeric ranks sort as numbers */
    char *ex, *ey;
    long nx = strtol(x, &ex, 10), ny = strtol(y, &ey, 10);
    if (!*ex && !*ey && ex != x && ey != y)
        return (nx > ny) - (nx < ny);
    return strcmp(x, y);
}

static int set_loc(story_loc *l, const story_event *ev)
{
    free_loc(l);
    memset(l, 0, sizeof *l);
    l->input = ev->input;
    l->path = strdup(ev->path ? ev->path : "");
    l->member = ev->member ? strdup(ev->member) : NULL;
    l->line = ev->line;
    l->offset = ev->offset;
    l->kind = ev->kind;
    if (ev->time) {
        l->has_time = 1;
        l->time = *ev->time;
    }
    return (!l->path || (ev->member && !l->member)) ? -1 : 0;
}

static int copy_loc(story_loc *dst, const story_loc *src)
{
    free_loc(dst);
    *dst = *src;
    dst->path = src->path ? strdup(src->path) : NULL;
    dst->member = src->member ? strdup(src->member) : NULL;
    return ((src->path && !dst->path) || (src->member && !dst->member)) ? -1 : 0;
}

/* Order two locations by their stamps: -1, 0, 1, or TIMEFMT_INCOMPARABLE. Uptimes count only within
 * one input: two hosts' boots are unrelated. */
static int time_cmp_slack(const story_loc *a, const story_loc *b, double slack)
{
    if (!a->has_time || !b->has_time)
        return TIMEFMT_INCOMPARABLE;
    if ((a->time.uptime_only || b->time.uptime_only) && a->input != b->input)
        return TIMEFMT_INCOMPARABLE;
    return timefmt_cmp_slack(&a->time, &b->time, slack);
}

static int time_cmp(const story_loc *a, const story_loc *b) { return time_cmp_slack(a, b, 0.0); }

int story_loc_before(const story_loc *a, const story_loc *b)
{
    int c = time_cmp(a, b);
    if (c == -1 || c == 1)
        return c < 0;
    if (a->input != b->input)
        return a->input < b->input;
    return a->line < b->line;
}

static void add_evidence(finding *f, const char *text, size_t n)
{
    if (f->n_evidence >= STORY_MAX_EVIDENCE || !text)
        return;
    for (size_t i = 0; i < f->n_evidence; i++)
        if (strlen(f->evidence[i]) == n && memcmp(f->evidence[i], text, n) == 0)
            return;
    char *e = malloc(n + 1);
    if (!e)
        return;
    memcpy(e, text, n);
    e[n] = '\0';
    f->evidence[f->n_evidence++] = e;
}

/* Fill keys missing from `dst` with those of `src` (a later line of the same failure may state more). */
static void merge_memory(cJSON *dst, const cJSON *src)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, src)
    {
        if (!cJSON_GetObjectItemCaseSensitive(dst, it->string)) {
            cJSON *dup = cJSON_Duplicate(it, 1);
            if (dup)
                cJSON_AddItemToObject(dst, it->string, dup);
        }
    }
}

/* A burst's later line named the phase of a finding whose first line did not: take it, with its
 * evidence, and put it into the group (pattern|phase|masked) as if the first line had named it. */
static int set_phase(finding *f, const story_event *ev)
{
    const char *a = strchr(f->group, '|'), *b = a ? strchr(a + 1, '|') : NULL;
    if (!b)
        return 0;
    const char *name = tax_phase_name(ev->phase);
    size_t n = (size_t)(a - f->group) + 1 + strlen(name) + strlen(b) + 1;
    char *group = malloc(n);
    char *evid = ev->phase_evidence && *ev->phase_evidence ? strdup(ev->phase_evidence) : NULL;
    if (!group || (ev->phase_evidence && *ev->phase_evidence && !evid)) {
        free(group);
        free(evid);
        return -1;
    }
    snprintf(group, n, "%.*s|%s%s", (int)(a - f->group), f->group, name, b);
    free(f->group);
    f->group = group;
    free(f->phase_evidence);
    f->phase_evidence = evid;
    f->phase = ev->phase;
    f->phase_weak = ev->phase_weak;
    f->phase_from_frames = ev->phase_from_frames;
    if (f->framework < 0)
        f->framework = ev->framework;
    return 0;
}

static long sink_add(void *ud, const scan_event *ev) { return story_add(ud, ev); }

static int sink_phase_of(void *ud, long i, tax_phase *phase, int *weak, const cJSON **memory)
{
    const story *s = ud;
    if (i < 0 || (size_t)i >= s->n)
        return -1;
    *phase = s->f[i].phase;
    *weak = s->f[i].phase_weak;
    *memory = s->f[i].memory;
    return 0;
}

static int sink_set_phase(void *ud, long i, tax_phase phase, const char *evidence, int framework)
{
    return story_set_phase(ud, i, phase, evidence, framework);
}

static struct config_store **sink_settings(void *ud, const char *job) { return story_job_settings(ud, job); }

const scan_sink *story_sink(story *s)
{
    s->sink = (scan_sink){s, sink_add, sink_phase_of, sink_set_phase, sink_settings};
    return &s->sink;
}

int story_set_phase(story *s, long idx, tax_phase phase, const char *evidence, int framework)
{
    if (idx < 0 || (size_t)idx >= s->n || (s->f[idx].phase != PH_UNKNOWN && !s->f[idx].phase_weak) ||
        phase == PH_UNKNOWN)
        return 0;
    story_event ev = {.phase = phase, .phase_evidence = evidence, .framework = framework};
    if (index_sync(s) != 0)
        return -1;
    index_remove(s, idx);
    int rc = set_phase(&s->f[idx], &ev);
    s->f[idx].ghash = finding_ghash(&s->f[idx]);
    index_put(s, idx);
    if (rc != 0)
        return -1;
    s->f[idx].version++;
    return 0;
}

/* long: one event into the story: merged into a finding or a new one, then the finding's phase, time and
 * windows updated from the same event. */
long story_add(story *s, const story_event *ev)
{
    long idx = -1;
    char *group = NULL;
    if (ev->merge_into >= 0 && (size_t)ev->merge_into < s->n) {
        idx = ev->merge_into;
    } else {
        char *masked = story_mask(ev->match, ev->match_len > 160 ? 160 : ev->match_len);
        if (!masked) {
            cJSON_Delete(ev->memory);
            return -1;
        }
        /* The kernel's kill lines of different processes are different kills (a host's log holds other
         * jobs' too): the victim's pid, which masking drops, keeps them apart, so that a launcher's -9 of
         * one worker joins that worker's kill and its figures. */
        char victim[32] = "";
        const cJSON *vp = cJSON_GetObjectItemCaseSensitive(ev->memory, "killed_pid");
        if (!cJSON_IsNumber(vp))
            vp = cJSON_GetObjectItemCaseSensitive(ev->memory, "pid");
        if (cJSON_IsNumber(vp) && strcmp(pattern_kind(ev->pattern), "kernel") == 0)
            snprintf(victim, sizeof victim, "|pid=%.0f", vp->valuedouble);
        size_t gl = strlen(ev->pattern->id) + strlen(masked) + sizeof victim + 48;
        group = malloc(gl);
        if (group)
            snprintf(group, gl, "%s|%s|%s%s", ev->pattern->id, tax_phase_name(ev->phase), masked, victim);
        free(masked);
        if (!group) {
            cJSON_Delete(ev->memory);
            return -1;
        }
        if (index_sync(s) != 0) {
            free(group);
            cJSON_Delete(ev->memory);
            return -1;
        }
        char gbuf[GROUP_JOB_CAP];
        const char *gjob = group_job(ev->job_id, ev->ray_job, ev->path, ev->member, gbuf, sizeof gbuf);
        idx = index_find(s, group_hash(group, gjob), group, gjob);
    }
    if (idx < 0) {
        if (s->n >= STORY_MAX_FINDINGS) {
            s->dropped++;
            free(group);
            cJSON_Delete(ev->memory);
            return -1;
        }
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 16;
            finding *grown = realloc(s->f, cap * sizeof *grown);
            if (!grown) {
                free(group);
                cJSON_Delete(ev->memory);
                return -1;
            }
            s->f = grown;
            s->cap = cap;
        }
        finding *f = &s->f[s->n];
        memset(f, 0, sizeof *f);
        f->pattern = ev->pattern;
        f->cls = ev->pattern->cls;
        f->phase = ev->phase;
        f->phase_weak = ev->phase != PH_UNKNOWN && ev->phase_weak;
        f->phase_from_frames = ev->phase != PH_UNKNOWN && ev->phase_from_frames;
        f->phase_evidence = ev->phase_evidence && *ev->phase_evidence ? strdup(ev->phase_evidence) : NULL;
        f->framework = ev->framework;
        f->echo = ev->pattern->echo || tax_class_is_echo(ev->pattern->cls);
        f->group = group;
        group = NULL;
        snprintf(f->job_id, sizeof f->job_id, "%s", ev->job_id ? ev->job_id : "");
        snprintf(f->rank, sizeof f->rank, "%s", ev->rank ? ev->rank : "");
        snprintf(f->local_rank, sizeof f->local_rank, "%s", ev->local_rank ? ev->local_rank : "");
        snprintf(f->pid, sizeof f->pid, "%s", ev->pid ? ev->pid : "");
        snprintf(f->host, sizeof f->host, "%s", ev->host ? ev->host : "");
        snprintf(f->container, sizeof f->container, "%s", ev->container ? ev->container : "");
        snprintf(f->ray_job, sizeof f->ray_job, "%s", ev->ray_job ? ev->ray_job : "");
        f->memory = ev->memory ? ev->memory : cJSON_CreateObject();
        f->caused_by = -1;
        f->joined_into = f->next_joined = f->first_joined = -1;
        f->job_head = f->job_next = -1;
        if (set_loc(&f->first, ev) || !f->memory) {
            free_finding(f);
            return -1;
        }
        f->ghash = finding_ghash(f);
        idx = (long)s->n++;
        index_put(s, idx);
        s->n_indexed = s->n;
    } else {
        free(group);
        finding *f = &s->f[idx];
        /* a later line's phase is taken when the finding has none, or only a weak one and this is strong,
         * or this one comes from the failure's own traceback and the finding's from a marker (a verl
         * task name above the traceback must not outrank the loss.backward() frame inside it) */
        int outranks = ev->phase_from_frames && !ev->phase_weak && !f->phase_from_frames && f->phase != ev->phase;
        if ((f->phase == PH_UNKNOWN || (f->phase_weak && !ev->phase_weak) || outranks) && ev->phase != PH_UNKNOWN) {
            if (index_sync(s) != 0) {
                cJSON_Delete(ev->memory);
                return -1;
            }
            f = &s->f[idx];
            index_remove(s, idx);
            int rc = set_phase(f, ev);
            f->ghash = finding_ghash(f);
            index_put(s, idx);
            if (rc != 0) {
                cJSON_Delete(ev->memory);
                return -1;
            }
        }
        if (ev->memory) {
            merge_memory(f->memory, ev->memory);
            cJSON_Delete(ev->memory);
        }
        if (!f->pid[0] && ev->pid)
            snprintf(f->pid, sizeof f->pid, "%s", ev->pid);
        if (!f->host[0] && ev->host)
            snprintf(f->host, sizeof f->host, "%s", ev->host);
        if (!f->rank[0] && ev->rank)
            snprintf(f->rank, sizeof f->rank, "%s", ev->rank);
    }
    finding *f = &s->f[idx];
    f->occurrences += 1 + (ev->repeat > 1 ? (uint64_t)(ev->repeat - 1) : 0);
    set_loc(&f->last, ev);
    if (!f->first.has_time && ev->time && ev->input == f->first.input) {
        /* the first line had no stamp of its own; a later line of the same failure has */
        f->first.has_time = 1;
        f->first.time = *ev->time;
    }
    add_evidence(f, ev->evidence, ev->evidence_len);
    if (add_window(f, ev->kind ? ev->kind : pattern_kind(ev->pattern), ev->path, ev->member, ev->line) != 0)
        return -1;
    set_add(&f->ranks, ev->rank);
    set_add(&f->hosts, ev->host);
    f->version++;
    return idx;
}

long story_find(story *s, const char *group, const char *job_id, const char *ray_job, const char *path,
                const char *member)
{
    if (index_sync(s) != 0)
        return -1;
    char gbuf[GROUP_JOB_CAP];
    const char *gjob = group_job(job_id, ray_job, path, member, gbuf, sizeof gbuf);
    return index_find(s, group_hash(group, gjob), group, gjob);
}

#define SETTINGS_BUCKETS 1024

static long settings_find(const story *s, const char *job)
{
    if (!s->sbucket)
        return -1;
    for (long i = s->sbucket[fnv1a(job, FNV_BASIS) % SETTINGS_BUCKETS]; i >= 0; i = s->snext[i])
        if (strcmp(s->settings_job[i], job) == 0)
            return i;
    return -1;
}

config_store **story_job_settings(story *s, const char *job)
{
    char key[32]; /* the job cut as snprintf would, without its cost: asked for every setting a log prints */
    size_t kn = job ? strnlen(job, sizeof key - 1) : 0;
    if (kn)
        memcpy(key, job, kn);
    key[kn] = '\0';
    long i = settings_find(s, key);
    if (i >= 0)
        return &s->settings[i];
    if (!s->sbucket) {
        if (!(s->sbucket = malloc(SETTINGS_BUCKETS * sizeof *s->sbucket)))
            return NULL;
        for (size_t k = 0; k < SETTINGS_BUCKETS; k++)
            s->sbucket[k] = -1;
    }
    if (s->n_settings == s->cap_settings) {
        size_t cap = s->cap_settings ? s->cap_settings * 2 : 4;
        config_store **g = realloc(s->settings, cap * sizeof *g);
        if (g)
            s->settings = g;
        char(*gj)[32] = realloc(s->settings_job, cap * sizeof *gj);
        if (gj)
            s->settings_job = gj;
        long *gn = realloc(s->snext, cap * sizeof *gn);
        if (gn)
            s->snext = gn;
        if (!g || !gj || !gn)
            return NULL;
        s->cap_settings = cap;
    }
    if (!(s->settings[s->n_settings] = config_store_new(&s->settings_clock)))
        return NULL;
    i = (long)s->n_settings++;
    memcpy(s->settings_job[i], key, sizeof key);
    size_t b = fnv1a(key, FNV_BASIS) % SETTINGS_BUCKETS;
    s->snext[i] = s->sbucket[b];
    s->sbucket[b] = i;
    return &s->settings[i];
}

void story_settings_view(const story *s, const char *job, config_view *out)
{
    memset(out, 0, sizeof *out);
    if (!job || !*job) {
        /* a finding of no job matched every job's settings when one store held them all */
        out->all = (const config_store *const *)s->settings;
        out->n_all = s->n_settings;
        return;
    }
    long own = settings_find(s, job), shared = settings_find(s, "");
    out->own = own >= 0 ? s->settings[own] : NULL;
    /* Settings read from a source naming no job (a batch script beside several jobs' outputs) are
     * that job's only when the scan holds one job: with several, nothing ties them to this one, and
     * another job's --mem was given as this one's current value (issue 31). */
    out->shared = shared >= 0 && s->n_jobs <= 1 ? s->settings[shared] : NULL;
}

int story_merge(story *dst, story *src)
{
    /* each job's settings join the same job's: a later read (src is merged after dst) wins */
    for (size_t i = 0; i < src->n_settings; i++) {
        config_store **to = story_job_settings(dst, src->settings_job[i]);
        if (!to || config_store_merge(to, &src->settings[i]) != 0)
            return -1;
    }
    for (size_t v = 0; v < src->n_votes; v++)
        if (story_note_votes(dst, src->votes[v].job, src->votes[v].votes) != 0)
            return -1;
    for (size_t i = 0; i < src->n; i++) {
        finding *sf = &src->f[i];
        /* a dump's findings are tagged with their kind after they were added (dumps_tag) */
        if (sf->first.kind)
            for (size_t k = 0; k < sf->n_windows; k++)
                if (same_str(sf->windows[k].path, sf->first.path) && same_str(sf->windows[k].member, sf->first.member))
                    sf->windows[k].kind = sf->first.kind;
        sf->ghash = finding_ghash(sf); /* merge.c builds findings without story_add */
        if (index_sync(dst) != 0)
            return -1;
        char gbuf[GROUP_JOB_CAP];
        long jj = index_find(dst, sf->ghash, sf->group, group_job(sf->job_id, sf->ray_job, sf->first.path, sf->first.member, gbuf, sizeof gbuf));
        size_t j = jj < 0 ? dst->n : (size_t)jj;
        if (jj < 0) {
            if (dst->max_findings && dst->n >= dst->max_findings) {
                dst->dropped++; /* counted, not kept: memory stays bounded */
                free_finding(sf);
                memset(sf, 0, sizeof *sf);
                continue;
            }
            if (dst->n == dst->cap) {
                size_t cap = dst->cap ? dst->cap * 2 : 16;
                finding *grown = realloc(dst->f, cap * sizeof *grown);
                if (!grown)
                    return -1;
                dst->f = grown;
                dst->cap = cap;
            }
            dst->f[dst->n] = *sf; /* moved */
            index_put(dst, (long)dst->n++);
            dst->n_indexed = dst->n;
            memset(sf, 0, sizeof *sf);
            continue;
        }
        finding *df = &dst->f[j];
        df->occurrences += sf->occurrences;
        if (story_loc_before(&sf->first, &df->first))
            copy_loc(&df->first, &sf->first);
        if (story_loc_before(&df->last, &sf->last))
            copy_loc(&df->last, &sf->last);
        for (size_t k = 0; k < sf->n_evidence; k++)
            add_evidence(df, sf->evidence[k], strlen(sf->evidence[k]));
        for (size_t k = 0; k < sf->ranks.n; k++)
            set_add(&df->ranks, sf->ranks.items[k]);
        for (size_t k = 0; k < sf->hosts.n; k++)
            set_add(&df->hosts, sf->hosts.items[k]);
        for (size_t k = 0; k < sf->n_windows; k++)
            if (add_window(df, sf->windows[k].kind, sf->windows[k].path, sf->windows[k].member, sf->windows[k].line) != 0)
                return -1;
        df->ranks.dropped += sf->ranks.dropped;
        df->hosts.dropped += sf->hosts.dropped;
        merge_memory(df->memory, sf->memory);
        df->version++;
        free_finding(sf);
        memset(sf, 0, sizeof *sf);
    }
    dst->dropped += src->dropped;
    /* src is empty now: give its arrays back, so that thousands of merged inputs cost nothing after */
    free(src->f);
    free(src->bucket);
    free(src->votes);
    free(src->vbucket);
    src->f = NULL;
    src->bucket = src->vbucket = NULL;
    src->votes = NULL;
    src->n = src->cap = src->n_bucket = src->n_indexed = src->n_votes = src->cap_votes = 0;
    src->dropped = 0;
    return 0;
}

static long votes_find(const story *s, const char *job)
{
    if (!s->vbucket)
        return -1;
    for (long i = s->vbucket[fnv1a(job, FNV_BASIS) % VOTE_BUCKETS]; i >= 0; i = s->votes[i].next)
        if (strcmp(s->votes[i].job, job) == 0)
            return i;
    return -1;
}

int story_note_votes(story *s, const char *job, const uint32_t *votes)
{
    job = job ? job : "";
    if (!s->vbucket) {
        if (!(s->vbucket = malloc(VOTE_BUCKETS * sizeof *s->vbucket)))
            return -1;
        for (size_t k = 0; k < VOTE_BUCKETS; k++)
            s->vbucket[k] = -1;
    }
    long i = votes_find(s, job);
    if (i < 0) {
        if (s->n_votes == s->cap_votes) {
            size_t cap = s->cap_votes ? s->cap_votes * 2 : 4;
            struct story_jobvotes *g = realloc(s->votes, cap * sizeof *g);
            if (!g)
                return -1;
            s->votes = g;
            s->cap_votes = cap;
        }
        i = (long)s->n_votes++;
        memset(&s->votes[i], 0, sizeof s->votes[i]);
        snprintf(s->votes[i].job, sizeof s->votes[i].job, "%s", job);
        size_t b = fnv1a(s->votes[i].job, FNV_BASIS) % VOTE_BUCKETS;
        s->votes[i].next = s->vbucket[b];
        s->vbucket[b] = i;
    }
    for (int k = 0; k < FW__COUNT; k++)
        s->votes[i].votes[k] += votes[k];
    return 0;
}

/* How strongly a class is an echo: causes 0; NCCL failures 1 (they may be a root themselves);
 * crashes after an abort 2; a supervisor's report 3. A finding can follow from a lower level only. */
static int echo_level(const finding *f)
{
    if (!f->echo)
        return 0;
    const char *backend = story_backend(f);
    switch (f->cls) {
    /* gloo never aborts a process: what a rank prints through gloo is what it saw of a peer that died
     * (a closed or reset socket: any death, even a crash, comes first) or stopped (a timeout, which
     * a crash may explain but which causes nothing but the supervisor's report) */
    case CLS_NCCL_TIMEOUT: return backend && strcmp(backend, "gloo") == 0 ? 2 : 1;
    case CLS_NCCL_ERROR: return backend && strcmp(backend, "gloo") == 0 ? 3 : 1;
    case CLS_SEGFAULT: return 2;
    case CLS_CHILD_FAILED: return 3;
    default: return 2; /* a pattern marked echo (a launcher's SIGKILL) */
    }
}

/* ---- a small open-addressing table of finding indices, for story_finish ------------------------ */

typedef struct {
    uint64_t *h;
    long *v;
    size_t cap;
} itable;

static int itable_init(itable *t, size_t n)
{
    t->cap = 16;
    while (t->cap < 2 * n + 2)
        t->cap *= 2;
    t->h = malloc(t->cap * sizeof *t->h);
    t->v = malloc(t->cap * sizeof *t->v);
    if (!t->h || !t->v) {
        free(t->h);
        free(t->v);
        return -1;
    }
    for (size_t k = 0; k < t->cap; k++)
        t->v[k] = -1;
    return 0;
}

static void itable_free(itable *t)
{
    free(t->h);
    free(t->v);
}

/* The slot for key `h` whose value `eq` accepts, or the empty slot (value -1) where it goes. */
static long *itable_slot(itable *t, uint64_t h, int (*eq)(const story *, long, const void *), const story *s,
                         const void *key)
{
    size_t k = (size_t)h & (t->cap - 1);
    while (t->v[k] >= 0 && !(t->h[k] == h && eq(s, t->v[k], key)))
        k = (k + 1) & (t->cap - 1);
    t->h[k] = h;
    return &t->v[k];
}

static int eq_stream(const story *s, long i, const void *key)
{
    const story_loc *a = &s->f[i].first, *b = key;
    return same_str(a->path, b->path) && same_str(a->member, b->member);
}

/* one story per job, and per run among findings of no job */
static int eq_job(const story *s, long i, const void *key)
{
    const finding *k = key;
    return strcmp(s->f[i].job, k->job) == 0 && strcmp(s->f[i].run, k->run) == 0;
}

static uint64_t job_hash(const finding *f) { return fnv1a(f->run, fnv1a("\x1f", fnv1a(f->job, FNV_BASIS))); }

static int eq_id(const story *s, long i, const void *key) { return strcmp(s->f[i].id, key) == 0; }

static uint64_t stream_hash(const story_loc *l)
{
    return fnv1a(l->member ? l->member : "", fnv1a("\n", fnv1a(l->path ? l->path : "", FNV_BASIS)));
}

static int same_stream(const story_loc *a, const story_loc *b)
{
    return same_str(a->path, b->path) && same_str(a->member, b->member);
}

/* An order of two locations that does not depend on the order the inputs were given in: by time when
 * both stamps can be compared, by line within one source, else by name. */
static int loc_cmp_stable(const story_loc *a, const story_loc *b)
{
    int c = time_cmp(a, b);
    if (c == -1 || c == 1)
        return c;
    if (same_stream(a, b))
        return (a->line > b->line) - (a->line < b->line);
    c = strcmp(a->path ? a->path : "", b->path ? b->path : "");
    if (c)
        return c < 0 ? -1 : 1;
    c = strcmp(a->member ? a->member : "", b->member ? b->member : "");
    if (c)
        return c < 0 ? -1 : 1;
    return (a->line > b->line) - (a->line < b->line);
}

static const char *finding_kind(const finding *f)
{
    if (f->first.kind)
        return f->first.kind;
    return f->n_windows ? f->windows[0].kind : pattern_kind(f->pattern);
}

/* Which window's numbers and wording a joined failure is reported with: the kernel's (RSS, pid) first,
 * then Slurm's (the limit), then the process's own log, then dumps, the launcher's summary last. */
static int kind_rank(const char *k)
{
    static const char *const order[] = {"kernel", "slurm", "log", "faulthandler", "error_file",
                                        "flight_recorder", "memory_snapshot", "launcher"};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++)
        if (strcmp(k, order[i]) == 0)
            return (int)i;
    return (int)(sizeof order / sizeof *order);
}

/* 1 if `a` is the better window to report a joined failure with. */
static int better_window(const finding *a, const finding *b)
{
    int ra = kind_rank(finding_kind(a)), rb = kind_rank(finding_kind(b));
    if (ra != rb)
        return ra < rb;
    int c = loc_cmp_stable(&a->first, &b->first);
    return c ? c < 0 : strcmp(a->id, b->id) < 0;
}

/* Two hosts differ when both are known and neither is the other's short name (node1, node1.cluster). */
static int hosts_differ(const char *a, const char *b)
{
    if (!*a || !*b)
        return 0;
    size_t la = strcspn(a, "."), lb = strcspn(b, ".");
    return !(la == lb && strncmp(a, b, la) == 0);
}

#define STORY_BURST_LINES 4 /* lines within which print order between threads is not cause order */

/* A supervisor prints its error's name first and the box naming the failed child under it (torchrun's
 * "ChildFailedError:" then "Root Cause ... exitcode : -9": fixtures/golden/sigkill-then-childfailed.log). */
#define STORY_BOX_LINES 40

/* One failure's lines in one source: the kernel's oom-killer block with its memory dump is ~80 lines. */
#define STORY_BLOCK_LINES 120

#define JOIN_TIME_SLACK 300.0 /* seconds between windows of one failure (a kernel kill, Slurm's step line) */

/* Could `a` and `b` be one failure seen through two windows? Same class, different kinds of window,
 * and nothing that tells them apart (rank, host, time; pid unless `any_pid`). */
/* The same message of the same pattern, whatever phase each copy could tell (group: pattern|phase|text). */
static int same_text(const finding *a, const finding *b)
{
    const char *x = strchr(a->group, '|'), *y = strchr(b->group, '|');
    x = x ? strchr(x + 1, '|') : NULL;
    y = y ? strchr(y + 1, '|') : NULL;
    return a->pattern == b->pattern && x && y && strcmp(x, y) == 0;
}

static int can_join(const finding *a, const finding *b, int any_pid)
{
    /* another kind of window, or another copy of the same message in another source (torchrun's
     * console and the rank's own stderr.log, tee'd) */
    if (a->cls != b->cls)
        return 0;
    if (strcmp(finding_kind(a), finding_kind(b)) == 0) {
        /* findings rebuilt from records (--state, merge) carry no windows: their first line stands in */
        story_window fa = {a->first.path, a->first.member, a->first.line, ""}, fb = {b->first.path, b->first.member, b->first.line, ""};
        const story_window *wa = a->n_windows ? a->windows : &fa, *wb = b->n_windows ? b->windows : &fb;
        size_t na = a->n_windows ? a->n_windows : 1, nb = b->n_windows ? b->n_windows : 1;
        int near = 0;
        for (size_t i = 0; i < na && !near; i++)
            for (size_t j = 0; j < nb && !near; j++) {
                const story_window *x = &wa[i], *y = &wb[j];
                near = same_str(x->path, y->path) && same_str(x->member, y->member) &&
                       (x->line > y->line ? x->line - y->line : y->line - x->line) <= STORY_BLOCK_LINES;
            }
        /* or one block of one source: the kernel's oom-killer block (the "invoked oom-killer" line,
         * the memory dump, then the kill), a DataLoader's bus error then the worker's death */
        if (!near && !(same_text(a, b) && !same_stream(&a->first, &b->first)))
            return 0;
    }
    if (a->rank[0] && b->rank[0] && strcmp(a->rank, b->rank) != 0)
        return 0;
    if (!any_pid && a->pid[0] && b->pid[0] && strcmp(a->pid, b->pid) != 0)
        return 0;
    if (hosts_differ(a->host, b->host))
        return 0;
    int c = time_cmp_slack(&a->first, &b->first, JOIN_TIME_SLACK);
    return c == 0 || c == TIMEFMT_INCOMPARABLE;
}

/* Join finding `o` into `p` (another window of the same failure): `p` takes the numbers, context and
 * phase it lacks. Idempotent, so story_finish() can run again. */
static void join(story *s, long p, long o)
{
    if (p == o)
        return;
    finding *fp = &s->f[p], *fo = &s->f[o];
    fo->joined_into = p;
    fo->is_root = 0;
    fo->caused_by = -1;
    long *tail = &fp->first_joined;
    while (*tail >= 0)
        tail = &s->f[*tail].next_joined;
    *tail = o;
    /* the windows already joined into o follow it, now as windows of p */
    fo->next_joined = fo->first_joined;
    fo->first_joined = -1;
    for (long k = fo->next_joined; k >= 0; k = s->f[k].next_joined)
        s->f[k].joined_into = p;
    merge_memory(fp->memory, fo->memory);
    if (!fp->pid[0])
        memcpy(fp->pid, fo->pid, sizeof fp->pid);
    if (!fp->rank[0])
        memcpy(fp->rank, fo->rank, sizeof fp->rank);
    if (!fp->host[0])
        memcpy(fp->host, fo->host, sizeof fp->host);
    if (!fp->container[0])
        memcpy(fp->container, fo->container, sizeof fp->container);
    if (!fp->ray_job[0])
        memcpy(fp->ray_job, fo->ray_job, sizeof fp->ray_job);
    for (size_t k = 0; k < fo->ranks.n; k++)
        set_add(&fp->ranks, fo->ranks.items[k]);
    for (size_t k = 0; k < fo->hosts.n; k++)
        set_add(&fp->hosts, fo->hosts.items[k]);
    /* A supervisor's report (torchrun's summary of a killed worker) has the phase of the console it is
     * printed in, whose last traceback is often another rank's echo: a kill's phase comes from the
     * victim's own lines, or stays unknown (issue 31). */
    if (fp->phase == PH_UNKNOWN && fo->phase != PH_UNKNOWN && strcmp(finding_kind(fo), "launcher") != 0) {
        /* the phase only: the group (and so the id) stays that of the reported window */
        char *ev = fo->phase_evidence ? strdup(fo->phase_evidence) : NULL;
        if (!fo->phase_evidence || ev) {
            free(fp->phase_evidence);
            fp->phase_evidence = ev;
            fp->phase = fo->phase;
        }
    }
    if (fp->framework < 0)
        fp->framework = fo->framework;
}

/* A job's windows of one failure, joined: first those nothing tells apart, then a supervisor's report
 * (launcher, Slurm) of a kill beside the kernel's own kill line, whatever pid each names: in a container
 * the launcher and the kernel see different pid namespaces. */
static void join_windows(story *s, long head)
{
    for (int pass = 0; pass < 2; pass++)
        for (long i = head; i >= 0; i = s->f[i].job_next) {
            if (s->f[i].joined_into >= 0)
                continue;
            const char *ki = finding_kind(&s->f[i]);
            if (pass == 1 && strcmp(ki, "launcher") != 0 && strcmp(ki, "slurm") != 0)
                continue;
            for (;;) {
                long best = -1;
                for (long j = head; j >= 0; j = s->f[j].job_next) {
                    if (j == i || s->f[j].joined_into >= 0 || !can_join(&s->f[i], &s->f[j], pass == 1))
                        continue;
                    if (pass == 1 && strcmp(finding_kind(&s->f[j]), "kernel") != 0)
                        continue;
                    if (best < 0 || better_window(&s->f[j], &s->f[best]))
                        best = j;
                }
                if (best < 0)
                    break;
                if (!better_window(&s->f[i], &s->f[best])) {
                    join(s, best, i);
                    break;
                }
                join(s, i, best); /* and look for more windows of i */
            }
        }
}

/* For a gloo echo (a peer closed its socket) with no cause found: the supervisor's report of the
 * worker that failed (torchrun's "failed (exitcode: 1) local_rank: 0"), when it is another worker than
 * the echo's. The worker's own error had no class (a save into a read-only folder: "File ... cannot be
 * opened."), so nothing else stands for it; one root then tells the story, with its note that the
 * cause may be elsewhere, instead of two echoes each claiming to be one (issue 31). -1 when none. */
static long failed_worker(const story *s, long head, long i)
{
    const finding *f = &s->f[i];
    const char *backend = story_backend(f);
    if (f->cls != CLS_NCCL_ERROR || !backend || strcmp(backend, "gloo") != 0)
        return -1;
    long best = -1;
    for (long j = head; j >= 0; j = s->f[j].job_next) {
        const finding *g = &s->f[j];
        const cJSON *lr = cJSON_GetObjectItemCaseSensitive(g->memory, "local_rank");
        if (j == i || g->joined_into >= 0 || g->cls != CLS_CHILD_FAILED || !cJSON_IsNumber(lr))
            continue;
        char named[24];
        snprintf(named, sizeof named, "%.0f", lr->valuedouble);
        if (strcmp(f->local_rank, named) == 0 || strcmp(f->rank, named) == 0)
            continue; /* the echo's own worker: its exit says nothing of the peer */
        if (best < 0 || loc_cmp_stable(&g->first, &s->f[best].first) < 0)
            best = j;
    }
    return best;
}

/* A finding follows from the earliest finding of a lower echo level (in the same job) that is not
 * after it. */
static void elect_causes(story *s, long head)
{
    for (long i = head; i >= 0; i = s->f[i].job_next) {
        finding *f = &s->f[i];
        int lvl = echo_level(f);
        if (lvl == 0 || f->joined_into >= 0)
            continue;
        long best = -1;
        for (long j = head; j >= 0; j = s->f[j].job_next) {
            const finding *g = &s->f[j];
            if (j == i || g->joined_into >= 0 || echo_level(g) >= lvl)
                continue;
            /* a restart's attempt starts afresh: the last attempt's failure is not this one's cause */
            if (f->attempt >= 0 && g->attempt >= 0 && f->attempt != g->attempt)
                continue;
            /* A launcher kills the siblings first and reports the dead child after, in the same second. */
            int c = time_cmp_slack(&g->first, &f->first, 1.0);
            if (c == 1)
                continue; /* stamped later than the echo */
            /* Without stamps, the order a source printed them in holds: nothing is caused by a failure
             * printed after it in the same source, beyond one burst of lines that threads of one process
             * interleave through their buffers (NCCL's proxy thread reports the allocation failure just
             * after the collective error it caused: fixtures/golden/nccl-error-after-oom.log). */
            if (c == TIMEFMT_INCOMPARABLE && same_stream(&g->first, &f->first) &&
                g->first.line > f->first.line + (lvl == 3 ? STORY_BOX_LINES : STORY_BURST_LINES))
                continue;
            if (best < 0 || echo_level(g) < echo_level(&s->f[best]))
                best = j;
            else if (echo_level(g) == echo_level(&s->f[best])) {
                int o = loc_cmp_stable(&g->first, &s->f[best].first);
                if (o < 0 || (o == 0 && strcmp(g->id, s->f[best].id) < 0))
                    best = j;
            }
        }
        if (best < 0)
            best = failed_worker(s, head, i);
        if (best >= 0) {
            f->is_root = 0;
            f->caused_by = best;
            if (time_cmp(&s->f[best].first, &f->first) == TIMEFMT_INCOMPARABLE &&
                !same_stream(&s->f[best].first, &f->first))
                f->note = "its cause was printed in another source, and no time stamps order the two: the "
                          "order is unknown";
        } else if (f->cls != CLS_SEGFAULT) {
            f->note = "this usually follows a failure elsewhere; its cause may be in logs not given";
        } /* a crash with nothing before it is a cause (an assert() in a custom op, issue 31) */
    }
    /* Follow chains to the root (a child_failed after a NCCL timeout after an OOM points at the OOM). */
    for (long i = head; i >= 0; i = s->f[i].job_next) {
        long c = s->f[i].caused_by;
        for (int hops = 0; c >= 0 && !s->f[c].is_root && hops < 8; hops++)
            c = s->f[c].caused_by;
        s->f[i].caused_by = c;
    }
}

static int run_cmp(const void *a, const void *b, void *ctx)
{
    const story *s = ctx;
    return strcmp(s->f[*(const size_t *)a].run, s->f[*(const size_t *)b].run);
}

/* The runs of the findings of no job (docs/taxonomy.md, "Runs"): each source's run folder
 * (story_run_folder), taken up to the outermost run folder holding it; two of them or more (neither
 * holding the other) are runs apart, each named by its folder below the folder they share. A folder that
 * holds a log of its own and other run folders too is one run with them (nothing says which run its log
 * is of). Sets f->run ("" when the scan holds one run or less) and f->attempt.
 * long: the runs of the findings of no job, worked out from the folders in one pass over one index. */
static int assign_runs(story *s)
{
    size_t *idx = malloc((s->n + 1) * sizeof *idx), m = 0;
    if (!idx)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        finding *f = &s->f[i];
        story_run_folder(f->first.path, f->first.member, f->run, sizeof f->run, &f->attempt);
        for (size_t k = 0; f->attempt < 0 && k < f->n_windows; k++) {
            char tmp[8];
            story_run_folder(f->windows[k].path, f->windows[k].member, tmp, sizeof tmp, &f->attempt);
        }
        if (!f->job[0])
            idx[m++] = i;
        else
            f->run[0] = '\0';
    }
    if (m > 1)
        qsort_r(idx, m, sizeof *idx, run_cmp, s); /* glibc's: the story is the context, no global */
    /* the distinct folders, sorted: each is taken up to the outermost of them that holds it */
    size_t *dist = malloc((m + 1) * sizeof *dist), nd = 0;
    char (*top)[sizeof s->f[0].run] = malloc((m + 1) * sizeof *top);
    if (!dist || !top) {
        free(idx);
        free(dist);
        free(top);
        return -1;
    }
    size_t *which = malloc((m + 1) * sizeof *which);
    if (!which) {
        free(idx);
        free(dist);
        free(top);
        return -1;
    }
    for (size_t k = 0; k < m; k++) {
        if (nd == 0 || strcmp(s->f[idx[k]].run, s->f[dist[nd - 1]].run) != 0)
            dist[nd++] = idx[k];
        which[k] = nd - 1;
    }
    for (size_t d = 0; d < nd; d++) {
        const char *r = s->f[dist[d]].run;
        size_t best = strlen(r);
        /* every folder above r, outermost first: the first one that is a run folder too wins */
        for (size_t l = 0; l < best; l++) {
            if (!(l == 0 || r[l] == '/'))
                continue;
            size_t cut = l == 0 && r[0] == '/' ? 1 : l;
            size_t lo = 0, hi = nd;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                const char *x = s->f[dist[mid]].run;
                int c = strncmp(x, r, cut);
                if (c == 0)
                    c = x[cut] ? 1 : 0;
                if (c < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo < nd && strlen(s->f[dist[lo]].run) == cut && strncmp(s->f[dist[lo]].run, r, cut) == 0) {
                best = cut;
                break;
            }
        }
        snprintf(top[d], sizeof *top, "%.*s", (int)best, r);
    }
    /* the runs apart (two or more), and the folder they share */
    size_t nruns = nd > 0, shared = nd > 0 ? strlen(top[0]) : 0;
    const char *first = nd > 0 ? top[0] : "";
    for (size_t d = 1; d < nd; d++) {
        if (strcmp(top[d], first) != 0)
            nruns = 2;
        size_t l = 0;
        while (l < shared && first[l] == top[d][l])
            l++;
        shared = l;
    }
    /* cut the shared part back to a whole folder */
    if (nruns > 1)
        while (shared > 0 && first[shared] != '/' && first[shared] != '\0')
            shared--;
    for (size_t k = 0; k < m; k++) {
        finding *f = &s->f[idx[k]];
        if (nruns < 2) {
            f->run[0] = '\0';
            continue;
        }
        const char *r = top[which[k]] + shared;
        while (*r == '/')
            r++;
        snprintf(f->run, sizeof f->run, "%s", *r ? r : ".");
    }
    free(idx);
    free(which);
    free(dist);
    free(top);
    return 0;
}

/* long: the story's end: its passes in their order over the same tables, freed at one exit. */
int story_finish(story *s, const char *job_id)
{
    itable streams = {0}, jobs = {0}, ids = {0};
    long *tails = NULL;
    int rc = -1;
    for (size_t i = 0; i < s->n; i++) {
        finding *f = &s->f[i];
        /* qsort must not see NULL even with a zero count (UBSan rightly says so) */
        if (f->ranks.n > 1)
            qsort(f->ranks.items, f->ranks.n, sizeof *f->ranks.items, set_cmp);
        if (f->hosts.n > 1)
            qsort(f->hosts.items, f->hosts.n, sizeof *f->hosts.items, set_cmp);
        f->is_root = 1;
        f->caused_by = -1;
        f->note = NULL;
        f->joined_into = f->next_joined = f->first_joined = -1;
        f->job_head = f->job_next = -1;
    }
    s->n_jobs = 0;
    if (itable_init(&streams, s->n) || itable_init(&jobs, s->n) || itable_init(&ids, s->n) ||
        !(tails = malloc((s->n + 1) * sizeof *tails)))
        goto out;
    /* The job a source states in one line (slurmstepd's StepId=1234.0) is that of its other lines. */
    for (size_t i = 0; i < s->n; i++) {
        finding *f = &s->f[i];
        if (!f->job_id[0])
            continue;
        long *v = itable_slot(&streams, stream_hash(&f->first), eq_stream, s, &f->first);
        if (*v < 0 || f->first.line < s->f[*v].first.line)
            *v = (long)i;
    }
    /* A Ray job (worker-<worker>-<job>-<pid>.err) is the job of its findings when the scan names none
     * (no --job-id, no Slurm job the inputs agree on: a Ray job inside a Slurm job stays in the Slurm
     * job). One Ray job in the scan is also the job of the sources that name none (its driver's log,
     * the raylet's); with several, those stay apart, as nothing says which they belong to. */
    const char *ray = NULL;
    int rays = 0;
    for (size_t i = 0; (!job_id || !*job_id) && i < s->n && rays < 2; i++) {
        const char *r = s->f[i].ray_job;
        if (!s->f[i].job_id[0] && is_ray_job(r) && (!ray || strcmp(ray, r) != 0))
            ray = r, rays++;
    }
    if (rays == 1)
        job_id = ray;
    for (size_t i = 0; i < s->n; i++) {
        finding *f = &s->f[i];
        const char *job = f->job_id;
        f->job_stated = *job != 0;
        if (!*job) {
            long *v = itable_slot(&streams, stream_hash(&f->first), eq_stream, s, &f->first);
            f->job_stated = *v >= 0;
            job = *v >= 0 ? s->f[*v].job_id : rays > 1 && is_ray_job(f->ray_job) ? f->ray_job : (job_id ? job_id : "");
        }
        snprintf(f->job, sizeof f->job, "%.*s", (int)sizeof f->job - 1, job);
    }
    if (assign_runs(s) != 0)
        goto out;
    for (size_t i = 0; i < s->n; i++) {
        finding *f = &s->f[i];
        uint64_t h = FNV_BASIS;
        h = fnv1a(tax_class_name(f->cls), h);
        h = fnv1a("|", h);
        h = fnv1a(f->group, h); /* pattern id, phase, masked message */
        h = fnv1a("|", h);
        h = fnv1a(f->job, h);
        if (f->run[0]) /* (a scan of one run keeps the ids it always had) */
            h = fnv1a(f->run, fnv1a("|run:", h));
        snprintf(f->id, sizeof f->id, "%016llx", (unsigned long long)h);
        /* one list per job, in index order */
        long *j = itable_slot(&jobs, job_hash(f), eq_job, s, f);
        if (*j < 0) {
            *j = (long)i;
            f->job_no = s->n_jobs++;
            tails[i] = (long)i;
        } else {
            finding *h0 = &s->f[*j];
            s->f[tails[*j]].job_next = (long)i;
            tails[*j] = (long)i;
            f->job_no = h0->job_no;
        }
        f->job_head = *j;
    }
    /* The same id twice is one failure (the same line in a source naming the job and one that did not):
     * one finding, never two records with one id. */
    for (size_t i = 0; i < s->n; i++) {
        long *v = itable_slot(&ids, fnv1a(s->f[i].id, FNV_BASIS), eq_id, s, s->f[i].id);
        if (*v < 0) {
            *v = (long)i;
        } else if (better_window(&s->f[i], &s->f[*v])) {
            join(s, (long)i, *v);
            *v = (long)i;
        } else {
            join(s, *v, (long)i);
        }
    }
    /* a finding joined into one that was itself joined later: point at the one reported */
    for (size_t i = 0; i < s->n; i++) {
        long p = s->f[i].joined_into;
        for (int hops = 0; p >= 0 && s->f[p].joined_into >= 0 && hops < 8; hops++)
            p = s->f[p].joined_into;
        s->f[i].joined_into = p;
    }
    for (size_t i = 0; i < s->n; i++)
        if (s->f[i].job_head == (long)i) {
            join_windows(s, (long)i);
            elect_causes(s, (long)i);
        }
    rc = 0;
out:
    itable_free(&streams);
    itable_free(&jobs);
    itable_free(&ids);
    free(tails);
    return rc;
}

size_t story_sources(const story *s, size_t idx, story_window *out, size_t cap)
{
    size_t n = 0;
    for (long i = (long)idx; i >= 0 && n < cap; i = (i == (long)idx ? s->f[idx].first_joined : s->f[i].next_joined)) {
        const finding *f = &s->f[i];
        for (size_t k = 0; k < f->n_windows && n < cap; k++) {
            size_t d;
            for (d = 0; d < n; d++)
                if (strcmp(out[d].kind, f->windows[k].kind) == 0 && same_str(out[d].path, f->windows[k].path) &&
                    same_str(out[d].member, f->windows[k].member))
                    break;
            if (d == n)
                out[n++] = f->windows[k];
        }
    }
    return n;
}

const uint32_t *story_job_votes(const story *s, const char *job)
{
    long i = votes_find(s, job ? job : "");
    if (i < 0)
        i = votes_find(s, "");
    return i < 0 ? NULL : s->votes[i].votes;
}

static int order_cmp(const void *a, const void *b, void *ctx)
{
    const story *s = ctx;
    const finding *x = &s->f[*(const size_t *)a], *y = &s->f[*(const size_t *)b];
    if ((x->joined_into >= 0) != (y->joined_into >= 0))
        return x->joined_into >= 0 ? 1 : -1;
    if (x->is_root != y->is_root)
        return x->is_root ? -1 : 1;
    if (story_loc_before(&x->first, &y->first))
        return -1;
    if (story_loc_before(&y->first, &x->first))
        return 1;
    return strcmp(x->id, y->id);
}

size_t story_order(const story *s, size_t *order)
{
    size_t shown = 0;
    for (size_t i = 0; i < s->n; i++) {
        order[i] = i;
        shown += s->f[i].joined_into < 0;
    }
    /* glibc's qsort_r (the library is built with _GNU_SOURCE): the story is the comparison's context, so
     * two scans in one process may order at once (a global context made them clash) */
    if (s->n > 1)
        qsort_r(order, s->n, sizeof *order, order_cmp, (void *)s);
    return shown;
}

int story_echo_level(const finding *f) { return echo_level(f); }
