/* scan.c - the streaming scanner: chunks -> prefilter -> candidate lines -> match -> story. */
#include "scan.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match.h"
#include "timefmt.h"

#define READ_CHUNK (1u << 20)
#define BUF_CAP (SCAN_LINE_CAP + READ_CHUNK)
#define LOOKAHEAD_LINES 3   /* lines kept after the processed region: wrapped messages, code lines */
#define JOIN_MAX 2          /* continuation lines tried for a wrapped message */
#define JOIN_CAP 8192
#define EVIDENCE_CAP 2000
#define BURST_LINES 40      /* a second wording of the same failure within this many lines joins it */
#define MAX_LINE_TARGETS 64

typedef struct {
    int cls;          /* class of the last failure on this stream key */
    char key[24];
    uint64_t line;
    long finding;
} burst;

struct scanner {
    const pdb *db;
    matcher *m;
    unsigned char *buf;
    char *join;   /* JOIN_CAP: joined messages of a wrapped failure */
    char *evid;   /* EVIDENCE_CAP + 4: sanitised evidence */
    /* per run */
    const scan_source *src;
    phase_state *ps;
    story *st;
    oomscan_status status;
    size_t len;        /* bytes in buf */
    uint64_t base;     /* stream offset of buf[0] */
    size_t counted_to; /* terminators counted in buf[0..counted_to) */
    uint64_t lines_before;
    int have_time;
    timefmt last_time;
    /* the line being collected from prefilter hits */
    size_t cur_start, cur_end;
    int cur_open;
    size_t cur_targets[MAX_LINE_TARGETS];
    size_t n_cur;
    size_t region_end; /* end of the processed region (hits beyond are next round's) */
    unsigned char last_byte; /* last byte of the stream so far: did it end with a terminator? */
    burst bursts[8];
    size_t n_bursts;
};

scanner *scanner_new(const pdb *db)
{
    scanner *sc = calloc(1, sizeof *sc);
    if (!sc)
        return NULL;
    sc->db = db;
    sc->m = matcher_new(db);
    sc->buf = malloc(BUF_CAP + 16);
    sc->join = malloc(JOIN_CAP);
    sc->evid = malloc(EVIDENCE_CAP + 8);
    if (!sc->m || !sc->buf || !sc->join || !sc->evid) {
        scanner_free(sc);
        return NULL;
    }
    return sc;
}

void scanner_free(scanner *sc)
{
    if (!sc)
        return;
    matcher_free(sc->m);
    free(sc->buf);
    free(sc->join);
    free(sc->evid);
    free(sc);
}

/* ---- names ------------------------------------------------------------------------------- */

static int find_number_after(const char *s, const char *word, char *out, size_t cap, int allow_underscore)
{
    const char *p = s;
    size_t wl = strlen(word);
    while ((p = strstr(p, word))) {
        const char *q = p + wl;
        if (*q == '-' || *q == '_')
            q++;
        if (isdigit((unsigned char)*q)) {
            size_t n = 0;
            while (n + 1 < cap && (isdigit((unsigned char)q[n]) || (allow_underscore && q[n] == '_' && isdigit((unsigned char)q[n + 1]))))
                n++;
            memcpy(out, q, n);
            out[n] = '\0';
            return 1;
        }
        p += wl;
    }
    return 0;
}

