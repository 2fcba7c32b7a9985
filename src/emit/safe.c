/* safe.c - valid and inert output (safe.h). */
#include "emit/safe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t safe_utf8_len(const unsigned char *s, size_t n)
{
    if (n == 0)
        return 0;
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; /* the allowed range of the second byte (RFC 3629's table) */
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F; /* past U+10FFFF */
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

static int valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p && *p < 0x80) /* nearly every string is ASCII: one pass, no length asked */
        p++;
    if (!*p)
        return 1;
    size_t n = strlen((const char *)p);
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = safe_utf8_len(p + i, n - i)))
            return 0;
    return 1;
}

/* `s` with each invalid byte as U+FFFD (raw 0) or as \xNN with \ doubled (raw 1); NULL out of memory. */
static char *rewrite(const char *s, int raw)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    char *out = malloc(4 * n + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n;) {
        size_t k = safe_utf8_len(p + i, n - i);
        if (k && !(raw && p[i] == '\\')) {
            memcpy(o, p + i, k);
            o += k;
            i += k;
        } else if (raw && p[i] == '\\') {
            memcpy(o, "\\\\", 2);
            o += 2;
            i++;
        } else if (raw) {
            o += sprintf(o, "\\x%02x", p[i++]);
        } else {
            memcpy(o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    *o = '\0';
    return out;
}

static int wants_raw(const char *key) { return key && (strcmp(key, "path") == 0 || strcmp(key, "member") == 0); }

int safe_json(cJSON *tree)
{
    int rc = 0;
    cJSON *it = tree ? tree->child : NULL;
    while (it) {
        cJSON *next = it->next;
        if (cJSON_IsString(it) && it->valuestring && !valid(it->valuestring)) {
            char *raw = wants_raw(it->string) && cJSON_IsObject(tree) ? rewrite(it->valuestring, 1) : NULL;
            char *fixed = rewrite(it->valuestring, 0);
            char *copy = fixed ? cJSON_malloc(strlen(fixed) + 1) : NULL;
            if (copy) {
                strcpy(copy, fixed);
                cJSON_free(it->valuestring);
                it->valuestring = copy;
            } else {
                it->valuestring[0] = '\0'; /* cannot allocate the fixed copy: blank it rather than print it */
                rc = -1;
            }
            char key[64];
            snprintf(key, sizeof key, "%s_raw", it->string ? it->string : "");
            if (raw && !cJSON_GetObjectItemCaseSensitive(tree, key) && !cJSON_AddStringToObject(tree, key, raw))
                rc = -1;
            free(fixed);
            free(raw);
        } else if (cJSON_IsArray(it) || cJSON_IsObject(it)) {
            if (safe_json(it) != 0)
                rc = -1;
        }
        it = next;
    }
    return rc;
}

char *safe_text(char *buf, size_t cap, const char *s)
{
    if (cap == 0)
        return buf;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p), o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = safe_utf8_len(p + i, n - i);
        int c1 = k == 2 && p[i] == 0xC2 && p[i + 1] < 0xA0; /* U+0080..U+009F: C1 controls (CSI is U+009B) */
        if (k && !c1 && !(k == 1 && ((p[i] < 0x20 && p[i] != '\t') || p[i] == 0x7F))) {
            if (o + k >= cap)
                break;
            memcpy(buf + o, p + i, k);
            o += k;
            i += k;
            continue;
        }
        /* one byte (or a C1 character's two) at a time, each as \xNN */
        size_t bytes = c1 ? 2 : 1;
        if (o + 4 * bytes >= cap)
            break;
        for (size_t b = 0; b < bytes; b++)
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", p[i + b]);
        i += bytes;
    }
    buf[o] = '\0';
    return buf;
}
