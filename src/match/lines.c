/* lines.c - line handling for the scanner: terminators counted and found (vectorised), a line's
 * bounds and the next line, traceback frame lines read, evidence made printable. */
#include "match/lines.h"

#include <ctype.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1

/* The terminators among the 32 bytes at q, one lane each (-1): \n, or \r not followed by \n (q[32]
 * is read). */
__attribute__((target("avx2"))) static inline __m256i terminators_avx2(const unsigned char *q)
{
    const __m256i lf = _mm256_set1_epi8('\n'), cr = _mm256_set1_epi8('\r');
    __m256i v = _mm256_loadu_si256((const __m256i *)q);
    __m256i next = _mm256_loadu_si256((const __m256i *)(q + 1));
    return _mm256_or_si256(_mm256_cmpeq_epi8(v, lf), _mm256_andnot_si256(_mm256_cmpeq_epi8(next, lf), _mm256_cmpeq_epi8(v, cr)));
}

/* The 32 byte lanes of acc (each at most 255) added up. */
__attribute__((target("avx2"))) static inline uint64_t lanes_sum_avx2(__m256i acc)
{
    __m256i s = _mm256_sad_epu8(acc, _mm256_setzero_si256());
    return (uint64_t)_mm256_extract_epi64(s, 0) + (uint64_t)_mm256_extract_epi64(s, 1) +
           (uint64_t)_mm256_extract_epi64(s, 2) + (uint64_t)_mm256_extract_epi64(s, 3);
}

/* Exactly as the SSE2 loop below, 32 bytes at a time (the byte after the block is read, so the caller
 * leaves 32 bytes of margin). */
__attribute__((target("avx2"))) static uint64_t count_exact_avx2(const unsigned char *p, size_t n)
{
    __m256i acc = _mm256_setzero_si256();
    for (size_t i = 0; i < n; i += 32)
        acc = _mm256_sub_epi8(acc, terminators_avx2(p + i));
    return lanes_sum_avx2(acc);
}

/* Terminators of p[0..n), n > 32: 255 blocks of 32 bytes at a time (a lane counts to 255). Most logs
 * have no \r: a block is first counted by \n alone while noting any \r, and only a block that had one
 * is counted again exactly; after such a block the next is counted exactly at once (a CRLF log would
 * pay twice). The scanner counts from one hit to the next, a line or so: the tail is one vector
 * overlapping bytes already counted (masked off), not a byte loop. */
__attribute__((target("avx2,popcnt"))) static uint64_t count_avx2(const unsigned char *p, size_t n)
{
    const __m256i lf = _mm256_set1_epi8('\n'), cr = _mm256_set1_epi8('\r'), zero = _mm256_setzero_si256();
    uint64_t total = 0;
    size_t i = 0;
    int exact = 0;
    while (i + 32 < n) {
        size_t len = (n - i - 1) / 32 * 32; /* blocks whose next byte is inside n */
        if (len > 255 * 32)
            len = 255 * 32;
        if (exact) {
            total += count_exact_avx2(p + i, len);
            exact = 0;
        } else {
            __m256i acc = zero, anycr = zero;
            for (size_t k = 0; k < len; k += 32) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(p + i + k));
                acc = _mm256_sub_epi8(acc, _mm256_cmpeq_epi8(v, lf));
                anycr = _mm256_or_si256(anycr, _mm256_cmpeq_epi8(v, cr));
            }
            if (_mm256_testz_si256(anycr, anycr)) {
                total += lanes_sum_avx2(acc);
            } else {
                total += count_exact_avx2(p + i, len);
                exact = 1;
            }
        }
        i += len;
    }
    /* bytes [i, n - 1) from the 32 ending before the last byte; the last byte has no next: a \r there
     * ends a line (as in the loops below) */
    __m256i t = terminators_avx2(p + n - 33);
    size_t counted = i - (n - 33); /* 1..32 lanes hold bytes already counted */
    if (counted < 32)
        total += (uint64_t)__builtin_popcount((uint32_t)_mm256_movemask_epi8(t) >> counted);
    return total + (p[n - 1] == '\n' || p[n - 1] == '\r');
}
#endif

#ifdef HAVE_AVX2_PATH
/* lines_use_avx2(0): the SSE2 loops even on a CPU with AVX2, so that tests run both */
static int avx2_off;
static int use_avx2(void) { return !avx2_off && __builtin_cpu_supports("avx2"); }
#endif

