/* scan.c - the streaming scanner: chunks -> prefilter -> candidate lines -> match -> story. */
#include "match/scan.h"

#include "base/values.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match/config.h"
#include "match/match.h"
#include "base/timefmt.h"

#define READ_CHUNK (512u * 1024u) /* with the line cap, the buffer is 1.5 MiB: the peak RSS budget is 16 MiB */
#define BUF_CAP (SCAN_LINE_CAP + READ_CHUNK)
#define LOOKAHEAD_LINES 6   /* lines kept after the processed region: wrapped messages, code lines,
                              * a pattern's "continuation" lines (at most PDB_CONT_MAX) */
#define JOIN_MAX 2          /* continuation lines tried for a wrapped message */
#define JOIN_CAP 8192
#define EVIDENCE_CAP 2000
#define BURST_LINES 40      /* a second wording of the same failure within this many lines joins it */
#define MAX_LINE_TARGETS 64
#define DEFERRED_CAP 1024   /* cheap lines whose timestamp is read only when a finding needs it */
#define SPLIT_MIN (256u * 1024u) /* a region is split for the helper only from twice this size */
#define SPLIT_HITS 32768    /* hits the helper keeps for one half; past that the main thread goes on */

/* The helper thread of a split scan (scanner_use_helper): it runs the prefilter over the second part
 * of each region and keeps the hits, while the scanner's thread does the first part. The hits are
 * then replayed in order, so the callback sees exactly the sequence of a one-thread scan. */
typedef struct {
    size_t pos, lit;
} split_hit;

typedef struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int job, quit;
    const prefilter *pf;
    const unsigned char *buf;
    size_t from, end, avail;
    split_hit *hits;
    size_t n;
    size_t stopped_at; /* SIZE_MAX: every hit of [from, end) is in hits; else those before it are */
} splitter;

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
    char *join;   /* 2 * JOIN_CAP: joined messages of a wrapped failure; the best join so far in the upper half */
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
    /* The hit line: every literal seen on it once. Marker, framework and setting literals ("cheap") act at
     * once, without stripping the line; the others wait in cur_targets for process_line. */
    size_t line_end;   /* end of the line of the last hit; 0 = none yet in this region */
    size_t line_pos;   /* first hit on it */
    size_t seen[MAX_LINE_TARGETS];
    size_t n_seen;
    unsigned char *cheap; /* per literal: all targets are markers, framework votes or settings */
    /* Lines that had only cheap hits: the original design read each one's timestamp (findings carry
     * the last time seen). That costs a regex run per line, so it is done lazily, newest first, only
     * up to the first line that has a time, when a finding or the end of the buffer needs it. */
    size_t deferred[DEFERRED_CAP];
    size_t n_deferred;
    config_tracker *cfg; /* the brackets of a settings dump the scan has passed (config.h) */
    splitter *split; /* NULL: one thread */
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
    sc->join = malloc(2 * JOIN_CAP);
    sc->evid = malloc(EVIDENCE_CAP + 8);
    sc->cheap = calloc(db->n_literals ? db->n_literals : 1, 1);
    sc->cfg = config_tracker_new();
    if (!sc->m || !sc->buf || !sc->join || !sc->evid || !sc->cheap || !sc->cfg) {
        scanner_free(sc);
        return NULL;
    }
    for (size_t i = 0; i < db->n_literals; i++) {
        int cheap = 1;
        for (size_t k = 0; k < db->literals[i].n_targets; k++)
            if ((db->literals[i].targets[k].kind != LIT_MARKER && db->literals[i].targets[k].kind != LIT_FRAMEWORK &&
                 db->literals[i].targets[k].kind != LIT_CONFIG) ||
                (db->literals[i].targets[k].kind == LIT_MARKER && db->markers[db->literals[i].targets[k].index].late))
                cheap = 0; /* a late marker reads its line (the killed task's PID) */
        sc->cheap[i] = (unsigned char)cheap;
    }
    return sc;
}

