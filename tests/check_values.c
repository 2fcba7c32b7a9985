/* check_values.c - sizes, units and typed captures. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/values.h"
#include "check_main.h"

static const struct {
    const char *text, *unit;
    double bytes;
} sizes[] = {
    {"20.00 MiB", NULL, 20971520.0},
    {"1.70 GiB", NULL, 1.70 * 1073741824.0},
    {"0 bytes", NULL, 0},
    {"512 KiB", NULL, 524288},
    {"4kB", NULL, 4096},
    {"1.5GB", NULL, 1.5 * 1073741824.0},
    {"123456", "KiB", 123456.0 * 1024},
    {"1,024 MiB", NULL, 1073741824.0},
    {"79.18 GiB", NULL, 79.18 * 1073741824.0},
};

START_TEST(test_values_parse_sizes)
{
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        double b = -1;
        int rc = values_parse_size(sizes[i].text, strlen(sizes[i].text), sizes[i].unit, &b);
        ck_assert_msg(rc == 0, "could not parse '%s'", sizes[i].text);
        ck_assert_msg(b > sizes[i].bytes - 1 && b < sizes[i].bytes + 1, "'%s' gave %.0f, want %.0f", sizes[i].text, b,
                      sizes[i].bytes);
    }
    double b;
    ck_assert_int_ne(values_parse_size("lots", 4, NULL, &b), 0);
    ck_assert_int_ne(values_parse_size("12 parsecs", 10, NULL, &b), 0);
}
END_TEST

START_TEST(test_values_convert_by_name)
{
    cJSON *v = values_convert("requested_bytes", "2.00 GiB", 8, NULL);
    ck_assert(cJSON_IsNumber(v) && v->valuedouble == 2147483648.0);
    cJSON_Delete(v);
    v = values_convert("seq", "8812", 4, NULL);
    ck_assert(cJSON_IsNumber(v) && v->valuedouble == 8812);
    cJSON_Delete(v);
    v = values_convert("op", "ALLGATHER", 9, NULL);
    ck_assert(cJSON_IsString(v) && strcmp(v->valuestring, "ALLGATHER") == 0);
    cJSON_Delete(v);
    v = values_convert("threshold_fraction", "0.95", 4, NULL);
    ck_assert(cJSON_IsNumber(v) && v->valuedouble == 0.95);
    cJSON_Delete(v);
    /* a pci address is not a number even though it has digits */
    v = values_convert("pci", "0000:3b:00", 10, NULL);
    ck_assert(cJSON_IsString(v));
    cJSON_Delete(v);
}
END_TEST

START_TEST(test_values_human_bytes)
{
    char buf[32];
    values_human_bytes(12.8 * 1073741824.0, buf, sizeof buf);
    ck_assert_str_eq(buf, "12.8 GiB");
    values_human_bytes(0, buf, sizeof buf);
    ck_assert_str_eq(buf, "0 B");
    values_human_bytes(2.31 * 1073741824.0, buf, sizeof buf);
    ck_assert_str_eq(buf, "2.31 GiB");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("values");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_values_parse_sizes);
    tcase_add_test(tc, test_values_convert_by_name);
    tcase_add_test(tc, test_values_human_bytes);
    suite_add_tcase(s, tc);
    return check_run(s);
}
