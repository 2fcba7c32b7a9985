/* config.c - reading the job's settings from the configuration it prints, and proposing changes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include "match/config.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MIN_LEAF 10  /* shorter key names ("stage", "backend") are too common to scan for */
#define VALUE_CAP 200
#define COMP_CAP 96

typedef struct {
    char c[CONFIG_MAX_COMPONENTS][COMP_CAP];
    size_t n;
} comps;

/* The bytes of a name by their value: 'i' a letter, digit or '_' (isalnum in the C locale, which
 * oomscan never changes, or '_'), 'n' the '.' and '-' a dotted or dashed name also holds, '.' none.
 * A lookup, not a call or a chain of compares: the walks back over a dotted prefix test every byte. */
static const char NAME_CLASS[257] =
    "................" /* 00 */
    "................" /* 10 */
    ".............nn." /* 20 */
    "iiiiiiiiii......" /* 30 */
    ".iiiiiiiiiiiiiii" /* 40 */
    "iiiiiiiiiii....i" /* 50 */
    ".iiiiiiiiiiiiiii" /* 60 */
    "iiiiiiiiiii....." /* 70 */
    "................" /* 80 */
    "................" /* 90 */
    "................" /* a0 */
    "................" /* b0 */
    "................" /* c0 */
    "................" /* d0 */
    "................" /* e0 */
    "................" /* f0 */;

static int ident(int c) { return NAME_CLASS[(unsigned char)c] == 'i'; }

/* ident, '.' or '-': a byte of a dotted setting name ("actor_rollout_ref.actor.ppo-epochs") */
static int name_byte(int c) { return NAME_CLASS[(unsigned char)c] != '.'; }

/* The brackets "()[]{}" as a bitmap over ASCII (bit c of LO for c < 64, bit c - 64 of HI), and with
 * '#' (a YAML comment) what the tracker reads besides line ends. */
#define BRACKET_LO ((1ull << '(') | (1ull << ')'))
#define BRACKET_HI ((1ull << ('[' - 64)) | (1ull << (']' - 64)) | (1ull << ('{' - 64)) | (1ull << ('}' - 64)))

static int in_bitmap(unsigned char c, uint64_t lo, uint64_t hi)
{
    return c < 64 ? (int)((lo >> c) & 1) : c < 128 ? (int)((hi >> (c - 64)) & 1) : 0;
}

static int bracket(char c) { return in_bitmap((unsigned char)c, BRACKET_LO, BRACKET_HI); }

static int closer(char c) { return c == ')' || c == ']' || c == '}'; }

/* Whether b[from..to), read backwards as brace_context reads it, closes every bracket it opens: no
 * opener without a closer after it, and no closer left over (one would close a remembered bracket). */
static int balanced(const char *b, size_t from, size_t to)
{
    size_t depth = 0;
    for (size_t i = to; i > from; i--) {
        char c = b[i - 1];
        if (!bracket(c))
            continue;
        if (closer(c))
            depth++;
        else if (depth-- == 0)
            return 0;
    }
    return depth == 0;
}

static int tracked(char c) { return in_bitmap((unsigned char)c, BRACKET_LO | (1ull << '#'), BRACKET_HI); }

/* ---- keys --------------------------------------------------------------------------------- */

/* Split a setting name into normalised components. 0 when it is not a key a log can print
 * (prose, a command, an environment variable, which shows up in hint texts more than in dumps). */
static int key_comps(const char *key, comps *out)
{
    out->n = 0;
    if (strncmp(key, "#SBATCH --", 10) == 0) {
        /* one opaque component: the directive as written */
        if (strlen(key) >= COMP_CAP || strchr(key + 10, ' '))
            return 0;
        snprintf(out->c[0], COMP_CAP, "%s", key);
        for (char *q = out->c[0]; *q; q++)
            if (*q == '-')
                *q = '_';
        out->n = 1;
        return 1;
    }
    while (*key == '-' || *key == '+')
        key++;
    if (!(isalpha((unsigned char)*key) || *key == '_') || isupper((unsigned char)*key))
        return 0;
    const char *s = key;
    while (*s) {
        const char *dot = strchr(s, '.');
        size_t len = dot ? (size_t)(dot - s) : strlen(s);
        if (len == 0 || len >= COMP_CAP || out->n == CONFIG_MAX_COMPONENTS)
            return 0;
        for (size_t i = 0; i < len; i++)
            if (!(ident(s[i]) || s[i] == '-'))
                return 0;
        char *c = out->c[out->n++];
        for (size_t i = 0; i < len; i++)
            c[i] = s[i] == '-' ? '_' : s[i];
        c[len] = '\0';
        if (!dot)
            break;
        s = dot + 1;
    }
    return out->n > 0;
}

int config_literal(const char *key, char *lit, size_t cap, char *alt, size_t altcap)
{
    comps k;
    if (!key || !key_comps(key, &k))
        return 0;
    if (altcap)
        alt[0] = '\0';
    if (key[0] == '#') {
        snprintf(lit, cap, "%s", key);
        return strlen(key) < cap;
    }
    const char *leaf = k.c[k.n - 1];
    if (strlen(leaf) < MIN_LEAF || strlen(leaf) >= cap)
        return 0;
    snprintf(lit, cap, "%s", leaf);
    /* the dashed spelling of a command-line flag ("--max-tokens-per-gpu") */
    const char *raw = strrchr(key, '.');
    raw = raw ? raw + 1 : key;
    while (*raw == '-')
        raw++;
    if (strchr(raw, '-') && strlen(raw) < altcap)
        snprintf(alt, altcap, "%s", raw);
    return 1;
}

/* ---- store -------------------------------------------------------------------------------- */

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

/* A hash of path and job from their lengths and end bytes, in constant time: put() compares strings
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

/* What one read of a setting says: its value (vlen bytes), where it was read, and the tracker's source
 * it was read through (config_tracker.source: file is the same for all its reads), 0 none. */
typedef struct {
    const char *value;
    size_t vlen;
    const char *file;
    uint64_t line, from;
} reading;

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

/* Entry i of s read again: value, where, and when (the last read wins). -1 out of memory. */
static int touch(config_store *s, size_t i, const reading *r)
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

/* Set path (plen bytes) = the value read for job; the last read of a key in a job wins. The entry's
 * index goes to *at (when not NULL). */
