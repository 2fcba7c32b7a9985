/* version.c - reading versions with the rules' regexes, and comparing them. */
#include "match/version.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VERSION_CAP 96

/* Calls fn for each named group of r's regex that matched in line (name, value). Returns 0 when the
 * regex did not match, else 1 + what fn added (negative: fn failed). */
typedef int (*group_fn)(void *ud, const char *name, const char *value);

static int each_group(const pdb_version_rule *r, const char *line, size_t len, group_fn fn, void *ud)
{
    const pcre2_code *re = r->re.code;
    if (!re)
        return 0;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md)
        return -1;
    int rc = pcre2_match(re, (PCRE2_SPTR)line, len, 0, 0, md, NULL);
    if (rc < 0) {
        pcre2_match_data_free(md);
        return 0;
    }
    uint32_t n = 0, size = 0;
    PCRE2_SPTR table = NULL;
    pcre2_pattern_info(re, PCRE2_INFO_NAMECOUNT, &n);
    pcre2_pattern_info(re, PCRE2_INFO_NAMEENTRYSIZE, &size);
    pcre2_pattern_info(re, PCRE2_INFO_NAMETABLE, &table);
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    int out = 1;
    for (uint32_t i = 0; i < n && out > 0; i++) {
        const unsigned char *entry = table + (size_t)i * size;
        int g = (entry[0] << 8) | entry[1];
        if (g >= rc || ov[2 * g] == PCRE2_UNSET)
            continue;
        char value[VERSION_CAP];
        size_t vl = ov[2 * g + 1] - ov[2 * g];
        if (vl == 0 || vl >= sizeof value)
            continue; /* an absurd "version" is not one */
        memcpy(value, line + ov[2 * g], vl);
        value[vl] = '\0';
        int k = fn(ud, (const char *)entry + 2, value);
        out = k < 0 ? -1 : out + k;
    }
    pcre2_match_data_free(md);
    return out;
}

typedef struct {
    const char *group;
    char *out;
    size_t cap;
    int found;
} one_group;

static int want_one(void *ud, const char *name, const char *value)
{
    one_group *o = ud;
    if (strcmp(name, o->group) == 0) {
        snprintf(o->out, o->cap, "%s", value);
        o->found = 1;
    }
    return 0;
}

int version_read(const pdb_version_rule *r, const char *line, size_t len, const char *group, char *out, size_t cap)
{
    one_group o = {group, out, cap, 0};
    return each_group(r, line, len, want_one, &o) > 0 && o.found;
}

typedef struct {
    config_store **st;
    const pdb_version_rule *r;
    const char *job, *file;
    uint64_t line;
} putter;

static int put_group(void *ud, const char *name, const char *value)
{
    putter *p = ud;
    char path[160];
    if (strcmp(name, "version") == 0)
        snprintf(path, sizeof path, "version.%s", p->r->component);
    else
        snprintf(path, sizeof path, "version.%s_%s", p->r->component, name);
    return config_put(p->st, path, value, p->job, p->file, p->line) < 0 ? -1 : 1;
}

int version_capture(config_store **st, const pdb_version_rule *r, const char *line, size_t len, const char *job,
                    const char *file, uint64_t lineno)
{
    putter p = {st, r, job, file, lineno};
    int n = each_group(r, line, len, put_group, &p);
    return n < 0 ? -1 : n > 0 ? n - 1 : 0;
}

const config_entry *version_of(const config_view *v, const char *component, const char *job)
{
    char path[160];
    snprintf(path, sizeof path, "version.%s", component);
    return config_view_get(v, path, job);
}

/* The next numeric release part of *s (0 when none is left); stops at the first part that is not
 * a number ("0a0", "dev390", "+cu121" end the release). */
static long next_part(const char **s, int *more)
{
    const char *p = *s;
    if (!*more || !isdigit((unsigned char)*p)) {
        *more = 0;
        return 0;
    }
    long v = 0;
    while (isdigit((unsigned char)*p) && v < 1000000)
        v = v * 10 + (*p++ - '0');
    if (*p == '.' && isdigit((unsigned char)p[1]))
        p++;
    else
        *more = 0;
    *s = p;
    return v;
}

int version_cmp(const char *a, const char *b)
{
    int ma = 1, mb = 1;
    for (int i = 0; i < 8; i++) {
        long x = next_part(&a, &ma), y = next_part(&b, &mb);
        if (x != y)
            return x < y ? -1 : 1;
        if (!ma && !mb)
            break;
    }
    return 0;
}