void scan_source_from_name(scan_source *src)
{
    char name[1024];
    snprintf(name, sizeof name, "%s%s%s", src->path ? src->path : "", src->member ? "/" : "",
             src->member ? src->member : "");
    src->job_id[0] = src->rank[0] = src->host[0] = '\0';
    /* slurm-1234.out, slurm-1234_7.err (%A_%a), or a job-1234 bundle */
    if (!find_number_after(name, "slurm-", src->job_id, sizeof src->job_id, 1))
        find_number_after(name, "job-", src->job_id, sizeof src->job_id, 1);
    /* the last component naming a rank wins: logs/rank3.log, worker_rank-12.err */
    const char *p = name, *last = NULL;
    while ((p = strstr(p, "rank"))) {
        last = p;
        p += 4;
    }
    if (last)
        find_number_after(last, "rank", src->rank, sizeof src->rank, 0);
    /* a directory component that names a node: node12/, gpu-node-3/ */
    const char *comp = name;
    while (*comp) {
        const char *slash = strchr(comp, '/');
        size_t n = slash ? (size_t)(slash - comp) : strlen(comp);
        /* only directories: a file named host_oom_kill-1.log is not a host */
        if (slash && n > 4 && n < sizeof src->host && (strncmp(comp, "node", 4) == 0 || memmem(comp, n, "-node", 5))) {
            memcpy(src->host, comp, n);
            src->host[n] = '\0';
        }
        if (!slash)
            break;
        comp = slash + 1;
    }
}

/* ---- line counting ----------------------------------------------------------------------- */

#if defined(__SSE2__)
#include <emmintrin.h>

/* 64 bytes at a time: bit masks of \n and \r; a \r counts unless the next byte is \n. */
static inline uint64_t mask64(const unsigned char *p, __m128i c)
{
    uint64_t m0 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)p), c));
    uint64_t m1 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 16)), c));
    uint64_t m2 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 32)), c));
    uint64_t m3 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 48)), c));
    return m0 | (m1 << 16) | (m2 << 32) | (m3 << 48);
}
#endif

uint64_t scan_count_lines(const unsigned char *p, size_t n)
{
    uint64_t total = 0;
    size_t i = 0;
#if defined(__SSE2__)
    const __m128i lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
    for (; i + 64 < n; i += 64) {
        uint64_t l = mask64(p + i, lf);
        uint64_t r = mask64(p + i, cr);
        /* bit k of `follow` says byte k+1 is \n (the byte after the block is looked at too) */
        uint64_t follow = (l >> 1) | ((uint64_t)(p[i + 64] == '\n') << 63);
        total += (uint64_t)__builtin_popcountll(l) + (uint64_t)__builtin_popcountll(r & ~follow);
    }
#endif
    for (; i < n; i++) {
        if (p[i] == '\n')
            total++;
        else if (p[i] == '\r' && !(i + 1 < n && p[i + 1] == '\n'))
            total++;
    }
    return total;
}

static uint64_t line_number_at(scanner *sc, size_t pos)
{
    if (pos > sc->counted_to) {
        sc->lines_before += scan_count_lines(sc->buf + sc->counted_to, pos - sc->counted_to);
        sc->counted_to = pos;
    }
    return sc->lines_before + 1;
}

/* Bounds of the line holding pos, within [lo, hi). */
static void line_bounds(const unsigned char *b, size_t lo, size_t hi, size_t pos, size_t *start, size_t *end)
{
    size_t s = pos;
    while (s > lo && b[s - 1] != '\n' && b[s - 1] != '\r')
        s--;
    size_t e = pos;
    while (e < hi && b[e] != '\n' && b[e] != '\r')
        e++;
    *start = s;
    *end = e;
}

/* The line after one ending at `end` (skipping its terminator), within [0, hi). 0 if none complete. */
static int next_line(const unsigned char *b, size_t hi, size_t end, size_t *ns, size_t *ne)
{
    if (end >= hi)
        return 0;
    size_t s = end + 1;
    if (b[end] == '\r' && s < hi && b[s] == '\n')
        s++;
    if (s >= hi)
        return 0;
    size_t e = s;
    while (e < hi && b[e] != '\n' && b[e] != '\r')
        e++;
    *ns = s;
    *ne = e;
    return 1;
}

/* ---- evidence ---------------------------------------------------------------------------- */

