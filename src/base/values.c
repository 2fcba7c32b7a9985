/* values.c - typed values from captured text. */
#include "base/values.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int unit_factor(const char *u, size_t n, double *f)
{
    static const struct { const char *name; double f; } units[] = {
        {"b", 1}, {"bytes", 1}, {"byte", 1},
        {"k", 1024.0}, {"kb", 1024.0}, {"kib", 1024.0},
        {"m", 1048576.0}, {"mb", 1048576.0}, {"mib", 1048576.0},
        {"g", 1073741824.0}, {"gb", 1073741824.0}, {"gib", 1073741824.0},
        {"t", 1099511627776.0}, {"tb", 1099511627776.0}, {"tib", 1099511627776.0},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i].name) == n && strncasecmp(units[i].name, u, n) == 0) {
            *f = units[i].f;
            return 0;
        }
    return -1;
}

int values_parse_size(const char *s, size_t n, const char *default_unit, double *bytes)
{
    char tmp[64];
    size_t i = 0;
    while (i < n && isspace((unsigned char)s[i]))
        i++;
    size_t start = i;
    while (i < n && (isdigit((unsigned char)s[i]) || s[i] == '.' || s[i] == ','))
        i++;
    if (i == start || i - start >= sizeof tmp)
        return -1;
    size_t k = 0;
    for (size_t j = start; j < i; j++)
        if (s[j] != ',') /* thousands separators ("1,024 MiB") */
            tmp[k++] = s[j];
    tmp[k] = '\0';
    char *end;
    double v = strtod(tmp, &end);
    if (*end != '\0')
        return -1;
    while (i < n && isspace((unsigned char)s[i]))
        i++;
    size_t ustart = i;
    while (i < n && isalpha((unsigned char)s[i]))
        i++;
    double f = 1;
    if (i > ustart) {
        if (unit_factor(s + ustart, i - ustart, &f) != 0)
            return -1;
    } else if (default_unit && unit_factor(default_unit, strlen(default_unit), &f) != 0) {
        return -1;
    }
    *bytes = v * f;
    return 0;
}

static int is_integer(const char *t, size_t n)
{
    size_t i = (n > 0 && (t[0] == '-' || t[0] == '+')) ? 1 : 0;
    if (i == n || n - i > 18)
        return 0;
    for (; i < n; i++)
        if (!isdigit((unsigned char)t[i]))
            return 0;
    return 1;
}

