/* story_cause.c - the story of each job (story_finish): each finding's job and id, one failure's windows
 * joined, echoes and their causes, chosen within a job; and the order findings are reported in. */
#include "story/story.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "story/story_internal.h"

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
    return f->n_windows ? f->windows[0].kind : story_pattern_kind(f->pattern);
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
/* The length of a group's text without the "|attempt=N" story_add appends for a later attempt: whether
 * two attempts may join is can_join's question, asked of the findings' attempts themselves (a copy in a
 * file that names no attempt, a faulthandler dump, may be any attempt's). */
static size_t text_len(const char *t)
{
    const char *att = strstr(t, "|attempt=");
    return att ? (size_t)(att - t) : strlen(t);
}

/* The same message of the same pattern, whatever phase each copy could tell (group: pattern|phase|text). */
static int same_text(const finding *a, const finding *b)
{
    const char *x = strchr(a->group, '|'), *y = strchr(b->group, '|');
    x = x ? strchr(x + 1, '|') : NULL;
    y = y ? strchr(y + 1, '|') : NULL;
    return a->pattern == b->pattern && x && y && text_len(x) == text_len(y) && memcmp(x, y, text_len(x)) == 0;
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
    if (a->attempt >= 0 && b->attempt >= 0 && a->attempt != b->attempt)
        return 0; /* two attempts' failures are two failures, however alike */
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
    story_merge_memory(fp->memory, fo->memory);
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
    if (fp->attempt < 0) /* a copy that names no attempt (a faulthandler dump) is the attempt its twin names */
        fp->attempt = fo->attempt;
    for (size_t k = 0; k < fo->ranks.n; k++)
        story_set_add(&fp->ranks, fo->ranks.items[k]);
    for (size_t k = 0; k < fo->hosts.n; k++)
        story_set_add(&fp->hosts, fo->hosts.items[k]);
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
        if (f->attempt >= 0 && g->attempt >= 0 && f->attempt != g->attempt)
            continue; /* another attempt's worker */
        char named[24];
        snprintf(named, sizeof named, "%.0f", lr->valuedouble);
        if (strcmp(f->local_rank, named) == 0 || strcmp(f->rank, named) == 0)
            continue; /* the echo's own worker: its exit says nothing of the peer */
        if (best < 0 || loc_cmp_stable(&g->first, &s->f[best].first) < 0)
            best = j;
    }
    return best;
}

/* Whether finding g's strong phase may speak for the weak one of f in the same job: its own reading
 * (not one it was given), not a launcher's summary (that has the phase of the console it is printed in,
 * see join()), and not from another torchrun attempt (a restart starts afresh). */
static int phase_donor(const finding *f, const finding *g)
{
    return g != f && g->joined_into < 0 && g->phase != PH_UNKNOWN && !g->phase_weak && !g->phase_from_job &&
           strcmp(finding_kind(g), "launcher") != 0 && !(f->attempt >= 0 && g->attempt >= 0 && f->attempt != g->attempt);
}

/* The first finding of the job (from head) whose strong phase may speak for f, when every such finding
 * names the same phase; -1 when none does or two disagree. */
static long agreed_donor(const story *s, long head, const finding *f)
{
    long donor = -1;
    for (long j = head; j >= 0; j = s->f[j].job_next) {
        if (!phase_donor(f, &s->f[j]))
            continue;
        if (donor < 0)
            donor = j;
        else if (s->f[j].phase != s->f[donor].phase)
            return -1; /* the job's strong readings disagree */
    }
    return donor;
}

/* A weak phase gives way to a stronger one anywhere in the job (taxonomy.md, "How sure"): a NCCL
 * timeout read as communication for want of anything else takes the start-up phase another rank's
 * init_model frame names. The donor is the finding's own cause when that one's phase is strong; else
 * the strong phase every other finding of the job agrees on (two that disagree leave it weak: a wrong
 * phase is worse than a weak one). The group, and so the id, stays the one the finding was read with. */
static void reconcile_phases(story *s, long head)
{
    for (long i = head; i >= 0; i = s->f[i].job_next) {
        finding *f = &s->f[i];
        /* a weak reading of the failure's own stack (a native abort's faulthandler frames) is what this
         * rank was doing; the job's other findings, its echoes among them, tell only what theirs were */
        if (f->joined_into >= 0 || f->phase == PH_UNKNOWN || !f->phase_weak || f->phase_from_job || f->phase_from_frames)
            continue;
        long donor = f->caused_by >= 0 && phase_donor(f, &s->f[f->caused_by]) ? f->caused_by : agreed_donor(s, head, f);
        if (donor < 0)
            continue;
        const finding *g = &s->f[donor];
        char ev[320];
        snprintf(ev, sizeof ev, "%s, in finding %s of the same job (this failure's own reading was weak: %s)",
                 g->phase_evidence ? g->phase_evidence : tax_phase_human(g->phase), g->id,
                 f->phase_evidence ? f->phase_evidence : tax_phase_human(f->phase));
        char *dup = strdup(ev);
        if (!dup)
            continue; /* out of memory: the weak phase stays, nothing is lost */
        free(f->phase_evidence);
        f->phase_evidence = dup;
        f->phase = g->phase;
        f->phase_weak = 0;
        f->phase_from_job = 1;
        f->version++;
    }
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

/* (story.h) long: the story's end: its passes in their order over the same tables, freed at one exit. */
int story_finish(story *s, const char *job_id)
{
    itable streams = {0}, jobs = {0}, ids = {0};
    long *tails = NULL;
    int rc = -1;
    for (size_t i = 0; i < s->n; i++) {
        finding *f = &s->f[i];
        /* qsort must not see NULL even with a zero count (UBSan rightly says so) */
        if (f->ranks.n > 1)
            qsort(f->ranks.items, f->ranks.n, sizeof *f->ranks.items, story_set_cmp);
        if (f->hosts.n > 1)
            qsort(f->hosts.items, f->hosts.n, sizeof *f->hosts.items, story_set_cmp);
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
        if (!s->f[i].job_id[0] && story_is_ray_job(r) && (!ray || strcmp(ray, r) != 0))
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
            job = *v >= 0 ? s->f[*v].job_id : rays > 1 && story_is_ray_job(f->ray_job) ? f->ray_job : (job_id ? job_id : "");
        }
        snprintf(f->job, sizeof f->job, "%.*s", (int)sizeof f->job - 1, job);
    }
    if (story_assign_runs(s) != 0)
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
            reconcile_phases(s, (long)i);
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
