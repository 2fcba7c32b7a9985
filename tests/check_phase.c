/* check_phase.c - phase attribution: frame order, faulthandler stacks, late evidence below a failure.
 *
 * The log lines are real (sources at each test); the database is written here, so the suite tests the
 * mechanism, not the shipped rules (the corpus and --check-patterns cover those). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match/phase.h"
#include "match/scan.h"
#include "story/story.h"
#include "check_main.h"
#include "membuf.h"

static const char PH_PATTERNS[] =
    "{\"format\":\"oomscan-patterns/1\",\"family\":\"test\",\"patterns\":["
    "{\"id\":\"segfault.test\",\"class\":\"segfault\",\"literals\":[\"Fatal Python error: Segmentation fault\"],"
    " \"regex\":\"Fatal Python error: Segmentation fault\"},"
    "{\"id\":\"cuda_oom.test\",\"class\":\"cuda_oom\",\"literals\":[\"CUDA out of memory\"],\"regex\":\"CUDA out of memory\"}"
    "]}";

static const char PH_PREFIXES[] =
    "{\"format\":\"oomscan-prefixes/1\",\"prefixes\":["
    "{\"id\":\"rank\",\"regex\":\"\\\\[rank(?<rank>[0-9]+)\\\\]: ?\"}"
    "]}";

/* watchdog_thread has a rule here only to show that another thread's frames never give the phase */
static const char PH_PHASES[] =
    "{\"format\":\"oomscan-phases/1\",\"frames\":["
    "{\"code\":\"loss.backward(\",\"phase\":\"backward\"},"
    "{\"func\":\"capture_model\",\"phase\":\"model_init\",\"framework\":\"vllm\"},"
    "{\"func\":\"init_torch_distributed\",\"phase\":\"model_init\"},"
    "{\"func\":\"generate\",\"phase\":\"rollout\"},"
    "{\"func\":\"watchdog_thread\",\"phase\":\"rollout\"}],"
    "\"fallback_frames\":[{\"path\":\"torch/distributed/distributed_c10d.py\",\"phase\":\"communication\"}],"
    "\"markers\":[]}";

/* The test database, with the lexicon document `lexicon` too when it is not NULL. */
static pdb *phdb_with(const char *lexicon)
{
    pdb *db = pdb_new();
    ck_assert_ptr_nonnull(db);
    oomscan_diag d = {0};
    ck_assert_int_eq(pdb_load_text(db, "test.json", PH_PATTERNS, sizeof PH_PATTERNS - 1, &d), OOMSCAN_OK);
    ck_assert_int_eq(pdb_load_text(db, "prefixes.json", PH_PREFIXES, sizeof PH_PREFIXES - 1, &d), OOMSCAN_OK);
    ck_assert_msg(pdb_load_text(db, "phases.json", PH_PHASES, sizeof PH_PHASES - 1, &d) == OOMSCAN_OK, "%s: %s",
                  d.where, d.msg);
    if (lexicon)
        ck_assert_msg(pdb_load_text(db, "lexicon.json", lexicon, strlen(lexicon), &d) == OOMSCAN_OK, "%s", d.msg);
    ck_assert_msg(pdb_compile(db, &d) == OOMSCAN_OK, "%s: %s", d.where, d.msg);
    return db;
}

static pdb *phdb_new(void) { return phdb_with(NULL); }


static run_out run(const char *text) { return scan_text(phdb_new(), text, strlen(text), 0, 0); }

static void done(run_out *o) { scan_done(o); }

static const finding *only(const run_out *o, tax_class cls)
{
    const finding *f = NULL;
    for (size_t i = 0; i < o->st->n; i++)
        if (o->st->f[i].cls == cls) {
            ck_assert_msg(!f, "two findings of one class");
            f = &o->st->f[i];
        }
    ck_assert_ptr_nonnull(f);
    return f;
}

/* vllm-project/vllm#3053: the stack is printed below the failure, innermost frame first */
static const char VLLM_3053[] =
    "Fatal Python error: Segmentation fault\n"
    "\n"
    "Stack (most recent call first):\n"
    "  File \"/root/.conda/envs/py39/lib/python3.9/site-packages/torch/cuda/graphs.py\", line 77 in capture_begin\n"
    "  File \"/root/.conda/envs/py39/lib/python3.9/site-packages/torch/cuda/graphs.py\", line 192 in __enter__\n"
    "  File \"/root/.conda/envs/py39/lib/python3.9/site-packages/vllm/worker/model_runner.py\", line 782 in capture\n"
    "  File \"/root/.conda/envs/py39/lib/python3.9/site-packages/vllm/worker/model_runner.py\", line 725 in capture_model\n";

START_TEST(test_phase_faulthandler_stack_below_failure_names_its_phase)
{
    run_out o = run(VLLM_3053);
    const finding *f = only(&o, CLS_SEGFAULT);
    ck_assert_int_eq(f->phase, PH_MODEL_INIT);
    ck_assert_ptr_nonnull(f->phase_evidence);
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, "capture_model in model_runner.py (line 7)"));
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, "after the failure"));
    ck_assert_int_eq(f->framework, FW_VLLM);
    ck_assert_ptr_nonnull(strstr(f->group, "|model_init|")); /* grouped as if its own line had named it */
    done(&o);
}
END_TEST

START_TEST(test_phase_stack_of_another_stream_or_too_far_gives_nothing)
{
    /* the same stack, but on another rank's stream: not the failure's own */
    char buf[4096];
    const char *lines[] = {"[rank1]: Fatal Python error: Segmentation fault\n", "[rank0]: Stack (most recent call first):\n",
                           "[rank0]:   File \"/root/.conda/envs/py39/lib/python3.9/site-packages/vllm/worker/model_runner.py\", "
                           "line 725 in capture_model\n"};
    snprintf(buf, sizeof buf, "%s%s%s", lines[0], lines[1], lines[2]);
    run_out o = run(buf);
    ck_assert_int_eq(only(&o, CLS_SEGFAULT)->phase, PH_UNKNOWN);
    done(&o);
    /* the same stream, but the stack begins far below the failure (LATE_REACH lines) */
    size_t n = (size_t)snprintf(buf, sizeof buf, "Fatal Python error: Segmentation fault\n");
    for (int i = 0; i < 120; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "x\n");
    snprintf(buf + n, sizeof buf - n, "%s", strstr(VLLM_3053, "Stack ("));
    o = run(buf);
    ck_assert_int_eq(only(&o, CLS_SEGFAULT)->phase, PH_UNKNOWN);
    done(&o);
}
END_TEST

/* sgl-project/sglang#3745: another thread's block comes first; the failing thread's innermost frames
 * are a collective (a fallback rule, which may not decide while the stack could still grow) */
