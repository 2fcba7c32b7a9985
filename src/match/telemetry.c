/* telemetry.c - the job's own memory lines as series (telemetry.h). */
#include "match/telemetry.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match/config.h"

#define GiB 1073741824.0
#define MiB 1048576.0

/* buf as a decimal number, as strtod reads it: a plain decimal of at most 15 digits is its digits over
 * a power of ten, both exact doubles, so the one division rounds as strtod does (Clinger's fast path);
 * anything else goes to strtod. The metrics lines' numbers made strtod a tenth of the 512 rank files
 * (issue 33 item 17). *end as strtod sets it. */
static double decimal(const char *buf, char **end)
{
    static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    const char *p = buf;
    long long m = 0;
    int digits = 0, frac = -1;
    for (;; p++) {
        if (*p >= '0' && *p <= '9') {
            m = m * 10 + (*p - '0');
            if (++digits > 15)
                return strtod(buf, end);
            if (frac >= 0)
                frac++;
        } else if (*p == '.' && frac < 0) {
            frac = 0;
        } else {
            break;
        }
    }
    if (!digits || *p == 'e' || *p == 'E')
        return strtod(buf, end);
    *end = (char *)p;
    return frac > 0 ? (double)m / p10[frac] : (double)m;
}

/* The number after `key` (and any spaces, '=' or ':') where key starts a word in s[0..n); -1 when
 * absent or not a number. */
static double num_after(const char *s, size_t n, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), key, kl)) != NULL; p++) {
        if (p > s && (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '/'))
            continue;
        const char *q = p + kl, *end = s + n;
        while (q < end && (*q == ' ' || *q == '=' || *q == ':'))
            q++;
        if (q >= end || !(isdigit((unsigned char)*q) || *q == '.'))
            return -1;
        char buf[64];
        size_t k = 0;
        while (q < end && k + 1 < sizeof buf && (isdigit((unsigned char)*q) || *q == '.' || *q == 'e' || *q == 'E' ||
                                                 *q == '-' || *q == '+'))
            buf[k++] = *q++;
        buf[k] = 0;
        char *e;
        double v = decimal(buf, &e);
        return e == buf || !isfinite(v) || v < 0 ? -1 : v;
    }
    return -1;
}

/* The value of a verl metric "...key:X" (keys carry a role prefix in newer verl: actor/perf/...). */
static double verl_value(const char *s, size_t n, const char *key)
{
    size_t kl = strlen(key);
    const char *p = memmem(s, n, key, kl);
    if (!p)
        return -1;
    char buf[64];
    size_t k = 0;
    for (const char *q = p + kl; q < s + n && k + 1 < sizeof buf && (isdigit((unsigned char)*q) || *q == '.'); q++)
        buf[k++] = *q;
    buf[k] = 0;
    char *e;
    double v = decimal(buf, &e);
    return e == buf || !isfinite(v) ? -1 : v;
}

/* verl's three memory metrics in one pass over the line: every "_gb:" and the key before it (five
 * memmem over a step line of kilobytes were a tenth of the 512 rank files, issue 33 item 17). Returns
 * whether the line has max_memory_allocated_gb or cpu_memory_used_gb, as the test before did. */
static int verl_memory(const char *s, size_t n, double *alloc, double *reserved, double *host)
{
    static const struct {
        const char *key; /* the text before "_gb:" */
        size_t len;
        int which;
    } keys[] = {{"perf/max_memory_allocated", 25, 0}, {"perf/max_memory_reserved", 24, 1}, {"perf/cpu_memory_used", 20, 2}};
    int found = 0;
    const char *end = s + n;
    /* each ':' and the "_gb" before it: memchr is vectorised, glibc's memmem for a short needle is not */
    for (const char *c = s; (c = memchr(c, ':', (size_t)(end - c))) != NULL; c++) {
        if (c - s < 3 || memcmp(c - 3, "_gb", 3) != 0)
            continue;
        const char *p = c - 3;
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
            if ((size_t)(p - s) < keys[k].len || memcmp(p - keys[k].len, keys[k].key, keys[k].len) != 0)
                continue;
            double *out = keys[k].which == 0 ? alloc : keys[k].which == 1 ? reserved : host;
            if (*out < 0) /* the first, as memmem found it before */
                *out = verl_value(p, (size_t)(end - p), "_gb:");
            found |= keys[k].which != 1;
        }
    }
    return found;
}

