/* classify.c - a candidate line -> context, settings, or the best failure pattern -> an event for the sink. */
#include "match/classify.h"
#include "match/telemetry.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/values.h"
#include "match/config.h"
#include "match/lines.h"
#include "match/version.h"

#define JOIN_MAX 2     /* continuation lines tried for a wrapped message */
#define JOIN_CAP 8192
#define EVIDENCE_CAP 2000
#define BURST_LINES 40 /* a second wording of the same failure within this many lines joins it */
#define BURSTS 8

typedef struct {
    int cls; /* class of the last failure on this stream key */
    char key[24];
    uint64_t line;
    long finding;
    int from_frames; /* the finding's phase came from its own traceback (else a marker or nothing) */
    uint64_t follow_tb; /* the header line of the traceback printed after it whose answer it holds, 0 none */
} burst;

struct classifier {
    const pdb *db;
    matcher *m;
    char *join; /* 2 * JOIN_CAP: joined messages of a wrapped failure; the best join so far in the upper half */
    char *evid; /* EVIDENCE_CAP + 8: sanitised evidence */
    config_tracker *cfg; /* the brackets of a settings dump the scan has passed (config.h) */
    /* per source */
    const scan_source *src;
    phase_state *ps;
    scan_sink sink; /* where failures go (event.h) */
    burst bursts[BURSTS];
    size_t n_bursts;
    /* The job's settings store, once the sink made it: asked once per source, not per setting a log
     * prints (the sink's lookup by job was a sixth of a settings line's cost). Valid for the source:
     * the sink's stores live until the story merges them, after the scan. */
    struct config_store *store;
    /* Settings named at or past this stream offset are not read here: the scanner reads them in its
     * windows (classify_window_setting). UINT64_MAX: everywhere. */
    uint64_t settings_until;
    /* failures added since classify_failures_take: how many, the first's and last's line offsets */
    size_t n_fail;
    uint64_t fail_first, fail_last;
    telemetry_acc *tel; /* the source's memory lines (telemetry.h), written to the job's store at its end */
};

/* What one line is, once stripped: the message, what its prefixes said, its stream key. */
typedef struct {
    size_t start, end; /* the raw line in the view */
    uint64_t line;
    const char *msg;
    size_t msg_len;
    line_ctx ctx;
    char key[24];
    int own_time; /* the line carries its own time stamp */
} line_info;

classifier *classifier_new(const pdb *db, matcher *m)
{
    classifier *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->db = db;
    c->m = m;
    c->join = malloc(2 * JOIN_CAP);
    c->evid = malloc(EVIDENCE_CAP + 8);
    c->cfg = config_tracker_new();
    if (!c->join || !c->evid || !c->cfg) {
        classifier_free(c);
        return NULL;
    }
    return c;
}

void classifier_free(classifier *c)
{
    if (!c)
        return;
    free(c->join);
    free(c->evid);
    config_tracker_free(c->cfg);
    telemetry_acc_free(c->tel);
    free(c);
}

void classifier_begin(classifier *c, const scan_source *src, phase_state *ps, const scan_sink *sink)
{
    c->src = src;
    c->ps = ps;
    c->sink = *sink;
    c->n_bursts = 0;
    c->store = NULL;
    c->settings_until = UINT64_MAX;
    c->n_fail = 0;
    config_tracker_reset(c->cfg);
    telemetry_acc_reset(c->tel);
}


void classify_settings_until(classifier *c, uint64_t off) { c->settings_until = off; }

size_t classify_failures_take(classifier *c, uint64_t *first, uint64_t *last)
{
    size_t n = c->n_fail;
    *first = c->fail_first;
    *last = c->fail_last;
    c->n_fail = 0;
    return n;
}

void classify_pass(classifier *c, const scan_view *v, size_t end)
{
    config_tracker_pass(c->cfg, (const char *)v->buf, v->base, end);
}

/* ---- context and settings ------------------------------------------------------------------ */

int classify_is_cheap(const pdb *db, size_t lit)
{
    int settings_only = 1, votes_only = 1;
    for (size_t k = 0; k < db->literals[lit].n_targets; k++) {
        pdb_lit_kind kind = db->literals[lit].targets[k].kind;
        if (kind != LIT_MARKER && kind != LIT_FRAMEWORK && kind != LIT_CONFIG && kind != LIT_VERSION &&
            kind != LIT_TELEMETRY)
            return 0;
        if (kind == LIT_MARKER && db->markers[db->literals[lit].targets[k].index].late)
            return 0; /* a late marker reads its line (the killed task's PID) */
        settings_only &= kind == LIT_CONFIG;
        votes_only &= kind == LIT_FRAMEWORK;
    }
    return settings_only ? CHEAP_SETTINGS : votes_only ? CHEAP_VOTES : CHEAP;
}

