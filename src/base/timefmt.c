/* timefmt.c - lenient timestamp parsing; anything unrecognised is simply not a time. */
#include "base/timefmt.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static const char *const months[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

static int month_of(const char *s)
{
    for (int i = 0; i < 12; i++)
        if (strncasecmp(s, months[i], 3) == 0)
            return i + 1;
    return 0;
}

static int days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    int era = (y >= 0 ? y : y - 399) / 400;
    int yoe = y - era * 400;
    int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void finish(timefmt *t)
{
    int y = t->has_date ? t->year : 2000;
    if (t->has_date || t->has_md)
        t->key = (double)days_from_civil(y, t->month, t->day) * 86400.0 + t->hour * 3600.0 + t->min * 60.0 + t->sec;
    else if (t->uptime_only)
        t->key = t->uptime;
    else
        t->key = t->hour * 3600.0 + t->min * 60.0 + t->sec;
}

static int parse_clock(const char *p, timefmt *t)
{
    int h, m, n = 0;
    double s;
    if (sscanf(p, "%2d:%2d:%lf%n", &h, &m, &s, &n) != 3)
        return 0;
    if (h > 23 || m > 59 || s >= 61)
        return 0;
    t->hour = h;
    t->min = m;
    t->sec = s;
    t->has_clock = 1;
    return n;
}

static int is_digit(unsigned char c) { return (unsigned char)(c - '0') < 10; }

/* Why these pairs suffice, branch by branch of timefmt_parse: the ISO date's first %4d ends in a
 * digit that %*[-/] must follow; AReaL's "%4d%2d%2d-" ends in a digit before its '-'; every clock
 * (glog, syslog, dmesg -T, the bare one) goes through parse_clock, whose first %2d ends in a digit
 * before ':'; an uptime is all of strtod's text and has a '.': a digit before it, a digit after it
 * (".5"), or it is a hex float, which starts "0x". */
int timefmt_may_hold(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
#if defined(__SSE2__)
    const __m128i zero = _mm_set1_epi8('0'), nine = _mm_set1_epi8(9);
    /* pairs (k, k+1) for k in [i, i+16); the last block overlaps the one before it instead of a
     * byte loop over the tail (a line of a settings dump is a few blocks long) */
    while (n >= 17) {
        if (i + 17 > n)
            i = n - 17;
        __m128i a = _mm_loadu_si128((const __m128i *)(p + i)), b = _mm_loadu_si128((const __m128i *)(p + i + 1));
        __m128i da = _mm_sub_epi8(a, zero), db = _mm_sub_epi8(b, zero);
        __m128i a_digit = _mm_cmpeq_epi8(_mm_min_epu8(da, nine), da);
        __m128i b_digit = _mm_cmpeq_epi8(_mm_min_epu8(db, nine), db);
        __m128i b_sep = _mm_or_si128(
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, _mm_set1_epi8(':')), _mm_cmpeq_epi8(b, _mm_set1_epi8('.'))),
                         _mm_or_si128(_mm_cmpeq_epi8(b, _mm_set1_epi8('-')), _mm_cmpeq_epi8(b, _mm_set1_epi8('/')))),
            _mm_cmpeq_epi8(_mm_or_si128(b, _mm_set1_epi8(0x20)), _mm_set1_epi8('x')));
        __m128i a_dot = _mm_cmpeq_epi8(a, _mm_set1_epi8('.'));
        __m128i hit = _mm_or_si128(_mm_and_si128(a_digit, b_sep), _mm_and_si128(a_dot, b_digit));
        if (_mm_movemask_epi8(hit))
            return 1;
        if (i + 17 == n)
            return 0;
        i += 16;
    }
#endif
    for (; i + 1 < n; i++) {
        unsigned char a = p[i], b = p[i + 1];
        if ((is_digit(a) && (b == ':' || b == '.' || b == '-' || b == '/' || (b | 0x20) == 'x')) ||
            (a == '.' && is_digit(b)))
            return 1;
    }
    return 0;
}

/* long: the time-stamp formats tried in order, a few lines each; the first that fits wins, so the order is
 * the function. */