/* The rank a line states ("[Rank 3]" Megatron's, "[rank3]:" a launcher's prefix), "" when none. The
 * '[' are found with memchr: two memmem calls over every metrics line (verl's step line runs to
 * kilobytes) were a tenth of the 512-rank-files benchmark (issue 33 item 17). "[Rank " is preferred
 * where a line has both, as before. */
static void rank_of(const char *s, size_t n, char *rank, size_t cap)
{
    rank[0] = 0;
    const char *p = NULL, *end = s + n;
    for (const char *b = s; (b = memchr(b, '[', (size_t)(end - b))) != NULL; b++) {
        if ((size_t)(end - b) >= 6 && memcmp(b, "[Rank ", 6) == 0) {
            p = b;
            break;
        }
        if (!p && (size_t)(end - b) >= 5 && memcmp(b, "[rank", 5) == 0)
            p = b;
    }
    if (!p)
        return;
    p += p[1] == 'R' ? 6 : 5;
    size_t k = 0;
    while (p < s + n && k + 1 < cap && isdigit((unsigned char)*p))
        rank[k++] = *p++;
    rank[k] = 0;
}

static size_t add(telemetry_sample *out, size_t max, size_t k, const char *metric, double x, double bytes,
                  const char *rank)
{
    if (k >= max || bytes < 0)
        return k;
    out[k].metric = metric;
    out[k].x = x;
    out[k].bytes = bytes;
    size_t rl = strnlen(rank, sizeof out[k].rank - 1); /* not snprintf: three a metrics line */
    memcpy(out[k].rank, rank, rl);
    out[k].rank[rl] = 0;
    return k + 1;
}

