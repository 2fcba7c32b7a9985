/* check_story.c - the story module: jobs, one failure's windows joined into one finding, causes before
 * their consequences, and a cause elected the same whatever order the inputs came in.
 *
 * Events are given to story_add directly, as the scanner and the dump readers give them; patterns are
 * built here with the file (family) they would come from, since that names the window they are. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "membuf.h"

/* the event tables below leave trailing fields (rank, pid, numbers, kind) out where they do not matter */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include "story/story.h"

static pdb_pattern P_OOM = {.id = "cuda_oom.t", .file = "pytorch.json", .cls = CLS_CUDA_OOM, .engine = -1, .phase = -1};
static pdb_pattern P_TIMEOUT = {.id = "nccl_timeout.t", .file = "nccl.json", .cls = CLS_NCCL_TIMEOUT, .engine = -1,
                                .phase = -1, .echo = 1};
static pdb_pattern P_GLOO = {.id = "nccl_error.t", .file = "gloo.json", .cls = CLS_NCCL_ERROR, .engine = -1,
                             .phase = -1, .echo = 1};
static pdb_pattern P_KERNEL = {.id = "host_oom_kill.k", .file = "kernel.json", .cls = CLS_HOST_OOM_KILL, .engine = -1,
                               .phase = -1};
static pdb_pattern P_LAUNCHER = {.id = "host_oom_kill.l", .file = "torchelastic.json", .cls = CLS_HOST_OOM_KILL,
                                 .engine = -1, .phase = -1, .echo = 1};
static pdb_pattern P_SLURM = {.id = "host_oom_kill.s", .file = "slurm.json", .cls = CLS_HOST_OOM_KILL, .engine = -1,
                              .phase = -1};
static pdb_pattern P_SEGV = {.id = "segfault.t", .file = "python.json", .cls = CLS_SEGFAULT, .engine = -1, .phase = -1,
                             .echo = 1};
static pdb_pattern P_CHILD = {.id = "child_failed.t", .file = "torchelastic.json", .cls = CLS_CHILD_FAILED,
                              .engine = -1, .phase = -1, .echo = 1};

typedef struct {
    const pdb_pattern *p;
    const char *text; /* the matched text (what groups lines) */
    const char *path;
    uint64_t line;
    const char *job, *rank, *pid, *host;
    const char *mem; /* JSON object of numbers, or NULL */
    const char *kind;
    const char *ray_job; /* from a Ray worker log's name, or NULL */
} ev_spec;

static long add(story *s, size_t input, const ev_spec *e)
{
    story_event ev = {
        .pattern = e->p,
        .phase = PH_UNKNOWN,
        .framework = -1,
        .match = e->text,
        .match_len = strlen(e->text),
        .evidence = e->text,
        .evidence_len = strlen(e->text),
        .memory = e->mem ? cJSON_Parse(e->mem) : NULL,
        .input = input,
        .path = e->path,
        .line = e->line,
        .rank = e->rank,
        .pid = e->pid,
        .host = e->host,
        .job_id = e->job ? e->job : "",
        .kind = e->kind,
        .ray_job = e->ray_job,
        .merge_into = -1,
    };
    return story_add(s, &ev);
}

/* A story of the events, each source scanned into its own story and merged in the order given, as the
 * driver does with its inputs. */
static story *tell(const ev_spec *evs, size_t n, const size_t *order, const char *scan_job)
{
    story *all = story_new();
    ck_assert_ptr_nonnull(all);
    for (size_t k = 0; k < n; k++) {
        const ev_spec *e = &evs[order ? order[k] : k];
        story *one = story_new();
        ck_assert_ptr_nonnull(one);
        ck_assert_int_ge(add(one, k, e), 0);
        ck_assert_int_eq(story_merge(all, one), 0);
        story_free(one);
    }
    ck_assert_int_eq(story_finish(all, scan_job), 0);
    return all;
}

static const finding *find(const story *s, const pdb_pattern *p, const char *path)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->f[i].pattern == p && (!path || strcmp(s->f[i].first.path, path) == 0))
            return &s->f[i];
    ck_abort_msg("no finding of %s in %s", p->id, path ? path : "any source");
    return NULL;
}

static const char *cause_id(const story *s, const finding *f) { return f->caused_by >= 0 ? s->f[f->caused_by].id : ""; }

static size_t reported(const story *s)
{
    size_t *order = malloc((s->n + 1) * sizeof *order);
    ck_assert_ptr_nonnull(order);
    size_t n = story_order(s, order);
    free(order);
    return n;
}

#define OOM_TEXT "CUDA out of memory. Tried to allocate 786.00 MiB"
#define TIMEOUT_TEXT "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, OpType=ALLREDUCE"

START_TEST(test_story_run_folder_from_the_name)
{
    static const struct {
        const char *path, *member, *want;
        int attempt;
    } cases[] = {
        {"a/job/logs/none_x1/attempt_1/0/stderr.log", NULL, "a/job", 1},
        {"./a//job/torchrun.out", NULL, "a/job", -1},
        {"exp/run3/rank2/out.log", NULL, "exp/run3", -1},
        {"exp/run3/../run4/out.log", NULL, "exp/run4", -1},
        {"/abs/x/gpu-node-3/y.log", NULL, "/abs/x", -1},
        {"train.log", NULL, "", -1},
        {"none_x1/attempt_0/1/error.json", NULL, "", 0},
        {"runs.tar.gz", "runA/out.log", "runs.tar.gz/runA", -1},
        {"exp/2/out.log", NULL, "exp/2", -1}, /* a numbered run is not a rank */
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char out[96];
        int attempt = 7;
        story_run_folder(cases[k].path, cases[k].member, out, sizeof out, &attempt);
        ck_assert_msg(strcmp(out, cases[k].want) == 0 && attempt == cases[k].attempt, "%s: %s attempt %d", cases[k].path,
                      out, attempt);
    }
}
END_TEST

