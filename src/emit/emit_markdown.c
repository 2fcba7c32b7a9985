/* emit_markdown.c - the report to attach: one section per job, root cause first, its numbers as a
 * table, the diagnosis, the checklist as the user would type it, and the cascade as a table. Written
 * in the Markdown that GitHub, GitLab and Jira Cloud all render (ATX headings, pipe tables, fenced code,
 * no HTML). Writers only read the result. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sink.h"
#include "emit/emit.h"
#include "emit/membar.h"
#include "emit/report.h"
#include "emit/safe.h"

typedef sink out;
#define w(o, ...) sink_printf((o), __VA_ARGS__) /* base/sink.h */

/* Text from a log inside a table cell or inline code: control bytes and invalid UTF-8 become U+FFFD
 * (a log line can hold ESC sequences meant for a terminal, a path any bytes), and what Markdown would
 * read as syntax (| ` * _ [ ] < > and a leading #) is escaped, so a cell stays one cell and nothing
 * renders as a link or HTML. Shortened to `max` bytes between characters, never inside one. */
static void w_inline(out *o, const char *s, size_t max)
{
    char buf[2048];
    size_t k = 0, i = 0, n = strlen(s);
    while (i < n && i < max && k + 8 < sizeof buf) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80 ? 1 : safe_utf8_len((const unsigned char *)s + i, n - i);
        if (len > 1 && i + len > max)
            break; /* the character would cross the cut */
        if (c < 0x20 || c == 0x7f || len == 0) {
            memcpy(buf + k, "\xef\xbf\xbd", 3);
            k += 3;
            i++;
        } else if (len > 1) {
            memcpy(buf + k, s + i, len);
            k += len;
            i += len;
        } else {
            if (strchr("|`*_[]<>\\#", c))
                buf[k++] = '\\';
            buf[k++] = (char)c;
            i++;
        }
    }
    buf[k] = '\0';
    w(o, "%s%s", buf, i < n ? "…" : "");
}

/* A log line in a fenced block: the fence is longer than any run of backticks in the text, control
 * bytes are replaced as above. */
static void w_block(out *o, const char *s)
{
    size_t run = 0, longest = 0;
    for (const char *p = s; *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        if (run > longest)
            longest = run;
    }
    size_t fence = longest >= 3 ? longest + 1 : 3;
    char f[64];
    memset(f, '`', fence < sizeof f ? fence : sizeof f - 1);
    f[fence < sizeof f ? fence : sizeof f - 1] = '\0';
    w(o, "%stext\n", f);
    char buf[2048];
    size_t k = 0;
    for (size_t i = 0; s[i] && i < 600 && k + 4 < sizeof buf; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            memcpy(buf + k, "\xef\xbf\xbd", 3);
            k += 3;
        } else {
            buf[k++] = (char)c;
        }
    }
    buf[k] = '\0';
    w(o, "%s\n%s\n", buf, f);
}

