/* check_remedy.c - the diagnosis arithmetic on real messages, read through the shipped database as a
 * user's log would be: shortfall, fragmentation and the setting spelled as the message's PyTorch
 * spells it, the failing process told apart from the others, Ray's node memory against its threshold. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "match/config.h"
#include "match/phase.h"
#include "advice/remedy.h"
#include "remedy_lines.h"
#include "match/scan.h"
#include "story/story.h"
#include "check_main.h"
#include "membuf.h"

/* All conclusions of the first finding of `line`, joined with " | ". Caller frees. */
/* A scan of `text` with the shipped database that found at least one failure. */
static run_out scan_real(const char *text)
{
    run_out r = scan_text(embedded_db(), text, strlen(text), 0, 0);
    ck_assert_uint_ge(r.st->n, 1);
    return r;
}

static char *diagnose(const char *line)
{
    run_out r = scan_real(line);
    cJSON *dj = remedy_diagnosis_json(r.db, &r.st->f[0]);
    char *out = calloc(1, 4096);
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(dj, "conclusions"))
    {
        strncat(out, cJSON_GetObjectItemCaseSensitive(c, "what")->valuestring, 4000 - strlen(out));
        strncat(out, " = ", 4000 - strlen(out));
        strncat(out, cJSON_GetObjectItemCaseSensitive(c, "arithmetic")->valuestring, 4000 - strlen(out));
        strncat(out, " | ", 4000 - strlen(out));
    }
    cJSON_Delete(dj);
    scan_done(&r);
    return out;
}

#define HAS(text, needle) ck_assert_msg(strstr((text), (needle)) != NULL, "missing \"%s\" in: %s", (needle), (text))
#define LACKS(text, needle) ck_assert_msg(strstr((text), (needle)) == NULL, "unexpected \"%s\" in: %s", (needle), (text))

START_TEST(test_remedy_shortfall_and_no_fragmentation)
{
    /* 13.91 GiB requested, 8.85 GiB free: 5.06 GiB short; 6.77 GiB unallocated < request */
    char *t = diagnose(LINE_VERL);
    HAS(t, "needs at least 5.06 GiB more on GPU 0");
    HAS(t, "requested 13.9 GiB - free 8.85 GiB = 5.06 GiB");
    HAS(t, "fragmentation is not the cause");
    /* PyTorch 2.1-2.3 list the failing process itself as "Process N has": not another process */
    LACKS(t, "on this GPU");
    free(t);
}
END_TEST

START_TEST(test_remedy_fragmentation_spelled_as_old_pytorch)
{
    /* 2.30 GiB unallocated >= 1.70 GiB requested; this PyTorch's hint names max_split_size_mb */
    char *t = diagnose(LINE_MGFN);
    HAS(t, "fragmentation is likely the cause");
    HAS(t, "max_split_size_mb");
    LACKS(t, "expandable_segments");
    free(t);
}
END_TEST

START_TEST(test_remedy_fragmentation_spelled_as_new_pytorch)
{
    /* 2.57 GiB unallocated >= 388 MiB requested; this PyTorch's hint names expandable_segments */
    char *t = diagnose(LINE_TRL);
    HAS(t, "fragmentation is likely the cause");
    HAS(t, "expandable_segments:True");
    HAS(t, "requested 388 MiB - free 95.8 MiB = 292 MiB");
    free(t);
}
END_TEST

START_TEST(test_remedy_lone_listed_process_is_the_failing_one)
{
    /* Process 428408 holds 73.15 GiB, PyTorch's share is 70.4 GiB: it is the failing process */
    char *t = diagnose(LINE_SGLANG);
    HAS(t, "needs at least 113 MiB more");
    LACKS(t, "on this GPU");
    free(t);
}
END_TEST

START_TEST(test_remedy_ray_node_memory_against_threshold)
{
    char *t = diagnose(LINE_RAY);
    HAS(t, "the node used 246 GiB of 252 GiB (98.0%), above Ray's kill threshold of 95%");
    HAS(t, "the worker it killed held 56.6 GiB");
    LACKS(t, "against a limit");
    free(t);
}
END_TEST

START_TEST(test_remedy_colocated_engine_holds_the_gpu)
{
    /* 18.46 GiB held by process 136096 while this process has 3.28 GiB of a 21.95 GiB GPU */
    char *t = diagnose(LINE_SKYRL_COLOCATED);
    HAS(t, "1 other process(es) hold 18.5 GiB on this GPU");
    HAS(t, "lower its memory fraction or make it release memory");
    HAS(t, "needs at least 57.4 MiB more on GPU 0");
    free(t);
}
END_TEST