/* the finding of pattern p one of whose windows is path (lines of one run merge, whichever came first) */
static const finding *find_seen(const story *s, const pdb_pattern *p, const char *path)
{
    for (size_t i = 0; i < s->n; i++)
        for (size_t k = 0; s->f[i].pattern == p && k < s->f[i].n_windows; k++)
            if (strcmp(s->f[i].windows[k].path, path) == 0)
                return &s->f[i];
    ck_abort_msg("no finding of %s seen in %s", p->id, path);
    return NULL;
}

#define GLOO_TEXT "RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:38123"

START_TEST(test_story_runs_without_ids_stay_apart)
{
    /* two torchrun runs in their own folders, no job id anywhere: runA's rank 1 ran out of memory and
     * rank 0 echoed it; runB's rank 0 echoed the same words with no cause in its own files */
    ev_spec evs[] = {
        {&P_OOM, OOM_TEXT, "runs/runA/logs/none_a/attempt_0/1/stderr.log", 13},
        {&P_GLOO, GLOO_TEXT, "runs/runA/logs/none_a/attempt_0/0/stderr.log", 13},
        {&P_GLOO, GLOO_TEXT, "runs/runA/torchrun.out", 30},
        {&P_GLOO, GLOO_TEXT, "runs/runB/torchrun.out", 30},
        {&P_CHILD, "ChildFailedError", "runs/runB/torchrun.out", 60},
    };
    size_t fwd[] = {0, 1, 2, 3, 4}, rev[] = {4, 3, 2, 1, 0}, mid[] = {3, 0, 4, 2, 1};
    const size_t *orders[] = {fwd, rev, mid};
    for (int o = 0; o < 3; o++) {
        story *s = tell(evs, 5, orders[o], "");
        const finding *oom = find(s, &P_OOM, NULL), *ga = find_seen(s, &P_GLOO, "runs/runA/logs/none_a/attempt_0/0/stderr.log"),
                      *gb = find_seen(s, &P_GLOO, "runs/runB/torchrun.out"), *child = find(s, &P_CHILD, NULL);
        ck_assert_str_eq(oom->run, "runA");
        ck_assert_str_eq(gb->run, "runB");
        ck_assert_msg(ga != gb && strcmp(ga->id, gb->id) != 0, "order %d: two runs' echoes were one finding", o);
        ck_assert_str_eq(cause_id(s, ga), oom->id);
        ck_assert_msg(gb->is_root && gb->caused_by < 0, "order %d: runB's echo was given runA's OOM as cause", o);
        ck_assert_str_ne(cause_id(s, child), oom->id);
        ck_assert_uint_eq(s->n_jobs, 2);
        story_free(s);
    }
    /* one run alone keeps its old ids: no run is named */
    story *one = tell(evs, 3, NULL, "");
    ck_assert_str_eq(find(one, &P_OOM, NULL)->run, "");
    story_free(one);
}
END_TEST

START_TEST(test_story_attempts_never_cause_each_other)
{
    /* torchrun restarted its workers: attempt 0's rank 1 ran out of memory; in attempt 1 rank 0 timed
     * out on its own */
    ev_spec evs[] = {
        {&P_OOM, OOM_TEXT, "run/logs/none_a/attempt_0/1/stderr.log", 13},
        {&P_TIMEOUT, TIMEOUT_TEXT, "run/logs/none_a/attempt_1/0/stderr.log", 20},
    };
    story *s = tell(evs, 2, NULL, "");
    const finding *t = find(s, &P_TIMEOUT, NULL);
    ck_assert_int_eq(t->attempt, 1);
    ck_assert_msg(t->is_root && t->caused_by < 0, "attempt 1's timeout was given attempt 0's OOM as cause");
    story_free(s);
}
END_TEST

/* torchrun --max_restarts 1 printed both attempts to one console, with only its failed-worker report
 * between them (fixtures/realjobs/attempts_appended): the same failure in both attempts is two findings,
 * and each attempt's echo follows its own attempt's failure. */
START_TEST(test_story_attempts_appended_to_one_log)
{
    static pdb_pattern failed = {.id = "child_failed.torchelastic_failed_exitcode", .file = "torchelastic.json",
                                 .cls = CLS_CHILD_FAILED, .engine = -1, .phase = -1, .echo = 1};
    const char *gloo = "Connection closed by peer [127.0.0.1]:7599";
    ev_spec evs[] = {
        {&P_OOM, OOM_TEXT, "job/torchrun.out", 17, NULL, "1"},
        {&P_GLOO, gloo, "job/torchrun.out", 30, NULL, "0"},
        {&failed, "failed (exitcode: 1) local_rank: 1", "job/torchrun.out", 32},
        {&P_OOM, OOM_TEXT, "job/torchrun.out", 40, NULL, "1"},
        {&P_GLOO, gloo, "job/torchrun.out", 45, NULL, "0"},
    };
    story *s = story_new();
    ck_assert_ptr_nonnull(s);
    long idx[5];
    for (size_t k = 0; k < 5; k++)
        ck_assert_int_ge(idx[k] = add(s, 0, &evs[k]), 0);
    ck_assert_int_eq(story_finish(s, ""), 0);
    ck_assert_msg(idx[0] != idx[3] && idx[1] != idx[4], "two attempts' lines were grouped as one failure");
    const finding *oom0 = &s->f[idx[0]], *oom1 = &s->f[idx[3]];
    ck_assert_int_eq(oom0->attempt, 0);
    ck_assert_int_eq(oom1->attempt, 1);
    ck_assert_msg(oom0->is_root && oom1->is_root, "each attempt keeps its root");
    ck_assert_int_eq(s->f[idx[1]].caused_by, idx[0]);
    ck_assert_int_eq(s->f[idx[4]].caused_by, idx[3]);
    story_free(s);
}
END_TEST