/* "key=value, key=value" (report_numbers) as table rows. */
static void numbers_table(out *o, const finding *f)
{
    char nums[1024];
    report_numbers(f, nums, sizeof nums);
    if (!nums[0])
        return;
    w(o, "\n| number | value |\n| --- | --- |\n");
    for (char *save = NULL, *kv = strtok_r(nums, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        while (*kv == ' ')
            kv++;
        char *eq = strchr(kv, '=');
        if (!eq)
            continue;
        *eq = '\0';
        w(o, "| ");
        w_inline(o, kv, 80);
        w(o, " | ");
        w_inline(o, eq + 1, 200);
        w(o, " |\n");
    }
}

/* The GPU bar and the trend's sparkline (emit/membar.h) in a code block, so that they keep their
 * columns, each followed by its figures in words. */
static void memory_pictures(out *o, const finding *f)
{
    char bar[1024], bw[512], sp[512], tw[512];
    int uni = membar_unicode();
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(f->memory, "trend");
    int has_bar = membar_gpu(f->memory, uni, 40, bar, sizeof bar) && membar_gpu_words(f->memory, bw, sizeof bw);
    int has_trend = membar_spark(t, uni, sp, sizeof sp) && membar_trend_words(t, tw, sizeof tw);
    if (!has_bar && !has_trend)
        return;
    w(o, "\n```\n");
    if (has_bar)
        w(o, "GPU at the failure: %s\n", bar);
    if (has_trend)
        w(o, "memory trend:       %s\n", sp);
    w(o, "```\n\n");
    if (has_bar)
        w(o, "- GPU: %s\n", bw);
    if (has_trend) {
        w(o, "- memory trend: ");
        w_inline(o, tw, 300);
        w(o, "\n");
    }
}

/* long: one root finding's Markdown section, written top to bottom in the order the reader sees it. */
static void root_section(out *o, const result *r, const result_finding *rf)
{
    const finding *f = rf->f;
    char title[1024], what[1600], loc[1200];
    report_title(f, title, sizeof title);
    report_sentence(f, what, sizeof what);
    report_where(f, loc, sizeof loc);

    w(o, "### Root cause: ");
    w_inline(o, title, 300);
    w(o, "\n\n");
    w_inline(o, what, 600);
    w(o, ".\n\n");
    w(o, "- class: `%s`\n", tax_class_name(f->cls));
    w(o, "- phase: `%s`%s%s%s\n", tax_phase_name(f->phase), rf->phase_confidence ? " (" : "",
      rf->phase_confidence ? rf->phase_confidence : "", rf->phase_confidence ? ")" : "");
    if (f->phase_evidence) {
        w(o, "  - from ");
        w_inline(o, f->phase_evidence, 300);
        w(o, "\n");
    }
    w(o, "- framework: `%s`\n", tax_framework_name(rf->framework));
    w(o, "- where: ");
    w_inline(o, loc, 400);
    if (f->occurrences > 1)
        w(o, ", seen %llu times", (unsigned long long)f->occurrences);
    if (f->ranks.n > 1)
        w(o, " on %zu ranks", f->ranks.n);
    w(o, "\n- fingerprint: `%s`\n", f->id);
    if (f->note) {
        w(o, "- note: ");
        w_inline(o, f->note, 400);
        w(o, "\n");
    }
    numbers_table(o, f);
    memory_pictures(o, f);
    if (f->n_evidence) {
        w(o, "\n");
        w_block(o, f->evidence[0]);
    }

    const cJSON *c, *d = rf->diagnosis;
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(d, "conclusions")) > 0) {
        w(o, "\n#### Diagnosis\n\n");
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(d, "conclusions"))
        {
            const char *wh = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "what"));
            const char *ar = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "arithmetic"));
            w(o, "- ");
            w_inline(o, wh ? wh : "", 400);
            if (ar) {
                w(o, " (");
                w_inline(o, ar, 400);
                w(o, ")");
            }
            w(o, "\n");
        }
    }

    const cJSON *rem = rf->remediation, *steps = cJSON_GetObjectItemCaseSensitive(rem, "steps");
    if (cJSON_GetArraySize(steps) > 0) {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rem, "id"));
        w(o, "\n#### What to change\n\n");
        int n = 0;
        const cJSON *st;
        cJSON_ArrayForEach(st, steps)
        {
            const char *dd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "do"));
            w(o, "%d. ", ++n);
            /* a step the diagnosis rules out (advice.h puts it last) says so before anything else, as
             * the text report and tickets do: it read as a normal step (issue 33 item 6) */
            const char *ruled = cJSON_GetStringValue(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(st, "premise_refuted"), "what"));
            if (ruled) {
                w(o, "**Ruled out by the diagnosis** (");
                w_inline(o, ruled, 400);
                w(o, "): ");
            }
            w_inline(o, dd ? dd : "", 600);
            w(o, "\n");
            /* settings as the user types them (advice/setting.h) go in one block, ready to paste;
             * those the advice can only say in words ("form": "words") and notes stay prose */
            const cJSON *set, *sets = cJSON_GetObjectItemCaseSensitive(st, "settings");
            int typed = 0;
            cJSON_ArrayForEach(set, sets)
            {
                const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(set, "text"));
                const char *form = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(set, "form"));
                if (!t || (form && strcmp(form, "words") == 0))
                    continue;
                w(o, typed++ ? "" : "   ```\n");
                w(o, "   %s\n", t);
            }
            if (typed)
                w(o, "   ```\n");
            cJSON_ArrayForEach(set, sets)
            {
                const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(set, "text"));
                const char *form = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(set, "form"));
                const char *note = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(set, "note"));
                if (t && form && strcmp(form, "words") == 0) {
                    w(o, "   - ");
                    w_inline(o, t, 400);
                    w(o, "\n");
                }
                if (note) {
                    w(o, "   - ");
                    w_inline(o, note, 400);
                    w(o, "\n");
                }
            }
        }
        if (id)
            w(o, "\nThe whole checklist: `oomscan --explain %s`.\n", id);
    }

    report_cascade_row rows[CLS__COUNT];
    if (report_cascade(r->scan.st, rf->index, rows)) {
        w(o, "\n#### Then, as consequences\n\n| class | findings | lines | ranks |\n| --- | ---: | ---: | --- |\n");
        for (int k = 0; k < CLS__COUNT; k++)
            if (rows[k].findings) {
                w(o, "| `%s` | %zu | %llu | ", tax_class_name((tax_class)k), rows[k].findings,
                  (unsigned long long)rows[k].lines);
                w_inline(o, rows[k].ranks, 400);
                w(o, " |\n");
            }
    }
}

