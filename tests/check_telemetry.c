/* check_telemetry.c - the job's own memory lines (match/telemetry.h) read into series per job and rank,
 * and the trend read back. The log lines are real, each with its source; the trend arithmetic is also
 * checked on series of plain numbers, which are not log lines. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "match/config.h"
#include "match/telemetry.h"

#define GiB 1073741824.0
#define MiB 1048576.0

/* verl-project/verl#1208 (fixtures/heldout3/clean-verl-1208.log), cut after the memory metrics */
static const char VERL[] =
    "(TaskRunner pid=16292) step:2 - global_seqlen/min:538646.000 - global_seqlen/max:556412.000 - "
    "global_seqlen/minmax_diff:17766.000 - global_seqlen/balanced_min:547190.000 - global_seqlen/balanced_max:547191.000 "
    "- global_seqlen/mean:547190.500 - actor/kl_loss:0.001 - actor/kl_coef:0.001 - actor/entropy_loss:0.554 - "
    "actor/pg_loss:0.001 - actor/pg_clipfrac:0.000 - actor/ppo_kl:0.000 - actor/grad_norm:0.069 - perf/mfu/actor:1.018 "
    "- perf/max_memory_allocated_gb:25.921 - perf/max_memory_reserved_gb:61.611 - perf/cpu_memory_used_gb:360.092 - "
    "actor/lr:0.000";
/* NVIDIA/Megatron-LM#60 (fixtures/heldout6/clean-megatron-lm-60.log) */
static const char MEGATRON[] = "after 5 iterations memory (MB) | allocated: 10250.5693359375 | max allocated: "
                               "12606.06201171875 | reserved: 17482.0 | max reserved: 17482.0";
/* deepspeedai/DeepSpeed#4700: see_memory_usage around ZeRO-Offload's initialisation, in order */
static const char *const DEEPSPEED[] = {
    "[2023-11-17 11:03:46,601] [INFO] [utils.py:803:see_memory_usage] MA 26.38 GB         Max_MA 26.38 GB         CA "
    "26.71 GB         Max_CA 27 GB ",
    "[2023-11-17 11:03:46,602] [INFO] [utils.py:810:see_memory_usage] CPU Virtual Memory:  used = 322.57 GB, percent = "
    "17.1%",
    "[2023-11-17 11:04:06,577] [INFO] [utils.py:803:see_memory_usage] MA 0.58 GB         Max_MA 26.38 GB         CA "
    "26.71 GB         Max_CA 27 GB ",
    "[2023-11-17 11:04:06,578] [INFO] [utils.py:810:see_memory_usage] CPU Virtual Memory:  used = 322.58 GB, percent = "
    "17.1%",
    "[2023-11-17 11:04:07,122] [INFO] [utils.py:803:see_memory_usage] MA 0.58 GB         Max_MA 0.58 GB         CA "
    "26.71 GB         Max_CA 27 GB ",
    "[2023-11-17 11:04:07,123] [INFO] [utils.py:810:see_memory_usage] CPU Virtual Memory:  used = 322.58 GB, percent = "
    "17.1%",
};

static const telemetry_sample *find(const telemetry_sample *s, size_t n, const char *metric)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i].metric, metric) == 0)
            return &s[i];
    ck_abort_msg("no sample of %s", metric);
    return NULL;
}

START_TEST(test_telemetry_reads_verl_deepspeed_and_megatron_lines)
{
    telemetry_sample s[8];
    size_t n = telemetry_parse(VERL, strlen(VERL), s, 8);
    ck_assert_uint_eq(n, 3);
    ck_assert(find(s, n, "gpu_max_allocated")->bytes == 25.921 * GiB);
    ck_assert(find(s, n, "gpu_max_reserved")->bytes == 61.611 * GiB);
    ck_assert(find(s, n, "host_used")->bytes == 360.092 * GiB);
    ck_assert(find(s, n, "host_used")->x == 2);
    n = telemetry_parse(MEGATRON, strlen(MEGATRON), s, 8);
    ck_assert_uint_eq(n, 4);
    ck_assert(find(s, n, "gpu_max_allocated")->bytes == 12606.06201171875 * MiB);
    ck_assert(find(s, n, "gpu_reserved")->bytes == 17482.0 * MiB);
    ck_assert(find(s, n, "gpu_allocated")->x == 5);
    n = telemetry_parse(DEEPSPEED[2], strlen(DEEPSPEED[2]), s, 8);
    ck_assert_uint_eq(n, 4);
    ck_assert(find(s, n, "gpu_allocated")->bytes == 0.58 * GiB);
    ck_assert(find(s, n, "gpu_max_allocated")->bytes == 26.38 * GiB);
    ck_assert(find(s, n, "gpu_max_reserved")->bytes == 27 * GiB);
    ck_assert(find(s, n, "gpu_allocated")->x < 0); /* DeepSpeed states no step */
    n = telemetry_parse(DEEPSPEED[1], strlen(DEEPSPEED[1]), s, 8);
    ck_assert_uint_eq(n, 1);
    ck_assert(find(s, n, "host_used")->bytes == 322.57 * GiB);
    /* and a line that only looks like one is nothing */
    const char *other = "MA loss: 0.5 | allocated tokens: 12";
    ck_assert_uint_eq(telemetry_parse(other, strlen(other), s, 8), 0);
}
END_TEST