START_TEST(test_story_kill_phase_not_from_the_launcher)
{
    /* the kernel killed rank 0 (its line has no phase); torchrun's summary of the kill, printed under
     * rank 1's gloo echo through backward, was given that phase: the kill's phase is not it */
    story *s = story_new();
    ck_assert_ptr_nonnull(s);
    ev_spec k = {&P_KERNEL, "Memory cgroup out of memory: Killed process 12205 (python3)", "job/dmesg.log", 40, NULL,
                 NULL, "12205"};
    ck_assert_int_ge(add(s, 0, &k), 0);
    story_event ev = {.pattern = &P_LAUNCHER, .phase = PH_BACKWARD, .phase_evidence = "traceback frame run_backward",
                      .framework = -1, .match = "exitcode  : -9 (pid: 12205)", .match_len = 27,
                      .evidence = "exitcode  : -9 (pid: 12205)", .evidence_len = 27, .input = 1,
                      .path = "job/torchrun.out", .line = 45, .pid = "12205", .job_id = "", .merge_into = -1};
    ck_assert_int_ge(story_add(s, &ev), 0);
    ck_assert_int_eq(story_finish(s, ""), 0);
    ck_assert_uint_eq(reported(s), 1);
    const finding *f = find(s, &P_KERNEL, NULL);
    ck_assert_int_lt(f->joined_into, 0);
    ck_assert_int_eq(f->phase, PH_UNKNOWN);
    story_free(s);
}
END_TEST

/* A finding with a phase, weak or strong, added to `s` (phase evidence as the scanner words it). */
static void add_phased(story *s, size_t input, const ev_spec *e, tax_phase phase, int weak, const char *why)
{
    story_event ev = {.pattern = e->p, .phase = phase, .phase_weak = weak, .phase_evidence = why,
                      .framework = -1, .match = e->text, .match_len = strlen(e->text), .evidence = e->text,
                      .evidence_len = strlen(e->text), .input = input, .path = e->path, .line = e->line,
                      .rank = e->rank, .job_id = e->job ? e->job : "", .merge_into = -1};
    ck_assert_int_ge(story_add(s, &ev), 0);
}

#define SETUP_TIMEOUT_TEXT "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST"
#define INIT_ERR_TEXT "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317"

START_TEST(test_story_weak_phase_gives_way_to_the_jobs_strong_one)
{
    /* Rank 0's watchdog timeout has nothing but its class to go on (communication, weak); rank 1's
     * NCCL error came through its init_model frame (model_init, strong) in the same job: the
     * timeout's phase is start-up, strong, and its evidence names where that was read. */
    story *s = story_new();
    ck_assert_ptr_nonnull(s);
    ev_spec t = {&P_TIMEOUT, SETUP_TIMEOUT_TEXT, "job/rank0.log", 10, "77"};
    ev_spec e = {&P_GLOO, INIT_ERR_TEXT, "job/rank1.log", 30, "77"};
    add_phased(s, 0, &t, PH_COMMUNICATION, 1, "weak: a nccl_timeout with nothing else pointing to a phase");
    add_phased(s, 1, &e, PH_MODEL_INIT, 0, "traceback frame init_model in fsdp_workers.py (line 29)");
    ck_assert_int_eq(story_finish(s, ""), 0);
    const finding *f = find(s, &P_TIMEOUT, NULL);
    ck_assert_int_eq(f->phase, PH_MODEL_INIT);
    ck_assert_int_eq(f->phase_weak, 0);
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, "init_model"));
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, find(s, &P_GLOO, NULL)->id));
    /* story_finish again (a stream re-tells the story): the same answer, not evidence nested twice */
    char *was = strdup(f->phase_evidence);
    ck_assert_int_eq(story_finish(s, ""), 0);
    f = find(s, &P_TIMEOUT, NULL);
    ck_assert_int_eq(f->phase, PH_MODEL_INIT);
    ck_assert_str_eq(f->phase_evidence, was);
    free(was);
    story_free(s);
}
END_TEST

START_TEST(test_story_weak_phase_stays_when_the_job_disagrees)
{
    /* two strong readings in the job that disagree (start-up on rank 1, backward on rank 2), neither
     * of them the timeout's cause: the weak phase stays; so does a job's weak phase beside another
     * job's strong one */
    story *s = story_new();
    ck_assert_ptr_nonnull(s);
    ev_spec t = {&P_TIMEOUT, SETUP_TIMEOUT_TEXT, "job/rank0.log", 10, "77"};
    ev_spec e = {&P_GLOO, INIT_ERR_TEXT, "job/rank1.log", 30, "77"};
    ev_spec c = {&P_SEGV, "Fatal Python error: Segmentation fault", "job/rank2.log", 5, "77"};
    ev_spec other = {&P_TIMEOUT, TIMEOUT_TEXT, "other/rank0.log", 10, "78"};
    ev_spec o2 = {&P_GLOO, INIT_ERR_TEXT, "other/rank1.log", 12, "79"};
    add_phased(s, 0, &t, PH_COMMUNICATION, 1, "weak: a nccl_timeout with nothing else pointing to a phase");
    add_phased(s, 1, &e, PH_MODEL_INIT, 0, "traceback frame init_model in fsdp_workers.py (line 29)");
    add_phased(s, 2, &c, PH_BACKWARD, 0, "traceback frame loss.backward( in train.py (line 3)");
    add_phased(s, 3, &other, PH_COMMUNICATION, 1, "weak: a nccl_timeout with nothing else pointing to a phase");
    add_phased(s, 4, &o2, PH_MODEL_INIT, 0, "traceback frame init_model in fsdp_workers.py (line 29)");
    ck_assert_int_eq(story_finish(s, ""), 0);
    const finding *f = find(s, &P_TIMEOUT, "job/rank0.log");
    ck_assert_int_lt(f->caused_by, 0); /* the timeout comes first: the crash and the error follow it */
    ck_assert_int_eq(f->phase, PH_COMMUNICATION);
    ck_assert_int_eq(f->phase_weak, 1);
    f = find(s, &P_TIMEOUT, "other/rank0.log");
    ck_assert_int_eq(f->phase, PH_COMMUNICATION);
    ck_assert_int_eq(f->phase_weak, 1);
    story_free(s);
}
END_TEST