oomscan_status emit_markdown(const result *r, oomscan_write_fn fn, void *ud)
{
    out o = {fn, ud, 0};
    /* jobs in order of their first root; "" (no job stated) is one job of its own */
    const char **jobs = calloc(r->n ? r->n : 1, sizeof *jobs);
    if (!jobs)
        return OOMSCAN_ERR_NOMEM;
    size_t nj = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (!r->items[i].is_root)
            continue;
        const char *j = r->items[i].job ? r->items[i].job : "";
        size_t k = 0;
        while (k < nj && strcmp(jobs[k], j) != 0)
            k++;
        if (k == nj)
            jobs[nj++] = j;
    }
    if (nj == 0)
        w(&o, "## oomscan: no failure found\n");
    for (size_t k = 0; k < nj; k++) {
        if (k)
            w(&o, "\n---\n\n");
        size_t roots = 0, all = 0;
        for (size_t i = 0; i < r->n; i++)
            if (strcmp(r->items[i].job ? r->items[i].job : "", jobs[k]) == 0)
                all++, roots += r->items[i].is_root;
        w(&o, "## oomscan: ");
        if (jobs[k][0]) {
            w(&o, "job ");
            w_inline(&o, jobs[k], 120);
            w(&o, ", ");
        }
        w(&o, "%zu root cause%s, %zu finding%s\n\n", roots, roots == 1 ? "" : "s", all, all == 1 ? "" : "s");
        size_t shown = 0;
        for (size_t i = 0; i < r->n; i++) {
            const result_finding *rf = &r->items[i];
            if (!rf->is_root || strcmp(rf->job ? rf->job : "", jobs[k]) != 0)
                continue;
            if (shown++)
                w(&o, "\n");
            root_section(&o, r, rf);
        }
    }
    /* the inputs, so a reader of the attachment knows what was (and was not) read */
    if (r->scan.n_inputs) {
        w(&o, "\n#### Inputs\n\n| input | status | lines |\n| --- | --- | ---: |\n");
        for (size_t i = 0; i < r->scan.n_inputs; i++) {
            const input_record *in = &r->scan.inputs[i];
            char name[1200];
            snprintf(name, sizeof name, "%s%s%s", in->path, in->member ? ":" : "", in->member ? in->member : "");
            w(&o, "| ");
            w_inline(&o, name, 300);
            w(&o, " | %s", in->status == INPUT_OK ? "ok" : in->status == INPUT_PARTIAL ? "partial" : "error");
            if (in->error) {
                w(&o, ": ");
                w_inline(&o, in->error, 300);
            }
            w(&o, " | %llu |\n", (unsigned long long)in->lines);
        }
    }
    free(jobs);
    return o.failed ? OOMSCAN_ERR_IO : OOMSCAN_OK;
}
