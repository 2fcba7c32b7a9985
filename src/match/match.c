/* match.c - PCRE2 on the few lines the prefilter picked. */
#include "match/match.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/values.h"

struct matcher {
    const pdb *db;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    const char *subj; /* what the last run() matched: the caller's text or `fixed` */
    char *fixed;      /* the text with invalid UTF-8 bytes as '?' (see run()) */
    size_t fixed_cap;
    const char *fixed_of; /* the text `fixed` was made from (and its length, and its bad bytes), */
    size_t fixed_len;     /* within one public call only: the caller's buffer changes between calls */
    size_t fixed_bad;
    /* regex work budget of the current input (matcher_budget_reset) */
    uint64_t budget, spent;
    unsigned char *skip; /* per failure pattern: skipped for the rest of the input */
    char note[320];
    /* Per prefix and first byte: 0 not known yet, 1 the prefix may match a text starting with it,
     * 2 it cannot. Learnt on first sight of the byte (see may_start), so a line whose first byte
     * starts no prefix costs a table look-up instead of a regex run per prefix. */
    unsigned char *first;
    /* Per two ASCII bytes c0 c1: the prefixes (bit i, database order) that may match a text starting
     * with them, bit 63 set once known. Most hit lines are stripped only for their time stamp; with
     * one byte, "(WorkerDict pid=1) [rank3] generated" still tried ten prefixes on "[r", with two,
     * one. NULL when there are more than 63 prefixes: then the one-byte table alone is asked. */
    uint64_t *pair;
    unsigned char *timed; /* per prefix: it has a group named "time" (matcher_line_time) */
    /* Per prefix: a byte every match of it contains (PCRE2's last required code unit, when it is not
     * a letter nor '?': case and the invalid-UTF-8 retry cannot change it), 0 when none. A line
     * without it is not handed to PCRE2 at all: docker-compose's "svc_1  | " was run, and failed, on
     * every NCCL INFO line ("node1:77865:77865 [0] ...") a log without stamps was read for. */
    unsigned char *req;
    int end_timed;        /* some end-of-line prefix has one */
    const char *line;     /* the line strip() works on (NULL outside it), */
    size_t line_len;
    int line_ascii;       /* and whether it is all ASCII: -1 not known yet */
};

matcher *matcher_new(const pdb *db)
{
    matcher *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->db = db;
    m->md = pcre2_match_data_create(db->max_captures + 1, NULL);
    m->mctx = pcre2_match_context_create(NULL);
    m->skip = calloc(db->n_patterns + 1, 1);
    m->budget = MATCHER_BUDGET_DEFAULT;
    m->first = calloc(db->n_prefixes ? db->n_prefixes : 1, 256);
    m->timed = calloc(db->n_prefixes ? db->n_prefixes : 1, 1);
    m->req = calloc(db->n_prefixes ? db->n_prefixes : 1, 1);
    if (db->n_prefixes < 64 && !(m->pair = calloc(128 * 128, sizeof *m->pair))) {
        matcher_free(m);
        return NULL;
    }
    if (!m->md || !m->mctx || !m->skip || !m->first || !m->timed || !m->req) {
        matcher_free(m);
        return NULL;
    }
    for (size_t i = 0; i < db->n_prefixes; i++)
        m->timed[i] = db->prefixes[i].re.code &&
                      pcre2_substring_number_from_name(db->prefixes[i].re.code, (PCRE2_SPTR) "time") > 0;
    for (size_t i = 0; i < db->n_prefixes; i++)
        m->end_timed |= db->prefixes[i].at_end && m->timed[i];
    for (size_t i = 0; i < db->n_prefixes; i++) {
        uint32_t type = 0, cu = 0;
        const pcre2_code *code = db->prefixes[i].re.code;
        if (code && pcre2_pattern_info(code, PCRE2_INFO_LASTCODETYPE, &type) == 0 && type == 1 &&
            pcre2_pattern_info(code, PCRE2_INFO_LASTCODEUNIT, &cu) == 0 && cu > 0 && cu < 0x80 &&
            !isalpha((int)cu) && cu != '?')
            m->req[i] = (unsigned char)cu;
    }
    /* Hostile input must not make one line cost seconds: bound the backtracking. */
    pcre2_set_match_limit(m->mctx, 200000);
    pcre2_set_depth_limit(m->mctx, 5000);
    return m;
}