START_TEST(test_story_jobs_never_share_a_cause)
{
    /* slurm-1001.out ran out of memory; slurm-1002.out, another job, timed out on its own */
    ev_spec evs[] = {
        {&P_OOM, OOM_TEXT, "slurm-1001.out", 5, "1001"},
        {&P_TIMEOUT, TIMEOUT_TEXT, "slurm-1002.out", 9, "1002"},
        {&P_TIMEOUT, TIMEOUT_TEXT, "slurm-1001.out", 40, "1001"},
    };
    story *s = tell(evs, 3, NULL, "");
    const finding *oom = find(s, &P_OOM, NULL), *t1 = find(s, &P_TIMEOUT, "slurm-1001.out"),
                  *t2 = find(s, &P_TIMEOUT, "slurm-1002.out");
    ck_assert_str_eq(t1->job, "1001");
    ck_assert_str_eq(t2->job, "1002");
    ck_assert(!t1->is_root);
    ck_assert_str_eq(cause_id(s, t1), oom->id);
    ck_assert_msg(t2->is_root && t2->caused_by < 0, "job 1002's timeout was given job 1001's OOM as cause");
    ck_assert_str_ne(t1->id, t2->id);
    ck_assert_uint_eq(s->n_jobs, 2);
    story_free(s);
}
END_TEST

START_TEST(test_story_cause_independent_of_input_order)
{
    /* two ranks ran out of memory, a third timed out; no stamps order them */
    ev_spec evs[] = {
        {&P_OOM, OOM_TEXT, "rank5.log", 80, "7", "5"},
        {&P_TIMEOUT, TIMEOUT_TEXT, "rank0.log", 3, "7", "0"},
        {&P_OOM, "CUDA out of memory. Tried to allocate 2.00 GiB", "rank3.log", 12, "7", "3"},
    };
    size_t fwd[] = {0, 1, 2}, rev[] = {2, 1, 0}, mid[] = {1, 0, 2};
    const size_t *orders[] = {fwd, rev, mid};
    char first[17] = "";
    for (int o = 0; o < 3; o++) {
        story *s = tell(evs, 3, orders[o], "");
        const finding *t = find(s, &P_TIMEOUT, NULL);
        ck_assert(!t->is_root);
        if (o == 0)
            snprintf(first, sizeof first, "%s", cause_id(s, t));
        else
            ck_assert_msg(strcmp(first, cause_id(s, t)) == 0, "input order %d changed caused_by", o);
        story_free(s);
    }
}
END_TEST

START_TEST(test_story_no_consequence_of_a_later_line)
{
    /* one file, no stamps: an NCCL timeout at line 2 cannot follow from an OOM printed at line 70 */
    story *s = story_new();
    ev_spec t = {&P_TIMEOUT, TIMEOUT_TEXT, "train.log", 2}, o = {&P_OOM, OOM_TEXT, "train.log", 70};
    ck_assert_int_ge(add(s, 0, &t), 0);
    ck_assert_int_ge(add(s, 0, &o), 0);
    ck_assert_int_eq(story_finish(s, ""), 0);
    const finding *tf = find(s, &P_TIMEOUT, NULL);
    ck_assert_msg(tf->is_root && tf->caused_by < 0, "a timeout was made the consequence of an OOM printed after it");
    story_free(s);

    /* the other way round it does */
    s = story_new();
    ev_spec o2 = {&P_OOM, OOM_TEXT, "train.log", 2}, t2 = {&P_TIMEOUT, TIMEOUT_TEXT, "train.log", 70};
    ck_assert_int_ge(add(s, 0, &o2), 0);
    ck_assert_int_ge(add(s, 0, &t2), 0);
    ck_assert_int_eq(story_finish(s, ""), 0);
    tf = find(s, &P_TIMEOUT, NULL);
    ck_assert(!tf->is_root);
    ck_assert_str_eq(cause_id(s, tf), find(s, &P_OOM, NULL)->id);
    ck_assert_ptr_null(tf->note);
    story_free(s);
}
END_TEST

START_TEST(test_story_order_unknown_across_sources_is_said)
{
    ev_spec evs[] = {
        {&P_OOM, OOM_TEXT, "rank3.log", 80, "", "3"},
        {&P_GLOO, "Connection closed by peer [10.0.0.2]:5052", "rank0.log", 3, "", "0"},
    };
    story *s = tell(evs, 2, NULL, "");
    const finding *g = find(s, &P_GLOO, NULL);
    ck_assert(!g->is_root);
    ck_assert_ptr_nonnull(g->note);
    ck_assert_ptr_nonnull(strstr(g->note, "order is unknown"));
    story_free(s);
}
END_TEST

