/* token_pass.c - a prototype of finding setting names without Vectorscan: whole [A-Za-z0-9_-] tokens
 * (a leading "--" dropped) of a setting name's length, a fingerprint filter, then a hash of the plain
 * names of NAMES (one per line; those with a space or '#' are left to Vectorscan); AVX2, best of
 * five. A probe for docs/performance.md (issue 18, fourth round), not part of the build:
 *   cc -O2 -mavx2 bench/probes/token_pass.c -o /tmp/token_pass
 *   /tmp/token_pass /tmp/setlits.txt bench/data/log-64.err */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe.h"

#define MAXN 1024
#define SLOTS 4096
static const char *names[MAXN];
static size_t lens[MAXN];
static int slot[SLOTS];
static uint64_t filter[1024]; /* by fingerprint(): 65536 bits */
static size_t minlen = SIZE_MAX, maxlen;

static int name_byte(unsigned char c)
{
    unsigned char l = c | 0x20;
    return (l >= 'a' && l <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static uint64_t hash(const unsigned char *p, size_t n) /* n >= 8 */
{
    uint64_t a, b;
    memcpy(&a, p, 8);
    memcpy(&b, p + n - 8, 8);
    return a * 0x9E3779B97F4A7C15ull ^ b * 0xC2B2AE3D27D4EB4Full ^ n;
}

static unsigned fingerprint(const unsigned char *p, size_t n)
{
    return (p[0] * 31u + p[1] * 7u + p[n - 1] + (unsigned)n * 131u) & 65535u;
}

/* One bit per name byte of p[0..64). */
static uint64_t name_mask(const unsigned char *p)
{
    uint64_t m = 0;
    for (int h = 0; h < 2; h++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(p + 32 * h));
        __m256i lo = _mm256_or_si256(v, _mm256_set1_epi8(0x20));
        __m256i alpha = _mm256_and_si256(_mm256_cmpgt_epi8(lo, _mm256_set1_epi8('a' - 1)),
                                         _mm256_cmpgt_epi8(_mm256_set1_epi8('z' + 1), lo));
        __m256i digit = _mm256_and_si256(_mm256_cmpgt_epi8(v, _mm256_set1_epi8('0' - 1)),
                                         _mm256_cmpgt_epi8(_mm256_set1_epi8('9' + 1), v));
        __m256i other = _mm256_or_si256(_mm256_cmpeq_epi8(v, _mm256_set1_epi8('_')), _mm256_cmpeq_epi8(v, _mm256_set1_epi8('-')));
        m |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_or_si256(_mm256_or_si256(alpha, digit), other)) << (32 * h);
    }
    return m;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return fprintf(stderr, "usage: token_pass NAMES FILE\n"), 2;
    FILE *f = fopen(argv[1], "r");
    char line[512];
    int n = 0;
    while (f && n < MAXN && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strchr(line, ' ') || strchr(line, '#') || strlen(line) < 8)
            continue;
        names[n] = strdup(line);
        lens[n] = strlen(line);
        minlen = lens[n] < minlen ? lens[n] : minlen;
        maxlen = lens[n] > maxlen ? lens[n] : maxlen;
        n++;
    }
    if (f)
        fclose(f);
    memset(slot, -1, sizeof slot);
    for (int i = 0; i < n; i++) {
        uint64_t h = hash((const unsigned char *)names[i], lens[i]) % SLOTS;
        while (slot[h] >= 0)
            h = (h + 1) % SLOTS;
        slot[h] = i;
        unsigned q = fingerprint((const unsigned char *)names[i], lens[i]);
        filter[q >> 6] |= 1ull << (q & 63);
    }
    long size;
    unsigned char *buf = probe_slurp(argv[2], 128, &size);
    if (!buf)
        return 1;
    double best = 1e9;
    long cand = 0, passed = 0, found = 0;
    for (int r = 0; r < 5; r++) {
        struct timespec a, b;
        cand = passed = found = 0;
        clock_gettime(CLOCK_MONOTONIC, &a);
        uint64_t prev = 0;
        for (long i = 0; i < size; i += 64) {
            uint64_t m = name_mask(buf + i), next = name_mask(buf + i + 64) & 1;
            uint64_t run = m; /* bit j: bytes j-minlen+1..j are all name bytes */
            for (unsigned k = 1; k < minlen; k++)
                run &= (m << k) | (prev >> (64 - k));
            uint64_t ends = m & ~((m >> 1) | (next << 63));
            for (uint64_t c = run & ends; c; c &= c - 1) {
                long te = i + __builtin_ctzll(c) + 1, ts = te - (long)minlen;
                while (ts > 0 && name_byte(buf[ts - 1]))
                    ts--;
                const unsigned char *tp = buf + ts;
                size_t tl = (size_t)(te - ts);
                if (tp[0] == '-' && tp[1] == '-')
                    tp += 2, tl -= 2;
                if (tl < minlen || tl > maxlen)
                    continue;
                cand++;
                unsigned q = fingerprint(tp, tl);
                if (!(filter[q >> 6] >> (q & 63) & 1))
                    continue;
                passed++;
                for (uint64_t h = hash(tp, tl) % SLOTS; slot[h] >= 0; h = (h + 1) % SLOTS)
                    if (lens[slot[h]] == tl && memcmp(names[slot[h]], tp, tl) == 0) {
                        found++;
                        break;
                    }
            }
            prev = m;
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        double t = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
        if (t < best)
            best = t;
    }
    printf("%s: %.3f s, %ld tokens of a name's length, %ld past the filter, %ld setting names\n", argv[2], best, cand,
           passed, found);
    return 0;
}
