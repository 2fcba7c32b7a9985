/* check_dumps.c - crash dumps recognised by content and read into the story (src/dumps/): torchelastic
 * error files, kernel oom-killer blocks, faulthandler files, NCCL flight recorder dumps read across
 * ranks, CUDA memory snapshots measured against the OOM. Real files from fixtures/dumps/ where they
 * could be made here; the GPU-only formats are constructed (fixtures/dumps/make_gpu_dumps.py). */
#include <check.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "dumps/dumps.h"
#include "dumps/common.h" /* to look into the accumulator */
#include "dumps/pickle.h"
#include "membuf.h"

static pdb *db;

static void setup(void)
{
    /* epoch times read from dumps are shown in local time: the tests' is UTC unless one says */
    setenv("TZ", "UTC0", 1);
    tzset();
    db = pdb_new();
    oomscan_diag d;
    ck_assert_int_eq(pdb_load_embedded(db, &d), OOMSCAN_OK);
    ck_assert_int_eq(pdb_compile(db, &d), OOMSCAN_OK);
}

static void teardown(void) { pdb_free(db); }

static char *slurp_fixture(const char *rel, size_t *n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/fixtures/dumps/%s", OOMSCAN_SOURCE_DIR, rel);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    ck_assert_int_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = 0;
    fclose(f);
    *n = (size_t)len;
    return buf;
}

/* One source through the same steps as the driver: sniff the head, then the dump reader (or the
 * scanner for a log). Returns the kind; `why` gets a decode failure. */
static dump_kind read_one(const char *name, const char *data, size_t n, story *st, dumps_acc *acc, char **why)
{
    size_t nh = n < DUMPS_SNIFF_BYTES ? n : DUMPS_SNIFF_BYTES;
    dump_kind k = dumps_sniff((const unsigned char *)data, nh);
    scanner *sc = scanner_new(db);
    phase_state *ps = phase_new(db);
    scan_source src = {.path = name};
    scan_source_from_name(&src);
    scan_result res;
    *why = NULL;
    if (k == DUMP_NONE) {
        membuf m = {data, n, 0, 0};
        ck_assert_int_eq(scanner_run(sc, mem_read, &m, &src, ps, story_sink(st), &res, NULL, NULL), OOMSCAN_OK);
    } else {
        membuf m = {data + nh, n - nh, 0, 0};
        ck_assert_int_eq(dumps_read(k, (const unsigned char *)data, nh, mem_read, &m, sc, ps, &src, st, acc, &res, why),
                         OOMSCAN_OK);
    }
    scanner_free(sc);
    phase_free(ps);
    return k;
}

static dump_kind read_fixture(const char *rel, story *st, dumps_acc *acc, char **why)
{
    size_t n;
    char *data = slurp_fixture(rel, &n);
    dump_kind k = read_one(rel, data, n, st, acc, why);
    free(data);
    return k;
}

static const finding *only_of(const story *st, tax_class cls)
{
    const finding *hit = NULL;
    for (size_t i = 0; i < st->n; i++)
        if (st->f[i].cls == cls) {
            ck_assert_msg(hit == NULL, "more than one finding of class %s", tax_class_name(cls));
            hit = &st->f[i];
        }
    ck_assert_msg(hit != NULL, "no finding of class %s", tax_class_name(cls));
    return hit;
}

static double mem_num(const finding *f, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(f->memory, key);
    ck_assert_msg(cJSON_IsNumber(v), "memory.%s missing", key);
    return v->valuedouble;
}

#define SNIFF(s) dumps_sniff((const unsigned char *)(s), sizeof(s) - 1)