void scanner_free(scanner *sc)
{
    if (!sc)
        return;
    if (sc->split) {
        pthread_mutex_lock(&sc->split->mu);
        sc->split->quit = 1;
        pthread_cond_broadcast(&sc->split->cv);
        pthread_mutex_unlock(&sc->split->mu);
        pthread_join(sc->split->thread, NULL);
        pthread_mutex_destroy(&sc->split->mu);
        pthread_cond_destroy(&sc->split->cv);
        free(sc->split->hits);
        free(sc->split);
    }
    matcher_free(sc->m);
    free(sc->buf);
    free(sc->join);
    free(sc->evid);
    free(sc->cheap);
    config_tracker_free(sc->cfg);
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
#endif

/* Terminators per byte lane, summed without popcount (the default x86-64 target has no popcnt
 * instruction and the libgcc fallback was 5% of a scan): a byte is a terminator when it is \n, or \r
 * not followed by \n; lanes count down from 0 (cmpeq gives -1) for at most 255 blocks, then
 * _mm_sad_epu8 adds the 16 lanes. The byte after each block is read, so the loop stops 16 early. */
uint64_t scan_count_lines(const unsigned char *p, size_t n)
{
    uint64_t total = 0;
    size_t i = 0;
#if defined(__SSE2__)
    const __m128i lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'), zero = _mm_setzero_si128();
    while (i + 16 < n) {
        __m128i acc = zero;
        for (int k = 0; k < 255 && i + 16 < n; k++, i += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
            __m128i next = _mm_loadu_si128((const __m128i *)(p + i + 1));
            __m128i t = _mm_or_si128(_mm_cmpeq_epi8(v, lf),
                                     _mm_andnot_si128(_mm_cmpeq_epi8(next, lf), _mm_cmpeq_epi8(v, cr)));
            acc = _mm_sub_epi8(acc, t);
        }
        __m128i sums = _mm_sad_epu8(acc, zero);
        total += (uint64_t)_mm_cvtsi128_si32(sums) + (uint64_t)_mm_cvtsi128_si32(_mm_srli_si128(sums, 8));
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
static int strstr_n(const char *h, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(h + i, needle, k) == 0)
            return 1;
    return 0;
}

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

int scan_parse_frame(const char *msg, size_t n, const char **path, size_t *path_len, const char **func,
                     size_t *func_len)
{
    /* File "PATH", line N, in FUNC */
    const char *p = memchr(msg, '"', n);
    if (!p)
        return 0;
    *path = p + 1;
    const char *q = memchr(*path, '"', n - (size_t)(*path - msg));
    if (!q)
        return 0;
    *path_len = (size_t)(q - *path);
    const char *in = NULL;
    for (const char *r = q; r + 4 <= msg + n; r++)
        if (memcmp(r, " in ", 4) == 0 && (r[-1] == ',' || isdigit((unsigned char)r[-1]) || r[-1] == '?')) {
            in = r + 4; /* faulthandler prints "line N in FUNC" (N may be "???"), without the comma */
            break;
        }
    if (!in)
        return 0;
    *func = in;
    *func_len = 0;
    while (in + *func_len < msg + n && !isspace((unsigned char)in[*func_len]))
        ++*func_len;
    return 1;
}

static void handle_frame(scanner *sc, const char *key, const char *msg, size_t n, size_t line_end, uint64_t line)
{
    const char *path, *in;
    size_t path_len, func_len;
    if (!scan_parse_frame(msg, n, &path, &path_len, &in, &func_len))
        return;
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

/* A faulthandler stack is printed below its failure: it may name the phase of the last failure on its
 * stream when that one had none (phase_late; the burst table knows the findings of this run). */
static void late_phase(scanner *sc, const char *key)
{
    const burst *last = NULL;
    for (size_t i = 0; i < sc->n_bursts; i++)
        if (strcmp(sc->bursts[i].key, key) == 0 && (!last || sc->bursts[i].line > last->line))
            last = &sc->bursts[i];
    phase_answer ans;
    if (last && last->finding >= 0 && (size_t)last->finding < sc->st->n &&
        (sc->st->f[last->finding].phase == PH_UNKNOWN || sc->st->f[last->finding].phase_weak) && phase_late(sc->ps, key, last->line, &ans) &&
        story_set_phase(sc->st, last->finding, ans.phase, ans.evidence, ans.framework) != 0)
        sc->status = OOMSCAN_ERR_NOMEM;
}

/* A late marker (Ray's memory table row of the killed task, printed below the kill message) names the
 * phase of the stream's last failure when that one has none or only a weak one, is at most `reach`
 * lines above, and, when the failure knows its pid, the row starts with that pid. */
static void late_marker(scanner *sc, const char *key, size_t mi, const char *msg, size_t msg_len, uint64_t line)
{
    const pdb_marker *mk = &sc->db->markers[mi];
    const burst *last = NULL;
    for (size_t i = 0; i < sc->n_bursts; i++)
        if (strcmp(sc->bursts[i].key, key) == 0 && (!last || sc->bursts[i].line > last->line))
            last = &sc->bursts[i];
    if (!last || last->finding < 0 || (size_t)last->finding >= sc->st->n || line < last->line ||
        line - last->line > (uint64_t)mk->reach)
        return;
    const finding *f = &sc->st->f[last->finding];
    if (f->phase != PH_UNKNOWN && !f->phase_weak)
        return;
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(f->memory, "pid");
    if (cJSON_IsNumber(pid)) {
        char want[32];
        snprintf(want, sizeof want, "%.0f", pid->valuedouble);
        size_t k = 0;
        while (k < msg_len && (msg[k] == ' ' || msg[k] == '\t'))
            k++;
        size_t wl = strlen(want);
        if (msg_len - k <= wl || memcmp(msg + k, want, wl) != 0 || isdigit((unsigned char)msg[k + wl]))
            return;
    }
    char ev[256];
    snprintf(ev, sizeof ev, "\"%s\" in the row of the killed task, %llu line(s) after the failure", mk->literal,
             (unsigned long long)(line - last->line));
    if (story_set_phase(sc->st, last->finding, (tax_phase)mk->phase, ev, mk->framework) != 0)
        sc->status = OOMSCAN_ERR_NOMEM;
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

static void resolve_deferred_time(scanner *sc);

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static void process_line(scanner *sc)
{
    const pdb *db = sc->db;
    size_t start = sc->cur_start, end = sc->cur_end;
    uint64_t line = line_number_at(sc, start);
    resolve_deferred_time(sc); /* earlier lines' time first: this line's own time then wins */
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

    size_t cands[MAX_LINE_TARGETS], cfgs[MAX_LINE_TARGETS];
    size_t nc = 0, ncfg = 0;
    for (size_t i = 0; i < sc->n_cur; i++) {
        const pdb_literal *lit = &db->literals[sc->cur_targets[i]];
        for (size_t k = 0; k < lit->n_targets; k++) {
            const pdb_target *tg = &lit->targets[k];
            switch (tg->kind) {
            case LIT_TRACEBACK:
                if (tg->index)
                    phase_stack_header(sc->ps, key, msg, msg_len, line);
                else
                    phase_traceback(sc->ps, key, line);
                break;
            case LIT_FRAME:
                handle_frame(sc, key, msg, msg_len, end, line);
                late_phase(sc, key);
                break;
            case LIT_MARKER:
                if (db->markers[tg->index].late)
                    late_marker(sc, key, tg->index, msg, msg_len, line);
                phase_marker(sc->ps, tg->index, line); /* a late one only goes to its own slot */
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
            case LIT_CONFIG:
                if (ncfg < MAX_LINE_TARGETS)
                    cfgs[ncfg++] = tg->index;
                break;
            }
        }
    }
    /* printed settings (config.h), read in the database's order of setting names */
    qsort(cfgs, ncfg, sizeof *cfgs, cmp_size);
    for (size_t i = 0; i < ncfg; i++)
        if ((i == 0 || cfgs[i] != cfgs[i - 1]) &&
            config_capture(&sc->st->config, sc->cfg, db->config_lits[cfgs[i]], (const char *)sc->buf, sc->base, start,
                           end, sc->src->job_id, sc->src->path, line) < 0)
            sc->status = OOMSCAN_ERR_NOMEM;
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
                /* keep the winner apart: the next try reuses the lower half */
                memcpy(sc->join + JOIN_CAP, sc->join, at + cl);
                text = sc->join + JOIN_CAP;
                text_len = at + cl;
            }
        }
        /* keep the space-less join as the base for a third line: terminals cut without spaces */
        memcpy(sc->join + jl, cont, cl);
        jl += cl;
        le = ne;
        if (pi >= 0 && text == msg)
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
    /* Numbers the message states on its next lines (Ray's ActorDiedError pid/ip, srun's step id):
     * the pattern's "continuation" regexes run on up to cont_lines lines, all kept in the buffer. */
    size_t cs, ce, cend = end;
    for (int k = 0; k < p->cont_lines && next_line(sc->buf, sc->len, cend, &cs, &ce); k++, cend = ce)
        if (matcher_continuation(sc->m, (size_t)pi, (const char *)sc->buf + cs, ce - cs, mem) < 0) {
            cJSON_Delete(mem);
            sc->status = OOMSCAN_ERR_NOMEM;
            return;
        }

    /* A CUDA OOM message is read clause by clause too (base/values.c): whatever the PyTorch version,
     * and over the next lines when a terminal cut it (same prefix stripped, joined without a space). */
    if (p->cls == CLS_CUDA_OOM) {
        char oom[4096];
        size_t ol = text_len < sizeof oom ? text_len : sizeof oom;
        memcpy(oom, text, ol);
        size_t on = end, os, oe;
        for (int k = 0; k < 4 && text == msg && next_line(sc->buf, sc->len, on, &os, &oe); k++, on = oe) {
            if (strstr_n(oom, ol, "unallocated") || strstr_n(oom, ol, "by PyTorch)") || strstr_n(oom, ol, "cached)"))
                break;
            size_t cl;
            line_ctx cc;
            const char *cont = matcher_strip(sc->m, (const char *)sc->buf + os, oe - os, &cl, &cc);
            if (cl == 0 || ol + cl > sizeof oom || (cl >= 9 && memcmp(cont, "Traceback", 9) == 0) ||
                (cl >= 6 && memcmp(cont, "  File", 6) == 0))
                break;
            memcpy(oom + ol, cont, cl);
            ol += cl;
        }
        values_cuda_oom_clauses(oom, ol, mem);
    }

    phase_answer ans;
    phase_decide_class(sc->ps, key, line, p->phase, p->engine, (int)p->cls, &ans);

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
            (sc->st->f[b->finding].phase == ans.phase || ans.phase == PH_UNKNOWN ||
             sc->st->f[b->finding].phase == PH_UNKNOWN))
            merge = b->finding;
    }

    /* A later line of a burst may name the phase its first line could not (Ray prints the exception
     * above the task's traceback and again below it): story_add then gives the finding that phase. */
    story_event ev = {
        .pattern = p,
        .phase = merge >= 0 && sc->st->f[merge].phase != PH_UNKNOWN ? sc->st->f[merge].phase : ans.phase,
        .phase_weak = merge >= 0 && sc->st->f[merge].phase != PH_UNKNOWN ? sc->st->f[merge].phase_weak : ans.weak,
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

/* End of the line holding pos (its first terminator at or after pos), within [pos, hi). */
static size_t find_eol(const unsigned char *b, size_t pos, size_t hi)
{
    size_t i = pos;
#if defined(__SSE2__)
    const __m128i lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
    for (; i + 16 <= hi; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(b + i));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, lf), _mm_cmpeq_epi8(v, cr)));
        if (m)
            return i + (size_t)__builtin_ctz(m);
    }
