/* check_prefilter.c - the multi-literal search finds every occurrence, and nothing else. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "prefilter.h"
#include "check_main.h"

typedef struct {
    size_t lit[64], pos[64], n;
} hits;

static size_t collect(void *ud, size_t lit, size_t pos)
{
    hits *h = ud;
    if (h->n < 64) {
        h->lit[h->n] = lit;
        h->pos[h->n] = pos;
        h->n++;
    }
    return pos + 1;
}

/* Naive reference: every start of every literal, in position order. */
static size_t naive(const char *const *lits, size_t nl, const char *text, size_t n, size_t *pos)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t l = 0; l < nl; l++)
            if (i + strlen(lits[l]) <= n && memcmp(text + i, lits[l], strlen(lits[l])) == 0)
                pos[k++] = i;
    return k;
}

START_TEST(test_prefilter_finds_all_occurrences)
{
    const char *lits[] = {"CUDA out of memory", "Killed", "NCCL error", "File \""};
    prefilter *pf = prefilter_new(lits, 4);
    ck_assert_ptr_nonnull(pf);
    const char *text = "x Killed\nCUDA out of memory. Tried\n  File \"a.py\", line 1\nNCCL errorKilled";
    hits h = {0};
    prefilter_scan(pf, (const unsigned char *)text, 0, strlen(text), strlen(text), collect, &h);
    size_t want[64];
    size_t nw = naive(lits, 4, text, strlen(text), want);
    ck_assert_uint_eq(h.n, nw);
    for (size_t i = 0; i < nw; i++)
        ck_assert_uint_eq(h.pos[i], want[i]);
    prefilter_free(pf);
}
END_TEST

START_TEST(test_prefilter_random_text_matches_naive)
{
    const char *lits[] = {"abcab", "bca", "cabbage", "aaaa", "bbbbbbbbbbbbbbbbbbbb"};
    prefilter *pf = prefilter_new(lits, 5);
    char text[4096];
    srand(7);
    for (int round = 0; round < 50; round++) {
        for (size_t i = 0; i < sizeof text; i++)
            text[i] = "abc"[rand() % 3];
        hits h = {0};
        size_t want[4096];
        size_t all = naive(lits, 5, text, sizeof text, want);
        size_t nw = 0;
        while (nw < all && want[nw] < 300)
            nw++;
        /* only the first 300 bytes are the region; literals may be verified past it */
        prefilter_scan(pf, (const unsigned char *)text, 0, 300, sizeof text, collect, &h);
        size_t expect = nw < 64 ? nw : 64;
        ck_assert_uint_eq(h.n, expect);
        for (size_t i = 0; i < expect; i++)
            ck_assert_uint_eq(h.pos[i], want[i]);
    }
    prefilter_free(pf);
}
END_TEST

START_TEST(test_prefilter_respects_region_and_avail)
{
    const char *lits[] = {"Killed"};
    prefilter *pf = prefilter_new(lits, 1);
    const char *text = "....Killed";
    hits h = {0};
    /* the literal starts inside the region but ends past `avail`: it cannot be verified */
    prefilter_scan(pf, (const unsigned char *)text, 0, 6, 8, collect, &h);
    ck_assert_uint_eq(h.n, 0);
    prefilter_scan(pf, (const unsigned char *)text, 0, 6, 10, collect, &h);
    ck_assert_uint_eq(h.n, 1);
    ck_assert_uint_eq(h.pos[0], 4);
    /* a literal starting at or after `end` belongs to the next region */
    h.n = 0;
    prefilter_scan(pf, (const unsigned char *)text, 0, 4, 10, collect, &h);
    ck_assert_uint_eq(h.n, 0);
    prefilter_free(pf);
}
END_TEST

START_TEST(test_prefilter_rejects_short_literal)
{
    const char *lits[] = {"ok"};
    ck_assert_ptr_null(prefilter_new(lits, 1));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("prefilter");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_prefilter_finds_all_occurrences);
    tcase_add_test(tc, test_prefilter_random_text_matches_naive);
    tcase_add_test(tc, test_prefilter_respects_region_and_avail);
    tcase_add_test(tc, test_prefilter_rejects_short_literal);
    suite_add_tcase(s, tc);
    return check_run(s);
}
