/* check_timefmt.c - timestamps of every supported form normalise the same way. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/timefmt.h"
#include "check_main.h"

static const struct {
    const char *in, *out;
} cases[] = {
    {"2024-05-01T12:00:00.123Z", "2024-05-01T12:00:00.123"},
    {"2024-05-01 12:00:00,123", "2024-05-01T12:00:00.123"},
    {"[2024-05-01T12:00:00.123]", "2024-05-01T12:00:00.123"},
    {"I0501 12:00:00.123456", "05-01T12:00:00.123"},
    {"0501 12:00:07.000000", "05-01T12:00:07"},
    {"May  1 12:00:00", "05-01T12:00:00"},
    {"Mon May  1 12:00:00 2024", "2024-05-01T12:00:00"},
    {"[12345.678901]", "uptime+12345.679s"},
    {"2025/06/12 01:02:03", "2025-06-12T01:02:03"},
    /* PyTorch c10 logger: month without its leading zero, nanoseconds (LlamaFactory#7396, ms-swift#6301) */
    {"321 02:07:08.408271257", "03-21T02:07:08.408"},
    {"1026 04:01:29.500953846", "10-26T04:01:29.501"},
    /* AReaL's logger, with and without its "(AReaL)" header (areal-project/AReaL#1065, #752) */
    {"20260320-11:19:29.153", "2026-03-20T11:19:29.153"},
    {"20251219-09:39:34.788", "2025-12-19T09:39:34.788"},
    /* glog from torch elastic (FunASR#2006) */
    {"W0812 23:27:08.684369", "08-12T23:27:08.684"},
};

START_TEST(test_timefmt_normalises_formats)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        timefmt t;
        ck_assert_msg(timefmt_parse(cases[i].in, strlen(cases[i].in), &t) == 0, "not parsed: %s", cases[i].in);
        char buf[64];
        timefmt_format(&t, buf, sizeof buf);
        ck_assert_msg(strcmp(buf, cases[i].out) == 0, "%s -> %s, want %s", cases[i].in, buf, cases[i].out);
    }
}
END_TEST

/* timefmt_may_hold's pairs, byte by byte, as the reference for its vectorised loop. */
static int holds_pair(const char *s, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        unsigned char a = (unsigned char)s[i], b = (unsigned char)s[i + 1];
        int ad = a >= '0' && a <= '9', bd = b >= '0' && b <= '9';
        if ((ad && (b == ':' || b == '.' || b == '-' || b == '/' || b == 'x' || b == 'X')) || (a == '.' && bd))
            return 1;
    }
    return 0;
}

START_TEST(test_timefmt_may_hold_never_misses_a_stamp)
{
    /* Sound: whatever timefmt_parse accepts, timefmt_may_hold says may hold one, wherever it sits in a
     * longer line (the vector loop's blocks and tail); and it agrees with the byte-by-byte reference. */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        ck_assert_msg(timefmt_may_hold(cases[i].in, strlen(cases[i].in)), "missed %s", cases[i].in);
    static const char alphabet[] = "0123456789:.-/ xXaAfFpPeE+T[]Zw,";
    unsigned seed = 12345;
    size_t parsed = 0;
    for (int k = 0; k < 300000; k++) {
        char stamp[24], line[96];
        size_t n = 1 + (seed = seed * 1103515245u + 12345u) / 65536 % 12;
        for (size_t j = 0; j < n; j++)
            stamp[j] = alphabet[(seed = seed * 1103515245u + 12345u) / 65536 % (sizeof alphabet - 1)];
        stamp[n] = '\0';
        timefmt t;
        size_t pad = (seed = seed * 1103515245u + 12345u) / 65536 % 48;
        memset(line, 'q', pad);
        memcpy(line + pad, stamp, n);
        size_t len = pad + n + (seed / 7) % 20;
        memset(line + pad + n, 'r', len - pad - n);
        ck_assert_int_eq(timefmt_may_hold(line, len), holds_pair(line, len));
        if (timefmt_parse(stamp, n, &t) == 0) {
            parsed++;
            ck_assert_msg(timefmt_may_hold(stamp, n) && timefmt_may_hold(line, len), "missed %s", stamp);
        }
    }
    ck_assert_uint_gt(parsed, 1000); /* the search did find stamps to check */
    const char *dump = "(TaskRunner pid=2231)   'actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu': 2,";
    ck_assert_int_eq(timefmt_may_hold(dump, strlen(dump)), 0);
    const char *yaml = "  gradient_accumulation_steps: 4096";
    ck_assert_int_eq(timefmt_may_hold(yaml, strlen(yaml)), 0);
}
END_TEST

