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

static double num_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The message as a terminal cut it (mid-number, mid-word), with four "Process N has" clauses and
 * "Including non-PyTorch memory" among them: every figure is read. */
START_TEST(test_values_oom_clauses_wrapped_processes)
{
    const char *t = "CUDA out of memory. Tried to allocate 2.11 GiB. GPU 0 has a total capacity of 14.7"
                    "4 GiB of which 1.65 GiB is free. Process 19066 has 6.79 GiB memory in use. Including non-Py"
                    "Torch memory, this process has 3.00 GiB memory in use. Process 19069 has 514.00 MiB mem"
                    "ory in use. Of the allocated memory 4.50 GiB is allocated by PyTorch, and 2.14 GiB is reserved by PyTorch but unallocated.";
    cJSON *m = cJSON_CreateObject();
    values_cuda_oom_clauses(t, strlen(t), m);
    ck_assert_double_eq(num_of(m, "gpu"), 0);
    ck_assert_double_eq_tol(num_of(m, "total_bytes"), 14.74 * 1073741824.0, 1);
    ck_assert_double_eq_tol(num_of(m, "free_bytes"), 1.65 * 1073741824.0, 1);
    ck_assert_double_eq_tol(num_of(m, "requested_bytes"), 2.11 * 1073741824.0, 1);
    ck_assert_double_eq_tol(num_of(m, "process_in_use_bytes"), 3.0 * 1073741824.0, 1);
    ck_assert_double_eq_tol(num_of(m, "allocated_bytes"), 4.5 * 1073741824.0, 1);
    ck_assert_double_eq_tol(num_of(m, "reserved_unallocated_bytes"), 2.14 * 1073741824.0, 1);
    const cJSON *procs = cJSON_GetObjectItemCaseSensitive(m, "other_processes");
    ck_assert_int_eq(cJSON_GetArraySize(procs), 2);
    ck_assert_double_eq(num_of(cJSON_GetArrayItem(procs, 1), "pid"), 19069);
    ck_assert_double_eq(num_of(cJSON_GetArrayItem(procs, 1), "in_use_bytes"), 514.0 * 1048576.0);
    cJSON_Delete(m);
}
END_TEST

/* The old parenthesised form without its closing parenthesis, an empty GPU index, a value the
 * pattern already gave (kept), and an absurd figure (kept as printed, flagged, not a number). */
START_TEST(test_values_oom_clauses_old_form_empty_gpu_absurd)
{
    const char *t = "RuntimeError: CUDA out of memory. Tried to allocate 92.00 MiB (GPU 0; 1.96 GiB total capacity; "
                    "1.46 GiB already allocated; 16.38 MiB free; 1.51 GiB reserved in total by PyTorch";
    cJSON *m = cJSON_CreateObject();
    cJSON_AddNumberToObject(m, "requested_bytes", 1);
    values_cuda_oom_clauses(t, strlen(t), m);
    ck_assert_double_eq(num_of(m, "requested_bytes"), 1);
    ck_assert_double_eq(num_of(m, "gpu"), 0);
    ck_assert_double_eq_tol(num_of(m, "allocated_bytes"), 1.46 * 1073741824.0, 1);
    ck_assert_double_eq_tol(num_of(m, "free_bytes"), 16.38 * 1048576.0, 1);
    ck_assert_double_eq_tol(num_of(m, "reserved_bytes"), 1.51 * 1073741824.0, 1);
    cJSON_Delete(m);

    const char *e = "CUDA out of memory. Tried to allocate 20.00 MiB. GPU  has a total capacity of 23.68 GiB of which "
                    "6.00 MiB is free. Including non-PyTorch memory, this process has 17179869184.00 GiB memory in use.";
    m = cJSON_CreateObject();
    values_cuda_oom_clauses(e, strlen(e), m);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(m, "gpu"));
    ck_assert_double_eq_tol(num_of(m, "total_bytes"), 23.68 * 1073741824.0, 1);
    const cJSON *abs = cJSON_GetObjectItemCaseSensitive(m, "process_in_use_bytes");
    ck_assert(cJSON_IsString(abs));
    ck_assert_str_eq(abs->valuestring, "17179869184.00 GiB");
    ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "absurd"), 0)->valuestring,
                     "process_in_use_bytes");
    cJSON_Delete(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("values");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_values_parse_sizes);
    tcase_add_test(tc, test_values_convert_by_name);
    tcase_add_test(tc, test_values_human_bytes);
    tcase_add_test(tc, test_values_oom_clauses_wrapped_processes);
    tcase_add_test(tc, test_values_oom_clauses_old_form_empty_gpu_absurd);
    suite_add_tcase(s, tc);
    return check_run(s);
}
