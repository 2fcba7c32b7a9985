/* check.c - --check-patterns: every entry of the database is validated and every sample run.
 * It sits in pipeline/, above the story, because it runs samples through the whole matcher as a scan
 * would (scanner, phase state, story); the database itself (db/) knows nothing of the matcher. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oomscan.h"
#include "base/status.h"
#include "db/patterndb.h"
#include "match/lines.h"
#include "match/match.h"
#include "match/phase.h"
#include "match/lexicon.h"
#include "match/scan.h"
#include "match/version.h"
#include "story/story.h"

typedef struct {
    oomscan_check_fn fn;
    void *ud;
    size_t problems;
    const pdb *db;
    matcher *m;
    scanner *sc; /* for "scanned alone": each match sample through the real scan path */
    story *st;
    phase_state *ps;
} checker;

/* The pattern of the first finding a scan of `text` alone gives (NULL: none, or out of memory), as
 * a user who saved only that line (and its "next" lines) would see it. */
static const pdb_pattern *scan_alone(checker *c, const char *text, size_t len)
{
    story_free(c->st);
    phase_free(c->ps);
    c->st = story_new();
    c->ps = c->st ? phase_new(c->db) : NULL;
    if (!c->ps)
        return NULL;
    scan_source src = {.path = "sample"};
    scan_result res;
    if (scanner_run_text(c->sc, text, len, &src, c->ps, story_sink(c->st), &res) != OOMSCAN_OK || c->st->n == 0)
        return NULL;
    return c->st->f[0].pattern;
}

static void problem(checker *c, const char *file, const char *id, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    oomscan_check_problem p = {file, id, msg};
    c->problems++;
    if (c->fn)
        c->fn(c->ud, &p);
}

static int has_literal(const pdb_pattern *p, const char *line)
{
    for (size_t i = 0; i < p->n_literals; i++)
        if (strstr(line, p->literals[i]))
            return 1;
    return 0;
}

/* Compare an expected value with the captured one: numbers exactly (sizes within a byte of
 * rounding), strings exactly, arrays/objects recursively. */
static int same(const cJSON *want, const cJSON *got)
{
    if (!got)
        return 0;
    if (cJSON_IsNumber(want))
        return cJSON_IsNumber(got) && fabs(want->valuedouble - got->valuedouble) <= 1.0;
    if (cJSON_IsString(want))
        return cJSON_IsString(got) && strcmp(want->valuestring, got->valuestring) == 0;
    if (cJSON_IsArray(want)) {
        if (!cJSON_IsArray(got) || cJSON_GetArraySize(want) != cJSON_GetArraySize(got))
            return 0;
        for (int i = 0; i < cJSON_GetArraySize(want); i++)
            if (!same(cJSON_GetArrayItem(want, i), cJSON_GetArrayItem(got, i)))
                return 0;
        return 1;
    }
    if (cJSON_IsObject(want)) {
        const cJSON *it;
        cJSON_ArrayForEach(it, want) if (!same(it, cJSON_GetObjectItemCaseSensitive(got, it->string))) return 0;
        return 1;
    }
    return cJSON_Compare(want, got, 1);
}

/* Append the strings of array `arr` to text (room checked by the caller), each with a terminator. */
static size_t put_lines(char *text, size_t len, const cJSON *arr)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) if (cJSON_IsString(x))
    {
        size_t k = strlen(x->valuestring);
        memcpy(text + len, x->valuestring, k);
        len += k;
        text[len++] = '\n';
    }
    return len;
}

/* The text a sample stands for, as a user's saved log: its "before" lines (the traceback a pattern's
 * "in_traceback" reads), its line, its "next" lines (a pattern's "continuation"); sample NULL: the line
 * alone. malloc'd, NULL out of memory. */