static int put(config_store **sp, const char *path, size_t plen, const char *job, const reading *r, size_t *at)
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
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 32;
            config_entry *g = realloc(s->e, cap * sizeof *g);
            if (!g)
                return -1;
            s->e = g;
            s->cap = cap;
        }
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
    return touch(s, i, r);
}

int config_put(config_store **st, const char *path, const char *value, const char *job, const char *file,
               uint64_t line)
{
    reading r = {value, strlen(value), file, line, 0};
    return put(st, path, strlen(path), job, &r, NULL);
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
        reading r = {e->value, e->vlen, e->file, e->line, 0};
        rc = put(dst, e->path, e->plen, e->job, &r, NULL);
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
    if (!key || !key_comps(key, &l.k))
        return NULL;
    config_view_each(v, lookup_in, &l);
    return l.best;
}

const config_entry *config_lookup(const config_store *st, const char *key, const char *job)
{
    config_view v = config_view_of(st);
    return config_view_lookup(&v, key, job);
}

/* ---- reading a line ----------------------------------------------------------------------- */

static void push_front(comps *c, const char *s, size_t len)
{
    if (c->n == CONFIG_MAX_COMPONENTS || len == 0)
        return;
    memmove(&c->c[1], &c->c[0], c->n * sizeof c->c[0]);
    if (len >= COMP_CAP)
        len = COMP_CAP - 1;
    for (size_t i = 0; i < len; i++)
        c->c[0][i] = s[i] == '-' ? '_' : s[i];
    c->c[0][len] = '\0';
    c->n++;
}

/* The key written just before an opening bracket at b[o] ("'actor': {", "mb_spec=MicroBatchSpec(").
 * Returns its length and start in *ks, 0 when there is none (the dump's outermost bracket). */
static size_t key_before(const char *b, size_t lo, size_t o, size_t *ks)
{
    size_t k = o;
    while (k > lo && (b[k - 1] == ' ' || b[k - 1] == '\t'))
        k--;
    if (b[o] == '(') { /* a class name: Namespace(, MicroBatchSpec( */
        size_t e = k;
        while (k > lo && (ident(b[k - 1]) || b[k - 1] == '.'))
            k--;
        if (k == e)
            return 0;
        while (k > lo && b[k - 1] == ' ')
            k--;
    }
    if (k == lo || (b[k - 1] != ':' && b[k - 1] != '='))
        return 0;
    k--;
    while (k > lo && b[k - 1] == ' ')
        k--;
    if (k > lo && (b[k - 1] == '\'' || b[k - 1] == '"')) {
        char q = b[k - 1];
        size_t e = k - 1, s = e;
        while (s > lo && b[s - 1] != q && b[s - 1] != '\n')
            s--;
        if (s == lo || b[s - 1] != q || s == e)
            return 0;
        *ks = s - 1;
        return e - s;
    }
    size_t e = k;
    while (k > lo && (ident(b[k - 1]) || b[k - 1] == '-'))
        k--;
    *ks = k;
    return e - k;
}

/* ---- enclosing brackets ------------------------------------------------------------------ */

typedef struct config_tracker_memo config_tracker_memo;

struct config_tracker {
    int valid;
    uint64_t upto;  /* stream offset: every bracket before it is counted */
    size_t n;       /* remembered open brackets, innermost last */
    size_t deep;    /* opened beyond CONFIG_TRACK_DEPTH, above the remembered ones: keys not kept */
    struct {
        char key[COMP_CAP]; /* "" for a bracket with no key before it (a dump's outermost) */
    } open[CONFIG_TRACK_DEPTH];
    /* The YAML block the scan is in: the lines still open above the scan position, by indentation
     * measured after a prefix of ylen bytes (a hit with another prefix is not in this block). Each is
     * a "key:" line or, with key "", a line of another kind, which ends the chain of enclosing keys. */
    size_t ylen, yn;
    int ymid; /* the scan position is inside a line (a line cut at the buffer's cap): skip to its end */
    struct {
        size_t col;
        char key[COMP_CAP];
    } y[CONFIG_TRACK_DEPTH];
    /* What the enclosing keys are read from changes only where the tracker read a bracket or a YAML
     * line (or lost its place): gen counts those passes, so that a setting read again in the same
     * surroundings finds its entry without building its path (`memo`, capture_at). */
    uint64_t gen;
    uint64_t epoch;   /* resets: a dotted name's memo holds within one (its store stays the same) */
    uint64_t source;  /* resets too, but unique among all trackers: reads under one name one file */
    size_t low, ylow; /* the fewest brackets and YAML lines open during a pass (track_to) */
    struct config_tracker_memo {
        const char *lit;
        uint64_t gen;
        const config_store *st;
        const char *job;
        uint32_t shape; /* YAML: 1 + column and indentation of the name; brackets: 0, or 1 quoted;
                         * a dotted name: its prefix's length (DOTTED_LAST: the last such name read) */
        size_t idx;     /* the entry in st */
    } memo[CONFIG_MEMO];
};

/* config_tracker.source: never the same twice in a process, whichever tracker takes it */
static _Atomic uint64_t next_source = 1;

config_tracker *config_tracker_new(void)
{
    config_tracker *t = calloc(1, sizeof(config_tracker));
    if (t)
        t->source = atomic_fetch_add(&next_source, 1);
    return t;
}

void config_tracker_free(config_tracker *t) { free(t); }

void config_tracker_reset(config_tracker *t)
{
    t->gen++;
    t->epoch++; /* a new source: its job's store may sit where a freed one was */
    t->source = atomic_fetch_add(&next_source, 1);
    t->valid = 0;
    t->n = t->deep = 0;
    t->yn = 0;
    t->ymid = 0;
}

/* Count the brackets of buf[from..to) into the tracker: an opening one is remembered with its key,
 * a closing one forgets the innermost (quotes are not tracked: brackets inside values are balanced in
 * the dumps that matter). */
static void track(config_tracker *t, const char *b, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
#if defined(__SSE2__)
        /* most of a log has no brackets: skip 16 bytes at a time until one holds any */
        while (i + 16 <= to) {
            __m128i v = _mm_loadu_si128((const __m128i *)(b + i));
            __m128i hit = _mm_or_si128(
                _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('(')), _mm_cmpeq_epi8(v, _mm_set1_epi8(')'))),
                             _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('[')), _mm_cmpeq_epi8(v, _mm_set1_epi8(']')))),
                _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('{')), _mm_cmpeq_epi8(v, _mm_set1_epi8('}'))));
            unsigned m = (unsigned)_mm_movemask_epi8(hit);
            if (m) {
                i += (size_t)__builtin_ctz(m);
                break;
            }
            i += 16;
        }
        if (i >= to)
            break;