static const char SGLANG_3745[] =
    "Fatal Python error: Segmentation fault\n"
    "\n"
    "Thread 0x00007f2e93fff640 (most recent call first):\n"
    "  File \"/XXXX/sglang/python/sglang/srt/managers/scheduler.py\", line 462 in watchdog_thread\n"
    "  File \"/usr/lib/python3.10/threading.py\", line 953 in run\n"
    "  File \"/usr/lib/python3.10/threading.py\", line 1016 in _bootstrap_inner\n"
    "  File \"/usr/lib/python3.10/threading.py\", line 973 in _bootstrap\n"
    "\n"
    "Current thread 0x00007f2ea0870640 (most recent call first):\n"
    "  File \"/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py\", line 2501 in all_reduce\n"
    "  File \"/usr/local/lib/python3.10/dist-packages/torch/distributed/c10d_logger.py\", line 83 in wrapper\n";

START_TEST(test_phase_other_threads_and_late_fallbacks_give_nothing)
{
    run_out o = run(SGLANG_3745);
    ck_assert_int_eq(only(&o, CLS_SEGFAULT)->phase, PH_UNKNOWN);
    done(&o);
    /* the failing thread's own frame further out does decide (sgl-project/sglang#3451's caller) */
    char buf[4096];
    snprintf(buf, sizeof buf, "%s%s", SGLANG_3745,
             "  File \"/home/tiger/.pyenv/versions/3.11.2/lib/python3.11/site-packages/sglang/srt/model_executor/"
             "model_runner.py\", line 253 in init_torch_distributed\n");
    o = run(buf);
    const finding *f = only(&o, CLS_SEGFAULT);
    ck_assert_int_eq(f->phase, PH_MODEL_INIT);
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, "init_torch_distributed"));
    done(&o);
    /* the same dump with the failing thread listed first (faulthandler lists threads newest first):
     * the other thread's block after it still gives nothing */
    const char *cur = strstr(SGLANG_3745, "Current thread"), *oth = strstr(SGLANG_3745, "Thread 0x");
    snprintf(buf, sizeof buf, "Fatal Python error: Segmentation fault\n\n%s\n%.*s", cur, (int)(cur - oth), oth);
    o = run(buf);
    ck_assert_int_eq(only(&o, CLS_SEGFAULT)->phase, PH_UNKNOWN);
    done(&o);
}
END_TEST

START_TEST(test_phase_late_stack_never_overrides_a_traceback)
{
    /* a failure whose own traceback named the phase keeps it, whatever is printed below it */
    const char *text = "Traceback (most recent call last):\n"
                       "  File \"/opt/train.py\", line 9, in step\n"
                       "    loss.backward()\n"
                       "Fatal Python error: Segmentation fault\n"
                       "\n"
                       "Stack (most recent call first):\n"
                       "  File \"/root/.conda/envs/py39/lib/python3.9/site-packages/vllm/worker/model_runner.py\", "
                       "line 725 in capture_model\n";
    run_out o = run(text);
    const finding *f = only(&o, CLS_SEGFAULT);
    ck_assert_int_eq(f->phase, PH_BACKWARD);
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, "loss.backward("));
    done(&o);
}
END_TEST

/* The phase API on its own: frames innermost first in a faulthandler stack, last in a traceback. */
static void frame(phase_state *ps, const char *path, const char *func, const char *code, uint64_t line)
{
    phase_frame(ps, "", path, strlen(path), func, strlen(func), code, code ? strlen(code) : 0, line);
}

START_TEST(test_phase_faulthandler_order_is_innermost_first)
{
    pdb *db = phdb_new();
    phase_state *ps = phase_new(db);
    const char hdr[] = "Stack (most recent call first):";
    phase_stack_header(ps, "", hdr, sizeof hdr - 1, 10);
    frame(ps, "/site-packages/vllm/worker/model_runner.py", "capture_model", NULL, 11); /* innermost */
    frame(ps, "/site-packages/vllm/entrypoints/llm.py", "generate", NULL, 12);
    phase_answer a;
    phase_decide(ps, "", 13, -1, -1, &a);
    ck_assert_int_eq(a.phase, PH_MODEL_INIT);
    ck_assert_ptr_nonnull(strstr(a.evidence, "faulthandler stack frame capture_model"));
    /* the same frames as a Python traceback: there the last printed is the innermost */
    phase_traceback(ps, "", 20);
    frame(ps, "/site-packages/vllm/worker/model_runner.py", "capture_model", NULL, 21);
    frame(ps, "/site-packages/vllm/entrypoints/llm.py", "generate", NULL, 22);
    phase_decide(ps, "", 23, -1, -1, &a);
    ck_assert_int_eq(a.phase, PH_ROLLOUT);
    phase_free(ps);
    pdb_free(db);
}
END_TEST

START_TEST(test_phase_c10_stack_header_keeps_the_python_traceback)
{
    /* pytorch/pytorch#149984: c10 prints its C++ stack under the Python exception with the same words */
    pdb *db = phdb_new();
    phase_state *ps = phase_new(db);
    phase_traceback(ps, "", 1);
    frame(ps, "/opt/train.py", "step", "loss.backward()", 2);
    const char c10[] = "Exception raised from checkForNCCLErrorsInternal at "
                       "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2501 (most recent call first):";
    phase_stack_header(ps, "", c10, sizeof c10 - 1, 5);
    phase_answer a;
    phase_decide(ps, "", 6, -1, -1, &a);
    ck_assert_int_eq(a.phase, PH_BACKWARD);
    ck_assert_int_eq(phase_late(ps, "", 4, &a), 0); /* and it is no faulthandler stack */
    phase_free(ps);
    pdb_free(db);
}
END_TEST

/* ---- weak evidence, class defaults, late markers (issue 12) ---------------------------------- */

static const char W_PATTERNS[] =
    "{\"format\":\"oomscan-patterns/1\",\"family\":\"test\",\"patterns\":["
    "{\"id\":\"nccl_timeout.test\",\"class\":\"nccl_timeout\",\"literals\":[\"Watchdog caught collective\"],"
    " \"regex\":\"Watchdog caught collective operation timeout\"},"
    "{\"id\":\"host_oom_kill.test\",\"class\":\"host_oom_kill\",\"literals\":[\"Task was killed due to the node\"],"
    " \"regex\":\"Task was killed due to the node running low on memory[^\\\\n]*?pid=(?<pid>[0-9]+)\"},"
    "{\"id\":\"cuda_oom.test\",\"class\":\"cuda_oom\",\"literals\":[\"CUDA out of memory\"],\"regex\":\"CUDA out of memory\"}"
    "]}";