void matcher_free(matcher *m)
{
    if (!m)
        return;
    pcre2_match_data_free(m->md);
    pcre2_match_context_free(m->mctx);
    free(m->fixed);
    free(m->skip);
    free(m->first);
    free(m->timed);
    free(m->req);
    free(m->pair);
    free(m);
}

void matcher_budget_reset(matcher *m, uint64_t budget)
{
    m->budget = budget ? budget : MATCHER_BUDGET_DEFAULT;
    m->spent = 0;
    memset(m->skip, 0, m->db->n_patterns + 1);
    m->note[0] = '\0';
}

const char *matcher_budget_note(const matcher *m)
{
    return m->note[0] ? m->note : NULL;
}

/* Copy n bytes with every byte that is not part of a valid UTF-8 sequence as '?'. Same length, so
 * match offsets stay valid for the original. Returns how many bytes were replaced. */
static size_t utf8_fix(const unsigned char *in, size_t n, char *out)
{
    size_t bad = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = in[i];
        size_t k = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
        int ok = k && i + k <= n;
        for (size_t j = 1; ok && j < k; j++)
            ok = (in[i + j] & 0xc0) == 0x80;
        if (ok && k == 3)
            ok = !(c == 0xe0 && in[i + 1] < 0xa0) && !(c == 0xed && in[i + 1] >= 0xa0); /* overlong, surrogate */
        if (ok && k == 4)
            ok = !(c == 0xf0 && in[i + 1] < 0x90) && !(c == 0xf4 && in[i + 1] >= 0x90);
        if (!ok) {
            out[i++] = '?';
            bad++;
            continue;
        }
        memcpy(out + i, in + i, k);
        i += k;
    }
    return bad;
}

/* No byte of text[0..n) has its high bit set. Eight bytes at a time. */
static int is_ascii(const unsigned char *p, size_t n)
{
    size_t i = 0;
#if defined(__SSE2__)
    /* once per stripped line that a prefix missed: a metrics line of kilobytes made the word loop
     * 4% of a run; 64 bytes a step, the high bits or-ed together */
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_or_si128(_mm_loadu_si128((const __m128i *)(p + i)), _mm_loadu_si128((const __m128i *)(p + i + 16)));
        __m128i b = _mm_or_si128(_mm_loadu_si128((const __m128i *)(p + i + 32)), _mm_loadu_si128((const __m128i *)(p + i + 48)));
        if (_mm_movemask_epi8(_mm_or_si128(a, b)))
            return 0;
    }
#endif
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w & 0x8080808080808080ull)
            return 0;
    }
    for (; i < n; i++)
        if (p[i] & 0x80)
            return 0;
    return 1;
}

/* pcre2_match, calling the JIT code directly when there is some: pcre2_match does the same after
 * its own checks, which cost as much as the JIT run of a short prefix rule (a tenth of a scan of
 * metrics lines, where every hit line is stripped for its time stamp). Without JIT code (not
 * compiled, or not supported here) pcre2_jit_match says PCRE2_ERROR_JIT_BADOPTION. */
static int re_match(const matcher *m, const pcre2_code *re, const char *text, size_t len, size_t start)
{
    int rc = pcre2_jit_match(re, (PCRE2_SPTR)text, len, start, 0, m->md, m->mctx);
    if (rc == PCRE2_ERROR_JIT_BADOPTION)
        rc = pcre2_match(re, (PCRE2_SPTR)text, len, start, 0, m->md, m->mctx);
    return rc;
}