static char *sample_text(const cJSON *sample, const char *line, size_t *len)
{
    const char *keys[] = {"before", "next"};
    size_t cap = strlen(line) + 2;
    const cJSON *x;
    for (int k = 0; k < 2; k++)
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(sample, keys[k])) if (cJSON_IsString(x)) cap +=
            strlen(x->valuestring) + 1;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    size_t n = put_lines(text, 0, cJSON_GetObjectItemCaseSensitive(sample, "before"));
    memcpy(text + n, line, strlen(line));
    n += strlen(line);
    text[n++] = '\n';
    *len = put_lines(text, n, cJSON_GetObjectItemCaseSensitive(sample, "next"));
    return text;
}

/* One line (a terminator added) scanned alone; c->ps then holds its context (markers, votes). */
static void scan_line_alone(checker *c, const char *t)
{
    size_t len = 0;
    char *text = sample_text(NULL, t, &len); /* no sample: the line alone */
    if (text)
        scan_alone(c, text, len);
    free(text);
}

/* A match sample scanned alone (with its "before" and "next" lines) must give a finding of its own
 * pattern: one that another pattern wins is a priority to fix, or a sample that shows the other
 * message. */
static void check_alone(checker *c, const pdb_pattern *p, const cJSON *sample, const char *line)
{
    size_t len = 0;
    char *text = sample_text(sample, line, &len);
    if (!text) {
        problem(c, p->file, p->id, "out of memory");
        return;
    }
    const pdb_pattern *won = scan_alone(c, text, len);
    free(text);
    if (!won)
        problem(c, p->file, p->id, "scanned alone, its match sample gives no finding: %.120s", line);
    else if (won != p)
        problem(c, p->file, p->id, "scanned alone, its match sample is won by %s (%s): %.120s", won->id, won->file, line);
}

/* A sample entry's "line", or NULL when it has none. */
static const char *sample_line(const cJSON *s)
{
    const cJSON *line = cJSON_GetObjectItemCaseSensitive(s, "line");
    return cJSON_IsString(line) ? line->valuestring : NULL;
}

/* A sample's line stripped of its prefixes as the scanner strips them (*ctx: what they said), and
 * counted as run; NULL when the entry has no line. */
static const char *run_sample(matcher *m, const cJSON *s, line_ctx *ctx, size_t *ml, size_t *runs)
{
    const char *line = sample_line(s);
    if (!line)
        return NULL;
    ++*runs;
    return matcher_strip(m, line, strlen(line), ml, ctx);
}

/* long: every sample of one pattern run, must-match and must-not alike, each problem naming the file and
 * the sample. */