size_t telemetry_parse(const char *s, size_t n, telemetry_sample *out, size_t max)
{
    size_t k = 0;
    char rank[16];
    rank_of(s, n, rank, sizeof rank);
    double va = -1, vr = -1, vh = -1;
    if (verl_memory(s, n, &va, &vr, &vh)) {
        /* verl: "step:N - key:value - ..." */
        double step = num_after(s, n, "step:");
        k = add(out, max, k, "gpu_max_allocated", step, va < 0 ? -1 : va * GiB, rank);
        k = add(out, max, k, "gpu_max_reserved", step, vr < 0 ? -1 : vr * GiB, rank);
        k = add(out, max, k, "host_used", step, vh < 0 ? -1 : vh * GiB, rank);
        return k;
    }
    if (memmem(s, n, "Max_MA ", 7)) {
        /* DeepSpeed see_memory_usage: "MA X GB Max_MA X GB CA X GB Max_CA X GB" */
        double ma = num_after(s, n, "MA"), mma = num_after(s, n, "Max_MA"), ca = num_after(s, n, "CA"),
               mca = num_after(s, n, "Max_CA");
        k = add(out, max, k, "gpu_allocated", -1, ma < 0 ? -1 : ma * GiB, rank);
        k = add(out, max, k, "gpu_max_allocated", -1, mma < 0 ? -1 : mma * GiB, rank);
        k = add(out, max, k, "gpu_reserved", -1, ca < 0 ? -1 : ca * GiB, rank);
        k = add(out, max, k, "gpu_max_reserved", -1, mca < 0 ? -1 : mca * GiB, rank);
        return k;
    }
    if (memmem(s, n, "CPU Virtual Memory:", 19)) {
        double used = num_after(s, n, "used");
        return add(out, max, k, "host_used", -1, used < 0 ? -1 : used * GiB, rank);
    }
    if (memmem(s, n, "Memory-Usage ", 13) && memmem(s, n, "'allocated_GB':", 15)) {
        /* slime print_memory: "[Rank R] Memory-Usage MSG: {'gpu': '0', 'total_GB': X, 'free_GB': X,
         * 'used_GB': X, 'allocated_GB': X, 'reserved_GB': X, 'host_total_GB': X, ..., 'host_used_GB': X,
         * ...}" (slime/utils/memory_utils.py: round(n / 1024**3, 2), so GiB). No step: in order. */
        double a = num_after(s, n, "'allocated_GB'"), r = num_after(s, n, "'reserved_GB'"),
               h = num_after(s, n, "'host_used_GB'");
        k = add(out, max, k, "gpu_allocated", -1, a < 0 ? -1 : a * GiB, rank);
        k = add(out, max, k, "gpu_reserved", -1, r < 0 ? -1 : r * GiB, rank);
        k = add(out, max, k, "host_used", -1, h < 0 ? -1 : h * GiB, rank);
        return k;
    }
    if (memmem(s, n, "Peak-Memory ", 12) && memmem(s, n, "max_allocated_GB=", 17)) {
        /* slime report_peak_memory: "[Rank R] Peak-Memory PHASE: max_allocated_GB=X, max_reserved_GB=X" */
        double a = num_after(s, n, "max_allocated_GB"), r = num_after(s, n, "max_reserved_GB");
        k = add(out, max, k, "gpu_max_allocated", -1, a < 0 ? -1 : a * GiB, rank);
        k = add(out, max, k, "gpu_max_reserved", -1, r < 0 ? -1 : r * GiB, rank);
        return k;
    }
    if (memmem(s, n, "memory (MB) | allocated:", 24)) {
        /* Megatron report_memory: "[Rank R] (after N iterations) memory (MB) | allocated: X | max allocated: X |
         * reserved: X | max reserved: X" */
        double it = num_after(s, n, "after");
        const char *p = memmem(s, n, "memory (MB)", 11);
        size_t m = n - (size_t)(p - s);
        double a = num_after(p, m, "allocated:"), ma = num_after(p, m, "max allocated:"),
               r = num_after(p, m, "reserved:"), mr = num_after(p, m, "max reserved:");
        k = add(out, max, k, "gpu_allocated", it, a < 0 ? -1 : a * MiB, rank);
        k = add(out, max, k, "gpu_max_allocated", it, ma < 0 ? -1 : ma * MiB, rank);
        k = add(out, max, k, "gpu_reserved", it, r < 0 ? -1 : r * MiB, rank);
        k = add(out, max, k, "gpu_max_reserved", it, mr < 0 ? -1 : mr * MiB, rank);
        return k;
    }
    return 0;
}

/* ---- series in the settings store ------------------------------------------------------------- */

static void series_path(char *buf, size_t cap, const char *metric, const char *rank)
{
    if (rank && rank[0])
        snprintf(buf, cap, "telemetry/%s/rank%s", metric, rank);
    else
        snprintf(buf, cap, "telemetry/%s", metric);
}

/* A whole number as the series writes it (%.0f), read without strtod: a job's series is read back and
 * written again at the end of each of its sources, and 512 rank files of one job made the conversions
 * a fifth of the run (issue 33 item 17). Anything else (a fraction, an exponent, 16 digits or more) is
 * left to strtod. */