/* The kernel's kill, torchrun's exit code -9 of the same pid, and Slurm's step line are one failure. */
START_TEST(test_story_windows_of_one_kill_are_one_root)
{
    ev_spec evs[] = {
        {&P_LAUNCHER, "exitcode  : -9 (pid: 14750)", "job-77/torchrun.log", 12, "77", "0", "14750", NULL,
         "{\"exitcode\": -9, \"pid\": 14750}"},
        {&P_KERNEL, "Memory cgroup out of memory: Killed process 14750 (python3)", "job-77/dmesg.log", 2, "77", NULL,
         "14750", NULL, "{\"pid\": 14750, \"rss_bytes\": 1322842112}"},
        {&P_SLURM, "Step 77.0 exceeded memory limit (52917772 > 20971520), being killed", "job-77/slurm.log", 1, "77",
         NULL, NULL, NULL, "{\"rss_bytes\": 54187798528, \"limit_bytes\": 21474836480}"},
        {&P_CHILD, "ChildFailedError:", "job-77/torchrun.log", 3, "77"},
    };
    size_t fwd[] = {0, 1, 2, 3}, rev[] = {3, 2, 1, 0};
    char root_id[17] = "";
    for (int o = 0; o < 2; o++) {
        story *s = tell(evs, 4, o ? rev : fwd, "");
        const finding *k = find(s, &P_KERNEL, NULL);
        ck_assert_msg(k->is_root && k->joined_into < 0, "the kernel's window is not the one reported");
        ck_assert_int_ge(find(s, &P_LAUNCHER, NULL)->joined_into, 0);
        ck_assert_int_ge(find(s, &P_SLURM, NULL)->joined_into, 0);
        /* one root, the supervisor's report its consequence: two findings reported */
        ck_assert_uint_eq(reported(s), 2);
        const finding *c = find(s, &P_CHILD, NULL);
        ck_assert_str_eq(cause_id(s, c), k->id);
        story_window w[16];
        size_t nw = story_sources(s, (size_t)(k - s->f), w, 16);
        ck_assert_uint_eq(nw, 3);
        ck_assert_str_eq(w[0].kind, "kernel");
        int kinds = 0;
        for (size_t i = 0; i < nw; i++)
            kinds |= strcmp(w[i].kind, "launcher") == 0 ? 1 : strcmp(w[i].kind, "slurm") == 0 ? 2 : 0;
        ck_assert_int_eq(kinds, 3);
        /* the kernel's RSS stays, Slurm adds its limit */
        ck_assert_double_eq(cJSON_GetObjectItem(k->memory, "rss_bytes")->valuedouble, 1322842112.0);
        ck_assert_double_eq(cJSON_GetObjectItem(k->memory, "limit_bytes")->valuedouble, 21474836480.0);
        if (o == 0)
            snprintf(root_id, sizeof root_id, "%s", k->id);
        else
            ck_assert_str_eq(root_id, k->id);
        story_free(s);
    }
}
END_TEST

/* A host's kernel log holds other kills than the job's (lines of this machine's dmesg: an earlier
 * run's kill, then the realjobs cgroup kill of fixtures/realjobs/cgroup_oom_kill): two failures, and
 * torchrun's -9 joins the kill of its own worker, with that worker's figures. */
START_TEST(test_story_kills_of_other_processes_stay_apart)
{
    ev_spec evs[] = {
        {&P_KERNEL, "Memory cgroup out of memory: Killed process 2968 (python3.11)", "dmesg.log", 10, NULL, NULL,
         "2968", NULL, "{\"pid\": 2968, \"rss_bytes\": 387538944}"},
        {&P_KERNEL, "Memory cgroup out of memory: Killed process 30324 (python3.11)", "dmesg.log", 90, NULL, NULL,
         "30324", NULL, "{\"pid\": 30324, \"rss_bytes\": 387522560}"},
        {&P_LAUNCHER, "exitcode  : -9 (pid: 30324)", "torchrun.out", 45, NULL, "1", "30324", NULL,
         "{\"exitcode\": -9, \"pid\": 30324}"},
    };
    story *s = tell(evs, 3, NULL, "");
    const finding *mine = NULL, *other = NULL;
    for (size_t i = 0; i < s->n; i++)
        if (s->f[i].pattern == &P_KERNEL)
            *(strcmp(s->f[i].pid, "30324") == 0 ? &mine : &other) = &s->f[i];
    ck_assert_msg(mine && other, "the two kills became one finding");
    long l = find(s, &P_LAUNCHER, NULL)->joined_into;
    ck_assert_msg(l >= 0 && &s->f[l] == mine, "torchrun's -9 of pid 30324 joined another kill");
    ck_assert_double_eq(cJSON_GetObjectItem(mine->memory, "rss_bytes")->valuedouble, 387522560.0);
    ck_assert_str_ne(mine->id, other->id);
    story_free(s);
}
END_TEST

START_TEST(test_story_windows_told_apart_stay_apart)
{
    /* two ranks, two pids: two kills, not one; and the same kind of window twice is not joined */
    ev_spec evs[] = {
        {&P_KERNEL, "Killed process 100 (pt_data_worker)", "dmesg.log", 1, "5", NULL, "100"},
        {&P_KERNEL, "Killed process 200 (python3)", "dmesg.log", 4, "5", NULL, "200"},
        {&P_LAUNCHER, "exitcode  : -9 (pid: 200)", "torchrun.log", 9, "5", "1", "200"},
        {&P_OOM, OOM_TEXT, "rank0.log", 9, "5", "0"},
        {&P_OOM, "CUDA out of memory. Tried to allocate 2.00 GiB", "rank1.log", 9, "5", "1"},
    };
    story *s = tell(evs, 5, NULL, "");
    ck_assert_uint_eq(reported(s), 4);
    const finding *l = find(s, &P_LAUNCHER, NULL);
    ck_assert_int_ge(l->joined_into, 0);
    ck_assert_str_eq(s->f[l->joined_into].pid, "200");
    story_free(s);
    /* another job's kill never takes this job's launcher report */
    ev_spec other[] = {
        {&P_KERNEL, "Killed process 200 (python3)", "a/dmesg.log", 1, "5", NULL, "200"},
        {&P_LAUNCHER, "exitcode  : -9 (pid: 200)", "b/torchrun.log", 9, "6", "1", "200"},
    };
    s = tell(other, 2, NULL, "");
    ck_assert_uint_eq(reported(s), 2);
    story_free(s);
}
END_TEST