#endif
        char c = b[i];
        if (!bracket(c))
            continue;
        if (closer(c)) {
            if (t->deep)
                t->deep--;
            else if (t->n && --t->n < t->low)
                t->low = t->n;
            continue;
        }
        if (t->n == CONFIG_TRACK_DEPTH) {
            t->deep++;
            continue;
        }
        size_t ks = 0, kl = key_before(b, 0, i, &ks);
        if (kl && (b[ks] == '\'' || b[ks] == '"'))
            ks++;
        if (kl >= COMP_CAP)
            kl = COMP_CAP - 1;
        memcpy(t->open[t->n].key, b + ks, kl);
        t->open[t->n].key[kl] = '\0';
        t->n++;
    }
}

/* The key of a YAML "key:" line (nothing after the colon but a comment) whose key starts at b[k], the
 * line ending at b[e]: its length, 0 when the line is not one. */
static size_t yaml_opener(const char *b, size_t k, size_t e)
{
    size_t ke = k;
    while (ke < e && name_byte(b[ke]))
        ke++;
    size_t r = ke;
    while (r < e && b[r] == ' ')
        r++;
    if (ke == k || r == e || b[r] != ':')
        return 0;
    r++;
    while (r < e && b[r] == ' ')
        r++;
    return r == e || b[r] == '#' ? ke - k : 0;
}

static void yaml_push(config_tracker *t, size_t col, const char *key, size_t kl)
{
    if (t->yn == CONFIG_TRACK_DEPTH)
        return;
    if (kl >= COMP_CAP)
        kl = COMP_CAP - 1;
    t->y[t->yn].col = col;
    memcpy(t->y[t->yn].key, key, kl);
    t->y[t->yn].key[kl] = '\0';
    t->yn++;
}

/* The complete line b[s..e) (e at its '\n') passes. In a block, it closes the lines indented as deep
 * or deeper and opens itself; out of one, only a "key:" line matters: it starts a block, the bytes
 * before its indentation being the block's prefix (what a hit in the block has before its own). */
static void yaml_line(config_tracker *t, const char *b, size_t s, size_t e)
{
    if (e > s && b[e - 1] == '\r')
        e--;
    if (t->yn) {
        if (e - s <= t->ylen)
            return;
        size_t k = s + t->ylen;
        while (k < e && b[k] == ' ')
            k++;
        if (k == e || b[k] == '#')
            return;
        size_t kc = k - s;
        while (t->yn && t->y[t->yn - 1].col >= kc)
            t->yn--;
        if (t->yn < t->ylow)
            t->ylow = t->yn;
        if (t->yn) {
            yaml_push(t, kc, b + k, yaml_opener(b, k, e));
            return;
        }
    }
    size_t c = e;
    while (c > s && b[c - 1] == ' ')
        c--;
    if (c == s)
        return;
    if (b[c - 1] != ':') { /* "key:  # comment" */
        const char *h = memchr(b + s, '#', c - s);
        if (!h)
            return;
        c = (size_t)(h - b);
        while (c > s && b[c - 1] == ' ')
            c--;
        if (c == s || b[c - 1] != ':')
            return;
    }
    size_t ke = c - 1;
    while (ke > s && b[ke - 1] == ' ')
        ke--;
    size_t ks = ke;
    while (ks > s && name_byte(b[ks - 1]))
        ks--;
    if (ks == ke || (ks > s && b[ks - 1] != ' '))
        return;
    size_t ws = ks;
    while (ws > s && b[ws - 1] == ' ')
        ws--;
    t->ylen = ws - s;
    yaml_push(t, ks - s, b + ks, ke - ks);
}

/* The first byte at or after b[i] (before `to`) of a line that may open a YAML block: a ':' or a space
 * that ends its line, or a '#' ("key:  # comment"); `to` when none. Out of a block the lines are
 * skipped 16 bytes at a time: a log that only echoes settings does no work per line here. */
static size_t yaml_candidate(const char *b, size_t i, size_t to)
{
#if defined(__SSE2__)
    for (; i + 17 <= to; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(b + i)), n = _mm_loadu_si128((const __m128i *)(b + i + 1));
        __m128i eol = _mm_or_si128(_mm_cmpeq_epi8(n, _mm_set1_epi8('\n')), _mm_cmpeq_epi8(n, _mm_set1_epi8('\r')));
        __m128i last = _mm_or_si128(_mm_cmpeq_epi8(a, _mm_set1_epi8(':')), _mm_cmpeq_epi8(a, _mm_set1_epi8(' ')));
        unsigned m = (unsigned)_mm_movemask_epi8(
            _mm_or_si128(_mm_and_si128(eol, last), _mm_cmpeq_epi8(a, _mm_set1_epi8('#'))));
        if (m)
            return i + (size_t)__builtin_ctz(m);
    }
#endif
    for (; i + 1 < to; i++) {
        char x = b[i], y = b[i + 1];
        if (x == '#' || ((y == '\n' || y == '\r') && (x == ':' || x == ' ')))
            return i;
    }
    return to;
}

/* The YAML lines of b[from..to) pass (to is a line start unless a line was cut at the buffer's cap). */
static void yaml_track(config_tracker *t, const char *b, size_t from, size_t to)
{
    size_t s = from;
    if (t->ymid) {
        const char *nl = memchr(b + s, '\n', to - s);
        if (!nl)
            return;
        s = (size_t)(nl - b) + 1;
        t->ymid = 0;
    }
    while (s < to) {
        if (!t->yn) {
            size_t c = yaml_candidate(b, s, to);
            if (c == to) {
                t->ymid = b[to - 1] != '\n';
                return;
            }
            const char *nl = c > s ? memrchr(b + s, '\n', c - s) : NULL;
            if (nl)
                s = (size_t)(nl - b) + 1;
        }
        const char *nl = memchr(b + s, '\n', to - s);
        if (!nl) {
            t->ymid = 1;
            return;
        }
        size_t e = (size_t)(nl - b);
        yaml_line(t, b, s, e);
        s = e + 1;
    }
}