static double read_num(const char *v, char **end)
{
    const char *p = v;
    int neg = *p == '-';
    p += neg;
    long long n = 0;
    const char *d = p;
    while (*p >= '0' && *p <= '9' && p - d < 15)
        n = n * 10 + (*p++ - '0');
    if (p == d || (*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E')
        return strtod(v, end);
    *end = (char *)p;
    return neg ? -(double)n : (double)n;
}

/* Append " x" (no blank first) as %.0f writes it: whole numbers below 1e15 by hand, the rest by
 * snprintf. Returns the bytes written, or 0 when it did not fit. */
static size_t put_num(char *buf, size_t cap, double x, int blank)
{
    if (!(fabs(x) < 1e15))
        goto slow;
    double r = nearbyint(x); /* the rounding %.0f does (to even, in the default mode) */
    long long n = (long long)r;
    char tmp[24];
    size_t k = 0;
    unsigned long long u = n < 0 ? (unsigned long long)-n : (unsigned long long)n;
    do
        tmp[k++] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    /* "-0" for a negative that rounds to zero, as %.0f writes it */
    int neg = n < 0 || (n == 0 && signbit(r));
    size_t need = (size_t)blank + (size_t)neg + k;
    if (need >= cap)
        return 0;
    size_t w = 0;
    if (blank)
        buf[w++] = ' ';
    if (neg)
        buf[w++] = '-';
    while (k)
        buf[w++] = tmp[--k];
    buf[w] = 0;
    return w;
slow:;
    int m = snprintf(buf, cap, "%s%.0f", blank ? " " : "", x);
    return m < 0 || (size_t)m >= cap ? 0 : (size_t)m;
}

/* A series is its points as text, "x:v x:v ...", the oldest first. */
static size_t parse_points(const char *v, double *xs, double *ys, size_t max)
{
    size_t k = 0;
    while (v && *v && k < max) {
        char *e;
        double x = read_num(v, &e);
        if (e == v || *e != ':')
            break;
        v = e + 1;
        double y = read_num(v, &e);
        if (e == v)
            break;
        xs[k] = x;
        ys[k++] = y;
        v = e;
        while (*v == ' ')
            v++;
    }
    return k;
}

int telemetry_capture(struct config_store **st, const char *s, size_t n, const char *job, const char *rank,
                      const char *file, uint64_t line)
{
    telemetry_sample smp[8];
    size_t k = telemetry_parse(s, n, smp, 8);
    for (size_t i = 0; i < k; i++) {
        char path[96];
        series_path(path, sizeof path, smp[i].metric, smp[i].rank[0] ? smp[i].rank : rank);
        const config_entry *e = *st ? config_get(*st, path, job ? job : "") : NULL;
        const char *old = e ? e->value : "";
        /* keep the newest points: drop the oldest when full */
        size_t pts = 0;
        for (const char *c = old; *c; c++)
            pts += *c == ':';
        while (pts >= TELEMETRY_POINTS && (old = strchr(old, ' ')) != NULL) {
            old++;
            pts--;
        }
        double x = smp[i].x;
        const char *last = strrchr(e ? e->value : "", ' ');
        last = last ? last + 1 : (e ? e->value : "");
        if (x < 0) /* no step stated: one more than the last point's */
            x = *last ? strtod(last, NULL) + 1 : 1;
        else if (*last && strtod(last, NULL) == x)
            continue; /* the same line again (its second literal), or a step printed twice: kept once */
        size_t cap = strlen(old) + 64;
        char *v = malloc(cap);
        if (!v)
            return -1;
        snprintf(v, cap, "%s%s%.0f:%.0f", old, old[0] ? " " : "", x, smp[i].bytes);
        int rc = config_put(st, path, v, job ? job : "", file, line);
        free(v);
        if (rc < 0)
            return -1;
    }
    return 0;
}

typedef struct {
    const char *prefix, *job;
    const config_entry *found;
} find_ctx;

static void find_in(const config_store *st, void *ud)
{
    find_ctx *f = ud;
    size_t pl = strlen(f->prefix);
    for (size_t i = 0; !f->found && i < st->n; i++)
        if (strncmp(st->e[i].path, f->prefix, pl) == 0 && (st->e[i].path[pl] == 0 || st->e[i].path[pl] == '/') &&
            (!f->job[0] || !st->e[i].job[0] || strcmp(st->e[i].job, f->job) == 0))
            f->found = &st->e[i];
}

cJSON *telemetry_trend(const struct config_view *cfg, const char *job, const char *rank, int host)
{
    static const char *const gpu[] = {"gpu_max_allocated", "gpu_allocated", "gpu_max_reserved", "gpu_reserved", NULL};
    static const char *const hostm[] = {"host_used", NULL};
    const char *const *order = host ? hostm : gpu;
    if (!cfg)
        return NULL;
    job = job ? job : "";
    const config_entry *e = NULL;
    const char *metric = NULL;
    for (int i = 0; order[i] && !e; i++) {
        char path[96];
        if (rank && rank[0]) {
            series_path(path, sizeof path, order[i], rank);
            e = config_view_get(cfg, path, job);
        }
        if (!e) { /* the series without a rank, else the first rank's */
            series_path(path, sizeof path, order[i], "");
            find_ctx f = {path, job, NULL};
            config_view_each(cfg, find_in, &f);
            e = f.found;
        }
        metric = order[i];
    }
    if (!e)
        return NULL;
    double xs[TELEMETRY_POINTS], ys[TELEMETRY_POINTS];
    size_t n = parse_points(e->value, xs, ys, TELEMETRY_POINTS);
    if (n < 3)
        return NULL;
    /* least squares: bytes per step */
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++)
        mx += xs[i], my += ys[i];
    mx /= (double)n;
    my /= (double)n;
    double sxy = 0, sxx = 0;
    size_t up = 0, down = 0;
    for (size_t i = 0; i < n; i++) {
        sxy += (xs[i] - mx) * (ys[i] - my);
        sxx += (xs[i] - mx) * (xs[i] - mx);
        if (i && ys[i] > ys[i - 1])
            up++;
        else if (i && ys[i] < ys[i - 1])
            down++;
    }
    double slope = sxx > 0 ? sxy / sxx : 0, before_last = ys[n - 2] - ys[0];
    /* A steady climb: it rose at half the steps or more and fell at few, and it had already risen
     * before its last point, by more than 5% of where it started (and 256 MiB). A series that only
     * jumps at its end is flat: the failure is a spike, and its last steady value is the one before. */
    double floor_rise = ys[0] * 0.05 > 256 * MiB ? ys[0] * 0.05 : 256 * MiB;
    int growth = slope > 0 && before_last > floor_rise && 2 * up >= n - 1 && 5 * down <= n - 1;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "metric", metric);
    cJSON_AddStringToObject(o, "unit", "bytes");
    const char *rk = strstr(e->path, "/rank");
    if (rk)
        cJSON_AddStringToObject(o, "rank", rk + 5);
    cJSON *pts = cJSON_AddArrayToObject(o, "points");
    for (size_t i = 0; pts && i < n; i++) {
        cJSON *p = cJSON_CreateArray();
        if (!p)
            break;
        cJSON_AddItemToArray(p, cJSON_CreateNumber(xs[i]));
        cJSON_AddItemToArray(p, cJSON_CreateNumber(ys[i]));
        cJSON_AddItemToArray(pts, p);
    }
    cJSON_AddNumberToObject(o, "slope_per_step", round(slope));
    cJSON_AddStringToObject(o, "verdict", growth ? "growth" : "flat");
    cJSON_AddNumberToObject(o, "from_step", xs[0]);
    cJSON_AddNumberToObject(o, "to_step", xs[n - 1]);
    cJSON_AddNumberToObject(o, "first_bytes", ys[0]);
    cJSON_AddNumberToObject(o, "last_bytes", ys[n - 1]);
    cJSON_AddNumberToObject(o, "last_steady_bytes", ys[n - 2]); /* before the failing step's value */
    cJSON_AddStringToObject(o, "path", e->file ? e->file : "");
    return o;
}

