/* explain_text.c - `oomscan --explain` for a person at a terminal (issue 33 item 7): a checklist page
 * or one finding's own checklist, wrapped to the width under each piece's indent, a setting or command
 * on a line of its own (cyan on a terminal, never broken), no Markdown syntax and no internal source
 * tags (`seed:...`, oomscan's notes of the frameworks' guides, mean nothing to a reader). The checklist
 * page comes as the Markdown oomscan_explain writes (advice/remedy.c, the one renderer of a checklist);
 * it is read back into the shape a finding's `remediation` has, so both are printed by one function. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "oomscan.h"
#include "base/jsonget.h"
#include "emit/textfit.h"

#define BOLD "\033[1m"
#define CYAN "\033[36m"
#define DIM "\033[2m"
#define RST "\033[0m"

typedef struct {
    oomscan_write_fn fn;
    void *ud;
    int color;
    unsigned width;
    int failed;
} out;

/* One logical line, formatted, fitted as `mode` says (textfit.h). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void line(out *o, int mode, const char *fmt, ...)
{
    if (o->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) {
        o->failed = 1;
        return;
    }
    if (textfit_line(s, (size_t)n, o->width, mode, o->fn, o->ud) != 0)
        o->failed = 1;
    free(s);
}

static void blank(out *o)
{
    if (!o->failed && o->fn(o->ud, "\n", 1) != 0)
        o->failed = 1;
}

static const char *on(const out *o, const char *sgr) { return o->color ? sgr : ""; }

/* The step's sources a reader can follow (owner/repo:path, a URL), joined; "" when only oomscan's
 * own notes are cited. */
static void sources_of(const cJSON *st, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(st, "source"))
    {
        if (!cJSON_IsString(s) || strncmp(s->valuestring, "seed:", 5) == 0 || n + 3 >= cap)
            continue;
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", s->valuestring);
        if (n >= cap)
            n = cap - 1;
    }
}

/* The steps of a remediation object in the document's shape: each step's settings under the
 * framework they are for (a step's own `framework`, or each setting's, as a checklist page gives). */
static void steps(out *o, const cJSON *rem)
{
    int n = 0;
    const cJSON *st;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(rem, "steps"))
    {
        const cJSON *refuted = cJSON_GetObjectItemCaseSensitive(st, "premise_refuted");
        const cJSON *first = cJSON_GetObjectItemCaseSensitive(st, "first_because");
        blank(o);
        line(o, TEXTFIT_WRAP, "%s%d. %s%s", on(o, BOLD), ++n, json_str(st, "do") ? json_str(st, "do") : "(step)",
             on(o, RST));
        if (refuted)
            line(o, TEXTFIT_WRAP, "   %sRuled out by the diagnosis:%s %s", on(o, BOLD), on(o, RST),
                 json_str(refuted, "what") ? json_str(refuted, "what") : "");
        if (first)
            line(o, TEXTFIT_WRAP, "   First because: %s", json_str(first, "what") ? json_str(first, "what") : "");
        if (json_str(st, "scope"))
            line(o, TEXTFIT_WRAP, "   %s", json_str(st, "scope"));
        if (json_str(st, "why"))
            line(o, TEXTFIT_WRAP, "   Why: %s", json_str(st, "why"));
        if (json_str(st, "tradeoff"))
            line(o, TEXTFIT_WRAP, "   Trade-off: %s", json_str(st, "tradeoff"));
        const char *shown = NULL;
        const cJSON *set;
        cJSON_ArrayForEach(set, cJSON_GetObjectItemCaseSensitive(st, "settings"))
        {
            const char *fw = json_str(set, "framework") ? json_str(set, "framework") : json_str(st, "framework");
            if (fw && (!shown || strcmp(shown, fw) != 0)) {
                line(o, TEXTFIT_WRAP, "   %s:", fw);
                shown = fw;
            }
            line(o, TEXTFIT_KEEP, "      %s%s%s", on(o, CYAN), json_str(set, "text") ? json_str(set, "text") : "?",
                 on(o, RST));
            if (json_str(set, "note"))
                line(o, TEXTFIT_WRAP, "        %s%s%s", on(o, DIM), json_str(set, "note"), on(o, RST));
        }
        char src[2048];
        sources_of(st, src, sizeof src);
        if (src[0])
            line(o, TEXTFIT_WRAP, "   %sFrom: %s%s", on(o, DIM), src, on(o, RST));
    }
}