static const char W_PHASES[] =
    "{\"format\":\"oomscan-phases/1\",\"frames\":[],"
    "\"weak_frames\":[{\"path\":\"/sglang/srt/\",\"phase\":\"rollout\"},{\"func\":\"forward\",\"phase\":\"forward\"}],"
    "\"markers\":[{\"literal\":\"NCCL INFO Channel \",\"phase\":\"model_init\",\"confidence\":\"weak\"},"
    " {\"literal\":\"Prefill batch.\",\"phase\":\"rollout\"},"
    " {\"literal\":\"ray::WorkerDict.actor_rollout_generate_sequences\",\"phase\":\"rollout\",\"late\":true,\"reach\":30},"
    " {\"literal\":\"Error: ShardCannotStart\",\"phase\":\"model_init\",\"late\":true,\"reach\":10}],"
    "\"class_phases\":[{\"class\":\"nccl_timeout\",\"phase\":\"communication\"}]}";

static run_out wrun(const char *text)
{
    pdb *db = pdb_new();
    ck_assert_ptr_nonnull(db);
    oomscan_diag d = {0};
    ck_assert_int_eq(pdb_load_text(db, "test.json", W_PATTERNS, sizeof W_PATTERNS - 1, &d), OOMSCAN_OK);
    ck_assert_msg(pdb_load_text(db, "phases.json", W_PHASES, sizeof W_PHASES - 1, &d) == OOMSCAN_OK, "%s: %s",
                  d.where, d.msg);
    ck_assert_msg(pdb_compile(db, &d) == OOMSCAN_OK, "%s: %s", d.where, d.msg);
    return scan_text(db, text, strlen(text), 0, 0);
}

/* arrival-ltd/catalyst-rl-tutorial#15: a watchdog timeout with nothing else is a collective (weak);
 * NCCL set-up lines right before it make it start-up (weak), but not from 40 lines away */
START_TEST(test_phase_weak_class_default_and_weak_marker_reach)
{
    const char *wd = "[Rank 6] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=880, OpType=BROADCAST)\n";
    run_out o = wrun(wd);
    const finding *f = only(&o, CLS_NCCL_TIMEOUT);
    ck_assert_int_eq(f->phase, PH_COMMUNICATION);
    ck_assert_int_eq(f->phase_weak, 1);
    done(&o);
    char buf[4096];
    size_t n = (size_t)snprintf(buf, sizeof buf, "g:1:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC\n%s", wd);
    o = wrun(buf);
    ck_assert_int_eq(only(&o, CLS_NCCL_TIMEOUT)->phase, PH_MODEL_INIT);
    ck_assert_int_eq(only(&o, CLS_NCCL_TIMEOUT)->phase_weak, 1);
    done(&o);
    n = (size_t)snprintf(buf, sizeof buf, "g:1:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC\n");
    for (int i = 0; i < 45; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "step %d\n", i);
    snprintf(buf + n, sizeof buf - n, "%s", wd);
    o = wrun(buf);
    ck_assert_int_eq(only(&o, CLS_NCCL_TIMEOUT)->phase, PH_COMMUNICATION);
    done(&o);
}
END_TEST

/* A model forward frame alone is forward (weak); an engine path listed first wins within the frame;
 * a strong marker beats any weak frame */
START_TEST(test_phase_weak_frames_give_way)
{
    const char *tb = "Traceback (most recent call last):\n"
                     "  File \"/opt/conda/lib/python3.10/site-packages/torch/nn/modules/linear.py\", line 114, in forward\n"
                     "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 496.00 MiB.\n";
    run_out o = wrun(tb);
    ck_assert_int_eq(only(&o, CLS_CUDA_OOM)->phase, PH_FORWARD);
    ck_assert_int_eq(only(&o, CLS_CUDA_OOM)->phase_weak, 1);
    done(&o);
    const char *sg = "Traceback (most recent call last):\n"
                     "  File \"/sglang/python/sglang/srt/layers/logits_processor.py\", line 311, in forward\n"
                     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.05 GiB.\n";
    o = wrun(sg);
    ck_assert_int_eq(only(&o, CLS_CUDA_OOM)->phase, PH_ROLLOUT);
    done(&o);
    char buf[1024];
    snprintf(buf, sizeof buf, "[2025-01-01 00:00:00 TP0] Prefill batch. #new-seq: 1\n%s", tb);
    o = wrun(buf);
    ck_assert_int_eq(only(&o, CLS_CUDA_OOM)->phase, PH_ROLLOUT);
    ck_assert_int_eq(only(&o, CLS_CUDA_OOM)->phase_weak, 0);
    done(&o);
}
END_TEST

/* fixtures/corpus/host_oom_kill-verl-2950.log: Ray's memory table below the kill names the killed
 * task (its PID) as a rollout; a row of another PID names nothing */
START_TEST(test_phase_late_marker_needs_the_killed_pid)
{
    const char *kill = "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory. "
                       "(name=WorkerDict.__init__, pid=4100606, memory used=56.57GB)\n"
                       "PID     MEM(GB) COMMAND\n";
    char buf[1024];
    snprintf(buf, sizeof buf, "%s4100606 56.57   ray::WorkerDict.actor_rollout_generate_sequences\n", kill);
    run_out o = wrun(buf);
    ck_assert_int_eq(only(&o, CLS_HOST_OOM_KILL)->phase, PH_ROLLOUT);
    ck_assert_int_eq(only(&o, CLS_HOST_OOM_KILL)->phase_weak, 0);
    ck_assert_str_eq(only(&o, CLS_HOST_OOM_KILL)->phase_evidence,
                     "\"ray::WorkerDict.actor_rollout_generate_sequences\" in the row of the killed task, 2 line(s) "
                     "after the failure");
    done(&o);
    snprintf(buf, sizeof buf, "%s4100605 56.36   ray::WorkerDict.actor_rollout_generate_sequences\n", kill);
    o = wrun(buf);
    ck_assert_int_eq(only(&o, CLS_HOST_OOM_KILL)->phase, PH_UNKNOWN);
    done(&o);
}
END_TEST

/* fixtures/heldout4/cuda_oom-text-generation-inference-866.log: TGI's launcher ends a shard's failed
 * start-up with "Error: ShardCannotStart" a few lines below the failure; a late marker of a finding
 * with no PID says only where it was, not "the row of the killed task" */
START_TEST(test_phase_late_marker_without_a_pid_says_only_where)
{
    const char *text = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
                       "ERROR text_generation_launcher: Shard 0 failed to start\n"
                       "Error: ShardCannotStart\n";
    run_out o = wrun(text);
    const finding *f = only(&o, CLS_CUDA_OOM);
    ck_assert_int_eq(f->phase, PH_MODEL_INIT);
    ck_assert_str_eq(f->phase_evidence, "\"Error: ShardCannotStart\", 2 line(s) after the failure");
    done(&o);
}
END_TEST

