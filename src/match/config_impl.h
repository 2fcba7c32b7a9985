/* config_impl.h - private to the settings files of match/ (config_store.c the store, config_track.c the
 * tracker, config_read.c reading a line, config_propose.c the proposed change): what they share and
 * no other file may use. Ownership as in config.h. */
#ifndef OOMSCAN_CONFIG_IMPL_H
#define OOMSCAN_CONFIG_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "db/configkey.h"
#include "match/config.h"

#define VALUE_CAP 200
#define COMP_CAP CONFIG_COMP_CAP

typedef config_comps comps;

static inline int ident(int c) { return config_ident(c); }

/* ident, '.' or '-': a byte of a dotted setting name ("actor_rollout_ref.actor.ppo-epochs") */
static inline int name_byte(int c) { return CONFIG_NAME_CLASS[(unsigned char)c] != '.'; }

/* The brackets "()[]{}" as a bitmap over ASCII (bit c of LO for c < 64, bit c - 64 of HI), and with
 * '#' (a YAML comment) what the tracker reads besides line ends. */
#define BRACKET_LO ((1ull << '(') | (1ull << ')'))
#define BRACKET_HI ((1ull << ('[' - 64)) | (1ull << (']' - 64)) | (1ull << ('{' - 64)) | (1ull << ('}' - 64)))

static inline int in_bitmap(unsigned char c, uint64_t lo, uint64_t hi)
{
    return c < 64 ? (int)((lo >> c) & 1) : c < 128 ? (int)((hi >> (c - 64)) & 1) : 0;
}

static inline int bracket(char c) { return in_bitmap((unsigned char)c, BRACKET_LO, BRACKET_HI); }

static inline int closer(char c) { return c == ')' || c == ']' || c == '}'; }

/* Whether b[from..to), read backwards as brace_context reads it, closes every bracket it opens: no
 * opener without a closer after it, and no closer left over (one would close a remembered bracket). */
static inline int balanced(const char *b, size_t from, size_t to)
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

static inline int tracked(char c) { return in_bitmap((unsigned char)c, BRACKET_LO | (1ull << '#'), BRACKET_HI); }

static inline void push_front(comps *c, const char *s, size_t len)
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

/* What one read of a setting says: its value (vlen bytes), where it was read, and the tracker's source
 * it was read through (config_tracker.source: file is the same for all its reads), 0 none. */
typedef struct {
    const char *value;
    size_t vlen;
    const char *file;
    uint64_t line, from;
} config_reading;

/* Entry i of s read again: value, where, and when (the last read wins). -1 out of memory. (config_store.c) */
int config_store_touch(config_store *s, size_t i, const config_reading *r);

/* Set path (plen bytes) = the value read for job; the last read of a key in a job wins. The entry's
 * index goes to *at (when not NULL). *sp is created on first use. -1 out of memory. (config_store.c) */
int config_store_put(config_store **sp, const char *path, size_t plen, const char *job, const config_reading *r,
                     size_t *at);

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


/* Bring the tracker to buf[ls] (a line start; buf[0] at stream offset base), restarting when it lost
 * its place (config_track.c) */
void config_track_to(config_tracker *t, const char *b, uint64_t base, size_t ls);
/* Enclosing keys of a nested dump at b[p] in the line that starts at b[ls], into *out (config_track.c) */
void config_brace_context(const config_tracker *t, const char *b, size_t ls, size_t p, comps *out);
/* The enclosing "key:" lines of a YAML block at b[p] in the line that starts at b[ls] (config_track.c) */
void config_yaml_context(const config_tracker *t, size_t ls, size_t p, const char *b, comps *out);

#endif