START_TEST(test_dumps_sniff_tells_each_kind_by_content)
{
    ck_assert_int_eq(SNIFF("{\"message\": {\"message\": \"RuntimeError: x\", \"extraInfo\": {\"py_callstack\": \"\"}}}"),
                     DUMP_ERROR_FILE);
    ck_assert_int_eq(SNIFF("  {\"message\": \"Signal 9 (SIGKILL) received by PID 7\", \"timestamp\": 1}"), DUMP_ERROR_FILE);
    ck_assert_int_eq(SNIFF("{\"entries\": [{\"collective_seq_id\": 3"), DUMP_FR_JSON);
    ck_assert_int_eq(SNIFF("{\"model\": \"llama\", \"lr\": 0.1}"), DUMP_NONE);
    ck_assert_int_eq(SNIFF("\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}"), DUMP_PICKLE);
    ck_assert_int_eq(SNIFF("[ 4018.450000] Killed process 935 (python) total-vm:113656kB, anon-rss:102104kB\n"
                           "[ 4018.460000] oom_reaper: reaped process 935 (python)\n"),
                     DUMP_KERNEL);
    ck_assert_int_eq(SNIFF("[Thu Mar 14 01:57:55 2019] Killed process 89746 (python)\n"), DUMP_KERNEL);
    ck_assert_int_eq(SNIFF("Mar 14 01:57:55 gpu-node3 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1\n"), DUMP_KERNEL);
    ck_assert_int_eq(SNIFF("2024-04-29T14:55:41,679700+02:00 Out of memory: Killed process 1 (perl)\n"), DUMP_KERNEL);
    ck_assert_int_eq(SNIFF("Fatal Python error: Segmentation fault\n\nThread 0x0000 (most recent call first):\n"),
                     DUMP_FAULTHANDLER);
    ck_assert_int_eq(SNIFF("Epoch 1: loss 0.3\nEpoch 2: loss 0.2\n[ 12.5] not a kernel line? no: one of three\n"),
                     DUMP_NONE);
    ck_assert_int_eq(SNIFF("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n"), DUMP_NONE);
    /* oomscan's own output: an NDJSON record and the JSON document (cJSON's tab-indented form) */
    ck_assert_int_eq(SNIFF("{\"id\":\"dbede415e621907a\",\"class\":\"host_oom_kill\",\"phase\":\"unknown\","
                           "\"role\":\"root\",\"title\":\"Slurm step/job exceeded its memory limit\",\"type\":\"finding\","
                           "\"merge\":{\"v\":1}}\n{\"id\":\"dbede415e621907b\"}\n"),
                     DUMP_OOMSCAN);
    ck_assert_int_eq(SNIFF("{\n\t\"schema\":\t\"oomscan/1\",\n\t\"tool\":\t{\n"), DUMP_OOMSCAN);
    /* JSON-lines logs are logs, read by their messages, whatever their first record's keys say (issue 35:
     * an error file's, a flight recorder's, an oomscan record's) */
    ck_assert_int_eq(SNIFF("{\"message\": \"step 1\", \"timestamp\": 1700000000}\n{\"message\": \"step 2\"}\n"), DUMP_JSONL);
    ck_assert_int_eq(SNIFF("{\"msg\": \"pg_config ready\", \"pg_config\": {}, \"version\": \"1\", \"entries\": []}\n{\"msg\": \"x\"}\n"),
                     DUMP_JSONL);
    ck_assert_int_eq(SNIFF("{\"id\":\"7\",\"role\":\"worker\",\"title\":\"rank 0\"}\n{\"id\":\"8\"}\n"), DUMP_JSONL);
    ck_assert_int_eq(SNIFF("{\"message\": \"one record\", \"timestamp\": 1, \"level\": \"INFO\"}"), DUMP_NONE);
    /* a JSON log line that merely has an id is a log */
    ck_assert_int_eq(SNIFF("{\"id\":\"42\",\"level\":\"error\",\"msg\":\"CUDA out of memory\"}\n"), DUMP_NONE);
}
END_TEST

START_TEST(test_dumps_error_file_from_a_real_torchrun_job)
{
    story *st = story_new();
    char *why;
    const char *rel = "torchrun/job42_sfy4zqds/attempt_0/1/error.json";
    ck_assert_int_eq(read_fixture(rel, st, NULL, &why), DUMP_ERROR_FILE);
    ck_assert_ptr_null(why);
    const finding *f = only_of(st, CLS_HOST_MEMORY_ERROR);
    ck_assert_str_eq(f->local_rank, "1"); /* from attempt_0/1/ */
    ck_assert_str_eq(f->first.kind, "error_file");
    ck_assert(f->first.has_time);
    char t[64];
    timefmt_format(&f->first.time, t, sizeof t);
    ck_assert_str_eq(t, "2026-11-23T16:43:38"); /* extraInfo.timestamp 1795452218, TZ=UTC0 */
    ck_assert_double_eq(mem_num(f, "requested_bytes"), 35184372088832.0);
    /* the worker's own stderr says the same exception: one finding, not two */
    ck_assert_int_eq(read_fixture("torchrun/job42_sfy4zqds/attempt_0/1/stderr.log", st, NULL, &why), DUMP_NONE);
    f = only_of(st, CLS_HOST_MEMORY_ERROR);
    ck_assert_uint_eq(f->occurrences, 2);
    story_free(st);
}
END_TEST

/* An error file's time is the epoch seconds torchelastic wrote (time.time()) on the clock the job's logs
 * print: local time, as torchrun's own summary shows it (datetime.fromtimestamp). Its windows are line 1
 * of the file (one JSON document), not lines of the call stack scanned inside it. */
START_TEST(test_dumps_error_file_time_is_local_and_its_line_the_files)
{
    static const char a[] = "{\"message\": \"Signal 9 (SIGKILL) received by PID 4242\", \"timestamp\": 1700000000}";
    setenv("TZ", "IST-5:30", 1); /* UTC+05:30 */
    tzset();
    story *st = story_new();
    char *why;
    ck_assert_int_eq(read_one("logs/run/attempt_2/5/error.json", a, sizeof a - 1, st, NULL, &why), DUMP_ERROR_FILE);
    const finding *f = only_of(st, CLS_HOST_OOM_KILL);
    char t[64];
    timefmt_format(&f->first.time, t, sizeof t);
    ck_assert_str_eq(t, "2023-11-15T03:43:20"); /* 2023-11-14T22:13:20Z */
    story_free(st);
    setenv("TZ", "UTC0", 1);
    tzset();
    st = story_new();
    const char *rel = "torchrun/job42_sfy4zqds/attempt_0/1/error.json";
    ck_assert_int_eq(read_fixture(rel, st, NULL, &why), DUMP_ERROR_FILE);
    f = only_of(st, CLS_HOST_MEMORY_ERROR);
    ck_assert_uint_ge(f->n_windows, 1);
    for (size_t k = 0; k < f->n_windows; k++) {
        ck_assert_uint_eq(f->windows[k].line, 1);
        ck_assert_str_eq(f->windows[k].kind, "error_file");
    }
    ck_assert_uint_eq(f->first.line, 1);
    story_free(st);
}
END_TEST

