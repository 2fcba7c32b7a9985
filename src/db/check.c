/* check.c - --check-patterns: every entry of the database is validated and every sample run. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match/match.h"
#include "advice/remedy.h"
#include "pipeline/session.h"

typedef struct {
    oomscan_check_fn fn;
    void *ud;
    size_t problems;
} checker;

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
        const cJSON *line = cJSON_GetObjectItemCaseSensitive(s, "line");
        if (!cJSON_IsString(line))
            continue;
        ++*runs;
        line_ctx ctx;
        size_t ml;
        const char *msg = matcher_strip(m, line->valuestring, strlen(line->valuestring), &ml, &ctx);
        if (matcher_try(m, idx, msg, ml))
            problem(c, p->file, p->id, "matches a line it must not: %.160s", line->valuestring);
    }
}

static void check_prefix(checker *c, const pdb *db, matcher *m, size_t idx, size_t *runs)
{
    const pdb_prefix *p = &db->prefixes[idx];
    const cJSON *s;
    cJSON_ArrayForEach(s, p->samples)
    {
        const cJSON *line = cJSON_GetObjectItemCaseSensitive(s, "line");
        if (!cJSON_IsString(line))
            continue;
        ++*runs;
        line_ctx ctx;
        size_t ml;
        const char *msg = matcher_strip(m, line->valuestring, strlen(line->valuestring), &ml, &ctx);
        if (ml == strlen(line->valuestring))
            problem(c, p->file, p->id, "no prefix stripped from its sample: %.160s", line->valuestring);
        (void)msg;
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

static const char *const valid_changes[] = {"halve", "double", "decrease", "increase", "enable", "disable"};

static void check_checklist(checker *c, const pdb_checklist *cl)
{
    const cJSON *st;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(cl->json, "steps"))
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(st, "id");
        const char *sid = cJSON_IsString(id) ? id->valuestring : "(step without id)";
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
                int ok = 0;
                if (cJSON_IsString(ch)) {
                    ok = strncmp(ch->valuestring, "set:", 4) == 0;
                    for (size_t k = 0; k < sizeof valid_changes / sizeof *valid_changes; k++)
                        ok |= strcmp(ch->valuestring, valid_changes[k]) == 0;
                }
                if (!ok)
                    problem(c, cl->file, cl->id, "step %s: setting for %s has an invalid \"change\"", sid, fw->string);
            }
        }
    }
}

size_t oomscan_db_check(const oomscan_db *odb, oomscan_check_fn fn, void *ud, size_t *samples_run)
{
    checker c = {fn, ud, 0};
    size_t runs = 0;
    const pdb *db = odb->p;
    matcher *m = db->compiled ? matcher_new(db) : NULL;
    if (!m) {
        problem(&c, "", "", "database not compiled or out of memory");
        return c.problems;
    }
    for (size_t i = 0; i < db->n_patterns; i++)
        check_pattern(&c, db, m, i, &runs);
    for (size_t i = 0; i < db->n_prefixes; i++)
        check_prefix(&c, db, m, i, &runs);
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
    matcher_free(m);
    if (samples_run)
        *samples_run = runs;
    return c.problems;
}

oomscan_status oomscan_explain(const oomscan_db *db, const char *id, oomscan_write_fn fn, void *ud, oomscan_diag *diag)
{
    const pdb_checklist *c = pdb_checklist_by_id(db->p, id);
    if (!c)
        return diag_set(diag, OOMSCAN_ERR_USAGE, id, "no checklist with this id (see oomscan --explain list)");
    return remedy_markdown(c, fn, ud) == 0 ? OOMSCAN_OK : diag_set(diag, OOMSCAN_ERR_IO, id, "write failed");
}