/* Where this source's settings go: the sink's store for its job, remembered once the sink has made it
 * (a sink may leave it to the first read: then it is asked again). NULL out of memory. */
static config_store **job_store(classifier *c)
{
    if (c->store)
        return &c->store;
    config_store **st = c->sink.settings(c->sink.ud, c->src->job_id);
    if (st && *st) {
        c->store = *st;
        return &c->store;
    }
    return st;
}

oomscan_status classify_end(classifier *c)
{
    if (!telemetry_acc_any(c->tel))
        return OOMSCAN_OK;
    config_store **st = job_store(c);
    return !st || telemetry_acc_flush(c->tel, st, c->src->job_id, c->src->path) < 0 ? OOMSCAN_ERR_NOMEM : OOMSCAN_OK;
}

/* Setting `cfg` (index into db->config_lits) wherever it is printed in the line [start, end). */
static oomscan_status capture_setting(classifier *c, const scan_view *v, size_t cfg, size_t start, size_t end,
                                      uint64_t line)
{
    if (v->base + start >= c->settings_until)
        return OOMSCAN_OK; /* the scanner's window reads it, or nothing does */
    config_store **st = job_store(c);
    return !st || config_capture(st, c->cfg, c->db->config_lits[cfg], (const char *)v->buf, v->base, start, end,
                          c->src->job_id, c->src->path, line) < 0
               ? OOMSCAN_ERR_NOMEM
               : OOMSCAN_OK;
}

/* A version (version.h) printed in the line [start, end), read by rule `idx` into the job's settings. */
static oomscan_status capture_version(classifier *c, const scan_view *v, size_t idx, size_t start, size_t end,
                                      uint64_t line)
{
    config_store **st = job_store(c);
    return !st || version_capture(st, &c->db->versions[idx], (const char *)v->buf + start, end - start,
                           c->src->job_id, c->src->path, line) < 0
               ? OOMSCAN_ERR_NOMEM
               : OOMSCAN_OK;
}

/* A memory line of the job's own (match/telemetry.h): its figures into the source's series, in constant
 * time (classify_end writes them to the job's store). A line with two of the literals (verl's step line
 * names two) is read once per literal; the second finds its point already the last. */
static oomscan_status capture_telemetry(classifier *c, const scan_view *v, size_t start, size_t end, uint64_t line)
{
    if (!c->tel && !(c->tel = telemetry_acc_new()))
        return OOMSCAN_ERR_NOMEM;
    return telemetry_acc_line(c->tel, (const char *)v->buf + start, end - start, c->src->rank, line) < 0
               ? OOMSCAN_ERR_NOMEM
               : OOMSCAN_OK;
}

oomscan_status classify_setting(classifier *c, const scan_view *v, const char *name, size_t len, size_t pos,
                                uint64_t line, size_t *ls, size_t le, const config_occurrence *occ)
{
    /* a printed setting is read where the prefilter found its name (its first occurrence in the line:
     * the scanner hands each literal over once per line, at its first hit): a log that echoes
     * settings stays on the fast path */
    if (v->base + pos >= c->settings_until)
        return OOMSCAN_OK; /* the scanner's window reads it, or nothing does */
    if (*ls == SIZE_MAX)
        *ls = lines_bol(v->buf, 0, pos);
    config_store **st = job_store(c);
    if (!st || config_capture_from(st, c->cfg, name, len, (const char *)v->buf, v->base, *ls, pos, le, occ,
                                   c->src->job_id, c->src->path, line) < 0)
        return OOMSCAN_ERR_NOMEM;
    return OOMSCAN_OK;
}

oomscan_status classify_window_setting(classifier *c, config_tracker *tr, const scan_view *v, size_t lit, size_t pos,
                                       uint64_t line, size_t ls, size_t le)
{
    const pdb_literal *l = &c->db->literals[lit];
    for (size_t k = 0; k < l->n_targets; k++) {
        if (l->targets[k].kind != LIT_CONFIG)
            continue;
        const char *name = c->db->config_lits[l->targets[k].index];
        config_store **st = job_store(c);
        if (!st || config_capture_from(st, tr, name, strlen(name), (const char *)v->buf, v->base, ls, pos, le, NULL,
                                       c->src->job_id, c->src->path, line) < 0)
            return OOMSCAN_ERR_NOMEM;
    }
    return OOMSCAN_OK;
}

/* A task marker's line: the identifier after its literal is read by the lexicon (phase_task_marker). */
static void task_marker(classifier *c, const char *line, size_t n, size_t marker, uint64_t lineno)
{
    const char *lit = c->db->markers[marker].literal;
    size_t k = strlen(lit);
    const char *p = memmem(line, n, lit, k);
    if (p)
        phase_task_marker(c->ps, p + k, n - (size_t)(p + k - line), lineno);
}

