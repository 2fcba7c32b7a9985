/* check_scan.c - line splitting, exact positions, long lines, junk, wrapped messages, phase. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match/config.h"
#include "match/lines.h"
#include "match/phase.h"
#include "match/scan.h"
#include "story/story.h"
#include "testdb.h"
#include "check_main.h"
#include "membuf.h"

static run_out run(const char *data, size_t len, size_t step)
{
    return scan_text(testdb_new(), data, len, step, 0);
}

static void done(run_out *o) { scan_done(o); }

static const finding *find_class(const story *st, tax_class c)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->f[i].cls == c)
            return &st->f[i];
    return NULL;
}

START_TEST(test_scan_wrapped_inside_a_word_keeps_the_joined_values)
{
    /* A terminal cut "OpType" in two (huggingface/open-r1#620). The space-less join explains more than
     * the spaced one; the values must come from the join that won, not from the last one tried. */
    const char *text = "[rank2]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpTy\n"
                       "pe=BROADCAST, NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran for 1800010 milliseconds\n"
                       "next line\n";
    run_out o = run(text, strlen(text), 0);
    const finding *f = find_class(o.st, CLS_NCCL_TIMEOUT);
    ck_assert_ptr_nonnull(f);
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(f->memory, "op");
    ck_assert_msg(cJSON_IsString(op) && strcmp(op->valuestring, "BROADCAST") == 0, "op not taken from the join");
    ck_assert_int_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(f->memory, "seq")), 4);
    done(&o);
}
END_TEST

/* A line holding a pattern's literal but not its message is not joined with a next line that holds
 * the whole message: the match would lie in the next line only, which is read on its own. (torchelastic's
 * "Sending process N closing signal SIGTERM" before its "failed (exitcode: -9)" line was read twice so,
 * once as the kill and once, through the join, as a second failure: RLHF-V/RLHF-V#11.) */
START_TEST(test_scan_join_does_not_take_the_next_lines_own_message)
{
    const char *text = "hint: CUDA out of memory errors are explained below\n"
                       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n";
    run_out o = run(text, strlen(text), 0);
    ck_assert_uint_eq(o.st->n, 1);
    ck_assert_uint_eq(o.st->f[0].first.line, 2);
    ck_assert_uint_eq(o.st->f[0].occurrences, 1);
    done(&o);
}
END_TEST

/* A pattern whose continuation is "required" is a failure only when a next line confirms it: NCCL's
 * nvml WARN is fatal when NCCL's unwinding reaches init.cc after it (NVIDIA/nccl#1529), not when
 * NCCL goes on (NVIDIA/nccl#1066). */
START_TEST(test_scan_required_continuation_confirms_or_drops)
{
    static const char pats[] =
        "{\"format\":\"oomscan-patterns/1\",\"family\":\"test\",\"patterns\":["
        "{\"id\":\"nccl_error.test\",\"class\":\"nccl_error\",\"literals\":[\"NCCL WARN nvml\"],"
        " \"regex\":\"NCCL WARN nvml\",\"continuation\":{\"lines\":3,\"regex\":[\"init\\\\.cc:[0-9]+ -> (?<nccl_result>[0-9]+)\"],"
        " \"required\":true}}]}";
    const char *alone = "h:1:2 [0] misc/nvmlwrap.cc:181 NCCL WARN nvml failed: Not Found\n"
                        "h:1:2 [0] NCCL INFO Setting affinity for GPU 0 to 03ffff\n";
    const char *fatal = "h:1:2 [0] misc/nvmlwrap.cc:187 NCCL WARN nvml failed: Not Found\n"
                        "h:1:2 [0] NCCL INFO graph/xml.cc:850 -> 2\n"
                        "h:1:2 [0] NCCL INFO init.cc:1012 -> 2\n";
    for (int k = 0; k < 2; k++) {
        pdb *db = pdb_new();
        oomscan_diag d = {0};
        ck_assert_int_eq(pdb_load_text(db, "test.json", pats, sizeof pats - 1, &d), OOMSCAN_OK);
        ck_assert_msg(pdb_compile(db, &d) == OOMSCAN_OK, "%s: %s", d.where, d.msg);
        const char *text = k ? fatal : alone;
        run_out o = scan_text(db, text, strlen(text), 0, 0);
        ck_assert_uint_eq(o.st->n, (size_t)k);
        if (k)
            ck_assert_int_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o.st->f[0].memory, "nccl_result")), 2);
        done(&o);
    }
}
END_TEST

/* One invalid byte in a kernel OOM line (a process name with a stray Latin-1 byte): the finding is
 * kept, with its values, the byte shown as '?'. PCRE2_MATCH_INVALID_UTF let no match cross it. */
START_TEST(test_scan_invalid_utf8_byte_keeps_kernel_oom)
{
    const char *text = "[Thu Mar 14 01:57:55 2019] Out of memory: Kill process 89746 (pyth\xffon) score 868 or sacrifice child\n"
                       "[Thu Mar 14 01:57:55 2019] Killed process 89746 (pyth\xffon) total-vm:118026216kB, "
                       "anon-rss:109819332kB, file-rss:3324kB, shmem-rss:0kB\n";
    /* the shipped database: its kernel patterns capture the process name */
    run_out o = scan_text(embedded_db(), text, strlen(text), 0, 0);
    const finding *f = find_class(o.st, CLS_HOST_OOM_KILL);
    ck_assert_msg(f != NULL, "the kernel OOM with an invalid byte was lost");
    const cJSON *proc = cJSON_GetObjectItemCaseSensitive(f->memory, "process");
    ck_assert_msg(cJSON_IsString(proc) && strcmp(proc->valuestring, "pyth?on") == 0, "process: %s",
                  cJSON_IsString(proc) ? proc->valuestring : "(none)");
    done(&o);
}
END_TEST

START_TEST(test_scan_terminators_positions_exact)
{
    /* \n, \r\n and a bare \r all end lines; the failure is on line 5 at byte 26 */
    const char *text = "one\ntwo\r\nbar 10%\rbar 20%\r\nChildFailedError here\nlast";
    size_t steps[] = {0, 1, 2, 3, 7};
    for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
        run_out o = run(text, strlen(text), steps[k]);
        const finding *f = find_class(o.st, CLS_CHILD_FAILED);
        ck_assert_msg(f != NULL, "not found with step %zu", steps[k]);
        ck_assert_uint_eq(f->first.line, 5);
        ck_assert_uint_eq(f->first.offset, 26);
        ck_assert_uint_eq(o.res.lines, 6);
        ck_assert_uint_eq(o.res.bytes, strlen(text));
        done(&o);
    }
}
END_TEST

START_TEST(test_scan_long_line_is_cut_and_scan_goes_on)
{
    size_t big = SCAN_LINE_CAP * 3 + 123;
    char *text = malloc(big + 64);
    memset(text, 'x', big);
    strcpy(text + big, "\nKilled\n");
    run_out o = run(text, strlen(text), 0);
    ck_assert_uint_eq(o.res.lines_cut, 1);
    const finding *f = find_class(o.st, CLS_HOST_OOM_KILL);
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(f->first.line, 2);
    ck_assert_uint_eq(f->first.offset, big + 1);
    ck_assert_uint_eq(o.res.lines, 2);
    done(&o);
    free(text);
}
END_TEST