/* Copy text as valid UTF-8 without control characters (NUL and binary junk become '?'). */
static size_t sanitize(const char *in, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < cap;) {
        unsigned char c = (unsigned char)in[i];
        if (c < 0x80) {
            out[o++] = (c < 0x20 && c != '\t') || c == 0x7f ? ' ' : (char)c;
            i++;
            continue;
        }
        size_t k = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
        int ok = k && i + k <= n;
        for (size_t j = 1; ok && j < k; j++)
            ok = ((unsigned char)in[i + j] & 0xc0) == 0x80;
        if (ok && k == 3 && c == 0xe0 && (unsigned char)in[i + 1] < 0xa0)
            ok = 0; /* overlong */
        if (ok && k == 3 && c == 0xed && (unsigned char)in[i + 1] >= 0xa0)
            ok = 0; /* surrogate */
        if (ok && k == 4 && ((c == 0xf0 && (unsigned char)in[i + 1] < 0x90) || (c == 0xf4 && (unsigned char)in[i + 1] >= 0x90)))
            ok = 0;
        if (ok) {
            memcpy(out + o, in + i, k);
            o += k;
            i += k;
        } else {
            out[o++] = '?';
            i++;
        }
    }
    while (o > 0 && out[o - 1] == ' ')
        o--;
    return o;
}

/* ---- one candidate line ------------------------------------------------------------------ */

static void stream_key(const line_ctx *c, const scan_source *src, char *key, size_t cap)
{
    /* keys are short ids; cut them rather than warn: a collision only merges two tracebacks */
    const char *id = c->rank[0] ? c->rank : c->pid[0] ? c->pid : src->rank;
    char kind = c->rank[0] ? 'r' : c->pid[0] ? 'p' : 'r';
    if (!id[0] || cap < 3) {
        key[0] = '\0';
        return;
    }
    key[0] = kind;
    size_t n = strlen(id);
    if (n > cap - 2)
        n = cap - 2;
    memcpy(key + 1, id, n);
    key[n + 1] = '\0';
}

static void handle_frame(scanner *sc, const char *key, const char *msg, size_t n, size_t line_end, uint64_t line)
{
    /* File "PATH", line N, in FUNC */
    const char *p = memchr(msg, '"', n);
    if (!p)
        return;
    const char *path = p + 1;
    const char *q = memchr(path, '"', n - (size_t)(path - msg));
    if (!q)
        return;
    size_t path_len = (size_t)(q - path);
    const char *in = NULL;
    for (const char *r = q; r + 4 <= msg + n; r++)
        if (memcmp(r, ", in ", 5) == 0) {
            in = r + 5;
            break;
        }
    if (!in)
        return;
    size_t func_len = 0;
    while (in + func_len < msg + n && !isspace((unsigned char)in[func_len]))
        func_len++;
    /* The code line is printed under the frame. */
    const char *code = NULL;
    size_t code_len = 0, ns, ne;
    line_ctx cctx;
    if (next_line(sc->buf, sc->len, line_end, &ns, &ne)) {
        code = matcher_strip(sc->m, (const char *)sc->buf + ns, ne - ns, &code_len, &cctx);
        while (code_len && isspace((unsigned char)*code)) {
            code++;
            code_len--;
        }
        if (code_len >= 6 && memcmp(code, "File \"", 6) == 0)
            code = NULL, code_len = 0;
    }
    phase_frame(sc->ps, key, path, path_len, in, func_len, code, code_len, line);
}

/* Try every candidate pattern on text; best by severity, then captures, then match length. */
static long best_pattern(scanner *sc, const size_t *cands, size_t nc, const char *text, size_t len, int *score)
{
    long best = -1;
    int best_caps = 0, best_sev = -1;
    size_t best_span = 0;
    for (size_t i = 0; i < nc; i++) {
        int caps = matcher_try(sc->m, cands[i], text, len);
        if (!caps)
            continue;
        size_t s, e;
        matcher_span(sc->m, &s, &e);
        int sev = sc->db->patterns[cands[i]].severity;
        if (sev > best_sev || (sev == best_sev && (caps > best_caps || (caps == best_caps && e - s > best_span)))) {
            best = (long)cands[i];
            best_caps = caps;
            best_sev = sev;
            best_span = e - s;
        }
    }
    *score = best_caps;
    return best;
}