/* ---- a source's series, gathered ------------------------------------------------------------ */

typedef struct {
    const char *metric;
    char rank[16];
    double x[TELEMETRY_POINTS], y[TELEMETRY_POINTS];
    size_t n, head; /* points held, and where the oldest is once the ring is full */
    size_t added;   /* points ever added: the number of the next unnumbered one */
    int unnumbered; /* DeepSpeed's lines state no step: numbered 1, 2, ... after the store's points */
    double last_x;
    uint64_t line;
} acc_series;

#define ACC_SERIES 32 /* metrics x ranks one source prints; past that a series is dropped */

struct telemetry_acc {
    acc_series s[ACC_SERIES];
    size_t n;
    uint64_t last_line; /* the line read last: a line with two literals (verl's step line) is read once */
};

telemetry_acc *telemetry_acc_new(void) { return calloc(1, sizeof(telemetry_acc)); }
void telemetry_acc_free(telemetry_acc *a) { free(a); }
void telemetry_acc_reset(telemetry_acc *a)
{
    if (a)
        a->n = 0, a->last_line = 0;
}
int telemetry_acc_any(const telemetry_acc *a) { return a && a->n > 0; }

int telemetry_acc_line(telemetry_acc *a, const char *s, size_t n, const char *rank, uint64_t line)
{
    /* its second literal: the points were taken at the first (issue 33 item 17: half the parses) */
    if (line && line == a->last_line)
        return 0;
    a->last_line = line;
    telemetry_sample smp[8];
    size_t k = telemetry_parse(s, n, smp, 8);
    for (size_t i = 0; i < k; i++) {
        const char *rk = smp[i].rank[0] ? smp[i].rank : rank ? rank : "";
        acc_series *se = NULL;
        for (size_t j = 0; j < a->n && !se; j++)
            if (a->s[j].metric == smp[i].metric && strcmp(a->s[j].rank, rk) == 0)
                se = &a->s[j];
        if (!se) {
            if (a->n == ACC_SERIES)
                continue;
            se = &a->s[a->n++];
            se->metric = smp[i].metric;
            snprintf(se->rank, sizeof se->rank, "%s", rk);
            se->n = se->head = se->added = 0;
            se->unnumbered = 0;
            se->last_x = 0;
        }
        double x = smp[i].x;
        if (x < 0) {
            se->unnumbered = 1;
            x = (double)se->added + 1;
        } else if (se->added && x == se->last_x) {
            continue; /* the same line again (its second literal), or a step printed twice */
        }
        size_t at;
        if (se->n < TELEMETRY_POINTS) {
            at = se->n++;
        } else {
            at = se->head;
            se->head = (se->head + 1) % TELEMETRY_POINTS;
        }
        se->x[at] = x;
        se->y[at] = smp[i].bytes;
        se->last_x = x;
        se->added++;
        se->line = line;
    }
    return 0;
}

