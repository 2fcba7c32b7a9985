/* check_advice.c - advice as the user types it: each setting form rendered in its framework's own
 * syntax (Hydra override, flag, environment variable, DeepSpeed JSON, Slurm directive, command), the
 * job's value shown as "current -> proposed", and the step library: a step defined once, used by
 * every checklist that names it, and an unknown step named with its checklist. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <stdio.h>

#include "advice/advice.h"
#include "advice/diagnosis.h"
#include "advice/setting.h"
#include "db/patterndb.h"
#include "match/config.h"
#include "match/scan.h"
#include "match/version.h"
#include "story/story.h"
#include "check_main.h"
#include "membuf.h"
#include "remedy_lines.h"

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

static pdb *embedded(void) { return embedded_db(); }

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The premise of library step `id` (NULL when it has none). */
static const cJSON *premise_of(const pdb *db, const char *id)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(db->steps, id), "premise");
}

/* 1 when a conclusion of `diag` refutes premise p, per the diagnosis data. */
static int refuted(const pdb *db, const cJSON *diag, const cJSON *p)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(diag, "conclusions"))
    {
        if (cJSON_IsString(p) && diagnosis_says(db, jstr(c, "id"), "refutes", p->valuestring))
            return 1;
    }
    return 0;
}

/* The invariant of issue 14: no step whose premise the diagnosis refutes comes before one whose
 * premise stands, and each such step says which conclusion refuted it. Returns the number of steps
 * found refuted; fails the test with `what` named otherwise. */
static int check_consistent(const pdb *db, const advice *a, const char *what)
{
    static cJSON old_torch_premise = {.type = cJSON_String, .valuestring = (char *)"expandable_segments"};
    const cJSON *old_torch = &old_torch_premise;
    int seen_refuted = 0, n = 0;
    const cJSON *st;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(a->remediation, "steps"))
    {
        int r = refuted(db, a->diagnosis, premise_of(db, jstr(st, "id")));
        ck_assert_msg(!seen_refuted || r, "%s: step %s stands after a refuted step", what, jstr(st, "id"));
        if (r) {
            const cJSON *why = cJSON_GetObjectItemCaseSensitive(st, "premise_refuted");
            ck_assert_msg(jstr(why, "what") != NULL, "%s: step %s is refuted but gives no reason", what, jstr(st, "id"));
            seen_refuted = 1;
            n++;
        }
        /* a setting the diagnosis rules out (expandable_segments for an older PyTorch) is not shown */
        const cJSON *set;
        cJSON_ArrayForEach(set, cJSON_GetObjectItemCaseSensitive(st, "settings"))
        {
            const char *t = jstr(set, "text");
            ck_assert_msg(!(t && strstr(t, "expandable_segments") && refuted(db, a->diagnosis, old_torch)),
                          "%s: %s shown although this PyTorch predates it", what, t);
        }
    }
    return n;
}

START_TEST(test_advice_refuted_premise_moves_last_with_reason)
{
    pdb *db = embedded();
    /* verl-project/verl#2828: 6.77 GiB unallocated < 13.91 GiB requested, fragmentation ruled out */
    run_out r = scan_text(db, LINE_VERL, strlen(LINE_VERL), 0, 0);
    advice *a = advice_resolve(db, &r.st->f[0], FW_VERL, NULL, "");
    ck_assert_ptr_nonnull(a);
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(a->remediation, "steps");
    const cJSON *last = cJSON_GetArrayItem(steps, cJSON_GetArraySize(steps) - 1);
    ck_assert_str_eq(jstr(last, "id"), "allocator_fragmentation");
    HAS(jstr(cJSON_GetObjectItemCaseSensitive(last, "premise_refuted"), "what"), "fragmentation is not the cause");
    ck_assert_int_eq(check_consistent(db, a, "verl#2828"), 1);
    advice_free(a);
    scan_done(&r);
    /* huggingface/trl#3436: 2.57 GiB unallocated >= 388 MiB requested: the allocator step comes first */
    r = scan_text(embedded(), LINE_TRL, strlen(LINE_TRL), 0, 0);
    a = advice_resolve(r.db, &r.st->f[0], FW_TRL, NULL, "");
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a->remediation, "steps"), 0);
    ck_assert_str_eq(jstr(first, "id"), "allocator_fragmentation");
    ck_assert_str_eq(jstr(cJSON_GetObjectItemCaseSensitive(first, "first_because"), "conclusion"), "fragmentation");
    advice_free(a);
    scan_done(&r);
}
END_TEST

