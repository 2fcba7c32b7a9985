/* check_config.c - reading settings from the configuration dumps that real logs print, and the
 * concrete change proposed for each. Every dump line below is copied from a public issue thread
 * (source above each case); the literals passed in are the ones the checklists name. */
#include <check.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "match/config.h"
#include "match/version.h"
#include "check_main.h"

/* The first occurrence of lit in text[s..e) that config_name_whole takes (as the scanner hands it
 * over), or e. */
static size_t first_whole(const char *text, size_t s, size_t e, const char *lit)
{
    size_t len = strlen(lit);
    for (size_t p = s; p + len <= e; p++)
        if (memcmp(text + p, lit, len) == 0 && config_name_whole(text, p, len, strlen(text)))
            return p;
    return e;
}

/* Feed every line of `text` to config_capture as the scanner would (the whole text before a line
 * is its context, counted by one tracker as the lines pass). Each line is also fed as the scanner's
 * helper does, its first occurrence read ahead (config_occurrence_read, config_capture_from), into
 * a second store with a second tracker: both must hold the same entries, in the same order. */
static config_store *capture(const char *text, const char *const *lits, size_t n)
{
    config_store *st = NULL, *ahead = NULL;
    static config_prefixes prefixes; /* as the helper's: kept from text to text (a lit is its text's) */
    config_tracker *tr = config_tracker_new(), *tr2 = config_tracker_new();
    ck_assert_ptr_nonnull(tr);
    ck_assert_ptr_nonnull(tr2);
    size_t len = strlen(text), s = 0;
    while (s < len) {
        size_t e = s;
        while (e < len && text[e] != '\n')
            e++;
        for (size_t i = 0; i < n; i++) {
            int got = config_capture(&st, tr, lits[i], text, 0, s, e, "", "t.log", 0), got2;
            ck_assert_int_ge(got, 0);
            size_t p = first_whole(text, s, e, lits[i]);
            if (p < e) {
                config_occurrence occ;
                config_occurrence_read(text, s, e, p, lits[i], strlen(lits[i]), &prefixes, &occ);
                got2 = config_capture_from(&ahead, tr2, lits[i], strlen(lits[i]), text, 0, s, p, e, &occ, "", "t.log", 0);
            } else {
                got2 = config_capture(&ahead, tr2, lits[i], text, 0, s, e, "", "t.log", 0);
            }
            ck_assert_int_eq(got2, got);
        }
        s = e + 1;
    }
    ck_assert_uint_eq(st ? st->n : 0, ahead ? ahead->n : 0);
    for (size_t i = 0; st && i < st->n; i++) {
        ck_assert_str_eq(st->e[i].path, ahead->e[i].path);
        ck_assert_str_eq(st->e[i].value, ahead->e[i].value);
        ck_assert_uint_eq(st->e[i].seq, ahead->e[i].seq);
    }
    config_tracker_free(tr);
    config_tracker_free(tr2);
    config_store_free(ahead);
    return st;
}

/* The value read for checklist key `key`, or "(none)". */
static const char *val(const config_store *st, const char *key)
{
    const config_entry *e = config_lookup(st, key, "");
    return e ? e->value : "(none)";
}

static const char *path_of(const config_store *st, const char *key)
{
    const config_entry *e = config_lookup(st, key, "");
    return e ? e->path : "(none)";
}

#define EQ(got, want) ck_assert_msg(strcmp((got), (want)) == 0, "got \"%s\", want \"%s\"", (got), (want))

static const char *propose(const char *change, const char *cur)
{
    static char out[128];
    config_verdict v = config_propose(change, cur, out, sizeof out);
    if (v == CONFIG_ALREADY)
        return "(already)";
    if (v == CONFIG_NO_PROPOSAL)
        return "(no proposal)";
    return out;
}

START_TEST(test_config_literal_spellings)
{
    char lit[128], alt[128];
    ck_assert_int_eq(config_literal("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", lit, sizeof lit, alt, sizeof alt), 1);
    EQ(lit, "ppo_micro_batch_size_per_gpu");
    EQ(alt, "");
    ck_assert_int_eq(config_literal("--max-tokens-per-gpu", lit, sizeof lit, alt, sizeof alt), 1);
    EQ(lit, "max_tokens_per_gpu");
    EQ(alt, "max-tokens-per-gpu");
    ck_assert_int_eq(config_literal("#SBATCH --mem", lit, sizeof lit, alt, sizeof alt), 1);
    EQ(lit, "#SBATCH --mem");
    /* prose, environment variables (hint texts name them) and short common names are not read */
    ck_assert_int_eq(config_literal("per-GPU micro-batch size (samples or tokens)", lit, sizeof lit, alt, sizeof alt), 0);
    ck_assert_int_eq(config_literal("PYTORCH_CUDA_ALLOC_CONF", lit, sizeof lit, alt, sizeof alt), 0);
    ck_assert_int_eq(config_literal("actor.backend", lit, sizeof lit, alt, sizeof alt), 0);
}
END_TEST