START_TEST(test_story_no_id_twice)
{
    /* the same failure line in a file named for job 9 and in one that names no job, scanned with
     * --job-id 9: both are job 9's, and one finding, not two with one id */
    ev_spec evs[] = {
        {&P_OOM, OOM_TEXT, "slurm-9.out", 4, "9"},
        {&P_OOM, OOM_TEXT, "train.log", 4, ""},
    };
    story *s = tell(evs, 2, NULL, "9");
    size_t *order = malloc((s->n + 1) * sizeof *order);
    size_t n = story_order(s, order);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            ck_assert_msg(strcmp(s->f[order[i]].id, s->f[order[j]].id) != 0, "id %s twice", s->f[order[i]].id);
    ck_assert_uint_eq(n, 1);
    free(order);
    story_free(s);
}
END_TEST

START_TEST(test_story_job_stated_by_a_line_is_its_sources)
{
    /* train.log names no job in its name; slurmstepd's line in it does */
    story *s = story_new();
    ev_spec o = {&P_OOM, OOM_TEXT, "train.log", 10, ""},
            k = {&P_SLURM, "Detected 1 oom-kill event(s) in StepId=4242.0", "train.log", 30, "4242"};
    ck_assert_int_ge(add(s, 0, &o), 0);
    ck_assert_int_ge(add(s, 0, &k), 0);
    ck_assert_int_eq(story_finish(s, ""), 0);
    ck_assert_str_eq(find(s, &P_OOM, NULL)->job, "4242");
    ck_assert_uint_eq(s->n_jobs, 1);
    story_free(s);
}
END_TEST

#define W1 "logs/worker-79a553ea91fe46f95e8384ddf8a8f0a01e3418a975ecd0af983c7bb2-01000000-23444.err"
#define W2 "logs/worker-0a6b2c4d91fe46f95e8384ddf8a8f0a01e3418a975ecd0af983c7bb2-02000000-23999.err"

START_TEST(test_story_ray_job_names_the_job)
{
    /* two Ray jobs' workers: each its own job, no cause across them */
    ev_spec two[] = {
        {&P_OOM, OOM_TEXT, W1, 5, .ray_job = "01000000"},
        {&P_TIMEOUT, TIMEOUT_TEXT, W2, 9, .ray_job = "02000000"},
    };
    story *s = tell(two, 2, NULL, "");
    ck_assert_str_eq(find(s, &P_OOM, NULL)->job, "01000000");
    const finding *t = find(s, &P_TIMEOUT, NULL);
    ck_assert_str_eq(t->job, "02000000");
    ck_assert_msg(t->is_root, "a timeout of Ray job 02000000 was given job 01000000's OOM as cause");
    ck_assert_uint_eq(s->n_jobs, 2);
    story_free(s);
    /* one Ray job: its driver's log (a submission id, no job id) is that job's too */
    ev_spec one[] = {
        {&P_OOM, OOM_TEXT, W1, 5, .ray_job = "01000000"},
        {&P_CHILD, "ActorDiedError", "logs/job-driver-raysubmit_qZ8kXu2jV4yLCpWE.log", 40,
         .ray_job = "raysubmit_qZ8kXu2jV4yLCpWE"},
    };
    s = tell(one, 2, NULL, "");
    const finding *died = find(s, &P_CHILD, NULL), *oom = find(s, &P_OOM, NULL);
    ck_assert_str_eq(died->job, "01000000");
    ck_assert_str_eq(cause_id(s, died), oom->id);
    ck_assert_uint_eq(s->n_jobs, 1);
    story_free(s);
    /* inside a Slurm job (the epilog's --job-id), the Slurm job is the job */
    s = tell(two, 2, NULL, "3");
    ck_assert_str_eq(find(s, &P_OOM, NULL)->job, "3");
    ck_assert_str_eq(find(s, &P_TIMEOUT, NULL)->job, "3");
    story_free(s);
}
END_TEST

/* Two Ray jobs whose workers print the same line are two findings, one per job, whether the lines come
 * through one source's story (story_add) or two merged ones (story_merge); two workers of one Ray job
 * printing it are one finding. */
START_TEST(test_story_ray_jobs_same_line_stay_apart)
{
    ev_spec two[] = {
        {&P_OOM, OOM_TEXT, W1, 5, .ray_job = "01000000"},
        {&P_OOM, OOM_TEXT, W2, 5, .ray_job = "02000000"},
    };
    story *one = story_new();
    ck_assert_ptr_nonnull(one);
    for (size_t k = 0; k < 2; k++)
        ck_assert_int_ge(add(one, 0, &two[k]), 0);
    ck_assert_int_eq(story_finish(one, ""), 0);
    story *merged = tell(two, 2, NULL, "");
    story *both[] = {one, merged};
    for (size_t b = 0; b < 2; b++) {
        story *s = both[b];
        ck_assert_msg(reported(s) == 2, "%s: two Ray jobs' same line gave %zu finding(s)", b ? "merged" : "added",
                      reported(s));
        ck_assert_uint_eq(s->n_jobs, 2);
        ck_assert_str_ne(s->f[0].job, s->f[1].job);
        ck_assert_str_ne(s->f[0].id, s->f[1].id);
        story_free(s);
    }
    ev_spec same[] = {
        {&P_OOM, OOM_TEXT, W1, 5, .ray_job = "01000000"},
        {&P_OOM, OOM_TEXT, "logs/worker-0a6b2c4d91fe46f95e8384ddf8a8f0a01e3418a975ecd0af983c7bb2-01000000-23999.err", 7,
         .ray_job = "01000000"},
    };
    story *s = story_new();
    ck_assert_ptr_nonnull(s);
    for (size_t k = 0; k < 2; k++)
        ck_assert_int_ge(add(s, 0, &same[k]), 0);
    ck_assert_int_eq(story_finish(s, ""), 0);
    ck_assert_uint_eq(reported(s), 1);
    ck_assert_uint_eq(s->f[0].occurrences, 2);
    story_free(s);
}
END_TEST