START_TEST(test_dumps_error_file_shapes_string_message_list_stack_error_code)
{
    /* message as a string with a top-level timestamp (the shape ProcessFailure also reads) */
    static const char a[] = "{\"message\": \"Signal 9 (SIGKILL) received by PID 4242\", \"timestamp\": 1700000000}";
    story *st = story_new();
    char *why;
    ck_assert_int_eq(read_one("logs/run/attempt_2/5/error.json", a, sizeof a - 1, st, NULL, &why), DUMP_ERROR_FILE);
    const finding *f = only_of(st, CLS_HOST_OOM_KILL);
    ck_assert_str_eq(f->local_rank, "5");
    ck_assert(f->first.has_time && f->first.time.hour == 22 && f->first.time.year == 2023);
    story_free(st);
    /* py_callstack as a list of lines, and errorCode (a signal) added by dump_error_file */
    static const char b[] =
        "{\"message\": {\"message\": \"RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB\", \"extraInfo\": "
        "{\"py_callstack\": [\"Traceback (most recent call last):\\n\", \"  File \\\"train.py\\\", line 9, in step\\n\", "
        "\"    loss.backward()\\n\", \"RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB\\n\"], "
        "\"timestamp\": \"1700000000\"}, \"errorCode\": -11}}";
    st = story_new();
    ck_assert_int_eq(read_one("error.json", b, sizeof b - 1, st, NULL, &why), DUMP_ERROR_FILE);
    f = only_of(st, CLS_CUDA_OOM);
    ck_assert_int_eq(f->phase, PH_BACKWARD); /* the call stack is phase evidence */
    ck_assert_double_eq(mem_num(f, "exitcode"), -11);
    ck_assert_double_eq(mem_num(f, "signal"), 11);
    ck_assert_double_eq(mem_num(f, "requested_bytes"), 20971520);
    story_free(st);
    /* not JSON after all: a named reason, nothing found */
    static const char c[] = "{\"message\": {\"extraInfo\": ";
    st = story_new();
    ck_assert_int_eq(read_one("error.json", c, sizeof c - 1, st, NULL, &why), DUMP_ERROR_FILE);
    ck_assert_ptr_nonnull(why);
    ck_assert_str_eq(why, "error file: not valid JSON");
    ck_assert_uint_eq(st->n, 0);
    free(why);
    story_free(st);
}
END_TEST

START_TEST(test_dumps_kernel_block_is_one_event_with_every_figure)
{
    /* a real block (fixtures/corpus/host_oom_kill-qaconv-19.log) as journalctl -k prints it, and the
     * pre-5.1 form without UID/pgtables (fixtures/corpus sample, [Thu Mar 14 ...] stamps) */
    static const char log[] =
        "Mar 14 01:57:50 gpu-node3 kernel: [441280.839000] python invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0\n"
        "Mar 14 01:57:50 gpu-node3 kernel: [441280.839800] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice/user-1000.slice/user@1000.service,task=python,pid=698405,uid=1000\n"
        "Mar 14 01:57:50 gpu-node3 kernel: [441280.839852] Out of memory: Killed process 698405 (python) total-vm:49978204kB, anon-rss:12918388kB, file-rss:68668kB, shmem-rss:53352kB, UID:1000 pgtables:49772kB oom_score_adj:0\n"
        "Mar 14 01:57:51 gpu-node3 kernel: [441281.626336] oom_reaper: reaped process 698405 (python), now anon-rss:0kB, file-rss:68664kB, shmem-rss:53172kB\n";
    story *st = story_new();
    char *why;
    ck_assert_int_eq(read_one("node3/kern.log", log, sizeof log - 1, st, NULL, &why), DUMP_KERNEL);
    const finding *f = only_of(st, CLS_HOST_OOM_KILL);
    ck_assert_str_eq(f->first.kind, "kernel");
    ck_assert_str_eq(f->host, "gpu-node3");
    ck_assert_str_eq(f->pid, "698405");
    ck_assert_double_eq(mem_num(f, "anon_rss_bytes"), 12918388.0 * 1024);
    ck_assert_double_eq(mem_num(f, "file_rss_bytes"), 68668.0 * 1024);
    ck_assert_double_eq(mem_num(f, "shmem_rss_bytes"), 53352.0 * 1024);
    ck_assert_double_eq(mem_num(f, "pgtables_bytes"), 49772.0 * 1024);
    ck_assert_double_eq(mem_num(f, "uid"), 1000);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f->memory, "constraint")), "CONSTRAINT_NONE");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f->memory, "invoked_by")), "python");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f->memory, "reaped")));
    story_free(st);

    static const char old[] =
        "[Thu Mar 14 01:57:55 2019] python invoked oom-killer: gfp_mask=0x14200ca(GFP_HIGHUSER_MOVABLE), nodemask=(null), order=0, oom_score_adj=0\n"
        "[Thu Mar 14 01:57:55 2019] Out of memory: Kill process 89746 (python) score 830 or sacrifice child\n"
        "[Thu Mar 14 01:57:55 2019] Killed process 89746 (python) total-vm:118026216kB, anon-rss:109819332kB, file-rss:3324kB, shmem-rss:0kB\n";
    st = story_new();
    ck_assert_int_eq(read_one("dmesg-T.txt", old, sizeof old - 1, st, NULL, &why), DUMP_KERNEL);
    f = only_of(st, CLS_HOST_OOM_KILL);
    ck_assert_double_eq(mem_num(f, "file_rss_bytes"), 3324.0 * 1024);
    ck_assert_double_eq(mem_num(f, "shmem_rss_bytes"), 0);
    ck_assert(!cJSON_HasObjectItem(f->memory, "pgtables_bytes"));
    ck_assert_str_eq(f->first.kind, "kernel");
    story_free(st);
}
END_TEST

