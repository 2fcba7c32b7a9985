/* adf.c - Atlassian Document Format from the ticket writer's Markdown (adf.h).
 *
 * Converting the one body the ticket writer already produces, rather than writing a third dialect of
 * it, keeps every ticket style saying the same thing; the Markdown it parses is only what that writer
 * emits, so a line-based reader is enough. */
#include "emit/adf.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- inline: text, `code`, ``code``, **strong**, \-escapes --------------------------------------- */

typedef struct {
    char *p;
    size_t len, cap;
} buf;

static int buf_put(buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 128;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

/* Append a text node holding b's text (if any) with at most one mark, then empty b. */
static int flush(cJSON *content, buf *b, const char *mark)
{
    if (!b->len)
        return 0;
    cJSON *t = cJSON_CreateObject();
    if (!t || !cJSON_AddStringToObject(t, "type", "text") || !cJSON_AddStringToObject(t, "text", b->p)) {
        cJSON_Delete(t);
        return -1;
    }
    if (mark) {
        cJSON *marks = cJSON_AddArrayToObject(t, "marks"), *m = cJSON_CreateObject();
        if (!marks || !m || !cJSON_AddStringToObject(m, "type", mark)) {
            cJSON_Delete(m);
            cJSON_Delete(t);
            return -1;
        }
        cJSON_AddItemToArray(marks, m);
    }
    cJSON_AddItemToArray(content, t);
    b->len = 0;
    return 0;
}

/* Plain text of s[0..n) with backslash escapes removed, into b. */
static int unescape(buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n && ispunct((unsigned char)s[i + 1]))
            i++;
        if (buf_put(b, s + i, 1))
            return -1;
    }
    return 0;
}

/* The inline nodes of s[0..n) appended to `content`. */
static int inline_nodes(cJSON *content, const char *s, size_t n)
{
    buf b = {0}, c = {0};
    int rc = 0;
    for (size_t i = 0; i < n && !rc;) {
        if (s[i] == '\\' && i + 1 < n && ispunct((unsigned char)s[i + 1])) {
            rc = buf_put(&b, s + i + 1, 1);
            i += 2;
        } else if (s[i] == '`') {
            /* `x` or `` x `` (the wide form holds a backtick) */
            int wide = i + 1 < n && s[i + 1] == '`';
            const char *open = wide ? "`` " : "`", *close = wide ? " ``" : "`";
            size_t ol = strlen(open);
            const char *end = i + ol <= n ? memmem(s + i + ol, n - i - ol, close, strlen(close)) : NULL;
            if (!end || (wide && strncmp(s + i, open, ol) != 0)) {
                rc = buf_put(&b, s + i, 1);
                i++;
                continue;
            }
            rc = flush(content, &b, NULL) || buf_put(&c, s + i + ol, (size_t)(end - (s + i + ol))) ||
                 flush(content, &c, "code");
            i = (size_t)(end - s) + strlen(close);
        } else if (s[i] == '*' && i + 1 < n && s[i + 1] == '*') {
            const char *end = memmem(s + i + 2, n - i - 2, "**", 2);
            if (!end) {
                rc = buf_put(&b, s + i, 2);
                i += 2;
                continue;
            }
            rc = flush(content, &b, NULL) || unescape(&c, s + i + 2, (size_t)(end - (s + i + 2))) ||
                 flush(content, &c, "strong");
            i = (size_t)(end - s) + 2;
        } else {
            rc = buf_put(&b, s + i, 1);
            i++;
        }
    }
    if (!rc)
        rc = flush(content, &b, NULL);
    free(b.p);
    free(c.p);
    return rc;
}

/* ---- blocks ------------------------------------------------------------------------------------ */

