/* emit_text.c - the report a person reads: the root cause in one sentence, its diagnosis and first
 * steps, then the cascade counted by class and rank; before them the inputs in one line (each with -v).
 * Writers only read. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strverscmp */
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sink.h"
#include "base/values.h"
#include "emit/emit.h"
#include "emit/membar.h"
#include "emit/report.h"
#include "emit/safe.h"
#include "emit/textfit.h"

typedef struct {
    oomscan_write_fn fn;
    void *ud;
    int failed;
    int color;
    unsigned width;
    char *line; /* the line being written, fitted to the width at its newline */
    size_t n, cap;
    int cut; /* TEXTFIT_CUT: cut, not wrapped (evidence); TEXTFIT_KEEP: whole (a setting to paste) */
    char esc[6][8192]; /* E()'s buffers, used in turn: enough for the arguments of one w() */
    int next;
    sink pieces; /* w()'s formatting, into pieces_in */
} out;

/* Text from a log or a name, made inert for a terminal (emit/safe.h), at most `max` bytes of it, cut
 * at a character. Valid until six more calls. */
static const char *E_(out *o, const char *s, size_t max)
{
    char cut[2048];
    size_t n = s ? strlen(s) : 0;
    if (n > max && max < sizeof cut) {
        while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
            max--;
        memcpy(cut, s, max);
        cut[max] = '\0';
        s = cut;
    }
    char *b = o->esc[o->next];
    o->next = (o->next + 1) % 6;
    return safe_text(b, sizeof o->esc[0], s);
}
#define E(o, s) E_((o), (s), (size_t)-1)

/* The line so far goes out fitted to the width (emit/textfit.h). */
static void line_end(out *o)
{
    if (!o->failed && textfit_line(o->line ? o->line : "", o->n, o->width, o->cut, o->fn, o->ud) != 0)
        o->failed = 1;
    o->n = 0;
    o->cut = 0;
}

static void line_add(out *o, const char *s, size_t len)
{
    if (o->n + len > o->cap) {
        size_t cap = (o->n + len) * 2 + 256;
        char *p = realloc(o->line, cap);
        if (!p) {
            o->failed = 1;
            return;
        }
        o->line = p;
        o->cap = cap;
    }
    memcpy(o->line + o->n, s, len);
    o->n += len;
}

/* What w() formats goes here: cut at its newlines, each line fitted to the width. */
static int pieces_in(void *ud, const char *data, size_t len)
{
    out *o = ud;
    for (const char *p = data, *end = data + len; p < end && !o->failed;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        line_add(o, p, (size_t)((nl ? nl : end) - p));
        if (!nl)
            break;
        line_end(o);
        p = nl + 1;
    }
    return o->failed;
}
#define w(o, ...) sink_printf(&(o)->pieces, __VA_ARGS__) /* base/sink.h */

static const char *c_(const out *o, const char *code) { return o->color ? code : ""; }
#define BOLD "\033[1m"
#define RED "\033[31m"
#define YEL "\033[33m"
#define CYAN "\033[36m" /* settings and commands, set apart from prose */
#define DIM "\033[2m"
#define RST "\033[0m"

/* An Xid finding says in words what the code means and where the fault usually is, from NVIDIA's
 * catalog (patterns/context/xid.json), so that "79" is read as "replace or reseat this GPU". */
static void xid_line(out *o, const finding *f)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(f->memory, "xid");
    const char *meaning = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f->memory, "xid_meaning"));
    const char *cause = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f->memory, "xid_cause"));
    if (!cJSON_IsNumber(x) || !meaning || !cause)
        return;
    const char *hint = strcmp(cause, "hardware") == 0      ? "usually faulty hardware: drain the node, have the GPU checked or replaced"
                       : strcmp(cause, "application") == 0 ? "usually a bug in the program or its input, not the GPU"
                       : strcmp(cause, "driver") == 0      ? "usually the driver or GPU firmware: update it, reset the GPU"
                                                           : "a follow-on report: look for the error before it";
    w(o, "  Xid %.0f: %s (%s)\n", x->valuedouble, meaning, hint);
}

/* A CUDA memory snapshot read beside the OOM (src/dumps/memsnap.c): what it measured, so that
 * fragmentation is stated, not guessed, and the largest allocation sites are named. */