START_TEST(test_dumps_kernel_block_of_a_real_cgroup_kill_is_one_finding)
{
    /* made here by the realjobs scenario cgroup_oom_kill: a torchrun worker in a 256 MiB cgroup */
    story *st = story_new();
    char *why;
    ck_assert_int_eq(read_fixture("../realjobs/cgroup_oom_kill/job/dmesg.log", st, NULL, &why), DUMP_KERNEL);
    const finding *f = only_of(st, CLS_HOST_OOM_KILL); /* the "invoked oom-killer" line folded in */
    ck_assert_uint_eq(f->first.line, 1);               /* the block starts there */
    ck_assert_double_eq(mem_num(f, "pid"), 30324);
    ck_assert_double_eq(mem_num(f, "cgroup_limit_bytes"), 268435456);
    ck_assert_double_eq(mem_num(f, "file_rss_bytes"), 126388.0 * 1024);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f->memory, "constraint")), "CONSTRAINT_MEMCG");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f->memory, "cgroup")));
    story_free(st);
}
END_TEST

START_TEST(test_dumps_faulthandler_file_gives_segfault_with_current_thread_phase)
{
    story *st = story_new();
    char *why;
    ck_assert_int_eq(read_fixture("faulthandler/fault.log", st, NULL, &why), DUMP_FAULTHANDLER);
    const finding *f = only_of(st, CLS_SEGFAULT);
    ck_assert_str_eq(f->first.kind, "faulthandler");
    ck_assert_int_eq(f->phase, PH_FORWARD);
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, "train_step")); /* the current thread's, not the idle one's */
    story_free(st);
}
END_TEST

static story *flight_recorder_job(const char *dir, const char *fmt, int ranks, int with_logs)
{
    story *st = story_new();
    dumps_acc *acc = dumps_acc_new();
    char rel[256], *why;
    for (int r = 0; r < ranks; r++) {
        snprintf(rel, sizeof rel, fmt, dir, r);
        dump_kind k = read_fixture(rel, st, acc, &why);
        ck_assert(k == DUMP_PICKLE || k == DUMP_FR_JSON);
        ck_assert_msg(why == NULL, "%s: %s", rel, why);
    }
    if (with_logs)
        read_fixture("flight_recorder/rank_logs.log", st, acc, &why);
    ck_assert_int_eq(dumps_acc_finish(acc, db, st), 0);
    dumps_acc_free(acc);
    return st;
}

static const finding *fr_finding(const story *st)
{
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(st->f[i].pattern->id, "nccl_timeout.flight_recorder_missing_rank") == 0)
            return &st->f[i];
    ck_abort_msg("no flight recorder finding");
    return NULL;
}

START_TEST(test_dumps_flight_recorder_names_the_rank_that_never_joined)
{
    story *st = flight_recorder_job("flight_recorder", "%s/nccl_trace_rank_%d", 8, 1);
    const finding *f = fr_finding(st);
    ck_assert_int_eq(f->cls, CLS_NCCL_TIMEOUT);
    ck_assert_double_eq(mem_num(f, "missing_ranks"), 6);
    ck_assert_double_eq(mem_num(f, "seq"), 7753);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f->memory, "op")), "nccl:_reduce_scatter_base");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f->memory, "waiting_ranks")), "0,1,2,3,4,5,7");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f->memory, "input_sizes")), "[[544997376]]");
    ck_assert_str_eq(f->rank, "6");
    ck_assert_str_eq(f->first.kind, "flight_recorder");
    ck_assert_int_eq(f->phase, PH_BACKWARD); /* its frames: FSDP's post-backward hook */
    ck_assert_ptr_nonnull(strstr(f->first.path, "nccl_trace_rank_6"));
    /* it is the root: the real watchdog timeouts of the job's logs are its consequences */
    story_finish(st, "");
    f = fr_finding(st);
    ck_assert(f->is_root);
    long fr_idx = (long)(f - st->f);
    int echoes = 0;
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(st->f[i].pattern->id, "nccl_timeout.watchdog_collective_timeout") == 0) {
            ck_assert(!st->f[i].is_root);
            ck_assert_int_eq(st->f[i].caused_by, fr_idx);
            echoes++;
        }
    ck_assert_int_eq(echoes, 1);
    story_free(st);
    /* the JSON form (2.5+, pg_status as strings) gives the same analysis */
    st = flight_recorder_job("flight_recorder_json", "%s/nccl_trace_rank_%d.json", 2, 0);
    f = fr_finding(st);
    ck_assert_double_eq(mem_num(f, "missing_ranks"), 1);
    ck_assert_double_eq(mem_num(f, "seq"), 42);
    story_free(st);
    /* every rank at the same collective: nobody is missing, no finding */
    st = flight_recorder_job("flight_recorder", "%s/nccl_trace_rank_%d", 6, 0);
    for (size_t i = 0; i < st->n; i++)
        ck_assert_str_ne(st->f[i].pattern->id, "nccl_timeout.flight_recorder_missing_rank");
    story_free(st);
}
END_TEST