static int run(matcher *m, const pdb_regex *r, const char *text, size_t len, size_t start)
{
    const pcre2_code *re = pdb_regex_code(m->db, r);
    m->subj = text;
    int rc = re_match(m, re, text, len, start);
    if (rc != PCRE2_ERROR_NOMATCH || len == 0)
        return rc;
    /* a piece of the line being stripped: that line was found ASCII once for all its pieces */
    if (m->line && text >= m->line && text + len <= m->line + m->line_len) {
        if (m->line_ascii < 0)
            m->line_ascii = is_ascii((const unsigned char *)m->line, m->line_len);
        if (m->line_ascii)
            return rc;
    }
    /* With PCRE2_MATCH_INVALID_UTF an invalid byte is a wall no match crosses: one bad byte in a
     * kernel OOM's process name hid the whole line. Match again on a copy with such bytes as '?';
     * captures are then read from the copy (valid UTF-8 for the writers). Only lines that did not
     * match pay for the check, and those are the few the prefilter picked. */
    if (text != m->fixed_of || len != m->fixed_len) {
        m->fixed_of = text;
        m->fixed_len = len;
        m->fixed_bad = 0;
        /* most log lines are ASCII, and ASCII needs no copy: every prefix and pattern that missed a
         * metrics line used to copy it byte by byte (a quarter of a run over per-rank files) */
        if (is_ascii((const unsigned char *)text, len))
            return rc;
        if (len > m->fixed_cap) {
            char *g = realloc(m->fixed, len);
            if (!g)
                return rc;
            m->fixed = g;
            m->fixed_cap = len;
        }
        m->fixed_bad = utf8_fix((const unsigned char *)text, len, m->fixed);
    }
    if (m->fixed_bad == 0)
        return rc;
    m->subj = m->fixed;
    return re_match(m, re, m->fixed, len, start);
}

/* Iterate the named groups of `re`, calling fn for each name whose group (first set one of a
 * duplicated name) captured something. */
typedef int (*name_fn)(void *ud, const char *name, const char *val, size_t n);

static int for_each_name(matcher *m, const pcre2_code *re, const char *text, name_fn fn, void *ud)
{
    text = m->subj; /* the line as matched: see run() */
    uint32_t count = 0, entry = 0;
    PCRE2_SPTR table = NULL;
    pcre2_pattern_info(re, PCRE2_INFO_NAMECOUNT, &count);
    pcre2_pattern_info(re, PCRE2_INFO_NAMEENTRYSIZE, &entry);
    pcre2_pattern_info(re, PCRE2_INFO_NAMETABLE, &table);
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
    uint32_t pairs = pcre2_get_ovector_count(m->md);
    const char *prev = NULL;
    for (uint32_t i = 0; i < count; i++) {
        PCRE2_SPTR e = table + (size_t)i * entry;
        uint32_t group = ((uint32_t)e[0] << 8) | e[1];
        const char *name = (const char *)e + 2;
        if (prev && strcmp(prev, name) == 0)
            continue; /* a duplicated name already delivered */
        if (group >= pairs || ov[2 * group] == PCRE2_UNSET)
            continue;
        /* With (?J) the same name may sit in several branches; the table lists them in a row. */
        int r = fn(ud, name, text + ov[2 * group], ov[2 * group + 1] - ov[2 * group]);
        if (r)
            return r;
        prev = name;
    }
    return 0;
}

static int count_fn(void *ud, const char *name, const char *val, size_t n)
{
    (void)name;
    (void)val;
    (void)n;
    ++*(int *)ud;
    return 0;
}

int matcher_try(matcher *m, size_t idx, const char *text, size_t len)
{
    m->fixed_of = NULL;
    const pdb_pattern *p = &m->db->patterns[idx];
    if (m->skip[idx])
        return 0;
    int rc = run(m, &p->re, text, len, 0);
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT) {
        /* Each such line cost the whole match limit (milliseconds): a pattern like (a+)+$ on a log of
         * such lines would take hours. Past the input's budget the pattern that spent it is skipped. */
        if (++m->spent >= m->budget) {
            m->skip[idx] = 1;
            if (!m->note[0])
                snprintf(m->note, sizeof m->note,
                         "regex work limit: %llu lines hit PCRE2's match limit; pattern %s skipped for the rest of "
                         "this input, and any other that hits it (--limit regex=%llu)",
                         (unsigned long long)m->spent, p->id, (unsigned long long)m->budget);
        }
        return 0;
    }
    if (rc < 0)
        return 0;
    int n = 0;
    for_each_name(m, p->re.code, text, count_fn, &n);
    return n + 1;
}