oomscan_status classify_cheap(classifier *c, const scan_view *v, size_t lit, size_t pos, uint64_t line, size_t *ls,
                              size_t le)
{
    const pdb_literal *l = &c->db->literals[lit];
    for (size_t k = 0; k < l->n_targets; k++) {
        const pdb_target *tg = &l->targets[k];
        if (tg->kind == LIT_MARKER) {
            if (c->db->markers[tg->index].lexicon) {
                if (*ls == SIZE_MAX)
                    *ls = lines_bol(v->buf, 0, pos);
                task_marker(c, (const char *)v->buf + *ls, le - *ls, tg->index, line);
            }
            phase_marker(c->ps, tg->index, line);
            continue;
        }
        if (tg->kind == LIT_FRAMEWORK) {
            phase_framework_vote(c->ps, c->db->fw_rules[tg->index].framework);
            continue;
        }
        if (tg->kind == LIT_VERSION) {
            if (*ls == SIZE_MAX)
                *ls = lines_bol(v->buf, 0, pos);
            if (capture_version(c, v, tg->index, *ls, le, line))
                return OOMSCAN_ERR_NOMEM;
        } else if (tg->kind == LIT_TELEMETRY) {
            if (*ls == SIZE_MAX)
                *ls = lines_bol(v->buf, 0, pos);
            if (capture_telemetry(c, v, *ls, le, line))
                return OOMSCAN_ERR_NOMEM;
        } else {
            const char *name = c->db->config_lits[tg->index];
            oomscan_status st = classify_setting(c, v, name, strlen(name), pos, line, ls, le, NULL);
            if (st)
                return st;
        }
    }
    return OOMSCAN_OK;
}