static void untick(char *s);

/* A Markdown cell's text: `code` unquoted, "\|" back to "|". New string, or NULL. */
static char *cell_text(const char *s, size_t len)
{
    char *r = malloc(len + 1);
    if (!r)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\\' && i + 1 < len && s[i + 1] == '|')
            continue;
        r[k++] = s[i];
    }
    r[k] = 0;
    return r;
}

/* One settings row of the page, "| fw | `text` (note) |", as {framework, text, note}. */
static cJSON *row_setting(const char *row)
{
    const char *a = row + 2, *bar = strstr(a, " | ");
    const char *tick = bar ? strchr(bar, '`') : NULL;
    if (!tick)
        return NULL;
    /* the text ends at the last backquote before the row's end or its " (note)" */
    const char *end = strrchr(tick + 1, '`');
    if (!end || end == tick)
        return NULL;
    cJSON *s = cJSON_CreateObject();
    char *fw = cell_text(a, (size_t)(bar - a)), *text = cell_text(tick + 1, (size_t)(end - tick - 1));
    if (s && fw && text) {
        cJSON_AddStringToObject(s, "framework", fw);
        cJSON_AddStringToObject(s, "text", text);
        const char *note = strstr(end, " (");
        const char *close = note ? strrchr(note, ')') : NULL;
        if (close) {
            char *nt = cell_text(note + 2, (size_t)(close - note - 2));
            if (nt)
                cJSON_AddStringToObject(s, "note", nt);
            free(nt);
        }
    }
    free(fw);
    free(text);
    return s;
}

/* The checklist page (remedy_markdown's layout) read back: title, the checklist line, the summary, and
 * remediation.steps in the document's shape. */
static cJSON *page_parse(const char *md, size_t len, char **title, char **head, char **summary)
{
    cJSON *rem = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(rem, "steps"), *st = NULL;
    const char *p = md, *e = md + len;
    while (rem && p < e) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(e - p);
        char *l = strndup(p, n);
        p += n + (nl != NULL);
        if (!l)
            break;
        if (strncmp(l, "# ", 2) == 0 && !*title) {
            *title = strdup(l + 2);
        } else if (strncmp(l, "Checklist ", 10) == 0 && !*head) {
            *head = cell_text(l, n); /* its backquotes go below */
        } else if (strncmp(l, "## ", 3) == 0) {
            const char *dot = strstr(l, ". ");
            st = cJSON_CreateObject();
            cJSON_AddStringToObject(st, "do", dot ? dot + 2 : l + 3);
            cJSON_AddItemToArray(list, st);
        } else if (st && (strncmp(l, "Only for a job of:", 18) == 0 || strncmp(l, "Not given to a job of:", 22) == 0 ||
                          strncmp(l, "Listed only when", 16) == 0)) {
            untick(l);
            cJSON_AddStringToObject(st, "scope", l);
        } else if (st && strncmp(l, "Why: ", 5) == 0) {
            cJSON_AddStringToObject(st, "why", l + 5);
        } else if (st && strncmp(l, "Trade-off: ", 11) == 0) {
            cJSON_AddStringToObject(st, "tradeoff", l + 11);
        } else if (st && strncmp(l, "Source:", 7) == 0) {
            cJSON *src = cJSON_AddArrayToObject(st, "source");
            for (char *tok = strtok(l + 7, " "); tok; tok = strtok(NULL, " "))
                cJSON_AddItemToArray(src, cJSON_CreateString(tok));
        } else if (st && strncmp(l, "| ", 2) == 0 && strncmp(l, "| framework |", 13) != 0 &&
                   strncmp(l, "| --- ", 6) != 0) {
            cJSON *set = cJSON_GetObjectItemCaseSensitive(st, "settings");
            if (!set)
                set = cJSON_AddArrayToObject(st, "settings");
            cJSON *s = row_setting(l);
            if (s)
                cJSON_AddItemToArray(set, s);
        } else if (!st && *head && !*summary && l[0]) {
            *summary = strdup(l);
        }
        free(l);
    }
    return rem;
}