/* Whether buf[i..to) holds nothing the tracker reads: no bracket (track), no '#' and no ':' or ' '
 * before a line's end (yaml_candidate, whose pairs lie within [i, to)). One pass over the bytes for
 * both, the last block overlapping the one before it instead of a byte loop over the tail: between two
 * settings of an echoing log there are a few hundred bytes, and the two loops' tails cost more than
 * their blocks. */
static int quiet(const char *b, size_t i, size_t to)
{
#if defined(__SSE2__)
    if (to - i >= 17) {
        const __m128i lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
        for (size_t k = i;; k += 16) {
            if (k + 17 > to)
                k = to - 17;
            __m128i a = _mm_loadu_si128((const __m128i *)(b + k)), n = _mm_loadu_si128((const __m128i *)(b + k + 1));
            __m128i br = _mm_or_si128(
                _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(a, _mm_set1_epi8('(')), _mm_cmpeq_epi8(a, _mm_set1_epi8(')'))),
                             _mm_or_si128(_mm_cmpeq_epi8(a, _mm_set1_epi8('[')), _mm_cmpeq_epi8(a, _mm_set1_epi8(']')))),
                _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(a, _mm_set1_epi8('{')), _mm_cmpeq_epi8(a, _mm_set1_epi8('}'))),
                             _mm_cmpeq_epi8(a, _mm_set1_epi8('#'))));
            __m128i eol = _mm_or_si128(_mm_cmpeq_epi8(n, lf), _mm_cmpeq_epi8(n, cr));
            __m128i last = _mm_or_si128(_mm_cmpeq_epi8(a, _mm_set1_epi8(':')), _mm_cmpeq_epi8(a, _mm_set1_epi8(' ')));
            if (_mm_movemask_epi8(_mm_or_si128(br, _mm_and_si128(eol, last))))
                return 0;
            if (k + 17 == to) /* pairs up to (to-2, to-1) seen; the last byte as a bracket: */
                return !tracked(b[to - 1]);
        }
    }
#endif
    for (; i < to; i++) {
        char x = b[i];
        if (tracked(x) || (i + 1 < to && (x == ':' || x == ' ') && (b[i + 1] == '\n' || b[i + 1] == '\r')))
            return 0;
    }
    return 1;
}

/* Bring the tracker to buf[ls] (a line start; buf[0] at stream offset base). It restarts (at most
 * CONFIG_BACK_CAP before ls) when it lost its place: never used, the bytes since gone from the
 * buffer, or too far behind to be worth reading. */
static void track_to(config_tracker *t, const char *b, uint64_t base, size_t ls)
{
    uint64_t target = base + ls;
    size_t from;
    int lost = 0;
    if (!t->valid || t->upto < base || t->upto > target || target - t->upto > CONFIG_BACK_CAP) {
        lost = 1;
        t->n = t->deep = t->yn = 0;
        from = ls > CONFIG_BACK_CAP ? ls - CONFIG_BACK_CAP : 0;
        t->ymid = from > 0 && b[from - 1] != '\n';
    } else {
        from = (size_t)(t->upto - base);
        if (!t->yn && !t->ymid && quiet(b, from, ls)) {
            /* no bracket, no YAML block: all track and yaml_track would do is note the last line's
             * end; the keys around are those of the last hit (gen stays) */
            if (ls > from)
                t->ymid = b[ls - 1] != '\n';
            t->upto = target;
            return;
        }
    }
    /* A bracket or a YAML line passes, or the place was lost: the keys around change unless every
     * bracket and YAML line opened in the pass was closed in it and none open before it was closed
     * (a Ray prefix's "(TaskRunner pid=1)" on every line of a dict it prints). */
    size_t n0 = t->n, deep0 = t->deep, yn0 = t->yn, ylen0 = t->ylen;
    t->low = n0;
    t->ylow = yn0;
    track(t, b, from, ls);
    yaml_track(t, b, from, ls);
    if (lost || t->n != n0 || t->low != n0 || t->deep != deep0 || t->yn != yn0 || t->ylow != yn0 ||
        (yn0 && t->ylen != ylen0))
        t->gen++;
    t->upto = target;
    t->valid = 1;
}

void config_tracker_pass(config_tracker *t, const char *buf, uint64_t base, size_t end)
{
    if (!t->valid || t->upto < base || base + end - t->upto > CONFIG_BACK_CAP) {
        config_tracker_reset(t);
        return;
    }
    track_to(t, buf, base, end);
}

/* Enclosing keys of a nested dump (Python dict/repr, JSON, dataclass repr) at b[p] in the line that
 * starts at b[ls]: the brackets open in the line before p, walking back over balanced ones, then those
 * the tracker remembers from before the line; stops at a bracket with no key. Works whatever the
 * indentation or line prefixes. */
static void brace_context(const config_tracker *t, const char *b, size_t ls, size_t p, comps *out)
{
    size_t depth = 0;
    for (size_t i = p; i > ls; i--) {
        char c = b[i - 1];
        if (closer(c))
            depth++;
        else if (bracket(c)) {
            if (depth > 0) {
                depth--;
                continue;
            }
            size_t ks = 0, kl = key_before(b, 0, i - 1, &ks);
            if (kl == 0)
                return;
            if (b[ks] == '\'' || b[ks] == '"')
                push_front(out, b + ks + 1, kl);
            else
                push_front(out, b + ks, kl);
            i = ks + 1;
            if (i <= ls)
                break;
        }
    }
    /* closers the line left unmatched close the innermost remembered brackets */
    if (t->deep > depth)
        return;
    size_t closed = depth - t->deep;
    for (size_t k = t->n; k > closed; k--) {
        const char *key = t->open[k - 1 - closed].key;
        if (!key[0])
            return;
        push_front(out, key, strlen(key));
    }
}

/* Enclosing keys of an indented YAML dump at b[p] in the line that starts at b[ls]: the "key:" lines
 * the tracker keeps open with less indentation, the nearest first, until a line of another kind. The
 * indentation counts after the bytes before this line's run of spaces (Ray's "(TaskRunner pid=1)"),
 * which must be as long as the block's prefix. */
static void yaml_context(const config_tracker *t, size_t ls, size_t p, const char *b, comps *out)
{
    size_t ws = p;
    while (ws > ls && b[ws - 1] == ' ')
        ws--;
    size_t col = p - ls;
    if (!t->yn || t->ylen != ws - ls || col <= ws - ls)
        return;
    for (size_t i = t->yn; i > 0; i--) {
        if (t->y[i - 1].col >= col)
            continue;
        const char *key = t->y[i - 1].key;
        if (!key[0])
            return; /* left the block this key sits in */
        push_front(out, key, strlen(key));
        col = t->y[i - 1].col;
    }
}