static int is_decimal(const char *t, size_t n)
{
    int dots = 0, digits = 0;
    size_t i = (n > 0 && t[0] == '-') ? 1 : 0;
    for (; i < n; i++) {
        if (t[i] == '.')
            dots++;
        else if (isdigit((unsigned char)t[i]))
            digits++;
        else
            return 0;
    }
    return dots == 1 && digits > 0 && n < 40;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

cJSON *values_convert(const char *name, const char *text, size_t n, const char *unit)
{
    char buf[64];
    if (ends_with(name, "_bytes")) {
        double b;
        if (values_parse_size(text, n, unit, &b) == 0)
            return cJSON_CreateNumber(round(b));
    }
    if (ends_with(name, "_ms") && unit && (is_integer(text, n) || is_decimal(text, n))) {
        /* durations stated in seconds or minutes ("stuck for 600 seconds") become milliseconds */
        double f = strcmp(unit, "s") == 0 || strcmp(unit, "seconds") == 0 ? 1000.0
                   : strcmp(unit, "min") == 0                          ? 60000.0
                                                                       : 1.0;
        memcpy(buf, text, n);
        buf[n] = '\0';
        return cJSON_CreateNumber(round(strtod(buf, NULL) * f));
    }
    if (is_integer(text, n) || is_decimal(text, n)) {
        memcpy(buf, text, n);
        buf[n] = '\0';
        double v = strtod(buf, NULL);
        return cJSON_CreateNumber(v);
    }
    /* Strings are copied with their length: captures are not NUL-terminated. */
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    memcpy(s, text, n);
    s[n] = '\0';
    cJSON *item = cJSON_CreateString(s);
    free(s);
    return item;
}

void values_human_bytes(double bytes, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    double v = bytes < 0 ? -bytes : bytes;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (bytes < 0)
        v = -v;
    if (u == 0)
        snprintf(buf, cap, "%.0f B", v);
    else
        snprintf(buf, cap, "%.*f %s", v < 10 ? 2 : (v < 100 ? 1 : 0), v, units[u]);
}

/* ---- CUDA OOM message, clause by clause ------------------------------------------------------ */

/* Compare `phrase` at text[i..n) ignoring whitespace on both sides (a terminal may have cut the line
 * anywhere, a logger may have replaced a space by a line break). Returns the end index or 0. */
static size_t phrase_at(const char *t, size_t n, size_t i, const char *phrase)
{
    const char *p = phrase;
    while (*p) {
        while (*p == ' ')
            p++;
        while (i < n && isspace((unsigned char)t[i]))
            i++;
        if (!*p)
            break;
        if (i >= n || t[i] != *p)
            return 0;
        i++, p++;
    }
    return i;
}

/* The phrase ending right before t[i] (whitespace ignored): 1 if it does. */
static int phrase_before(const char *t, size_t i, const char *phrase)
{
    size_t k = strlen(phrase);
    while (k > 0) {
        while (k > 0 && phrase[k - 1] == ' ')
            k--;
        while (i > 0 && isspace((unsigned char)t[i - 1]))
            i--;
        if (k == 0)
            break;
        if (i == 0 || t[i - 1] != phrase[k - 1])
            return 0;
        i--, k--;
    }
    return 1;
}

/* A size at t[i]: digits[.digits] then an optional space and a unit. Sets *end past it. */
static int size_at(const char *t, size_t n, size_t i, double *bytes, size_t *end)
{
    size_t j = i;
    while (j < n && (isdigit((unsigned char)t[j]) || t[j] == '.'))
        j++;
    if (j == i || !isdigit((unsigned char)t[i]))
        return 0;
    size_t u = j;
    while (u < n && t[u] == ' ')
        u++;
    size_t ue = u;
    while (ue < n && isalpha((unsigned char)t[ue]))
        ue++;
    if (ue == u)
        return 0; /* a size in this message always has its unit: a bare number is something else */
    /* the unit may run into the next word after a cut ("GiBmemory"): try the known unit lengths */
    static const size_t lens[] = {5, 3, 2, 1};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
        if (ue - u >= lens[k] && values_parse_size(t + i, u - i + lens[k], NULL, bytes) == 0) {
            *end = u + lens[k];
            return 1;
        }
    return 0;
}

#define ABSURD_BYTES 1125899906842624.0 /* 1 PiB: no GPU has that; a garbled counter */

/* Set `key` unless the pattern's own captures gave it; an absurd figure is kept as printed (a string,
 * so that nothing does arithmetic with it) and its key listed in "absurd". */
static void put_size(cJSON *mem, const char *key, double bytes, const char *printed, size_t plen)
{
    cJSON *old = cJSON_GetObjectItemCaseSensitive(mem, key);
    int absurd = bytes >= ABSURD_BYTES;
    if (old && !(absurd && cJSON_IsNumber(old)))
        return;
    cJSON *v = absurd ? NULL : cJSON_CreateNumber(floor(bytes + 0.5));
    if (absurd) {
        char buf[64];
        snprintf(buf, sizeof buf, "%.*s", (int)(plen < 63 ? plen : 63), printed);
        v = cJSON_CreateString(buf);
        cJSON *list = cJSON_GetObjectItemCaseSensitive(mem, "absurd");
        if (!list)
            list = cJSON_AddArrayToObject(mem, "absurd");
        if (list)
            cJSON_AddItemToArray(list, cJSON_CreateString(key));
    }
    if (!v)
        return;
    if (old)
        cJSON_ReplaceItemInObjectCaseSensitive(mem, key, v);
    else
        cJSON_AddItemToObject(mem, key, v);
}

/* long: one pass over the clauses of PyTorch's message, a few lines per clause, in the order the message
 * prints them. */
void values_cuda_oom_clauses(const char *t, size_t n, cJSON *mem)
{
    if (!mem)
        return;
    /* the GPU index: "GPU 3 has a total capacity" (2.1+) or "(GPU 3; ...)" (older); "GPU  has" is empty */
    for (size_t i = 0; i + 4 < n && !cJSON_GetObjectItemCaseSensitive(mem, "gpu"); i++) {
        size_t e = phrase_at(t, n, i, "GPU ");
        if (!e || (i > 0 && isalnum((unsigned char)t[i - 1])))
            continue;
        size_t d = e;
        while (d < n && isdigit((unsigned char)t[d]))
            d++;
        if (d > e && d - e < 4 && (phrase_at(t, n, d, "has a total") || phrase_at(t, n, d, ";"))) {
            cJSON_AddNumberToObject(mem, "gpu", atoi(t + e));
            break;
        }
    }
    cJSON *procs = cJSON_GetObjectItemCaseSensitive(mem, "other_processes");
    int had_procs = procs != NULL;
    for (size_t i = 0; i < n; i++) {
        double b;
        size_t e;
        if ((i > 0 && (isdigit((unsigned char)t[i - 1]) || t[i - 1] == '.')) || !size_at(t, n, i, &b, &e))
            continue;
        const char *key = NULL;
        if (phrase_before(t, i, "Tried to allocate"))
            key = "requested_bytes";
        else if (phrase_before(t, i, "total capacity of") || phrase_before(t, i, "total capacty of") ||
                 phrase_at(t, n, e, "total capacity"))
            key = "total_bytes";
        else if (phrase_before(t, i, "of which") && phrase_at(t, n, e, "is free"))
            key = "free_bytes";
        else if (phrase_at(t, n, e, "free;") || phrase_at(t, n, e, "free)"))
            key = "free_bytes";
        else if (phrase_at(t, n, e, "already allocated"))
            key = "allocated_bytes";
        else if (phrase_before(t, i, "Of the allocated memory") && phrase_at(t, n, e, "is allocated by PyTorch"))
            key = "allocated_bytes";
        else if (phrase_at(t, n, e, "is reserved by PyTorch but unallocated") || phrase_at(t, n, e, "cached)"))
            key = "reserved_unallocated_bytes";
        else if (phrase_at(t, n, e, "reserved in total by PyTorch"))
            key = "reserved_bytes";
        else if (phrase_before(t, i, "this process has") && phrase_at(t, n, e, "memory in use"))
            key = "process_in_use_bytes";
        else if (phrase_at(t, n, e, "memory in use") && !had_procs) {
            /* "Process N has X memory in use": N is the number before " has" */
            size_t h = i;
            while (h > 0 && isspace((unsigned char)t[h - 1]))
                h--;
            if (h >= 3 && strncmp(t + h - 3, "has", 3) == 0) {
                size_t d = h - 3;
                while (d > 0 && isspace((unsigned char)t[d - 1]))
                    d--;
                size_t ds = d;
                while (ds > 0 && isdigit((unsigned char)t[ds - 1]))
                    ds--;
                if (ds < d && phrase_before(t, ds, "Process")) {
                    if (!procs)
                        procs = cJSON_AddArrayToObject(mem, "other_processes");
                    cJSON *o = procs ? cJSON_CreateObject() : NULL;
                    if (o) {
                        cJSON_AddNumberToObject(o, "pid", atof(t + ds));
                        if (b >= ABSURD_BYTES) {
                            char buf[64];
                            snprintf(buf, sizeof buf, "%.*s", (int)(e - i < 63 ? e - i : 63), t + i);
                            cJSON_AddStringToObject(o, "in_use_bytes", buf);
                            cJSON *list = cJSON_GetObjectItemCaseSensitive(mem, "absurd");
                            if (!list)
                                list = cJSON_AddArrayToObject(mem, "absurd");
                            if (list)
                                cJSON_AddItemToArray(list, cJSON_CreateString("other_processes"));
                        } else {
                            cJSON_AddNumberToObject(o, "in_use_bytes", floor(b + 0.5));
                        }
                        cJSON_AddItemToArray(procs, o);
                    }
                }
            }
        }
        if (key)
            put_size(mem, key, b, t + i, e - i);
        i = e - 1;
    }
}