void matcher_span(const matcher *m, size_t *start, size_t *end)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
    *start = ov[0];
    *end = ov[1];
}

typedef struct {
    const pdb_pattern *p;
    cJSON *obj;
} put_ud;

static int put_fn(void *ud, const char *name, const char *val, size_t n)
{
    put_ud *u = ud;
    cJSON *v = values_convert(name, val, n, u->p ? pdb_unit_for(u->p, name) : NULL);
    if (!v)
        return -1;
    cJSON_DeleteItemFromObjectCaseSensitive(u->obj, name);
    cJSON_AddItemToObject(u->obj, name, v);
    return 0;
}

int matcher_values(matcher *m, size_t idx, const char *text, size_t len, cJSON *obj)
{
    m->fixed_of = NULL;
    const pdb_pattern *p = &m->db->patterns[idx];
    if (run(m, &p->re, text, len, 0) < 0)
        return 0;
    put_ud u = {p, obj};
    if (for_each_name(m, p->re.code, text, put_fn, &u))
        return -1;
    /* An Xid code alone says little to most readers: add what NVIDIA's catalog says it means and
     * whether it usually points at the hardware or at the program (patterns/context/xid.json). */
    const cJSON *xid = cJSON_GetObjectItemCaseSensitive(obj, "xid");
    const pdb_xid *xe = cJSON_IsNumber(xid) ? pdb_xid_lookup(m->db, (long)xid->valuedouble) : NULL;
    if (xe && (!cJSON_AddStringToObject(obj, "xid_meaning", xe->meaning) ||
               !cJSON_AddStringToObject(obj, "xid_cause", xe->cause)))
        return -1;
    for (size_t k = 0; k < p->n_lists; k++) {
        cJSON *arr = cJSON_CreateArray();
        if (!arr)
            return -1;
        size_t at = 0;
        /* Bounded: a hostile line cannot make the list unbounded. */
        for (int guard = 0; guard < 256 && at <= len && run(m, &p->lists[k].re, text, len, at) >= 0; guard++) {
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
            cJSON *item = cJSON_CreateObject();
            if (!item) {
                cJSON_Delete(arr);
                return -1;
            }
            put_ud iu = {p, item};
            for_each_name(m, p->lists[k].re.code, text, put_fn, &iu);
            cJSON_AddItemToArray(arr, item);
            at = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
        }
        if (cJSON_GetArraySize(arr) > 0)
            cJSON_AddItemToObject(obj, p->lists[k].key, arr);
        else
            cJSON_Delete(arr);
    }
    return 0;
}

typedef struct {
    const pdb_pattern *p;
    cJSON *obj;
    int added;
} cont_ud;

static int cont_fn(void *ud, const char *name, const char *val, size_t n)
{
    cont_ud *u = ud;
    if (cJSON_GetObjectItemCaseSensitive(u->obj, name))
        return 0; /* the matched line said it first */
    cJSON *v = values_convert(name, val, n, pdb_unit_for(u->p, name));
    if (!v)
        return -1;
    cJSON_AddItemToObject(u->obj, name, v);
    u->added++;
    return 0;
}

int matcher_continuation(matcher *m, size_t idx, const char *line, size_t len, cJSON *obj)
{
    const pdb_pattern *p = &m->db->patterns[idx];
    if (p->n_conts == 0)
        return 0;
    line_ctx ctx;
    size_t ml;
    const char *msg = matcher_strip(m, line, len, &ml, &ctx); /* (clears the cache) */
    cont_ud u = {p, obj, 0};
    for (size_t k = 0; k < p->n_conts; k++) {
        if (!p->conts[k].re.code || run(m, &p->conts[k].re, msg, ml, 0) < 0)
            continue;
        if (for_each_name(m, p->conts[k].re.code, msg, cont_fn, &u))
            return -1;
    }
    return u.added;
}