/* The bytes that end a bare value: strchr(",;)}] \t\r\n", c), which also takes the NUL, without a call
 * per byte. */
static int value_end(char c)
{
    switch (c) {
    case ',': case ';': case ')': case '}': case ']': case ' ': case '\t': case '\r': case '\n': case '\0':
        return 1;
    default:
        return 0;
    }
}

/* The value that starts at b[q]: a quoted string, a bracketed list, or a bare token. Its length
 * (0: none there, or one not taken), its first byte at *at. */
static size_t value_at(const char *b, size_t q, size_t le, size_t *at)
{
    size_t n = 0;
    if (q >= le)
        return 0;
    if (b[q] == '\'' || b[q] == '"') {
        size_t e = q + 1;
        while (e < le && b[e] != b[q])
            e++;
        if (e == le)
            return 0;
        n = e - q - 1;
        q++;
    } else if (b[q] == '[' || b[q] == '(') {
        char open = b[q], close = open == '[' ? ']' : ')';
        int d = 0;
        size_t e = q;
        for (; e < le; e++) {
            if (b[e] == open)
                d++;
            else if (b[e] == close && --d == 0)
                break;
        }
        if (e == le)
            return 0;
        n = e - q + 1;
    } else {
        size_t e = q;
        while (e < le && !value_end(b[e]))
            e++;
        n = e - q;
    }
    if (n == 0 || n >= VALUE_CAP || b[q] == '$' || b[q] == '{')
        return 0;
    *at = q;
    return n;
}

/* The first byte at or after i that is not a space or a tab (le when none). */
static size_t skip_blanks(const char *b, size_t i, size_t le)
{
    while (i < le && (b[i] == ' ' || b[i] == '\t'))
        i++;
    return i;
}

/* Whether e's path is prefix (o bytes, no '-' in it) then lit (len bytes) with '-' read as '_': what
 * a dotted name builds, checked in full whatever the memo says. */
static int is_path(const config_entry *e, const char *prefix, size_t o, const char *lit, size_t len)
{
    const char *p = e->path;
    if (e->plen != o + len || memcmp(p, prefix, o) != 0)
        return 0;
    if (memcmp(p + o, lit, len) != 0) /* a dashed spelling ("max-tokens-per-gpu") compares by byte */
        for (size_t i = 0; i < len; i++)
            if (p[o + i] != (lit[i] == '-' ? '_' : lit[i]))
                return 0;
    return 1;
}

/* The memo slot of setting `lit` read in surroundings `shape` (see config_tracker.memo). */
static config_tracker_memo *memo_slot(config_tracker *tr, const char *lit, uint32_t shape)
{
    uint64_t h = ((uint64_t)(uintptr_t)lit ^ shape) * 0x9E3779B97F4A7C15ull;
    return &tr->memo[(h >> 40) % CONFIG_MEMO];
}

/* Whether the memo says where setting `lit` read in `shape` goes (gen: the tracker's; for a dotted
 * name, whose path is its own text, the tracker's epoch): the entry index, else SIZE_MAX. */
static size_t memo_find(const config_tracker_memo *m, const char *lit, uint32_t shape, uint64_t gen,
                        const config_store *st, const char *job)
{
    return st && m->lit == lit && m->shape == shape && m->gen == gen && m->st == st && m->job == job && m->idx < st->n
               ? m->idx
               : SIZE_MAX;
}

static void memo_keep(config_tracker_memo *m, const char *lit, uint32_t shape, uint64_t gen, const config_store *st,
                      const char *job, size_t idx)
{
    m->lit = lit;
    m->shape = shape;
    m->gen = gen;
    m->st = st;
    m->job = job;
    m->idx = idx;
}

/* The memo of the last dotted name of setting `lit` read as its own path (DOTTED_LAST | its prefix's
 * length): when the prefix `pre` (n bytes, before the name) is that same text, the entry it went to;
 * else SIZE_MAX. The entry's path is that name's text (made by the plain branch of apply, which has
 * no '-' in it), checked in full by is_path. */
#define DOTTED_LAST 0x20000000u
static size_t dotted_memo(config_tracker *tr, const char *lit, size_t len, const char *pre, size_t n,
                          const config_store *st, const char *job)
{
    const config_tracker_memo *m = memo_slot(tr, lit, DOTTED_LAST);
    if (!st || m->lit != lit || m->shape != (DOTTED_LAST | (uint32_t)n) || m->gen != tr->epoch || m->st != st ||
        m->job != job || m->idx >= st->n || !is_path(&st->e[m->idx], pre, n, lit, len))
        return SIZE_MAX;
    return m->idx;
}

/* dotted_memo before the walk back over a dotted name at b[p]: when b holds the last such name before
 * p, whole (the byte before it not a name byte), the walk would find it and its entry again; its
 * entry's index then (its prefix's length in *o), else SIZE_MAX. */
static size_t dotted_again(config_tracker *tr, const char *lit, size_t len, const char *b, size_t ls, size_t p,
                           const config_store *st, const char *job, size_t *o)
{
    const config_tracker_memo *m = memo_slot(tr, lit, DOTTED_LAST);
    if ((m->shape & 0xe0000000u) != DOTTED_LAST)
        return SIZE_MAX;
    size_t k = m->shape & 0x1fffffffu, at;
    if (k > p - ls || (p - k > ls && name_byte(b[p - k - 1])) ||
        (at = dotted_memo(tr, lit, len, b + p - k, k, st, job)) == SIZE_MAX)
        return SIZE_MAX;
    *o = k;
    return at;
}

int config_name_whole(const char *b, size_t p, size_t len, size_t avail)
{
    size_t q = p + len;
    return !(p > 0 && ident(b[p - 1])) && !(q < avail && (ident(b[q]) || b[q] == '-'));
}