static void snapshot_line(out *o, const finding *f)
{
    const cJSON *sn = cJSON_GetObjectItemCaseSensitive(f->memory, "snapshot");
    if (!cJSON_IsObject(sn))
        return;
    char res[48], al[48], lf[48], fc[48], rq[48];
    values_human_bytes(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sn, "reserved_bytes")), res, sizeof res);
    values_human_bytes(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sn, "allocated_bytes")), al, sizeof al);
    values_human_bytes(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sn, "largest_free_block_bytes")), lf, sizeof lf);
    values_human_bytes(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sn, "free_cached_bytes")), fc, sizeof fc);
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(sn, "requested_bytes");
    values_human_bytes(cJSON_GetNumberValue(req), rq, sizeof rq);
    w(o, "  memory snapshot: %s reserved, %s allocated in %.0f segments; largest free block %s of %s free in the cache "
         "(fragmentation %.0f%%)",
      res, al, cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sn, "segments")), lf, fc,
      100.0 * cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sn, "fragmentation")));
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sn, "fragmented")))
        w(o, ": the %s request fit the free cache but no free block", rq);
    else if (cJSON_IsNumber(req))
        w(o, "; request %s", rq);
    w(o, "\n");
    const cJSON *site;
    int n = 0;
    cJSON_ArrayForEach(site, cJSON_GetObjectItemCaseSensitive(sn, "top_sites"))
    {
        if (++n > 3)
            break;
        char b[48];
        values_human_bytes(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(site, "bytes")), b, sizeof b);
        const char *where = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(site, "site"));
        w(o, "    %s held by %s\n", b, E(o, where ? where : "?"));
    }
}

/* The GPU at the failure as a bar and the job's memory trend as a sparkline (emit/membar.h), each
 * with its figures in words. */
static void memory_pictures(out *o, const finding *f)
{
    char pic[1024], words[512];
    int uni = membar_unicode();
    /* the bar and the request beside it fit the width on a line of their own (at most 2 * cells + 19) */
    unsigned cells = o->width > 99 ? 40 : o->width > 27 ? (o->width - 19) / 2 : 4;
    if (membar_gpu(f->memory, uni, cells, pic, sizeof pic) && membar_gpu_words(f->memory, words, sizeof words))
        w(o, "  GPU at the failure:\n    %s\n    %s\n", pic, words);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(f->memory, "trend");
    if (membar_spark(t, uni, pic, sizeof pic) && membar_trend_words(t, words, sizeof words))
        w(o, "  memory trend: %s %s\n", pic, E(o, words));
    /* a snapshot that cannot be this failure: its figures as context, and why nothing is concluded */
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(f->memory, "snapshot_context");
    const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ctx, "taken_at_another_moment"));
    if (why) {
        char res[48], al[48];
        values_human_bytes(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ctx, "reserved_bytes")), res, sizeof res);
        values_human_bytes(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ctx, "allocated_bytes")), al, sizeof al);
        w(o, "  memory snapshot taken at another moment (%s): %s reserved, %s allocated; context only, nothing "
             "concluded from it\n",
          E(o, why), res, al);
    }
}

/* Where the quoted failure line starts: at the part that carries the class and the numbers (the
 * pattern's literal, from the sentence it opens), when the start of the line would push it past the
 * width ("[enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate memory:
 * you tried to allocate 268435456 bytes" lost all of it). 0 when the line's start will do. */
static size_t quote_start(const finding *f, const char *line, unsigned width)
{
    const char *best = NULL;
    for (size_t i = 0; i < f->pattern->n_literals; i++) {
        const char *p = strcasestr(line, f->pattern->literals[i]);
        if (p && (!best || p < best))
            best = p;
    }
    size_t at = best ? (size_t)(best - line) : 0;
    if (!best || at + strlen(f->pattern->literals[0]) + 8 < (width > 40 ? width - 12 : 28))
        return 0; /* it shows already */
    /* back to the start of its sentence or clause, if near: ". ", ": ", "] " */
    size_t b = at;
    while (b > 0 && at - b < 40 && !(line[b - 1] == ' ' && b >= 2 && strchr(".:]", line[b - 2])))
        b--;
    return b > 0 && at - b < 40 ? b : at;
}

