/* story.c - grouping, fingerprints and root cause. */
#include "story/story.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match/config.h"

#define STORY_MAX_FINDINGS 4096

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

static void free_finding(finding *f)
{
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
    config_store_free(s->config);
    free(s);
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
    if (f->framework < 0)
        f->framework = ev->framework;
    return 0;
}

int story_set_phase(story *s, long idx, tax_phase phase, const char *evidence, int framework)
{
    if (idx < 0 || (size_t)idx >= s->n || (s->f[idx].phase != PH_UNKNOWN && !s->f[idx].phase_weak) ||
        phase == PH_UNKNOWN)
        return 0;
    story_event ev = {.phase = phase, .phase_evidence = evidence, .framework = framework};
    if (set_phase(&s->f[idx], &ev) != 0)
        return -1;
    s->f[idx].version++;
    return 0;
}

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
        size_t gl = strlen(ev->pattern->id) + strlen(masked) + 48;
        group = malloc(gl);
        if (group)
            snprintf(group, gl, "%s|%s|%s", ev->pattern->id, tax_phase_name(ev->phase), masked);
        free(masked);
        if (!group) {
            cJSON_Delete(ev->memory);
            return -1;
        }
        for (size_t i = 0; i < s->n; i++)
            if (strcmp(s->f[i].group, group) == 0 && strcmp(s->f[i].job_id, ev->job_id ? ev->job_id : "") == 0) {
                idx = (long)i;
                break;
            }
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
        f->memory = ev->memory ? ev->memory : cJSON_CreateObject();
        f->caused_by = -1;
        if (set_loc(&f->first, ev) || !f->memory) {
            free_finding(f);
            return -1;
        }
        idx = (long)s->n++;
    } else {
        free(group);
        finding *f = &s->f[idx];
        /* a later line's phase is taken when the finding has none, or only a weak one and this is strong */
        if ((f->phase == PH_UNKNOWN || (f->phase_weak && !ev->phase_weak)) && ev->phase != PH_UNKNOWN &&
            set_phase(f, ev) != 0) {
            cJSON_Delete(ev->memory);
            return -1;
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
    set_add(&f->ranks, ev->rank);
    set_add(&f->hosts, ev->host);
    f->version++;
    return idx;
}

int story_merge(story *dst, story *src)
{
    if (config_store_merge(&dst->config, &src->config) != 0)
        return -1;
    for (size_t i = 0; i < src->n; i++) {
        finding *sf = &src->f[i];
        size_t j;
        for (j = 0; j < dst->n; j++)
            if (strcmp(dst->f[j].group, sf->group) == 0 && strcmp(dst->f[j].job_id, sf->job_id) == 0)
                break;
        if (j == dst->n) {
            if (dst->max_findings && dst->n >= dst->max_findings) {
                dst->dropped++; /* counted, not kept: memory and the search above stay bounded */
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
            dst->f[dst->n++] = *sf; /* moved */
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
        df->ranks.dropped += sf->ranks.dropped;
        df->hosts.dropped += sf->hosts.dropped;
        merge_memory(df->memory, sf->memory);
        df->version++;
        free_finding(sf);
        memset(sf, 0, sizeof *sf);
    }
    dst->dropped += src->dropped;
    src->n = 0;
    src->dropped = 0;
    return 0;
}

static uint64_t fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* How strongly a class is an echo: causes 0; NCCL failures 1 (they may be a root themselves);
 * crashes after an abort 2; a supervisor's report 3. A finding can follow from a lower level only. */
static int echo_level(const finding *f)
{
    if (!f->echo)
        return 0;
    switch (f->cls) {
    case CLS_NCCL_TIMEOUT: case CLS_NCCL_ERROR: return 1;
    case CLS_SEGFAULT: return 2;
    case CLS_CHILD_FAILED: return 3;
    default: return 2; /* a pattern marked echo (a launcher's SIGKILL) */
    }
}

void story_finish(story *s, const char *job_id)
{
    for (size_t i = 0; i < s->n; i++) {
        finding *f = &s->f[i];
        /* qsort must not see NULL even with a zero count (UBSan rightly says so) */
        if (f->ranks.n > 1)
            qsort(f->ranks.items, f->ranks.n, sizeof *f->ranks.items, set_cmp);
        if (f->hosts.n > 1)
            qsort(f->hosts.items, f->hosts.n, sizeof *f->hosts.items, set_cmp);
        const char *job = f->job_id[0] ? f->job_id : (job_id ? job_id : "");
        uint64_t h = 0xcbf29ce484222325ULL;
        h = fnv1a(tax_class_name(f->cls), h);
        h = fnv1a("|", h);
        h = fnv1a(f->group, h); /* pattern id, phase, masked message */
        h = fnv1a("|", h);
        h = fnv1a(job, h);
        snprintf(f->id, sizeof f->id, "%016llx", (unsigned long long)h);
        f->is_root = 1;
        f->caused_by = -1;
        f->note = NULL;
    }
    /* A finding follows from the earliest finding of a lower echo level that is not after it. */
    for (size_t i = 0; i < s->n; i++) {
        finding *f = &s->f[i];
        int lvl = echo_level(f);
        if (lvl == 0)
            continue;
        long best = -1;
        for (size_t j = 0; j < s->n; j++) {
            if (j == i || echo_level(&s->f[j]) >= lvl)
                continue;
            /* Without stamps, print order is weak evidence: ranks and threads share a stream through
             * buffers (NCCL's proxy thread reports an allocation failure after the collective that it
             * broke). Only a time stamp that says the cause came later rules it out. */
            /* A launcher kills the siblings first and reports the dead child after, in the same second. */
            if (time_cmp_slack(&s->f[j].first, &f->first, 1.0) == 1)
                continue; /* stamped later than the echo */
            if (best < 0 || echo_level(&s->f[j]) < echo_level(&s->f[best]) ||
                (echo_level(&s->f[j]) == echo_level(&s->f[best]) && story_loc_before(&s->f[j].first, &s->f[best].first)))
                best = (long)j;
        }
        if (best >= 0) {
            f->is_root = 0;
            f->caused_by = best;
        } else {
            f->note = "this usually follows a failure elsewhere; its cause may be in logs not given";
        }
    }
    /* Follow chains to the root (a child_failed after a NCCL timeout after an OOM points at the OOM). */
    for (size_t i = 0; i < s->n; i++) {
        long c = s->f[i].caused_by;
        for (int hops = 0; c >= 0 && !s->f[c].is_root && hops < 8; hops++)
            c = s->f[c].caused_by;
        s->f[i].caused_by = c;
    }
}

static const story *order_ctx;

static int order_cmp(const void *a, const void *b)
{
    const finding *x = &order_ctx->f[*(const size_t *)a], *y = &order_ctx->f[*(const size_t *)b];
    if (x->is_root != y->is_root)
        return x->is_root ? -1 : 1;
    if (story_loc_before(&x->first, &y->first))
        return -1;
    if (story_loc_before(&y->first, &x->first))
        return 1;
    return strcmp(x->id, y->id);
}

void story_order(const story *s, size_t *order)
{
    for (size_t i = 0; i < s->n; i++)
        order[i] = i;
    /* qsort has no context argument in C11; ordering is done on one thread at the end. */
    order_ctx = s;
    if (s->n > 1)
        qsort(order, s->n, sizeof *order, order_cmp);
    order_ctx = NULL;
}

int story_echo_level(const finding *f) { return echo_level(f); }
