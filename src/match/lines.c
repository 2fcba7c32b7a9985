/* lines.c - line handling for the scanner: terminators counted and found (vectorised), a line's
 * bounds and the next line, traceback frame lines read, evidence made printable. */
#include "match/lines.h"

#include <ctype.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Terminators per byte lane, summed without popcount (the default x86-64 target has no popcnt
 * instruction and the libgcc fallback was 5% of a scan): a byte is a terminator when it is \n, or \r
 * not followed by \n; lanes count down from 0 (cmpeq gives -1) for at most 255 blocks, then
 * _mm_sad_epu8 adds the 16 lanes. The byte after each block is read, so the loop stops 16 early. */
uint64_t scan_count_lines(const unsigned char *p, size_t n)
{
    uint64_t total = 0;
    size_t i = 0;
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
    *start = s;
    *end = pos < hi ? lines_eol(b, pos, hi) : pos; /* vectorised: metrics lines run to kilobytes */
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
size_t lines_eol(const unsigned char *b, size_t pos, size_t hi)
{
    size_t i = pos;
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