#endif
    while (i < hi && b[i] != '\n' && b[i] != '\r')
        i++;
    return i;
}

/* Read the timestamps of the deferred cheap lines, newest first, until one has a time: exactly what
 * stripping each of them in order would have left in last_time. */
static void resolve_deferred_time(scanner *sc)
{
    while (sc->n_deferred > 0) {
        size_t pos = sc->deferred[--sc->n_deferred], s, e, msg_len;
        line_bounds(sc->buf, 0, sc->region_end, pos, &s, &e);
        line_ctx ctx;
        matcher_strip(sc->m, (const char *)sc->buf + s, e - s, &msg_len, &ctx);
        timefmt t;
        if (ctx.time[0] && timefmt_parse(ctx.time, strlen(ctx.time), &t) == 0) {
            sc->last_time = t;
            sc->have_time = 1;
            break;
        }
    }
    sc->n_deferred = 0;
}

/* The hit line is over: run its full work, or remember it for its timestamp. */
static void close_line(scanner *sc)
{
    if (sc->line_end == 0)
        return;
    if (sc->cur_open) {
        process_line(sc);
        sc->cur_open = 0;
    } else {
        if (sc->n_deferred == DEFERRED_CAP)
            resolve_deferred_time(sc); /* newest first, so resolving early changes nothing */
        sc->deferred[sc->n_deferred++] = sc->line_pos;
    }
    sc->line_end = 0;
}