/* config_occurrence.kind */
enum {
    OCC_READ = 1u,       /* a value is read there */
    OCC_FLAG = 2u,       /* "--name" */
    OCC_QUOTED = 4u,     /* "'name': value" */
    OCC_DOTTED = 8u,     /* "prefix.name=value": o->back bytes of prefix */
    OCC_SBATCH = 16u,    /* "#SBATCH --x" */
    OCC_PLAIN = 32u,     /* dotted, and the prefix's text is its path */
    OCC_DASHED = 64u,    /* ... with a '-' in it */
    OCC_YAML = 128u,     /* "name: value" outside quotes */
    OCC_MEMO_OK = 256u,  /* the path comes from the surroundings alone: o->shape may find it again */
    OCC_SWITCH = 512u,   /* a flag given without a value: "true" */
};

/* What the bytes of the occurrence of `lit` at b[p] in the line b[ls..le) say, into *o (config.h).
 * pm: the prefixes read before (config_occurrence_read's), or NULL.
 * known: the length of its dotted prefix when dotted_again found it (the walk back is skipped: the
 * name is plain and has no '-'), else SIZE_MAX. */
static void occurrence(const char *b, size_t ls, size_t le, size_t p, const char *lit, size_t len, size_t known,
                       config_prefixes *pm, config_occurrence *o)
{
    o->kind = 0;
    size_t q = p + len;
    if (q < le && (ident(b[q]) || b[q] == '-'))
        return;
    uint32_t k = 0;
    char before = p > ls ? b[p - 1] : ' ';
    if (lit[0] == '#') {
        if (ident(before))
            return;
        k = OCC_SBATCH;
    } else if (ident(before)) {
        return;
    } else if (before == '-') {
        /* "--key": a flag; "x-key" is a longer name */
        if (p < ls + 2 || b[p - 2] != '-' || (p > ls + 2 && (ident(b[p - 3]) || b[p - 3] == '-')))
            return;
        k = OCC_FLAG;
    } else if (before == '.') {
        /* a dotted name is read only before ':', '=' or a Megatron row's dots (below): look there
         * first, so that a name that is not a setting ("'a.b.key': 1" in a flattened dict, a module
         * path) is left without walking back over its prefix */
        size_t r0 = skip_blanks(b, q, le);
        if (r0 == le || (b[r0] != ':' && b[r0] != '=' && b[r0] != '.'))
            return;
        k = OCC_DOTTED | OCC_PLAIN;
        size_t s = p - known;
        struct config_prefix *pre = NULL;
        if (known == SIZE_MAX && pm) {
            /* the prefix this setting had last time, when the same text, whole, stands before it:
             * the walk below would stop where it starts and find the same components */
            pre = &pm->e[((uintptr_t)lit * 0x9E3779B97F4A7C15ull) >> 59];
            size_t kk = pre->back;
            if (pre->lit == lit && kk <= p - ls && (p - kk == ls || !name_byte(b[p - kk - 1])) &&
                memcmp(b + p - kk, pre->text, kk) == 0) {
                known = kk;
                s = p - kk;
                k = OCC_DOTTED | pre->kind;
            }
        }
        if (known == SIZE_MAX) {
            /* back over the dotted prefix, noting whether its text is its path as the components
             * would give it (plain): none empty or cut at COMP_CAP, fewer than
             * CONFIG_MAX_COMPONENTS with the leaf; then the components are not built one by one */
            s = p - 1;
            while (s > ls && name_byte(b[s - 1]))
                s--;
            /* then its components, between the dots of b[s..p-1) (b[p-1] is the dot before the leaf) */
            int bad = len >= COMP_CAP;
            size_t dots = 1;
            for (size_t c = s;;) {
                const char *d = memchr(b + c, '.', p - 1 - c);
                size_t e = d ? (size_t)(d - b) : p - 1;
                bad |= e == c || e - c >= COMP_CAP;
                if (!d)
                    break;
                dots++;
                c = e + 1;
            }
            if (bad || dots + 1 >= CONFIG_MAX_COMPONENTS)
                k &= ~OCC_PLAIN;
            if (memchr(b + s, '-', p - 1 - s))
                k |= OCC_DASHED;
            if (pre && p - s <= sizeof pre->text) {
                pre->lit = lit;
                pre->back = (uint32_t)(p - s);
                pre->kind = k & (OCC_PLAIN | OCC_DASHED);
                memcpy(pre->text, b + s, p - s);
            }
        }
        o->back = (uint32_t)(p - s);
    } else if (before == '\'' || before == '"') {
        if (q >= le || b[q] != before)
            return;
        k = OCC_QUOTED;
        q++;
    }
    size_t r = skip_blanks(b, q, le), vs = 0, n = 0;
    if (r < le && (b[r] == ':' || b[r] == '=')) {
        if (b[r] == ':' && !(k & OCC_QUOTED))
            k |= OCC_YAML;
        r++;
        while (r < le && b[r] == ' ')
            r++;
        if (!(n = value_at(b, r, le, &vs)))
            return;
    } else if (r < le && b[r] == '.' && r + 2 < le && b[r + 1] == '.' && b[r + 2] == '.') {
        /* Megatron's argument table: "  micro_batch_size ........ 1" */
        while (r < le && (b[r] == '.' || b[r] == ' '))
            r++;
        if (!(n = value_at(b, r, le, &vs)))
            return;
    } else if (k & (OCC_FLAG | OCC_SBATCH)) {
        if (r == le || b[r] == '\\' || (b[r] == '-' && r + 1 < le && b[r + 1] == '-')) {
            k |= OCC_SWITCH; /* a switch given without a value */
            vs = p;
        } else if (r == q || !(n = value_at(b, r, le, &vs))) {
            return;
        }
    } else {
        return; /* the name in prose, code or a message */
    }
    if (!(k & (OCC_SBATCH | OCC_DOTTED | OCC_FLAG))) {
        /* What the path is built from: the tracker's keys (gen), and in a YAML block the name's
         * column and indentation, else the brackets in the line before the name: when those are
         * balanced (none, or a Ray prefix's "(TaskRunner pid=1)"), brace_context reads the tracker's
         * keys alone and the memo holds; a bracket left open builds the path each time. */
        if (k & OCC_YAML) {
            size_t ws = p;
            while (ws > ls && b[ws - 1] == ' ')
                ws--;
            if (p - ls < 0x8000 && ws - ls < 0x8000)
                k |= OCC_MEMO_OK;
            o->shape = 0x80000000u | (uint32_t)((p - ls) << 15) | (uint32_t)(ws - ls);
        } else {
            if (balanced(b, ls, k & OCC_QUOTED ? p - 1 : p))
                k |= OCC_MEMO_OK;
            o->shape = (uint32_t)!!(k & OCC_QUOTED);
        }
    }
    o->vat = (uint32_t)(vs - p);
    o->vlen = (uint32_t)n;
    o->kind = k | OCC_READ;
}