static void check_pattern(checker *c, const pdb *db, matcher *m, size_t idx, size_t *runs)
{
    const pdb_pattern *p = &db->patterns[idx];
    const cJSON *samples = p->samples;
    const cJSON *yes = cJSON_GetObjectItemCaseSensitive(samples, "match");
    const cJSON *no = cJSON_GetObjectItemCaseSensitive(samples, "no_match");
    if (cJSON_GetArraySize(yes) == 0)
        problem(c, p->file, p->id, "no \"match\" samples: every pattern needs real lines it must match");
    if (cJSON_GetArraySize(no) == 0)
        problem(c, p->file, p->id, "no \"no_match\" samples: every pattern needs real lines it must not match");
    const cJSON *s;
    cJSON_ArrayForEach(s, yes)
    {
        const cJSON *line = cJSON_GetObjectItemCaseSensitive(s, "line");
        if (!cJSON_IsString(line)) {
            problem(c, p->file, p->id, "a match sample has no \"line\"");
            continue;
        }
        ++*runs;
        const char *t = line->valuestring;
        size_t len = strlen(t);
        /* samples are messages as users saw them: strip prefixes the way the scanner does */
        line_ctx ctx;
        size_t ml;
        const char *msg = matcher_strip(m, t, len, &ml, &ctx);
        if (!has_literal(p, t))
            problem(c, p->file, p->id, "match sample contains none of the literals (the prefilter would skip it): %.120s", t);
        if (!matcher_try(m, idx, msg, ml)) {
            problem(c, p->file, p->id, "does not match its sample: %.160s", t);
            continue;
        }
        check_alone(c, p, s, t);
        const cJSON *expect = cJSON_GetObjectItemCaseSensitive(s, "expect");
        if (!expect)
            continue;
        cJSON *got = cJSON_CreateObject();
        if (!got)
            continue;
        matcher_values(m, idx, msg, ml, got);
        /* "next": the lines after the sample, for a pattern's "continuation" regexes */
        const cJSON *nx;
        int nk = 0;
        cJSON_ArrayForEach(nx, cJSON_GetObjectItemCaseSensitive(s, "next"))
        {
            if (cJSON_IsString(nx) && nk++ < p->cont_lines)
                matcher_continuation(m, idx, nx->valuestring, strlen(nx->valuestring), got);
        }
        const cJSON *e;
        cJSON_ArrayForEach(e, expect)
        {
            const cJSON *g = cJSON_GetObjectItemCaseSensitive(got, e->string);
            if (!same(e, g)) {
                char *gs = g ? cJSON_PrintUnformatted(g) : NULL;
                char *es = cJSON_PrintUnformatted(e);
                problem(c, p->file, p->id, "capture %s: expected %s, got %s, in: %.120s", e->string, es ? es : "?",
                        gs ? gs : "nothing", t);
                free(gs);
                free(es);
            }
        }
        cJSON_Delete(got);
    }
    cJSON_ArrayForEach(s, no)
    {
        line_ctx ctx;
        size_t ml;
        const char *msg = run_sample(m, s, &ctx, &ml, runs);
        if (!msg)
            continue;
        if (p->tb_value || p->cont_required || cJSON_GetObjectItemCaseSensitive(s, "before")) {
            /* a pattern with a condition beyond its line (a frame above it, "in_traceback"; lines after
             * it, a "required" continuation) matches its line's text wherever it stands: the line, with
             * its "before" and "next" lines, must give another pattern's finding or none */
            size_t len = 0;
            char *text = sample_text(s, sample_line(s), &len);
            if (text && scan_alone(c, text, len) == p)
                problem(c, p->file, p->id, "wins a line it must not (with its \"before\" and \"next\" lines): %.160s",
                        sample_line(s));
            free(text);
        } else if (matcher_try(m, idx, msg, ml))
            problem(c, p->file, p->id, "matches a line it must not: %.160s", sample_line(s));
    }
}

static void check_prefix(checker *c, const pdb *db, matcher *m, size_t idx, size_t *runs)
{
    const pdb_prefix *p = &db->prefixes[idx];
    const cJSON *s;
    cJSON_ArrayForEach(s, p->samples)
    {
        line_ctx ctx;
        size_t ml;
        if (!run_sample(m, s, &ctx, &ml, runs))
            continue;
        const cJSON *line = cJSON_GetObjectItemCaseSensitive(s, "line");
        if (ml == strlen(line->valuestring))
            problem(c, p->file, p->id, "no prefix stripped from its sample: %.160s", line->valuestring);
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(s, "expect"))
        {
            const char *got = strcmp(e->string, "rank") == 0         ? ctx.rank
                              : strcmp(e->string, "local_rank") == 0 ? ctx.local_rank
                              : strcmp(e->string, "pid") == 0        ? ctx.pid
                              : strcmp(e->string, "ip") == 0         ? ctx.ip
                              : strcmp(e->string, "host") == 0       ? ctx.host
                              : strcmp(e->string, "time") == 0       ? ctx.time
                              : strcmp(e->string, "actor") == 0      ? ctx.actor
                              : strcmp(e->string, "container") == 0  ? ctx.container
                                                                     : NULL;
            char want[128];
            if (cJSON_IsNumber(e))
                snprintf(want, sizeof want, "%.0f", e->valuedouble);
            else if (cJSON_IsString(e))
                snprintf(want, sizeof want, "%s", e->valuestring);
            else
                continue;
            if (strcmp(e->string, "repeat") == 0) {
                if (ctx.repeat != atol(want))
                    problem(c, p->file, p->id, "repeat: expected %s, got %ld in: %.120s", want, ctx.repeat, line->valuestring);
                continue;
            }
            if (!got || strcmp(got, want) != 0)
                problem(c, p->file, p->id, "%s: expected \"%s\", got \"%s\" in: %.120s", e->string, want,
                        got ? got : "(unknown field)", line->valuestring);
        }
    }
}