static const char *verdict(const cJSON *t) { return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "verdict")); }

START_TEST(test_telemetry_a_steady_series_is_flat)
{
    /* DeepSpeed#4700's host memory: 322.57, 322.58, 322.58 GB over three calls */
    config_store *st = NULL;
    for (size_t i = 0; i < sizeof DEEPSPEED / sizeof *DEEPSPEED; i++)
        ck_assert_int_eq(telemetry_capture(&st, DEEPSPEED[i], strlen(DEEPSPEED[i]), "77", "", "ds.log", i + 1), 0);
    config_view v = config_view_of(st);
    cJSON *t = telemetry_trend(&v, "77", "", 1);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "metric")), "host_used");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "points")), 3);
    ck_assert_str_eq(verdict(t), "flat");
    cJSON_Delete(t);
    /* the GPU's: its peak allocated, 26.38, 26.38, 0.58 GB: no climb either */
    t = telemetry_trend(&v, "77", "", 0);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "metric")), "gpu_max_allocated");
    ck_assert_str_eq(verdict(t), "flat");
    cJSON_Delete(t);
    config_store_free(st);
}
END_TEST

START_TEST(test_telemetry_a_series_of_no_job_serves_the_job_the_scan_names)
{
    /* a log that names no job, scanned with --job-id 7: its series are stored under no job, the
     * failure is job 7's; the trend was lost (the rank-less lookup compared jobs exactly, where every
     * other settings lookup lets an entry of no job serve any) */
    config_store *st = NULL;
    for (size_t i = 0; i < sizeof DEEPSPEED / sizeof *DEEPSPEED; i++)
        ck_assert_int_eq(telemetry_capture(&st, DEEPSPEED[i], strlen(DEEPSPEED[i]), "", "", "ds.log", i + 1), 0);
    config_view v = config_view_of(st);
    cJSON *t = telemetry_trend(&v, "7", "", 1);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "points")), 3);
    cJSON_Delete(t);
    /* a series stated for another job still serves only that one */
    config_store *other = NULL;
    for (size_t i = 0; i < sizeof DEEPSPEED / sizeof *DEEPSPEED; i++)
        ck_assert_int_eq(telemetry_capture(&other, DEEPSPEED[i], strlen(DEEPSPEED[i]), "8", "", "ds.log", i + 1), 0);
    v = config_view_of(other);
    ck_assert_ptr_null(telemetry_trend(&v, "7", "", 1));
    config_store_free(other);
    config_store_free(st);
}
END_TEST

START_TEST(test_telemetry_a_climb_is_growth_with_its_slope)
{
    /* numbers, not log lines: host memory from 306 GB at step 1, 6.5 GB more a step, to step 30 */
    config_store *st = NULL;
    char series[4096] = "";
    for (int step = 1; step <= 30; step++) {
        char p[64];
        snprintf(p, sizeof p, "%s%d:%.0f", step > 1 ? " " : "", step, (306.0 + 6.5 * (step - 1)) * 1e9);
        strcat(series, p);
    }
    ck_assert_int_eq(config_put(&st, "telemetry/host_used", series, "9", "verl.log", 30), 0);
    /* and a spike: flat at 40 GB, then one step at 79 */
    ck_assert_int_eq(config_put(&st, "telemetry/gpu_max_allocated",
                                "1:42949672960 2:42949672960 3:42949672960 4:42949672960 5:84825604096", "9", "verl.log", 5),
                     0);
    config_view v = config_view_of(st);
    cJSON *t = telemetry_trend(&v, "9", "", 1);
    ck_assert_str_eq(verdict(t), "growth");
    ck_assert_double_eq_tol(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "slope_per_step")), 6.5e9, 1);
    cJSON_Delete(t);
    t = telemetry_trend(&v, "9", "", 0);
    ck_assert_str_eq(verdict(t), "flat");
    cJSON_Delete(t);
    config_store_free(st);
}
END_TEST