START_TEST(test_story_framework_votes_stay_in_their_job)
{
    story *s = story_new();
    uint32_t ds[FW__COUNT] = {0}, none[FW__COUNT] = {0};
    ds[FW_DEEPSPEED] = 3;
    ck_assert_int_eq(story_note_votes(s, "1001", ds), 0);
    ck_assert_int_eq(story_note_votes(s, "1002", none), 0);
    ck_assert_ptr_nonnull(story_job_votes(s, "1001"));
    ck_assert_uint_eq(story_job_votes(s, "1001")[FW_DEEPSPEED], 3);
    ck_assert_uint_eq(story_job_votes(s, "1002")[FW_DEEPSPEED], 0);
    ck_assert_ptr_null(story_job_votes(s, "1003")); /* nobody's votes, not 1001's */
    /* merged stories keep them apart */
    story *t = story_new();
    ck_assert_int_eq(story_note_votes(t, "1001", ds), 0);
    ck_assert_int_eq(story_merge(s, t), 0);
    ck_assert_uint_eq(story_job_votes(s, "1001")[FW_DEEPSPEED], 6);
    story_free(t);
    story_free(s);
}
END_TEST

START_TEST(test_story_many_jobs_one_story_each)
{
    /* 20,000 jobs' logs of an OOM and its timeout each: one root and one consequence per job */
    enum { JOBS = 20000 };
    story *all = story_new();
    ck_assert_ptr_nonnull(all);
    for (int j = 0; j < JOBS; j++) {
        char job[16], path[32];
        snprintf(job, sizeof job, "%d", 1000 + j);
        snprintf(path, sizeof path, "slurm-%d.out", 1000 + j);
        story *one = story_new();
        ev_spec o = {&P_OOM, OOM_TEXT, path, 5, job}, t = {&P_TIMEOUT, TIMEOUT_TEXT, path, 9, job};
        ck_assert_int_ge(add(one, (size_t)j, &o), 0);
        ck_assert_int_ge(add(one, (size_t)j, &t), 0);
        ck_assert_int_eq(story_merge(all, one), 0);
        story_free(one);
    }
    ck_assert_int_eq(story_finish(all, ""), 0);
    ck_assert_uint_eq(all->n, 2 * JOBS);
    ck_assert_uint_eq(all->n_jobs, JOBS);
    for (size_t i = 0; i < all->n; i++) {
        const finding *f = &all->f[i];
        if (f->pattern == &P_TIMEOUT) {
            ck_assert(!f->is_root);
            ck_assert_str_eq(all->f[f->caused_by].job, f->job);
        }
    }
    story_free(all);
}
END_TEST

/* A peer's closed socket follows any death, a crash too; a crash never follows what gloo printed. */
START_TEST(test_story_gloo_echo_follows_a_crash)
{
    ev_spec evs[] = {
        {&P_GLOO, "gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:10895", "rank0/stderr.log", 9,
         "3", "0"},
        {&P_SEGV, "Fatal Python error: Segmentation fault", "rank1/stderr.log", 40, "3", "1"},
    };
    story *s = tell(evs, 2, NULL, "");
    const finding *g = find(s, &P_GLOO, NULL), *c = find(s, &P_SEGV, NULL);
    ck_assert_msg(c->is_root, "the crash was made an echo of the peer's closed socket");
    ck_assert_str_eq(cause_id(s, g), c->id);
    story_free(s);
}
END_TEST

/* A whole scan of `text` with the shipped database (the caller ends it with scan_done). */
static run_out scan_shipped(const char *text)
{
    pdb *db = pdb_new();
    oomscan_diag d = {0};
    ck_assert_int_eq(pdb_load_embedded(db, &d), OOMSCAN_OK);
    ck_assert_int_eq(pdb_compile(db, &d), OOMSCAN_OK);
    return scan_text(db, text, strlen(text), 0, 0);
}

/* The index of the one reported root of `s`; fails the test unless there is exactly one. */
static long only_root(const story *s)
{
    long root = -1;
    size_t roots = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->f[i].joined_into < 0 && s->f[i].is_root)
            roots++, root = (long)i;
    ck_assert_uint_eq(roots, 1);
    return root;
}

/* Through the real scanner and shipped database: the peers' gloo errors after a rank was killed for
 * host memory are found, say their backend, and follow the kill; torchrun's -9 for the same pid is
 * the kill's window, not a second root. Lines are real (sources in patterns/failures/gloo.json,
 * kernel.json, torchelastic.json), put together in the order such a job prints them. */