static void sentence(out *o, const result_finding *rf)
{
    const finding *f = rf->f;
    char loc[1200], nums[1024], what[1600];
    report_where(f, loc, sizeof loc);
    report_numbers(f, nums, sizeof nums);
    report_sentence(f, what, sizeof what);
    tax_framework fw = rf->framework;
    w(o, "%s%sRoot cause:%s %s%s%s [%s, %s]\n", c_(o, BOLD), c_(o, RED), c_(o, RST), c_(o, BOLD), E(o, what), c_(o, RST),
      tax_class_name(f->cls), fw != FW_UNKNOWN ? tax_framework_name(fw) : "framework unknown");
    w(o, "  at %s", E(o, loc));
    if (f->occurrences > 1)
        w(o, ", seen %llu times", (unsigned long long)f->occurrences);
    if (f->ranks.n > 1)
        w(o, " on %zu ranks", f->ranks.n);
    w(o, "\n");
    /* the other windows the same failure was seen through (result.h: the reported one first) */
    for (size_t k = 1; k < rf->n_sources && k <= 3; k++)
        w(o, "  also %s: %s:%llu\n", rf->sources[k].kind, E(o, rf->sources[k].path),
          (unsigned long long)rf->sources[k].line);
    if (rf->n_sources > 4)
        w(o, "  and %zu more windows (-f json: sources)\n", rf->n_sources - 4);
    if (nums[0])
        w(o, "  numbers: %s\n", E(o, nums));
    xid_line(o, f);
    memory_pictures(o, f);
    snapshot_line(o, f);
    if (f->phase_evidence)
        w(o, "  %sphase from %s%s\n", c_(o, DIM), E(o, f->phase_evidence), c_(o, RST));
    if (f->n_evidence) {
        o->cut = 1; /* one line of the log, cut at a word to the width */
        size_t from = quote_start(f, f->evidence[0], o->width);
        w(o, "  %s> %s%s%s\n", c_(o, DIM), from ? "\xe2\x80\xa6" : "", E_(o, f->evidence[0] + from, 2000), c_(o, RST));
    }
    if (f->note)
        w(o, "  note: %s\n", E(o, f->note));
}

static void advice(out *o, const result_finding *rf)
{
    const cJSON *d = rf->diagnosis;
    const cJSON *c;
    if (d) {
        w(o, "  %sDiagnosis:%s\n", c_(o, BOLD), c_(o, RST));
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(d, "conclusions"))
        {
            const cJSON *what = cJSON_GetObjectItemCaseSensitive(c, "what");
            const cJSON *ar = cJSON_GetObjectItemCaseSensitive(c, "arithmetic");
            w(o, "    - %s (%s)\n", E(o, cJSON_IsString(what) ? what->valuestring : ""),
              E(o, cJSON_IsString(ar) ? ar->valuestring : ""));
        }
    }
    const cJSON *r = rf->remediation;
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(r, "steps");
    if (cJSON_GetArraySize(steps) > 0) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "id");
        w(o, "  %sWhat to change%s (checklist %s; `oomscan --explain %s` for all steps):\n", c_(o, BOLD), c_(o, RST),
          id->valuestring, id->valuestring);
        int n = 0;
        const cJSON *st;
        cJSON_ArrayForEach(st, steps)
        {
            /* steps the diagnosis rules out come last (advice.h): the report stops before them */
            if (++n > 3 || cJSON_GetObjectItemCaseSensitive(st, "premise_refuted"))
                break;
            const cJSON *dd = cJSON_GetObjectItemCaseSensitive(st, "do");
            w(o, "    %d. %s\n", n, cJSON_IsString(dd) ? dd->valuestring : "");
            const cJSON *set;
            cJSON_ArrayForEach(set, cJSON_GetObjectItemCaseSensitive(st, "settings"))
            {
                /* as the user types it (advice/setting.h), "32 -> 16" when the log printed the value */
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(set, "text");
                if (cJSON_IsString(t)) {
                    /* set apart from prose, whole on its own line: it is pasted, never broken */
                    o->cut = TEXTFIT_KEEP;
                    w(o, "       %s%s%s\n", c_(o, CYAN), E(o, t->valuestring), c_(o, RST));
                }
            }
        }
    }
}

static int name_cmp(const char *path, const char *member, const finding *f)
{
    int c = strcmp(path, f->first.path);
    if (c)
        return c;
    return strcmp(member ? member : "", f->first.member ? f->first.member : "");
}