/* slime: no stored thread of ours prints these lines, so they are spelled as the framework's own code
 * writes them (slime/utils/memory_utils.py, print_memory's f-string and the dict available_memory()
 * returns; report_peak_memory's f-string), with the figures of a test, not of a job. */
static void slime_usage(char *buf, size_t cap, int rank, double alloc, double reserved, double host)
{
    snprintf(buf, cap,
             "[Rank %d] Memory-Usage after train: {'gpu': '0', 'total_GB': 79.19, 'free_GB': 10.5, 'used_GB': 68.69, "
             "'allocated_GB': %.2f, 'reserved_GB': %.2f, 'host_total_GB': 2015.56, 'host_available_GB': 1500.2, "
             "'host_used_GB': %.2f, 'host_free_GB': 400.1}",
             rank, alloc, reserved, host);
}

START_TEST(test_telemetry_reads_slime_lines)
{
    char line[512];
    telemetry_sample s[8];
    slime_usage(line, sizeof line, 3, 41.25, 60.5, 306.75);
    size_t n = telemetry_parse(line, strlen(line), s, 8);
    ck_assert_uint_eq(n, 3);
    ck_assert_double_eq_tol(find(s, n, "gpu_allocated")->bytes, 41.25 * GiB, 1);
    ck_assert_double_eq_tol(find(s, n, "gpu_reserved")->bytes, 60.5 * GiB, 1);
    ck_assert_double_eq_tol(find(s, n, "host_used")->bytes, 306.75 * GiB, 1);
    ck_assert_str_eq(s[0].rank, "3");
    ck_assert(s[0].x < 0); /* no step stated */
    const char peak[] = "[Rank 0] Peak-Memory train: max_allocated_GB=52.75, max_reserved_GB=70.0";
    n = telemetry_parse(peak, strlen(peak), s, 8);
    ck_assert_uint_eq(n, 2);
    ck_assert_double_eq_tol(find(s, n, "gpu_max_allocated")->bytes, 52.75 * GiB, 1);
    ck_assert_double_eq_tol(find(s, n, "gpu_max_reserved")->bytes, 70.0 * GiB, 1);
    /* nvidia-smi's table says Memory-Usage too: not slime's line */
    const char smi[] = "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |";
    ck_assert_uint_eq(telemetry_parse(smi, strlen(smi), s, 8), 0);
}
END_TEST

START_TEST(test_telemetry_slime_leak_is_growth_and_spike_is_flat)
{
    /* host memory 6.5 GiB more at each print_memory: a leak; the GPU's allocated flat at 41 GiB */
    config_store *st = NULL;
    char line[512];
    for (int i = 0; i < 10; i++) {
        slime_usage(line, sizeof line, 0, 41.0, 60.0, 306.0 + 6.5 * i);
        ck_assert_int_eq(telemetry_capture(&st, line, strlen(line), "5", "", "slime.log", (uint64_t)i + 1), 0);
    }
    /* the peak of each train step steady at 52 GiB, then 78 at the failing one: a spike */
    for (int i = 0; i < 6; i++) {
        char peak[128];
        snprintf(peak, sizeof peak, "[Rank 0] Peak-Memory train: max_allocated_GB=%.2f, max_reserved_GB=70.0",
                 i < 5 ? 52.0 : 78.0);
        ck_assert_int_eq(telemetry_capture(&st, peak, strlen(peak), "5", "", "slime.log", (uint64_t)i + 20), 0);
    }
    config_view v = config_view_of(st);
    cJSON *t = telemetry_trend(&v, "5", "0", 1);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "metric")), "host_used");
    ck_assert_str_eq(verdict(t), "growth");
    ck_assert_double_eq_tol(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "slope_per_step")), 6.5 * GiB, 2);
    cJSON_Delete(t);
    t = telemetry_trend(&v, "5", "0", 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "metric")), "gpu_max_allocated");
    ck_assert_str_eq(verdict(t), "flat");
    ck_assert_double_eq_tol(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "last_steady_bytes")), 52.0 * GiB, 1);
    cJSON_Delete(t);
    config_store_free(st);
}
END_TEST