static void process_line(scanner *sc)
{
    const pdb *db = sc->db;
    size_t start = sc->cur_start, end = sc->cur_end;
    uint64_t line = line_number_at(sc, start);
    size_t msg_len;
    line_ctx ctx;
    const char *msg = matcher_strip(sc->m, (const char *)sc->buf + start, end - start, &msg_len, &ctx);
    timefmt t;
    if (ctx.time[0] && timefmt_parse(ctx.time, strlen(ctx.time), &t) == 0) {
        sc->last_time = t;
        sc->have_time = 1;
    }
    char key[24];
    stream_key(&ctx, sc->src, key, sizeof key);

    size_t cands[MAX_LINE_TARGETS];
    size_t nc = 0;
    for (size_t i = 0; i < sc->n_cur; i++) {
        const pdb_literal *lit = &db->literals[sc->cur_targets[i]];
        for (size_t k = 0; k < lit->n_targets; k++) {
            const pdb_target *tg = &lit->targets[k];
            switch (tg->kind) {
            case LIT_TRACEBACK:
                phase_traceback(sc->ps, key, line);
                break;
            case LIT_FRAME:
                handle_frame(sc, key, msg, msg_len, end, line);
                break;
            case LIT_MARKER:
                phase_marker(sc->ps, tg->index, line);
                break;
            case LIT_FRAMEWORK:
                phase_framework_vote(sc->ps, db->fw_rules[tg->index].framework);
                break;
            case LIT_PATTERN: {
                size_t j;
                for (j = 0; j < nc && cands[j] != tg->index; j++)
                    ;
                if (j == nc && nc < MAX_LINE_TARGETS)
                    cands[nc++] = tg->index;
                break;
            }
            }
        }
    }
    if (nc == 0)
        return;

    int score = 0;
    const char *text = msg;
    size_t text_len = msg_len;
    long pi = best_pattern(sc, cands, nc, msg, msg_len, &score);
    /* A terminal or logger may have wrapped the message, even between a number and its unit: try the
     * message joined with the next lines, with and without a space, and keep what explains more. */
    size_t ns, ne, le = end;
    size_t jl = msg_len < JOIN_CAP ? msg_len : JOIN_CAP;
    memcpy(sc->join, msg, jl);
    for (int k = 0; k < JOIN_MAX && next_line(sc->buf, sc->len, le, &ns, &ne); k++) {
        size_t cl;
        line_ctx cc;
        const char *cont = matcher_strip(sc->m, (const char *)sc->buf + ns, ne - ns, &cl, &cc);
        if (cl == 0 || jl + cl + 1 > JOIN_CAP)
            break;
        for (int sep = 0; sep < 2; sep++) {
            size_t at = jl;
            if (sep)
                sc->join[at++] = ' ';
            memcpy(sc->join + at, cont, cl);
            int s2;
            long p2 = best_pattern(sc, cands, nc, sc->join, at + cl, &s2);
            if (p2 >= 0 && (pi < 0 || s2 > score)) {
                pi = p2;
                score = s2;
                text = sc->join;
                text_len = at + cl;
            }
        }
        /* keep the space-less join as the base for a third line: terminals cut without spaces */
        jl += cl;
        le = ne;
        if (pi >= 0 && text != sc->join)
            break;
    }
    if (pi < 0)
        return;

    /* text may live in sc->join, which the next best_pattern call could overwrite: copy evidence now */
    const pdb_pattern *p = &db->patterns[pi];
    cJSON *mem = cJSON_CreateObject();
    if (!mem || matcher_values(sc->m, (size_t)pi, text, text_len, mem) != 0) {
        cJSON_Delete(mem);
        sc->status = OOMSCAN_ERR_NOMEM;
        return;
    }
    size_t ms, me;
    matcher_span(sc->m, &ms, &me);
    size_t ev_len = sanitize(text, text_len, sc->evid, EVIDENCE_CAP);
    char match_buf[256];
    size_t match_len = sanitize(text + ms, me - ms, match_buf, sizeof match_buf);

    phase_answer ans;
    phase_decide(sc->ps, key, line, p->phase, p->engine, &ans);

    /* Job id stated by the message itself (slurmstepd's StepId=1234.0) beats the file name. */
    char job[32];
    snprintf(job, sizeof job, "%s", sc->src->job_id);
    const cJSON *jid = cJSON_GetObjectItemCaseSensitive(mem, "job_id");
    if (cJSON_IsNumber(jid))
        snprintf(job, sizeof job, "%.0f", jid->valuedouble);
    else if (cJSON_IsString(jid))
        snprintf(job, sizeof job, "%s", jid->valuestring);

    long merge = -1;
    for (size_t i = 0; i < sc->n_bursts; i++) {
        burst *b = &sc->bursts[i];
        if (b->cls == (int)p->cls && strcmp(b->key, key) == 0 && line - b->line <= BURST_LINES &&
            b->finding >= 0 && (size_t)b->finding < sc->st->n &&
            (sc->st->f[b->finding].phase == ans.phase || ans.phase == PH_UNKNOWN))
            merge = b->finding;
    }

    story_event ev = {
        .pattern = p,
        .phase = merge >= 0 ? sc->st->f[merge].phase : ans.phase,
        .phase_evidence = ans.evidence,
        .framework = ans.framework,
        .match = match_buf,
        .match_len = match_len,
        .evidence = sc->evid,
        .evidence_len = ev_len,
        .memory = mem,
        .input = sc->src->input,
        .path = sc->src->path,
        .member = sc->src->member,
        .line = line,
        .offset = sc->base + start,
        .time = sc->have_time ? &sc->last_time : NULL,
        .rank = ctx.rank[0] ? ctx.rank : sc->src->rank,
        .local_rank = ctx.local_rank,
        .pid = ctx.pid,
        .host = ctx.host[0] ? ctx.host : (ctx.ip[0] ? ctx.ip : sc->src->host),
        .job_id = job,
        .repeat = ctx.repeat,
        .merge_into = merge,
    };
    long fi = story_add(sc->st, &ev);
    if (fi < 0)
        return;
    size_t slot;
    for (slot = 0; slot < sc->n_bursts; slot++)
        if (sc->bursts[slot].cls == (int)p->cls && strcmp(sc->bursts[slot].key, key) == 0)
            break;
    if (slot == sc->n_bursts) {
        if (sc->n_bursts < 8)
            sc->n_bursts++;
        else
            slot = 7;
    }
    sc->bursts[slot].cls = (int)p->cls;
    snprintf(sc->bursts[slot].key, sizeof sc->bursts[slot].key, "%s", key);
    sc->bursts[slot].line = line;
    sc->bursts[slot].finding = fi;
}

