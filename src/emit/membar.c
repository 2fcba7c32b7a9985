/* membar.c - the GPU bar and the trend sparkline (membar.h). */
#include "emit/membar.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/values.h"

int membar_unicode(void)
{
    const char *term = getenv("TERM");
    if (term && strcmp(term, "dumb") == 0)
        return 0;
    const char *v = getenv("LC_ALL");
    if (!v || !*v)
        v = getenv("LC_CTYPE");
    if (!v || !*v)
        v = getenv("LANG");
    return v && (strstr(v, "UTF-8") || strstr(v, "utf8") || strstr(v, "UTF8") || strstr(v, "utf-8"));
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The bar's parts in bytes: allocated, cached but free, outside the cache, free; the total; the
 * request (-1 unknown). 0 when the message states too little to draw it. */
static int parts(const cJSON *m, double p[4], double *total, double *req)
{
    double t = num(m, "total_bytes"), a = num(m, "allocated_bytes"), f = num(m, "free_bytes"),
           ru = num(m, "reserved_unallocated_bytes"), rs = num(m, "reserved_bytes");
    if (t <= 0 || a < 0)
        return 0;
    double c = ru >= 0 ? ru : rs >= a ? rs - a : 0;
    if (f < 0)
        f = 0;
    double o = t - a - c - f;
    p[0] = a, p[1] = c, p[2] = o > 0 ? o : 0, p[3] = f;
    *total = t;
    *req = num(m, "requested_bytes");
    return 1;
}

static size_t put(char *buf, size_t cap, size_t n, const char *s)
{
    size_t k = strlen(s);
    if (n + k + 1 > cap)
        return n;
    memcpy(buf + n, s, k + 1);
    return n + k;
}

size_t membar_gpu(const cJSON *memory, int unicode, unsigned cells, char *buf, size_t cap)
{
    double p[4], t, req;
    buf[0] = 0;
    if (!cap || !parts(memory, p, &t, &req) || cells < 4)
        return 0;
    static const char *const uni[] = {"\xe2\x96\x88", "\xe2\x96\x93", "\xe2\x96\x92", "\xe2\x96\x91"}; /* █▓▒░ */
    static const char *const asc[] = {"#", "=", "o", "."};
    const char *const *ch = unicode ? uni : asc;
    /* cells per part, rounded, the rounding error given to the largest part so the bar is `cells` wide */
    int c[4], sum = 0, big = 0;
    for (int i = 0; i < 4; i++) {
        c[i] = (int)lround(p[i] / t * cells);
        sum += c[i];
        if (p[i] > p[big])
            big = i;
    }
    c[big] += (int)cells - sum;
    if (c[big] < 0)
        c[big] = 0;
    size_t n = put(buf, cap, 0, "[");
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < c[i]; k++)
            n = put(buf, cap, n, ch[i]);
    n = put(buf, cap, n, "]");
    if (req > 0) {
        long r = lround(req / t * cells);
        n = put(buf, cap, n, " + request [");
        for (long k = 0; k < (r < 1 ? 1 : r > (long)cells ? (long)cells : r); k++)
            n = put(buf, cap, n, ch[0]);
        n = put(buf, cap, n, "]");
    }
    return n;
}

size_t membar_gpu_words(const cJSON *memory, char *buf, size_t cap)
{
    double p[4], t, req;
    buf[0] = 0;
    if (!cap || !parts(memory, p, &t, &req))
        return 0;
    char b[5][48];
    for (int i = 0; i < 4; i++)
        values_human_bytes(p[i], b[i], sizeof b[i]);
    values_human_bytes(t, b[4], sizeof b[4]);
    int n = snprintf(buf, cap, "allocated by PyTorch %s, cached but free %s, used outside PyTorch's cache %s, free %s, of %s",
                     b[0], b[1], b[2], b[3], b[4]);
    if (req > 0 && n > 0 && (size_t)n < cap) {
        char r[48];
        values_human_bytes(req, r, sizeof r);
        n += snprintf(buf + n, cap - (size_t)n, "; request %s", r);
    }
    return n < 0 ? 0 : strlen(buf);
}

size_t membar_spark(const cJSON *trend, int unicode, char *buf, size_t cap)
{
    static const char *const uni[] = {"\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83", "\xe2\x96\x84",
                                      "\xe2\x96\x85", "\xe2\x96\x86", "\xe2\x96\x87", "\xe2\x96\x88"}; /* ▁..█ */
    static const char *const asc[] = {"_", ".", ":", "-", "=", "+", "*", "#"};
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(trend, "points");
    int n = cJSON_GetArraySize(pts);
    buf[0] = 0;
    if (!cap || n < 2)
        return 0;
    double lo = INFINITY, hi = -INFINITY;
    const cJSON *pt;
    cJSON_ArrayForEach(pt, pts)
    {
        double v = cJSON_GetNumberValue(cJSON_GetArrayItem(pt, 1));
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    int w = n < 40 ? n : 40;
    size_t k = 0;
    for (int i = 0; i < w; i++) {
        int at = w > 1 ? (int)((long)i * (n - 1) / (w - 1)) : 0;
        double v = cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetArrayItem(pts, at), 1));
        int level = hi > lo ? (int)lround((v - lo) / (hi - lo) * 7) : 0;
        k = put(buf, cap, k, (unicode ? uni : asc)[level < 0 ? 0 : level > 7 ? 7 : level]);
    }
    return k;
}

size_t membar_trend_words(const cJSON *trend, char *buf, size_t cap)
{
    const char *metric = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(trend, "metric"));
    const char *verdict = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(trend, "verdict"));
    buf[0] = 0;
    if (!cap || !metric || !verdict)
        return 0;
    char f[48], l[48], s[48];
    values_human_bytes(num(trend, "first_bytes"), f, sizeof f);
    values_human_bytes(num(trend, "last_bytes"), l, sizeof l);
    double slope = num(trend, "slope_per_step");
    values_human_bytes(fabs(slope), s, sizeof s);
    int n = snprintf(buf, cap, "%s steps %.0f-%.0f: %s, %s%s a step, %s -> %s", metric, num(trend, "from_step"),
                     num(trend, "to_step"), verdict, slope < 0 ? "-" : "", s, f, l);
    return n < 0 ? 0 : strlen(buf);
}