START_TEST(test_dumps_flight_recorder_names_a_size_mismatch)
{
    /* every rank at collective 5, but with different sizes: a mismatch, not a missing rank */
    story *st = flight_recorder_job("flight_recorder_mismatch", "%s/nccl_trace_rank_%d", 2, 0);
    ck_assert_uint_eq(st->n, 1);
    ck_assert_str_eq(st->f[0].pattern->id, "nccl_timeout.flight_recorder_mismatch");
    ck_assert_double_eq(mem_num(&st->f[0], "seq"), 5);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st->f[0].memory, "other_input_sizes")), "[[2048]]");
    ck_assert_str_eq(st->f[0].rank, "1");
    ck_assert_str_eq(st->f[0].first.kind, "flight_recorder");
    story_free(st);
    /* the same dumps as an all_to_all, whose ranks may split their inputs unevenly: nothing to say */
    st = flight_recorder_job("flight_recorder_all_to_all", "%s/nccl_trace_rank_%d", 2, 0);
    ck_assert_uint_eq(st->n, 0);
    story_free(st);
}
END_TEST

START_TEST(test_dumps_memory_snapshot_measures_fragmentation_against_the_request)
{
    story *st = story_new();
    dumps_acc *acc = dumps_acc_new();
    char *why;
    ck_assert_int_eq(read_fixture("memory_snapshot/train.log", st, acc, &why), DUMP_NONE);
    ck_assert_int_eq(read_fixture("memory_snapshot/oom_rank-0_snapshot.pickle", st, acc, &why), DUMP_PICKLE);
    ck_assert_ptr_null(why);
    ck_assert_int_eq(dumps_acc_finish(acc, db, st), 0);
    const finding *f = only_of(st, CLS_CUDA_OOM);
    const cJSON *sn = cJSON_GetObjectItemCaseSensitive(f->memory, "snapshot");
    ck_assert(cJSON_IsObject(sn));
    ck_assert_double_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sn, "requested_bytes")), 388.0 * 1048576);
    ck_assert_double_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sn, "largest_free_block_bytes")),
                        120.0 * 1048576);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sn, "fragmented")));
    double frag = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sn, "fragmentation"));
    ck_assert(frag > 0.9 && frag < 1.0);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(sn, "top_sites")), 3);
    /* the log's traceback was cut before any phase; the snapshot's OOM stack names it */
    ck_assert_int_eq(f->phase, PH_BACKWARD);
    ck_assert_uint_eq(st->n, 1);
    dumps_acc_free(acc);
    story_free(st);
    /* alone, the snapshot's own OOM record is the finding */
    st = story_new();
    acc = dumps_acc_new();
    read_fixture("memory_snapshot/oom_rank-0_snapshot.pickle", st, acc, &why);
    ck_assert_int_eq(dumps_acc_finish(acc, db, st), 0);
    f = only_of(st, CLS_CUDA_OOM);
    ck_assert_double_eq(mem_num(f, "requested_bytes"), 388.0 * 1048576);
    ck_assert_str_eq(f->first.kind, "memory_snapshot");
    ck_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(f->memory, "snapshot")));
    dumps_acc_free(acc);
    story_free(st);
}
END_TEST


/* no site or frame of a snapshot names the unwinder, the allocator, the dispatcher or the interpreter */
static void assert_user_sites(const cJSON *sites)
{
    static const char *const machinery[] = {"unwind", "CapturedTraceback", "gather_with_cpp", "CUDACachingAllocator",
                                            "at::", "c10::", "_PyEval", "ceval.c", "??", NULL};
    const cJSON *s;
    ck_assert_int_gt(cJSON_GetArraySize(sites), 0);
    cJSON_ArrayForEach(s, sites)
    {
        const char *site = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "site"));
        ck_assert_ptr_nonnull(site);
        for (int i = 0; machinery[i]; i++)
            ck_assert_msg(!strstr(site, machinery[i]), "site '%s' is machinery", site);
        ck_assert_msg(strstr(site, ".py:"), "site '%s' is not a Python frame", site);
        const cJSON *fr;
        cJSON_ArrayForEach(fr, cJSON_GetObjectItemCaseSensitive(s, "frames"))
        for (int i = 0; machinery[i]; i++)
            ck_assert_msg(!strstr(fr->valuestring, machinery[i]), "frame '%s' is machinery", fr->valuestring);
    }
}

