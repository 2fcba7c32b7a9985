/* prefilter.c - skip-based multi-literal search (Wu-Manber with 3-byte blocks). */
#include "prefilter.h"

#include <stdlib.h>
#include <string.h>

#define BLOCK 3
#define TABLE_BITS 16
#define TABLE_SIZE (1u << TABLE_BITS)

struct prefilter {
    size_t n;
    size_t m;          /* window: the shortest literal, capped */
    char **lits;
    size_t *lens;
    uint8_t shift[TABLE_SIZE];
    int32_t head[TABLE_SIZE]; /* first literal whose window ends with this block, -1 = none */
    int32_t *next;            /* chain of literals sharing a block */
};

static inline uint32_t block_hash(const unsigned char *p)
{
    uint32_t v = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16);
    return (v * 2654435761u) >> (32 - TABLE_BITS);
}

void prefilter_free(prefilter *pf)
{
    if (!pf)
        return;
    for (size_t i = 0; i < pf->n; i++)
        free(pf->lits[i]);
    free(pf->lits);
    free(pf->lens);
    free(pf->next);
    free(pf);
}

prefilter *prefilter_new(const char *const *lits, size_t n)
{
    prefilter *pf = calloc(1, sizeof *pf);
    if (!pf)
        return NULL;
    pf->n = n;
    pf->lits = calloc(n ? n : 1, sizeof *pf->lits);
    pf->lens = calloc(n ? n : 1, sizeof *pf->lens);
    pf->next = calloc(n ? n : 1, sizeof *pf->next);
    if (!pf->lits || !pf->lens || !pf->next)
        goto fail;
    /* Cap the window so one long literal set does not make the tables sparse; 16 is plenty to jump. */
    pf->m = 16;
    for (size_t i = 0; i < n; i++) {
        pf->lens[i] = strlen(lits[i]);
        if (pf->lens[i] < PREFILTER_MIN_LITERAL)
            goto fail;
        if (!(pf->lits[i] = strdup(lits[i])))
            goto fail;
        if (pf->lens[i] < pf->m)
            pf->m = pf->lens[i];
    }
    size_t max_shift = pf->m - BLOCK + 1;
    if (max_shift > 255)
        max_shift = 255;
    memset(pf->shift, (int)max_shift, sizeof pf->shift);
    for (size_t i = 0; i < TABLE_SIZE; i++)
        pf->head[i] = -1;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *l = (const unsigned char *)pf->lits[i];
        for (size_t q = BLOCK - 1; q < pf->m; q++) {
            uint32_t h = block_hash(l + q - (BLOCK - 1));
            size_t s = pf->m - 1 - q;
            if (s < pf->shift[h])
                pf->shift[h] = (uint8_t)s;
        }
        uint32_t h = block_hash(l + pf->m - BLOCK);
        pf->next[i] = pf->head[h];
        pf->head[h] = (int32_t)i;
    }
    return pf;
fail:
    prefilter_free(pf);
    return NULL;
}

void prefilter_scan(const prefilter *pf, const unsigned char *buf, size_t from, size_t end, size_t avail,
                    prefilter_hit_fn fn, void *ud)
{
    if (!pf || pf->n == 0 || end <= from)
        return;
    const size_t m = pf->m;
    /* j is the index of the window's last byte; the window starts at j - m + 1. */
    size_t j = from + m - 1;
    size_t limit = end + m - 1; /* windows starting before `end` */
    if (limit > avail)
        limit = avail;
    const uint8_t *shift = pf->shift;
    while (j < limit) {
        uint32_t h = block_hash(buf + j - (BLOCK - 1));
        size_t s = shift[h];
        if (s) {
            j += s;
            continue;
        }
        size_t start = j - m + 1;
        size_t resume = start + 1;
        for (int32_t i = pf->head[h]; i >= 0; i = pf->next[i]) {
            size_t len = pf->lens[i];
            if (start + len <= avail && memcmp(buf + start, pf->lits[i], len) == 0) {
                size_t r = fn(ud, (size_t)i, start);
                if (r == SIZE_MAX)
                    return;
                if (r > resume)
                    resume = r;
            }
        }
        j = resume + m - 1;
    }
}