START_TEST(test_scan_binary_junk_and_nul_do_not_stop)
{
    char text[600];
    for (int i = 0; i < 512; i++)
        text[i] = (char)(i * 37 % 256) == '\n' ? 0 : (char)(i * 37 % 256);
    const char *tail = "\n[rank2]: CUDA out of memory. Tried to allocate 2.00 GiB\n";
    memcpy(text + 512, tail, strlen(tail));
    run_out o = run(text, 512 + strlen(tail), 0);
    const finding *f = find_class(o.st, CLS_CUDA_OOM);
    ck_assert_ptr_nonnull(f);
    ck_assert_str_eq(f->rank, "2");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(f->memory, "requested_bytes");
    ck_assert(cJSON_IsNumber(req) && req->valuedouble == 2147483648.0);
    /* evidence is valid text: no control bytes survive */
    for (const char *p = f->evidence[0]; *p; p++)
        ck_assert((unsigned char)*p >= 0x20 || *p == '\t');
    done(&o);
}
END_TEST

START_TEST(test_scan_wrapped_message_joins_number_and_unit)
{
    const char *text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00\n"
                       "MiB. GPU 3 has a total capacity of 79.18 GiB of which 5.00 MiB is free.\n";
    run_out o = run(text, strlen(text), 0);
    const finding *f = find_class(o.st, CLS_CUDA_OOM);
    ck_assert_ptr_nonnull(f);
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(f->memory, "requested_bytes");
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(f->memory, "gpu");
    ck_assert(cJSON_IsNumber(req) && req->valuedouble == 20971520.0);
    ck_assert(cJSON_IsNumber(gpu) && gpu->valuedouble == 3);
    ck_assert_uint_eq(o.st->n, 1);
    done(&o);
}
END_TEST

START_TEST(test_scan_phase_from_traceback_beats_marker)
{
    const char *text = "Before update_actor, memory allocated (GB): 1.0\n"
                       "[rank1]: Traceback (most recent call last):\n"
                       "[rank1]:   File \"/opt/verl/verl/workers/actor/dp_actor.py\", line 412, in update_policy\n"
                       "[rank1]:     loss.backward()\n"
                       "[rank1]:   File \"/usr/lib/python3/site-packages/torch/_tensor.py\", line 581, in backward\n"
                       "[rank1]:     torch.autograd.backward(\n"
                       "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB\n";
    run_out o = run(text, strlen(text), 0);
    const finding *f = find_class(o.st, CLS_CUDA_OOM);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->phase, PH_BACKWARD);
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, "loss.backward("));
    ck_assert_ptr_nonnull(strstr(f->phase_evidence, "dp_actor.py"));
    done(&o);
}
END_TEST

START_TEST(test_scan_phase_from_marker_and_its_end)
{
    const char *in = "Before update_actor, memory allocated (GB): 1.0\nCUDA out of memory. Tried to allocate 1.00 GiB\n";
    run_out o = run(in, strlen(in), 0);
    ck_assert_int_eq(find_class(o.st, CLS_CUDA_OOM)->phase, PH_FORWARD);
    done(&o);
    /* after the step ended, the marker no longer says where we are: unknown, not a guess */
    const char *after = "Before update_actor\nAfter update_actor, memory\nCUDA out of memory. Tried to allocate 1.00 GiB\n";
    o = run(after, strlen(after), 0);
    ck_assert_int_eq(find_class(o.st, CLS_CUDA_OOM)->phase, PH_UNKNOWN);
    done(&o);
}
END_TEST

START_TEST(test_scan_phase_from_progress_bar_until_full)
{
    /* a failure glued to a bar that stopped short of 100% happened while the bar ran */
    const char *in = "Loading checkpoint shards:  57%|#####     | 4/7\nCUDA out of memory. Tried to allocate 1.00 GiB\n";
    run_out o = run(in, strlen(in), 0);
    ck_assert_int_eq(find_class(o.st, CLS_CUDA_OOM)->phase, PH_MODEL_INIT);
    done(&o);
    /* the full bar (a longer literal at the same place) closes the phase */
    const char *full = "Loading checkpoint shards: 100%|##########| 7/7\nCUDA out of memory. Tried to allocate 1.00 GiB\n";
    o = run(full, strlen(full), 0);
    ck_assert_int_eq(find_class(o.st, CLS_CUDA_OOM)->phase, PH_UNKNOWN);
    done(&o);
}
END_TEST

START_TEST(test_scan_burst_takes_phase_from_later_line)
{
    /* Ray prints the exception above the task's traceback and again below it: one finding, and the
     * second line, which has the traceback, gives the phase */
    const char *text = "CUDA out of memory. Tried to allocate 1.00 GiB\n"
                       "Traceback (most recent call last):\n"
                       "  File \"/opt/train.py\", line 9, in step\n"
                       "    loss.backward()\n"
                       "CUDA out of memory. Tried to allocate 1.00 GiB\n";
    run_out o = run(text, strlen(text), 0);
    ck_assert_uint_eq(o.st->n, 1);
    ck_assert_int_eq(o.st->f[0].phase, PH_BACKWARD);
    ck_assert_uint_eq(o.st->f[0].occurrences, 2);
    ck_assert_ptr_nonnull(strstr(o.st->f[0].phase_evidence, "loss.backward("));
    ck_assert_ptr_nonnull(strstr(o.st->f[0].group, "|backward|"));
    done(&o);
}
END_TEST

START_TEST(test_scan_repeats_collapse_and_cascade_roles)
{
    const char *text = "2024-05-01 10:00:00,000 [rank3]: CUDA out of memory. Tried to allocate 2.00 GiB\n"
                       "2024-05-01 10:10:00,000 [rank0]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE)\n"
                       "2024-05-01 10:10:00,000 [rank1]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE)\n"
                       "2024-05-01 10:10:01,000 [rank2]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE)\n"
                       "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n";
    run_out o = run(text, strlen(text), 0);
    ck_assert_uint_eq(o.st->n, 3);
    const finding *oom = find_class(o.st, CLS_CUDA_OOM);
    const finding *to = find_class(o.st, CLS_NCCL_TIMEOUT);
    const finding *cf = find_class(o.st, CLS_CHILD_FAILED);
    ck_assert(oom->is_root);
    ck_assert(!to->is_root);
    ck_assert(!cf->is_root);
    ck_assert_uint_eq(to->occurrences, 3);
    ck_assert_uint_eq(to->ranks.n, 3);
    ck_assert_str_eq(o.st->f[to->caused_by].id, oom->id);
    ck_assert_str_eq(o.st->f[cf->caused_by].id, oom->id);
    ck_assert_str_eq(oom->rank, "3");
    done(&o);
}
END_TEST

START_TEST(test_scan_consequence_without_cause_stays_root)
{
    const char *text = "[rank0]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE)\n";
    run_out o = run(text, strlen(text), 0);
    ck_assert_uint_eq(o.st->n, 1);
    ck_assert(o.st->f[0].is_root);
    ck_assert_ptr_nonnull(o.st->f[0].note);
    done(&o);
}
END_TEST

