/* check_prefilter.c - the multi-literal search finds every occurrence, and nothing else. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db/prefilter.h"
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

/* ---- both engines: same hits, same order ---------------------------------------------------- */

typedef struct {
    size_t *lit, *pos, n, cap;
    size_t skip_to; /* 0: see every hit; else resume there after the first hit */
    size_t stop_after;
} big_hits;

static size_t collect_big(void *ud, size_t lit, size_t pos)
{
    big_hits *h = ud;
    if (h->n < h->cap) {
        h->lit[h->n] = lit;
        h->pos[h->n] = pos;
        h->n++;
    }
    if (h->stop_after && h->n == h->stop_after)
        return SIZE_MAX;
    if (h->skip_to && h->n == 1)
        return h->skip_to;
    return pos + 1;
}

static void big_init(big_hits *h, size_t cap)
{
    memset(h, 0, sizeof *h);
    h->lit = calloc(cap, sizeof *h->lit);
    h->pos = calloc(cap, sizeof *h->pos);
    h->cap = cap;
    ck_assert_ptr_nonnull(h->lit);
    ck_assert_ptr_nonnull(h->pos);
}

static void big_free(big_hits *h)
{
    free(h->lit);
    free(h->pos);
}

/* Every (position, literal) in the order the contract states: position, then literal index. */
static size_t naive_all(const char *const *lits, size_t nl, const char *text, size_t from, size_t end, size_t avail,
                        size_t *lit, size_t *pos, size_t cap)
{
    size_t k = 0;
    for (size_t i = from; i < end; i++)
        for (size_t l = 0; l < nl; l++) {
            size_t len = strlen(lits[l]);
            if (i + len <= avail && memcmp(text + i, lits[l], len) == 0 && k < cap) {
                lit[k] = l;
                pos[k] = i;
                k++;
            }
        }
    return k;
}

/* `pf` gives exactly the hits in `want`. */
static void check_hits(const prefilter *pf, const big_hits *want, const char *text, size_t from, size_t end, size_t avail,
                       const char *what)
{
    big_hits got;
    big_init(&got, want->cap);
    prefilter_scan(pf, (const unsigned char *)text, from, end, avail, collect_big, &got);
    ck_assert_msg(got.n == want->n, "%s (%s): %zu hits, want %zu", what, prefilter_engine_name(pf), got.n, want->n);
    for (size_t i = 0; i < want->n; i++)
        ck_assert_msg(got.pos[i] == want->pos[i] && got.lit[i] == want->lit[i],
                      "%s (%s): hit %zu is literal %zu at %zu, want literal %zu at %zu", what,
                      prefilter_engine_name(pf), i, got.lit[i], got.pos[i], want->lit[i], want->pos[i]);
    big_free(&got);
}

/* Scan with both engines (the portable one always; Vectorscan when built in) and compare each with
 * the naive reference, hit by hit. */
static void check_engines(const char *const *lits, size_t nl, const char *text, size_t from, size_t end, size_t avail,
                          const char *what)
{
    size_t cap = 4 * (avail + 1) * nl + 16;
    big_hits want;
    big_init(&want, cap);
    want.n = naive_all(lits, nl, text, from, end, avail, want.lit, want.pos, cap);
    for (int e = 0; e < 2; e++) {
        prefilter *pf = prefilter_new_engine(lits, nl, e ? PREFILTER_AUTO : PREFILTER_PORTABLE);
        ck_assert_ptr_nonnull(pf);
        check_hits(pf, &want, text, from, end, avail, what);
        prefilter_free(pf);
    }
    big_free(&want);
}

START_TEST(test_prefilter_engines_agree_on_edges_and_overlaps)
{
    /* overlapping literals: one inside another, sharing a start, sharing an end, self-overlapping */
    const char *lits[] = {"out of memory", "CUDA out of memory", "out of memory. Tried to allocate", "memory",
                          "aaaa", "Killed", "File \""};
    const size_t nl = sizeof lits / sizeof *lits;
    const char *cases[] = {
        "Killed",                                  /* a literal that is the whole buffer */
        "KilledKilled",                            /* back to back */
        "aaaaaaaaa",                               /* self-overlapping: every start */
        "CUDA out of memory. Tried to allocate 2.00 GiB\n", /* four literals over one region */
        "x\n  File \"a.py\", line 1\nKilled\n",
        "memory",                                  /* only the shortest */
        "",
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        size_t n = strlen(cases[c]);
        check_engines(lits, nl, cases[c], 0, n ? n : 0, n, cases[c]);
    }
    /* regions that cut literals: a hit belongs to the region where it starts; avail bounds the read */
    const char *t = "..CUDA out of memory. Tried to allocate..";
    size_t n = strlen(t);
    for (size_t from = 0; from < 6; from++)
        for (size_t end = from + 1; end <= n; end += 3)
            for (size_t avail = end; avail <= n; avail += 7)
                check_engines(lits, nl, t, from, end, avail, "cut region");
}
END_TEST

