/* config_track.c - the tracker (config_tracker): what the scan has passed of a nested dump, the
 * brackets and YAML "key:" lines still open, and the keys that enclose a position read from it. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "match/config_impl.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
void config_track_to(config_tracker *t, const char *b, uint64_t base, size_t ls)
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
    config_track_to(t, buf, base, end);
}

/* Enclosing keys of a nested dump (Python dict/repr, JSON, dataclass repr) at b[p] in the line that
 * starts at b[ls]: the brackets open in the line before p, walking back over balanced ones, then those
 * the tracker remembers from before the line; stops at a bracket with no key. Works whatever the
 * indentation or line prefixes. */
void config_brace_context(const config_tracker *t, const char *b, size_t ls, size_t p, comps *out)
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
void config_yaml_context(const config_tracker *t, size_t ls, size_t p, const char *b, comps *out)
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