START_TEST(test_scan_count_lines_matches_scalar)
{
    /* up to 20000 bytes: past 255 blocks of 16 and of 32 bytes (the vector lanes' counters are
     * summed every 255 blocks), also of terminators only (a lane counting every block), and with a
     * rare \r (the AVX2 path counts a block by \n alone until it meets one) */
    static char buf[20000];
    srand(3);
    for (int round = 0; round < 800; round++) {
        lines_use_avx2(round < 400); /* the AVX2 loop where the CPU has it, then the SSE2 one */
        size_t n = (size_t)(rand() % (round % 4 == 0 ? 20000 : 1000));
        const char *alphabet = round % 8 == 4 ? "\n\n\n\n" : "ab\r\n";
        for (size_t i = 0; i < n; i++)
            buf[i] = alphabet[rand() % 4];
        if (round % 8 == 2 || round % 8 == 6) {
            for (size_t i = 0; i < n; i++)
                buf[i] = rand() % 40 == 0 ? '\n' : 'a';
            for (int k = 0; n > 0 && k < round % 5; k++)
                buf[(size_t)rand() % n] = '\r'; /* before a \n or not */
        }
        uint64_t want = 0;
        for (size_t i = 0; i < n; i++)
            want += buf[i] == '\n' || (buf[i] == '\r' && !(i + 1 < n && buf[i + 1] == '\n'));
        ck_assert_uint_eq(scan_count_lines((const unsigned char *)buf, n), want);
    }
    lines_use_avx2(1);
}
END_TEST

static run_out run_helper(const char *data, size_t len) { return scan_text(testdb_new(), data, len, 0, 1); }

START_TEST(test_scan_time_comes_from_last_stamped_line_even_a_marker)
{
    /* Marker lines are not stripped as they are met; their timestamps are read only when a finding
     * needs one. The newest stamped line before the failure must still give its time. */
    const char *text = "2025-06-01 10:00:00 Before update_actor, step 1\n"
                       "2025-06-01 11:30:00 After update_actor, step 1\n"
                       "Killed\n";
    run_out o = run(text, strlen(text), 0);
    const finding *f = find_class(o.st, CLS_HOST_OOM_KILL);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->first.has_time, 1);
    ck_assert_int_eq(f->first.time.hour, 11);
    ck_assert_int_eq(f->first.time.min, 30);
    done(&o);
    /* a line of another record between them: the stamp is that record's, not the failure's (issue 31) */
    const char *apart = "2025-06-01 10:00:00 Before update_actor, step 1\n"
                        "2025-06-01 11:30:00 After update_actor, step 1\n"
                        "After update_actor, step 2 (no stamp)\n"
                        "Killed\n";
    o = run(apart, strlen(apart), 0);
    f = find_class(o.st, CLS_HOST_OOM_KILL);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->first.has_time, 0);
    done(&o);
}
END_TEST

START_TEST(test_scan_stamp_stays_with_its_record)
{
    /* A traceback under a stamped line is that line's record: its exception takes the stamp. A stamped
     * line that states a failure of another class is that failure's record: an OOM traceback printed
     * right under an NCCL watchdog line is not stamped by it (the OOM then seemed to come after the
     * timeout and made it its consequence: issue 31). */
    const char *tb = "2025-06-01 11:30:00 Before update_actor, step 1\n"
                     "Traceback (most recent call last):\n"
                     "  File \"train.py\", line 9, in step\n"
                     "MemoryError\n";
    run_out o = scan_text(embedded_db(), tb, strlen(tb), 0, 0);
    const finding *f = find_class(o.st, CLS_HOST_MEMORY_ERROR);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->first.has_time, 1);
    done(&o);
    const char *other = "[rank1]:[E1019 01:04:03.357037506 ProcessGroupNCCL.cpp:1413] [PG 3 Rank 1] Heartbeat monitor "
                        "timed out! Process will be terminated after dumping debug info. workMetaList_.size()=121\n"
                        "  File \"torch/distributed/distributed_c10d.py\", line 2448, in all_gather\n"
                        "    work = default_pg.allgather([tensor_list], [tensor])\n"
                        "MemoryError\n";
    o = scan_text(embedded_db(), other, strlen(other), 0, 0);
    f = find_class(o.st, CLS_HOST_MEMORY_ERROR);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->first.has_time, 0);
    ck_assert_int_eq(find_class(o.st, CLS_NCCL_TIMEOUT)->first.has_time, 1);
    done(&o);
}
END_TEST

/* The shipped database (settings literals come from its checklists): the first CUDA OOM's time, -1 when
 * it has none (the last stamp the scanner read is another record's). */
static int oom_minute(const char *text)
{
    run_out o = scan_text(embedded_db(), text, strlen(text), 0, 0);
    const finding *f = find_class(o.st, CLS_CUDA_OOM);
    ck_assert_ptr_nonnull(f);
    int m = f->first.has_time ? f->first.time.hour * 60 + f->first.time.min : -1;
    done(&o);
    return m;
}

