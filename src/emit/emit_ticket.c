/* emit_ticket.c - the ticketing feed (docs/ticketing.md): one JSON object per line for each root
 * finding, with a title, a body a person reads in the tracker, labels, a severity and the fingerprint
 * as the dedup key; or the same wrapped as the request body of GitHub's or Jira's create-issue call.
 * The words come from report.c and the result (its advice asked once for every writer), so a ticket
 * says what the text report says. Writers only read. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit/emit.h"
#include "emit/adf.h"
#include "emit/report.h"
#include "emit/safe.h"
#include "base/jsonget.h"

/* Trackers cap titles (Jira: 255 characters); a cut title still starts with what failed. */
#define TITLE_MAX 240

/* The body's markup: GitHub renders Markdown; Jira's REST v2 renders its own wiki notation. One table
 * per dialect keeps a single body writer. */
typedef struct {
    const char *h3;                  /* heading prefix */
    const char *bold;                /* strong, both sides */
    const char *code_open, *code_close;
    const char *pre_open, *pre_close;
    const char *item, *subitem;      /* bullet, bullet under a numbered step */
    int numbered;                    /* 1: "N. ", 0: "# " (Jira numbers itself) */
    const char *rule;
    const char *escape;              /* characters that need a backslash in prose */
} markup;

static const markup MD = {"### ", "**", "`", "`", "```\n", "\n```\n", "- ", "   - ", 1, "---", "\\`*_[]<>#|"};
static const markup JIRA = {"h3. ", "*", "{{", "}}", "{noformat}\n", "\n{noformat}\n", "* ", "#* ", 0, "----",
                            "\\*_{}[]|^~+-?!#"};

/* A growing string; `failed` is sticky so callers check once at the end. */
typedef struct {
    char *p;
    size_t len, cap;
    int failed;
} sbuf;

/* Room for n more bytes and a terminator; 0, or -1 (and `failed` set) when out of memory. */
static int sb_reserve(sbuf *b, size_t n)
{
    if (b->failed)
        return -1;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return -1;
        }
        b->p = p;
        b->cap = cap;
    }
    return 0;
}