void lines_use_avx2(int on)
{
#ifdef HAVE_AVX2_PATH
    avx2_off = !on;
#else
    (void)on;
#endif
}

/* Terminators per byte lane, summed without popcount (the default x86-64 target has no popcnt
 * instruction and the libgcc fallback was 5% of a scan): a byte is a terminator when it is \n, or \r
 * not followed by \n; lanes count down from 0 (cmpeq gives -1) for at most 255 blocks, then
 * _mm_sad_epu8 adds the 16 lanes. The byte after each block is read, so the loop stops 16 early. */
uint64_t scan_count_lines(const unsigned char *p, size_t n)
{
    uint64_t total = 0;
    size_t i = 0;
#ifdef HAVE_AVX2_PATH
    /* the terminators of every byte the scan reads are counted: a tenth of a scan's instructions in
     * SSE2, a quarter of that with AVX2 on a log without \r */
    if (n > 32 && use_avx2())
        return count_avx2(p, n);
#endif
#if defined(__SSE2__)
    const __m128i lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'), zero = _mm_setzero_si128();
    while (i + 16 < n) {
        __m128i acc = zero;
        for (int k = 0; k < 255 && i + 16 < n; k++, i += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
            __m128i next = _mm_loadu_si128((const __m128i *)(p + i + 1));
            __m128i t = _mm_or_si128(_mm_cmpeq_epi8(v, lf),
                                     _mm_andnot_si128(_mm_cmpeq_epi8(next, lf), _mm_cmpeq_epi8(v, cr)));
            acc = _mm_sub_epi8(acc, t);
        }
        __m128i sums = _mm_sad_epu8(acc, zero);
        total += (uint64_t)_mm_cvtsi128_si32(sums) + (uint64_t)_mm_cvtsi128_si32(_mm_srli_si128(sums, 8));
    }
#endif
    for (; i < n; i++) {
        if (p[i] == '\n')
            total++;
        else if (p[i] == '\r' && !(i + 1 < n && p[i + 1] == '\n'))
            total++;
    }
    return total;
}

/* Bounds of the line holding pos, within [lo, hi). */
void lines_bounds(const unsigned char *b, size_t lo, size_t hi, size_t pos, size_t *start, size_t *end)
{
    *start = lines_bol(b, lo, pos);
    *end = pos < hi ? lines_eol(b, pos, hi) : pos; /* vectorised: metrics lines run to kilobytes */
}

/* Start of the line holding pos, not before lo. */
size_t lines_bol(const unsigned char *b, size_t lo, size_t pos)
{
    size_t s = pos;
#if defined(__SSE2__)
    /* back 16 bytes at a time to the block holding the terminator (a settings or metrics line is
     * read from where its name was found, tens of bytes into it) */
    const __m128i lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
    while (s >= lo + 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(b + s - 16));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, lf), _mm_cmpeq_epi8(v, cr)));
        if (m) {
            s = s - 16 + (size_t)(31 - __builtin_clz(m)) + 1;
            break;
        }
        s -= 16;
    }
#endif
    while (s > lo && b[s - 1] != '\n' && b[s - 1] != '\r') /* the last bytes; at once when found above */
        s--;
    return s;
}

/* The line after one ending at `end` (skipping its terminator), within [0, hi). 0 if none complete. */
int lines_next(const unsigned char *b, size_t hi, size_t end, size_t *ns, size_t *ne)
{
    if (end >= hi)
        return 0;
    size_t s = end + 1;
    if (b[end] == '\r' && s < hi && b[s] == '\n')
        s++;
    if (s >= hi)
        return 0;
    size_t e = s;
    while (e < hi && b[e] != '\n' && b[e] != '\r')
        e++;
    *ns = s;
    *ne = e;
    return 1;
}

/* End of the line holding pos (its first terminator at or after pos), within [pos, hi). */
#ifdef HAVE_AVX2_PATH
/* lines_eol's vector loop, 32 bytes at a time: the index of the first terminator in [i, hi), or the
 * first index whose 32 bytes are no longer all inside. */
__attribute__((target("avx2"))) static size_t eol_avx2(const unsigned char *b, size_t i, size_t hi)
{
    const __m256i lf = _mm256_set1_epi8('\n'), cr = _mm256_set1_epi8('\r');
    for (; i + 32 <= hi; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(b + i));
        unsigned m = (unsigned)_mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpeq_epi8(v, lf), _mm256_cmpeq_epi8(v, cr)));
        if (m)
            return i + (size_t)__builtin_ctz(m);
    }
    return i;
}
#endif