START_TEST(test_remedy_request_larger_than_gpu)
{
    /* 55.57 GiB requested on a 12 GiB GPU: no fraction or allocator setting can help */
    char *t = diagnose(LINE_NEUROLENS_TOO_BIG);
    HAS(t, "one allocation of 55.6 GiB is larger than the whole GPU on GPU 0 (12.0 GiB)");
    HAS(t, "requested 55.6 GiB > total capacity 12.0 GiB");
    HAS(t, "tensor/sequence/context parallelism");
    LACKS(t, "fragmentation");
    LACKS(t, "needs at least");
    free(t);
}
END_TEST

/* The settings of the first step that has settings for `fw`, and how many steps name `fw`. */
static int steps_for(const cJSON *rem, const char *fw, const char **first_key)
{
    int n = 0;
    *first_key = NULL;
    const cJSON *st;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(rem, "steps"))
    {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(st, "framework");
        if (!cJSON_IsString(f) || strcmp(f->valuestring, fw) != 0)
            continue;
        if (n++ == 0) {
            const cJSON *set = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "settings"), 0);
            *first_key = cJSON_GetObjectItemCaseSensitive(set, "key")->valuestring;
        }
    }
    return n;
}

START_TEST(test_remedy_steps_in_each_rl_frameworks_settings)
{
    /* the real verl log-prob OOM (verl-project/verl#2828), read as each framework's job would be */
    run_out r = scan_real(LINE_VERL);
    static const struct {
        int fw;
        const char *name, *prefix;
    } cases[] = {
        /* with the phase unknown the first step is one for every phase: verl's data.max_response_length */
        {FW_VERL, "verl", "data."},
        {FW_AREAL, "areal", ""},
        {FW_RELAX, "relax", "--"},
        {FW_SLIME, "slime", "--"},
        {FW_TRL, "trl", ""},
        {FW_NEMO_RL, "nemo_rl", "policy."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *rem = remedy_json(r.db, &r.st->f[0], cases[i].fw);
        const char *key;
        int n = steps_for(rem, cases[i].name, &key);
        ck_assert_msg(n >= 3, "%s: only %d steps name its settings", cases[i].name, n);
        /* the framework's steps come first */
        const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(rem, "steps"), 0);
        HAS(cJSON_GetObjectItemCaseSensitive(first, "framework")->valuestring, cases[i].name);
        ck_assert_msg(strncmp(key, cases[i].prefix, strlen(cases[i].prefix)) == 0, "%s: first key %s", cases[i].name, key);
        cJSON_Delete(rem);
    }
    scan_done(&r);
}
END_TEST

START_TEST(test_remedy_slurm_memory_request_read_from_the_job_script)
{
    run_out r = scan_real(LOG_SLURM_5932);
    const finding *f = &r.st->f[0];
    ck_assert_int_eq(f->cls, CLS_HOST_OOM_KILL);
    config_view cfg;
    story_settings_view(r.st, f->job_id, &cfg);
    cJSON *rem = remedy_json_config(r.db, f, FW_UNKNOWN, &cfg, f->job_id);
    char *js = cJSON_PrintUnformatted(rem);
    HAS(js, "\"key\":\"#SBATCH --mem\",\"form\":\"directive\"");
    HAS(js, "\"current\":\"64Gb\",\"proposed\":\"96Gb\"");
    /* as the user writes it in the job script, with the value the log showed */
    HAS(js, "\"change\":\"increase\",\"text\":\"#SBATCH --mem=96Gb  (64Gb -> 96Gb)\"");
    HAS(js, "\"read_at\":{\"path\":\"mem.log\",\"line\":8");
    free(js);
    cJSON_Delete(rem);
    /* without the store the same step states only the rule */
    rem = remedy_json(r.db, f, FW_UNKNOWN);
    js = cJSON_PrintUnformatted(rem);
    LACKS(js, "\"current\"");
    free(js);
    cJSON_Delete(rem);
    scan_done(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("remedy");
    TCase *tc = tcase_create("diagnosis");
    tcase_add_test(tc, test_remedy_shortfall_and_no_fragmentation);
    tcase_add_test(tc, test_remedy_fragmentation_spelled_as_old_pytorch);
    tcase_add_test(tc, test_remedy_fragmentation_spelled_as_new_pytorch);
    tcase_add_test(tc, test_remedy_lone_listed_process_is_the_failing_one);
    tcase_add_test(tc, test_remedy_ray_node_memory_against_threshold);
    tcase_add_test(tc, test_remedy_colocated_engine_holds_the_gpu);
    tcase_add_test(tc, test_remedy_request_larger_than_gpu);
    tcase_add_test(tc, test_remedy_steps_in_each_rl_frameworks_settings);
    tcase_add_test(tc, test_remedy_slurm_memory_request_read_from_the_job_script);
    suite_add_tcase(s, tc);
    return check_run(s);
}