START_TEST(test_scan_settings_run_is_timed_by_its_last_line)
{
    /* A run of lines that only name settings is one dump: its last line's stamp moves the clock. */
    ck_assert_int_eq(oom_minute("2025-06-01 10:00:00 Before update_actor, step 1\n"
                                "  micro_batch_size: 4\n"
                                "2025-06-01 11:30:00 gradient_accumulation_steps: 2\n"
                                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"),
                     11 * 60 + 30);
}
END_TEST

START_TEST(test_scan_settings_run_is_read_once_not_line_by_line)
{
    /* ... and only its last line is read for one (a log echoing settings on every line has a million
     * of them): a stamp earlier in the run is not looked for, the clock keeps the line before the run,
     * whose record the run's first line ends: no time. Reading every line of the run, as before, gave
     * 11:30 (the indented line goes on with the stamped one's record). */
    ck_assert_int_eq(oom_minute("2025-06-01 10:00:00 Before update_actor, step 1\n"
                                "2025-06-01 11:30:00 micro_batch_size: 4\n"
                                "  gradient_accumulation_steps: 2\n"
                                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"),
                     -1);
}
END_TEST

START_TEST(test_scan_setting_inside_a_longer_name_is_no_hit)
{
    /* "micro_batch_size" inside "my_micro_batch_size_total" reads no setting (config_name_whole): the
     * scanner drops it as found, so its line is no hit line, like any line without one, and its
     * stamp is not the clock's (and 10:00 is another record's: no time). Kept, the line was a settings
     * run of one and gave 11:30. */
    ck_assert_int_eq(oom_minute("2025-06-01 10:00:00 Before update_actor, step 1\n"
                                "2025-06-01 11:30:00 my_micro_batch_size_total: 4\n"
                                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"),
                     -1);
    /* the same line naming the setting itself is one */
    ck_assert_int_eq(oom_minute("2025-06-01 10:00:00 Before update_actor, step 1\n"
                                "2025-06-01 11:30:00 my.micro_batch_size: 4\n"
                                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"),
                     11 * 60 + 30);
}
END_TEST

START_TEST(test_scan_counts_a_framework_vote_once_per_line)
{
    /* A Ray prefix votes for its framework (a literal whose one target is a vote: the scanner counts
     * it itself, without classify_cheap); twice on a line it is still one vote, as every literal
     * acts once per line. */
    const char *text = "(TaskRunner pid=1) (TaskRunner pid=2) step:1\n"
                       "(TaskRunner pid=3) step:2\n"
                       "no prefix here\n";
    pdb *db = embedded_db();
    scanner *sc = scanner_new(db);
    phase_state *ps = phase_new(db);
    story *st = story_new();
    ck_assert_ptr_nonnull(sc);
    ck_assert_ptr_nonnull(ps);
    scan_source src = {.path = "mem.log"};
    scan_result res = {0};
    ck_assert_int_eq(scanner_run_text(sc, text, strlen(text), &src, ps, story_sink(st), &res), OOMSCAN_OK);
    const uint32_t *votes = phase_framework_votes(ps);
    uint32_t total = 0, most = 0;
    for (int f = 0; f < FW__COUNT; f++) {
        total += votes[f];
        most = votes[f] > most ? votes[f] : most;
    }
    ck_assert_uint_eq(most, 2);
    ck_assert_uint_eq(total, 2);
    story_free(st);
    phase_free(ps);
    scanner_free(sc);
    pdb_free(db);
}
END_TEST

START_TEST(test_scan_reads_stamps_after_the_last_failure_only_when_asked)
{
    /* After a source's last failure the stamps of its lines feed only scan_result.last_time, which
     * only a resumed scan's context reads (keep_time): unasked, they are not read (in a rank file
     * with no failure, every hit line's stamp was read for nothing). */
    const char *text = "2025-06-01 10:00:00 Before update_actor, step 1\n"
                       "Killed\n"
                       "2025-06-01 11:30:00 After update_actor, step 1\n"
                       "After update_actor, step 2 (no stamp)\n";
    run_out quick = scan_text_as(testdb_new(), text, strlen(text), 0, 0, 0);
    run_out kept = scan_text_as(testdb_new(), text, strlen(text), 0, 0, 1);
    ck_assert_int_eq(quick.res.have_time, 1); /* the failure's line read the clock */
    ck_assert_int_eq(quick.res.last_time.hour, 10);
    ck_assert_int_eq(kept.res.have_time, 1);
    ck_assert_int_eq(kept.res.last_time.hour, 11);
    ck_assert_int_eq(kept.res.last_time.min, 30);
    ck_assert_uint_eq(quick.st->n, kept.st->n); /* the findings are the same */
    ck_assert_uint_eq(quick.st->f[0].first.time.hour, 10);
    done(&quick);
    done(&kept);
}
END_TEST

START_TEST(test_scan_helper_thread_changes_nothing)
{
    /* ~3 MiB: regions big enough to be split, failures on both sides of every split point, marker and
     * stamped lines between them, and a stretch dense enough in hits to overflow the helper's list. */
    size_t cap = 3u << 20, n = 0;
    char *text = malloc(cap + 256);
    ck_assert_ptr_nonnull(text);
    unsigned k = 0;
    while (n < cap) {
        k++;
        const char *line;
        char buf[200];
        if (k % 997 == 0)
            line = "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n";
        else if (k % 1499 == 0)
            line = "Killed\n";
        else if (k % 13 == 0) {
            snprintf(buf, sizeof buf, "2025-06-0%u %02u:%02u:00 Before update_actor, step %u\n", 1 + k % 9,
                     k / 60 % 24, k % 60, k);
            line = buf;
        } else if (k % 29 == 0)
            line = "After update_actor, done\n";
        else if (n > cap / 2 && n < cap / 2 + 300000)
            line = "Killed Killed Killed Killed Killed Killed Killed Killed\n"; /* dense hits, no finding */
        else {
            snprintf(buf, sizeof buf, "step %u loss 0.%u lr 1e-5 tokens/s %u\n", k, k * 7 % 1000, k * 13);
            line = buf;
        }
        size_t l = strlen(line);
        memcpy(text + n, line, l);
        n += l;
    }
    run_out a = run(text, n, 0), b = run_helper(text, n);
    ck_assert_uint_eq(a.res.lines, b.res.lines);
    ck_assert_uint_eq(a.res.bytes, b.res.bytes);
    ck_assert_uint_gt(a.st->n, 2);
    ck_assert_uint_eq(a.st->n, b.st->n);
    for (size_t i = 0; i < a.st->n; i++) {
        const finding *x = &a.st->f[i], *y = &b.st->f[i];
        ck_assert_int_eq(x->cls, y->cls);
        ck_assert_int_eq(x->phase, y->phase);
        ck_assert_uint_eq(x->first.line, y->first.line);
        ck_assert_uint_eq(x->first.offset, y->first.offset);
        ck_assert_uint_eq(x->last.line, y->last.line);
        ck_assert_uint_eq(x->occurrences, y->occurrences);
        ck_assert_int_eq(x->first.has_time, y->first.has_time);
        ck_assert_int_eq(x->first.time.hour, y->first.time.hour);
        ck_assert_int_eq(x->first.time.min, y->first.time.min);
    }
    done(&a);
    done(&b);
    free(text);
}
END_TEST

/* The k-th line of the settings test below: every form a capture reads, in turn. */
static void settings_form_line(unsigned k, char *buf, size_t cap)
{
    switch (k % 9) {
    case 0: snprintf(buf, cap, "iter %u | actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=%u | lr=3e-4\n", k, k % 7); break;
    case 1: snprintf(buf, cap, "  gradient_accumulation_steps: %u\n", k % 5); break;
    case 2: snprintf(buf, cap, "python train.py --micro_batch_size %u --gpu_memory_utilization 0.%u\n", k % 3, k % 9); break;
    case 3: snprintf(buf, cap, "{'actor': {'param_offload': %s, 'ppo_micro_batch_size_per_gpu': %u}}\n", k % 2 ? "True" : "False", k % 11); break;
    case 4: snprintf(buf, cap, "my_micro_batch_size_total=%u and xgradient_accumulation_steps: %u\n", k, k); break;
    case 5: snprintf(buf, cap, "  micro_batch_size ........ %u\n", k % 4); break;
    case 6: snprintf(buf, cap, "(TaskRunner pid=1) actor_rollout_ref.rollout.gpu_memory_utilization=0.%u\n", k % 8); break;
    case 7: snprintf(buf, cap, "actor:\n  fsdp_config:\n    param_offload: %s\n", k % 3 ? "true" : "false"); break;
    default: snprintf(buf, cap, "critic.ppo-micro-batch-size-per-gpu=%u data.a..b.micro_batch_size=%u\n", k % 6, k % 5); break;
    }
}

START_TEST(test_scan_helper_reads_settings_ahead_as_one_thread)
{
    /* A log that echoes settings in every form the capture reads, big enough to be split: the helper
     * reads the names of its part ahead (config_occurrence_read) and the scanner's thread applies
     * them; every entry, value, line and order of reading must be a one-thread scan's. */
    size_t n;
    char *text = text_of_lines(1536u << 10, 0, settings_form_line, NULL, &n);
    run_out a = scan_text(embedded_db(), text, n, 0, 0), b = scan_text(embedded_db(), text, n, 0, 1);
    ck_assert_uint_gt(b.res.regions_split, 0);
    char *sa = settings_dump(a.st, 0), *sb = settings_dump(b.st, 0);
    size_t entries = 0;
    for (const char *c = sa; *c; c++)
        entries += *c == '\n';
    ck_assert_uint_ge(entries, 7); /* the forms above were read */
    ck_assert_str_eq(sa, sb);
    free(sa);
    free(sb);
    done(&a);
    done(&b);
    free(text);
}
END_TEST

/* Appends filler lines (no literal of the database) to text until it holds `upto` bytes. */
static size_t fill_to(char *text, size_t len, size_t upto)
{
    for (unsigned k = 0; len < upto; k++)
        len += (size_t)sprintf(text + len, "step %u | elapsed 0.51 | tokens 1234\n", k);
    return len;
}

static size_t put_line(char *text, size_t len, const char *line)
{
    len += (size_t)sprintf(text + len, "%s\n", line);
    return len;
}

static const char *setting_value(story *st, const char *key)
{
    const config_entry *e = config_lookup(*story_job_settings(st, ""), key, "");
    return e ? e->value : "(none)";
}

/* The settings read from text[0..n), in the order read (settings_dump), are `want` when read in each
 * of steps[0..nsteps) bytes at a time, when the helper thread shares the scan, and as a live stream
 * scanned read by read (64 KiB regions: a window spans many, each kept in the ring). */
static void assert_settings_read_alike(const char *text, size_t n, const char *want, const size_t *steps, size_t nsteps)
{
    for (size_t i = 0; i <= nsteps + 1; i++) {
        run_out b = i < nsteps    ? scan_text(embedded_db(), text, n, steps[i], 0)
                    : i == nsteps ? scan_text(embedded_db(), text, n, 0, 1)
                                  : scan_text_live(embedded_db(), text, n, 65536, 0, 1, 1);
        char *got = settings_dump(b.st, 0);
        ck_assert_str_eq(want, got);
        free(got);
        done(&b);
    }
}

START_TEST(test_scan_settings_read_in_head_and_around_failures)
{
    /* scan.h: settings are read in the source's head, in the MiB before a failure and in the 4 MiB
     * after it; a setting printed elsewhere is not read. The same entries, values, lines and order
     * whatever the read sizes and with the helper thread. */
    const size_t mib = 1u << 20, fail_at = SCAN_SETTINGS_HEAD + SCAN_SETTINGS_BEFORE + mib / 2;
    size_t cap = fail_at + SCAN_SETTINGS_AFTER + mib, n = 0;
    char *text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    n = put_line(text, n, "  gradient_accumulation_steps: 1");
    n = put_line(text, n, "python train.py --micro_batch_size 2 --gpu_memory_utilization 0.5");
    n = fill_to(text, n, SCAN_SETTINGS_HEAD + mib / 4);
    n = put_line(text, n, "  gradient_accumulation_steps: 7"); /* far from both: not read */
    n = fill_to(text, n, fail_at - SCAN_SETTINGS_BEFORE / 2);
    n = put_line(text, n, "(TaskRunner pid=1) actor_rollout_ref.rollout.gpu_memory_utilization=0.85");
    n = fill_to(text, n, fail_at);
    n = put_line(text, n, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 3 has a total "
                          "capacity of 79.11 GiB of which 1.02 GiB is free.");
    n = fill_to(text, n, fail_at + mib);
    n = put_line(text, n, "iter 5 | actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3 | lr=3e-4");
    n = fill_to(text, n, fail_at + SCAN_SETTINGS_AFTER + mib / 4);
    n = put_line(text, n, "  micro_batch_size ........ 9"); /* past the failure's window: not read */
    n = fill_to(text, n, n + 4096);
    ck_assert_uint_le(n, cap);

    run_out a = scan_text(embedded_db(), text, n, 0, 0);
    ck_assert_ptr_nonnull(find_class(a.st, CLS_CUDA_OOM));
    ck_assert_str_eq(setting_value(a.st, "gradient_accumulation_steps"), "1");
    ck_assert_str_eq(setting_value(a.st, "micro_batch_size"), "2");
    ck_assert_str_eq(setting_value(a.st, "actor_rollout_ref.rollout.gpu_memory_utilization"), "0.85");
    ck_assert_str_eq(setting_value(a.st, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"), "3");
    char *sa = settings_dump(a.st, 0);
    /* the window's reads carry their own line numbers */
    ck_assert_ptr_nonnull(strstr(sa, "actor_rollout_ref.rollout.gpu_memory_utilization=0.85@"));
    const config_entry *e = config_lookup(*story_job_settings(a.st, ""),
                                          "actor_rollout_ref.rollout.gpu_memory_utilization", "");
    size_t line = 1;
    const char *at = strstr(text, "(TaskRunner pid=1) actor_rollout_ref");
    for (const char *c = text; c < at; c++)
        line += *c == '\n';
    ck_assert_uint_eq(e->line, line);
    const size_t steps[] = {65537};
    assert_settings_read_alike(text, n, sa, steps, 1);
    free(sa);
    done(&a);
    free(text);
}
END_TEST

START_TEST(test_scan_settings_window_of_a_failure_in_the_head)
{
    /* A failure near the end of the head: its window goes on past the head, so the region that holds
     * the head's end is read again from the head's end on, in place (the window lies in the region).
     * A setting just past the head is read; one past the window is not; every read size agrees. */
    const size_t kib = 1u << 10, fail_at = SCAN_SETTINGS_HEAD - 64 * kib;
    size_t cap = fail_at + SCAN_SETTINGS_AFTER + 1024 * kib, n = 0;
    char *text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    n = put_line(text, n, "  gradient_accumulation_steps: 1");
    n = fill_to(text, n, fail_at);
    n = put_line(text, n, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 3 has a total "
                          "capacity of 79.11 GiB of which 1.02 GiB is free.");
    n = fill_to(text, n, SCAN_SETTINGS_HEAD + 300 * kib);
    n = put_line(text, n, "  gradient_accumulation_steps: 2"); /* in the failure's window */
    n = fill_to(text, n, fail_at + SCAN_SETTINGS_AFTER + 300 * kib);
    n = put_line(text, n, "  gradient_accumulation_steps: 3"); /* past it */
    n = fill_to(text, n, n + 4096);
    ck_assert_uint_le(n, cap);
    run_out a = scan_text(embedded_db(), text, n, 0, 0);
    ck_assert_str_eq(setting_value(a.st, "gradient_accumulation_steps"), "2");
    char *sa = settings_dump(a.st, 0);
    const size_t steps[] = {65537, 100003, 7u << 10};
    assert_settings_read_alike(text, n, sa, steps, 3);
    free(sa);
    done(&a);
    free(text);
}
END_TEST

static ssize_t reread_mem(void *ud, void *buf, size_t n, uint64_t off)
{
    const membuf *m = ud;
    if (off + n > m->len)
        return -1;
    memcpy(buf, m->data + off, n);
    return (ssize_t)n;
}

static ssize_t reread_shrunk(void *ud, void *buf, size_t n, uint64_t off)
{
    (void)ud, (void)buf, (void)n, (void)off;
    return -1; /* the file shrank since it was read */
}

/* One scan of text[0..n) whose bytes before a window come from `reread` (a regular file's pread). */
static run_out scan_rereading(const char *text, size_t n, ssize_t (*reread)(void *, void *, size_t, uint64_t))
{
    run_out o = {embedded_db(), story_new(), {0}};
    scanner *sc = scanner_new(o.db);
    phase_state *ps = phase_new(o.db);
    ck_assert(o.st && sc && ps);
    membuf m = {text, n, 0, 0}, again = {text, n, 0, 0};
    scan_source src = {.path = "mem.log", .keep_time = 1, .reread = reread, .reread_ud = &again};
    ck_assert_int_eq(scanner_run(sc, mem_read, &m, &src, ps, story_sink(o.st), &o.res, NULL, NULL), OOMSCAN_OK);
    story_finish(o.st, "");
    scanner_free(sc);
    phase_free(ps);
    return o;
}

START_TEST(test_scan_settings_window_read_again_from_the_file)
{
    /* A regular file's window is read again from the file (scan_source.reread) instead of the ring:
     * the same settings. When the file shrank meanwhile, the window starts with the region: the
     * setting printed regions before the failure is not read, the rest of the scan goes on. */
    const size_t kib = 1u << 10, fail_at = SCAN_SETTINGS_HEAD + 2048 * kib;
    size_t cap = fail_at + 2048 * kib, n = 0;
    char *text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    n = put_line(text, n, "  gradient_accumulation_steps: 1");
    n = fill_to(text, n, fail_at - 900 * kib);
    n = put_line(text, n, "  gradient_accumulation_steps: 2"); /* in the window, regions before the failure */
    n = fill_to(text, n, fail_at);
    n = put_line(text, n, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 3 has a total "
                          "capacity of 79.11 GiB of which 1.02 GiB is free.");
    n = fill_to(text, n, n + 4096);
    ck_assert_uint_le(n, cap);
    run_out ring = scan_text(embedded_db(), text, n, 0, 0), file = scan_rereading(text, n, reread_mem),
            shrunk = scan_rereading(text, n, reread_shrunk);
    char *a = settings_dump(ring.st, 0), *b = settings_dump(file.st, 0);
    ck_assert_str_eq(a, b);
    ck_assert_str_eq(setting_value(file.st, "gradient_accumulation_steps"), "2");
    ck_assert_str_eq(setting_value(shrunk.st, "gradient_accumulation_steps"), "1");
    ck_assert_ptr_nonnull(find_class(shrunk.st, CLS_CUDA_OOM));
    free(a);
    free(b);
    done(&ring);
    done(&file);
    done(&shrunk);
    free(text);
}
END_TEST

/* One scan with and one without the helper thread: the same findings, lines, times. */
static void assert_helper_changes_nothing(const char *text, size_t n)
{
    run_out a = run(text, n, 0), b = run_helper(text, n);
    ck_assert_uint_eq(a.res.lines, b.res.lines);
    ck_assert_uint_eq(a.res.bytes, b.res.bytes);
    ck_assert_int_eq(a.res.have_time, b.res.have_time);
    ck_assert_int_eq(a.res.last_time.hour, b.res.last_time.hour);
    ck_assert_int_eq(a.res.last_time.min, b.res.last_time.min);
    ck_assert_uint_gt(a.st->n, 1);
    ck_assert_uint_eq(a.st->n, b.st->n);
    for (size_t i = 0; i < a.st->n; i++) {
        const finding *x = &a.st->f[i], *y = &b.st->f[i];
        ck_assert_uint_gt(x->occurrences, 2);
        ck_assert_int_eq(x->cls, y->cls);
        ck_assert_uint_eq(x->first.line, y->first.line);
        ck_assert_uint_eq(x->last.line, y->last.line);
        ck_assert_uint_eq(x->occurrences, y->occurrences);
        ck_assert_int_eq(x->first.has_time, y->first.has_time);
        ck_assert_int_eq(x->first.time.hour, y->first.time.hour);
        ck_assert_int_eq(x->first.time.min, y->first.time.min);
        ck_assert_int_eq(x->last.time.hour, y->last.time.hour);
        ck_assert_int_eq(x->last.time.min, y->last.time.min);
    }
    done(&a);
    done(&b);
}

/* Every failure line a scan sends to its sink: line number and time (a finding keeps only its first
 * and last occurrence's). */
typedef struct {
    const scan_sink *next;
    uint64_t line[4096];
    int time[4096]; /* hour * 60 + min, -1 without a time */
    size_t n;
} event_log;

static long log_add(void *ud, const scan_event *ev)
{
    event_log *l = ud;
    if (l->n < 4096) {
        l->line[l->n] = ev->line;
        l->time[l->n++] = ev->time ? ev->time->hour * 60 + ev->time->min : -1;
    }
    return l->next->add(l->next->ud, ev);
}
static int log_phase_of(void *ud, long i, tax_phase *phase, int *weak, const cJSON **memory)
{
    event_log *l = ud;
    return l->next->phase_of(l->next->ud, i, phase, weak, memory);
}
static int log_set_phase(void *ud, long i, tax_phase phase, const char *evidence, int framework, unsigned flags)
{
    event_log *l = ud;
    return l->next->set_phase(l->next->ud, i, phase, evidence, framework, flags);
}
static struct config_store **log_settings(void *ud, const char *job)
{
    event_log *l = ud;
    return l->next->settings(l->next->ud, job);
}

static void scan_events(const char *text, size_t n, int helper, event_log *l, scan_result *res)
{
    pdb *db = testdb_new();
    story *st = story_new();
    scanner *sc = scanner_new(db);
    ck_assert_ptr_nonnull(sc);
    if (helper)
        ck_assert_int_eq(scanner_use_helper(sc, 2), 0);
    phase_state *ps = phase_new(db);
    const scan_sink *next = story_sink(st);
    l->next = next;
    l->n = 0;
    scan_sink sink = {l, log_add, log_phase_of, log_set_phase, log_settings};
    membuf m = {text, n, 0, 0};
    scan_source src = {.path = "mem.log"};
    ck_assert_int_eq(scanner_run(sc, mem_read, &m, &src, ps, &sink, res, NULL, NULL), OOMSCAN_OK);
    scanner_free(sc);
    phase_free(ps);
    story_free(st);
    pdb_free(db);
}

/* One scan of a source that `rd` reads, with a helper thread when `cores` > 1, the source decoded in a
 * thread of its own when `decoder_thread`: its result, and in *found (when not NULL) how many
 * findings the story kept. */
static scan_result scan_read_by(scan_read_fn rd, void *ud, unsigned cores, int decoder_thread, size_t *found)
{
    pdb *db = testdb_new();
    story *st = story_new();
    scanner *sc = scanner_new(db);
    ck_assert_ptr_nonnull(sc);
    if (cores > 1)
        ck_assert_int_eq(scanner_use_helper(sc, cores), 0);
    phase_state *ps = phase_new(db);
    scan_source src = {.path = "mem.log", .decoder_thread = decoder_thread};
    scan_result res;
    ck_assert_int_eq(scanner_run(sc, rd, ud, &src, ps, story_sink(st), &res, NULL, NULL), OOMSCAN_OK);
    story_finish(st, "");
    if (found)
        *found = st->n;
    scanner_free(sc);
    phase_free(ps);
    story_free(st);
    pdb_free(db);
    return res;
}

/* The helper shares a source's prefilter pass (and reads ahead) only where a core is spare for it: a
 * source decoded in a thread of its own (a gzip file's read-ahead) keeps one busy, so with two cores it
 * is scanned by one thread, with three by two; a plain source is split with two. The findings are the
 * same each way. */
static uint64_t split_regions(const char *text, size_t n, unsigned cores, int decoder_thread, size_t *found,
                              uint64_t *ahead)
{
    membuf m = {text, n, 0, 0};
    scan_result res = scan_read_by(mem_read, &m, cores, decoder_thread, found);
    *ahead = res.reads_ahead;
    return res.regions_split;
}

/* A read callback over memory that checks where the scanner asks each large read to land: its
 * destination placed on the cache line as its stream offset is (the kernel's copy out of the page
 * cache ran at a third of its speed otherwise), its end on a page of the stream, and so (counted
 * apart) its start on one whenever the read before it was large. */
typedef struct {
    membuf m;
    unsigned large, off_line, off_page, on_page_start;
} placed_reads;

static ssize_t placed_read(void *ud, void *buf, size_t cap)
{
    placed_reads *p = ud;
    size_t at = p->m.pos;
    ssize_t n = mem_read(&p->m, buf, cap);
    if (cap > 16384 && n > 0) { /* (the read that finds the end copies nothing) */
        p->large++;
        p->off_line += (uintptr_t)buf % 64 != at % 64;
        p->off_page += (at + cap) % 4096 != 0;
        p->on_page_start += at % 4096 == 0 && (uintptr_t)buf % 64 == 0;
    }
    return n;
}

START_TEST(test_scan_large_reads_land_on_cache_lines_and_end_on_pages)
{
    /* lines of many lengths, so that each region carries a different rest */
    size_t cap = 6u << 20, n = 0;
    char *text = malloc(cap + 256);
    ck_assert_ptr_nonnull(text);
    for (unsigned k = 1; n < cap; k++)
        n += (size_t)snprintf(text + n, 256, "%.*s step %u\n", (int)(k * 7919u % 97u), "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", k);
    for (unsigned cores = 1; cores <= 2; cores++) {
        placed_reads p = {{text, n, 0, 0}, 0, 0, 0, 0};
        scan_result res = scan_read_by(placed_read, &p, cores, 0, NULL);
        ck_assert_uint_eq(res.bytes, n);
        ck_assert_uint_ge(p.large, 3);
        ck_assert_uint_eq(p.off_line, 0);
        ck_assert_uint_eq(p.off_page, 0);
        ck_assert_uint_eq(p.on_page_start, p.large); /* the first at 0, each next where one ended */
        if (cores > 1)
            ck_assert_uint_gt(res.reads_ahead, 0); /* the helper's reads were checked too */
    }
    free(text);
}
END_TEST

START_TEST(test_scan_helper_leaves_a_decoder_thread_its_core)
{
    size_t cap = 4u << 20, n = 0;
    char *text = malloc(cap + 256);
    ck_assert_ptr_nonnull(text);
    for (unsigned k = 1; n < cap; k++)
        n += (size_t)snprintf(text + n, 256, k % 4099 ? "step %u loss 0.25 lr 1e-5\n" : "Killed\n", k);
    size_t plain = 0, decoded2 = 0, decoded3 = 0;
    uint64_t ahead = 0, ahead2 = 0, ahead3 = 0;
    ck_assert_uint_gt(split_regions(text, n, 2, 0, &plain, &ahead), 0);
    ck_assert_uint_eq(split_regions(text, n, 2, 1, &decoded2, &ahead2), 0);
    ck_assert_uint_gt(split_regions(text, n, 3, 1, &decoded3, &ahead3), 0);
    /* while the scanner's thread replays the helper's hits, the helper reads the next bytes */
    ck_assert_uint_gt(ahead, 0);
    ck_assert_uint_eq(ahead2, 0);
    ck_assert_uint_gt(plain, 0);
    ck_assert_uint_eq(decoded2, plain);
    ck_assert_uint_eq(decoded3, plain);
    free(text);
}
END_TEST

START_TEST(test_scan_helper_reads_stamps_and_counts_lines_as_one_thread)
{
    /* ~8 MiB of marker lines, most without a stamp: the scanner's thread reads nearly every one back,
     * so the helper reads its part's stamps itself, and counts its part's lines. In the second half
     * most bytes are empty \r\n lines, so split points fall between \r and \n (each one by chance,
     * where it falls depends on timing: half of them). Failures everywhere. */
    size_t cap = 8u << 20, n = 0;
    char *text = malloc(cap + 256);
    ck_assert_ptr_nonnull(text);
    unsigned k = 0;
    while (n < cap) {
        k++;
        char buf[200];
        /* with empty lines, many bytes of that half are \r\n pairs */
        const char *eol = n > cap / 2 ? "\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n"
                                        "\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n"
                                      : "\n";
        if (k % 1009 == 0)
            snprintf(buf, sizeof buf, "Killed%s", eol);
        else if (k % 1201 == 0)
            snprintf(buf, sizeof buf, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB%s", eol);
        else if (k % 5003 == 0)
            snprintf(buf, sizeof buf, "2025-06-01 %02u:%02u:00 After update_actor, step %u%s", k / 60 % 24, k % 60, k, eol);
        else if (k % 3 == 0)
            snprintf(buf, sizeof buf, "step %u loss 0.%u%s", k, k * 7 % 1000, eol);
        else
            snprintf(buf, sizeof buf, "After update_actor, step %u%s", k, eol);
        size_t l = strlen(buf);
        memcpy(text + n, buf, l);
        n += l;
    }
    static event_log one, two;
    scan_result ra, rb;
    scan_events(text, n, 0, &one, &ra);
    scan_events(text, n, 1, &two, &rb);
    unsigned terminators = 0;
    for (size_t i = 0; i < n; i++)
        terminators += text[i] == '\n';
    ck_assert_uint_eq(ra.lines, terminators);
    ck_assert_uint_eq(rb.lines, terminators);
    ck_assert_uint_gt(one.n, 100);
    ck_assert_uint_eq(one.n, two.n);
    for (size_t i = 0; i < one.n; i++) {
        ck_assert_uint_eq(one.line[i], two.line[i]);
        ck_assert_int_eq(one.time[i], two.time[i]);
    }
    assert_helper_changes_nothing(text, n);
    free(text);
}
END_TEST

START_TEST(test_scan_source_names)
{
    scan_source s = {.path = "logs/slurm-123456_7.out"};
    scan_source_from_name(&s);
    ck_assert_str_eq(s.job_id, "123456_7");
    scan_source t = {.path = "job.tar.gz", .member = "node12/rank3.log"};
    scan_source_from_name(&t);
    ck_assert_str_eq(t.rank, "3");
    ck_assert_str_eq(t.host, "node12");
}
END_TEST

/* A Ray session's log names give the pid, the Ray job (not ffffffff, Ray 2.37+'s actors) and, from a
 * folder named by an IPv4 address, the node; other names give none of these. Names as Ray writes them
 * (ray-project/ray#58373, #33583; docs.ray.io "Configure logging"). */
START_TEST(test_scan_names_from_ray_session)
{
    static const struct {
        const char *path, *pid, *ray_job, *host;
    } cases[] = {
        {"session_latest/logs/worker-fc6a4f9b9f2a5a7a196509abdd5a22bf4cc8505c271606305dc91fbd-01000000-478545.err", "478545",
         "01000000", ""},
        {"logs/worker-fc2482678d5f5135e54b650b346e219ef78b55c07f8568e3f9249587-ffffffff-483289.out", "483289", "", ""},
        {"10.0.25.201/python-core-worker-79a553ea91fe46f95e8384ddf8a8f0a01e3418a975ecd0af983c7bb2_308.log", "308", "",
         "10.0.25.201"},
        {"logs/job-driver-raysubmit_qZ8kXu2jV4yLCpWE.log", "", "raysubmit_qZ8kXu2jV4yLCpWE", ""},
        {"logs/raylet.out", "", "", ""},
        {"logs/worker-notahexid-01000000-12.err", "", "", ""},
        {"run/worker-3.log", "", "", ""},
        {"10.0.0/rank0.log", "", "", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        scan_source src = {.path = cases[i].path};
        scan_source_from_name(&src);
        ck_assert_msg(strcmp(src.pid, cases[i].pid) == 0 && strcmp(src.ray_job, cases[i].ray_job) == 0 &&
                          strcmp(src.host, cases[i].host) == 0,
                      "%s: pid '%s' ray_job '%s' host '%s'", cases[i].path, src.pid, src.ray_job, src.host);
    }
}
END_TEST

/* A sink that is not a story (match/event.h): it keeps what the scanner tells, and answers for its
 * findings as the scanner asks (the phase so far), so a second wording joins the first. */
typedef struct {
    int n;               /* findings */
    tax_phase phase[8];  /* of each finding */
    int events;          /* events told */
    long merge_into[8];  /* of each event */
    tax_phase ev_phase[8];
    int set_phase_calls;
} rec_sink;

static long rec_add(void *ud, const scan_event *ev)
{
    rec_sink *r = ud;
    cJSON_Delete(ev->memory); /* the sink owns it */
    if (r->n == 8 || r->events == 8)
        return -1;
    r->merge_into[r->events] = ev->merge_into;
    r->ev_phase[r->events++] = ev->phase;
    if (ev->merge_into >= 0) {
        r->phase[ev->merge_into] = ev->phase;
        return ev->merge_into;
    }
    r->phase[r->n] = ev->phase;
    return r->n++;
}

static int rec_phase_of(void *ud, long i, tax_phase *phase, int *weak, const cJSON **memory)
{
    rec_sink *r = ud;
    if (i < 0 || i >= r->n)
        return -1;
    *phase = r->phase[i];
    *weak = 0;
    *memory = NULL;
    return 0;
}

static int rec_set_phase(void *ud, long i, tax_phase phase, const char *evidence, int framework, unsigned flags)
{
    (void)i, (void)phase, (void)evidence, (void)framework, (void)flags;
    ((rec_sink *)ud)->set_phase_calls++;
    return 0;
}

static struct config_store **rec_settings(void *ud, const char *job)
{
    static struct config_store *none; /* the sample prints no settings */
    (void)ud, (void)job;
    return &none;
}

START_TEST(test_scan_feeds_any_sink)
{
    const char *text = "CUDA out of memory. Tried to allocate 1.00 GiB\n"
                       "Traceback (most recent call last):\n"
                       "  File \"/opt/train.py\", line 9, in step\n"
                       "    loss.backward()\n"
                       "CUDA out of memory. Tried to allocate 1.00 GiB\n";
    pdb *db = testdb_new();
    scanner *sc = scanner_new(db);
    phase_state *ps = phase_new(db);
    ck_assert(sc && ps);
    rec_sink r = {0};
    scan_sink sink = {&r, rec_add, rec_phase_of, rec_set_phase, rec_settings};
    scan_source src = {.path = "mem.log"};
    scan_result res;
    ck_assert_int_eq(scanner_run_text(sc, text, strlen(text), &src, ps, &sink, &res), OOMSCAN_OK);
    /* one finding: the second line joined the first through phase_of, and carries the phase its
     * traceback gave */
    ck_assert_int_eq(r.events, 2);
    ck_assert_int_eq(r.n, 1);
    ck_assert_int_eq(r.merge_into[0], -1);
    ck_assert_int_eq(r.merge_into[1], 0);
    ck_assert_int_eq(r.ev_phase[1], PH_BACKWARD);
    ck_assert_uint_eq(res.lines, 5);
    scanner_free(sc);
    phase_free(ps);
    pdb_free(db);
}
END_TEST

/* lines_bounds and lines_eol (match/lines.h) find a line's end 16 bytes at a time: they must give
 * what a byte-by-byte walk gives, for every position and buffer end, terminators in any lane. */
START_TEST(test_scan_line_bounds_match_scalar)
{
    unsigned char b[300];
    unsigned seed = 7;
    for (size_t i = 0; i < sizeof b; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned r = (seed >> 16) % 40;
        b[i] = r == 0 ? '\n' : r == 1 ? '\r' : (unsigned char)('a' + r % 26);
    }
    memset(b + 100, 'x', 90); /* a long line: whole 16-byte blocks without a terminator */
    static const size_t his[] = {0, 1, 15, 16, 17, 100, 189, 190, 191, 299, 300};
    static const size_t los[] = {0, 3, 120}; /* the start is never looked for before lo */
    for (int avx2 = 1; avx2 >= 0; avx2--) { /* where the CPU has AVX2, lines_eol's both loops */
        lines_use_avx2(avx2);
        for (size_t l = 0; l < sizeof los / sizeof *los; l++)
            for (size_t h = 0; h < sizeof his / sizeof *his; h++)
                for (size_t pos = los[l]; pos <= his[h]; pos++) {
                    size_t e = pos;
                    while (e < his[h] && b[e] != '\n' && b[e] != '\r')
                        e++;
                    size_t s = pos;
                    while (s > los[l] && b[s - 1] != '\n' && b[s - 1] != '\r')
                        s--;
                    size_t gs, ge;
                    lines_bounds(b, los[l], his[h], pos, &gs, &ge);
                    ck_assert_msg(gs == s && ge == e, "pos %zu lo %zu hi %zu: [%zu, %zu), want [%zu, %zu)", pos,
                                  los[l], his[h], gs, ge, s, e);
                    if (pos < his[h])
                        ck_assert_uint_eq(lines_eol(b, pos, his[h]), e);
                }
    }
    lines_use_avx2(1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("scan");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_scan_terminators_positions_exact);
    tcase_add_test(tc, test_scan_invalid_utf8_byte_keeps_kernel_oom);
    tcase_add_test(tc, test_scan_long_line_is_cut_and_scan_goes_on);
    tcase_add_test(tc, test_scan_binary_junk_and_nul_do_not_stop);
    tcase_add_test(tc, test_scan_wrapped_message_joins_number_and_unit);
    tcase_add_test(tc, test_scan_phase_from_traceback_beats_marker);
    tcase_add_test(tc, test_scan_phase_from_marker_and_its_end);
    tcase_add_test(tc, test_scan_phase_from_progress_bar_until_full);
    tcase_add_test(tc, test_scan_burst_takes_phase_from_later_line);
    tcase_add_test(tc, test_scan_repeats_collapse_and_cascade_roles);
    tcase_add_test(tc, test_scan_consequence_without_cause_stays_root);
    tcase_add_test(tc, test_scan_count_lines_matches_scalar);
    tcase_add_test(tc, test_scan_source_names);
    tcase_add_test(tc, test_scan_time_comes_from_last_stamped_line_even_a_marker);
    tcase_add_test(tc, test_scan_stamp_stays_with_its_record);
    tcase_add_test(tc, test_scan_reads_stamps_after_the_last_failure_only_when_asked);
    tcase_add_test(tc, test_scan_setting_inside_a_longer_name_is_no_hit);
    tcase_add_test(tc, test_scan_counts_a_framework_vote_once_per_line);
    tcase_add_test(tc, test_scan_helper_thread_changes_nothing);
    tcase_add_test(tc, test_scan_helper_reads_settings_ahead_as_one_thread);
    tcase_add_test(tc, test_scan_settings_read_in_head_and_around_failures);
    tcase_add_test(tc, test_scan_settings_window_of_a_failure_in_the_head);
    tcase_add_test(tc, test_scan_settings_window_read_again_from_the_file);
    tcase_add_test(tc, test_scan_settings_run_is_timed_by_its_last_line);
    tcase_add_test(tc, test_scan_settings_run_is_read_once_not_line_by_line);
    tcase_add_test(tc, test_scan_helper_reads_stamps_and_counts_lines_as_one_thread);
    tcase_add_test(tc, test_scan_helper_leaves_a_decoder_thread_its_core);
    tcase_add_test(tc, test_scan_large_reads_land_on_cache_lines_and_end_on_pages);
    tcase_add_test(tc, test_scan_wrapped_inside_a_word_keeps_the_joined_values);
    tcase_add_test(tc, test_scan_join_does_not_take_the_next_lines_own_message);
    tcase_add_test(tc, test_scan_required_continuation_confirms_or_drops);
    tcase_add_test(tc, test_scan_names_from_ray_session);
    tcase_add_test(tc, test_scan_feeds_any_sink);
    tcase_add_test(tc, test_scan_line_bounds_match_scalar);
    suite_add_tcase(s, tc);
    return check_run(s);
}
