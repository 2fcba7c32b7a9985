/* story.c - grouping failure lines into findings: the index by group and job, windows, masks, sets,
 * locations, story_add, story_find and story_merge. Jobs, joins and causes are story_cause.c's, the
 * settings and votes story_settings.c's, the runs story_runs.c's. */
#include "story/story.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match/config.h"
#include "story/story_internal.h"

/* Enough for 20,000 jobs' logs of a few findings each in one run (docs/performance.md). */
#define STORY_MAX_FINDINGS (1u << 18)

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
    free(s->att_path);
    free(s->att_member);
    free(s);
}

/* A Ray job id as worker log names carry it: 8 hex digits (a submission id, "raysubmit_...", names the
 * same job in another vocabulary and is not one). */
int story_is_ray_job(const char *r)
{
    size_t n = 0;
    while (n < 9 && isxdigit((unsigned char)r[n]))
        n++;
    return n == 8 && !r[8];
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
    if (ray_job && story_is_ray_job(ray_job)) {
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
const char *story_pattern_kind(const pdb_pattern *p)
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

int story_set_add(story_set *s, const char *v)
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

int story_set_cmp(const void *a, const void *b)
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
void story_merge_memory(cJSON *dst, const cJSON *src)
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

static int sink_set_phase(void *ud, long i, tax_phase phase, const char *evidence, int framework, unsigned flags)
{
    return story_set_phase(ud, i, phase, evidence, framework, flags);
}

static struct config_store **sink_settings(void *ud, const char *job) { return story_job_settings(ud, job); }

const scan_sink *story_sink(story *s)
{
    s->sink = (scan_sink){s, sink_add, sink_phase_of, sink_set_phase, sink_settings};
    return &s->sink;
}

int story_set_phase(story *s, long idx, tax_phase phase, const char *evidence, int framework, unsigned flags)
{
    if (idx < 0 || (size_t)idx >= s->n || phase == PH_UNKNOWN ||
        (s->f[idx].phase != PH_UNKNOWN && !s->f[idx].phase_weak && !(flags & SINK_PHASE_REPLACE)))
        return 0;
    story_event ev = {.phase = phase, .phase_evidence = evidence, .framework = framework,
                      .phase_weak = (flags & SINK_PHASE_WEAK) != 0, .phase_from_frames = (flags & SINK_PHASE_FRAMES) != 0};
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

/* The attempt of a line of source path/member (story_types.h, att_*): torchrun's console holds every
 * attempt of a job started with --max_restarts, one after the other, and Debian's torchrun 1.13 prints
 * nothing between them but its report of the failed worker ("failed (exitcode: 1) local_rank: 1"): a
 * worker's line after that report is the next attempt's (fixtures/realjobs/attempts_appended). The
 * findings the source gave before its first such line are then attempt 0's. Returns the attempt, -1
 * when the source holds one attempt so far. -1 as well out of memory (the attempts are then not split). */
static int appended_attempt(story *s, const story_event *ev)
{
    const char *path = ev->path ? ev->path : "";
    if (!s->att_path || strcmp(s->att_path, path) != 0 || !same_str(s->att_member, ev->member)) {
        free(s->att_path);
        free(s->att_member);
        s->att_path = strdup(path);
        s->att_member = ev->member ? strdup(ev->member) : NULL;
        s->att_no = s->att_pending = s->att_split = 0;
        if (!s->att_path || (ev->member && !s->att_member))
            return -1;
    }
    int launcher = !ev->kind && strcmp(story_pattern_kind(ev->pattern), "launcher") == 0;
    if (launcher) {
        /* its summary (ChildFailedError, the box of exit codes) ends the job: a rank's line after it is
         * the box's quote of that rank's traceback, not a new attempt */
        s->att_pending = strstr(ev->pattern->id, "failed_exitcode") != NULL;
    } else if (!launcher && !ev->kind && s->att_pending &&
               ((ev->rank && *ev->rank) || (ev->local_rank && *ev->local_rank))) {
        s->att_pending = 0;
        s->att_no++;
        if (!s->att_split)
            for (size_t i = 0; i < s->n; i++)
                if (s->f[i].appended_attempt == 0 && same_str(s->f[i].first.path, path) &&
                    same_str(s->f[i].first.member, ev->member))
                    s->f[i].appended_attempt = 1;
        s->att_split = 1;
    }
    return s->att_split ? s->att_no : -1;
}

/* (story.h) long: one event into the story: merged into a finding or a new one, then the finding's phase,
 * time and windows updated from the same event. */
long story_add(story *s, const story_event *ev)
{
    long idx = -1;
    char *group = NULL;
    /* a line of a later attempt is another failure than the same line of an earlier one: its attempt
     * (from its attempt_<n> folder, else from a log attempts appended to) enters the group */
    int path_attempt = -1, attempt = appended_attempt(s, ev);
    char run_buf[8];
    story_run_folder(ev->path, ev->member, run_buf, sizeof run_buf, &path_attempt);
    int group_attempt = path_attempt >= 0 ? path_attempt : attempt;
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
        if (cJSON_IsNumber(vp) && strcmp(story_pattern_kind(ev->pattern), "kernel") == 0)
            snprintf(victim, sizeof victim, "|pid=%.0f", vp->valuedouble);
        char att[24] = "";
        if (group_attempt > 0)
            snprintf(att, sizeof att, "|attempt=%d", group_attempt);
        size_t gl = strlen(ev->pattern->id) + strlen(masked) + sizeof victim + sizeof att + 48;
        group = malloc(gl);
        if (group)
            snprintf(group, gl, "%s|%s|%s%s%s", ev->pattern->id, tax_phase_name(ev->phase), masked, victim, att);
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
        f->appended_attempt = path_attempt < 0 && attempt >= 0 ? attempt + 1 : 0;
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
            story_merge_memory(f->memory, ev->memory);
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
    if (add_window(f, ev->kind ? ev->kind : story_pattern_kind(ev->pattern), ev->path, ev->member, ev->line) != 0)
        return -1;
    story_set_add(&f->ranks, ev->rank);
    story_set_add(&f->hosts, ev->host);
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
            story_set_add(&df->ranks, sf->ranks.items[k]);
        for (size_t k = 0; k < sf->hosts.n; k++)
            story_set_add(&df->hosts, sf->hosts.items[k]);
        for (size_t k = 0; k < sf->n_windows; k++)
            if (add_window(df, sf->windows[k].kind, sf->windows[k].path, sf->windows[k].member, sf->windows[k].line) != 0)
                return -1;
        df->ranks.dropped += sf->ranks.dropped;
        df->hosts.dropped += sf->hosts.dropped;
        story_merge_memory(df->memory, sf->memory);
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