START_TEST(test_advice_older_pytorch_gets_no_expandable_segments)
{
    /* the message of a PyTorch whose hint names max_split_size_mb (fixtures: MGFN's OOM) */
    run_out r = scan_text(embedded(), LINE_MGFN, strlen(LINE_MGFN), 0, 0);
    advice *a = advice_resolve(r.db, &r.st->f[0], FW_PYTORCH, NULL, "");
    char *js = cJSON_PrintUnformatted(a->remediation);
    ck_assert_msg(strstr(js, "expandable_segments:True") == NULL, "expandable_segments offered: %s", js);
    HAS(js, "export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512");
    free(js);
    advice_free(a);
    scan_done(&r);
}
END_TEST

/* One echo of the settings test below: its k-th line or lines. */
static void settings_echo_line(unsigned k, char *buf, size_t cap)
{
    unsigned v = 1u << (k % 5); /* 1..16: the values change from echo to echo */
    if (k % 401 == 0)
        snprintf(buf, cap,
                 "(main_task pid=8918) {'actor_rollout_ref': {'actor': {'clip_ratio': 0.2,\n"
                 "(main_task pid=8918) 'ppo_micro_batch_size_per_gpu': %u,\n"
                 "(main_task pid=8918) 'fsdp_config': {'param_offload': False,\n"
                 "(main_task pid=8918) 'optimizer_offload': False}},\n"
                 "(main_task pid=8918) 'rollout': {'gpu_memory_utilization': 0.%u,\n"
                 "(main_task pid=8918) 'log_prob_micro_batch_size_per_gpu': %u}}}\n",
                 v, 3 + k % 5, v * 2);
    else if (k % 13 == 0)
        /* verl's config printed as YAML through Ray: the keys that enclose a setting are the
         * "key:" lines above it with less indentation after the prefix */
        snprintf(buf, cap,
                 "(TaskRunner pid=2291) critic:\n"
                 "(TaskRunner pid=2291)   optim:\n"
                 "(TaskRunner pid=2291)     lr: 1e-05\n"
                 "(TaskRunner pid=2291)   ppo_micro_batch_size_per_gpu: %u\n"
                 "(TaskRunner pid=2291)   model:\n"
                 "(TaskRunner pid=2291)     path: ~/models/Qwen2.5-3B\n"
                 "(TaskRunner pid=2291)     enable_gradient_checkpointing: %s\n"
                 "(TaskRunner pid=2291)     fsdp_config:\n"
                 "(TaskRunner pid=2291)       param_offload: %s\n"
                 "(TaskRunner pid=2291)   # the critic's own loader\n"
                 "(TaskRunner pid=2291)\n"
                 "(TaskRunner pid=2291)   ppo_max_token_len_per_gpu: %u\n"
                 "(TaskRunner pid=2291) trainer:\n"
                 "(TaskRunner pid=2291)   gpu_memory_utilization: 0.%u\n",
                 v, k % 2 ? "true" : "false", k % 3 ? "false" : "true", v * 2048, 4 + k % 5);
    else if (k % 53 == 0)
        snprintf(buf, cap,
                 "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=%u \\\n"
                 "    actor_rollout_ref.model.enable_gradient_checkpointing=%s \\\n"
                 "    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=%u \\\n"
                 "    data.train_batch_size=%u --max-tokens-per-gpu %u \\\n",
                 v, k % 2 ? "True" : "False", v * 1024, v * 64, v * 4096);
    else if (k % 7 == 0)
        /* the name first inside a longer one, then on its own (the first hit reads nothing) */
        snprintf(buf, cap,
                 "iter %u | ppo_micro_batch_size_per_gpu=%u | micro_batch_size=%u | gradient_accumulation_steps=%u "
                 "| loss=0.%u\n",
                 k, v, v + 1, v * 2, k % 1000);
    else
        snprintf(buf, cap, "step %u loss 0.%u lr 1e-5 tokens/s %u\n", k, k * 7 % 1000, k * 13);
}

/* Settings echoed before a finding, in the forms the log prints them (a nested dict dump over several
 * lines, Hydra overrides, flags, key=value on a line among other text; not a YAML block, whose
 * enclosing keys are read back within the buffer and so still depend on where it was cut), each
 * printed several times with the last value winning, reach the job's settings and its advice the
 * same whether the log is read whole, cut into buffers at every few bytes (a setting and its enclosing
 * block on both sides of a cut), or split with the helper thread. The dump lines follow real ones
 * (verl-project/verl#330, #855, #2001; the settings shape of ../shared/bench/genshapes.py). */