START_TEST(test_telemetry_series_never_mix_jobs_or_ranks)
{
    /* two jobs' DeepSpeed lines into one store: each job's trend has its own points only */
    config_store *st = NULL;
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq(telemetry_capture(&st, DEEPSPEED[i], strlen(DEEPSPEED[i]), "1", "", "a.log", i + 1), 0);
    for (size_t i = 0; i < sizeof DEEPSPEED / sizeof *DEEPSPEED; i++)
        ck_assert_int_eq(telemetry_capture(&st, DEEPSPEED[i], strlen(DEEPSPEED[i]), "2", "3", "b.log", i + 1), 0);
    config_view v = config_view_of(st);
    ck_assert_ptr_null(telemetry_trend(&v, "1", "", 1)); /* two points: too few for a trend */
    cJSON *t = telemetry_trend(&v, "2", "3", 1);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "points")), 3);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "rank")), "3");
    cJSON_Delete(t);
    /* a step line read twice (its two literals) is one point */
    config_store *one = NULL;
    ck_assert_int_eq(telemetry_capture(&one, VERL, strlen(VERL), "", "", "v.log", 1), 0);
    ck_assert_int_eq(telemetry_capture(&one, VERL, strlen(VERL), "", "", "v.log", 1), 0);
    ck_assert_str_eq(config_get(one, "telemetry/host_used", "")->value, "2:386645840888");
    config_store_free(one);
    config_store_free(st);
}
END_TEST


START_TEST(test_telemetry_a_source_is_gathered_then_written_once)
{
    /* the scan's path: a source's lines gathered (nothing written while it is read), written when it
     * ends; a second source of the same job goes on after the first's points */
    telemetry_acc *a = telemetry_acc_new();
    config_store *st = NULL;
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq(telemetry_acc_line(a, DEEPSPEED[i], strlen(DEEPSPEED[i]), "", i + 1), 0);
    ck_assert(telemetry_acc_any(a));
    ck_assert_ptr_null(st);
    ck_assert_int_eq(telemetry_acc_flush(a, &st, "5", "first.log"), 0);
    ck_assert(!telemetry_acc_any(a));
    ck_assert_str_eq(config_get(st, "telemetry/host_used", "5")->value, "1:346356900168 2:346367637586");
    for (size_t i = 4; i < 6; i++)
        ck_assert_int_eq(telemetry_acc_line(a, DEEPSPEED[i], strlen(DEEPSPEED[i]), "", i + 1), 0);
    ck_assert_int_eq(telemetry_acc_flush(a, &st, "5", "second.log"), 0);
    ck_assert_str_eq(config_get(st, "telemetry/host_used", "5")->value,
                     "1:346356900168 2:346367637586 3:346367637586");
    /* a long log: only the last TELEMETRY_POINTS points are kept, in order */
    for (int step = 1; step <= 1000; step++) {
        char line[200];
        snprintf(line, sizeof line, "step:%d - perf/max_memory_allocated_gb:%d.000 - perf/cpu_memory_used_gb:1.0", step, step);
        ck_assert_int_eq(telemetry_acc_line(a, line, strlen(line), "", (uint64_t)step), 0);
    }
    ck_assert_int_eq(telemetry_acc_flush(a, &st, "6", "long.log"), 0);
    config_view v = config_view_of(st);
    cJSON *t = telemetry_trend(&v, "6", "", 0);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "points")), TELEMETRY_POINTS);
    ck_assert_double_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "from_step")), 1000 - TELEMETRY_POINTS + 1);
    ck_assert_double_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "to_step")), 1000);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "verdict")), "growth");
    cJSON_Delete(t);
    telemetry_acc_free(a);
    config_store_free(st);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("telemetry");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_telemetry_reads_verl_deepspeed_and_megatron_lines);
    tcase_add_test(tc, test_telemetry_a_steady_series_is_flat);
    tcase_add_test(tc, test_telemetry_a_climb_is_growth_with_its_slope);
    tcase_add_test(tc, test_telemetry_a_series_of_no_job_serves_the_job_the_scan_names);
    tcase_add_test(tc, test_telemetry_series_never_mix_jobs_or_ranks);
    tcase_add_test(tc, test_telemetry_a_source_is_gathered_then_written_once);
    tcase_add_test(tc, test_telemetry_reads_slime_lines);
    tcase_add_test(tc, test_telemetry_slime_leak_is_growth_and_spike_is_flat);
    suite_add_tcase(s, tc);
    return check_run(s);
}