START_TEST(test_dumps_memory_snapshot_sites_are_the_users_python_frames)
{
    /* recorded with stacks="all": every allocation's innermost frames are PyTorch's C++ machinery
     * (fixtures/dumps/make_trace_snapshot.py), above the Python frames of a real training step */
    story *st = story_new();
    dumps_acc *acc = dumps_acc_new();
    char *why;
    ck_assert_int_eq(read_fixture("memory_trace/oom_snapshot_stacks_all.pickle", st, acc, &why), DUMP_PICKLE);
    ck_assert_ptr_null(why);
    ck_assert_int_eq(dumps_acc_finish(acc, db, st), 0);
    const finding *f = only_of(st, CLS_CUDA_OOM);
    const cJSON *sn = cJSON_GetObjectItemCaseSensitive(f->memory, "snapshot");
    ck_assert(cJSON_IsObject(sn));
    assert_user_sites(cJSON_GetObjectItemCaseSensitive(sn, "top_sites"));
    /* the trace's story: the window from the last step boundary to the OOM, what grew in it */
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(sn, "trace");
    ck_assert(cJSON_IsObject(tr));
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tr, "until")), "oom");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tr, "window_start")), "snapshot");
    ck_assert(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(tr, "events")) > 3000);
    double grew = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(tr, "grew_bytes"));
    double live = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(tr, "live_bytes"));
    double peak = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(tr, "peak_bytes"));
    ck_assert(grew > 0 && live >= grew && peak >= live);
    assert_user_sites(cJSON_GetObjectItemCaseSensitive(tr, "grew_sites"));
    const char *oom_site = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tr, "oom_site"));
    ck_assert_ptr_nonnull(strstr(oom_site, ".py:"));
    dumps_acc_free(acc);
    story_free(st);
}
END_TEST

START_TEST(test_dumps_memory_snapshot_of_another_moment_draws_no_conclusion)
{
    /* a snapshot of device 0 with no OOM in its trace, beside a real OOM of GPU 7 with 38.34 GiB
     * allocated (OpenRLHF/OpenRLHF#398): kept as context, with the reason, never as memory.snapshot */
    story *st = story_new();
    dumps_acc *acc = dumps_acc_new();
    char *why;
    ck_assert_int_eq(read_fixture("memory_other_moment/train.log", st, acc, &why), DUMP_NONE);
    ck_assert_int_eq(read_fixture("memory_other_moment/snapshot_device0.pickle", st, acc, &why), DUMP_PICKLE);
    ck_assert_ptr_null(why);
    ck_assert_int_eq(dumps_acc_finish(acc, db, st), 0);
    const finding *f = only_of(st, CLS_CUDA_OOM);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(f->memory, "snapshot"));
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(f->memory, "snapshot_context");
    ck_assert(cJSON_IsObject(ctx));
    const char *other = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ctx, "taken_at_another_moment"));
    ck_assert_ptr_nonnull(other);
    ck_assert_msg(strstr(other, "device 0") && strstr(other, "GPU 7"), "reason: %s", other);
    ck_assert(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ctx, "allocated_bytes")) > 0);
    dumps_acc_free(acc);
    story_free(st);
}
END_TEST

START_TEST(test_dumps_bad_pickle_is_a_named_error)
{
    size_t n;
    char *data = slurp_fixture("flight_recorder/nccl_trace_rank_0", &n);
    story *st = story_new();
    dumps_acc *acc = dumps_acc_new();
    char *why;
    ck_assert_int_eq(read_one("nccl_trace_rank_0", data, n / 2, st, acc, &why), DUMP_PICKLE);
    ck_assert_ptr_nonnull(why);
    ck_assert_msg(strstr(why, "pickle: byte ") == why && strstr(why, "truncated"), "reason: %s", why);
    ck_assert_int_eq(cJSON_GetArraySize(acc->fr), 0);
    free(why);
    /* a pickle of something else */
    static const char other[] = "\x80\x04\x95\x0a\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01x\x94K\x01s.";
    ck_assert_int_eq(read_one("x.pkl", other, sizeof other - 1, st, acc, &why), DUMP_PICKLE);
    ck_assert_ptr_nonnull(strstr(why, "neither a flight recorder dump nor a memory snapshot"));
    free(why);
    free(data);
    dumps_acc_free(acc);
    story_free(st);
}
END_TEST


/* ---- hostile dumps (issue 35) ------------------------------------------------------------------- */

/* Values of every type but the expected one (the fixtures' own types are among them, harmlessly). */
static cJSON *wrong_value(int w)
{
    switch (w) {
    case 0: return cJSON_CreateArray();
    case 1: return cJSON_Parse("[1,\"x\",{\"name\":null}]");
    case 2: return cJSON_CreateObject();
    case 3: return cJSON_Parse("{\"a\":[1],\"0\":{}}");
    case 4: return cJSON_CreateString("node-2");
    case 5: return cJSON_CreateString("inf");
    case 6: return cJSON_CreateNumber(-1);
    case 7: return cJSON_CreateNumber(1e300);
    case 8: return cJSON_CreateNumber(-2147483648.0);
    case 9: return cJSON_CreateNumber(0.0 / 0.0); /* NaN: a pickle's float can be one */
    case 10: return cJSON_CreateNull();
    case 11: return cJSON_CreateTrue();
    }
    return NULL;
}
#define WRONG_VALUES 12