START_TEST(test_advice_settings_echoed_before_a_finding_whatever_the_buffers)
{
    size_t n;
    char *text = text_of_lines(3u << 20, 1, settings_echo_line, LINE_VERL, &n);

    static const struct {
        size_t step;
        int helper;
    } reads[] = {{0, 0}, {0, 1}, {4093, 0}, {509, 0}};
    char *want_settings = NULL, *want_advice = NULL;
    for (size_t i = 0; i < sizeof reads / sizeof *reads; i++) {
        run_out r = scan_text(embedded(), text, n, reads[i].step, reads[i].helper);
        ck_assert_uint_ge(r.st->n, 1);
        config_view cfg;
        story_settings_view(r.st, "", &cfg);
        advice *a = advice_resolve(r.db, &r.st->f[0], FW_VERL, &cfg, "");
        ck_assert_ptr_nonnull(a);
        char *adv = cJSON_PrintUnformatted(a->remediation), *set = settings_dump(r.st, 1);
        if (!want_settings) {
            want_settings = set;
            want_advice = adv;
            /* the last value each form printed, with its enclosing keys */
            HAS(set, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=");
            HAS(set, "actor_rollout_ref.actor.fsdp_config.param_offload=False@");
            HAS(set, "actor_rollout_ref.rollout.gpu_memory_utilization=0.");
            HAS(set, "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=");
            HAS(set, "actor_rollout_ref.model.enable_gradient_checkpointing=");
            HAS(set, "max_tokens_per_gpu=");
            HAS(set, "\nmicro_batch_size=");
            HAS(set, "critic.ppo_micro_batch_size_per_gpu=");
            HAS(set, "critic.model.enable_gradient_checkpointing=");
            HAS(set, "critic.model.fsdp_config.param_offload=");
            HAS(set, "critic.ppo_max_token_len_per_gpu=");
            HAS(set, "trainer.gpu_memory_utilization=");
            HAS(set, "\ngradient_accumulation_steps=");
            HAS(adv, "->");
        } else {
            ck_assert_msg(strcmp(set, want_settings) == 0, "read %zu (step %zu, helper %d): settings\n%s\nwant\n%s", i,
                          reads[i].step, reads[i].helper, set, want_settings);
            ck_assert_msg(strcmp(adv, want_advice) == 0, "read %zu: advice\n%s\nwant\n%s", i, adv, want_advice);
            free(set);
            free(adv);
        }
        advice_free(a);
        scan_done(&r);
    }
    /* and they are what reading each line for every setting name gives (the scanner's reading before
     * the settings went through the prefilter's hits one by one) */
    pdb *db = embedded();
    story *ref = story_new();
    config_store **st = story_job_settings(ref, "");
    config_tracker *tr = config_tracker_new();
    ck_assert_ptr_nonnull(tr);
    uint64_t line = 1;
    int failed = 0; /* asserted once: Check records every assertion it passes */
    for (size_t s0 = 0; s0 < n; line++) {
        size_t e = s0;
        while (e < n && text[e] != '\n')
            e++;
        for (size_t j = 0; j < db->n_config_lits; j++)
            failed |= config_capture(st, tr, db->config_lits[j], text, 0, s0, e, "", "mem.log", line) < 0;
        s0 = e + 1;
    }
    ck_assert_int_eq(failed, 0);
    char *ref_settings = settings_dump(ref, 1);
    ck_assert_msg(strcmp(ref_settings, want_settings) == 0, "scan read\n%s\nline by line\n%s", want_settings,
                  ref_settings);
    free(ref_settings);
    config_tracker_free(tr);
    story_free(ref);
    pdb_free(db);
    free(want_settings);
    free(want_advice);
    free(text);
}
END_TEST

/* The advice of the first finding of `log` under framework fw, with the job's settings and versions. */
static advice *advice_of_log(const char *log, int fw, run_out *r)
{
    *r = scan_text(embedded(), log, strlen(log), 0, 0);
    ck_assert_uint_ge(r->st->n, 1);
    config_view cfg;
    story_settings_view(r->st, "", &cfg);
    advice *a = advice_resolve(r->db, &r->st->f[0], fw, &cfg, "");
    ck_assert_ptr_nonnull(a);
    return a;
}

/* The allocator setting follows the PyTorch the log printed: expandable_segments from 2.1 (2.0.1
 * rejects it: deepseek-ai/DeepSeek-VL2#103), max_split_size_mb before; both when no version shows. */
START_TEST(test_advice_printed_torch_version_decides_allocator_setting)
{
    static const struct {
        const char *version_line; /* real lines: fixtures/realjobs (Debian's torch 1.13), pytorch/pytorch#122057 */
        const char *oom;
        int expandable, max_split, refuted;
    } cases[] = {
        {"    sys.exit(load_entry_point('torch==1.13.0a0+gitunknown', 'console_scripts', 'torchrun')())\n", LINE_TRL, 0,
         1, 1},
        {"", LINE_TRL, 1, 1, 0},
        {"> PyTorch version: 2.3.1+cu121\n", LINE_MGFN, 1, 0, 0},
        {"", LINE_MGFN, 0, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char log[2048];
        snprintf(log, sizeof log, "%s%s\n", cases[i].version_line, cases[i].oom);
        run_out r;
        advice *a = advice_of_log(log, FW_PYTORCH, &r);
        char *js = cJSON_PrintUnformatted(a->remediation), *d = cJSON_PrintUnformatted(a->diagnosis);
        ck_assert_msg(!!strstr(js, "expandable_segments:True") == cases[i].expandable, "case %zu: %s", i, js);
        ck_assert_msg(!!strstr(js, "max_split_size_mb:512") == cases[i].max_split, "case %zu: %s", i, js);
        ck_assert_msg(!!strstr(d, "torch_predates_expandable") == cases[i].refuted, "case %zu: %s", i, d);
        if (cases[i].refuted) {
            HAS(d, "PyTorch 1.13.0a0+gitunknown (printed at mem.log:1)");
            /* the diagnosis names the value the step sets */
            HAS(d, "set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512");
        }
        check_consistent(r.db, a, "printed torch version");
        free(js);
        free(d);
        advice_free(a);
        scan_done(&r);
    }
}
END_TEST

/* Versions read from start-up banners (real lines, sources in patterns/context/versions.json) go with
 * the advice of the job's findings; a package whose name only ends in "torch" is not PyTorch. */
START_TEST(test_advice_versions_from_banners)
{
    static const char log[] =
        "(EngineCore pid=1057) INFO 04-16 02:33:00 [core.py:107] Initializing a V1 LLM engine (v0.19.1rc1.dev241+"
        "g4d042ed85.d20260413) with config: model='Qwen/Qwen2.5-1.5B-Instruct-AWQ', speculative_config=None\n"
        "[2024-07-10 16:18:01,485] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed info: version=0.14.0, "
        "git-hash=unknown, git-branch=unknown\n"
        "pytorch-triton==2.1.0\n";
    char buf[4096];
    snprintf(buf, sizeof buf, "%s%s\n", log, LINE_TRL);
    run_out r;
    advice *a = advice_of_log(buf, FW_VLLM, &r);
    ck_assert_ptr_nonnull(a->versions);
    ck_assert_str_eq(jstr(a->versions, "vllm"), "0.19.1rc1.dev241+g4d042ed85.d20260413");
    ck_assert_str_eq(jstr(a->versions, "vllm_engine"), "V1");
    ck_assert_str_eq(jstr(a->versions, "deepspeed"), "0.14.0");
    ck_assert_ptr_null(jstr(a->versions, "torch"));
    advice_free(a);
    scan_done(&r);
    /* a V0 banner names its engine; a log without banners has no versions */
    static const char v0[] = "INFO 03-12 14:55:27 [llm_engine.py:235] Initializing a V0 LLM engine "
                             "(v0.7.4.dev390+gdebd6bbf) with config: model='models/llama3.1-8B-INT8'\n";
    snprintf(buf, sizeof buf, "%s%s\n", v0, LINE_TRL);
    a = advice_of_log(buf, FW_VLLM, &r);
    ck_assert_str_eq(jstr(a->versions, "vllm_engine"), "V0");
    advice_free(a);
    scan_done(&r);
    a = advice_of_log(LINE_TRL, FW_VLLM, &r);
    ck_assert_ptr_null(a->versions);
    advice_free(a);
    scan_done(&r);
}
END_TEST

/* A memory snapshot's measured fragmentation (memory.snapshot, src/dumps/memsnap.c) decides over what
 * the message lets us infer: high puts the allocator step first with the measured number, low moves it
 * last with the reason. The snapshots are written here; the OOM lines are real (see remedy_lines.h). */
START_TEST(test_advice_measured_fragmentation_orders_allocator_step)
{
    static const struct {
        const char *oom, *snapshot, *conclusion, *words;
        int first; /* 1: the allocator step comes first; 0: it is last, refuted */
    } cases[] = {
        /* the message says 6.77 GiB unallocated < 13.91 GiB requested; the snapshot measured 90% */
        {LINE_VERL,
         "{\"fragmentation\":0.9,\"free_cached_bytes\":21474836480,\"largest_free_block_bytes\":2147483648,"
         "\"fragmented\":true}",
         "snapshot_fragmentation", "the cache 90% fragmented", 1},
        /* the message says 2.57 GiB unallocated >= 388 MiB; the snapshot measured 5% */
        {LINE_TRL,
         "{\"fragmentation\":0.05,\"free_cached_bytes\":3221225472,\"largest_free_block_bytes\":3060164198,"
         "\"fragmented\":false}",
         "snapshot_low_fragmentation", "only 5% fragmented", 0},
        /* a free cache smaller than the request: no layout of it would have served the request */
        {LINE_TRL,
         "{\"fragmentation\":0.8,\"free_cached_bytes\":104857600,\"largest_free_block_bytes\":20971520,"
         "\"fragmented\":false}",
         "snapshot_small_cache", "only 100 MiB cached but free", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        run_out r = scan_text(embedded(), cases[i].oom, strlen(cases[i].oom), 0, 0);
        finding *f = &r.st->f[0];
        cJSON_AddItemToObject(f->memory, "snapshot", cJSON_Parse(cases[i].snapshot));
        advice *a = advice_resolve(r.db, f, FW_PYTORCH, NULL, "");
        char *d = cJSON_PrintUnformatted(a->diagnosis);
        HAS(d, cases[i].conclusion);
        HAS(d, cases[i].words);
        /* measured beats inferred: the message's own verdict is not stated beside it */
        ck_assert_msg(!strstr(d, "\"id\":\"fragmentation\"") && !strstr(d, "\"id\":\"no_fragmentation\""),
                      "case %zu: %s", i, d);
        const cJSON *steps = cJSON_GetObjectItemCaseSensitive(a->remediation, "steps");
        const cJSON *st = cJSON_GetArrayItem(steps, cases[i].first ? 0 : cJSON_GetArraySize(steps) - 1);
        ck_assert_str_eq(jstr(st, "id"), "allocator_fragmentation");
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(st, cases[i].first ? "first_because" : "premise_refuted");
        ck_assert_msg(jstr(why, "conclusion") && !strcmp(jstr(why, "conclusion"), cases[i].conclusion), "case %zu", i);
        HAS(jstr(why, "what"), cases[i].words);
        check_consistent(r.db, a, "measured fragmentation");
        free(d);
        advice_free(a);
        scan_done(&r);
    }
}
END_TEST


/* The job's own memory telemetry (memory.trend, src/advice/memtrend.c) orders the checklist: a leak
 * is not cured by a defragmented cache, so with `growth` the allocator step moves last, the trend
 * named as the reason; with `flat` the message's own verdict stands (the allocator step first). The
 * trends are numbers written here; the OOM line is real (huggingface/trl#3436, see remedy_lines.h). */
START_TEST(test_advice_memory_trend_orders_the_checklist)
{
    static const struct {
        const char *trend, *verdict, *words;
        int allocator_first;
    } cases[] = {
        {"{\"metric\":\"gpu_max_allocated\",\"unit\":\"bytes\",\"points\":[[1,1e9],[2,2e9],[3,3e9],[4,4e9]],"
         "\"slope_per_step\":1e9,\"verdict\":\"growth\",\"from_step\":1,\"to_step\":4,\"first_bytes\":1e9,"
         "\"last_bytes\":4e9,\"last_steady_bytes\":3e9}",
         "growth", "climbing", 0},
        {"{\"metric\":\"gpu_max_allocated\",\"unit\":\"bytes\",\"points\":[[1,4e9],[2,4e9],[3,4e9],[4,8e9]],"
         "\"slope_per_step\":1.2e9,\"verdict\":\"flat\",\"from_step\":1,\"to_step\":4,\"first_bytes\":4e9,"
         "\"last_bytes\":8e9,\"last_steady_bytes\":4e9}",
         "flat", "no climb before the failure", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        run_out r = scan_text(embedded(), LINE_TRL, strlen(LINE_TRL), 0, 0);
        finding *f = &r.st->f[0];
        cJSON_AddItemToObject(f->memory, "trend", cJSON_Parse(cases[i].trend));
        advice *a = advice_resolve(r.db, f, FW_TRL, NULL, "");
        const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a->diagnosis, "conclusions"), 0);
        ck_assert_str_eq(jstr(c0, "id"), "memory_trend");
        ck_assert_str_eq(jstr(c0, "verdict"), cases[i].verdict);
        HAS(jstr(c0, "what"), cases[i].words);
        const cJSON *steps = cJSON_GetObjectItemCaseSensitive(a->remediation, "steps");
        const cJSON *st = cJSON_GetArrayItem(steps, cases[i].allocator_first ? 0 : cJSON_GetArraySize(steps) - 1);
        ck_assert_msg(!strcmp(jstr(st, "id"), "allocator_fragmentation"), "case %zu: %s", i, jstr(st, "id"));
        if (!cases[i].allocator_first)
            ck_assert_str_eq(jstr(cJSON_GetObjectItemCaseSensitive(st, "premise_refuted"), "conclusion"), "memory_trend");
        /* the leak's own steps (patterns/remediation/steps.json, only_when memory_leak): first with a
         * climb, named by the trend; absent without one */
        int leak_steps = 0;
        const cJSON *s1;
        cJSON_ArrayForEach(s1, steps) leak_steps += !strncmp(jstr(s1, "id"), "leak_", 5);
        if (cases[i].allocator_first) {
            ck_assert_int_eq(leak_steps, 0);
        } else {
            ck_assert_int_eq(leak_steps, 2);
            ck_assert_str_eq(jstr(cJSON_GetArrayItem(steps, 0), "id"), "leak_kept_tensors");
            ck_assert_str_eq(jstr(cJSON_GetArrayItem(steps, 1), "id"), "leak_memory_history");
            ck_assert_str_eq(
                jstr(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(steps, 0), "first_because"), "conclusion"),
                "memory_trend");
        }
        advice_free(a);
        scan_done(&r);
    }
}
END_TEST

/* A host leak (host_used climbing; numbers written here, the Ray line real: see remedy_lines.h): the
 * host checklist starts with the leak's own steps, then the allocator that keeps resident memory
 * growing (better_malloc, first_when memory_leak). */
START_TEST(test_advice_host_leak_puts_leak_steps_then_malloc_first)
{
    run_out r = scan_text(embedded(), LINE_RAY, strlen(LINE_RAY), 0, 0);
    ck_assert_uint_ge(r.st->n, 1);
    finding *f = &r.st->f[0];
    if (!f->memory)
        f->memory = cJSON_CreateObject();
    cJSON_AddItemToObject(f->memory, "trend",
                          cJSON_Parse("{\"metric\":\"host_used\",\"unit\":\"bytes\",\"points\":[[1,1e11],[2,1.5e11],"
                                      "[3,2e11],[4,2.5e11]],\"slope_per_step\":5e10,\"verdict\":\"growth\",\"from_step\":1,"
                                      "\"to_step\":4,\"first_bytes\":1e11,\"last_bytes\":2.5e11,\"last_steady_bytes\":2e11}"));
    advice *a = advice_resolve(r.db, f, FW_VERL, NULL, "");
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(a->remediation, "steps");
    ck_assert_str_eq(jstr(cJSON_GetArrayItem(steps, 0), "id"), "leak_kept_tensors");
    ck_assert_str_eq(jstr(cJSON_GetArrayItem(steps, 1), "id"), "leak_memory_history");
    ck_assert_str_eq(jstr(cJSON_GetArrayItem(steps, 2), "id"), "better_malloc");
    advice_free(a);
    scan_done(&r);
}
END_TEST

/* The job's settings are the job's (issue 11): each job's store hangs off the story's job, merging two
 * inputs keeps them apart, a job sees its own and those of inputs naming no job, never another job's;
 * a finding of no job sees every job's, as when one store held them all. */
START_TEST(test_advice_reads_the_jobs_own_settings)
{
    story *a = story_new(), *b = story_new();
    ck_assert_int_eq(config_put(story_job_settings(a, "101"), "num_workers", "0", "101", "101.log", 3), 0);
    ck_assert_int_eq(config_put(story_job_settings(b, "202"), "num_workers", "8", "202", "202.log", 5), 0);
    ck_assert_int_eq(config_put(story_job_settings(b, ""), "data.max_prompt_length", "4096", "", "run.log", 1), 0);
    ck_assert_int_eq(story_merge(a, b), 0);
    config_view v;
    story_settings_view(a, "101", &v);
    ck_assert_ptr_nonnull(v.own);
    ck_assert_uint_eq(v.own->n, 1);
    ck_assert_str_eq(config_view_lookup(&v, "num_workers", "101")->value, "0");
    ck_assert_str_eq(config_view_lookup(&v, "data.max_prompt_length", "101")->value, "4096");
    story_settings_view(a, "202", &v);
    ck_assert_str_eq(config_view_lookup(&v, "num_workers", "202")->value, "8");
    story_settings_view(a, "303", &v); /* a job that printed nothing sees only the shared settings */
    ck_assert_ptr_null(config_view_lookup(&v, "num_workers", "303"));
    story_settings_view(a, "", &v);
    ck_assert_str_eq(config_view_lookup(&v, "num_workers", "")->value, "8"); /* the later read */
    story_free(a);
    story_free(b);
}
END_TEST

/* A batch script beside several jobs' outputs names no job: its settings are no job's current values
 * (the OOM-killed job was told its --mem was the healthy job's 3G, issue 31); beside one job they are
 * that job's. */
START_TEST(test_advice_unnamed_settings_not_lent_across_jobs)
{
    static pdb_pattern kill = {.id = "host_oom_kill.t", .file = "slurm.json", .cls = CLS_HOST_OOM_KILL, .engine = -1,
                               .phase = -1};
    for (int jobs = 1; jobs <= 2; jobs++) {
        story *s = story_new();
        ck_assert_ptr_nonnull(s);
        ck_assert_int_eq(config_put(story_job_settings(s, ""), "num_workers", "8", "", "healthy.sbatch", 2), 0);
        for (int j = 0; j < jobs; j++) {
            const char *id = j ? "3" : "2", *path = j ? "slurm-3.out" : "slurm-2.out";
            story_event ev = {.pattern = &kill, .phase = PH_UNKNOWN, .framework = -1, .match = "Killed",
                              .match_len = 6, .evidence = "Killed", .evidence_len = 6, .input = (size_t)j,
                              .path = path, .line = 9, .job_id = id, .merge_into = -1};
            ck_assert_int_ge(story_add(s, &ev), 0);
        }
        ck_assert_int_eq(story_finish(s, ""), 0);
        config_view v;
        story_settings_view(s, "2", &v);
        const config_entry *e = config_view_lookup(&v, "num_workers", "2");
        if (jobs == 1)
            ck_assert_msg(e && strcmp(e->value, "8") == 0, "one job: the script beside it is its own");
        else
            ck_assert_msg(!e, "two jobs: job 2 was lent a script nothing ties to it");
        /* withheld, the user is told which file and how to tie it to the job: --job-id 2 */
        pdb *db = embedded();
        advice *a = advice_resolve(db, &s->f[0], FW_PYTORCH, &v, "2");
        ck_assert_ptr_nonnull(a);
        char *d = a->diagnosis ? cJSON_PrintUnformatted(a->diagnosis) : strdup("");
        if (jobs == 1) {
            ck_assert_msg(!strstr(d, "settings_withheld"), "one job: nothing withheld, no hint: %s", d);
        } else {
            HAS(d, "settings_withheld");
            HAS(d, "healthy.sbatch");
            HAS(d, "--job-id 2");
        }
        free(d);
        advice_free(a);
        pdb_free(db);
        story_free(s);
    }
}
END_TEST

START_TEST(test_advice_no_loader_workers_rules_out_fewer_workers)
{
    /* the job's argparse Namespace (printed here by Python 3.11) and a kernel OOM kill of its trainer
     * (fixtures/golden/kernel-oom-legacy-pair.log, intel/platform-resource-manager#42) */
    static const char log[] = "Namespace(batch_size=8, num_workers=0, lr=0.0001)\n"
                              "[Thu Mar 14 01:57:55 2019] Out of memory: Kill process 89746 (python) score 838 or "
                              "sacrifice child\n"
                              "[Thu Mar 14 01:57:55 2019] Killed process 89746 (python) total-vm:118026216kB, "
                              "anon-rss:109819332kB, file-rss:3324kB, shmem-rss:0kB\n";
    run_out r = scan_text(embedded(), log, strlen(log), 0, 0);
    ck_assert_uint_ge(r.st->n, 1);
    const finding *f = &r.st->f[0];
    ck_assert_int_eq(f->cls, CLS_HOST_OOM_KILL);
    config_view cfg;
    story_settings_view(r.st, "", &cfg);
    advice *a = advice_resolve(r.db, f, FW_PYTORCH, &cfg, "");
    char *d = cJSON_PrintUnformatted(a->diagnosis);
    HAS(d, "no_loader_workers");
    HAS(d, "num_workers=0");
    free(d);
    ck_assert_int_ge(check_consistent(r.db, a, "num_workers=0"), 1);
    /* and the step is not first any more */
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a->remediation, "steps"), 0);
    ck_assert_str_ne(jstr(first, "id"), "fewer_loader_workers");
    /* and its setting does not ask to lower a count that is 0 ("lower num_workers (now 0)", issue 31) */
    const cJSON *step;
    int seen = 0;
    cJSON_ArrayForEach(step, cJSON_GetObjectItemCaseSensitive(a->remediation, "steps"))
    {
        if (strcmp(jstr(step, "id"), "fewer_loader_workers") != 0)
            continue;
        const cJSON *set = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(step, "settings"), 0);
        ck_assert_str_eq(jstr(set, "text"), "num_workers is already 0 in this job: nothing to lower");
        seen = 1;
    }
    ck_assert_int_eq(seen, 1);
    advice_free(a);
    scan_done(&r);
}
END_TEST