/* A printed setting (config.h), read where the prefilter found its name: the line is neither
 * stripped nor matched, so a log that echoes settings stays on the fast path. */
static void capture_setting(scanner *sc, size_t cfg, size_t pos)
{
    size_t s, e;
    line_bounds(sc->buf, 0, sc->region_end, pos, &s, &e);
    if (config_capture(&sc->st->config, sc->cfg, sc->db->config_lits[cfg], (const char *)sc->buf, sc->base, s, e,
                       sc->src->job_id, sc->src->path, line_number_at(sc, s)) < 0)
        sc->status = OOMSCAN_ERR_NOMEM;
}

static size_t on_hit(void *ud, size_t lit, size_t pos)
{
    scanner *sc = ud;
    if (sc->line_end == 0 || pos >= sc->line_end) {
        close_line(sc);
        if (sc->status)
            return SIZE_MAX;
        sc->line_end = find_eol(sc->buf, pos, sc->region_end);
        sc->line_pos = pos;
        sc->n_seen = 0;
    }
    /* one literal acts once per line, however often it occurs there */
    for (size_t i = 0; i < sc->n_seen; i++)
        if (sc->seen[i] == lit)
            return pos + 1;
    if (sc->n_seen == MAX_LINE_TARGETS)
        return pos + 1; /* as many literals as one line may carry: the rest adds nothing */
    sc->seen[sc->n_seen++] = lit;
    if (sc->cheap[lit]) {
        const pdb_literal *l = &sc->db->literals[lit];
        for (size_t k = 0; k < l->n_targets; k++) {
            const pdb_target *tg = &l->targets[k];
            if (tg->kind == LIT_MARKER)
                phase_marker(sc->ps, tg->index, line_number_at(sc, pos));
            else if (tg->kind == LIT_FRAMEWORK)
                phase_framework_vote(sc->ps, sc->db->fw_rules[tg->index].framework);
            else
                capture_setting(sc, tg->index, pos);
        }
        return pos + 1;
    }
    if (!sc->cur_open) {
        size_t e;
        line_bounds(sc->buf, 0, sc->region_end, pos, &sc->cur_start, &e);
        sc->cur_end = sc->line_end;
        sc->cur_open = 1;
        sc->n_cur = 0;
    }
    if (sc->n_cur < MAX_LINE_TARGETS)
        sc->cur_targets[sc->n_cur++] = lit;
    return pos + 1;
}