/* ---- a pattern's frame condition ("in_traceback") ------------------------------------------- */

/* A full disk and a full /dev/shm print the same bare line; under multiprocessing's SemLock frames it
 * is /dev/shm (python/cpython#93253). The conditional pattern outranks the bare one; its condition
 * (`cond`, one of the three kinds) is the test's. */
static pdb *tbdb_new(const char *cond)
{
    char doc[2048];
    int n = snprintf(doc, sizeof doc,
                     "{\"format\":\"oomscan-patterns/1\",\"family\":\"test\",\"patterns\":["
                     "{\"id\":\"disk_full.test\",\"class\":\"disk_full\",\"literals\":[\"] No space left on device\"],"
                     " \"regex\":\"OSError: \\\\[Errno 28\\\\] No space left on device\",\"severity\":50},"
                     "{\"id\":\"shm_exhausted.test\",\"class\":\"shm_exhausted\",\"literals\":[\"] No space left on device\"],"
                     " \"regex\":\"OSError: \\\\[Errno 28\\\\] No space left on device\",\"severity\":60,"
                     " \"in_traceback\":%s}]}", cond);
    pdb *db = pdb_new();
    ck_assert_ptr_nonnull(db);
    oomscan_diag d = {0};
    ck_assert_msg(pdb_load_text(db, "test.json", doc, (size_t)n, &d) == OOMSCAN_OK, "%s: %s", d.where, d.msg);
    ck_assert_int_eq(pdb_load_text(db, "prefixes.json", PH_PREFIXES, sizeof PH_PREFIXES - 1, &d), OOMSCAN_OK);
    ck_assert_msg(pdb_compile(db, &d) == OOMSCAN_OK, "%s: %s", d.where, d.msg);
    ck_assert_int_eq((int)db->n_hints, 1);
    return db;
}

/* python/cpython#93253, the frames above its error line */
static const char SEMLOCK_TB[] =
    "Traceback (most recent call last):\n"
    "  File \"/usr/local/lib/python3.8/multiprocessing/context.py\", line 73, in RLock\n"
    "    return RLock(ctx=self.get_context())\n"
    "  File \"/usr/local/lib/python3.8/multiprocessing/synchronize.py\", line 187, in __init__\n"
    "    SemLock.__init__(self, RECURSIVE_MUTEX, 1, 1, ctx=ctx)\n"
    "  File \"/usr/local/lib/python3.8/multiprocessing/synchronize.py\", line 57, in __init__\n"
    "    sl = self._semlock = _multiprocessing.SemLock(\n";

/* babysor/MockingBird#774: torch.save into a full disk */
static const char SAVE_TB[] =
    "Traceback (most recent call last):\n"
    "  File \"E:\\\\ai_ai\\\\MockingBird-main\\\\MockingBird-main\\\\venv\\\\lib\\\\site-packages\\\\torch\\\\serialization.py\", "
    "line 379, in save\n"
    "    _save(obj, opened_zipfile, pickle_module, pickle_protocol)\n";

static const char ENOSPC[] = "OSError: [Errno 28] No space left on device\n";

static const char PATH_COND[] = "{\"path\":\"multiprocessing/synchronize.py\"}";

/* The class of the last finding of `text` (the error line's) under condition `cond`. */
static tax_class class_of(const char *cond, const char *text)
{
    run_out o = scan_text(tbdb_new(cond), text, strlen(text), 0, 0);
    ck_assert_uint_ge(o.st->n, 1);
    tax_class c = o.st->f[o.st->n - 1].cls;
    done(&o);
    return c;
}

START_TEST(test_phase_frame_condition_picks_the_pattern)
{
    char buf[16384];
    /* under SemLock's frames: /dev/shm, whichever kind of condition names them */
    snprintf(buf, sizeof buf, "%s%s", SEMLOCK_TB, ENOSPC);
    ck_assert_int_eq(class_of(PATH_COND, buf), CLS_SHM_EXHAUSTED);
    ck_assert_int_eq(class_of("{\"code\":\"_multiprocessing.SemLock(\"}", buf), CLS_SHM_EXHAUSTED);
    ck_assert_int_eq(class_of("{\"func\":\"RLock\"}", buf), CLS_SHM_EXHAUSTED);
    ck_assert_int_eq(class_of("{\"func\":\"Lock\"}", buf), CLS_DISK_FULL); /* a function is named whole */
    /* under torch.save's, or with no traceback: the disk */
    snprintf(buf, sizeof buf, "%s%s", SAVE_TB, ENOSPC);
    ck_assert_int_eq(class_of(PATH_COND, buf), CLS_DISK_FULL);
    ck_assert_int_eq(class_of(PATH_COND, ENOSPC), CLS_DISK_FULL);
    /* a newer traceback replaces the SemLock one: its frames no longer count */
    snprintf(buf, sizeof buf, "%s%s%s", SEMLOCK_TB, SAVE_TB, ENOSPC);
    ck_assert_int_eq(class_of(PATH_COND, buf), CLS_DISK_FULL);
    /* another rank's traceback is not the error's; its own rank's is */
    size_t n = 0;
    for (const char *l = SEMLOCK_TB; *l;) {
        const char *e = strchr(l, '\n');
        n += (size_t)snprintf(buf + n, sizeof buf - n, "[rank1]: %.*s\n", (int)(e - l), l);
        l = e + 1;
    }
    snprintf(buf + n, sizeof buf - n, "[rank0]: %s", ENOSPC);
    ck_assert_int_eq(class_of(PATH_COND, buf), CLS_DISK_FULL);
    snprintf(buf + n, sizeof buf - n, "[rank1]: %s", ENOSPC);
    ck_assert_int_eq(class_of(PATH_COND, buf), CLS_SHM_EXHAUSTED);
    /* too far above the error (TB_REACH lines) to explain it */
    n = (size_t)snprintf(buf, sizeof buf, "%s", SEMLOCK_TB);
    for (int i = 0; i < 450; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "x\n");
    snprintf(buf + n, sizeof buf - n, "%s", ENOSPC);
    ck_assert_int_eq(class_of(PATH_COND, buf), CLS_DISK_FULL);
}
END_TEST

/* A database of n patterns, each with a function condition of its own but the first two, which share
 * one (n - 1 distinct conditions), loaded and not compiled. */