static void sb_add(sbuf *b, const char *s, size_t n)
{
    if (sb_reserve(b, n) != 0)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_puts(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

/* Formats straight into the buffer: measured first, so nothing is ever cut. */
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || sb_reserve(b, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Prose: characters the tracker would read as markup get a backslash; line breaks become spaces so a
 * value never breaks a list item. */
static void put_text(sbuf *b, const markup *m, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '\n' || *s == '\r') {
            sb_add(b, " ", 1);
            continue;
        }
        if (strchr(m->escape, *s))
            sb_add(b, "\\", 1);
        sb_add(b, s, 1);
    }
}

/* Inline code: Markdown needs a longer fence when the text holds a backtick. */
static void put_code(sbuf *b, const markup *m, const char *s)
{
    int wide = m == &MD && strchr(s, '`') != NULL;
    sb_puts(b, wide ? "`` " : m->code_open);
    for (; *s; s++)
        sb_add(b, *s == '\n' || *s == '\r' ? " " : s, 1);
    sb_puts(b, wide ? " ``" : m->code_close);
}

static void put_pre(sbuf *b, const markup *m, const char *s)
{
    /* a log line holding a fence would end the block early: fall back to the other fence */
    int tilde = m == &MD && strstr(s, "```") != NULL;
    sb_puts(b, tilde ? "~~~~\n" : m->pre_open);
    sb_puts(b, s);
    sb_puts(b, tilde ? "\n~~~~\n" : m->pre_close);
}

/* pre, the text (escaped), post; nothing at all when the text is absent. */
static void put_opt(sbuf *b, const markup *m, const char *pre, const char *s, const char *post)
{
    if (!s)
        return;
    sb_puts(b, pre);
    put_text(b, m, s);
    sb_puts(b, post);
}

static void put_heading(sbuf *b, const markup *m, const char *title) { sb_printf(b, "\n%s%s\n\n", m->h3, title); }

/* docs/ticketing.md: "critical" for a GPU hardware fault (the node needs attention whatever the job
 * does next), "high" for any other failure that ended the job on its own, "medium" for a job ended by
 * its time limit or an echo-type failure standing as root (its cause may be in logs not given). */
static const char *severity_of(const finding *f)
{
    if (f->cls == CLS_GPU_HARDWARE)
        return "critical";
    if (f->cls == CLS_TIME_LIMIT || tax_class_is_echo(f->cls))
        return "medium";
    return "high";
}

static void put_loc(sbuf *b, const markup *m, const story_loc *l)
{
    char where[1200];
    snprintf(where, sizeof where, "%s%s%s:%llu", l->path ? l->path : "", l->member ? ":" : "", l->member ? l->member : "",
             (unsigned long long)l->line);
    put_code(b, m, where);
    if (l->has_time) {
        char tm[64];
        timefmt_format(&l->time, tm, sizeof tm);
        sb_printf(b, " (%s)", tm);
    }
}

/* A fact line's start: a bullet and a bold label. */
static void put_label(sbuf *b, const markup *m, const char *label)
{
    sb_printf(b, "%s%s%s:%s ", m->item, m->bold, label, m->bold);
}

static void put_facts(sbuf *b, const markup *m, const result_finding *rf)
{
    const finding *f = rf->f;
    const char *job = rf->job;
    if (job[0]) {
        put_label(b, m, "Job");
        put_code(b, m, job);
        sb_puts(b, "\n");
    }
    put_label(b, m, "Class");
    put_code(b, m, tax_class_name(f->cls));
    sb_printf(b, ", %sphase:%s ", m->bold, m->bold);
    put_code(b, m, tax_phase_name(f->phase));
    sb_printf(b, ", %sframework:%s ", m->bold, m->bold);
    put_code(b, m, tax_framework_name(rf->framework));
    sb_printf(b, ", %sseverity:%s %s\n", m->bold, m->bold, severity_of(f));
    put_label(b, m, "Seen");
    sb_printf(b, "%llu time(s)", (unsigned long long)f->occurrences);
    if (f->ranks.n) {
        sb_printf(b, " on %zu rank(s): ", f->ranks.n + f->ranks.dropped);
        for (size_t i = 0; i < f->ranks.n; i++)
            sb_printf(b, "%s%s", i ? "," : "", f->ranks.items[i]);
    }
    if (f->hosts.n) {
        sb_printf(b, "; %zu host(s): ", f->hosts.n + f->hosts.dropped);
        for (size_t i = 0; i < f->hosts.n; i++) {
            sb_puts(b, i ? ", " : "");
            put_text(b, m, f->hosts.items[i]);
        }
    }
    sb_puts(b, "\n");
    char nums[1024];
    report_numbers(f, nums, sizeof nums);
    if (nums[0]) {
        put_label(b, m, "Numbers");
        put_code(b, m, nums);
        sb_puts(b, "\n");
    }
    if (f->phase_evidence)
        put_label(b, m, "Phase from");
    put_opt(b, m, "", f->phase_evidence, "\n");
    if (f->note)
        put_label(b, m, "Note");
    put_opt(b, m, "", f->note, "\n");
}

static void put_diagnosis(sbuf *b, const markup *m, const result_finding *rf)
{
    const cJSON *d = rf->diagnosis;
    if (!d)
        return;
    put_heading(b, m, "Diagnosis");
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(d, "conclusions"))
    {
        put_opt(b, m, m->item, json_str(c, "what") ? json_str(c, "what") : "", "");
        put_opt(b, m, " (", json_str(c, "arithmetic"), ")");
        sb_puts(b, "\n");
    }
}

static void put_evidence(sbuf *b, const markup *m, const finding *f)
{
    put_heading(b, m, "Evidence");
    sb_printf(b, "%sfirst at ", m->item);
    put_loc(b, m, &f->first);
    sb_puts(b, "\n");
    if (f->occurrences > 1) {
        sb_printf(b, "%slast at ", m->item);
        put_loc(b, m, &f->last);
        sb_puts(b, "\n");
    }
    if (f->n_evidence) {
        sb_puts(b, "\n");
        sbuf lines = {0};
        for (size_t k = 0; k < f->n_evidence; k++) {
            sb_puts(&lines, k ? "\n" : "");
            sb_puts(&lines, f->evidence[k]);
        }
        if (lines.failed)
            b->failed = 1;
        else
            put_pre(b, m, lines.p ? lines.p : "");
        free(lines.p);
    }
}

/* The checklist as the result states it, with the job's own values ("0.90 -> 0.95") where the log
 * printed them: the same change the text report and the JSON propose. */