static int loc_name_cmp(const void *a, const void *b)
{
    const finding *x = *(const finding *const *)a, *y = *(const finding *const *)b;
    return name_cmp(x->first.path, x->first.member, y);
}

/* How many of byloc[0..n) (sorted by loc_name_cmp) were first seen in path/member. */
static size_t count_at(const finding **byloc, size_t n, const char *path, const char *member)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first not below */
        size_t mid = lo + (hi - lo) / 2;
        if (name_cmp(path, member, byloc[mid]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t k = lo;
    while (k < n && name_cmp(path, member, byloc[k]) == 0)
        k++;
    return k - lo;
}

/* natural order of inputs (rank5 before rank46), for the per-input lines */
static int input_natural_cmp(const void *a, const void *b, void *ctx)
{
    const input_record *in = ctx;
    const input_record *x = &in[*(const size_t *)a], *y = &in[*(const size_t *)b];
    int c = strverscmp(x->path, y->path);
    if (!c)
        c = strverscmp(x->member ? x->member : "", y->member ? y->member : "");
    return c ? c : (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

/* -v: one line per input, in natural order, with the findings first seen there. 0, or -1 out of memory. */
static int input_lines(out *o, const result *r)
{
    /* findings per input: the reported findings sorted by where they were first seen, then a binary
     * search per input (thousands of inputs must not cost inputs x findings) */
    const finding **byloc = malloc((r->n + 1) * sizeof *byloc);
    size_t *order = malloc((r->scan.n_inputs + 1) * sizeof *order);
    if (!byloc || !order) {
        free(byloc);
        free(order);
        return -1;
    }
    for (size_t i = 0; i < r->n; i++)
        byloc[i] = r->items[i].f;
    if (r->n > 1)
        qsort(byloc, r->n, sizeof *byloc, loc_name_cmp);
    for (size_t i = 0; i < r->scan.n_inputs; i++)
        order[i] = i;
    /* glibc's qsort_r: the inputs are the comparison's context, so writers may run at once */
    qsort_r(order, r->scan.n_inputs, sizeof *order, input_natural_cmp, (void *)r->scan.inputs);
    for (size_t k = 0; k < r->scan.n_inputs; k++) {
        const input_record *in = &r->scan.inputs[order[k]];
        size_t nf = count_at(byloc, r->n, in->path, in->member);
        const char *c = in->container ? in->container : "";
        const char *why = in->error                       ? in->error
                          : strcmp(c, "oomscan") == 0 ? "oomscan's own output, not read as a log: oomscan merge reads it"
                          : strcmp(c, "binary") == 0  ? "binary data in its first 4 KiB, not read; --binary reads it"
                                                      : NULL;
        /* the reset before the newline: after it, a pager or the next line would show it */
        w(o, "%s%s%s%s: %s, %llu lines, %llu bytes, %zu finding(s)%s%s%s%s\n", c_(o, DIM), E(o, in->path),
          in->member ? ":" : "", E(o, in->member),
          in->status == INPUT_OK ? "ok" : in->status == INPUT_PARTIAL ? "partial" : "error", (unsigned long long)in->lines,
          (unsigned long long)in->bytes, nf, why ? " (" : "", E(o, why), why ? ")" : "", c_(o, RST));
    }
    free(order);
    free(byloc);
    return 0;
}

/* The inventory in one line: inputs read, skipped (and why), unreadable. Returns the number read. */
static size_t inventory(out *o, const result *r, int verbose)
{
    result_tally t;
    result_tally_inputs(r->scan.inputs, r->scan.n_inputs, &t);
    size_t read = t.read, bad = t.unreadable, binary = t.binary, own = t.own_output;
    unsigned long long bytes = t.bytes, lines = t.lines;
    size_t skipped = binary + own + r->scan.excluded + r->scan.too_large;
    char why[256] = "";
    size_t n = 0;
    const struct {
        size_t count;
        const char *what;
    } parts[] = {{binary, "binary"},
                 {r->scan.excluded, "--exclude"},
                 {r->scan.too_large, "over --max-filesize"},
                 {own, "oomscan's own output"}};
    for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
        if (parts[k].count && n < sizeof why)
            n += (size_t)snprintf(why + n, sizeof why - n, "%s%zu %s", n ? ", " : "", parts[k].count, parts[k].what);
    w(o, "%s%zu input(s) read (%llu bytes, %llu lines)", c_(o, DIM), read, bytes, lines);
    if (skipped)
        w(o, ", %zu skipped (%s)", skipped, why);
    if (bad)
        w(o, ", %zu unreadable", bad);
    w(o, "%s%s\n", verbose || !(bad || skipped) ? "" : "; -v lists each input", c_(o, RST));
    return read;
}

oomscan_status emit_text(const result *r, int color, int verbose, unsigned width, oomscan_write_fn fn, void *ud)
{
    out o = {.fn = fn, .ud = ud, .color = color, .width = width ? width : 80};
    o.pieces = (sink){pieces_in, &o, 0};
    const story *st = r->scan.st;
    /* what was read first, the answer last: on a 24-row terminal the last screen is the answer */
    if (verbose && input_lines(&o, r) != 0) {
        free(o.line);
        return OOMSCAN_ERR_NOMEM;
    }
    size_t read = inventory(&o, r, verbose);
    if (verbose && r->n > 0) {
        w(&o, "\nAll findings:\n");
        for (size_t i = 0; i < r->n; i++) {
            const finding *f = r->items[i].f;
            char loc[1200], nums[1024];
            report_where(f, loc, sizeof loc);
            report_numbers(f, nums, sizeof nums);
            w(&o, "  [%s] %s %s (%s) at %s, %llu time(s)%s%s\n", f->is_root ? "root" : "consequence",
              tax_class_name(f->cls), tax_phase_name(f->phase), f->id, E(&o, loc), (unsigned long long)f->occurrences,
              nums[0] ? "; " : "", E(&o, nums));
            if (f->n_evidence) {
                o.cut = 1;
                w(&o, "      > %s\n", E_(&o, f->evidence[0], 2000));
            }
        }
    }
    w(&o, "\n");
    if (r->n == 0)
        w(&o, read ? "No failure found.\n" : "Nothing scanned: no input could be read, so no answer (not \"no failure\").\n");
    /* one story per job: its roots together, under the job's name when the inputs hold several jobs */
    size_t *byjob = NULL;
    if (st->n_jobs > 1) {
        size_t *idx = malloc((r->n + 1) * sizeof *idx);
        byjob = malloc((r->n + 1) * sizeof *byjob);
        if (!idx || !byjob) {
            free(idx);
            free(byjob);
            free(o.line);
            return OOMSCAN_ERR_NOMEM;
        }
        for (size_t i = 0; i < r->n; i++)
            idx[i] = r->items[i].index;
        report_group_by_job(st, idx, r->n, byjob);
        free(idx);
    }
    size_t roots = 0, last_job = (size_t)-1;
    for (size_t i = 0; i < r->n; i++) {
        const result_finding *rf = byjob ? result_item(r, byjob[i]) : &r->items[i];
        if (!rf || !rf->is_root)
            continue;
        if (roots++)
            w(&o, "\n");
        if (byjob && rf->f->job_no != last_job) {
            if (!(rf->job && rf->job[0]) && rf->f->run[0]) /* a run of no job (docs/taxonomy.md) */
                w(&o, "%sRun %s:%s\n", c_(&o, BOLD), E(&o, rf->f->run), c_(&o, RST));
            else
                w(&o, "%sJob %s:%s\n", c_(&o, BOLD), rf->job && rf->job[0] ? E(&o, rf->job) : "(not named in the logs)",
                  c_(&o, RST));
            last_job = rf->f->job_no;
        }
        sentence(&o, rf);
        advice(&o, rf);
        /* the cascade that follows from this root, counted by class */
        report_cascade_row rows[CLS__COUNT];
        if (report_cascade(st, rf->index, rows)) {
            w(&o, "  %sThen, as consequences:%s\n", c_(&o, YEL), c_(&o, RST));
            for (int c = 0; c < CLS__COUNT; c++)
                if (rows[c].findings)
                    w(&o, "    %-22s %llu line(s) in %zu finding(s)%s%s\n", tax_class_name((tax_class)c),
                      (unsigned long long)rows[c].lines, rows[c].findings, rows[c].ranks[0] ? ", ranks " : "",
                      E(&o, rows[c].ranks));
        }
    }
    free(byjob);
    if (o.n)
        line_end(&o);
    free(o.line);
    return o.failed ? OOMSCAN_ERR_IO : OOMSCAN_OK;
}
