/* emit_text.c - the report a person reads: the root cause in one sentence, its diagnosis and first
 * steps, then the cascade counted by class and rank, then each input's summary. Writers only read. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remedy.h"
#include "session.h"
#include "timefmt.h"
#include "values.h"

typedef struct {
    oomscan_write_fn fn;
    void *ud;
    int failed;
    int color;
} out;

static void w(out *o, const char *fmt, ...)
{
    if (o->failed)
        return;
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof buf)
        n = sizeof buf - 1;
    if (o->fn(o->ud, buf, (size_t)n) != 0)
        o->failed = 1;
}

static const char *c_(const out *o, const char *code) { return o->color ? code : ""; }
#define BOLD "\033[1m"
#define RED "\033[31m"
#define YEL "\033[33m"
#define DIM "\033[2m"
#define RST "\033[0m"

static void where(const finding *f, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s%s:%llu", f->first.path, f->first.member ? ":" : "", f->first.member ? f->first.member : "",
             (unsigned long long)f->first.line);
}

/* The numbers in human units, in the order people read them. */
static void numbers(const finding *f, char *buf, size_t cap)
{
    buf[0] = '\0';
    size_t len = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, f->memory)
    {
        char v[96];
        size_t kl = strlen(it->string);
        if (cJSON_IsNumber(it) && kl > 6 && strcmp(it->string + kl - 6, "_bytes") == 0)
            values_human_bytes(it->valuedouble, v, sizeof v);
        else if (cJSON_IsNumber(it))
            snprintf(v, sizeof v, "%.15g", it->valuedouble);
        else if (cJSON_IsString(it))
            snprintf(v, sizeof v, "%s", it->valuestring);
        else if (cJSON_IsArray(it))
            snprintf(v, sizeof v, "%d entries", cJSON_GetArraySize(it));
        else
            continue;
        int n = snprintf(buf + len, cap - len, "%s%s=%s", len ? ", " : "", it->string, v);
        if (n < 0 || (size_t)n >= cap - len)
            break;
        len += (size_t)n;
    }
}

static void sentence(out *o, const struct oomscan_scan *s, const finding *f)
{
    char loc[1200], tm[64] = "", nums[1024];
    where(f, loc, sizeof loc);
    if (f->first.has_time)
        timefmt_format(&f->first.time, tm, sizeof tm);
    numbers(f, nums, sizeof nums);
    int fw = session_framework(s, f);
    w(o, "%s%sRoot cause:%s %s%s", c_(o, BOLD), c_(o, RED), c_(o, RST), c_(o, BOLD),
      f->pattern->title ? f->pattern->title : tax_class_human(f->cls));
    if (f->phase != PH_UNKNOWN)
        w(o, " during %s", tax_phase_human(f->phase));
    else
        w(o, " (phase not stated in the log)");
    if (tm[0])
        w(o, " at %s", tm);
    if (f->rank[0])
        w(o, " on rank %s", f->rank);
    if (f->host[0])
        w(o, " (host %s)", f->host);
    w(o, "%s [%s, %s]\n", c_(o, RST), tax_class_name(f->cls), fw != FW_UNKNOWN ? tax_framework_name((tax_framework)fw) : "framework unknown");
    w(o, "  at %s", loc);
    if (f->occurrences > 1)
        w(o, ", seen %llu times", (unsigned long long)f->occurrences);
    if (f->ranks.n > 1)
        w(o, " on %zu ranks", f->ranks.n);
    w(o, "\n");
    if (nums[0])
        w(o, "  numbers: %s\n", nums);
    if (f->phase_evidence)
        w(o, "  %sphase from %s%s\n", c_(o, DIM), f->phase_evidence, c_(o, RST));
    if (f->n_evidence)
        w(o, "  %s> %.*s%s\n", c_(o, DIM), 400, f->evidence[0], c_(o, RST));
    if (f->note)
        w(o, "  note: %s\n", f->note);
}

static void advice(out *o, const struct oomscan_scan *s, const finding *f)
{
    cJSON *d = remedy_diagnosis_json(f);
    const cJSON *c;
    if (d) {
        w(o, "  %sDiagnosis:%s\n", c_(o, BOLD), c_(o, RST));
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(d, "conclusions"))
        {
            const cJSON *what = cJSON_GetObjectItemCaseSensitive(c, "what");
            const cJSON *ar = cJSON_GetObjectItemCaseSensitive(c, "arithmetic");
            w(o, "    - %s (%s)\n", cJSON_IsString(what) ? what->valuestring : "", cJSON_IsString(ar) ? ar->valuestring : "");
        }
        cJSON_Delete(d);
    }
    int fw = session_framework(s, f);
    cJSON *r = remedy_json(s->db->p, f, fw);
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(r, "steps");
    if (cJSON_GetArraySize(steps) > 0) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "id");
        w(o, "  %sWhat to change%s (checklist %s; `oomscan --explain %s` for all steps):\n", c_(o, BOLD), c_(o, RST),
          id->valuestring, id->valuestring);
        int n = 0;
        const cJSON *st;
        cJSON_ArrayForEach(st, steps)
        {
            if (++n > 3)
                break;
            const cJSON *dd = cJSON_GetObjectItemCaseSensitive(st, "do");
            w(o, "    %d. %s\n", n, cJSON_IsString(dd) ? dd->valuestring : "");
            const cJSON *set;
            cJSON_ArrayForEach(set, cJSON_GetObjectItemCaseSensitive(st, "settings"))
            {
                const cJSON *k = cJSON_GetObjectItemCaseSensitive(set, "key");
                const cJSON *ch = cJSON_GetObjectItemCaseSensitive(set, "change");
                if (cJSON_IsString(k))
                    w(o, "       %s: %s\n", k->valuestring, cJSON_IsString(ch) ? ch->valuestring : "");
            }
        }
    }
    cJSON_Delete(r);
}

