/* check_timefmt.c - timestamps of every supported form normalise the same way. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "timefmt.h"
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
}
END_TEST

int main(void)
{
    Suite *s = suite_create("timefmt");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_timefmt_normalises_formats);
    tcase_add_test(tc, test_timefmt_orders_and_rejects);
    suite_add_tcase(s, tc);
    return check_run(s);
}