/* ---- context rules: frames, markers, framework rules ---------------------------------------- */

/* The sample's line (prefixes stripped, as the scanner hands context lines on), or NULL when the
 * entry is no {"line": "..."} object. */
/* Every context rule needs lines it must give its result for; each entry must be {"line","source"}. */
static int need_samples(checker *c, const char *file, const char *name, const cJSON *yes, const cJSON *no)
{
    if (cJSON_GetArraySize(yes) == 0) {
        problem(c, file, name, "no \"samples\": every rule needs a real line it must give its result for");
        return 0;
    }
    const cJSON *arrs[2] = {yes, no}, *s;
    for (int k = 0; k < 2; k++)
        cJSON_ArrayForEach(s, arrs[k]) if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(s, "line")) ||
                                           !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(s, "source")))
            problem(c, file, name, "a sample needs a \"line\" and a \"source\"");
    return 1;
}

/* How a sample of one kind of context rule is judged; yes: from "samples" (must give the rule's
 * result), else from "not_samples" (must not). */
typedef void (*judge_fn)(checker *c, const void *rule, const char *name, const char *line, int yes, size_t *runs);

/* Every sample line of a context rule to judge, "samples" first, then "not_samples"; a rule without
 * samples is reported (need_samples) and not judged. */
static void each_sample(checker *c, const char *file, const char *name, const cJSON *yes, const cJSON *no,
                        judge_fn judge, const void *rule, size_t *runs)
{
    if (!need_samples(c, file, name, yes, no))
        return;
    const cJSON *s;
    for (int k = 1; k >= 0; k--)
        cJSON_ArrayForEach(s, (k ? yes : no))
        {
            const cJSON *line = cJSON_GetObjectItemCaseSensitive(s, "line");
            if (cJSON_IsString(line))
                judge(c, rule, name, line->valuestring, k, runs);
        }
}

/* The frame rule a sample gives: a code rule's samples are code lines (as printed under a frame),
 * the others' are frame lines. -1 none, -2 not a frame line. */
static int frame_winner(checker *c, const pdb_frame_rule *r, const char *t, size_t n)
{
    int fb;
    if (r->kind == FRAME_CODE) {
        while (n && (*t == ' ' || *t == '\t'))
            t++, n--;
        int best = phase_frame_rule(c->db, NULL, 0, NULL, 0, t, n, &fb);
        return r->fallback ? fb : best;
    }
    const char *path, *func;
    size_t pl, fl;
    if (!memmem(t, n, PDB_FRAME_LITERAL, strlen(PDB_FRAME_LITERAL)) || !lines_parse_frame(t, n, &path, &pl, &func, &fl))
        return -2;
    int best = phase_frame_rule(c->db, path, pl, func, fl, NULL, 0, &fb);
    return r->fallback ? fb : best;
}