oomscan_status session_write_text(const struct oomscan_scan *s, int color, int verbose, oomscan_write_fn fn, void *ud)
{
    out o = {fn, ud, 0, color};
    const story *st = s->st;
    size_t *order = malloc((st->n + 1) * sizeof *order);
    if (!order)
        return OOMSCAN_ERR_NOMEM;
    story_order(st, order);
    if (st->n == 0)
        w(&o, "No failure found.\n");
    size_t roots = 0;
    for (size_t i = 0; i < st->n; i++) {
        const finding *f = &st->f[order[i]];
        if (!f->is_root)
            continue;
        if (roots++)
            w(&o, "\n");
        sentence(&o, s, f);
        advice(&o, s, f);
        /* the cascade that follows from this root, counted by class */
        size_t counts[CLS__COUNT] = {0};
        uint64_t occ[CLS__COUNT] = {0};
        size_t total = 0;
        for (size_t k = 0; k < st->n; k++)
            if (!st->f[k].is_root && st->f[k].caused_by == (long)order[i]) {
                counts[st->f[k].cls]++;
                occ[st->f[k].cls] += st->f[k].occurrences;
                total++;
            }
        if (total) {
            w(&o, "  %sThen, as consequences:%s\n", c_(&o, YEL), c_(&o, RST));
            for (int c = 0; c < CLS__COUNT; c++) {
                if (!counts[c])
                    continue;
                char ranks[512] = "";
                size_t rl = 0;
                for (size_t k = 0; k < st->n; k++) {
                    const finding *g = &st->f[k];
                    if (g->is_root || g->caused_by != (long)order[i] || (int)g->cls != c)
                        continue;
                    for (size_t r = 0; r < g->ranks.n && rl + 16 < sizeof ranks; r++)
                        rl += (size_t)snprintf(ranks + rl, sizeof ranks - rl, "%s%s", rl ? "," : "", g->ranks.items[r]);
                }
                w(&o, "    %-22s %llu line(s) in %zu finding(s)%s%s\n", tax_class_name((tax_class)c),
                  (unsigned long long)occ[c], counts[c], rl ? ", ranks " : "", ranks);
            }
        }
    }
    if (verbose && st->n > 0) {
        w(&o, "\nAll findings:\n");
        for (size_t i = 0; i < st->n; i++) {
            const finding *f = &st->f[order[i]];
            char loc[1200], nums[1024];
            where(f, loc, sizeof loc);
            numbers(f, nums, sizeof nums);
            w(&o, "  [%s] %s %s (%s) at %s, %llu time(s)%s%s\n", f->is_root ? "root" : "consequence",
              tax_class_name(f->cls), tax_phase_name(f->phase), f->id, loc, (unsigned long long)f->occurrences,
              nums[0] ? "; " : "", nums);
            if (f->n_evidence)
                w(&o, "      > %.*s\n", 300, f->evidence[0]);
        }
    }
    w(&o, "\n");
    for (size_t i = 0; i < s->n_recs; i++) {
        const input_record *r = &s->recs[i];
        size_t nf = 0;
        for (size_t k = 0; k < st->n; k++) {
            const finding *f = &st->f[k];
            if (strcmp(f->first.path, r->path) == 0 &&
                ((!f->first.member && !r->member) || (f->first.member && r->member && strcmp(f->first.member, r->member) == 0)))
                nf++;
        }
        w(&o, "%s%s%s%s: %s, %llu lines, %llu bytes, %zu finding(s)%s%s%s\n", c_(&o, DIM), r->path, r->member ? ":" : "",
          r->member ? r->member : "", r->status == INPUT_OK ? "ok" : r->status == INPUT_PARTIAL ? "partial" : "error",
          (unsigned long long)r->lines, (unsigned long long)r->bytes, nf, r->error ? " (" : "", r->error ? r->error : "",
          r->error ? ")" : "");
        if (o.color)
            w(&o, "%s", RST);
    }
    free(order);
    return o.failed ? OOMSCAN_ERR_IO : OOMSCAN_OK;
}