int timefmt_parse(const char *src, size_t n, timefmt *t)
{
    char s[80];
    memset(t, 0, sizeof *t);
    while (n && (*src == '[' || *src == ' ')) {
        src++;
        n--;
    }
    while (n && (src[n - 1] == ']' || src[n - 1] == ' '))
        n--;
    if (n == 0 || n >= sizeof s)
        return -1;
    memcpy(s, src, n);
    s[n] = '\0';
    int y, mo, d, k = 0;
    /* ISO 8601 / Python logging / Slurm: 2024-05-01T12:00:00.123 or 2024-05-01 12:00:00,123 */
    if (sscanf(s, "%4d%*[-/]%2d%*[-/]%2d%n", &y, &mo, &d, &k) == 3 && k >= 8 && mo >= 1 && mo <= 12 && d >= 1 &&
        d <= 31) {
        t->has_date = 1;
        t->year = y;
        t->month = mo;
        t->day = d;
        if (s[k] == 'T' || s[k] == ' ') {
            char *c = s + k + 1;
            for (char *q = c; *q; q++)
                if (*q == ',')
                    *q = '.'; /* Python logging writes milliseconds after a comma */
            parse_clock(c, t);
        }
        finish(t);
        return 0;
    }
    /* AReaL's logger (areal/utils/logging.py DATE_FORMAT "%Y%m%d-%H:%M:%S", then .msecs):
     * 20260320-11:19:29.153. Eight digits and a dash, so the ISO branch above never takes it. */
    if (n >= 17 && s[8] == '-' && sscanf(s, "%4d%2d%2d-%n", &y, &mo, &d, &k) == 3 && k == 9 && mo >= 1 &&
        mo <= 12 && d >= 1 && d <= 31 && parse_clock(s + k, t)) {
        t->has_date = 1;
        t->year = y;
        t->month = mo;
        t->day = d;
        finish(t);
        return 0;
    }
    /* glog: I0501 12:00:00.123456 (the severity letter may already be gone). PyTorch's c10 logger
     * writes the month without its leading zero ([E321 02:07:08.408271257 ...] is March 21), so three
     * digits are M DD and four are MM DD. */
    const char *g = s;
    if (strchr("IWEF", g[0]) && isdigit((unsigned char)g[1]))
        g++;
    int md_digits = 0;
    while (md_digits < 5 && isdigit((unsigned char)g[md_digits]))
        md_digits++;
    if ((md_digits == 3 || md_digits == 4) && g[md_digits] == ' ' &&
        sscanf(g, md_digits == 3 ? "%1d%2d %n" : "%2d%2d %n", &mo, &d, &k) == 2 && mo >= 1 && mo <= 12 &&
        d >= 1 && d <= 31 && parse_clock(g + k, t)) {
        t->has_md = 1;
        t->month = mo;
        t->day = d;
        finish(t);
        return 0;
    }
    /* dmesg -T: Mon May  1 12:00:00 2024 */
    if (n > 20 && isalpha((unsigned char)s[0]) && s[3] == ' ' && (mo = month_of(s + 4))) {
        const char *p = s + 7;
        while (*p == ' ')
            p++;
        d = atoi(p);
        while (isdigit((unsigned char)*p))
            p++;
        while (*p == ' ')
            p++;
        int used = parse_clock(p, t);
        if (used && d >= 1 && d <= 31) {
            p += used;
            t->month = mo;
            t->day = d;
            if (sscanf(p, " %4d", &y) == 1) {
                t->year = y;
                t->has_date = 1;
            } else {
                t->has_md = 1;
            }
            finish(t);
            return 0;
        }
    }
    /* syslog: May  1 12:00:00 */
    if ((mo = month_of(s)) && s[3] == ' ') {
        const char *p = s + 3;
        while (*p == ' ')
            p++;
        d = atoi(p);
        while (isdigit((unsigned char)*p))
            p++;
        while (*p == ' ')
            p++;
        if (d >= 1 && d <= 31 && parse_clock(p, t)) {
            t->has_md = 1;
            t->month = mo;
            t->day = d;
            finish(t);
            return 0;
        }
    }
    /* dmesg uptime: 12345.678901 */
    char *end;
    double up = strtod(s, &end);
    if (end != s && *end == '\0' && strchr(s, '.') && up >= 0) {
        t->uptime_only = 1;
        t->uptime = up;
        finish(t);
        return 0;
    }
    /* a bare clock: 12:00:00 */
    if (parse_clock(s, t)) {
        finish(t);
        return 0;
    }
    return -1;
}

int timefmt_cmp(const timefmt *a, const timefmt *b) { return timefmt_cmp_slack(a, b, 0.0); }

int timefmt_cmp_slack(const timefmt *a, const timefmt *b, double slack)
{
    if (a->uptime_only || b->uptime_only) {
        if (!(a->uptime_only && b->uptime_only))
            return TIMEFMT_INCOMPARABLE;
        return (a->key > b->key + slack) - (a->key + slack < b->key);
    }
    int ad = a->has_date || a->has_md, bd = b->has_date || b->has_md;
    if (ad != bd)
        return TIMEFMT_INCOMPARABLE; /* a bare clock has no day */
    double ka = a->key, kb = b->key;
    if (ad && a->has_date != b->has_date) {
        /* One stamp lacks the year (glog, syslog): it is taken to be the other stamp's year. */
        int y = a->has_date ? a->year : b->year;
        const timefmt *nd = a->has_date ? b : a;
        double k = (double)days_from_civil(y, nd->month, nd->day) * 86400.0 + nd->hour * 3600.0 + nd->min * 60.0 +
                   nd->sec;
        if (a->has_date)
            kb = k;
        else
            ka = k;
    }
    return (ka > kb + slack) - (ka + slack < kb);
}

void timefmt_format(const timefmt *t, char *buf, size_t cap)
{
    char clock[32] = "";
    if (t->has_clock) {
        int whole = (int)t->sec;
        int ms = (int)((t->sec - whole) * 1000.0 + 0.5);
        if (ms >= 1000)
            ms = 999;
        if (ms)
            snprintf(clock, sizeof clock, "T%02d:%02d:%02d.%03d", t->hour, t->min, whole, ms);
        else
            snprintf(clock, sizeof clock, "T%02d:%02d:%02d", t->hour, t->min, whole);
    }
    if (t->has_date)
        snprintf(buf, cap, "%04d-%02d-%02d%s", t->year, t->month, t->day, clock);
    else if (t->has_md)
        snprintf(buf, cap, "%02d-%02d%s", t->month, t->day, clock);
    else if (t->uptime_only)
        snprintf(buf, cap, "uptime+%.3fs", t->uptime);
    else
        snprintf(buf, cap, "%s", t->has_clock ? clock + 1 : "");
}