static pdb *conditions_db(int n)
{
    char doc[16384];
    size_t k = (size_t)snprintf(doc, sizeof doc, "{\"format\":\"oomscan-patterns/1\",\"family\":\"t\",\"patterns\":[");
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(doc + k, sizeof doc - k,
                              "%s{\"id\":\"segfault.t%d\",\"class\":\"segfault\",\"literals\":[\"Segmentation\"],"
                              "\"regex\":\"Segmentation\",\"in_traceback\":{\"func\":\"f%d\"}}", i ? "," : "", i,
                              i < 2 ? 0 : i - 1);
    k += (size_t)snprintf(doc + k, sizeof doc - k, "]}");
    pdb *db = pdb_new();
    oomscan_diag d = {0};
    ck_assert_int_eq(pdb_load_text(db, "t.json", doc, k, &d), OOMSCAN_OK);
    return db;
}

START_TEST(test_phase_frame_condition_is_checked_when_loaded)
{
    const char *bad[] = {"{\"path\":\"\"}", "{\"line\":\"x\"}", "\"multiprocessing\"", "{\"path\":\"a\",\"func\":\"b\"}",
                         "[\"path\"]", "{}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char doc[512];
        int n = snprintf(doc, sizeof doc,
                         "{\"format\":\"oomscan-patterns/1\",\"family\":\"t\",\"patterns\":[{\"id\":\"segfault.t\","
                         "\"class\":\"segfault\",\"literals\":[\"Segmentation\"],\"regex\":\"Segmentation\","
                         "\"in_traceback\":%s}]}", bad[i]);
        pdb *db = pdb_new();
        oomscan_diag d = {0};
        ck_assert_msg(pdb_load_text(db, "t.json", doc, (size_t)n, &d) == OOMSCAN_ERR_FORMAT, "accepted %s", bad[i]);
        ck_assert_ptr_nonnull(strstr(d.msg, "in_traceback"));
        pdb_free(db);
    }
    /* more distinct conditions than a frame's 32-bit mask holds: refused when compiled; the same
     * condition twice is one, so 33 patterns whose first two share one fit */
    oomscan_diag d = {0};
    pdb *db = conditions_db(34);
    ck_assert_int_eq(pdb_compile(db, &d), OOMSCAN_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(d.msg, "in_traceback"));
    pdb_free(db);
    db = conditions_db(33);
    ck_assert_msg(pdb_compile(db, &d) == OOMSCAN_OK, "%s", d.msg);
    ck_assert_int_eq((int)db->n_hints, 32);
    ck_assert_int_eq(db->patterns[0].tb_hint, db->patterns[1].tb_hint);
    pdb_free(db);
}
END_TEST

/* ---- frame lines a terminal wrapped ---------------------------------------------------------- */

/* pytorch/pytorch#4387 (a terminal 88 columns wide): the paths and one "in FUNC" wrapped onto the next
 * line, the error below */
static const char WRAPPED_4387[] =
    "  File \"/home/luhongchao/anaconda2/lib/python2.7/site-packages/torch/utils/data/dataload\n"
    "er.py\", line 301, in __iter__\n"
    "    return DataLoaderIter(self)\n"
    "  File \"/home/luhongchao/anaconda2/lib/python2.7/site-packages/torch/utils/data/dataload\n"
    "er.py\", line 158, in __init__\n"
    "    w.start()\n"
    "  File \"/home/luhongchao/anaconda2/lib/python2.7/multiprocessing/process.py\", line 130, \n"
    "in start\n"
    "    self._popen = Popen(self)\n"
    "  File \"/home/luhongchao/anaconda2/lib/python2.7/multiprocessing/forking.py\", line 121, \n"
    "in __init__\n"
    "    self.pid = os.fork()\n"
    "OSError: [Errno 12] Cannot allocate memory\n";

/* The phase the error of `text` gets under frame rules `frames` (a phases.json "frames" array). */
static tax_phase wrapped_phase(const char *frames, const char *text, char *evidence, size_t cap)
{
    char doc[1024];
    int n = snprintf(doc, sizeof doc, "{\"format\":\"oomscan-phases/1\",\"frames\":%s,\"markers\":[]}", frames);
    static const char pats[] = "{\"format\":\"oomscan-patterns/1\",\"family\":\"t\",\"patterns\":["
                               "{\"id\":\"host_memory_error.t\",\"class\":\"host_memory_error\",\"literals\":"
                               "[\"Cannot allocate memory\"],\"regex\":\"Cannot allocate memory\"}]}";
    pdb *db = pdb_new();
    oomscan_diag d = {0};
    ck_assert_int_eq(pdb_load_text(db, "t.json", pats, sizeof pats - 1, &d), OOMSCAN_OK);
    ck_assert_msg(pdb_load_text(db, "phases.json", doc, (size_t)n, &d) == OOMSCAN_OK, "%s", d.msg);
    ck_assert_msg(pdb_compile(db, &d) == OOMSCAN_OK, "%s", d.msg);
    run_out o = scan_text(db, text, strlen(text), 0, 0);
    const finding *f = only(&o, CLS_HOST_MEMORY_ERROR);
    tax_phase ph = f->phase;
    snprintf(evidence, cap, "%s", f->phase_evidence);
    done(&o);
    return ph;
}

START_TEST(test_phase_frames_a_terminal_wrapped_are_joined)
{
    char ev[256];
    /* the wrapped path: the innermost DataLoader frame, whose "in __init__" is on the next line */
    ck_assert_int_eq(wrapped_phase("[{\"path\":\"torch/utils/data/dataloader.py\",\"phase\":\"data_loading\"}]",
                                   WRAPPED_4387, ev, sizeof ev),
                     PH_DATA_LOADING);
    ck_assert_ptr_nonnull(strstr(ev, "__init__ in dataloader.py"));
    /* cut right after "line 130, ": its function on the next line */
    ck_assert_int_eq(wrapped_phase("[{\"func\":\"start\",\"phase\":\"rollout\"}]", WRAPPED_4387, ev, sizeof ev),
                     PH_ROLLOUT);
    /* and its code line is the one after the continuation, not the continuation */
    ck_assert_int_eq(wrapped_phase("[{\"code\":\"Popen(self)\",\"phase\":\"checkpoint\"}]", WRAPPED_4387, ev, sizeof ev),
                     PH_CHECKPOINT);
    ck_assert_int_eq(wrapped_phase("[{\"code\":\"in start\",\"phase\":\"checkpoint\"}]", WRAPPED_4387, ev, sizeof ev),
                     PH_UNKNOWN);
    /* a cut frame is never joined with a frame line after it (the thread's lines with the first wrap's
     * continuation left out, the last frame unwrapped): joined, the cut path would run into the next
     * frame's text and a rule on the path's start would hold for that frame's function and code */
    static const char NOT_JOINED[] =
        "  File \"/home/luhongchao/anaconda2/lib/python2.7/site-packages/torch/utils/data/dataload\n"
        "  File \"/home/luhongchao/anaconda2/lib/python2.7/multiprocessing/forking.py\", line 121, in __init__\n"
        "    self.pid = os.fork()\n"
        "OSError: [Errno 12] Cannot allocate memory\n";
    ck_assert_int_eq(wrapped_phase("[{\"path\":\"torch/utils/data/\",\"phase\":\"data_loading\"}]", NOT_JOINED, ev,
                                   sizeof ev),
                     PH_UNKNOWN);
    ck_assert_int_eq(wrapped_phase("[{\"path\":\"multiprocessing/forking.py\",\"phase\":\"data_loading\"}]", NOT_JOINED,
                                   ev, sizeof ev),
                     PH_DATA_LOADING);
}
END_TEST