static cJSON *node(const char *type)
{
    cJSON *o = cJSON_CreateObject();
    if (o && !cJSON_AddStringToObject(o, "type", type)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* A node of `type` whose content holds the inline nodes of s[0..n); NULL when out of memory. */
static cJSON *text_block(const char *type, const char *s, size_t n)
{
    cJSON *o = node(type), *content = o ? cJSON_AddArrayToObject(o, "content") : NULL;
    if (!content || inline_nodes(content, s, n)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* A list item holding one paragraph. */
static cJSON *list_item(const char *s, size_t n)
{
    cJSON *item = node("listItem"), *content = item ? cJSON_AddArrayToObject(item, "content") : NULL;
    cJSON *p = content ? text_block("paragraph", s, n) : NULL;
    if (!p) {
        cJSON_Delete(item);
        return NULL;
    }
    cJSON_AddItemToArray(content, p);
    return item;
}

typedef struct {
    const char *s; /* start of the line */
    size_t n;      /* its length without the newline */
} line;

static int starts(const line *l, const char *p) { return l->n >= strlen(p) && strncmp(l->s, p, strlen(p)) == 0; }

/* Length of "N. " at the start of the line, 0 when it is not a numbered item. */
static size_t numbered(const line *l)
{
    size_t i = 0;
    while (i < l->n && isdigit((unsigned char)l->s[i]))
        i++;
    return i > 0 && i + 1 < l->n && l->s[i] == '.' && l->s[i + 1] == ' ' ? i + 2 : 0;
}

static int is_fence(const line *l) { return starts(l, "```") || starts(l, "~~~~"); }

static int is_rule(const line *l)
{
    if (l->n < 3)
        return 0;
    for (size_t i = 0; i < l->n; i++)
        if (l->s[i] != '-')
            return 0;
    return 1;
}

/* A fenced block from line *i: its text up to the closing fence (or the end). */
static cJSON *code_block(const line *ls, size_t nl, size_t *i)
{
    const line *open = &ls[*i];
    size_t fl = 0;
    while (fl < open->n && open->s[fl] == open->s[0])
        fl++;
    buf b = {0};
    int rc = 0;
    size_t k = *i + 1;
    for (; k < nl; k++) {
        const line *l = &ls[k];
        if (l->n >= fl && strncmp(l->s, open->s, fl) == 0 && strspn(l->s, "`~") == l->n)
            break;
        rc = rc || (b.len && buf_put(&b, "\n", 1)) || buf_put(&b, l->s, l->n);
    }
    *i = k < nl ? k + 1 : k;
    cJSON *o = node("codeBlock");
    if (rc || !o) {
        free(b.p);
        cJSON_Delete(o);
        return NULL;
    }
    if (b.len) {
        /* code is literal: one text node, no marks, no escapes undone */
        cJSON *content = cJSON_AddArrayToObject(o, "content");
        cJSON *t = node("text");
        if (!content || !t || !cJSON_AddStringToObject(t, "text", b.p)) {
            cJSON_Delete(t);
            cJSON_Delete(o);
            free(b.p);
            return NULL;
        }
        cJSON_AddItemToArray(content, t);
    }
    free(b.p);
    return o;
}

/* A bullet or numbered list from line *i: its items, each with the "   - " bullets under it. */
static cJSON *list(const line *ls, size_t nl, size_t *i, int ordered)
{
    cJSON *lst = node(ordered ? "orderedList" : "bulletList");
    cJSON *items = lst ? cJSON_AddArrayToObject(lst, "content") : NULL;
    cJSON *last = NULL;
    if (!items) {
        cJSON_Delete(lst);
        return NULL;
    }
    while (*i < nl) {
        const line *l = &ls[*i];
        size_t skip = ordered ? numbered(l) : (starts(l, "- ") ? 2 : 0);
        if (skip) {
            if (!(last = list_item(l->s + skip, l->n - skip)))
                goto oom;
            cJSON_AddItemToArray(items, last);
        } else if (last && starts(l, "   - ")) {
            /* a sub-bullet: into the last item's own bullet list */
            cJSON *content = cJSON_GetObjectItemCaseSensitive(last, "content");
            cJSON *sub = cJSON_GetArrayItem(content, cJSON_GetArraySize(content) - 1);
            if (!sub || strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sub, "type")), "bulletList") != 0) {
                if (!(sub = node("bulletList")) || !cJSON_AddArrayToObject(sub, "content")) {
                    cJSON_Delete(sub);
                    goto oom;
                }
                cJSON_AddItemToArray(content, sub);
            }
            cJSON *it = list_item(l->s + 5, l->n - 5);
            if (!it)
                goto oom;
            cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(sub, "content"), it);
        } else {
            break;
        }
        (*i)++;
    }
    return lst;
oom:
    cJSON_Delete(lst);
    return NULL;
}

/* A paragraph from line *i: lines up to a blank line or the start of another block, joined by hard
 * breaks (the writer's lines are meant as lines). */
static cJSON *paragraph(const line *ls, size_t nl, size_t *i)
{
    cJSON *p = node("paragraph"), *content = p ? cJSON_AddArrayToObject(p, "content") : NULL;
    if (!content) {
        cJSON_Delete(p);
        return NULL;
    }
    for (size_t first = *i; *i < nl; (*i)++) {
        const line *l = &ls[*i];
        if (!l->n || (*i > first && (is_fence(l) || starts(l, "#") || starts(l, "- ") || numbered(l) || is_rule(l))))
            break;
        if (*i > first) {
            cJSON *br = node("hardBreak");
            if (!br) {
                cJSON_Delete(p);
                return NULL;
            }
            cJSON_AddItemToArray(content, br);
        }
        if (inline_nodes(content, l->s, l->n)) {
            cJSON_Delete(p);
            return NULL;
        }
    }
    return p;
}

cJSON *adf_from_markdown(const char *md)
{
    /* lines first: every block reader looks ahead */
    size_t nl = 0, cap = 64;
    line *ls = malloc(cap * sizeof *ls);
    cJSON *doc = node("doc"), *content = NULL;
    if (!ls || !doc || !cJSON_AddNumberToObject(doc, "version", 1) || !(content = cJSON_AddArrayToObject(doc, "content")))
        goto oom;
    for (const char *s = md; *s;) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (nl == cap) {
            line *v = realloc(ls, (cap *= 2) * sizeof *v);
            if (!v)
                goto oom;
            ls = v;
        }
        ls[nl++] = (line){s, n};
        s += n + (e ? 1 : 0);
    }
    for (size_t i = 0; i < nl;) {
        const line *l = &ls[i];
        cJSON *b;
        if (!l->n) {
            i++;
            continue;
        }
        if (is_fence(l)) {
            b = code_block(ls, nl, &i);
        } else if (starts(l, "#")) {
            size_t level = strspn(l->s, "#");
            if (level > 6 || level >= l->n || l->s[level] != ' ') {
                b = paragraph(ls, nl, &i);
            } else {
                b = text_block("heading", l->s + level + 1, l->n - level - 1);
                if (b) {
                    cJSON *attrs = cJSON_AddObjectToObject(b, "attrs");
                    if (!attrs || !cJSON_AddNumberToObject(attrs, "level", (double)level)) {
                        cJSON_Delete(b);
                        b = NULL;
                    }
                }
                i++;
            }
        } else if (is_rule(l)) {
            b = node("rule");
            i++;
        } else if (starts(l, "- ")) {
            b = list(ls, nl, &i, 0);
        } else if (numbered(l)) {
            b = list(ls, nl, &i, 1);
        } else {
            b = paragraph(ls, nl, &i);
        }
        if (!b)
            goto oom;
        cJSON_AddItemToArray(content, b);
    }
    free(ls);
    return doc;
oom:
    free(ls);
    cJSON_Delete(doc);
    return NULL;
}