static size_t on_hit(void *ud, size_t lit, size_t pos)
{
    scanner *sc = ud;
    if (sc->cur_open && pos < sc->cur_end) {
        size_t i;
        for (i = 0; i < sc->n_cur && sc->cur_targets[i] != lit; i++)
            ;
        if (i == sc->n_cur && sc->n_cur < MAX_LINE_TARGETS)
            sc->cur_targets[sc->n_cur++] = lit;
        return pos + 1;
    }
    if (sc->cur_open)
        process_line(sc);
    if (sc->status)
        return SIZE_MAX;
    line_bounds(sc->buf, 0, sc->region_end, pos, &sc->cur_start, &sc->cur_end);
    sc->cur_open = 1;
    sc->n_cur = 0;
    sc->cur_targets[sc->n_cur++] = lit;
    return pos + 1;
}

static void scan_region(scanner *sc, size_t end, size_t avail)
{
    sc->region_end = end;
    sc->cur_open = 0;
    prefilter_scan(sc->db->pf, sc->buf, 0, end, avail, on_hit, sc);
    if (sc->cur_open && !sc->status)
        process_line(sc);
    sc->cur_open = 0;
}

/* Where the processed region may end: after the line that leaves LOOKAHEAD_LINES complete lines
 * behind it in the buffer. 0 when more data is needed first. */