/* Ray before 2.0 refused the task (RayOutOfMemoryError) with the node's figures in its message: the
 * memory was really in use, so the step about per-process limits goes last with that reason; a
 * host_memory_error without such figures (PyTorch's DefaultCPUAllocator) keeps it first. */
START_TEST(test_advice_ray_node_figures_refute_process_limits)
{
    /* ray-project/ray#15226 */
    static const char ray[] = "(pid=737) ray._private.memory_monitor.RayOutOfMemoryError: More than 95% of the memory "
                              "on node ip-172-31-7-2 is used (7.12 / 7.49 GB). The top 10 memory consumers are:\n";
    run_out r = scan_text(embedded(), ray, strlen(ray), 0, 0);
    ck_assert_uint_eq(r.st->n, 1);
    ck_assert_int_eq(r.st->f[0].cls, CLS_HOST_MEMORY_ERROR);
    advice *a = advice_resolve(r.db, &r.st->f[0], FW_UNKNOWN, NULL, "");
    char *d = cJSON_PrintUnformatted(a->diagnosis);
    HAS(d, "ray_node_refused");
    HAS(d, "above the 95% at which");
    free(d);
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(a->remediation, "steps");
    const cJSON *last = cJSON_GetArrayItem(steps, cJSON_GetArraySize(steps) - 1);
    ck_assert_str_eq(jstr(last, "id"), "address_space_limits");
    ck_assert_int_eq(check_consistent(r.db, a, "ray#15226"), 1);
    advice_free(a);
    scan_done(&r);
    /* pytorch/pytorch: DefaultCPUAllocator names the request only (fixtures/realjobs/backward_host_oom) */
    static const char cpu[] = "RuntimeError: [enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't "
                              "allocate memory: you tried to allocate 268435456 bytes. Error code 12 (Cannot allocate "
                              "memory)\n";
    r = scan_text(embedded(), cpu, strlen(cpu), 0, 0);
    ck_assert_uint_eq(r.st->n, 1);
    a = advice_resolve(r.db, &r.st->f[0], FW_UNKNOWN, NULL, "");
    ck_assert_ptr_null(a->diagnosis);
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a->remediation, "steps"), 0);
    ck_assert_str_eq(jstr(first, "id"), "address_space_limits");
    advice_free(a);
    scan_done(&r);
}
END_TEST