/* Replace the k-th node (preorder, the root excluded) under `o` with `v`; 1 when done. */
static int replace_nth(cJSON *o, int *k, cJSON *v)
{
    for (cJSON *c = o->child; c; c = c->next) {
        if ((*k)-- == 0) {
            ck_assert(cJSON_ReplaceItemViaPointer(o, c, v));
            return 1;
        }
        if (replace_nth(c, k, v))
            return 1;
    }
    return 0;
}

static int count_nodes(const cJSON *o)
{
    int n = 0;
    for (const cJSON *c = o->child; c; c = c->next)
        n += 1 + count_nodes(c);
    return n;
}

static size_t count_class(const story *st, tax_class cls)
{
    size_t n = 0;
    for (size_t i = 0; i < st->n; i++)
        n += st->f[i].cls == cls;
    return n;
}

/* Every node of each dump replaced in turn by each wrong value, the dump read with a good log before
 * it and (for the flight recorder) the other rank's good dump: nothing crashes (the ASan build runs
 * this too), and the log's CUDA OOM is kept every time. pg_config as a list crashed the reader. */
START_TEST(test_dumps_every_field_of_the_wrong_type)
{
    size_t nlog;
    char *log = slurp_fixture("../golden/swift-interleaved-oom.log", &nlog);
    const char *docs[] = {"flight_recorder_json/nccl_trace_rank_0.json", "flight_recorder_json/nccl_trace_rank_1.json",
                          "torchrun/job42_sfy4zqds/attempt_0/0/error.json"};
    for (size_t d = 0; d < sizeof docs / sizeof *docs; d++) {
        size_t n;
        char *text = slurp_fixture(docs[d], &n);
        cJSON *doc = cJSON_Parse(text);
        ck_assert_ptr_nonnull(doc);
        char *other = d < 2 ? slurp_fixture(docs[1 - d], &n) : NULL;
        int nodes = count_nodes(doc);
        for (int k = 0; k < nodes; k++)
            for (int w = 0; w < WRONG_VALUES; w++) {
                cJSON *m = cJSON_Duplicate(doc, 1);
                int kk = k;
                ck_assert(replace_nth(m, &kk, wrong_value(w)));
                story *st = story_new();
                dumps_acc *acc = dumps_acc_new();
                char *why = NULL;
                read_one("train.log", log, nlog, st, acc, &why);
                size_t ooms = count_class(st, CLS_CUDA_OOM);
                ck_assert_uint_ge(ooms, 1);
                if (d < 2) {
                    /* straight into the summary (NaN cannot be written as JSON text), then the other rank */
                    scan_source src = {.path = docs[d]};
                    flightrec_summarise(m, &src, acc, &why);
                    free(why);
                    read_one(docs[1 - d], other, strlen(other), st, acc, &why);
                } else {
                    char *t = cJSON_PrintUnformatted(m);
                    read_one(docs[d], t, strlen(t), st, acc, &why);
                    free(t);
                }
                free(why);
                ck_assert_int_eq(dumps_acc_finish(acc, db, st), 0);
                ck_assert_msg(count_class(st, CLS_CUDA_OOM) >= ooms, "%s: node %d as value %d lost the log's OOM", docs[d],
                              k, w);
                dumps_acc_free(acc);
                story_free(st);
                cJSON_Delete(m);
            }
        free(other);
        free(text);
        cJSON_Delete(doc);
    }
    free(log);
}
END_TEST


/* The laggard of a flight recorder is found however another rank's dump states its rank (a name, -1,
 * NaN, a huge number), and under file names that give no rank: it is made from the values, not
 * matched again in a sentence whose rank list allowed only digits. */
START_TEST(test_dumps_flight_recorder_laggard_survives_a_rank_that_is_no_number)
{
    size_t n0, n1;
    char *t0 = slurp_fixture("flight_recorder_json/nccl_trace_rank_0.json", &n0);
    char *t1 = slurp_fixture("flight_recorder_json/nccl_trace_rank_1.json", &n1);
    for (int w = 4; w < 10; w++) {
        for (int named = 0; named < 2; named++) {
            cJSON *d0 = cJSON_Parse(t0);
            cJSON_AddItemToObject(d0, "rank", wrong_value(w));
            story *st = story_new();
            dumps_acc *acc = dumps_acc_new();
            char *why = NULL;
            scan_source src = {.path = named ? "fr/nccl_trace_rank_0.json" : "fr/waiting.json"};
            ck_assert_int_eq(flightrec_summarise(d0, &src, acc, &why), 0);
            read_one(named ? "fr/nccl_trace_rank_1.json" : "fr/lagging.json", t1, n1, st, acc, &why);
            ck_assert_ptr_null(why);
            ck_assert_int_eq(dumps_acc_finish(acc, db, st), 0);
            const finding *f = fr_finding(st);
            const cJSON *seq = cJSON_GetObjectItemCaseSensitive(f->memory, "seq");
            ck_assert_msg(cJSON_IsNumber(seq) && seq->valuedouble == 42, "rank value %d", w);
            if (named) {
                const cJSON *miss = cJSON_GetObjectItemCaseSensitive(f->memory, "missing_ranks");
                ck_assert(cJSON_IsNumber(miss) && miss->valuedouble == 1);
                ck_assert_str_eq(f->rank, "1");
            }
            dumps_acc_free(acc);
            story_free(st);
            cJSON_Delete(d0);
        }
    }
    free(t0);
    free(t1);
}
END_TEST