/* "`a`/`b`" -> "a/b" in place. */
static void untick(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++)
        if (*r != '`')
            *w++ = *r;
    *w = 0;
}

oomscan_status oomscan_explain_page_text(const char *md, size_t len, int color, unsigned width,
                                         oomscan_write_fn fn, void *ud)
{
    out o = {fn, ud, color, width ? width : 80, 0};
    char *title = NULL, *head = NULL, *summary = NULL;
    cJSON *rem = page_parse(md, len, &title, &head, &summary);
    if (!rem) {
        free(title);
        free(head);
        free(summary);
        return OOMSCAN_ERR_NOMEM;
    }
    line(&o, TEXTFIT_WRAP, "%s%s%s", on(&o, BOLD), title ? title : "", on(&o, RST));
    if (head) {
        untick(head);
        line(&o, TEXTFIT_WRAP, "%s", head);
    }
    if (summary) {
        blank(&o);
        line(&o, TEXTFIT_WRAP, "%s", summary);
    }
    steps(&o, rem);
    free(title);
    free(head);
    free(summary);
    cJSON_Delete(rem);
    return o.failed ? OOMSCAN_ERR_IO : OOMSCAN_OK;
}

oomscan_status oomscan_explain_finding_text(const char *finding_json, size_t len, int color, unsigned width,
                                            oomscan_write_fn fn, void *ud)
{
    out o = {fn, ud, color, width ? width : 80, 0};
    cJSON *f = cJSON_ParseWithLength(finding_json, len);
    if (!f)
        return OOMSCAN_ERR_USAGE;
    line(&o, TEXTFIT_WRAP, "%s%s%s", on(&o, BOLD), json_str(f, "title") ? json_str(f, "title") : "", on(&o, RST));
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(f, "source");
    const cJSON *ln = cJSON_GetObjectItemCaseSensitive(src, "line");
    if (json_str(src, "path"))
        line(&o, TEXTFIT_WRAP, "  at %s%s%s:%d", json_str(src, "path"), json_str(src, "member") ? ":" : "",
             json_str(src, "member") ? json_str(src, "member") : "", cJSON_IsNumber(ln) ? ln->valueint : 0);
    const cJSON *ev = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(f, "evidence"), 0);
    if (cJSON_IsString(ev))
        line(&o, TEXTFIT_CUT, "  > %s", ev->valuestring);
    const cJSON *rem = cJSON_GetObjectItemCaseSensitive(f, "remediation");
    line(&o, TEXTFIT_WRAP, "  finding %s: %s in %s, %s%s%s; checklist %s", json_str(f, "id") ? json_str(f, "id") : "",
         json_str(f, "class") ? json_str(f, "class") : "?", json_str(f, "phase") ? json_str(f, "phase") : "?",
         json_str(f, "role") ? json_str(f, "role") : "?", json_str(f, "caused_by") ? " of " : "",
         json_str(f, "caused_by") ? json_str(f, "caused_by") : "", json_str(rem, "id") ? json_str(rem, "id") : "none");
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f, "diagnosis"), "conclusions"))
    {
        blank(&o);
        line(&o, TEXTFIT_WRAP, "%sDiagnosis:%s %s", on(&o, BOLD), on(&o, RST), json_str(c, "what") ? json_str(c, "what") : "");
        if (json_str(c, "arithmetic"))
            line(&o, TEXTFIT_WRAP, "  %s", json_str(c, "arithmetic"));
    }
    if (json_str(rem, "title")) {
        blank(&o);
        line(&o, TEXTFIT_WRAP, "%sWhat to change%s (%s, best first for this finding):", on(&o, BOLD), on(&o, RST),
             json_str(rem, "title"));
    }
    steps(&o, rem);
    if (json_str(rem, "doc")) {
        blank(&o);
        line(&o, TEXTFIT_WRAP, "%sThe page: %s%s", on(&o, DIM), json_str(rem, "doc"), on(&o, RST));
    }
    cJSON_Delete(f);
    return o.failed ? OOMSCAN_ERR_IO : OOMSCAN_OK;
}