void config_occurrence_read(const char *b, size_t ls, size_t le, size_t p, const char *lit, size_t len,
                            config_prefixes *pm, config_occurrence *o)
{
    occurrence(b, ls, le, p, lit, len, SIZE_MAX, pm, o);
}

/* The occurrence o of `lit` at b[p] in the line that starts at b[ls], read into the store. again:
 * the entry dotted_again found, else SIZE_MAX (tried: it was looked for). 1, or -1 out of memory. */
static int apply(config_store **st, config_tracker *tr, const char *b, uint64_t base, size_t ls, size_t p,
                 const char *lit, size_t len, const config_occurrence *o, size_t again, int tried, const char *job,
                 const char *file, uint64_t line)
{
    uint32_t k = o->kind;
    reading r = {b + p + o->vat, o->vlen, file, line, tr->source};
    if (k & OCC_SWITCH) {
        r.value = "true";
        r.vlen = 4;
    }
    comps path; /* not cleared: only path.c[0..n) is ever read (an initializer would clear 768 bytes a hit) */
    path.n = 0;
    config_tracker_memo *memo = NULL;
    if (!(k & (OCC_SBATCH | OCC_DOTTED | OCC_FLAG))) {
        track_to(tr, b, base, ls);
        memo = memo_slot(tr, lit, o->shape);
        size_t at = k & OCC_MEMO_OK ? memo_find(memo, lit, o->shape, tr->gen, *st, job) : SIZE_MAX;
        if (at != SIZE_MAX)
            return touch(*st, at, &r) == 0 ? 1 : -1;
        if (k & OCC_YAML)
            yaml_context(tr, ls, p, b, &path);
        else
            brace_context(tr, b, ls, k & OCC_QUOTED ? p - 1 : p, &path);
    }
    char joined[CONFIG_MAX_COMPONENTS * COMP_CAP];
    size_t from = p - o->back; /* a dotted name's prefix */
    if (k & OCC_PLAIN) {
        /* a Hydra override as such: its text is the path (what the components give, joined); read
         * again, it is found by comparing that text with the path of the entry it went to last */
        if (again == SIZE_MAX && !tried && !(k & OCC_DASHED))
            again = dotted_memo(tr, lit, len, b + from, o->back, *st, job);
        if (again != SIZE_MAX)
            return touch(*st, again, &r) == 0 ? 1 : -1;
        size_t n = o->back;
        uint32_t dshape = 0x40000000u | (uint32_t)(n & 0x3fffffff);
        config_tracker_memo *dm = k & OCC_DASHED ? NULL : memo_slot(tr, lit, dshape);
        size_t at = dm ? memo_find(dm, lit, dshape, tr->epoch, *st, job) : SIZE_MAX;
        if (at != SIZE_MAX && is_path(&(*st)->e[at], b + from, n, lit, len)) {
            if (touch(*st, at, &r) != 0)
                return -1;
        } else {
            memcpy(joined, b + from, n);
            memcpy(joined + n, lit, len);
            joined[n + len] = '\0';
            for (char *d = k & OCC_DASHED ? joined : memchr(joined + n, '-', len); d && *d; d++)
                if (*d == '-')
                    *d = '_';
            if (put(st, joined, n + len, job, &r, &at) != 0)
                return -1;
            if (dm)
                memo_keep(dm, lit, dshape, tr->epoch, *st, job, at);
        }
        if (dm && n < DOTTED_LAST) /* (a dashed name's path is not its text: not for dotted_again) */
            memo_keep(memo_slot(tr, lit, DOTTED_LAST), lit, DOTTED_LAST | (uint32_t)n, tr->epoch, *st, job, at);
        return 1;
    }
    if (k & OCC_DOTTED) {
        /* the components of a dotted prefix that is not its path, between the dots of b[from..p-1) */
        size_t cs = from;
        for (size_t i = from; i <= p - 1; i++)
            if (b[i] == '.') {
                push_front(&path, b + cs, i - cs); /* appended in order below */
                cs = i + 1;
            }
        /* push_front reversed them: restore the order */
        for (size_t i = 0; i < path.n / 2; i++) {
            char t[COMP_CAP];
            memcpy(t, path.c[i], COMP_CAP);
            memcpy(path.c[i], path.c[path.n - 1 - i], COMP_CAP);
            memcpy(path.c[path.n - 1 - i], t, COMP_CAP);
        }
    }
    if (path.n < CONFIG_MAX_COMPONENTS) {
        size_t l2 = len < COMP_CAP ? len : COMP_CAP - 1;
        for (size_t i = 0; i < l2; i++)
            path.c[path.n][i] = lit[i] == '-' ? '_' : lit[i];
        path.c[path.n][l2] = '\0';
        path.n++;
    }
    size_t o2 = 0;
    for (size_t i = 0; i < path.n; i++) { /* each component is < COMP_CAP: joined holds them all */
        if (i)
            joined[o2++] = '.';
        size_t l = strlen(path.c[i]);
        memcpy(joined + o2, path.c[i], l);
        o2 += l;
    }
    joined[o2] = '\0';
    size_t at;
    if (put(st, joined, o2, job, &r, &at) != 0)
        return -1;
    if (memo && (k & OCC_MEMO_OK))
        memo_keep(memo, lit, o->shape, tr->gen, *st, job, at);
    return 1;
}

/* One occurrence of `lit` at b[p] in the line b[ls..le), its bytes read already when pre is given.
 * 1 when a value was read, 0 none, -1 out of memory. */
static int capture_at(config_store **st, config_tracker *tr, const char *b, uint64_t base, size_t ls, size_t le,
                      size_t p, const char *lit, size_t len, const config_occurrence *pre, const char *job,
                      const char *file, uint64_t line)
{
    config_occurrence o;
    size_t again = SIZE_MAX, known = SIZE_MAX;
    int tried = 0;
    if (!pre) {
        /* the same dotted name as last time (a Hydra override echoed every step): no walk back */
        if (p > ls && b[p - 1] == '.') {
            tried = 1;
            again = dotted_again(tr, lit, len, b, ls, p, *st, job, &known);
        }
        occurrence(b, ls, le, p, lit, len, again != SIZE_MAX ? known : SIZE_MAX, NULL, &o);
        pre = &o;
    }
    if (!pre->kind)
        return 0;
    return apply(st, tr, b, base, ls, p, lit, len, pre, again, tried, job, file, line);
}