int lines_continue_record(const char *s, size_t n)
{
    size_t i = 0;
    if (n && s[0] == '[') {
        /* [default0]:, [rank3]: , [1,0]<stderr>: */
        size_t c = 1;
        while (c < n && c < 48 && s[c] != ']')
            c++;
        if (c < n && s[c] == ']') {
            size_t k = c + 1;
            if (k < n && s[k] == '<')
                while (k < n && k < c + 12 && s[k] != '>')
                    k++;
            if (k < n && s[k] == '>')
                k++;
            if (k < n && s[k] == ':') {
                i = k + 1;
                if (i + 1 < n && s[i] == ' ' && s[i + 1] != ' ' && s[i + 1] != '\t')
                    i++; /* torch's "[rank3]: " puts one space after its prefix */
            }
        }
    } else if (n && s[0] == '(') {
        /* Ray: "(WorkerDict pid=1234, ip=10.0.0.1) " */
        size_t c = 1;
        while (c < n && c < 96 && s[c] != ')')
            c++;
        if (c + 1 < n && s[c] == ')' && s[c + 1] == ' ')
            i = c + 2;
    }
    if (i >= n)
        return 0;
    static const char tb[] = "Traceback (most recent call last)";
    return s[i] == ' ' || s[i] == '\t' || (n - i >= sizeof tb - 1 && memcmp(s + i, tb, sizeof tb - 1) == 0);
}

size_t lines_eol(const unsigned char *b, size_t pos, size_t hi)
{
    size_t i = pos;
#ifdef HAVE_AVX2_PATH
    /* once per hit line, a line of 200 bytes or a metrics line of kilobytes */
    if (hi - pos >= 64 && use_avx2()) {
        i = eol_avx2(b, pos, hi);
        if (i + 32 <= hi)
            return i;
    }
#endif
#if defined(__SSE2__)
    const __m128i lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
    for (; i + 16 <= hi; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(b + i));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, lf), _mm_cmpeq_epi8(v, cr)));
        if (m)
            return i + (size_t)__builtin_ctz(m);
    }
#endif
    while (i < hi && b[i] != '\n' && b[i] != '\r')
        i++;
    return i;
}

int lines_parse_frame(const char *msg, size_t n, const char **path, size_t *path_len, const char **func,
                     size_t *func_len)
{
    /* File "PATH", line N, in FUNC */
    const char *p = memchr(msg, '"', n);
    if (!p)
        return 0;
    *path = p + 1;
    const char *q = memchr(*path, '"', n - (size_t)(*path - msg));
    if (!q)
        return 0;
    *path_len = (size_t)(q - *path);
    const char *in = NULL;
    for (const char *r = q; r + 4 <= msg + n; r++)
        if (memcmp(r, " in ", 4) == 0 && (r[-1] == ',' || isdigit((unsigned char)r[-1]) || r[-1] == '?')) {
            in = r + 4; /* faulthandler prints "line N in FUNC" (N may be "???"), without the comma */
            break;
        }
    if (!in)
        return 0;
    *func = in;
    *func_len = 0;
    while (in + *func_len < msg + n && !isspace((unsigned char)in[*func_len]))
        ++*func_len;
    return 1;
}

/* Copy text as valid UTF-8 without control characters (NUL and binary junk become '?'). */
size_t lines_sanitize(const char *in, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < cap;) {
        unsigned char c = (unsigned char)in[i];
        if (c < 0x80) {
            out[o++] = (c < 0x20 && c != '\t') || c == 0x7f ? ' ' : (char)c;
            i++;
            continue;
        }
        size_t k = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
        int ok = k && i + k <= n;
        for (size_t j = 1; ok && j < k; j++)
            ok = ((unsigned char)in[i + j] & 0xc0) == 0x80;
        if (ok && k == 3 && c == 0xe0 && (unsigned char)in[i + 1] < 0xa0)
            ok = 0; /* overlong */
        if (ok && k == 3 && c == 0xed && (unsigned char)in[i + 1] >= 0xa0)
            ok = 0; /* surrogate */
        if (ok && k == 4 && ((c == 0xf0 && (unsigned char)in[i + 1] < 0x90) || (c == 0xf4 && (unsigned char)in[i + 1] >= 0x90)))
            ok = 0;
        if (ok) {
            memcpy(out + o, in + i, k);
            o += k;
            i += k;
        } else {
            out[o++] = '?';
            i++;
        }
    }
    while (o > 0 && out[o - 1] == ' ')
        o--;
    return o;
}
