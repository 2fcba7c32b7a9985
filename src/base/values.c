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