/* verl-project/verl#330: verl's pprint'ed config as a log collector kept it, indentation lost */
static const char VERL_330[] =
    "\xe3\x80\x90" "2025-02-20 23:16:43" "\xe3\x80\x91" "(main_task pid=8918) {'actor_rollout_ref': {'actor': {'clip_ratio': 0.2,\n"
    "\xe3\x80\x90" "2025-02-20 23:16:43" "\xe3\x80\x91" "(main_task pid=8918) 'entropy_coeff': 0.001,\n"
    "\xe3\x80\x90" "2025-02-20 23:16:43" "\xe3\x80\x91" "(main_task pid=8918) 'grad_clip': 1.0,\n"
    "\xe3\x80\x90" "2025-02-20 23:16:43" "\xe3\x80\x91" "(main_task pid=8918) 'kl_loss_coef': 0.001,\n"
    "\xe3\x80\x90" "2025-02-20 23:16:43" "\xe3\x80\x91" "(main_task pid=8918) 'kl_loss_type': 'low_var_kl',\n"
    "\xe3\x80\x90" "2025-02-20 23:16:43" "\xe3\x80\x91" "(main_task pid=8918) 'load_weight': True,\n"
    "\xe3\x80\x90" "2025-02-20 23:16:43" "\xe3\x80\x91" "(main_task pid=8918) 'megatron': {'num_layers_per_virtual_pipeline_stage': None,\n"
    "\xe3\x80\x90" "2025-02-20 23:16:43" "\xe3\x80\x91" "(main_task pid=8918) 'pipeline_model_parallel_size': 4,\n"
    "\xe3\x80\x90" "2025-02-20 23:16:43" "\xe3\x80\x91" "(main_task pid=8918) 'seed': 1,\n"
    "\xe3\x80\x90" "2025-02-20 23:16:43" "\xe3\x80\x91" "(main_task pid=8918) 'sequence_parallel': True,\n"
    "\xe3\x80\x90" "2025-02-20 23:16:43" "\xe3\x80\x91" "(main_task pid=8918) 'tensor_model_parallel_size': 8},\n"
    "\xe3\x80\x90" "2025-02-20 23:16:43" "\xe3\x80\x91" "(main_task pid=8918) 'optim': {'clip_grad': 1.0,\n";

START_TEST(test_config_verl_pprint_nesting_from_brackets)
{
    const char *lits[] = {"tensor_model_parallel_size", "pipeline_model_parallel_size", "entropy_coeff"};
    config_store *st = capture(VERL_330, lits, 3);
    EQ(path_of(st, "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"),
       "actor_rollout_ref.actor.megatron.tensor_model_parallel_size");
    EQ(val(st, "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"), "8");
    EQ(val(st, "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size"), "4");
    EQ(val(st, "actor_rollout_ref.actor.entropy_coeff"), "0.001");
    /* the actor's Megatron TP is not the rollout engine's TP */
    EQ(val(st, "actor_rollout_ref.rollout.tensor_model_parallel_size"), "(none)");
    config_store_free(st);
}
END_TEST

/* The scanner drops a processed region from its buffer: what the tracker counted of the dump before
 * (config_tracker_pass) still gives the enclosing keys of a setting printed after the cut. */
START_TEST(test_config_nesting_remembered_across_regions)
{
    const char *cut = strstr(VERL_330, "(main_task pid=8918) 'megatron'");
    ck_assert_ptr_nonnull(cut);
    while (cut > VERL_330 && cut[-1] != '\n')
        cut--;
    size_t first = (size_t)(cut - VERL_330);
    const char *lits[] = {"tensor_model_parallel_size", "entropy_coeff"};
    config_store *st = NULL;
    config_tracker *tr = config_tracker_new();
    /* region 1: the lines before the cut, one of them a setting (so the tracker is in use) */
    for (size_t s = 0, e; s < first; s = e + 1) {
        for (e = s; VERL_330[e] != '\n'; e++)
            ;
        ck_assert_int_ge(config_capture(&st, tr, lits[1], VERL_330, 0, s, e, "", "t.log", 0), 0);
    }
    config_tracker_pass(tr, VERL_330, 0, first);
    /* region 2: only the rest is in the buffer, at stream offset `first` */
    char *rest = strdup(cut);
    for (size_t s = 0, e; rest[s]; s = e + 1) {
        for (e = s; rest[e] != '\n'; e++)
            ;
        ck_assert_int_ge(config_capture(&st, tr, lits[0], rest, first, s, e, "", "t.log", 0), 0);
    }
    EQ(path_of(st, "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"),
       "actor_rollout_ref.actor.megatron.tensor_model_parallel_size");
    EQ(val(st, "actor_rollout_ref.actor.entropy_coeff"), "0.001");
    /* a tracker that lost its place (never used before the cut) knows only the line's own brackets */
    config_tracker_reset(tr);
    config_store *st2 = NULL;
    for (size_t s = 0, e; rest[s]; s = e + 1) {
        for (e = s; rest[e] != '\n'; e++)
            ;
        ck_assert_int_ge(config_capture(&st2, tr, lits[0], rest, first, s, e, "", "t.log", 0), 0);
    }
    EQ(path_of(st2, "tensor_model_parallel_size"), "megatron.tensor_model_parallel_size");
    free(rest);
    config_tracker_free(tr);
    config_store_free(st);
    config_store_free(st2);
}
END_TEST