START_TEST(test_prefilter_engines_agree_on_random_text)
{
    /* a small alphabet makes literals occur often and overlap in every way */
    const char *lits[] = {"abcab", "bca", "cabbage", "aaaa", "bbbbbbbbbbbbbbbbbbbb", "abc", "cab", "ccccab"};
    const size_t nl = sizeof lits / sizeof *lits;
    static char text[3000];
    srand(11);
    for (int round = 0; round < 40; round++) {
        for (size_t i = 0; i < sizeof text; i++)
            text[i] = "abcg"[rand() % (round % 2 ? 3 : 4)];
        size_t end = 1 + (size_t)rand() % (sizeof text - 1);
        check_engines(lits, nl, text, (size_t)rand() % 8 < end ? (size_t)rand() % 8 : 0, end, sizeof text, "random");
    }
}
END_TEST

START_TEST(test_prefilter_is_case_sensitive)
{
    const char *lits[] = {"Killed", "NCCL error"};
    const char *text = "killed KILLED nccl error NCCL Error Killed NCCL error";
    check_engines(lits, 2, text, 0, strlen(text), strlen(text), "case");
    prefilter *pf = prefilter_new(lits, 2);
    hits h = {0};
    prefilter_scan(pf, (const unsigned char *)text, 0, strlen(text), strlen(text), collect, &h);
    ck_assert_uint_eq(h.n, 2); /* only the exact spellings */
    prefilter_free(pf);
}
END_TEST

START_TEST(test_prefilter_skip_and_stop)
{
    const char *lits[] = {"abc", "bcd", "abcd"};
    const char *text = "abcdabcdabcd";
    for (int e = 0; e < 2; e++) {
        prefilter *pf = prefilter_new_engine(lits, 3, e ? PREFILTER_AUTO : PREFILTER_PORTABLE);
        big_hits h;
        /* resume at 8 after the first hit: the other literal at 0 still comes, then only starts >= 8
         * (abc and abcd at 8, bcd at 9) */
        big_init(&h, 64);
        h.skip_to = 8;
        prefilter_scan(pf, (const unsigned char *)text, 0, strlen(text), strlen(text), collect_big, &h);
        ck_assert_uint_eq(h.n, 5);
        ck_assert_uint_eq(h.pos[0], 0);
        ck_assert_uint_eq(h.lit[0], 0);
        ck_assert_uint_eq(h.pos[1], 0);
        ck_assert_uint_eq(h.lit[1], 2);
        ck_assert_uint_eq(h.pos[2], 8);
        ck_assert_uint_eq(h.pos[3], 8);
        ck_assert_uint_eq(h.pos[4], 9);
        ck_assert_uint_eq(h.lit[4], 1);
        big_free(&h);
        /* SIZE_MAX stops the scan at once */
        big_init(&h, 64);
        h.stop_after = 3;
        prefilter_scan(pf, (const unsigned char *)text, 0, strlen(text), strlen(text), collect_big, &h);
        ck_assert_uint_eq(h.n, 3);
        big_free(&h);
        prefilter_free(pf);
    }
}
END_TEST

START_TEST(test_prefilter_many_hits_in_a_large_buffer)
{
    /* a log where a frequent literal hits every line (Ray's actor prefixes): nothing lost over 1 MiB,
     * and the reorder window of the Vectorscan engine never lets a hit out of order */
    const char *lits[] = {"(WorkerDict pid=", "pid=", "Killed", "memory allocated (GB):", "ed (GB)"};
    size_t n = 1u << 20;
    char *text = malloc(n);
    ck_assert_ptr_nonnull(text);
    const char *line = "(WorkerDict pid=123) After update_actor, memory allocated (GB): 1.0 Killed\n";
    size_t ll = strlen(line);
    for (size_t i = 0; i < n; i++)
        text[i] = line[i % ll];
    check_engines(lits, 5, text, 0, n - 100, n, "1 MiB of hits");
    free(text);
}
END_TEST

