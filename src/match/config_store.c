/* config_store.c - the settings store: one job's settings as read from its log, put, found again, merged and
 * looked up by a checklist's key (config.h). Reading them from a line is config_read.c's. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/grow.h"
#include "match/config_impl.h"

config_store *config_store_new(uint64_t *clock)
{
    config_store *s = calloc(1, sizeof *s);
    if (s)
        s->clock = clock;
    return s;
}

config_view config_view_of(const config_store *st)
{
    config_view v = {st, NULL, NULL, 0, NULL};
    return v;
}

void config_view_each(const config_view *v, void (*fn)(const config_store *st, void *ud), void *ud)
{
    if (!v)
        return;
    if (v->all) {
        for (size_t i = 0; i < v->n_all; i++)
            if (v->all[i])
                fn(v->all[i], ud);
        return;
    }
    if (v->own)
        fn(v->own, ud);
    if (v->shared && v->shared != v->own)
        fn(v->shared, ud);
}

void config_store_free(config_store *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->e[i].path);
        free(s->e[i].value);
        free(s->e[i].file);
    }
    free(s->e);
    free(s);
}

static int job_match(const char *a, const char *b) { return !a[0] || !b[0] || strcmp(a, b) == 0; }

/* A hash of path and job from their lengths and end bytes, in constant time: config_store_put() compares strings
 * only where the hashes agree (a settings-heavy log reads the same few dozen paths a million times;
 * the paths share their beginnings, not their lengths and ends). */
static uint64_t tail_word(const char *s, size_t n)
{
    uint64_t w = 0;
    memcpy(&w, s + (n > 8 ? n - 8 : 0), n < 8 ? n : 8);
    return w;
}

static uint32_t entry_hash(const char *path, size_t n, const char *job, size_t m)
{
    uint64_t h = (uint64_t)n * 0x9E3779B97F4A7C15ull + m;
    h = (h ^ tail_word(path, n)) * 0xff51afd7ed558ccdull;
    h = (h ^ tail_word(path, n > 8 ? n - 8 : 0)) * 0xc4ceb9fe1a85ec53ull;
    h = (h ^ tail_word(job, m)) * 0xff51afd7ed558ccdull;
    return (uint32_t)(h >> 32);
}

/* Replace the string *dst by src unless equal: in place when it fits what *dst holds now (a value read
 * again is mostly as long as the last one), else a new copy. -1 out of memory. */
static int set_string(char **dst, const char *src)
{
    if (*dst) {
        if (strcmp(*dst, src) == 0)
            return 0;
        size_t want = strlen(src);
        if (want <= strlen(*dst)) {
            memcpy(*dst, src, want + 1);
            return 0;
        }
    }
    char *v = strdup(src);
    if (!v)
        return -1;
    free(*dst);
    *dst = v;
    return 0;
}

static int same_entry(const config_entry *e, uint32_t h, const char *path, const char *job)
{
    return e->hash == h && strcmp(e->path, path) == 0 && strcmp(e->job, job) == 0;
}

/* config_impl.h */
int config_store_touch(config_store *s, size_t i, const config_reading *r)
{
    config_entry *e = &s->e[i];
    /* A config dump read again (every step of a settings-heavy log) mostly repeats value and file:
     * keep the strings held then instead of copying them anew for each line; compare the value by
     * its length first, and the file not at all when the same source set it */
    if (!e->value || r->vlen != e->vlen || memcmp(e->value, r->value, r->vlen) != 0) {
        if (!e->value || r->vlen > e->vcap) {
            char *v = malloc(r->vlen + 1);
            if (!v)
                return -1;
            free(e->value);
            e->value = v;
            e->vcap = (uint32_t)r->vlen;
        }
        memcpy(e->value, r->value, r->vlen);
        e->value[r->vlen] = '\0';
        e->vlen = (uint32_t)r->vlen;
    }
    if (!r->from || e->file_from != r->from) {
        if (set_string(&e->file, r->file ? r->file : ""))
            return -1;
        e->file_from = r->from;
    }
    e->line = r->line;
    e->seq = s->clock ? (*s->clock)++ : s->next_seq++;
    return 0;
}