/* memmem for a setting name in the rest of a line: its first byte found with memchr, the rest
 * compared; memmem's set-up cost more than the search on the few dozen bytes a line has left. */
static const char *find_name(const char *h, size_t n, const char *lit, size_t len)
{
    const char *end = h + n;
    while ((size_t)(end - h) >= len) {
        const char *c = memchr(h, lit[0], (size_t)(end - h) - len + 1);
        if (!c)
            return NULL;
        if (memcmp(c + 1, lit + 1, len - 1) == 0)
            return c;
        h = c + 1;
    }
    return NULL;
}

/* Every occurrence of lit (len bytes) in the line buf[ls..le) from buf[from] on. */
static int capture_line(config_store **st, config_tracker *tr, const char *lit, size_t len, const char *buf,
                        uint64_t base, size_t ls, size_t from, size_t le, const char *job, const char *file,
                        uint64_t line)
{
    int got = 0;
    const char *s = buf + from;
    while ((size_t)(buf + le - s) >= len) {
        const char *hit = find_name(s, (size_t)(buf + le - s), lit, len);
        if (!hit)
            break;
        int rc = capture_at(st, tr, buf, base, ls, le, (size_t)(hit - buf), lit, len, NULL, job, file, line);
        if (rc < 0)
            return -1;
        got += rc;
        s = hit + len;
    }
    return got;
}

int config_capture(config_store **st, config_tracker *tr, const char *lit, const char *buf, uint64_t base,
                   size_t start, size_t end, const char *job, const char *file, uint64_t line)
{
    return capture_line(st, tr, lit, strlen(lit), buf, base, start, start, end, job, file, line);
}

int config_capture_from(config_store **st, config_tracker *tr, const char *lit, size_t len, const char *buf,
                        uint64_t base, size_t start, size_t first, size_t end, const config_occurrence *occ,
                        const char *job, const char *file, uint64_t line)
{
    if (!occ && (first + len > end || memcmp(buf + first, lit, len) != 0))
        return capture_line(st, tr, lit, len, buf, base, start, start, end, job, file, line);
    int got = capture_at(st, tr, buf, base, start, end, first, lit, len, occ, job, file, line);
    if (got < 0)
        return -1;
    int more = capture_line(st, tr, lit, len, buf, base, start, first + len, end, job, file, line);
    return more < 0 ? -1 : got + more;
}

/* ---- proposing ---------------------------------------------------------------------------- */

static int is_true(const char *v)
{
    return !strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "on");
}
static int is_false(const char *v)
{
    return !strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "off");
}
static int is_none(const char *v) { return !strcmp(v, "None") || !strcmp(v, "null") || !strcmp(v, "~"); }

/* Spell a boolean the way the dump spells its values (Python True, YAML true, 1). */
static const char *spell_bool(const char *cur, int on)
{
    if (!strcmp(cur, "0") || !strcmp(cur, "1"))
        return on ? "1" : "0";
    if (!strcmp(cur, "null") || islower((unsigned char)cur[0]))
        return on ? "true" : "false";
    return on ? "True" : "False";
}

static void fmt_num(double v, int integer, const char *unit, char *out, size_t cap)
{
    if (integer) {
        snprintf(out, cap, "%.0f%s", v, unit);
        return;
    }
    char t[64];
    snprintf(t, sizeof t, "%.2f", v);
    char *e = t + strlen(t) - 1;
    while (*e == '0')
        *e-- = '\0';
    if (*e == '.')
        *e = '\0';
    snprintf(out, cap, "%s%s", t, unit);
}

config_verdict config_propose(const char *change, const char *current, char *out, size_t cap)
{
    out[0] = '\0';
    if (!change || !current)
        return CONFIG_NO_PROPOSAL;
    if (!strcmp(change, "enable") || !strcmp(change, "disable")) {
        int on = change[0] == 'e';
        if (on ? is_true(current) : is_false(current))
            return CONFIG_ALREADY;
        if (!(on ? is_false(current) : is_true(current)) && !is_none(current))
            return CONFIG_NO_PROPOSAL;
        snprintf(out, cap, "%s", spell_bool(current, on));
        return CONFIG_PROPOSED;
    }
    if (!strncmp(change, "set:", 4)) {
        const char *v = change + 4;
        if (!*v || *v == '<')
            return CONFIG_NO_PROPOSAL;
        if (!strcasecmp(v, current))
            return CONFIG_ALREADY;
        snprintf(out, cap, "%s", v);
        return CONFIG_PROPOSED;
    }
    char *end;
    double n = strtod(current, &end);
    if (end == current || !isfinite(n) || n <= 0)
        return CONFIG_NO_PROPOSAL;
    /* a unit may follow the number (#SBATCH --mem=64G); anything else is not a number */
    const char *unit = end;
    for (const char *u = unit; *u; u++)
        if (!isalpha((unsigned char)*u))
            return CONFIG_NO_PROPOSAL;
    int integer = strcspn(current, ".eE") >= (size_t)(end - current);
    int fraction = !integer && n < 1;
    double v;
    if (!strcmp(change, "halve")) {
        v = integer ? floor(n / 2) : n / 2;
    } else if (!strcmp(change, "double")) {
        v = n * 2;
    } else if (!strcmp(change, "decrease")) {
        /* a memory fraction steps down by 0.1; a count or budget goes to three quarters */
        v = fraction ? n - 0.1 : (integer ? floor(n * 0.75) : n * 0.75);
        if (fraction && v < 0.05)
            return CONFIG_NO_PROPOSAL;
    } else if (!strcmp(change, "increase")) {
        /* a memory fraction steps up by 0.05 and stays at or under 0.95; a count grows by half */
        v = fraction ? fmin(n + 0.05, 0.95) : (integer ? ceil(n * 1.5) : n * 1.5);
        if (v <= n)
            return CONFIG_NO_PROPOSAL;
    } else {
        return CONFIG_NO_PROPOSAL;
    }
    if (v <= 0 || v == n)
        return CONFIG_NO_PROPOSAL;
    fmt_num(v, integer, unit, out, cap);
    return CONFIG_PROPOSED;
}