/* A frame rule's sample: its winner must be a rule of the same phase and framework. */
static void judge_frame(checker *c, const void *rule, const char *name, const char *line, int yes, size_t *runs)
{
    const pdb_frame_rule *r = rule;
    line_ctx ctx;
    size_t n;
    const char *t = matcher_strip(c->m, line, strlen(line), &n, &ctx);
    ++*runs;
    int w = frame_winner(c, r, t, n);
    int mine = w >= 0 && c->db->frames[w].phase == r->phase && c->db->frames[w].framework == r->framework;
    if (!yes) {
        if (mine)
            problem(c, r->file, name, "gives its result for a line it must not: %.160s", t);
    } else if (w == -2)
        problem(c, r->file, name, "sample is not a traceback frame line: %.160s", t);
    else if (w < 0)
        problem(c, r->file, name, "does not match its sample: %.160s", t);
    else if (!mine) {
        char other[200];
        pdb_frame_rule_name(&c->db->frames[w], other, sizeof other);
        problem(c, r->file, name, "its sample is won by %s (phase %s): %.120s", other,
                tax_phase_name((tax_phase)c->db->frames[w].phase), t);
    }
}

/* The stem a lexicon sample reads as: a frame line's function, else (a line holding a task marker's
 * literal) the Ray task's method, else a code line's first call that reads. -1 none. */
static int stem_winner(checker *c, const char *raw)
{
    line_ctx ctx;
    size_t n, pl, fl, wl;
    const char *t = matcher_strip(c->m, raw, strlen(raw), &n, &ctx), *path, *func, *w;
    char word[64];
    if (memmem(t, n, PDB_FRAME_LITERAL, strlen(PDB_FRAME_LITERAL)) && lines_parse_frame(t, n, &path, &pl, &func, &fl))
        return phase_frame_stem(c->db, path, pl, func, fl, NULL, 0, word, sizeof word);
    (void)word;
    for (size_t i = 0; i < c->db->n_markers; i++) {
        const pdb_marker *m = &c->db->markers[i];
        const char *p = m->lexicon ? memmem(t, n, m->literal, strlen(m->literal)) : NULL;
        if (p) {
            p += strlen(m->literal);
            return lexicon_read_task(c->db, p, n - (size_t)(p - t), &w, &wl);
        }
    }
    while (n && (*t == ' ' || *t == '\t'))
        t++, n--;
    return lexicon_read_code(c->db, t, n, &w, &wl);
}

/* A stem's sample must read as a stem of its phase and level; a not_sample must not. */
static void judge_stem(checker *c, const void *rule, const char *name, const char *line, int yes, size_t *runs)
{
    const pdb_stem *st = rule;
    ++*runs;
    int w = stem_winner(c, line);
    const pdb_stem *o = w >= 0 ? &c->db->stems[w] : NULL;
    /* a stem that says nothing (an ambiguous name) proves itself by leaving its samples unread */
    int mine = st->phase < 0 ? !o || o->phase < 0 : o && o->phase == st->phase && o->level == st->level;
    if (yes && !mine)
        problem(c, st->file, name, "its sample reads as %s: %.140s", o ? o->text : "no stem", line);
    else if (!yes && mine)
        problem(c, st->file, name, "reads a line it must not: %.160s", line);
}

/* The marker that decides a line scanned alone through the real scan path (markers act on the raw
 * line, in the prefilter's hit order; the last one acting wins), -1 none. */
static int marker_winner(checker *c, const char *t)
{
    scan_line_alone(c, t);
    uint64_t line;
    return c->ps ? phase_last_marker(c->ps, &line) : -1;
}

/* A marker's sample, scanned alone: the marker deciding it must be one of the same phase and
 * framework (and the sample must hold the literal); a not_sample holding it must not be. */