START_TEST(test_timefmt_orders_and_rejects)
{
    timefmt a, b;
    ck_assert_int_eq(timefmt_parse("2024-05-01 12:00:00", 19, &a), 0);
    ck_assert_int_eq(timefmt_parse("2024-05-01 12:10:00", 19, &b), 0);
    ck_assert(a.key < b.key);
    ck_assert_int_eq(timefmt_parse("2024-05-02 00:00:00", 19, &b), 0);
    ck_assert(a.key < b.key);
    ck_assert_int_ne(timefmt_parse("not a time", 10, &a), 0);
    ck_assert_int_ne(timefmt_parse("2024-13-45", 10, &a), 0);
    /* an AReaL-shaped stamp with a month 13 is no time */
    ck_assert_int_ne(timefmt_parse("20261320-11:19:29.153", 21, &a), 0);
}
END_TEST

/* Stamps of different forms, as they meet across files of one job. */
START_TEST(test_timefmt_orders_across_forms)
{
    static const struct {
        const char *a, *b;
        int want; /* timefmt_cmp(a, b) */
    } pairs[] = {
        {"1026 04:01:29.510593654", "E1026 04:09:30.101000", -1}, /* c10 against glog, no year on either */
        {"I1122 10:11:12.123456", "[2024-11-22T10:11:13.000]", -1}, /* glog takes the Slurm stamp's year */
        {"[2024-11-22T10:11:13.000]", "I1122 10:11:12.123456", 1},
        {"Nov 22 10:11:12", "2024-11-22 10:11:12,000", 0},          /* syslog against Python logging */
        /* the borrowed year is taken as is, even across New Year (docs/phases.md: a known limit) */
        {"I0101 00:00:01.000000", "2024-12-31T23:59:59", -1},
        {"[12345.678901]", "[12346.000000]", -1},                   /* uptime against uptime */
        {"[12345.678901]", "2024-11-22T10:11:12", TIMEFMT_INCOMPARABLE}, /* uptime against wall clock */
        {"Mon Nov 22 10:11:12 2024", "[2024-11-22T10:11:12.500]", -1},  /* dmesg -T against Slurm */
        {"10:11:12", "2024-11-22T10:11:12", TIMEFMT_INCOMPARABLE},  /* a bare clock has no day */
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        timefmt a, b;
        ck_assert_msg(timefmt_parse(pairs[i].a, strlen(pairs[i].a), &a) == 0, "not parsed: %s", pairs[i].a);
        ck_assert_msg(timefmt_parse(pairs[i].b, strlen(pairs[i].b), &b) == 0, "not parsed: %s", pairs[i].b);
        int got = timefmt_cmp(&a, &b);
        ck_assert_msg(got == pairs[i].want, "cmp(%s, %s) = %d, want %d", pairs[i].a, pairs[i].b, got, pairs[i].want);
    }
    /* within the slack the order is not trusted */
    timefmt a, b;
    ck_assert_int_eq(timefmt_parse("2023-04-14 13:11:27,885", 23, &a), 0);
    ck_assert_int_eq(timefmt_parse("2023-04-14 13:11:27,879", 23, &b), 0);
    ck_assert_int_eq(timefmt_cmp(&a, &b), 1);
    ck_assert_int_eq(timefmt_cmp_slack(&a, &b, 1.0), 0);
    /* five digits are not a glog month-day */
    ck_assert_int_ne(timefmt_parse("12345 10:11:12.000", 18, &a), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("timefmt");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_timefmt_normalises_formats);
    tcase_add_test(tc, test_timefmt_may_hold_never_misses_a_stamp);
    tcase_add_test(tc, test_timefmt_orders_and_rejects);
    tcase_add_test(tc, test_timefmt_orders_across_forms);
    suite_add_tcase(s, tc);
    return check_run(s);
}