/* A pattern's phase given as weak evidence ("phase_confidence": "weak"): after a strong frame and a weak
 * frame, before a weak marker and the class's default. NVIDIA/nccl#573's WARN and unwinding. */
static const char NCCL_573[] =
    "bfclient02:14681:14750 [0] graph/xml.cc:332 NCCL WARN Could not find real path of /sys/class/pci_bus/0000:0d/../../0000:0d:00.0\n"
    "bfclient02:14681:14750 [0] NCCL INFO graph/xml.cc:648 -> 2\n"
    "bfclient02:14681:14750 [0] NCCL INFO init.cc:581 -> 2\n";

static const finding *weak_pattern_phase(const char *before, run_out *o)
{
    static const char pats[] =
        "{\"format\":\"oomscan-patterns/1\",\"family\":\"t\",\"patterns\":["
        "{\"id\":\"nccl_error.t\",\"class\":\"nccl_error\",\"literals\":[\"NCCL WARN\"],\"regex\":\"NCCL WARN \","
        " \"phase\":\"model_init\",\"phase_confidence\":\"weak\","
        " \"continuation\":{\"lines\":6,\"regex\":[\"init\\\\.cc:[0-9]+ -> (?<nccl_result>[1-6])\"],\"required\":true}}]}";
    static const char phases[] =
        "{\"format\":\"oomscan-phases/1\",\"frames\":[{\"func\":\"backward\",\"phase\":\"backward\"}],"
        "\"weak_frames\":[{\"func\":\"forward\",\"phase\":\"forward\"}],"
        "\"markers\":[{\"literal\":\"NCCL INFO Channel \",\"phase\":\"rollout\",\"confidence\":\"weak\"}],"
        "\"class_phases\":[{\"class\":\"nccl_error\",\"phase\":\"communication\"}]}";
    pdb *db = pdb_new();
    oomscan_diag d = {0};
    ck_assert_msg(pdb_load_text(db, "t.json", pats, sizeof pats - 1, &d) == OOMSCAN_OK, "%s", d.msg);
    ck_assert_msg(pdb_load_text(db, "phases.json", phases, sizeof phases - 1, &d) == OOMSCAN_OK, "%s", d.msg);
    ck_assert_msg(pdb_compile(db, &d) == OOMSCAN_OK, "%s", d.msg);
    char text[2048];
    snprintf(text, sizeof text, "%s%s", before, NCCL_573);
    *o = scan_text(db, text, strlen(text), 0, 0);
    return only(o, CLS_NCCL_ERROR);
}

START_TEST(test_phase_weak_pattern_phase_gives_way_to_frames)
{
    run_out o;
    /* alone: the pattern's phase, weak (before the class's default) */
    const finding *f = weak_pattern_phase("", &o);
    ck_assert_int_eq(f->phase, PH_MODEL_INIT);
    ck_assert(f->phase_weak);
    ck_assert_str_eq(f->phase_evidence, "weak: the message points to model initialisation");
    done(&o);
    /* what comes above it: a weak marker gives way to it; a frame rule, strong or weak, decides first
     * (the rules and the marker's phase are the test's; the lines are NCCL's and PyTorch's) */
    static const struct {
        const char *before;
        tax_phase phase;
        int weak;
    } above[] = {
        {"g148:14937:69361 [0] NCCL INFO Channel 01/1 : 0[0] -> 8[0] [send] via NET/IB/9/GDRDMA/Shared\n", PH_MODEL_INIT, 1},
        {"Traceback (most recent call last):\n"
         "  File \"/usr/lib/python3/dist-packages/torch/_tensor.py\", line 488, in backward\n"
         "    torch.autograd.backward(\n",
         PH_BACKWARD, 0},
        {"Traceback (most recent call last):\n"
         "  File \"/usr/local/lib/python3.10/dist-packages/torch/nn/modules/linear.py\", line 114, in forward\n"
         "    return F.linear(input, self.weight, self.bias)\n",
         PH_FORWARD, 1},
    };
    for (size_t i = 0; i < sizeof above / sizeof above[0]; i++) {
        f = weak_pattern_phase(above[i].before, &o);
        ck_assert_int_eq(f->phase, above[i].phase);
        ck_assert_int_eq(!!f->phase_weak, above[i].weak);
        done(&o);
    }
    /* "phase_confidence" is strong or weak, and goes with a phase */
    const char *bad[] = {"\"phase\":\"model_init\",\"phase_confidence\":\"maybe\"", "\"phase_confidence\":\"weak\""};
    for (size_t i = 0; i < 2; i++) {
        char doc[512];
        int n = snprintf(doc, sizeof doc,
                         "{\"format\":\"oomscan-patterns/1\",\"family\":\"t\",\"patterns\":[{\"id\":\"segfault.t\","
                         "\"class\":\"segfault\",\"literals\":[\"Segmentation\"],\"regex\":\"Segmentation\",%s}]}", bad[i]);
        pdb *db = pdb_new();
        oomscan_diag d = {0};
        ck_assert_int_eq(pdb_load_text(db, "t.json", doc, (size_t)n, &d), OOMSCAN_ERR_FORMAT);
        ck_assert_ptr_nonnull(strstr(d.msg, "phase_confidence"));
        pdb_free(db);
    }
}
END_TEST

/* The OOM line of verl-project/verl#2828 (fixtures/corpus/cuda_oom-verl-2828.log) */
#define OOM_2828 "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 13.91 GiB. GPU 0 has a total capacity of 79.11 GiB of which 8.85 GiB is free. Process 23444 has 70.25 GiB memory in use. Of the allocated memory 60.49 GiB is allocated by PyTorch, and 6.77 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n"