static void put_checklist(sbuf *b, const markup *m, const result_finding *rf)
{
    const cJSON *r = rf->remediation;
    const char *id = json_str(r, "id");
    if (!id)
        return;
    put_heading(b, m, "What to change");
    sb_puts(b, "Checklist ");
    put_code(b, m, id);
    put_opt(b, m, " (", json_str(r, "title"), ")");
    sb_puts(b, "; the whole guide: ");
    put_code(b, m, json_str(r, "doc") ? json_str(r, "doc") : "");
    sb_puts(b, " or ");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "oomscan --explain %s", id);
    put_code(b, m, cmd);
    sb_puts(b, ".\n\n");
    int n = 0;
    const cJSON *st;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(r, "steps"))
    {
        if (m->numbered)
            sb_printf(b, "%d. ", ++n);
        else
            sb_puts(b, "# ");
        put_text(b, m, json_str(st, "do") ? json_str(st, "do") : "(step)");
        sb_puts(b, "\n");
        const cJSON *set;
        cJSON_ArrayForEach(set, cJSON_GetObjectItemCaseSensitive(st, "settings"))
        {
            if (!json_str(set, "text"))
                continue;
            sb_puts(b, m->subitem);
            put_code(b, m, json_str(set, "text"));
            sb_puts(b, "\n");
        }
        /* a step the diagnosis rules out (advice.h puts it last) says why */
        const char *why = json_str(cJSON_GetObjectItemCaseSensitive(st, "premise_refuted"), "what");
        if (why) {
            sb_puts(b, m->subitem);
            put_text(b, m, "ruled out by the diagnosis: ");
            put_text(b, m, why);
            sb_puts(b, "\n");
        }
    }
}

static void put_cascade(sbuf *b, const markup *m, const story *st, size_t root)
{
    report_cascade_row rows[CLS__COUNT];
    size_t total = report_cascade(st, root, rows);
    put_heading(b, m, "Cascade");
    if (!total) {
        sb_puts(b, "No consequence of this failure in the logs given.\n");
        return;
    }
    uint64_t lines = 0;
    for (int c = 0; c < CLS__COUNT; c++)
        lines += rows[c].lines;
    sb_printf(b, "%zu consequence finding(s), %llu line(s) in all, followed from this root:\n\n", total,
              (unsigned long long)lines);
    for (int c = 0; c < CLS__COUNT; c++) {
        if (!rows[c].findings)
            continue;
        sb_puts(b, m->item);
        put_code(b, m, tax_class_name((tax_class)c));
        sb_printf(b, ": %llu line(s) in %zu finding(s)%s%s\n", (unsigned long long)rows[c].lines, rows[c].findings,
                  rows[c].ranks[0] ? ", ranks " : "", rows[c].ranks);
    }
}

static char *ticket_body(const result *r, const result_finding *rf, const markup *m)
{
    const finding *f = rf->f;
    sbuf b = {0};
    char what[1600];
    report_sentence(f, what, sizeof what);
    sb_printf(&b, "%sRoot cause:%s ", m->bold, m->bold);
    put_text(&b, m, what);
    sb_puts(&b, ".\n\n");
    put_facts(&b, m, rf);
    put_diagnosis(&b, m, rf);
    put_evidence(&b, m, f);
    put_checklist(&b, m, rf);
    put_cascade(&b, m, r->scan.st, rf->index);
    sb_printf(&b, "\n%s\n\nReported by oomscan %s. Dedup key: ", m->rule, OOMSCAN_VERSION);
    put_code(&b, m, f->id);
    sb_puts(&b, "\n");
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

static cJSON *labels_json(const finding *f, tax_framework fw)
{
    char l[96];
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateString("oomscan"));
    snprintf(l, sizeof l, "class:%s", tax_class_name(f->cls));
    cJSON_AddItemToArray(a, cJSON_CreateString(l));
    snprintf(l, sizeof l, "phase:%s", tax_phase_name(f->phase));
    cJSON_AddItemToArray(a, cJSON_CreateString(l));
    snprintf(l, sizeof l, "framework:%s", tax_framework_name(fw));
    cJSON_AddItemToArray(a, cJSON_CreateString(l));
    return a;
}

static void ticket_title(const result_finding *rf, char *buf, size_t cap)
{
    char t[TITLE_MAX + 1];
    report_title(rf->f, t, sizeof t);
    const char *job = rf->job;
    if (job[0])
        snprintf(buf, cap, "%s (job %s)", t, job);
    else
        snprintf(buf, cap, "%s", t);
    size_t len = strlen(buf);
    if (len > TITLE_MAX) {
        /* never split a UTF-8 sequence: trackers reject invalid text */
        len = TITLE_MAX;
        while (len > 0 && ((unsigned char)buf[len] & 0xC0) == 0x80)
            len--;
        buf[len] = '\0';
    }
}