static size_t split_collect(void *ud, size_t lit, size_t pos)
{
    splitter *h = ud;
    if (h->n == SPLIT_HITS) {
        /* full: hand back everything before this position; the scanner's thread scans on from it */
        h->stopped_at = pos;
        while (h->n > 0 && h->hits[h->n - 1].pos == pos)
            h->n--;
        return SIZE_MAX;
    }
    h->hits[h->n].pos = pos;
    h->hits[h->n].lit = lit;
    h->n++;
    return pos + 1; /* on_hit never skips either: the replay equals a direct scan */
}

static void *split_main(void *arg)
{
    splitter *h = arg;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (!h->job && !h->quit)
            pthread_cond_wait(&h->cv, &h->mu);
        if (h->quit)
            break;
        pthread_mutex_unlock(&h->mu);
        h->n = 0;
        h->stopped_at = SIZE_MAX;
        prefilter_scan(h->pf, h->buf, h->from, h->end, h->avail, split_collect, h);
        pthread_mutex_lock(&h->mu);
        h->job = 0;
        pthread_cond_broadcast(&h->cv);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

void scanner_regex_budget(scanner *sc, uint64_t budget) { matcher_budget_reset(sc->m, budget); }
const char *scanner_regex_note(const scanner *sc) { return matcher_budget_note(sc->m); }

int scanner_use_helper(scanner *sc)
{
    if (sc->split)
        return 0;
    splitter *h = calloc(1, sizeof *h);
    if (!h)
        return -1;
    h->hits = malloc(SPLIT_HITS * sizeof *h->hits);
    if (!h->hits || pthread_mutex_init(&h->mu, NULL) != 0) {
        free(h->hits);
        free(h);
        return -1;
    }
    if (pthread_cond_init(&h->cv, NULL) != 0) {
        pthread_mutex_destroy(&h->mu);
        free(h->hits);
        free(h);
        return -1;
    }
    if (pthread_create(&h->thread, NULL, split_main, h) != 0) {
        pthread_cond_destroy(&h->cv);
        pthread_mutex_destroy(&h->mu);
        free(h->hits);
        free(h);
        return -1;
    }
    sc->split = h;
    return 0;
}

/* Every hit of [0, end) to on_hit, in order: in two halves on two threads when a helper is there. */
static void prefilter_region(scanner *sc, size_t end, size_t avail)
{
    const prefilter *pf = sc->db->pf;
    splitter *h = sc->split;
    if (!h || end < 2 * SPLIT_MIN) {
        prefilter_scan(pf, sc->buf, 0, end, avail, on_hit, sc);
        return;
    }
    /* The scanner's thread also counts lines, runs the hits and replays the helper's ones afterwards
     * (a third of a scan's time, measured): giving it 40% of the bytes evens the two threads out. */
    size_t mid = end / 5 * 2;
    pthread_mutex_lock(&h->mu);
    h->pf = pf;
    h->buf = sc->buf;
    h->from = mid;
    h->end = end;
    h->avail = avail;
    h->job = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    prefilter_scan(pf, sc->buf, 0, mid, avail, on_hit, sc);
    /* the helper reads the buffer: wait for it even when this half stopped early */
    pthread_mutex_lock(&h->mu);
    while (h->job)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    for (size_t i = 0; i < h->n; i++)
        if (sc->status || on_hit(sc, h->hits[i].lit, h->hits[i].pos) == SIZE_MAX)
            return;
    if (!sc->status && h->stopped_at != SIZE_MAX)
        prefilter_scan(pf, sc->buf, h->stopped_at, end, avail, on_hit, sc);
}

static void scan_region(scanner *sc, size_t end, size_t avail)
{
    sc->region_end = end;
    sc->cur_open = 0;
    sc->line_end = 0;
    sc->n_deferred = 0;
    prefilter_region(sc, end, avail);
    if (!sc->status)
        close_line(sc);
    /* the buffer moves on: read the pending timestamps while their lines are here */
    if (!sc->status)
        resolve_deferred_time(sc);
    sc->cur_open = 0;
    sc->line_end = 0;
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
    sc->base = src->base_offset;
    sc->counted_to = 0;
    sc->lines_before = src->base_line;
    sc->have_time = src->time0 != NULL;
    if (src->time0)
        sc->last_time = *src->time0;
    sc->n_bursts = 0;
    config_tracker_reset(sc->cfg);
    int eof = 0;
    int in_long_line = 0;
    uint64_t total = 0;
    int idle = 0; /* the reader said SCAN_READ_IDLE: scan all complete lines before reading again */
    while (!sc->status) {
        while (!eof && !idle && sc->len < READ_CHUNK) {
            ssize_t n = rd(rd_ud, sc->buf + sc->len, BUF_CAP - sc->len);
            if (n == SCAN_READ_IDLE) {
                idle = 1;
                break;
            }
            if (n <= 0) {
                eof = 1;
                res->read_error = n < 0;
                break;
            }
            sc->len += (size_t)n;
            total += (uint64_t)n;
            if (src->eager)
                break; /* a live stream: what came is all there is for now */
        }
        if (progress)
            progress(progress_ud, total);
        if (sc->len == 0) {
            if (idle) {
                idle = 0;
                continue;
            }
            break;
        }
        size_t end = safe_end(sc, eof);
        if (idle && !eof) {
            /* the stream went quiet: scan every complete line, keep only an unfinished one */
            size_t hi = sc->buf[sc->len - 1] == '\r' ? sc->len - 1 : sc->len;
            for (end = hi; end > 0 && sc->buf[end - 1] != '\n' && sc->buf[end - 1] != '\r'; end--)
                ;
        }
        if (eof && sc->len > SCAN_LINE_CAP && !memchr(sc->buf, '\n', sc->len) && !memchr(sc->buf, '\r', sc->len))
            end = 0; /* the tail is one over-long line: cut it like any other */
        if (end == 0 && idle) {
            idle = 0; /* only an unfinished line: wait for the rest of it */
            continue;
        }
        if (end == 0) {
            if (sc->len < BUF_CAP && !eof && sc->len <= SCAN_LINE_CAP) {
                /* need more bytes for a complete line: read on */
                ssize_t n = rd(rd_ud, sc->buf + sc->len, BUF_CAP - sc->len);
                if (n == SCAN_READ_IDLE) {
                    idle = 1;
                    continue;
                }
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
        config_tracker_pass(sc->cfg, (const char *)sc->buf, sc->base, end);
        sc->last_byte = sc->buf[end - 1];
        size_t rest = sc->len - end;
        memmove(sc->buf, sc->buf + end, rest);
        sc->base += end;
        sc->len = rest;
        sc->counted_to = 0;
        idle = 0;
        if (eof && rest == 0)
            break;
    }
    res->bytes = sc->base - src->base_offset;
    /* the last line counts even without a terminator */
    res->lines = sc->lines_before - src->base_line;
    if (sc->base > src->base_offset && sc->last_byte != '\n' && sc->last_byte != '\r')
        res->lines++;
    res->have_time = sc->have_time;
    res->last_time = sc->last_time;
    return sc->status;
}
