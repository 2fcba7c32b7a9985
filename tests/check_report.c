/* check_report.c - the shared wording of findings (report.c): the one-sentence root cause, a setting's
 * change with and without the job's own value, and the cascade counted by class and rank. The text
 * report and the tickets both print these, so a change here shows in both. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "emit/report.h"
#include "check_main.h"

static pdb_pattern pattern = {.title = "GPU out of memory"};

static finding make(tax_class cls, tax_phase ph)
{
    finding f;
    memset(&f, 0, sizeof f);
    f.pattern = &pattern;
    f.cls = cls;
    f.phase = ph;
    f.caused_by = -1;
    f.joined_into = f.next_joined = f.first_joined = -1; /* reported on its own, as story_add leaves it */
    f.job_head = f.job_next = -1;
    f.is_root = 1;
    f.occurrences = 1;
    return f;
}

START_TEST(test_report_sentence_states_what_is_known)
{
    char buf[512];
    finding f = make(CLS_CUDA_OOM, PH_BACKWARD);
    report_sentence(&f, buf, sizeof buf);
    ck_assert_str_eq(buf, "GPU out of memory during the backward pass");
    strcpy(f.rank, "3");
    strcpy(f.host, "gpu-node-1");
    report_sentence(&f, buf, sizeof buf);
    ck_assert_str_eq(buf, "GPU out of memory during the backward pass on rank 3 (host gpu-node-1)");
    f.phase = PH_UNKNOWN;
    report_title(&f, buf, sizeof buf);
    ck_assert_str_eq(buf, "GPU out of memory on rank 3");
    report_sentence(&f, buf, sizeof buf);
    ck_assert_str_eq(buf, "GPU out of memory (phase not stated in the log) on rank 3 (host gpu-node-1)");
    /* a small buffer is cut, never overrun */
    char small[12];
    report_sentence(&f, small, sizeof small);
    ck_assert_str_eq(small, "GPU out of ");
}
END_TEST

/* A title says what failed, where, on which rank (issue 33 item 2); what a pattern's title says of the
 * wording it matches stays with the pattern. Titles from patterns/failures. */
START_TEST(test_report_title_says_the_failure_not_the_wording)
{
    static const struct {
        const char *pattern_title;
        tax_class cls;
        tax_phase ph;
        const char *rank, *host, *want;
    } cases[] = {
        {"GPU out of memory (PyTorch caching allocator, 2.1+ wording)", CLS_CUDA_OOM, PH_BACKWARD, "5", "",
         "GPU out of memory during the backward pass on rank 5"},
        {"GPU out of memory (PyTorch message, size only)", CLS_CUDA_OOM, PH_UNKNOWN, "", "node7",
         "GPU out of memory on node7"},
        {"vLLM V1: a max-length request does not fit the KV cache (wrapped line)", CLS_KV_CACHE_OOM, PH_MODEL_INIT, "",
         "", "vLLM V1: a max-length request does not fit the KV cache during model initialisation"},
        {"Linux OOM killer summary line (victim task and pid)", CLS_HOST_OOM_KILL, PH_UNKNOWN, "", "",
         "Process killed for host memory"},
        {"The shell reports the process was Killed (SIGKILL, usually the OOM killer)", CLS_HOST_OOM_KILL,
         PH_UNKNOWN, "", "", "The shell reports the process was Killed (SIGKILL, usually the OOM killer)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pdb_pattern p = {.title = (char *)cases[i].pattern_title};
        finding f = make(cases[i].cls, cases[i].ph);
        f.pattern = &p;
        strcpy(f.rank, cases[i].rank);
        strcpy(f.host, cases[i].host);
        char buf[512];
        report_title(&f, buf, sizeof buf);
        ck_assert_msg(strcmp(buf, cases[i].want) == 0, "case %zu: '%s', want '%s'", i, buf, cases[i].want);
    }
}
END_TEST

START_TEST(test_report_setting_change_forms)
{
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"{\"key\":\"k\",\"change\":\"halve\",\"current\":\"32\",\"proposed\":\"16\"}", "32 -> 16 (halve)"},
        {"{\"key\":\"k\",\"change\":\"set:0\",\"current\":\"0\",\"already\":true}", "0 already (set:0)"},
        {"{\"key\":\"k\",\"change\":\"decrease\",\"current\":\"auto\"}", "now auto (decrease)"},
        {"{\"key\":\"k\",\"change\":\"enable\"}", "enable"},
        {"{\"key\":\"k\"}", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *set = cJSON_Parse(cases[i].json);
        char buf[128];
        report_setting_change(set, buf, sizeof buf);
        ck_assert_msg(strcmp(buf, cases[i].want) == 0, "%s: got '%s', want '%s'", cases[i].json, buf, cases[i].want);
        cJSON_Delete(set);
    }
}
END_TEST

START_TEST(test_report_cascade_counts_by_class_and_rank)
{
    finding f[4] = {make(CLS_CUDA_OOM, PH_BACKWARD), make(CLS_NCCL_TIMEOUT, PH_COMMUNICATION),
                    make(CLS_NCCL_TIMEOUT, PH_COMMUNICATION), make(CLS_CHILD_FAILED, PH_UNKNOWN)};
    char *r1[] = {"1", "2"}, *r2[] = {"5"};
    f[1].is_root = 0, f[1].caused_by = 0, f[1].occurrences = 4, f[1].ranks = (story_set){r1, 2, 0};
    f[2].is_root = 0, f[2].caused_by = 0, f[2].occurrences = 1, f[2].ranks = (story_set){r2, 1, 0};
    f[3].is_root = 0, f[3].caused_by = 2; /* follows another finding, not root 0 */
    story st = {.f = f, .n = 4, .cap = 4};
    report_cascade_row rows[CLS__COUNT];
    ck_assert_uint_eq(report_cascade(&st, 0, rows), 2);
    ck_assert_uint_eq(rows[CLS_NCCL_TIMEOUT].findings, 2);
    ck_assert_uint_eq(rows[CLS_NCCL_TIMEOUT].lines, 5);
    ck_assert_str_eq(rows[CLS_NCCL_TIMEOUT].ranks, "1,2,5");
    ck_assert_uint_eq(rows[CLS_CHILD_FAILED].findings, 0);
    ck_assert_uint_eq(report_cascade(&st, 1, rows), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_report_sentence_states_what_is_known);
    tcase_add_test(tc, test_report_title_says_the_failure_not_the_wording);
    tcase_add_test(tc, test_report_setting_change_forms);
    tcase_add_test(tc, test_report_cascade_counts_by_class_and_rank);
    suite_add_tcase(s, tc);
    return check_run(s);
}