/* One ticket in the requested style, or NULL when out of memory. */
static cJSON *ticket_json(const result *r, const result_finding *rf, const oomscan_output *out)
{
    const finding *f = rf->f;
    tax_framework fw = rf->framework;
    char title[TITLE_MAX + 64];
    ticket_title(rf, title, sizeof title);
    char *body = ticket_body(r, rf, out->ticket_style == OOMSCAN_TICKET_JIRA ? &JIRA : &MD);
    if (!body)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    if (out->ticket_style == OOMSCAN_TICKET_GITHUB) {
        /* POST /repos/{owner}/{repo}/issues: the dedup key is in the body, where search finds it, and
         * a label of its own, which an edited body cannot lose */
        cJSON_AddStringToObject(o, "title", title);
        cJSON_AddStringToObject(o, "body", body);
        cJSON *labels = labels_json(f, fw);
        char key[40];
        snprintf(key, sizeof key, "oomscan-%s", f->id);
        cJSON_AddItemToArray(labels, cJSON_CreateString(key));
        cJSON_AddItemToObject(o, "labels", labels);
    } else if (out->ticket_style == OOMSCAN_TICKET_JIRA || out->ticket_style == OOMSCAN_TICKET_JIRA_CLOUD) {
        /* POST /rest/api/2/issue (Data Center) or /rest/api/3/issue (Cloud, whose description is an
         * Atlassian Document Format tree made from the Markdown body): Jira labels take no spaces and
         * match exactly in JQL, so the dedup key rides as a label of its own */
        cJSON *fields = cJSON_AddObjectToObject(o, "fields");
        cJSON *project = cJSON_AddObjectToObject(fields, "project");
        cJSON_AddStringToObject(project, "key", out->jira_project);
        cJSON_AddStringToObject(fields, "summary", title);
        if (out->ticket_style == OOMSCAN_TICKET_JIRA_CLOUD) {
            cJSON *adf = adf_from_markdown(body);
            if (!adf) {
                free(body);
                cJSON_Delete(o);
                return NULL;
            }
            cJSON_AddItemToObject(fields, "description", adf);
        } else {
            cJSON_AddStringToObject(fields, "description", body);
        }
        cJSON *type = cJSON_AddObjectToObject(fields, "issuetype");
        cJSON_AddStringToObject(type, "name", out->jira_issuetype ? out->jira_issuetype : "Bug");
        cJSON *labels = labels_json(f, fw);
        char key[40];
        snprintf(key, sizeof key, "oomscan-%s", f->id);
        cJSON_AddItemToArray(labels, cJSON_CreateString(key));
        cJSON_AddItemToObject(fields, "labels", labels);
    } else {
        const char *job = rf->job;
        cJSON_AddStringToObject(o, "dedup_key", f->id);
        cJSON_AddStringToObject(o, "title", title);
        cJSON_AddStringToObject(o, "body", body);
        cJSON_AddItemToObject(o, "labels", labels_json(f, fw));
        cJSON_AddStringToObject(o, "severity", severity_of(f));
        if (job[0])
            cJSON_AddStringToObject(o, "job_id", job);
        else
            cJSON_AddNullToObject(o, "job_id");
        report_cascade_row rows[CLS__COUNT];
        cJSON_AddNumberToObject(o, "consequences", (double)report_cascade(r->scan.st, rf->index, rows));
    }
    free(body);
    return o;
}

oomscan_status emit_tickets(const result *r, const oomscan_output *out, oomscan_write_fn fn, void *ud)
{
    if ((out->ticket_style == OOMSCAN_TICKET_JIRA || out->ticket_style == OOMSCAN_TICKET_JIRA_CLOUD) &&
        (!out->jira_project || !out->jira_project[0]))
        return OOMSCAN_ERR_USAGE;
    oomscan_status st = OOMSCAN_OK;
    for (size_t k = 0; k < r->n && !st; k++) {
        if (!r->items[k].is_root)
            continue;
        cJSON *t = ticket_json(r, &r->items[k], out);
        if (t)
            (void)safe_json(t);
        char *txt = t ? cJSON_PrintUnformatted(t) : NULL;
        cJSON_Delete(t);
        if (!txt) {
            st = OOMSCAN_ERR_NOMEM;
            break;
        }
        if (fn(ud, txt, strlen(txt)) != 0 || fn(ud, "\n", 1) != 0)
            st = OOMSCAN_ERR_IO;
        free(txt);
    }
    return st;
}
