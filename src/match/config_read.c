/* config_read.c - reading a setting where its name occurs in a line (config_occurrence_read,
 * config_capture): the value, the path its surroundings give it, and the entry it goes to. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "match/config_impl.h"

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
 * name is plain and has no '-'), else SIZE_MAX.
 * long: one occurrence classified by the bytes before and after the name; every branch sets the same kind
 * and offsets. */
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
         * balanced (none, or a Ray prefix's "(TaskRunner pid=1)"), config_brace_context reads the tracker's
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
 * the entry dotted_again found, else SIZE_MAX (tried: it was looked for). 1, or -1 out of memory.
 * long: one read into the store: the three ways a path is built (surroundings, dotted prefix, the name's
 * own text) share the reading and the memo. */
static int apply(config_store **st, config_tracker *tr, const char *b, uint64_t base, size_t ls, size_t p,
                 const char *lit, size_t len, const config_occurrence *o, size_t again, int tried, const char *job,
                 const char *file, uint64_t line)
{
    uint32_t k = o->kind;
    config_reading r = {b + p + o->vat, o->vlen, file, line, tr->source};
    if (k & OCC_SWITCH) {
        r.value = "true";
        r.vlen = 4;
    }
    comps path; /* not cleared: only path.c[0..n) is ever read (an initializer would clear 768 bytes a hit) */
    path.n = 0;
    config_tracker_memo *memo = NULL;
    if (!(k & (OCC_SBATCH | OCC_DOTTED | OCC_FLAG))) {
        config_track_to(tr, b, base, ls);
        memo = memo_slot(tr, lit, o->shape);
        size_t at = k & OCC_MEMO_OK ? memo_find(memo, lit, o->shape, tr->gen, *st, job) : SIZE_MAX;
        if (at != SIZE_MAX)
            return config_store_touch(*st, at, &r) == 0 ? 1 : -1;
        if (k & OCC_YAML)
            config_yaml_context(tr, ls, p, b, &path);
        else
            config_brace_context(tr, b, ls, k & OCC_QUOTED ? p - 1 : p, &path);
    }
    char joined[CONFIG_MAX_COMPONENTS * COMP_CAP];
    size_t from = p - o->back; /* a dotted name's prefix */
    if (k & OCC_PLAIN) {
        /* a Hydra override as such: its text is the path (what the components give, joined); read
         * again, it is found by comparing that text with the path of the entry it went to last */
        if (again == SIZE_MAX && !tried && !(k & OCC_DASHED))
            again = dotted_memo(tr, lit, len, b + from, o->back, *st, job);
        if (again != SIZE_MAX)
            return config_store_touch(*st, again, &r) == 0 ? 1 : -1;
        size_t n = o->back;
        uint32_t dshape = 0x40000000u | (uint32_t)(n & 0x3fffffff);
        config_tracker_memo *dm = k & OCC_DASHED ? NULL : memo_slot(tr, lit, dshape);
        size_t at = dm ? memo_find(dm, lit, dshape, tr->epoch, *st, job) : SIZE_MAX;
        if (at != SIZE_MAX && is_path(&(*st)->e[at], b + from, n, lit, len)) {
            if (config_store_touch(*st, at, &r) != 0)
                return -1;
        } else {
            memcpy(joined, b + from, n);
            memcpy(joined + n, lit, len);
            joined[n + len] = '\0';
            for (char *d = k & OCC_DASHED ? joined : memchr(joined + n, '-', len); d && *d; d++)
                if (*d == '-')
                    *d = '_';
            if (config_store_put(st, joined, n + len, job, &r, &at) != 0)
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
    if (config_store_put(st, joined, o2, job, &r, &at) != 0)
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