START_TEST(test_prefilter_engine_in_use)
{
    const char *lits[] = {"Killed"};
    prefilter *pf = prefilter_new(lits, 1);
#ifdef OOMSCAN_HAVE_VECTORSCAN
    ck_assert_str_eq(prefilter_engine_name(pf), "vectorscan");
#else
    ck_assert_str_eq(prefilter_engine_name(pf), "portable");
#endif
    prefilter_free(pf);
    pf = prefilter_new_engine(lits, 1, PREFILTER_PORTABLE);
    ck_assert_str_eq(prefilter_engine_name(pf), "portable");
    prefilter_free(pf);
}
END_TEST

/* ---- the serialized database (built at build time, loaded at start) ------------------------- */

START_TEST(test_prefilter_subset_reports_the_whole_sets_indices)
{
    /* A subset of a larger set (pdb's lean and names prefilters) reports each hit by its index in
     * the larger set, in that set's order at one position, on both engines; ids must increase. */
    const char *all[] = {"out of memory", "micro_batch_size", "Killed", "ppo_micro_batch_size_per_gpu", "NCCL error"};
    const char *sub[] = {all[1], all[3]};
    const size_t ids[] = {1, 3}, bad[] = {3, 1};
    const char *text = "Killed ppo_micro_batch_size_per_gpu=4 micro_batch_size: 2 out of memory";
    size_t n = strlen(text);
    prefilter_engine engines[] = {PREFILTER_AUTO, PREFILTER_PORTABLE};
    for (int e = 0; e < 2; e++) {
        prefilter *pf = prefilter_new_ids(sub, ids, 2, engines[e], NULL, 0);
        ck_assert_ptr_nonnull(pf);
        hits h = {0};
        prefilter_scan(pf, (const unsigned char *)text, 0, n, n, collect, &h);
        ck_assert_uint_eq(h.n, 3);
        ck_assert_uint_eq(h.lit[0], 3); /* ppo_micro_batch_size_per_gpu at 7 */
        ck_assert_uint_eq(h.pos[0], 7);
        ck_assert_uint_eq(h.lit[1], 1); /* the micro_batch_size inside it, at 11 */
        ck_assert_uint_eq(h.pos[1], 11);
        ck_assert_uint_eq(h.lit[2], 1);
        ck_assert_uint_eq(h.pos[2], (size_t)(strstr(text, " micro_batch_size:") + 1 - text));
        prefilter_free(pf);
    }
    ck_assert_ptr_null(prefilter_new_ids(sub, bad, 2, PREFILTER_AUTO, NULL, 0));
}
END_TEST

static const char *const SER_LITS[] = {"CUDA out of memory", "out of memory", "Killed", "NCCL error", "File \"",
                                       "Traceback (most recent call last)"};
#define SER_N (sizeof SER_LITS / sizeof *SER_LITS)
static const char SER_TEXT[] = "Traceback (most recent call last):\n  File \"a.py\", line 1\n"
                               "torch.OutOfMemoryError: CUDA out of memory. Tried\nKilled\nNCCL errorKilled\n";

/* What the compiled set finds in SER_TEXT (the reference every loaded prefilter must give). */
static void ser_want(big_hits *want)
{
    big_init(want, 256);
    want->n = naive_all(SER_LITS, SER_N, SER_TEXT, 0, sizeof SER_TEXT - 1, sizeof SER_TEXT - 1, want->lit, want->pos,
                        want->cap);
    ck_assert_uint_gt(want->n, 5);
}