/* ---- prefixes ---------------------------------------------------------------------------- */

typedef struct {
    line_ctx *ctx;
} ctx_ud;

static void put_field(char *dst, size_t cap, const char *val, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, val, n);
    dst[n] = '\0';
}

static int ctx_fn(void *ud, const char *name, const char *val, size_t n)
{
    line_ctx *c = ((ctx_ud *)ud)->ctx;
    if (strcmp(name, "rank") == 0)
        put_field(c->rank, sizeof c->rank, val, n);
    else if (strcmp(name, "local_rank") == 0)
        put_field(c->local_rank, sizeof c->local_rank, val, n);
    else if (strcmp(name, "pid") == 0)
        put_field(c->pid, sizeof c->pid, val, n);
    else if (strcmp(name, "ip") == 0)
        put_field(c->ip, sizeof c->ip, val, n);
    else if (strcmp(name, "host") == 0)
        put_field(c->host, sizeof c->host, val, n);
    else if (strcmp(name, "time") == 0 && !c->time[0])
        put_field(c->time, sizeof c->time, val, n); /* the outermost stamp (the collector's) wins */
    else if (strcmp(name, "actor") == 0)
        put_field(c->actor, sizeof c->actor, val, n);
    else if (strcmp(name, "container") == 0)
        put_field(c->container, sizeof c->container, val, n);
    else if (strcmp(name, "worker_index") == 0 && n < 10) {
        /* a PyTorchJob's worker-N pod: the training operator gives the master RANK 0 and worker N
         * RANK N+1 (prefixes.json, kubectl_prefix) */
        char num[12];
        put_field(num, sizeof num, val, n);
        snprintf(c->rank, sizeof c->rank, "%d", (int)(strtol(num, NULL, 10) % 1000000000) + 1);
    }
    else if (strcmp(name, "repeat") == 0)
        c->repeat = strtol(val, NULL, 10);
    return 0;
}

/* Whether prefix `i` may match a text whose first byte is c. Asked once per byte: the prefix runs on
 * the one-byte text with hard partial matching, which fails outright only when no text starting with
 * c can match (a prefix sees the rest of the line as its whole subject, so nothing before c counts).
 * Bytes of multi-byte characters are not asked: they may. */
static int may_start(matcher *m, size_t i, unsigned char c)
{
    if (c >= 0x80)
        return 1;
    unsigned char *known = &m->first[i * 256 + c];
    if (!*known) {
        char one = (char)c;
        int rc = pcre2_match(m->db->prefixes[i].re.code, (PCRE2_SPTR)&one, 1, 0, PCRE2_PARTIAL_HARD, m->md, m->mctx);
        *known = rc == PCRE2_ERROR_NOMATCH ? 2 : 1;
    }
    return *known == 1;
}

/* The start-of-line prefixes that may match a text starting with the ASCII bytes c0 c1 (see `pair`):
 * those that may start with c0 and do not fail outright on the two-byte text, as in may_start. */
static uint64_t may_start_pair(matcher *m, unsigned char c0, unsigned char c1)
{
    uint64_t *known = &m->pair[c0 * 128 + c1];
    if (!*known) {
        uint64_t set = 1ull << 63;
        char two[2] = {(char)c0, (char)c1};
        for (size_t i = 0; i < m->db->n_prefixes; i++) {
            const pdb_prefix *p = &m->db->prefixes[i];
            if (p->at_end || !p->re.code || !may_start(m, i, c0))
                continue;
            int rc = pcre2_match(p->re.code, (PCRE2_SPTR)two, 2, 0, PCRE2_PARTIAL_HARD, m->md, m->mctx);
            if (rc != PCRE2_ERROR_NOMATCH)
                set |= 1ull << i;
        }
        *known = set;
    }
    return *known & ~(1ull << 63);
}