/* hkust-nlp/simpleRL-reason#84: a fragment of verl's indented pprint dump under Ray's prefix */
static const char SIMPLERL_84[] =
    "(main_task pid=32544)                                    'log_prob_use_dynamic_bsz': False,\n"
    "(main_task pid=32544)                                    'max_num_batched_tokens': 10216,\n"
    "(main_task pid=32544)                                    'max_num_seqs': 1024,\n"
    "(main_task pid=32544)                                    'micro_rollout_batch_size': 1024,\n"
    "(main_task pid=32544)                                    'model_path': '/myname2/projects/20250428_simplerl_llm/models/Qwen2.5-7B',\n"
    "(main_task pid=32544)                                    'n': 8,\n"
    "(main_task pid=32544)                                    'name': 'vllm',\n"
    "(main_task pid=32544)                                    'tensor_model_parallel_size': 2,\n"
    "(main_task pid=32544)                                    'top_k': -1,\n"
    "(main_task pid=32544)                                    'top_p': 1}},\n";

START_TEST(test_config_verl_fragment_by_leaf)
{
    const char *lits[] = {"max_num_seqs", "max_num_batched_tokens", "tensor_model_parallel_size"};
    config_store *st = capture(SIMPLERL_84, lits, 3);
    /* no enclosing key in sight: the leaf alone stands for whichever key ends with it */
    EQ(path_of(st, "actor_rollout_ref.rollout.max_num_seqs"), "max_num_seqs");
    EQ(val(st, "actor_rollout_ref.rollout.max_num_seqs"), "1024");
    EQ(propose("decrease", val(st, "actor_rollout_ref.rollout.max_num_seqs")), "768");
    EQ(val(st, "actor_rollout_ref.rollout.max_num_batched_tokens"), "10216");
    EQ(propose("double", val(st, "actor_rollout_ref.rollout.tensor_model_parallel_size")), "4");
    config_store_free(st);
}
END_TEST

/* verl-project/verl#855 and #328: Hydra overrides echoed by `set -x` */
static const char VERL_855[] =
    "    actor_rollout_ref.actor.ppo_mini_batch_size=512 \\\n"
    "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16 \\\n"
    "    actor_rollout_ref.actor.use_dynamic_bsz=True \\\n"
    "    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=24000 \\\n"
    "    actor_rollout_ref.model.enable_gradient_checkpointing=True \\\n"
    "    actor_rollout_ref.actor.fsdp_config.param_offload=False \\\n"
    "    actor_rollout_ref.actor.fsdp_config.optimizer_offload=False \\\n"
    "actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \\\n"
    "actor_rollout_ref.ref.fsdp_config.param_offload=True \\\n";