static void judge_marker(checker *c, const void *rule, const char *name, const char *t, int yes, size_t *runs)
{
    const pdb_marker *mk = rule;
    if (mk->lexicon) { /* a task marker: its samples are tasks whose method reads as a phase */
        int w = strstr(t, mk->literal) ? stem_winner(c, t) : -1;
        int reads = w >= 0 && c->db->stems[w].phase >= 0;
        ++*runs;
        if (yes && !reads)
            problem(c, mk->file, name, "its sample names no task whose method reads as a phase: %.140s", t);
        else if (!yes && reads)
            problem(c, mk->file, name, "reads a phase from a line it must not: %.160s", t);
        return;
    }
    ++*runs;
    int w = marker_winner(c, t);
    const pdb_marker *o = w >= 0 ? &c->db->markers[w] : NULL;
    int mine = o && o->phase == mk->phase && o->framework == mk->framework;
    if (yes && !strstr(t, mk->literal))
        problem(c, mk->file, name, "sample does not hold the literal: %.160s", t);
    else if (yes && !mine) {
        char other[200] = "no marker";
        if (o)
            pdb_marker_name(o, other, sizeof other);
        problem(c, mk->file, name, "its sample is won by %s, of another phase: %.120s", other, t);
    } else if (!yes && strstr(t, mk->literal) && mine)
        problem(c, mk->file, name, "gives its phase for a line it must not: %.160s", t);
}

/* The framework a sample tells: a path rule's samples are frame lines, read as phase_frame reads
 * them; a line rule's are lines scanned alone, whose votes decide as phase_framework. */
static int fw_winner(checker *c, const pdb_fw_rule *r, const char *raw, size_t *runs)
{
    ++*runs;
    if (r->in_path) {
        line_ctx ctx;
        size_t n, pl, fl;
        const char *t = matcher_strip(c->m, raw, strlen(raw), &n, &ctx), *path, *func;
        if (!lines_parse_frame(t, n, &path, &pl, &func, &fl))
            return -2;
        return phase_path_framework(c->db, path, pl);
    }
    scan_line_alone(c, raw);
    int fw = c->ps ? phase_framework(c->ps) : FW_UNKNOWN;
    return fw == FW_UNKNOWN ? -1 : fw;
}

/* A framework rule's sample must tell its framework (and hold its literal); a not_sample holding the
 * literal must not. */
static void judge_fw(checker *c, const void *rule, const char *name, const char *t, int yes, size_t *runs)
{
    const pdb_fw_rule *r = rule;
    int w = fw_winner(c, r, t, runs);
    if (w == -2)
        problem(c, r->file, name, "sample is not a traceback frame line (a \"path\" rule): %.160s", t);
    else if (yes && !strstr(t, r->literal))
        problem(c, r->file, name, "sample does not hold the literal: %.160s", t);
    else if (yes && w != r->framework)
        problem(c, r->file, name, "its sample tells framework %s: %.120s",
                w < 0 ? "none" : tax_framework_name((tax_framework)w), t);
    else if (!yes && w == r->framework && strstr(t, r->literal))
        problem(c, r->file, name, "gives its framework for a line it must not: %.160s", t);
}

/* A version rule's samples give their "version" (and every other group the sample names, vLLM's
 * "engine"); its not_samples give none. */
static void check_version_rule(checker *c, size_t idx, size_t *runs)
{
    const pdb_version_rule *r = &c->db->versions[idx];
    char name[200];
    pdb_version_rule_name(r, name, sizeof name);
    if (!need_samples(c, r->file, name, r->samples, r->not_samples))
        return;
    const cJSON *s;
    cJSON_ArrayForEach(s, r->samples)
    {
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "line"));
        if (!t)
            continue;
        ++*runs;
        if (!strstr(t, r->literal)) {
            problem(c, r->file, name, "sample does not hold the literal: %.160s", t);
            continue;
        }
        const cJSON *want;
        int named = 0;
        cJSON_ArrayForEach(want, s)
        {
            if (!strcmp(want->string, "line") || !strcmp(want->string, "source"))
                continue;
            char got[128] = "";
            named |= !strcmp(want->string, "version");
            if (!cJSON_IsString(want) || !version_read(r, t, strlen(t), want->string, got, sizeof got) ||
                strcmp(got, want->valuestring) != 0)
                problem(c, r->file, name, "sample gives %s \"%s\", not \"%s\": %.120s", want->string, got,
                        cJSON_IsString(want) ? want->valuestring : "?", t);
        }
        if (!named)
            problem(c, r->file, name, "a sample needs the \"version\" it must give: %.160s", t);
    }
    cJSON_ArrayForEach(s, r->not_samples)
    {
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "line"));
        char got[128];
        ++*runs;
        if (t && version_read(r, t, strlen(t), "version", got, sizeof got))
            problem(c, r->file, name, "reads version \"%s\" from a line it must not: %.120s", got, t);
    }
}