int telemetry_acc_flush(telemetry_acc *a, struct config_store **st, const char *job, const char *file)
{
    enum { CAP = TELEMETRY_POINTS * 48 + 1 };
    for (size_t j = 0; a && j < a->n; j++) {
        acc_series *se = &a->s[j];
        char path[96];
        series_path(path, sizeof path, se->metric, se->rank);
        const config_entry *e = *st ? config_get(*st, path, job ? job : "") : NULL;
        double ox[TELEMETRY_POINTS], oy[TELEMETRY_POINTS];
        size_t on = e ? parse_points(e->value, ox, oy, TELEMETRY_POINTS) : 0;
        /* the store's points first (an earlier source of the job), then this source's; the last kept */
        size_t total = on + se->n, skip = total > TELEMETRY_POINTS ? total - TELEMETRY_POINTS : 0;
        double base = se->unnumbered && on ? ox[on - 1] : 0;
        char *v = malloc(CAP);
        if (!v)
            return -1;
        size_t len = 0;
        v[0] = 0;
        for (size_t i = skip; i < total; i++) {
            double x, y;
            if (i < on) {
                x = ox[i];
                y = oy[i];
            } else {
                size_t k = i - on, at = se->n < TELEMETRY_POINTS ? k : (se->head + k) % TELEMETRY_POINTS;
                x = se->x[at] + base;
                y = se->y[at];
            }
            size_t wx = put_num(v + len, CAP - len, x, len != 0);
            if (!wx || len + wx + 1 >= CAP)
                break;
            v[len + wx] = ':';
            size_t wy = put_num(v + len + wx + 1, CAP - len - wx - 1, y, 0);
            if (!wy) {
                v[len] = 0;
                break;
            }
            len += wx + 1 + wy;
        }
        int rc = config_put(st, path, v, job ? job : "", file, se->line);
        free(v);
        if (rc < 0)
            return -1;
    }
    telemetry_acc_reset(a);
    return 0;
}