/* config_impl.h */
int config_store_put(config_store **sp, const char *path, size_t plen, const char *job, const config_reading *r, size_t *at)
{
    if (!*sp && !(*sp = calloc(1, sizeof **sp)))
        return -1;
    config_store *s = *sp;
    if (!job)
        job = "";
    /* the job as an entry keeps it (cut to 31 bytes), so that a long job id finds its entries again */
    char cut[sizeof s->e[0].job];
    size_t jl = strlen(job);
    if (jl >= sizeof cut) {
        jl = sizeof cut - 1;
        memcpy(cut, job, jl);
        cut[jl] = '\0';
        job = cut;
    }
    uint32_t h = entry_hash(path, plen, job, jl);
    uint32_t *slot = &s->slot[h % CONFIG_SLOTS];
    size_t i;
    if (*slot && same_entry(&s->e[*slot - 1], h, path, job)) {
        i = *slot - 1;
    } else {
        for (i = 0; i < s->n; i++)
            if (same_entry(&s->e[i], h, path, job))
                break;
    }
    if (i == s->n) {
        if (GROW(s->e, s->n, s->cap, 32))
            return -1;
        memset(&s->e[i], 0, sizeof s->e[i]);
        if (!(s->e[i].path = strdup(path)))
            return -1;
        snprintf(s->e[i].job, sizeof s->e[i].job, "%s", job);
        s->e[i].hash = h;
        s->e[i].plen = (uint32_t)plen;
        s->n++;
    }
    *slot = (uint32_t)i + 1;
    if (at)
        *at = i;
    return config_store_touch(s, i, r);
}

int config_put(config_store **st, const char *path, const char *value, const char *job, const char *file,
               uint64_t line)
{
    config_reading r = {value, strlen(value), file, line, 0};
    return config_store_put(st, path, strlen(path), job, &r, NULL);
}

typedef struct {
    const char *path, *job;
    const config_entry *best;
} get_ctx;

static void get_in(const config_store *st, void *ud)
{
    get_ctx *g = ud;
    for (size_t i = 0; g->path && i < st->n; i++) {
        const config_entry *e = &st->e[i];
        if (strcmp(e->path, g->path) == 0 && job_match(e->job, g->job) && (!g->best || e->seq > g->best->seq))
            g->best = e;
    }
}

const config_entry *config_view_get(const config_view *v, const char *path, const char *job)
{
    get_ctx g = {path, job ? job : "", NULL};
    config_view_each(v, get_in, &g);
    return g.best;
}

const config_entry *config_get(const config_store *st, const char *path, const char *job)
{
    config_view v = config_view_of(st);
    return config_view_get(&v, path, job);
}

int config_store_merge(config_store **dst, config_store **src)
{
    config_store *s = *src;
    if (!s)
        return 0;
    int rc = 0;
    for (size_t i = 0; i < s->n && rc == 0; i++) {
        const config_entry *e = &s->e[i];
        config_reading r = {e->value, e->vlen, e->file, e->line, 0};
        rc = config_store_put(dst, e->path, e->plen, e->job, &r, NULL);
    }
    config_store_free(s);
    *src = NULL;
    return rc;
}

static void path_comps(const char *path, comps *out)
{
    out->n = 0;
    const char *s = path;
    while (*s && out->n < CONFIG_MAX_COMPONENTS) {
        const char *dot = strchr(s, '.');
        size_t len = dot ? (size_t)(dot - s) : strlen(s);
        if (len >= COMP_CAP)
            len = COMP_CAP - 1;
        memcpy(out->c[out->n], s, len);
        out->c[out->n++][len] = '\0';
        if (!dot)
            break;
        s = dot + 1;
    }
}

typedef struct {
    comps k;
    const char *job;
    const config_entry *best;
    size_t best_score;
} lookup_ctx;

static void lookup_in(const config_store *st, void *ud)
{
    lookup_ctx *l = ud;
    comps p;
    for (size_t i = 0; i < st->n; i++) {
        const config_entry *e = &st->e[i];
        if (!job_match(e->job, l->job))
            continue;
        path_comps(e->path, &p);
        size_t s = 0;
        while (s < l->k.n && s < p.n && strcmp(l->k.c[l->k.n - 1 - s], p.c[p.n - 1 - s]) == 0)
            s++;
        /* one path must be a suffix of the other: critic.x never stands for actor.x */
        if (s == 0 || s < (l->k.n < p.n ? l->k.n : p.n))
            continue;
        if (!l->best || s > l->best_score || (s == l->best_score && e->seq > l->best->seq)) {
            l->best = e;
            l->best_score = s;
        }
    }
}

const config_entry *config_view_lookup(const config_view *v, const char *key, const char *job)
{
    lookup_ctx l = {.job = job ? job : ""};
    if (!key || !config_key_comps(key, &l.k))
        return NULL;
    config_view_each(v, lookup_in, &l);
    return l.best;
}

const config_entry *config_lookup(const config_store *st, const char *key, const char *job)
{
    config_view v = config_view_of(st);
    return config_view_lookup(&v, key, job);
}