static const char *const valid_changes[] = {"halve", "double", "decrease", "increase", "enable", "disable",
                                            /* for commands and things to look at */
                                            "run", "check", "read", "compare", "find", "compute", "adjust"};
/* how the user writes a setting (docs/data-formats.md) */
static const char *const valid_forms[] = {"override", "flag", "env", "directive", "json", "kwarg",
                                          "engine_arg", "python", "command", "words"};

static int in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t k = 0; s && k < n; k++)
        if (strcmp(s, list[k]) == 0)
            return 1;
    return 0;
}

/* 1 when some diagnosis conclusion lists `premise` under `key` ("refutes" or "supports"). */
static int reachable(const pdb *db, const char *premise, const char *key)
{
    const cJSON *c, *p;
    cJSON_ArrayForEach(c, db->conclusions)
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(c, key)) if (cJSON_IsString(p) && !strcmp(p->valuestring, premise))
        return 1;
    return 0;
}

/* A step's (or setting's) "premise" must be one a conclusion can refute, its "first_when" one a
 * conclusion can support: otherwise the name is a typo that silently never acts. */
static void check_premises(checker *c, const pdb_checklist *cl, const char *sid, const cJSON *names, const char *key)
{
    const cJSON *p;
    if (cJSON_IsString(names) && !reachable(c->db, names->valuestring, key))
        problem(c, cl->file, cl->id, "step %s: no diagnosis conclusion %s \"%s\"", sid, key, names->valuestring);
    if (!cJSON_IsArray(names))
        return;
    cJSON_ArrayForEach(p, names) if (cJSON_IsString(p) && !reachable(c->db, p->valuestring, key))
        problem(c, cl->file, cl->id, "step %s: no diagnosis conclusion %s \"%s\"", sid, key, p->valuestring);
}

static void check_checklist(checker *c, const pdb_checklist *cl)
{
    const cJSON *st;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(cl->json, "steps"))
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(st, "id");
        const char *sid = cJSON_IsString(id) ? id->valuestring : "(step without id)";
        check_premises(c, cl, sid, cJSON_GetObjectItemCaseSensitive(st, "premise"), "refutes");
        check_premises(c, cl, sid, cJSON_GetObjectItemCaseSensitive(st, "first_when"), "supports");
        check_premises(c, cl, sid, cJSON_GetObjectItemCaseSensitive(st, "only_when"), "supports");
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(st, "do")))
            problem(c, cl->file, cl->id, "step %s has no \"do\"", sid);
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(st, "source");
        if (!cJSON_IsArray(src) || cJSON_GetArraySize(src) == 0)
            problem(c, cl->file, cl->id, "step %s cites no source", sid);
        const cJSON *fw;
        cJSON_ArrayForEach(fw, cJSON_GetObjectItemCaseSensitive(st, "settings"))
        {
            if (strcmp(fw->string, "generic") != 0 && tax_framework_from_name(fw->string) < 0)
                problem(c, cl->file, cl->id, "step %s: unknown framework \"%s\"", sid, fw->string);
            const cJSON *s1;
            cJSON_ArrayForEach(s1, fw)
            {
                const cJSON *ch = cJSON_GetObjectItemCaseSensitive(s1, "change");
                const cJSON *form = cJSON_GetObjectItemCaseSensitive(s1, "form");
                int ok = cJSON_IsString(ch) && (strncmp(ch->valuestring, "set:", 4) == 0 ||
                                                in_list(ch->valuestring, valid_changes, sizeof valid_changes / sizeof *valid_changes));
                if (!ok)
                    problem(c, cl->file, cl->id, "step %s: setting for %s has an invalid \"change\"", sid, fw->string);
                check_premises(c, cl, sid, cJSON_GetObjectItemCaseSensitive(s1, "premise"), "refutes");
                if (!cJSON_IsString(form) || !in_list(form->valuestring, valid_forms, sizeof valid_forms / sizeof *valid_forms))
                    problem(c, cl->file, cl->id, "step %s: setting for %s has no valid \"form\"", sid, fw->string);
            }
        }
    }
}