/* Every fixture log of the corpus, held-out set and golden folder: each root finding's advice, under
 * its own framework and under TRL and slime, keeps to its diagnosis and shows no other framework's
 * keys. */
START_TEST(test_advice_fixture_steps_agree_with_their_diagnosis)
{
    static const char *const sets[] = {"corpus", "heldout", "golden"};
    pdb *db = embedded();
    size_t files = 0, refutations = 0;
    for (size_t k = 0; k < sizeof sets / sizeof *sets; k++) {
        char dir[600];
        snprintf(dir, sizeof dir, "%s/fixtures/%s", OOMSCAN_SOURCE_DIR, sets[k]);
        DIR *dh = opendir(dir);
        ck_assert_ptr_nonnull(dh);
        struct dirent *de;
        while ((de = readdir(dh))) {
            size_t n = strlen(de->d_name);
            if (n < 5 || strcmp(de->d_name + n - 4, ".log") != 0)
                continue;
            char path[1200];
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            FILE *fp = fopen(path, "rb");
            ck_assert_ptr_nonnull(fp);
            static char buf[1 << 22];
            size_t len = fread(buf, 1, sizeof buf, fp);
            fclose(fp);
            run_out r = scan_text(db, buf, len, 0, 0);
            for (size_t i = 0; i < r.st->n; i++) {
                static const int fws[] = {FW_UNKNOWN, FW_TRL, FW_SLIME, FW_VERL};
                for (size_t j = 0; j < sizeof fws / sizeof *fws; j++) {
                    config_view cfg;
                    story_settings_view(r.st, "", &cfg);
                    advice *a = advice_resolve(db, &r.st->f[i], fws[j], &cfg, "");
                    ck_assert_ptr_nonnull(a);
                    refutations += (size_t)check_consistent(db, a, path);
                    const cJSON *st;
                    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(a->remediation, "steps"))
                    {
                        const char *used = jstr(st, "framework");
                        ck_assert_msg(!strcmp(used, "generic") || !strcmp(used, tax_framework_name((tax_framework)fws[j])),
                                      "%s: %s keys shown to a %s job", path, used, tax_framework_name((tax_framework)fws[j]));
                    }
                    advice_free(a);
                }
            }
            r.db = NULL; /* the database is shared by all files */
            scan_done(&r);
            files++;
        }
        closedir(dh);
    }
    ck_assert_uint_ge(files, 200);
    /* the corpus has OOMs whose diagnosis rules fragmentation out: the invariant was exercised */
    ck_assert_uint_ge(refutations, 4);
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
    tcase_add_test(tc, test_advice_refuted_premise_moves_last_with_reason);
    tcase_add_test(tc, test_advice_settings_echoed_before_a_finding_whatever_the_buffers);
    tcase_add_test(tc, test_advice_older_pytorch_gets_no_expandable_segments);
    tcase_add_test(tc, test_advice_no_loader_workers_rules_out_fewer_workers);
    tcase_add_test(tc, test_advice_ray_node_figures_refute_process_limits);
    tcase_add_test(tc, test_advice_printed_torch_version_decides_allocator_setting);
    tcase_add_test(tc, test_advice_versions_from_banners);
    tcase_add_test(tc, test_advice_measured_fragmentation_orders_allocator_step);
    tcase_add_test(tc, test_advice_memory_trend_orders_the_checklist);
    tcase_add_test(tc, test_advice_host_leak_puts_leak_steps_then_malloc_first);
    tcase_add_test(tc, test_advice_reads_the_jobs_own_settings);
    tcase_add_test(tc, test_advice_unnamed_settings_not_lent_across_jobs);
    tcase_add_test(tc, test_advice_fixture_steps_agree_with_their_diagnosis);
    suite_add_tcase(s, tc);
    return check_run(s);
}