/* matcher_strip's work; with time_only, only what decides ctx->time (matcher_line_time): a prefix
 * without a "time" group is stripped without reading its captures, the search ends at the first
 * time (the outermost wins), and the end-of-line decorations run only if one of them has a time
 * group (each one's match shortens the next one's subject, so then all of them run). On a line
 * without a stamp that end-of-line search was most of the cost: an unanchored regex over the line. */
static const char *strip_line(matcher *m, const char *line, size_t len, size_t *msg_len, line_ctx *ctx,
                              int time_only);

/* Start-of-line prefix i on text[0..len) (the rest of the line is the subject, so a rule may anchor
 * with ^ or \G alike): the length it strips (its captures into ctx), 0 when it does not match. */
static size_t try_prefix(matcher *m, size_t i, const char *text, size_t len, line_ctx *ctx, int time_only)
{
    const pdb_prefix *p = &m->db->prefixes[i];
    if (m->req[i] && !memchr(text, m->req[i], len))
        return 0; /* PCRE2 would look for the same byte first, after the cost of a call */
    if (run(m, &p->re, text, len, 0) < 0)
        return 0;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
    if (ov[1] == 0)
        return 0;
    size_t took = ov[1];
    if (!time_only || m->timed[i]) {
        ctx_ud u = {ctx};
        for_each_name(m, p->re.code, text, ctx_fn, &u);
    }
    return took;
}

static const char *strip(matcher *m, const char *line, size_t len, size_t *msg_len, line_ctx *ctx, int time_only)
{
    if (time_only)
        ctx->time[0] = '\0'; /* the one field read (ctx_fn keeps the first time) */
    else
        memset(ctx, 0, sizeof *ctx);
    m->fixed_of = NULL;
    m->line = line;
    m->line_len = len;
    m->line_ascii = -1;
    const char *msg = strip_line(m, line, len, msg_len, ctx, time_only);
    m->line = NULL;
    m->line_len = 0;
    return msg;
}

static const char *strip_line(matcher *m, const char *line, size_t len, size_t *msg_len, line_ctx *ctx,
                              int time_only)
{
    const pdb *db = m->db;
    size_t pos = 0;
    ctx_ud u = {ctx};
    for (int round = 0; round < 12 && pos < len; round++) {
        size_t took = 0;
        unsigned char c0 = (unsigned char)line[pos], c1 = pos + 1 < len ? (unsigned char)line[pos + 1] : 0x80;
        if (m->pair && c0 < 0x80 && c1 < 0x80) {
            for (uint64_t set = may_start_pair(m, c0, c1); set && !took; set &= set - 1)
                took = try_prefix(m, (size_t)__builtin_ctzll(set), line + pos, len - pos, ctx, time_only);
        } else {
            for (size_t i = 0; i < db->n_prefixes && !took; i++)
                if (!db->prefixes[i].at_end && db->prefixes[i].re.code && may_start(m, i, c0))
                    took = try_prefix(m, i, line + pos, len - pos, ctx, time_only);
        }
        if (took == 0)
            break;
        if (time_only && ctx->time[0])
            return NULL;
        pos += took;
    }
    size_t end = len;
    for (size_t i = 0; i < db->n_prefixes && (!time_only || m->end_timed); i++) {
        const pdb_prefix *p = &db->prefixes[i];
        if (!p->at_end || !p->re.code)
            continue;
        if (run(m, &p->re, line, end, pos) >= 0) {
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
            for_each_name(m, p->re.code, line, ctx_fn, &u);
            end = ov[0];
        }
    }
    *msg_len = end - pos;
    return line + pos;
}

const char *matcher_strip(matcher *m, const char *line, size_t len, size_t *msg_len, line_ctx *ctx)
{
    return strip(m, line, len, msg_len, ctx, 0);
}

int matcher_line_time(matcher *m, const char *line, size_t len, line_ctx *ctx)
{
    size_t msg_len;
    strip(m, line, len, &msg_len, ctx, 1);
    return ctx->time[0] != '\0';
}