START_TEST(test_config_verl_overrides)
{
    const char *lits[] = {"ppo_micro_batch_size_per_gpu", "param_offload", "optimizer_offload", "use_dynamic_bsz",
                          "gpu_memory_utilization", "enable_gradient_checkpointing"};
    config_store *st = capture(VERL_855, lits, 6);
    EQ(val(st, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"), "16");
    EQ(propose("halve", "16"), "8");
    EQ(val(st, "actor_rollout_ref.actor.fsdp_config.param_offload"), "False");
    EQ(propose("enable", "False"), "True");
    /* the reference model's offload is its own setting */
    EQ(val(st, "actor_rollout_ref.ref.fsdp_config.param_offload"), "True");
    EQ(propose("enable", val(st, "actor_rollout_ref.model.enable_gradient_checkpointing")), "(already)");
    EQ(val(st, "actor_rollout_ref.rollout.gpu_memory_utilization"), "0.6");
    EQ(propose("decrease", "0.6"), "0.5");
    /* a critic key is not answered by the actor's value */
    EQ(val(st, "critic.ppo_micro_batch_size_per_gpu"), "(none)");
    config_store_free(st);
}
END_TEST

/* verl-project/verl#2001: verl's YAML config as pasted with its indentation */
static const char VERL_2001[] =
    "        min_num_params: 0\n"
    "    megatron:\n"
    "      param_offload: False\n"
    "      grad_offload: False\n"
    "      optimizer_offload: False\n"
    "      tensor_model_parallel_size: 1\n"
    "    log_prob_micro_batch_size_per_gpu: 4\n";

/* A dotted override's prefix is its path, however the name is spelled: dashes read as underscores,
 * an empty component dropped, a path longer than CONFIG_MAX_COMPONENTS cut (its leaf then not kept),
 * and every occurrence of the name in the line read, after one inside a longer name. */
START_TEST(test_config_dotted_override_paths)
{
    static const char text[] =
        "trainer.actor-rollout.micro_batch_size=3 \\\n"
        "x..y.micro_batch_size=5\n"
        "a.b.c.d.e.f.g.micro_batch_size=6\n"
        "a.b.c.d.e.f.g.h.i.micro_batch_size=7\n"
        "ppo_micro_batch_size_per_gpu=1 critic.micro_batch_size=8 actor.micro_batch_size=9\n";
    const char *lits[] = {"micro_batch_size"};
    config_store *st = capture(text, lits, 1);
    ck_assert_ptr_nonnull(st);
    static const char *const want[][2] = {
        {"trainer.actor_rollout.micro_batch_size", "3"}, {"x.y.micro_batch_size", "5"},
        {"a.b.c.d.e.f.g.micro_batch_size", "6"},       {"a.b.c.d.e.f.g.h", "7"},
        {"critic.micro_batch_size", "8"},              {"actor.micro_batch_size", "9"},
    };
    ck_assert_uint_eq(st->n, sizeof want / sizeof *want);
    for (size_t i = 0; i < st->n; i++) {
        EQ(st->e[i].path, want[i][0]);
        EQ(st->e[i].value, want[i][1]);
    }
    /* a dashed name (a flag's spelling) in a dotted override: the path has underscores */
    const char *dashed[] = {"max-tokens-per-gpu"};
    config_store *st3 = capture("rollout.max-tokens-per-gpu=12\n", dashed, 1);
    ck_assert_ptr_nonnull(st3);
    ck_assert_uint_eq(st3->n, 1);
    EQ(st3->e[0].path, "rollout.max_tokens_per_gpu");
    config_store_free(st3);
    /* the same, handed the first occurrence as the scanner does */
    config_store *st2 = NULL;
    config_tracker *tr = config_tracker_new();
    const char *line = "ppo_micro_batch_size_per_gpu=1 critic.micro_batch_size=8 actor.micro_batch_size=9";
    size_t first = (size_t)(strstr(line, "micro_batch_size") - line);
    ck_assert_int_eq(config_capture_from(&st2, tr, lits[0], strlen(lits[0]), line, 0, 0, first, strlen(line), NULL,
                                         "", "t.log", 1),
                     2);
    ck_assert_uint_eq(st2->n, 2);
    EQ(st2->e[0].path, "critic.micro_batch_size");
    EQ(st2->e[1].path, "actor.micro_batch_size");
    EQ(st2->e[1].value, "9");
    config_tracker_free(tr);
    config_store_free(st2);
    config_store_free(st);
}
END_TEST

/* verl's config as YAML through Ray, a second worker's line (a longer prefix) after it. */
static const char YAML_RAY[] = "(TaskRunner pid=7) critic:\n"
                               "(TaskRunner pid=7)   ppo_micro_batch_size_per_gpu: 2\n"
                               "(TaskRunner pid=7)   model:\n"
                               "(TaskRunner pid=7)     fsdp_config:\n"
                               "(TaskRunner pid=7)       param_offload: true\n"
                               "(TaskRunner pid=7)   # comment\n"
                               "(TaskRunner pid=7)\n"
                               "(TaskRunner pid=7)   ppo_max_token_len_per_gpu: 8192\n"
                               "(TaskRunner pid=77)   ppo_epochs: 1\n"
                               "(TaskRunner pid=7)       grad_offload: false\n";

/* The YAML keys above a setting are remembered as the scan passes them: a block cut by a buffer
 * boundary gives each setting the path reading it whole gives. */
START_TEST(test_config_yaml_nesting_remembered_across_regions)
{
    const char *lits[] = {"ppo_micro_batch_size_per_gpu", "param_offload", "ppo_max_token_len_per_gpu", "ppo_epochs",
                          "grad_offload"};
    const char *want = "critic.ppo_micro_batch_size_per_gpu=2 critic.model.fsdp_config.param_offload=true "
                       "critic.ppo_max_token_len_per_gpu=8192 ppo_epochs=1 grad_offload=false ";
    size_t n = strlen(YAML_RAY), in_use = (size_t)(strstr(YAML_RAY, "   model:") - YAML_RAY);
    while (YAML_RAY[in_use - 1] != '\n')
        in_use--;
    /* no cut, or one after the first setting (before it the tracker is not in use: a cut there loses
     * what came before, as for brackets) */
    for (size_t cut = 0; cut < n; cut = cut ? cut + 1 : in_use) {
        if (cut && YAML_RAY[cut - 1] != '\n')
            continue;
        config_store *st = NULL;
        config_tracker *tr = config_tracker_new();
        const char *buf = YAML_RAY;
        size_t base = 0;
        for (size_t s = 0, e; s < n; s = e + 1) {
            if (s == cut && cut) { /* the scanner drops the processed region */
                config_tracker_pass(tr, buf, base, cut - base);
                buf += cut - base;
                base = cut;
            }
            for (e = s; YAML_RAY[e] != '\n'; e++)
                ;
            for (size_t j = 0; j < sizeof lits / sizeof *lits; j++)
                ck_assert_int_ge(config_capture(&st, tr, lits[j], buf, base, s - base, e - base, "", "t.log", 0), 0);
            if (s == 0) /* the first line is not a setting: the tracker is in use from the second */
                ck_assert_ptr_null(st);
        }
        char got[512] = "";
        for (size_t i = 0; i < st->n; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s=%s ", st->e[i].path, st->e[i].value);
        ck_assert_msg(strcmp(got, want) == 0, "cut at %zu: %s", cut, got);
        config_tracker_free(tr);
        config_store_free(st);
    }
}
END_TEST

START_TEST(test_config_yaml_nesting_from_indentation)
{
    const char *lits[] = {"param_offload", "grad_offload", "log_prob_micro_batch_size_per_gpu"};
    config_store *st = capture(VERL_2001, lits, 3);
    EQ(path_of(st, "actor_rollout_ref.actor.megatron.param_offload"), "megatron.param_offload");
    EQ(val(st, "actor_rollout_ref.actor.megatron.grad_offload"), "False");
    /* an FSDP key does not take the Megatron section's value */
    EQ(val(st, "actor_rollout_ref.actor.fsdp_config.param_offload"), "(none)");
    EQ(val(st, "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"), "4");
    config_store_free(st);
}
END_TEST

/* areal-project/AReaL#409: the user's AReaL YAML */
static const char AREAL_409[] =
    "allocation_mode: sglang.d4p1t1+d4p1t1\n"
    "cluster:\n"
    "  n_nodes: 1\n"
    "  n_gpus_per_node: 4\n"
    "max_concurrent_rollouts:1\n"
    "gconfig:\n"
    "  n_samples: 4\n"
    "  max_new_tokens: 4096\n"
    "mb_spec:\n"
    "    max_tokens_per_mb: 8192\n"
    "train_dataset:\n"
    "  batch_size: 4\n"
    "  max_length: 4096\n";

START_TEST(test_config_areal_yaml)
{
    const char *lits[] = {"max_tokens_per_mb", "allocation_mode", "max_new_tokens", "max_length",
                          "max_concurrent_rollouts"};
    config_store *st = capture(AREAL_409, lits, 5);
    EQ(path_of(st, "actor.mb_spec.max_tokens_per_mb"), "mb_spec.max_tokens_per_mb");
    EQ(val(st, "actor.mb_spec.max_tokens_per_mb"), "8192");
    EQ(propose("decrease", "8192"), "6144");
    EQ(val(st, "gconfig.max_new_tokens"), "4096");
    EQ(val(st, "train_dataset.max_length"), "4096");
    EQ(val(st, "rollout.max_concurrent_rollouts"), "1");
    /* a mode string has no arithmetic: shown, not changed */
    EQ(val(st, "allocation_mode"), "sglang.d4p1t1+d4p1t1");
    EQ(propose("increase", "sglang.d4p1t1+d4p1t1"), "(no proposal)");
    config_store_free(st);
}
END_TEST

/* OpenRLHF/OpenRLHF#1066: the launch command with its flags */
static const char OPENRLHF_1066[] =
    "   --vllm_tensor_parallel_size 2 \\\n"
    "   --vllm_gpu_memory_utilization 0.6 \\\n"
    "   --micro_train_batch_size 1 \\\n"
    "   --zero_stage 3 \\\n"
    "   --gradient_checkpointing \\\n"
    "   --vllm_sync_backend nccl \\\n"
    "   --enforce_eager \\\n"
    "   --vllm_enable_sleep \\\n"
    "   --adam_offload \\\n";

START_TEST(test_config_openrlhf_flags)
{
    const char *lits[] = {"vllm_gpu_memory_utilization", "micro_train_batch_size", "gradient_checkpointing",
                          "adam_offload", "vllm_tensor_parallel_size", "gpu_memory_utilization"};
    config_store *st = capture(OPENRLHF_1066, lits, 6);
    EQ(val(st, "--vllm_gpu_memory_utilization"), "0.6");
    EQ(val(st, "--micro_train_batch_size"), "1");
    /* one sample per GPU cannot be halved */
    EQ(propose("halve", "1"), "(no proposal)");
    EQ(val(st, "--gradient_checkpointing"), "true");
    EQ(propose("enable", "true"), "(already)");
    EQ(propose("disable", val(st, "--adam_offload")), "false");
    EQ(val(st, "--vllm_tensor_parallel_size"), "2");
    /* "vllm_gpu_memory_utilization" is a longer name, not vLLM's own gpu_memory_utilization */
    EQ(val(st, "gpu_memory_utilization"), "(none)");
    config_store_free(st);
}
END_TEST

/* sgl-project/sglang#1030: SGLang's ServerArgs repr */
static const char SGLANG_1030[] =
    "server_args=ServerArgs(model_path='NousResearch/Meta-Llama-3-8B-Instruct', "
    "tokenizer_path='NousResearch/Meta-Llama-3-8B-Instruct', tokenizer_mode='auto', load_format='auto', "
    "dtype='bfloat16', trust_remote_code=False, context_length=4096, quantization=None, "
    "served_model_name='NousResearch/Meta-Llama-3-8B-Instruct', chat_template=None, host='0.0.0.0', port=8000, "
    "additional_ports=[8001, 8002, 8003, 8004], mem_fraction_static=0.88, max_prefill_tokens=4096, max_run\n";

START_TEST(test_config_sglang_server_args)
{
    const char *lits[] = {"mem_fraction_static", "context_length"};
    config_store *st = capture(SGLANG_1030, lits, 2);
    EQ(path_of(st, "--mem-fraction-static"), "server_args.mem_fraction_static");
    EQ(val(st, "--mem-fraction-static"), "0.88");
    EQ(propose("decrease", "0.88"), "0.78");
    EQ(propose("increase", "0.88"), "0.93");
    EQ(val(st, "--context-length"), "4096");
    config_store_free(st);
}
END_TEST

/* nextflow-io/nextflow#5932: a job script's directives echoed into the job's output */
static const char SLURM_5932[] =
    "#SBATCH -J qe_test #Job name\n"
    "#SBATCH --time=744:00:00 #duration time\n"
    "#SBATCH --mem=64Gb\n";

START_TEST(test_config_sbatch_directives)
{
    const char *lits[] = {"#SBATCH --mem", "#SBATCH --time"};
    config_store *st = capture(SLURM_5932, lits, 2);
    EQ(val(st, "#SBATCH --mem"), "64Gb");
    EQ(propose("increase", "64Gb"), "96Gb");
    EQ(val(st, "#SBATCH --time"), "744:00:00");
    EQ(propose("increase", "744:00:00"), "(no proposal)");
    config_store_free(st);
}
END_TEST

START_TEST(test_config_last_value_wins_and_jobs_apart)
{
    const char *lits[] = {"ppo_micro_batch_size_per_gpu"};
    const char t1[] = "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=32 \\\n";
    const char t2[] = "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16 \\\n";
    config_store *st = NULL;
    config_tracker *tr = config_tracker_new();
    ck_assert_int_eq(config_capture(&st, tr, lits[0], t1, 0, 0, sizeof t1 - 2, "100", "a.log", 1), 1);
    ck_assert_int_eq(config_capture(&st, tr, lits[0], t2, 0, 0, sizeof t2 - 2, "100", "a.log", 9), 1);
    ck_assert_int_eq(config_capture(&st, tr, lits[0], t1, 0, 0, sizeof t1 - 2, "200", "b.log", 1), 1);
    config_tracker_free(tr);
    EQ(config_lookup(st, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "100")->value, "16");
    EQ(config_lookup(st, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "200")->value, "32");
    /* merging keeps each job's latest */
    config_store *dst = NULL;
    ck_assert_int_eq(config_store_merge(&dst, &st), 0);
    ck_assert_ptr_null(st);
    EQ(config_lookup(dst, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "100")->value, "16");
    config_store_free(dst);
}
END_TEST

/* The store's index (CONFIG_SLOTS) finds a setting read again without a search: with four times as
 * many paths as slots, read over and over in turn, each path keeps one entry and its latest value, and
 * a job id longer than an entry keeps (31 bytes) finds its entry again instead of adding one a read. */
START_TEST(test_config_reads_again_keep_one_entry_each)
{
    config_store *st = NULL;
    char path[64], value[16];
    const char *long_job = "job-0123456789abcdef0123456789abcdef0123";
    for (int round = 0; round < 5; round++)
        for (int k = 0; k < 4 * CONFIG_SLOTS; k++) {
            snprintf(path, sizeof path, "trainer.group%d.micro_batch_size", k);
            snprintf(value, sizeof value, "%d", round * 1000 + k);
            ck_assert_int_eq(config_put(&st, path, value, k % 2 ? long_job : "7", "a.log", (uint64_t)round), 0);
        }
    ck_assert_uint_eq(st->n, 4 * CONFIG_SLOTS);
    for (int k = 0; k < 4 * CONFIG_SLOTS; k++) {
        snprintf(path, sizeof path, "trainer.group%d.micro_batch_size", k);
        snprintf(value, sizeof value, "%d", 4000 + k);
        const config_entry *e = config_get(st, path, k % 2 ? "" : "7");
        ck_assert_ptr_nonnull(e);
        EQ(e->value, value);
    }
    config_store_free(st);
}
END_TEST

/* A setting read again where the enclosing keys are the same finds its entry without building its
 * path (config_tracker.memo); where they changed it must not: two blocks of one dump name the same
 * setting, the tracker left with as many brackets (or YAML lines) open after the second block's
 * opener as after the first's. Each dump is printed twice with other values, the second setting of a
 * block repeating the first (a memo hit). Dotted names of the same length are told apart by text. */
static const char *exact(const config_store *st, const char *path)
{
    const config_entry *e = config_get(st, path, "");
    return e ? e->value : "(none)";
}

/* text read line by line holds two entries: path a = va and path b = vb */
static void two_entries(const char *text, const char *a, const char *va, const char *b, const char *vb)
{
    const char *lits[] = {"ppo_micro_batch_size_per_gpu"};
    config_store *st = capture(text, lits, 1);
    ck_assert_uint_eq(st->n, 2);
    EQ(exact(st, a), va);
    EQ(exact(st, b), vb);
    config_store_free(st);
}

START_TEST(test_config_dotted_name_read_again_is_the_same_name_whole)
{
    /* A dotted name read again goes to its entry without the walk back over its prefix (the last such
     * name of each setting is remembered: by the scanner's thread with its entry, dotted_again, and by a
     * thread reading ahead as text, config_prefixes, which capture() also runs), but only when the whole
     * name is that one: a longer name that ends the same ("xab.cd.", "z.ab.cd.", "x-ab.cd.") is another
     * setting. */
    const char text[] = "ab.cd.ppo_micro_batch_size_per_gpu=1\n"
                        "xab.cd.ppo_micro_batch_size_per_gpu=2\n"
                        "ab.cd.ppo_micro_batch_size_per_gpu=3\n"
                        "z.ab.cd.ppo_micro_batch_size_per_gpu=4\n"
                        "ab.cd.ppo_micro_batch_size_per_gpu=5\n"
                        "  ab.cd.ppo_micro_batch_size_per_gpu=6 x.ab.cd.ppo_micro_batch_size_per_gpu=7\n"
                        "x-ab.cd.ppo_micro_batch_size_per_gpu=8\n";
    const char *lits[] = {"ppo_micro_batch_size_per_gpu"};
    config_store *st = capture(text, lits, 1);
    ck_assert_uint_eq(st->n, 5);
    EQ(exact(st, "ab.cd.ppo_micro_batch_size_per_gpu"), "6");
    EQ(exact(st, "xab.cd.ppo_micro_batch_size_per_gpu"), "2");
    EQ(exact(st, "z.ab.cd.ppo_micro_batch_size_per_gpu"), "4");
    EQ(exact(st, "x.ab.cd.ppo_micro_batch_size_per_gpu"), "7");
    EQ(exact(st, "x_ab.cd.ppo_micro_batch_size_per_gpu"), "8"); /* a dashed prefix: its path has '_' */
    config_store_free(st);
}
END_TEST

START_TEST(test_config_memo_follows_the_enclosing_keys)
{
    const char brace[] = "(TaskRunner pid=1) {'actor': {\n"
                         "(TaskRunner pid=1)     'ppo_micro_batch_size_per_gpu': 2,\n"
                         "(TaskRunner pid=1)     'ppo_micro_batch_size_per_gpu': 3},\n"
                         "(TaskRunner pid=1)  'critic': {\n"
                         "(TaskRunner pid=1)     'ppo_micro_batch_size_per_gpu': 4,\n"
                         "(TaskRunner pid=1)     'x': 1}}\n"
                         "(TaskRunner pid=1) {'actor': {\n"
                         "(TaskRunner pid=1)     'ppo_micro_batch_size_per_gpu': 8,\n"
                         "(TaskRunner pid=1)     'x': 1},\n"
                         "(TaskRunner pid=1)  'critic': {\n"
                         "(TaskRunner pid=1)     'ppo_micro_batch_size_per_gpu': 16,\n"
                         "(TaskRunner pid=1)     'ppo_micro_batch_size_per_gpu': 32}}\n";
    two_entries(brace, "actor.ppo_micro_batch_size_per_gpu", "8", "critic.ppo_micro_batch_size_per_gpu", "32");

    const char yaml[] = "actor:\n"
                        "  ppo_micro_batch_size_per_gpu: 2\n"
                        "  ppo_micro_batch_size_per_gpu: 3\n"
                        "critic:\n"
                        "  ppo_micro_batch_size_per_gpu: 4\n"
                        "actor:\n"
                        "  ppo_micro_batch_size_per_gpu: 8\n"
                        "critic:\n"
                        "  ppo_micro_batch_size_per_gpu: 16\n"
                        "  ppo_micro_batch_size_per_gpu: 32\n";
    two_entries(yaml, "actor.ppo_micro_batch_size_per_gpu", "8", "critic.ppo_micro_batch_size_per_gpu", "32");

    const char dotted[] = "  ab.ppo_micro_batch_size_per_gpu=1 \\\n"
                          "  cd.ppo_micro_batch_size_per_gpu=2 \\\n"
                          "  ab.ppo_micro_batch_size_per_gpu=3 \\\n"
                          "  ab.ppo_micro_batch_size_per_gpu=5 \\\n";
    two_entries(dotted, "ab.ppo_micro_batch_size_per_gpu", "5", "cd.ppo_micro_batch_size_per_gpu", "2");
}
END_TEST

START_TEST(test_config_names_in_code_are_not_values)
{
    const char *lits[] = {"ppo_micro_batch_size_per_gpu", "ppo_mini_batch_size"};
    /* source lines quoted in verl-project/verl#405 and a traceback's code line from mll-lab-nu/RAGEN#22:
     * they name the keys without setting them */
    const char text[] =
        "micro_batches = mini_batch.split(self.config.ppo_micro_batch_size_per_gpu)\n"
        "self.gradient_accumulation = self.config.ppo_mini_batch_size // self.config.ppo_micro_batch_size_per_gpu\n"
        "(main_task pid=3666690)     assert self.config.ppo_mini_batch_size % self.config.ppo_micro_batch_size == 0\n";
    config_store *st = capture(text, lits, 2);
    ck_assert_ptr_null(st);
}
END_TEST

START_TEST(test_config_name_whole_is_where_a_capture_may_read)
{
    /* config_name_whole lets a scanner drop an occurrence before it costs a line: it must say 0 only
     * where config_capture reads nothing, and 1 where it reads a value */
    static const struct {
        const char *line;
        int whole;
    } cases[] = {
        {"micro_batch_size: 4", 1},
        {"  micro_batch_size=4", 1},
        {"--micro_batch_size 4", 1},
        {"actor.micro_batch_size=4", 1},
        {"'micro_batch_size': 4,", 1},
        {"ppo_micro_batch_size: 4", 0},   /* a longer name: an identifier byte before */
        {"xmicro_batch_size=4", 0},
        {"9micro_batch_size=4", 0},
        {"micro_batch_size_per_gpu: 4", 0}, /* ... or after */
        {"micro_batch_size-x: 4", 0},       /* a dashed name goes on */
        {"micro_batch_sizeZ=4", 0},
    };
    const char *lit = "micro_batch_size";
    size_t len = strlen(lit);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64];
        int n = snprintf(buf, sizeof buf, "\n%s\n", cases[i].line);
        size_t p = (size_t)(strstr(buf + 1, lit) - buf);
        ck_assert_msg(config_name_whole(buf, p, len, (size_t)n) == cases[i].whole, "%s", cases[i].line);
        config_store *st = NULL;
        config_tracker *tr = config_tracker_new();
        int got = config_capture(&st, tr, lit, buf, 0, 1, (size_t)n - 1, "", "t.log", 2);
        ck_assert_msg(got == cases[i].whole, "%s: %d values", cases[i].line, got);
        config_tracker_free(tr);
        config_store_free(st);
    }
    /* the bytes it may not read: none before the buffer, none from `avail` on */
    ck_assert_int_eq(config_name_whole("micro_batch_size", 0, len, len), 1);
    ck_assert_int_eq(config_name_whole("micro_batch_sizeX", 0, len, len), 1);
    ck_assert_int_eq(config_name_whole("micro_batch_sizeX", 0, len, len + 1), 0);
}
END_TEST

START_TEST(test_config_read_again_keeps_value_and_file_right)
{
    /* touch keeps an entry's strings: a value shorter, then longer, than the one it holds, and the
     * file of each source (compared again only when the tracker was reset: a new source) */
    const char *lit = "micro_batch_size";
    const char *lines[] = {"actor.micro_batch_size=1234\n", "actor.micro_batch_size=5\n",
                           "actor.micro_batch_size=123456\n", "actor.micro_batch_size=77\n"};
    const char *files[] = {"a.log", "a.log", "b.log", "c.log"};
    const char *want[] = {"1234", "5", "123456", "77"};
    config_store *st = NULL;
    config_tracker *tr = config_tracker_new(), *other = config_tracker_new();
    for (size_t i = 0; i < 4; i++) {
        if (i == 2)
            config_tracker_reset(tr); /* a new source through the same tracker */
        config_tracker *t = i == 3 ? other : tr; /* and one through another scanner's */
        ck_assert_int_eq(config_capture(&st, t, lit, lines[i], 0, 0, strlen(lines[i]) - 1, "", files[i], i + 1), 1);
        ck_assert_uint_eq(st->n, 1);
        EQ(st->e[0].value, want[i]);
        EQ(st->e[0].file, files[i]);
        ck_assert_uint_eq(st->e[0].line, i + 1);
    }
    config_tracker_free(tr);
    config_tracker_free(other);
    config_store_free(st);
}
END_TEST

START_TEST(test_config_propose_rules)
{
    EQ(propose("halve", "32"), "16");
    EQ(propose("halve", "0.5"), "0.25");
    EQ(propose("double", "1"), "2");
    EQ(propose("decrease", "12288"), "9216");
    EQ(propose("decrease", "0.1"), "(no proposal)");
    EQ(propose("increase", "0.95"), "(no proposal)");
    EQ(propose("increase", "1073741824"), "1610612736");
    EQ(propose("enable", "None"), "True");
    EQ(propose("enable", "null"), "true");
    EQ(propose("disable", "True"), "False");
    EQ(propose("set:fsdp2", "fsdp"), "fsdp2");
    EQ(propose("set:fsdp2", "fsdp2"), "(already)");
    EQ(propose("set:<path>", "x"), "(no proposal)");
    EQ(propose("halve", "auto"), "(no proposal)");
}
END_TEST

/* Versions compare by their release numbers; local and pre-release suffixes do not count. */
START_TEST(test_config_version_compare)
{
    static const struct {
        const char *a, *b;
        int sign;
    } cases[] = {
        {"2.0.1", "2.1", -1},
        {"2.1.0+cu121", "2.1", 0},
        {"1.13.0a0+gitunknown", "2.1", -1},
        {"2.10.0", "2.9", 1},
        {"0.7.4.dev390+gdebd6bbf", "0.8", -1},
        {"0.19.1rc1.dev241", "0.19.1", 0},
        {"3", "2.1", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int c = version_cmp(cases[i].a, cases[i].b);
        ck_assert_msg((c > 0) - (c < 0) == cases[i].sign, "%s vs %s: %d", cases[i].a, cases[i].b, c);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("capture");
    tcase_add_test(tc, test_config_literal_spellings);
    tcase_add_test(tc, test_config_verl_pprint_nesting_from_brackets);
    tcase_add_test(tc, test_config_nesting_remembered_across_regions);
    tcase_add_test(tc, test_config_verl_fragment_by_leaf);
    tcase_add_test(tc, test_config_verl_overrides);
    tcase_add_test(tc, test_config_dotted_override_paths);
    tcase_add_test(tc, test_config_yaml_nesting_from_indentation);
    tcase_add_test(tc, test_config_yaml_nesting_remembered_across_regions);
    tcase_add_test(tc, test_config_areal_yaml);
    tcase_add_test(tc, test_config_openrlhf_flags);
    tcase_add_test(tc, test_config_sglang_server_args);
    tcase_add_test(tc, test_config_sbatch_directives);
    tcase_add_test(tc, test_config_last_value_wins_and_jobs_apart);
    tcase_add_test(tc, test_config_reads_again_keep_one_entry_each);
    tcase_add_test(tc, test_config_memo_follows_the_enclosing_keys);
    tcase_add_test(tc, test_config_dotted_name_read_again_is_the_same_name_whole);
    tcase_add_test(tc, test_config_names_in_code_are_not_values);
    tcase_add_test(tc, test_config_name_whole_is_where_a_capture_may_read);
    tcase_add_test(tc, test_config_read_again_keeps_value_and_file_right);
    tcase_add_test(tc, test_config_propose_rules);
    tcase_add_test(tc, test_config_version_compare);
    suite_add_tcase(s, tc);
    return check_run(s);
}