/* Times out of any job's range (1e300, "inf", -1, NaN) in an error file are no time: the cast to
 * time_t was undefined (the UBSan build reported it). The exception is still read. */
START_TEST(test_dumps_error_file_timestamp_out_of_range_is_no_time)
{
    const char *stamps[] = {"1e300", "\"inf\"", "-1", "\"1e999\"", "\"nan\"", "9223372036854775808"};
    for (size_t i = 0; i < sizeof stamps / sizeof *stamps; i++) {
        char doc[512];
        snprintf(doc, sizeof doc,
                 "{\"message\": {\"message\": \"RuntimeError: CUDA error: out of memory\", \"extraInfo\": "
                 "{\"py_callstack\": \"x\", \"timestamp\": %s}, \"errorCode\": 1e300}}",
                 stamps[i]);
        story *st = story_new();
        char *why = NULL;
        ck_assert_int_eq(read_one("error.json", doc, strlen(doc), st, NULL, &why), DUMP_ERROR_FILE);
        ck_assert_msg(why == NULL, "%s: %s", stamps[i], why);
        ck_assert_uint_ge(st->n, 1);
        ck_assert_msg(!st->f[0].first.has_time, "%s gave a time", stamps[i]);
        ck_assert(!cJSON_HasObjectItem(st->f[0].memory, "exitcode"));
        story_free(st);
    }
}
END_TEST

/* A signal while the dumps are finished: the stop flag is read between process groups, so the finish
 * ends at once with what it made (it was never read there: SIGTERM waited for the whole finish, and a
 * second signal killed the run with no report). Set before the finish, nothing is made; cleared, the
 * laggard is found as before. */
START_TEST(test_dumps_finish_stops_when_asked)
{
    for (int stop = 1; stop >= 0; stop--) {
        story *st = story_new();
        dumps_acc *acc = dumps_acc_new();
        volatile sig_atomic_t flag = (sig_atomic_t)stop;
        dumps_acc_stop_on(acc, &flag);
        char *why;
        read_fixture("flight_recorder_json/nccl_trace_rank_0.json", st, acc, &why);
        read_fixture("flight_recorder_json/nccl_trace_rank_1.json", st, acc, &why);
        ck_assert_int_eq(dumps_acc_finish(acc, db, st), 0);
        ck_assert_uint_eq(st->n, stop ? 0 : 1);
        dumps_acc_free(acc);
        story_free(st);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dumps");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_dumps_sniff_tells_each_kind_by_content);
    tcase_add_test(tc, test_dumps_error_file_from_a_real_torchrun_job);
    tcase_add_test(tc, test_dumps_error_file_time_is_local_and_its_line_the_files);
    tcase_add_test(tc, test_dumps_error_file_shapes_string_message_list_stack_error_code);
    tcase_add_test(tc, test_dumps_kernel_block_is_one_event_with_every_figure);
    tcase_add_test(tc, test_dumps_kernel_block_of_a_real_cgroup_kill_is_one_finding);
    tcase_add_test(tc, test_dumps_faulthandler_file_gives_segfault_with_current_thread_phase);
    tcase_add_test(tc, test_dumps_flight_recorder_names_the_rank_that_never_joined);
    tcase_add_test(tc, test_dumps_flight_recorder_names_a_size_mismatch);
    tcase_add_test(tc, test_dumps_memory_snapshot_measures_fragmentation_against_the_request);
    tcase_add_test(tc, test_dumps_memory_snapshot_sites_are_the_users_python_frames);
    tcase_add_test(tc, test_dumps_memory_snapshot_of_another_moment_draws_no_conclusion);
    tcase_add_test(tc, test_dumps_bad_pickle_is_a_named_error);
    /* thousands of dumps each: more than Check's 4 s on a busy machine or under ASan */
    TCase *slow = tcase_create("wrong_types");
    tcase_add_checked_fixture(slow, setup, teardown);
    tcase_set_timeout(slow, 300);
    tcase_add_test(slow, test_dumps_every_field_of_the_wrong_type);
    suite_add_tcase(s, slow);
    tcase_add_test(tc, test_dumps_flight_recorder_laggard_survives_a_rank_that_is_no_number);
    tcase_add_test(tc, test_dumps_error_file_timestamp_out_of_range_is_no_time);
    tcase_add_test(tc, test_dumps_finish_stops_when_asked);
    suite_add_tcase(s, tc);
    return check_run(s);
}