/* The lexicon under the rules: a database with one exact rule and a few stems (lexicon.json's shape). */
static const char PH_LEXICON[] =
    "{\"format\":\"oomscan-lexicon/1\",\"skip_paths\":[\"torch/utils/checkpoint\"],"
    "\"task_markers\":[{\"literal\":\"ray::\"}],\"stems\":["
    "{\"words\":\"log prob*\",\"phase\":\"log_probs\"},{\"words\":\"logprob*\",\"phase\":\"log_probs\"},"
    "{\"words\":\"micro batch\",\"phase\":\"rollout\"},"
    "{\"words\":\"forward micro batch\",\"phase\":null},"
    "{\"words\":\"all gather*\",\"phase\":\"communication\",\"level\":\"fallback\"},"
    "{\"words\":\"checkpoint\",\"phase\":\"checkpoint\"},"
    "{\"words\":\"dataset\",\"phase\":\"data_loading\",\"level\":\"weak\"},"
    "{\"words\":\"preprocess*\",\"phase\":\"data_loading\"}]}";

static run_out run_lex(const char *text) { return scan_text(phdb_with(PH_LEXICON), text, strlen(text), 0, 0); }

/* NVIDIA-NeMo/RL#1178's frames (no rule names get_logprobs), then the OOM line of verl-project/verl#2828 */
static const char NEMO_1178[] =
    "Traceback (most recent call last):\n"
    "  File \"/lustre/fsw/portfolios/coreai/users/alexq/RL-dev/nemo_rl/algorithms/grpo.py\", line 783, in grpo_train\n"
    "    fprop_logprobs = policy.get_logprobs(train_data)[\"logprobs\"]\n"
    "  File \"/lustre/fsw/portfolios/coreai/users/alexq/RL-dev/nemo_rl/models/policy/lm_policy.py\", line 268, in get_logprobs\n"
    "    self.worker_group.get_all_worker_results(futures)\n"
    OOM_2828;

START_TEST(test_phase_lexicon_reads_names_no_rule_knows)
{
    run_out o = run_lex(NEMO_1178);
    const finding *f = only(&o, CLS_CUDA_OOM);
    ck_assert_int_eq(f->phase, PH_LOG_PROBS);
    ck_assert_int_eq(f->phase_weak, 0);
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, "get_logprobs"));
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, "\"logprob*\""));
    done(&o);
    /* without the lexicon the same log has no phase: the reading is the lexicon's */
    o = run(NEMO_1178);
    ck_assert_int_eq(only(&o, CLS_CUDA_OOM)->phase, PH_UNKNOWN);
    done(&o);
}
END_TEST

/* verl-project/verl#2828: _forward_micro_batch serves log-probs and training; the ambiguous stem
 * "forward micro batch" blocks the (test-only) "micro batch" inside it, and the outer frame decides */
static const char VERL_2828[] =
    "Traceback (most recent call last):\n"
    "  File \"/verl/verl/workers/fsdp_workers.py\", line 782, in compute_log_prob\n"
    "    output, entropys = self.actor.compute_log_prob(data=data, calculate_entropy=True)\n"
    "  File \"/verl/verl/workers/actor/dp_actor.py\", line 266, in _forward_micro_batch\n"
    "    output = self.actor_module(\n"
    OOM_2828;

START_TEST(test_phase_lexicon_ambiguous_name_blocks_its_parts)
{
    run_out o = run_lex(VERL_2828);
    const finding *f = only(&o, CLS_CUDA_OOM);
    ck_assert_int_eq(f->phase, PH_LOG_PROBS);
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, "compute_log_prob"));
    done(&o);
}
END_TEST

/* An exact rule anywhere in the stack beats a stem (loss.backward() under a log-prob-named caller),
 * and the last of the strongest readings decides within a name (preprocess_dataset: preprocessing) */
START_TEST(test_phase_lexicon_under_the_rules_and_strongest_last)
{
    run_out o = run_lex("Traceback (most recent call last):\n"
                        "  File \"/x/train.py\", line 1, in compute_log_prob\n"
                        "    loss.backward()\n"
                        OOM_2828);
    ck_assert_int_eq(only(&o, CLS_CUDA_OOM)->phase, PH_BACKWARD);
    done(&o);
    /* hiyouga/LLaMA-Factory (fixtures/heldout6/nccl_error-pytorch-111187.log): a strong reading, not the weak one after it */
    o = run_lex("Traceback (most recent call last):\n"
                "  File \"/mnt/c/Users/marco/Desktop/finetunegpl/LLaMA-Efficient-Tuning/src/llmtuner/dsets/preprocess.py\", line 216, in preprocess_dataset\n"
                "    dataset = dataset.map(\n"
                OOM_2828);
    const finding *f = only(&o, CLS_CUDA_OOM);
    ck_assert_int_eq(f->phase, PH_DATA_LOADING);
    ck_assert_int_eq(f->phase_weak, 0);
    done(&o);
    /* a skipped path is not read: activation checkpointing is no checkpoint */
    o = run_lex("Traceback (most recent call last):\n"
                "  File \"/usr/lib/python3/dist-packages/torch/utils/checkpoint.py\", line 1, in checkpoint\n"
                "    return CheckpointFunction.apply(function, preserve, *args)\n"
                OOM_2828);
    ck_assert_int_eq(only(&o, CLS_CUDA_OOM)->phase, PH_UNKNOWN);
    done(&o);
}
END_TEST

/* hiyouga/EasyR1#427: Ray's task header names the method; no traceback frame says more */
START_TEST(test_phase_lexicon_reads_ray_task_methods)
{
    run_out o = run_lex("ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_ref_compute_log_probs() "
                        "(pid=33458, ip=172.17.0.2, actor_id=11af29bb9fed89a5977131d901000000)\n"
                        OOM_2828);
    const finding *f = only(&o, CLS_CUDA_OOM);
    ck_assert_int_eq(f->phase, PH_LOG_PROBS);
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, "Ray task actor_rollout_ref_compute_log_probs"));
    done(&o);
    /* a method with no reading (ray::Runner.run) gives nothing */
    o = run_lex("ray.exceptions.RayTaskError(OutOfMemoryError): ray::Runner.run() (pid=16098, ip=172.17.0.2)\n"
                OOM_2828);
    ck_assert_int_eq(only(&o, CLS_CUDA_OOM)->phase, PH_UNKNOWN);
    done(&o);
}
END_TEST

/* A strong phase from a marker (here Ray's task header, read by the lexicon) gives way to the phase the
 * failure's own traceback shows when the same failure is printed again below it (Ray prints the
 * exception above the task's traceback and again under it): the frame is the failure's own evidence.
 * hiyouga/EasyR1#427's header, NVIDIA-NeMo/RL#1178's frame, verl-project/verl#2828's OOM line. */