size_t oomscan_db_check(const oomscan_db *odb, oomscan_check_fn fn, void *ud, size_t *samples_run)
{
    const pdb *db = odb->p;
    pdb_load_advice(db);
    checker c = {fn, ud, 0, db, NULL, NULL, NULL, NULL};
    size_t runs = 0;
    c.m = db->compiled ? matcher_new(db) : NULL;
    c.sc = db->compiled ? scanner_new(db) : NULL;
    c.ps = db->compiled ? phase_new(db) : NULL;
    if (!c.m || !c.sc || !c.ps) {
        problem(&c, "", "", "database not compiled or out of memory");
        goto done;
    }
    for (size_t i = 0; i < db->n_patterns; i++)
        check_pattern(&c, db, c.m, i, &runs);
    for (size_t i = 0; i < db->n_prefixes; i++)
        check_prefix(&c, db, c.m, i, &runs);
    char name[200]; /* each context rule as its messages name it */
    for (size_t i = 0; i < db->n_frames; i++) {
        pdb_frame_rule_name(&db->frames[i], name, sizeof name);
        each_sample(&c, db->frames[i].file, name, db->frames[i].samples, db->frames[i].not_samples, judge_frame,
                    &db->frames[i], &runs);
    }
    for (size_t i = 0; i < db->n_markers; i++) {
        pdb_marker_name(&db->markers[i], name, sizeof name);
        each_sample(&c, db->markers[i].file, name, db->markers[i].samples, db->markers[i].not_samples, judge_marker,
                    &db->markers[i], &runs);
    }
    for (size_t i = 0; i < db->n_stems; i++) {
        snprintf(name, sizeof name, "stems \"%s\"", db->stems[i].text);
        each_sample(&c, db->stems[i].file, name, db->stems[i].samples, db->stems[i].not_samples, judge_stem,
                    &db->stems[i], &runs);
    }
    for (size_t i = 0; i < db->n_fw_rules; i++) {
        pdb_fw_rule_name(&db->fw_rules[i], name, sizeof name);
        each_sample(&c, db->fw_rules[i].file, name, db->fw_rules[i].samples, db->fw_rules[i].not_samples, judge_fw,
                    &db->fw_rules[i], &runs);
    }
    for (size_t i = 0; i < db->n_versions; i++)
        check_version_rule(&c, i, &runs);
    for (size_t i = 0; i < db->n_checklists; i++)
        check_checklist(&c, &db->checklists[i]);
    /* every class/phase pair the data can produce must lead to a checklist (when checklists exist) */
    if (db->n_checklists > 0)
        for (int cls = 0; cls < CLS__COUNT; cls++)
            for (int ph = 0; ph < PH__COUNT; ph++)
                if (!pdb_checklist_for(db, (tax_class)cls, (tax_phase)ph)) {
                    char id[96];
                    snprintf(id, sizeof id, "%s/%s", tax_class_name((tax_class)cls), tax_phase_name((tax_phase)ph));
                    problem(&c, "patterns/remediation", id, "no checklist for this class and phase");
                }
done:
    matcher_free(c.m);
    scanner_free(c.sc);
    phase_free(c.ps);
    story_free(c.st);
    if (samples_run)
        *samples_run = runs;
    return c.problems;
}