static uint64_t ser_fnv(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

START_TEST(test_prefilter_serialized_gives_same_hits)
{
    prefilter *pf = prefilter_new(SER_LITS, SER_N);
    unsigned char *blob = NULL;
    size_t len = 0;
    int rc = prefilter_serialize(pf, &blob, &len);
#ifdef OOMSCAN_HAVE_VECTORSCAN
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_gt(len, 32);
    ck_assert_int_eq(prefilter_from_blob(pf), 0);
    prefilter *loaded = prefilter_new_serialized(SER_LITS, SER_N, blob, len);
    ck_assert_ptr_nonnull(loaded);
    ck_assert_int_eq(prefilter_from_blob(loaded), 1);
    ck_assert_str_eq(prefilter_engine_name(loaded), "vectorscan");
    big_hits want;
    ser_want(&want);
    check_hits(pf, &want, SER_TEXT, 0, sizeof SER_TEXT - 1, sizeof SER_TEXT - 1, "compiled");
    check_hits(loaded, &want, SER_TEXT, 0, sizeof SER_TEXT - 1, sizeof SER_TEXT - 1, "deserialized");
    /* a region and a skip behave as well: the reorder buffer sits above either database */
    check_engines(SER_LITS, SER_N, SER_TEXT, 3, 60, sizeof SER_TEXT - 1, "region");
    big_free(&want);
    prefilter_free(loaded);
#else
    ck_assert_int_eq(rc, -1); /* nothing to serialize: the portable engine builds in microseconds */
    ck_assert_ptr_null(blob);
#endif
    free(blob);
    prefilter_free(pf);
}
END_TEST

/* A blob that is cut, damaged, made for another literal set, or refused by Vectorscan (another
 * version or CPU) is not used: the set is compiled, and the hits are the same. */
START_TEST(test_prefilter_bad_blob_falls_back_to_compiling)
{
    prefilter *pf = prefilter_new(SER_LITS, SER_N);
    unsigned char *blob = NULL;
    size_t len = 0;
    if (prefilter_serialize(pf, &blob, &len) != 0) { /* no Vectorscan: garbage must still be harmless */
        static const unsigned char junk[64] = {1, 2, 3};
        prefilter *p2 = prefilter_new_serialized(SER_LITS, SER_N, junk, sizeof junk);
        ck_assert_ptr_nonnull(p2);
        ck_assert_str_eq(prefilter_engine_name(p2), "portable");
        prefilter_free(p2);
        prefilter_free(pf);
        return;
    }
    big_hits want;
    ser_want(&want);
    unsigned char *bad = malloc(len);
    ck_assert_ptr_nonnull(bad);
    for (int k = 0; k < 7; k++) {
        memcpy(bad, blob, len);
        size_t blen = len;
        const char *const *lits = SER_LITS;
        const char *what = "";
        switch (k) {
        case 0: what = "truncated"; blen = len - 1; break;
        case 1: what = "payload byte flipped"; bad[len / 2] ^= 0x40; break;
        case 2: what = "magic"; bad[0] ^= 1; break;
        case 3: what = "header only"; blen = 32; break;
        case 4: { /* Vectorscan's own header says another version; our checksum made to fit, so only
                   * Vectorscan can refuse it (its header: magic, then the version, 32 bits each) */
            what = "foreign version";
            bad[32 + 4] ^= 0x7f;
            uint64_t h = ser_fnv(bad + 32, len - 32);
            for (int b = 0; b < 8; b++)
                bad[16 + b] = (unsigned char)(h >> (8 * b));
            break;
        }
        case 5: what = "NULL"; blen = 0; break;
        case 6: { /* the same blob offered for another literal set (a user's patterns folder) */
            static const char *const other[] = {"CUDA out of memory", "out of memory", "Killed", "NCCL error",
                                                "File \"", "Traceback (most recent call last)!"};
            what = "another set";
            lits = other;
            break;
        }
        }
        prefilter *p2 = prefilter_new_serialized(lits, SER_N, k == 5 ? NULL : bad, blen);
        ck_assert_msg(p2 != NULL, "%s", what);
        ck_assert_msg(!prefilter_from_blob(p2), "%s: the blob was used", what);
        ck_assert_msg(strcmp(prefilter_engine_name(p2), "vectorscan") == 0, "%s: not compiled", what);
        if (lits == SER_LITS)
            check_hits(p2, &want, SER_TEXT, 0, sizeof SER_TEXT - 1, sizeof SER_TEXT - 1, what);
        prefilter_free(p2);
    }
    /* and the intact blob, for contrast, is used */
    prefilter *p3 = prefilter_new_serialized(SER_LITS, SER_N, blob, len);
    ck_assert(prefilter_from_blob(p3));
    prefilter_free(p3);
    free(bad);
    big_free(&want);
    free(blob);
    prefilter_free(pf);
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
    tcase_add_test(tc, test_prefilter_engines_agree_on_edges_and_overlaps);
    tcase_add_test(tc, test_prefilter_engines_agree_on_random_text);
    tcase_add_test(tc, test_prefilter_is_case_sensitive);
    tcase_add_test(tc, test_prefilter_skip_and_stop);
    tcase_add_test(tc, test_prefilter_many_hits_in_a_large_buffer);
    tcase_add_test(tc, test_prefilter_engine_in_use);
    tcase_add_test(tc, test_prefilter_serialized_gives_same_hits);
    tcase_add_test(tc, test_prefilter_subset_reports_the_whole_sets_indices);
    tcase_add_test(tc, test_prefilter_bad_blob_falls_back_to_compiling);
    suite_add_tcase(s, tc);
    return check_run(s);
}