START_TEST(test_phase_traceback_outranks_a_marker_of_the_same_failure)
{
    run_out o = run_lex("ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_ref_compute_log_probs() "
                        "(pid=33458, ip=172.17.0.2, actor_id=11af29bb9fed89a5977131d901000000)\n" OOM_2828
                        "Traceback (most recent call last):\n"
                        "  File \"/lustre/fsw/portfolios/coreai/users/alexq/RL-dev/nemo_rl/algorithms/grpo.py\", line 783, in grpo_train\n"
                        "    loss.backward()\n" OOM_2828);
    const finding *f = only(&o, CLS_CUDA_OOM);
    ck_assert_int_eq(f->phase, PH_BACKWARD);
    ck_assert_int_eq(f->phase_from_frames, 1);
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, "loss.backward("));
    done(&o);
}
END_TEST

/* sgl-project/sglang#5491 (fixtures/heldout6/illegal_memory_access-sglang-5491.log): FlashInfer's CUDA
 * check prints the error, then the scheduler logs its traceback: the error comes before its stack */
#define SGLANG_5491_ERR                                                                                             \
    "CUDA Error: an illegal memory access was encountered (CUDA Error: 700an illegal memory access was "             \
    "encountered)  (/opt/conda/lib/python3.10/site-packages/flashinfer/data/include/flashinfer/attention/"           \
    "prefill.cuh700: line ) 2349/opt/conda/lib/python3.10\n"                                                         \
    " at function cudaLaunchKernel((void*)kernel, nblks, nthrs, args, smem_size, stream)\n"
#define SGLANG_5491_TB                                                                                              \
    "[2025-04-22 15:12:46 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"                    \
    "  File \"/opt/conda/lib/python3.10/site-packages/sglang/srt/managers/scheduler.py\", line 2011, in "           \
    "run_scheduler_process\n"                                                                                        \
    "    scheduler.event_loop_normal()\n"                                                                            \
    "  File \"/opt/conda/lib/python3.10/site-packages/sglang/srt/managers/scheduler.py\", line 1367, in run_batch\n" \
    "    ) = self.draft_worker.forward_batch_speculative_generation(batch)\n"

static run_out follow_run(const char *text)
{
    static const char pats[] =
        "{\"format\":\"oomscan-patterns/1\",\"family\":\"test\",\"patterns\":["
        "{\"id\":\"illegal_memory_access.test\",\"class\":\"illegal_memory_access\","
        "\"literals\":[\"an illegal memory access\"],\"regex\":\"an illegal memory access was encountered\"}]}";
    static const char phases[] =
        "{\"format\":\"oomscan-phases/1\",\"frames\":[{\"func\":\"run_batch\",\"phase\":\"rollout\"}],"
        "\"weak_frames\":[{\"path\":\"/sglang/srt/\",\"phase\":\"rollout\"}],\"markers\":[]}";
    pdb *db = pdb_new();
    ck_assert_ptr_nonnull(db);
    oomscan_diag d = {0};
    ck_assert_int_eq(pdb_load_text(db, "test.json", pats, sizeof pats - 1, &d), OOMSCAN_OK);
    ck_assert_msg(pdb_load_text(db, "phases.json", phases, sizeof phases - 1, &d) == OOMSCAN_OK, "%s", d.msg);
    ck_assert_msg(pdb_compile(db, &d) == OOMSCAN_OK, "%s: %s", d.where, d.msg);
    return scan_text(db, text, strlen(text), 0, 0);
}

START_TEST(test_phase_traceback_after_the_message_names_its_phase)
{
    /* the whole traceback: its innermost ruled frame (run_batch) decides, strong, though the outer
     * frame had given a weak answer first */
    run_out o = follow_run(SGLANG_5491_ERR SGLANG_5491_TB);
    const finding *f = only(&o, CLS_ILLEGAL_MEMORY_ACCESS);
    ck_assert_int_eq(f->phase, PH_ROLLOUT);
    ck_assert_int_eq(f->phase_weak, 0);
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, "run_batch"));
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, "printed after the failure"));
    done(&o);
    /* cut after the outer frame: only the weak path rule speaks */
    const char *cut = strstr(SGLANG_5491_ERR SGLANG_5491_TB, "    scheduler.event_loop_normal()");
    char buf[2048];
    snprintf(buf, sizeof buf, "%.*s", (int)(cut - (SGLANG_5491_ERR SGLANG_5491_TB)), SGLANG_5491_ERR SGLANG_5491_TB);
    o = follow_run(buf);
    f = only(&o, CLS_ILLEGAL_MEMORY_ACCESS);
    ck_assert_int_eq(f->phase, PH_ROLLOUT);
    ck_assert_int_eq(f->phase_weak, 1);
    done(&o);
    /* a traceback that starts four lines on (a chained exception's, another failure's) is not its own */
    o = follow_run(SGLANG_5491_ERR "\n\nDuring handling of the above exception, another exception occurred:\n"
                   SGLANG_5491_TB);
    ck_assert_int_eq(only(&o, CLS_ILLEGAL_MEMORY_ACCESS)->phase, PH_UNKNOWN);
    done(&o);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("phase");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_phase_faulthandler_stack_below_failure_names_its_phase);
    tcase_add_test(tc, test_phase_stack_of_another_stream_or_too_far_gives_nothing);
    tcase_add_test(tc, test_phase_other_threads_and_late_fallbacks_give_nothing);
    tcase_add_test(tc, test_phase_late_stack_never_overrides_a_traceback);
    tcase_add_test(tc, test_phase_faulthandler_order_is_innermost_first);
    tcase_add_test(tc, test_phase_c10_stack_header_keeps_the_python_traceback);
    tcase_add_test(tc, test_phase_weak_class_default_and_weak_marker_reach);
    tcase_add_test(tc, test_phase_weak_frames_give_way);
    tcase_add_test(tc, test_phase_late_marker_needs_the_killed_pid);
    tcase_add_test(tc, test_phase_late_marker_without_a_pid_says_only_where);
    tcase_add_test(tc, test_phase_frame_condition_picks_the_pattern);
    tcase_add_test(tc, test_phase_frame_condition_is_checked_when_loaded);
    tcase_add_test(tc, test_phase_frames_a_terminal_wrapped_are_joined);
    tcase_add_test(tc, test_phase_weak_pattern_phase_gives_way_to_frames);
    tcase_add_test(tc, test_phase_lexicon_reads_names_no_rule_knows);
    tcase_add_test(tc, test_phase_lexicon_ambiguous_name_blocks_its_parts);
    tcase_add_test(tc, test_phase_lexicon_under_the_rules_and_strongest_last);
    tcase_add_test(tc, test_phase_lexicon_reads_ray_task_methods);
    tcase_add_test(tc, test_phase_traceback_outranks_a_marker_of_the_same_failure);
    tcase_add_test(tc, test_phase_traceback_after_the_message_names_its_phase);
    suite_add_tcase(s, tc);
    return check_run(s);
}