static size_t safe_end(const scanner *sc, int eof)
{
    if (eof)
        return sc->len;
    size_t hi = sc->len;
    if (hi && sc->buf[hi - 1] == '\r')
        hi--; /* maybe the first half of \r\n */
    size_t seen = 0, first_term = 0;
    for (size_t i = hi; i > 0; i--) {
        unsigned char c = sc->buf[i - 1];
        if (c == '\n' || c == '\r') {
            if (seen == 0)
                first_term = i;
            if (++seen > LOOKAHEAD_LINES)
                return i;
            if (c == '\n' && i >= 2 && sc->buf[i - 2] == '\r')
                i--;
        }
        if (hi - i > 65536 && seen > 0)
            return first_term; /* long lines: do not wait for lookahead */
    }
    return sc->len >= BUF_CAP ? first_term : 0;
}

oomscan_status scanner_run(scanner *sc, scan_read_fn rd, void *rd_ud, const scan_source *src, phase_state *ps,
                           story *st, scan_result *res, scan_progress_fn progress, void *progress_ud)
{
    memset(res, 0, sizeof *res);
    sc->src = src;
    sc->ps = ps;
    sc->st = st;
    sc->status = OOMSCAN_OK;
    sc->len = 0;
    sc->base = 0;
    sc->counted_to = 0;
    sc->lines_before = 0;
    sc->have_time = 0;
    sc->n_bursts = 0;
    int eof = 0;
    int in_long_line = 0;
    uint64_t total = 0;
    while (!sc->status) {
        while (!eof && sc->len < READ_CHUNK) {
            ssize_t n = rd(rd_ud, sc->buf + sc->len, BUF_CAP - sc->len);
            if (n <= 0) {
                eof = 1;
                res->read_error = n < 0;
                break;
            }
            sc->len += (size_t)n;
            total += (uint64_t)n;
        }
        if (progress)
            progress(progress_ud, total);
        if (sc->len == 0)
            break;
        size_t end = safe_end(sc, eof);
        if (eof && sc->len > SCAN_LINE_CAP && !memchr(sc->buf, '\n', sc->len) && !memchr(sc->buf, '\r', sc->len))
            end = 0; /* the tail is one over-long line: cut it like any other */
        if (end == 0) {
            if (sc->len < BUF_CAP && !eof && sc->len <= SCAN_LINE_CAP) {
                /* need more bytes for a complete line: read on */
                ssize_t n = rd(rd_ud, sc->buf + sc->len, BUF_CAP - sc->len);
                if (n <= 0) {
                    eof = 1;
                    res->read_error = n < 0;
                } else {
                    sc->len += (size_t)n;
                    total += (uint64_t)n;
                }
                continue;
            }
            /* No terminator in a full buffer: a line over the cap. Cut it; the piece keeps the line
             * number and the rest is scanned as the same line. */
            end = SCAN_LINE_CAP;
            if (!in_long_line)
                res->lines_cut++;
            in_long_line = 1;
            scan_region(sc, end, end);
        } else {
            in_long_line = 0;
            scan_region(sc, end, sc->len);
        }
        line_number_at(sc, end);
        sc->last_byte = sc->buf[end - 1];
        size_t rest = sc->len - end;
        memmove(sc->buf, sc->buf + end, rest);
        sc->base += end;
        sc->len = rest;
        sc->counted_to = 0;
        if (eof && rest == 0)
            break;
    }
    res->bytes = sc->base;
    /* the last line counts even without a terminator */
    res->lines = sc->lines_before;
    if (sc->base > 0 && sc->last_byte != '\n' && sc->last_byte != '\r')
        res->lines++;
    return sc->status;
}
