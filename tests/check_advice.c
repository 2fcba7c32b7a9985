/* check_advice.c - advice as the user types it: each setting form rendered in its framework's own
 * syntax (Hydra override, flag, environment variable, DeepSpeed JSON, Slurm directive, command), the
 * job's value shown as "current -> proposed", and the step library: a step defined once, used by
 * every checklist that names it, and an unknown step named with its checklist. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "advice/setting.h"
#include "db/patterndb.h"
#include "check_main.h"

#define HAS(text, needle) ck_assert_msg(strstr((text), (needle)) != NULL, "missing \"%s\" in: %s", (needle), (text))

START_TEST(test_advice_setting_in_users_syntax)
{
    static const struct {
        const char *set, *want;
    } cases[] = {
        /* Hydra override with the value read from the log */
        {"{\"key\":\"actor_rollout_ref.rollout.gpu_memory_utilization\",\"form\":\"override\",\"change\":\"decrease\","
         "\"current\":\"0.5\",\"proposed\":\"0.4\"}",
         "actor_rollout_ref.rollout.gpu_memory_utilization=0.4  (0.5 -> 0.4)"},
        /* a direction in words when the log did not print the value */
        {"{\"key\":\"--max-tokens-per-gpu\",\"form\":\"flag\",\"change\":\"decrease\"}", "lower --max-tokens-per-gpu"},
        {"{\"key\":\"--max-tokens-per-gpu\",\"form\":\"flag\",\"change\":\"decrease\",\"current\":\"16384\","
         "\"proposed\":\"12288\"}",
         "--max-tokens-per-gpu 12288  (16384 -> 12288)"},
        {"{\"key\":\"--gradient_checkpointing\",\"form\":\"flag\",\"change\":\"enable\"}", "--gradient_checkpointing"},
        {"{\"key\":\"--adam_offload\",\"form\":\"flag\",\"change\":\"disable\"}", "remove --adam_offload"},
        {"{\"key\":\"PYTORCH_CUDA_ALLOC_CONF\",\"form\":\"env\",\"change\":\"set:expandable_segments:True\"}",
         "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"},
        {"{\"key\":\"zero_optimization.offload_param.device\",\"form\":\"json\",\"change\":\"set:cpu\"}",
         "\"zero_optimization\": {\"offload_param\": {\"device\": \"cpu\"}} (DeepSpeed config)"},
        {"{\"key\":\"#SBATCH --mem\",\"form\":\"directive\",\"change\":\"increase\",\"current\":\"64Gb\","
         "\"proposed\":\"96Gb\"}",
         "#SBATCH --mem=96Gb  (64Gb -> 96Gb)"},
        {"{\"key\":\"dmesg -T | grep -i xid\",\"form\":\"command\",\"change\":\"run\"}", "dmesg -T | grep -i xid"},
        {"{\"key\":\"actor_rollout_ref.actor.use_dynamic_bsz\",\"form\":\"override\",\"change\":\"enable\","
         "\"current\":\"True\",\"already\":true}",
         "actor_rollout_ref.actor.use_dynamic_bsz is already True in this job"},
        {"{\"key\":\"allocation_mode\",\"form\":\"override\",\"change\":\"increase\",\"current\":\"sglang.d4p1t1+d4p1t1\"}",
         "raise allocation_mode (now sglang.d4p1t1+d4p1t1)"},
        {"{\"key\":\"gpu_memory_utilization\",\"form\":\"engine_arg\",\"change\":\"decrease\",\"current\":\"0.9\","
         "\"proposed\":\"0.8\"}",
         "--gpu-memory-utilization 0.8 (vllm serve) or gpu_memory_utilization=0.8 (LLM(...))  (0.9 -> 0.8)"},
        {"{\"key\":\"data loader workers\",\"form\":\"words\",\"change\":\"decrease\"}", "lower data loader workers"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *set = cJSON_Parse(cases[i].set);
        ck_assert_ptr_nonnull(set);
        char buf[1024];
        setting_text(set, buf, sizeof buf);
        ck_assert_msg(strncmp(buf, cases[i].want, strlen(cases[i].want)) == 0, "case %zu: got \"%s\", want \"%s\"", i,
                      buf, cases[i].want);
        /* what writers get carries no rule syntax */
        ck_assert_int_eq(setting_publish(set), 0);
        char *js = cJSON_PrintUnformatted(set);
        ck_assert_msg(strstr(js, "set:") == NULL, "case %zu: rule syntax in %s", i, js);
        free(js);
        cJSON_Delete(set);
    }
}
END_TEST

static pdb *db_with(const char *extra_name, const char *extra, oomscan_status *st, oomscan_diag *d)
{
    pdb *db = pdb_new();
    ck_assert_int_eq(pdb_load_embedded(db, d), OOMSCAN_OK);
    if (extra)
        ck_assert_int_eq(pdb_load_text(db, extra_name, extra, strlen(extra), d), OOMSCAN_OK);
    *st = pdb_compile(db, d);
    return db;
}

START_TEST(test_advice_step_library_one_edit)
{
    /* a fix to the shared step "micro_batch" is one edit, seen by every checklist that names it */
    static const char lib[] = "{\"format\":\"oomscan-steps/1\",\"steps\":[{\"id\":\"micro_batch\",\"do\":\"EDITED ONCE\","
                              "\"source\":[\"oomscan\"]}]}";
    oomscan_diag d = {0};
    oomscan_status st;
    pdb *db = db_with("steps-fix.json", lib, &st, &d);
    ck_assert_int_eq(st, OOMSCAN_OK);
    size_t users = 0;
    for (size_t i = 0; i < db->n_checklists; i++) {
        const cJSON *s;
        cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(db->checklists[i].json, "steps"))
        {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(s, "id");
            if (cJSON_IsString(id) && strcmp(id->valuestring, "micro_batch") == 0) {
                users++;
                HAS(cJSON_GetObjectItemCaseSensitive(s, "do")->valuestring, "EDITED ONCE");
            }
        }
    }
    ck_assert_uint_ge(users, 3);
    pdb_free(db);
}
END_TEST

START_TEST(test_advice_unknown_step_names_its_checklist)
{
    static const char cl[] = "{\"format\":\"oomscan-remediation/1\",\"id\":\"mine\",\"applies\":[{\"class\":\"segfault\","
                             "\"phase\":\"rollout\"}],\"steps\":[\"no_such_step\"]}";
    oomscan_diag d = {0};
    oomscan_status st;
    pdb *db = db_with("mine.json", cl, &st, &d);
    ck_assert_int_ne(st, OOMSCAN_OK);
    HAS(d.where, "mine.json");
    HAS(d.msg, "no_such_step");
    pdb_free(db);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("advice");
    TCase *tc = tcase_create("advice");
    tcase_add_test(tc, test_advice_setting_in_users_syntax);
    tcase_add_test(tc, test_advice_step_library_one_edit);
    tcase_add_test(tc, test_advice_unknown_step_names_its_checklist);
    suite_add_tcase(s, tc);
    return check_run(s);
}