START_TEST(test_story_gloo_echoes_follow_the_kill)
{
    static const char text[] =
        "[441280.839852] Memory cgroup out of memory: Killed process 14750 (python3) total-vm:4997820kB, "
        "anon-rss:1291838kB, file-rss:68668kB, shmem-rss:0kB, UID:0 pgtables:4977kB oom_score_adj:0\n"
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:10895\n"
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error [192.168.70.92]:25266: "
        "Connection reset by peer\n"
        "[trainer22|6]:RuntimeError: [gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv "
        "operation to complete\n"
        "  exitcode  : -9 (pid: 14750)\n";
    run_out r = scan_shipped(text);
    const story *s = r.st;
    long root = only_root(s);
    size_t gloo = 0;
    uint64_t gloo_lines = 0;
    ck_assert_int_eq(s->f[root].cls, CLS_HOST_OOM_KILL);
    for (size_t i = 0; i < s->n; i++) {
        const finding *f = &s->f[i];
        if (f->cls == CLS_HOST_OOM_KILL)
            ck_assert(f->joined_into < 0 ? (long)i == root : f->joined_into == root);
        if (f->pattern && strstr(f->pattern->id, "gloo")) {
            gloo++;
            gloo_lines += f->occurrences;
            ck_assert_str_eq(story_backend(f), "gloo");
            ck_assert_int_eq(f->caused_by, root);
        }
    }
    /* closed and reset on consecutive lines are one burst of one finding; the timeout is another */
    ck_assert_uint_eq(gloo, 2);
    ck_assert_uint_eq(gloo_lines, 3);
    story_window w[8];
    ck_assert_uint_eq(story_sources(s, (size_t)root, w, 8), 2); /* the kernel's line and torchrun's */
    scan_done(&r);
}
END_TEST

/* Through the real scanner and shipped database: a checkpoint save into a full disk (rank 0's stderr
 * of the real job fixtures/realjobs/checkpoint_disk_full, cut) is one root, disk_full, in the checkpoint
 * phase (the write's own frame, zip_file.write_record); torch.save's "unexpected pos" while closing the
 * broken file is no finding, and the abort that follows on the same rank is a consequence of the write. */
START_TEST(test_story_abort_after_a_full_disk_follows_it)
{
    static const char text[] =
        "Traceback (most recent call last):\n"
        "  File \"/usr/lib/python3/dist-packages/torch/serialization.py\", line 423, in save\n"
        "    _save(obj, opened_zipfile, pickle_module, pickle_protocol)\n"
        "  File \"/usr/lib/python3/dist-packages/torch/serialization.py\", line 650, in _save\n"
        "    zip_file.write_record(name, storage.data_ptr(), num_bytes)\n"
        "RuntimeError: [enforce fail at inline_container.cc:445] . PytorchStreamWriter failed writing file data/4: "
        "file write failed\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        "  File \"/usr/lib/python3/dist-packages/torch/serialization.py\", line 290, in __exit__\n"
        "    self.file_like.write_end_of_file()\n"
        "RuntimeError: [enforce fail at inline_container.cc:325] . unexpected pos 19840 vs 19732\n"
        "terminate called after throwing an instance of 'c10::Error'\n"
        "  what():  [enforce fail at inline_container.cc:325] . unexpected pos 19840 vs 19732\n"
        "Fatal Python error: Aborted\n";
    run_out r = scan_shipped(text);
    const story *s = r.st;
    long root = only_root(s);
    size_t crashes = 0;
    ck_assert_int_eq(s->f[root].cls, CLS_DISK_FULL);
    ck_assert_int_eq(s->f[root].phase, PH_CHECKPOINT);
    for (size_t i = 0; i < s->n; i++) {
        const finding *f = &s->f[i];
        ck_assert_msg(f->cls == CLS_DISK_FULL || f->cls == CLS_SEGFAULT, "unexpected finding %s",
                      f->pattern ? f->pattern->id : "?");
        if (f->cls == CLS_SEGFAULT && f->joined_into < 0) {
            crashes++;
            ck_assert_int_eq(f->caused_by, root);
        }
    }
    ck_assert_uint_ge(crashes, 1);
    scan_done(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("story");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_story_jobs_never_share_a_cause);
    tcase_add_test(tc, test_story_run_folder_from_the_name);
    tcase_add_test(tc, test_story_runs_without_ids_stay_apart);
    tcase_add_test(tc, test_story_attempts_never_cause_each_other);
    tcase_add_test(tc, test_story_kill_phase_not_from_the_launcher);
    tcase_add_test(tc, test_story_weak_phase_gives_way_to_the_jobs_strong_one);
    tcase_add_test(tc, test_story_weak_phase_stays_when_the_job_disagrees);
    tcase_add_test(tc, test_story_cause_independent_of_input_order);
    tcase_add_test(tc, test_story_no_consequence_of_a_later_line);
    tcase_add_test(tc, test_story_order_unknown_across_sources_is_said);
    tcase_add_test(tc, test_story_windows_of_one_kill_are_one_root);
    tcase_add_test(tc, test_story_windows_told_apart_stay_apart);
    tcase_add_test(tc, test_story_no_id_twice);
    tcase_add_test(tc, test_story_job_stated_by_a_line_is_its_sources);
    tcase_add_test(tc, test_story_framework_votes_stay_in_their_job);
    tcase_add_test(tc, test_story_ray_job_names_the_job);
    tcase_add_test(tc, test_story_ray_jobs_same_line_stay_apart);
    tcase_add_test(tc, test_story_kills_of_other_processes_stay_apart);
    tcase_add_test(tc, test_story_many_jobs_one_story_each);
    tcase_add_test(tc, test_story_gloo_echoes_follow_the_kill);
    tcase_add_test(tc, test_story_gloo_echo_follows_a_crash);
    tcase_add_test(tc, test_story_abort_after_a_full_disk_follows_it);
    tcase_add_test(tc, test_story_attempts_appended_to_one_log);
    suite_add_tcase(s, tc);
    return check_run(s);
}