static void stream_key(const line_ctx *x, const scan_source *src, char *key, size_t cap)
{
    /* keys are short ids; cut them rather than warn: a collision only merges two tracebacks */
    /* torchrun's [default3]: names a local rank: that worker's own stream too */
    const char *id = x->rank[0] ? x->rank : x->local_rank[0] ? x->local_rank : x->pid[0] ? x->pid : src->rank;
    char kind = x->rank[0] ? 'r' : x->local_rank[0] ? 'l' : x->pid[0] ? 'p' : 'r';
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

#define FRAME_WRAP_LINES 2   /* lines a terminal may have wrapped one frame line into, after its first */
#define FRAME_JOIN_CAP 1024

/* Whether a frame line that did not parse was cut by a terminal's wrap: its path's closing quote is
 * still to come, or the line stops right after its line number (`", line 130, ` + `in start`). */
static int frame_cut(const char *msg, size_t n)
{
    const char *p = memchr(msg, '"', n);
    const char *q = p ? memchr(p + 1, '"', n - (size_t)(p + 1 - msg)) : NULL;
    if (!p)
        return 0;
    if (!q)
        return 1;
    size_t r = (size_t)(q + 1 - msg);
    const char *tail = ", line ";
    if (n - r < 7 || memcmp(msg + r, tail, 7) != 0)
        return 0;
    for (r += 7; r < n && isdigit((unsigned char)msg[r]); r++)
        ;
    if (r < n && msg[r] == ',')
        r++;
    while (r < n && msg[r] == ' ')
        r++;
    return r == n;
}

static void handle_frame(classifier *c, const scan_view *v, const line_info *li)
{
    const char *path, *in;
    size_t path_len, func_len, end = li->end, ns, ne;
    const char *msg = li->msg;
    size_t n = li->msg_len;
    char joined[FRAME_JOIN_CAP];
    line_ctx cctx;
    int ok = lines_parse_frame(msg, n, &path, &path_len, &in, &func_len);
    /* A terminal wraps at its width without a break of its own (`.../torch/utils/data/dataload` +
     * `er.py", line 301, in __iter__`): the lines after a cut frame are joined to it as they are. */
    for (int k = 0; !ok && k < FRAME_WRAP_LINES && frame_cut(msg, n) && lines_next(v->buf, v->len, end, &ns, &ne);
         k++) {
        size_t cl;
        const char *cont = matcher_strip(c->m, (const char *)v->buf + ns, ne - ns, &cl, &cctx);
        if (cl == 0 || n + cl > sizeof joined || (cl >= 6 && memmem(cont, cl < 16 ? cl : 16, "File \"", 6)))
            break;
        if (msg != joined)
            memcpy(joined, msg, n);
        memcpy(joined + n, cont, cl);
        msg = joined;
        n += cl;
        end = ne;
        ok = lines_parse_frame(msg, n, &path, &path_len, &in, &func_len);
    }
    if (!ok)
        return;
    /* The code line is printed under the frame. */
    const char *code = NULL;
    size_t code_len = 0;
    if (lines_next(v->buf, v->len, end, &ns, &ne)) {
        code = matcher_strip(c->m, (const char *)v->buf + ns, ne - ns, &code_len, &cctx);
        while (code_len && isspace((unsigned char)*code)) {
            code++;
            code_len--;
        }
        if (code_len >= 6 && memcmp(code, "File \"", 6) == 0)
            code = NULL, code_len = 0;
    }
    phase_frame(c->ps, li->key, path, path_len, in, func_len, code, code_len, li->line);
}

/* A faulthandler stack is printed below its failure: it may name the phase of the last failure on its
 * stream when that one had none (phase_late; the burst table knows the findings of this source). */
static oomscan_status late_phase(classifier *c, const char *key)
{
    const burst *last = NULL;
    for (size_t i = 0; i < c->n_bursts; i++)
        if (strcmp(c->bursts[i].key, key) == 0 && (!last || c->bursts[i].line > last->line))
            last = &c->bursts[i];
    phase_answer ans;
    tax_phase ph;
    int weak;
    const cJSON *mem;
    if (last && c->sink.phase_of(c->sink.ud, last->finding, &ph, &weak, &mem) == 0 && (ph == PH_UNKNOWN || weak) &&
        phase_late(c->ps, key, last->line, &ans) &&
        c->sink.set_phase(c->sink.ud, last->finding, ans.phase, ans.evidence, ans.framework,
                          SINK_PHASE_FRAMES | (ans.weak ? SINK_PHASE_WEAK : 0)) != 0)
        return OOMSCAN_ERR_NOMEM;
    return OOMSCAN_OK;
}

/* A traceback printed just after its failure (phase_following): its frames so far name the phase of
 * the failure above it, the stream's own last failure first, else the last failure of any stream a line
 * or two above (vLLM's worker prefix on the traceback, the rank's on the allocator's line). The answer
 * replaces one this traceback gave before (inner frames refine it), else only none or a weak one. */
static oomscan_status following_phase(classifier *c, const char *key)
{
    burst *own = NULL, *any = NULL;
    for (size_t i = 0; i < c->n_bursts; i++) {
        burst *b = &c->bursts[i];
        if (strcmp(b->key, key) == 0 && (!own || b->line > own->line))
            own = b;
        if (!any || b->line > any->line)
            any = b;
    }
    phase_answer ans;
    uint64_t tb = 0;
    burst *last = own && phase_following(c->ps, key, own->line, &ans, &tb) ? own
                  : any && any != own && phase_following(c->ps, key, any->line, &ans, &tb) ? any
                                                                                           : NULL;
    tax_phase ph;
    int weak;
    const cJSON *mem;
    if (!last || c->sink.phase_of(c->sink.ud, last->finding, &ph, &weak, &mem) != 0)
        return OOMSCAN_OK;
    int mine = last->follow_tb == tb;
    if (!(mine || ph == PH_UNKNOWN || (weak && !ans.weak)))
        return OOMSCAN_OK; /* (its own answer is given again: an inner frame of the same tier is closer) */
    unsigned flags = SINK_PHASE_FRAMES | (ans.weak ? SINK_PHASE_WEAK : 0) | (mine ? SINK_PHASE_REPLACE : 0);
    if (c->sink.set_phase(c->sink.ud, last->finding, ans.phase, ans.evidence, ans.framework, flags) != 0)
        return OOMSCAN_ERR_NOMEM;
    last->follow_tb = tb;
    return OOMSCAN_OK;
}

/* A late marker (Ray's memory table row of the killed task, printed below the kill message) names the
 * phase of the stream's last failure when that one has none or only a weak one, is at most `reach`
 * lines above, and, when the failure knows its pid, the row starts with that pid. */
static oomscan_status late_marker(classifier *c, const line_info *li, size_t mi)
{
    const pdb_marker *mk = &c->db->markers[mi];
    const burst *last = NULL;
    for (size_t i = 0; i < c->n_bursts; i++)
        if (strcmp(c->bursts[i].key, li->key) == 0 && (!last || c->bursts[i].line > last->line))
            last = &c->bursts[i];
    tax_phase ph;
    int weak;
    const cJSON *mem;
    if (!last || c->sink.phase_of(c->sink.ud, last->finding, &ph, &weak, &mem) != 0 || li->line < last->line ||
        li->line - last->line > (uint64_t)mk->reach)
        return OOMSCAN_OK;
    if (ph != PH_UNKNOWN && !weak)
        return OOMSCAN_OK;
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(mem, "pid");
    int in_row = cJSON_IsNumber(pid); /* the line must then be the killed task's row of a table */
    if (in_row) {
        char want[32];
        snprintf(want, sizeof want, "%.0f", pid->valuedouble);
        const char *msg = li->msg;
        size_t k = 0, msg_len = li->msg_len;
        while (k < msg_len && (msg[k] == ' ' || msg[k] == '\t'))
            k++;
        size_t wl = strlen(want);
        if (msg_len - k <= wl || memcmp(msg + k, want, wl) != 0 || isdigit((unsigned char)msg[k + wl]))
            return OOMSCAN_OK;
    }
    char ev[256];
    snprintf(ev, sizeof ev, "\"%s\"%s, %llu line(s) after the failure", mk->literal,
             in_row ? " in the row of the killed task" : "", (unsigned long long)(li->line - last->line));
    return c->sink.set_phase(c->sink.ud, last->finding, (tax_phase)mk->phase, ev, mk->framework, 0) != 0
               ? OOMSCAN_ERR_NOMEM
               : OOMSCAN_OK;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* Feed the context targets of the line's literals to the phase state and read its settings (in the
 * database's order of setting names); the failure patterns they lead to go into cands (*nc). */
static oomscan_status dispatch(classifier *c, const scan_view *v, const line_info *li, const size_t *lits, size_t n,
                               size_t *cands, size_t *nc)
{
    const pdb *db = c->db;
    size_t cfgs[CLASSIFY_MAX_TARGETS], ncfg = 0;
    oomscan_status st = OOMSCAN_OK;
    *nc = 0;
    for (size_t i = 0; i < n; i++) {
        const pdb_literal *lit = &db->literals[lits[i]];
        for (size_t k = 0; k < lit->n_targets; k++) {
            const pdb_target *tg = &lit->targets[k];
            switch (tg->kind) {
            case LIT_TRACEBACK:
                if (tg->index)
                    phase_stack_header(c->ps, li->key, li->msg, li->msg_len, li->line);
                else
                    phase_traceback(c->ps, li->key, li->line);
                break;
            case LIT_FRAME:
                handle_frame(c, v, li);
                if (late_phase(c, li->key) || following_phase(c, li->key))
                    st = OOMSCAN_ERR_NOMEM;
                break;
            case LIT_MARKER:
                if (db->markers[tg->index].late && late_marker(c, li, tg->index))
                    st = OOMSCAN_ERR_NOMEM;
                if (db->markers[tg->index].lexicon)
                    task_marker(c, (const char *)v->buf + li->start, li->end - li->start, tg->index, li->line);
                phase_marker(c->ps, tg->index, li->line); /* a late one only goes to its own slot */
                break;
            case LIT_FRAMEWORK:
                phase_framework_vote(c->ps, db->fw_rules[tg->index].framework);
                break;
            case LIT_PATTERN: {
                size_t j;
                for (j = 0; j < *nc && cands[j] != tg->index; j++)
                    ;
                if (j == *nc && *nc < CLASSIFY_MAX_TARGETS)
                    cands[(*nc)++] = tg->index;
                break;
            }
            case LIT_CONFIG:
                if (ncfg < CLASSIFY_MAX_TARGETS)
                    cfgs[ncfg++] = tg->index;
                break;
            case LIT_VERSION:
                if (capture_version(c, v, tg->index, li->start, li->end, li->line))
                    st = OOMSCAN_ERR_NOMEM;
                break;
            case LIT_TELEMETRY:
                if (capture_telemetry(c, v, li->start, li->end, li->line))
                    st = OOMSCAN_ERR_NOMEM;
                break;
            }
        }
    }
    qsort(cfgs, ncfg, sizeof *cfgs, cmp_size);
    for (size_t i = 0; i < ncfg; i++)
        if ((i == 0 || cfgs[i] != cfgs[i - 1]) && capture_setting(c, v, cfgs[i], li->start, li->end, li->line))
            st = OOMSCAN_ERR_NOMEM;
    return st;
}

/* ---- failures -------------------------------------------------------------------------------- */

/* Try every candidate pattern on text; best by severity, then captures, then match length. A match
 * must start before start_before: in a join, one that lies wholly in a later line is that line's own
 * (read again when that line is classified), not the end of this line's wrapped message. A pattern
 * with a frame condition ("in_traceback") is tried only when its hint is among `hints`. */
static long best_pattern(classifier *c, const size_t *cands, size_t nc, const char *text, size_t len,
                         size_t start_before, uint32_t hints, int *score)
{
    long best = -1;
    int best_caps = 0, best_sev = -1;
    size_t best_span = 0;
    for (size_t i = 0; i < nc; i++) {
        int h = c->db->patterns[cands[i]].tb_hint;
        if (h >= 0 && !(hints >> h & 1u))
            continue;
        int caps = matcher_try(c->m, cands[i], text, len);
        if (!caps)
            continue;
        size_t s, e;
        matcher_span(c->m, &s, &e);
        if (s >= start_before)
            continue;
        int sev = c->db->patterns[cands[i]].severity;
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

/* The pattern that explains the line best, or -1; *text and *text_len are what it matched: the
 * message itself, or the message joined with the lines after it (then in c->join's upper half). A
 * terminal or logger may have wrapped the message, even between a number and its unit: the joins are
 * tried with and without a space, and one wins only by explaining more. */
static long pick_pattern(classifier *c, const scan_view *v, const line_info *li, const size_t *cands, size_t nc,
                         const char **text, size_t *text_len)
{
    int score = 0;
    *text = li->msg;
    *text_len = li->msg_len;
    uint32_t hints = c->db->n_hints ? phase_traceback_hints(c->ps, li->key, li->line) : 0;
    long pi = best_pattern(c, cands, nc, li->msg, li->msg_len, SIZE_MAX, hints, &score);
    size_t ns, ne, le = li->end;
    size_t jl = li->msg_len < JOIN_CAP ? li->msg_len : JOIN_CAP, first = jl;
    memcpy(c->join, li->msg, jl);
    for (int k = 0; k < JOIN_MAX && lines_next(v->buf, v->len, le, &ns, &ne); k++) {
        size_t cl;
        line_ctx cc;
        const char *cont = matcher_strip(c->m, (const char *)v->buf + ns, ne - ns, &cl, &cc);
        if (cl == 0 || jl + cl + 1 > JOIN_CAP)
            break;
        for (int sep = 0; sep < 2; sep++) {
            size_t at = jl;
            if (sep)
                c->join[at++] = ' ';
            memcpy(c->join + at, cont, cl);
            int s2;
            long p2 = best_pattern(c, cands, nc, c->join, at + cl, first, hints, &s2);
            if (p2 >= 0 && (pi < 0 || s2 > score)) {
                pi = p2;
                score = s2;
                /* keep the winner apart: the next try reuses the lower half */
                memcpy(c->join + JOIN_CAP, c->join, at + cl);
                *text = c->join + JOIN_CAP;
                *text_len = at + cl;
            }
        }
        /* keep the space-less join as the base for a third line: terminals cut without spaces */
        memcpy(c->join + jl, cont, cl);
        jl += cl;
        le = ne;
        if (pi >= 0 && *text == li->msg)
            break;
    }
    return pi;
}

/* The values of pattern pi's match on text (matcher_try must have just matched it there; its span
 * goes to *ms, *me), plus those its "continuation" regexes read on the lines after the line (Ray's
 * ActorDiedError pid/ip, srun's step id; all kept in the buffer); *added counts the latter. NULL when
 * out of memory. */
static cJSON *pattern_values(classifier *c, const scan_view *v, const line_info *li, long pi, const char *text,
                             size_t text_len, size_t *ms, size_t *me, int *added)
{
    const pdb_pattern *p = &c->db->patterns[pi];
    cJSON *mem = cJSON_CreateObject();
    if (!mem || matcher_values(c->m, (size_t)pi, text, text_len, mem) != 0) {
        cJSON_Delete(mem);
        return NULL;
    }
    matcher_span(c->m, ms, me); /* before the continuation regexes clobber the match */
    size_t cs, ce, cend = li->end;
    *added = 0;
    for (int k = 0; k < p->cont_lines && lines_next(v->buf, v->len, cend, &cs, &ce); k++, cend = ce) {
        int n = matcher_continuation(c->m, (size_t)pi, (const char *)v->buf + cs, ce - cs, mem);
        if (n < 0) {
            cJSON_Delete(mem);
            return NULL;
        }
        *added += n;
    }
    return mem;
}

static int strstr_n(const char *h, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(h + i, needle, k) == 0)
            return 1;
    return 0;
}

/* A CUDA OOM message is read clause by clause too (base/values.c): whatever the PyTorch version,
 * and over the next lines when a terminal cut it (same prefix stripped, joined without a space). */
static void oom_clauses(classifier *c, const scan_view *v, const line_info *li, const char *text, size_t text_len,
                        cJSON *mem)
{
    char oom[4096];
    size_t ol = text_len < sizeof oom ? text_len : sizeof oom;
    memcpy(oom, text, ol);
    size_t on = li->end, os, oe;
    for (int k = 0; k < 4 && text == li->msg && lines_next(v->buf, v->len, on, &os, &oe); k++, on = oe) {
        if (strstr_n(oom, ol, "unallocated") || strstr_n(oom, ol, "by PyTorch)") || strstr_n(oom, ol, "cached)"))
            break;
        size_t cl;
        line_ctx cc;
        const char *cont = matcher_strip(c->m, (const char *)v->buf + os, oe - os, &cl, &cc);
        if (cl == 0 || ol + cl > sizeof oom || (cl >= 9 && memcmp(cont, "Traceback", 9) == 0) ||
            (cl >= 6 && memcmp(cont, "  File", 6) == 0))
            break;
        memcpy(oom + ol, cont, cl);
        ol += cl;
    }
    values_cuda_oom_clauses(oom, ol, mem);
}

/* The finding of this source a failure of class cls in phase ph on stream key joins: the same class
 * on the same stream within BURST_LINES lines, phases not contradicting. -1 none. */
/* The finding a failure on stream `key` at `line` repeats (the same class within BURST_LINES, with the
 * same phase or none on one side, or a phase from its own traceback where the finding's came from a
 * marker: the traceback then corrects it), -1 none. */
static long burst_of(const classifier *c, int cls, const char *key, uint64_t line, const phase_answer *a)
{
    tax_phase ph = a->phase;
    long merge = -1;
    for (size_t i = 0; i < c->n_bursts; i++) {
        const burst *b = &c->bursts[i];
        tax_phase fph;
        int weak;
        const cJSON *mem;
        if (b->cls == cls && strcmp(b->key, key) == 0 && line - b->line <= BURST_LINES &&
            c->sink.phase_of(c->sink.ud, b->finding, &fph, &weak, &mem) == 0 &&
            (fph == ph || ph == PH_UNKNOWN || fph == PH_UNKNOWN || (a->from_frames && !a->weak && !b->from_frames)))
            merge = b->finding;
    }
    return merge;
}

/* Remember finding fi as the latest of class cls on stream key (one slot per pair; the last slot is
 * reused when all are taken). */
static void burst_note(classifier *c, int cls, const char *key, uint64_t line, long fi, int from_frames)
{
    size_t slot;
    for (slot = 0; slot < c->n_bursts; slot++)
        if (c->bursts[slot].cls == cls && strcmp(c->bursts[slot].key, key) == 0)
            break;
    /* the same finding again keeps what its earlier lines showed */
    int kept = slot < c->n_bursts && c->bursts[slot].finding == fi && c->bursts[slot].from_frames;
    if (slot == c->n_bursts) {
        if (c->n_bursts < BURSTS)
            c->n_bursts++;
        else
            slot = BURSTS - 1;
    }
    c->bursts[slot].cls = cls;
    snprintf(c->bursts[slot].key, sizeof c->bursts[slot].key, "%s", key);
    c->bursts[slot].line = line;
    c->bursts[slot].finding = fi;
    c->bursts[slot].from_frames = from_frames || kept;
    if (!kept)
        c->bursts[slot].follow_tb = 0;
}

#define RECORD_SPAN (64u << 10) /* bytes a record (a traceback, a wrapped message) is looked back through */

/* The time of a failure line: its own stamp, else the stamp of the record it is part of (the last
 * stamped line, when every line between goes on with it), else none: a stamp lent to a later record
 * ordered failures wrongly (an unstamped OOM took an NCCL line's stamp 70 lines above, issue 31). */
static const timefmt *line_time(const scan_view *v, const line_info *li, const scan_clock *clock, int cls)
{
    if (!clock->have)
        return NULL;
    if (li->own_time)
        return &clock->last;
    if (clock->at == UINT64_MAX || (clock->cls >= 0 && clock->cls != cls))
        return NULL;
    const char *b = (const char *)v->buf;
    size_t p;
    if (clock->at < v->base) {
        /* a resumed scan: the stamped line was the last before the cut ("\n" or "\r\n" before base) */
        if (clock->at + 2 < v->base)
            return NULL;
        p = 0;
    } else {
        p = (size_t)(clock->at - v->base);
        if (p >= li->start || li->start - p > RECORD_SPAN)
            return p >= li->start ? &clock->last : NULL;
        const char *nl = memchr(b + p, '\n', li->start - p);
        if (!nl)
            return &clock->last; /* the same line (a \r-separated progress line) */
        p = (size_t)(nl - b) + 1;
    }
    while (p < li->start) {
        const char *e = memchr(b + p, '\n', li->start - p);
        size_t end = e ? (size_t)(e - b) : li->start, n = end - p;
        if (n && b[p + n - 1] == '\r')
            n--;
        if (!lines_continue_record(b + p, n))
            return NULL;
        p = end + 1;
    }
    return &clock->last;
}

/* The failure the line states, as an event for the story: pattern pi matched text. The event is
 * filled field by field from the line, the source and the phase state, so this stays one function.
 * long: the event is filled field by field (above), each field a few lines. */
static oomscan_status add_failure(classifier *c, const scan_view *v, const line_info *li, long pi, const char *text,
                                  size_t text_len, scan_clock *clock)
{
    const pdb_pattern *p = &c->db->patterns[pi];
    size_t ms, me;
    int added;
    cJSON *mem = pattern_values(c, v, li, pi, text, text_len, &ms, &me, &added);
    if (!mem)
        return OOMSCAN_ERR_NOMEM;
    if (p->cont_required && added == 0) { /* the lines after it do not confirm it: not a failure */
        cJSON_Delete(mem);
        return OOMSCAN_OK;
    }
    /* text may live in c->join, which the next pick could overwrite: copy the evidence now */
    size_t ev_len = lines_sanitize(text, text_len, c->evid, EVIDENCE_CAP);
    char match_buf[256];
    size_t match_len = lines_sanitize(text + ms, me - ms, match_buf, sizeof match_buf);
    if (p->cls == CLS_CUDA_OOM)
        oom_clauses(c, v, li, text, text_len, mem);

    phase_answer ans;
    /* A supervisor's report of one worker (torchrun's "failed (exitcode: 1) local_rank: 0") has that
     * worker's phase: its own lines' ([default0]:), not the console's last traceback, which is often
     * another rank's echo (issue 31) */
    char wkey[24];
    const char *key = li->key;
    const cJSON *lr = cJSON_GetObjectItemCaseSensitive(mem, "local_rank");
    if (!key[0] && p->cls == CLS_CHILD_FAILED && cJSON_IsNumber(lr)) {
        snprintf(wkey, sizeof wkey, "l%.0f", lr->valuedouble);
        key = wkey;
    }
    phase_decide_class(c->ps, key, li->line, p->phase, p->phase_weak, p->engine, (int)p->cls, p->stack_below, &ans);
    /* Job id stated by the message itself (slurmstepd's StepId=1234.0) beats the file name. */
    char job[32];
    snprintf(job, sizeof job, "%s", c->src->job_id);
    const cJSON *jid = cJSON_GetObjectItemCaseSensitive(mem, "job_id");
    if (cJSON_IsNumber(jid))
        snprintf(job, sizeof job, "%.0f", jid->valuedouble);
    else if (cJSON_IsString(jid))
        snprintf(job, sizeof job, "%s", jid->valuestring);
    long merge = burst_of(c, (int)p->cls, li->key, li->line, &ans);
    tax_phase mph = PH_UNKNOWN; /* the phase of the finding a burst joins, when it has one */
    int mweak = 0;
    const cJSON *mmem;
    if (merge >= 0)
        c->sink.phase_of(c->sink.ud, merge, &mph, &mweak, &mmem);
    const line_ctx *x = &li->ctx;
    /* A later line of a burst may name the phase its first line could not (Ray prints the exception
     * above the task's traceback and again below it): the story then gives the finding that phase. */
    scan_event ev = {
        .pattern = p,
        /* ... and a traceback's strong phase is sent as it is: it may outrank a marker's (story.c) */
        .phase = mph != PH_UNKNOWN && !(ans.from_frames && !ans.weak) ? mph : ans.phase,
        .phase_weak = mph != PH_UNKNOWN && !(ans.from_frames && !ans.weak) ? mweak : ans.weak,
        .phase_from_frames = ans.from_frames && (mph == PH_UNKNOWN || !ans.weak),
        .phase_evidence = ans.evidence,
        .framework = ans.framework,
        .match = match_buf,
        .match_len = match_len,
        .evidence = c->evid,
        .evidence_len = ev_len,
        .memory = mem,
        .input = c->src->input,
        .path = c->src->path,
        .member = c->src->member,
        .line = li->line,
        .offset = v->base + li->start,
        .time = line_time(v, li, clock, (int)p->cls),
        .rank = x->rank[0] ? x->rank : c->src->rank,
        .local_rank = x->local_rank,
        .pid = x->pid[0] ? x->pid : c->src->pid,
        .container = x->container,
        .ray_job = c->src->ray_job,
        .host = x->host[0] ? x->host : (x->ip[0] ? x->ip : c->src->host),
        .job_id = job,
        .repeat = x->repeat,
        .merge_into = merge,
    };
    long fi = c->sink.add(c->sink.ud, &ev);
    if (li->own_time && clock->cls < 0)
        clock->cls = (int)p->cls; /* its record is this failure's: another class's lines take no stamp from it */
    if (c->n_fail++ == 0)
        c->fail_first = ev.offset;
    c->fail_last = ev.offset;
    if (fi >= 0)
        burst_note(c, (int)p->cls, li->key, li->line, fi, ev.phase_from_frames);
    return OOMSCAN_OK;
}

oomscan_status classify_line(classifier *c, const scan_view *v, size_t start, size_t end, uint64_t line,
                             const size_t *lits, size_t n, scan_clock *clock)
{
    line_info li = {.start = start, .end = end, .line = line};
    li.msg = matcher_strip(c->m, (const char *)v->buf + start, end - start, &li.msg_len, &li.ctx);
    timefmt t;
    if (li.ctx.time[0] && timefmt_parse(li.ctx.time, strlen(li.ctx.time), &t) == 0) {
        clock->last = t;
        clock->have = 1;
        clock->at = v->base + end;
        clock->cls = -1;
        li.own_time = 1;
    }
    stream_key(&li.ctx, c->src, li.key, sizeof li.key);
    size_t cands[CLASSIFY_MAX_TARGETS], nc;
    oomscan_status st = dispatch(c, v, &li, lits, n, cands, &nc);
    if (st || nc == 0)
        return st;
    const char *text;
    size_t text_len;
    long pi = pick_pattern(c, v, &li, cands, nc, &text, &text_len);
    return pi < 0 ? OOMSCAN_OK : add_failure(c, v, &li, pi, text, text_len, clock);
}
