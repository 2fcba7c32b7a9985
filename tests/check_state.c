/* check_state.c - --state: a re-run over a grown log reads only the new bytes and reports only what is
 * new or changed; a replaced file is read again; an unusable state file is a warning, not a failure. */
#include <check.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "apitest.h"
#include "check_main.h"
#include "remedy_lines.h"

/* One --state run over `log`: its NDJSON output; *bytes (may be NULL) gets what it read of the log. */
static char *state_run(const char *state_path, const char *log, unsigned long long *bytes, const char **warning)
{
    oomscan_state *st;
    oomscan_diag d = {0};
    ck_assert_int_eq(oomscan_state_open(&st, state_path, &d), OOMSCAN_OK);
    if (warning)
        *warning = oomscan_state_warning(st) ? "warned" : NULL;
    oomscan_scan *s = new_scan();
    ck_assert_int_eq(oomscan_scan_use_state(s, st), OOMSCAN_OK);
    ck_assert_int_eq(oomscan_scan_paths(s, &log, 1, &d), OOMSCAN_OK);
    oomscan_output nd = {.format = OOMSCAN_FMT_NDJSON}, json = {.format = OOMSCAN_FMT_JSON};
    char *out = write_scan(s, &nd);
    if (bytes) {
        char *doc = write_scan(s, &json);
        cJSON *j = cJSON_Parse(doc);
        *bytes = (unsigned long long)cJSON_GetNumberValue(
            cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "inputs"), 0), "bytes"));
        cJSON_Delete(j);
        free(doc);
    }
    ck_assert_int_eq(oomscan_state_save(st, s, &d), OOMSCAN_OK);
    oomscan_scan_free(s);
    oomscan_state_free(st);
    return out;
}

static void append(const char *path, const char *text, size_t len)
{
    int fd = open(path, O_WRONLY | O_APPEND);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
    close(fd);
}

static char *state_path(void)
{
    char *p = write_temp(".state", "", 0);
    unlink(p); /* a missing state file is an empty state */
    return p;
}

static void drop(char *path)
{
    char lock[128];
    snprintf(lock, sizeof lock, "%s.lock", path);
    unlink(lock);
    unlink(path);
    free(path);
}

START_TEST(test_state_grown_log_reads_only_new_bytes)
{
    size_t alen, blen;
    char *first = slurp_file(FIXTURE("golden/xid79-fallen-off-bus.log"), &alen);
    char *more = slurp_file(FIXTURE("golden/kernel-oom-legacy-pair.log"), &blen);
    char *log = write_temp(".log", first, alen);
    char *sp = state_path();
    unsigned long long bytes;
    char *out1 = state_run(sp, log, &bytes, NULL);
    ck_assert_uint_eq(bytes, alen);
    size_t n1 = count_lines_with(out1, "\"type\":\"finding\"");
    ck_assert_uint_gt(n1, 0);
    /* nothing new: nothing read, nothing reported */
    char *out2 = state_run(sp, log, &bytes, NULL);
    ck_assert_uint_eq(bytes, 0);
    ck_assert_str_eq(out2, "");
    /* grown: only the new bytes, only the new findings */
    append(log, more, blen);
    char *out3 = state_run(sp, log, &bytes, NULL);
    ck_assert_uint_eq(bytes, blen);
    ck_assert_uint_gt(count_lines_with(out3, "\"type\":\"finding\""), 0);
    for (const char *p = out1; (p = strstr(p, "{\"id\":\"")); p++) {
        char id[24];
        snprintf(id, sizeof id, "%.16s", p + 7);
        ck_assert_msg(!strstr(out3, id) || strstr(out3, "\"type\":\"update\""), "%s reported again as new", id);
    }
    free(out1), free(out2), free(out3), free(first), free(more);
    unlink(log);
    free(log);
    drop(sp);
}
END_TEST

/* A grown log's new failure without a stamp of its own takes the time of the last stamped line read
 * before the cut, even one after the earlier failure (the context scan keeps its clock to the end). */
START_TEST(test_state_resumed_clock_is_the_last_stamp_before_the_cut)
{
    const char *first = "2025-06-01 10:00:00 Before update_actor, step 1\n"
                        "Killed\n"
                        "2025-06-01 11:30:00 After update_actor, step 1\n";
    const char *more = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n";
    char *log = write_temp(".log", first, strlen(first));
    char *sp = state_path();
    char *out1 = state_run(sp, log, NULL, NULL);
    append(log, more, strlen(more));
    char *out2 = state_run(sp, log, NULL, NULL);
    ck_assert_uint_eq(count_lines_with(out2, "cuda_oom"), 1);
    ck_assert_msg(strstr(out2, "\"2025-06-01T11:30:00\"") && !strstr(out2, "T10:00:00"), "%s", out2);
    free(out1), free(out2);
    unlink(log);
    free(log);
    drop(sp);
}
END_TEST

/* A file replaced by another (a new inode) is read again from its start. */
START_TEST(test_state_replaced_file_is_read_again)
{
    size_t alen;
    char *first = slurp_file(FIXTURE("golden/xid79-fallen-off-bus.log"), &alen);
    char *log = write_temp(".log", first, alen);
    char *sp = state_path();
    unsigned long long bytes;
    free(state_run(sp, log, &bytes, NULL));
    char *copy = write_temp(".log", first, alen);
    ck_assert_int_eq(rename(copy, log), 0);
    free(state_run(sp, log, &bytes, NULL));
    ck_assert_uint_eq(bytes, alen);
    free(first), free(copy);
    unlink(log);
    free(log);
    drop(sp);
}
END_TEST

START_TEST(test_state_unusable_file_is_a_warning)
{
    char *sp = write_temp(".state", "{\"schema\":\"something else\"}", 27);
    const char *log = FIXTURE("golden/xid79-fallen-off-bus.log");
    const char *warned;
    unsigned long long bytes;
    char *out = state_run(sp, log, &bytes, &warned);
    ck_assert_ptr_nonnull(warned);
    ck_assert_uint_gt(bytes, 0);
    ck_assert_uint_gt(count_lines_with(out, "\"type\":\"finding\""), 0);
    free(out);
    /* and the file written in its place is a usable state */
    out = state_run(sp, log, &bytes, &warned);
    ck_assert_ptr_null(warned);
    ck_assert_uint_eq(bytes, 0);
    free(out);
    drop(sp);
}
END_TEST

/* One --state run over `logs`: the whole JSON document of the story so far. */
static char *state_doc(const char *state_path, const char *const *logs, size_t n)
{
    oomscan_state *st;
    oomscan_diag d = {0};
    ck_assert_int_eq(oomscan_state_open(&st, state_path, &d), OOMSCAN_OK);
    oomscan_scan *s = new_scan();
    ck_assert_int_eq(oomscan_scan_use_state(s, st), OOMSCAN_OK);
    ck_assert_int_eq(oomscan_scan_paths(s, logs, n, &d), OOMSCAN_OK);
    oomscan_output json = {.format = OOMSCAN_FMT_JSON};
    char *doc = write_scan(s, &json);
    ck_assert_int_eq(oomscan_state_save(st, s, &d), OOMSCAN_OK);
    oomscan_scan_free(s);
    oomscan_state_free(st);
    return doc;
}

/* A story resumed from the state file is the story one scan tells: sources (the gloo echo seen in the
 * rank's stderr.log and torchrun's console) and the Slurm job's --mem in its advice. Plain logs are
 * continued (nothing new read: every finding rebuilt from its record); a kernel log is a dump, read
 * whole each time, so that the cgroup kill stays one root with its kernel and launcher windows. */
START_TEST(test_state_resumed_story_keeps_sources_and_settings)
{
    char *mem = write_temp(".log", LOG_SLURM_5932, strlen(LOG_SLURM_5932));
    const char *plain[] = {FIXTURE("realjobs/cgroup_oom_kill/job/torchrun.out"),
                           FIXTURE("realjobs/cgroup_oom_kill/job/logs/none_qga_jgf8/attempt_0/0/stderr.log"), mem};
    const char *with_dump[] = {FIXTURE("realjobs/cgroup_oom_kill/job/torchrun.out"),
                               FIXTURE("realjobs/cgroup_oom_kill/job/dmesg.log"), mem};
    const char *const *runs[] = {plain, with_dump};
    const char *needs[] = {"\"kind\":\"log\"},{", "\"kind\":\"kernel\""};
    for (int r = 0; r < 2; r++) {
        oomscan_output json = {.format = OOMSCAN_FMT_JSON};
        char *direct = render_paths(runs[r], 3, &json);
        char *sp = state_path();
        unsigned long long bytes;
        free(state_run(sp, runs[r][0], &bytes, NULL)); /* a state of another input list is not resumed */
        free(state_doc(sp, runs[r], 3));
        char *resumed = state_doc(sp, runs[r], 3);
        char *want = story_keys_of(direct), *got = story_keys_of(resumed);
        ck_assert_msg(strstr(want, needs[r]), "%s", want); /* not vacuous */
        ck_assert_msg(strstr(want, "\"current\":\"64Gb\""), "%s", want);
        if (r == 0) /* every input continued: the story came from the records alone */
            ck_assert_uint_eq(count_lines_with(resumed, "\"bytes\":\t0,"), 3);
        assert_same_lines(got, want);
        free(want), free(got), free(direct), free(resumed);
        drop(sp);
    }
    unlink(mem);
    free(mem);
}
END_TEST

/* One --state run over `paths` as the CLI writes NDJSON: after each input, then at the end. */
static char *state_run_streamed(const char *state_path, const char *const *paths, size_t n)
{
    oomscan_state *st;
    oomscan_diag d = {0};
    ck_assert_int_eq(oomscan_state_open(&st, state_path, &d), OOMSCAN_OK);
    delta_ctx c = {0};
    mbuf_write(&c.b, "", 0);
    oomscan_options opt = {.jobs = 1, .on_input = delta_on_input, .ud = &c};
    ck_assert_int_eq(oomscan_scan_new(&c.s, g_db, &opt, &d), OOMSCAN_OK);
    ck_assert_int_eq(oomscan_scan_use_state(c.s, st), OOMSCAN_OK);
    ck_assert_int_eq(oomscan_scan_paths(c.s, paths, n, &d), OOMSCAN_OK);
    ck_assert_int_eq(oomscan_scan_write_ndjson_delta(c.s, mbuf_write, &c.b), OOMSCAN_OK);
    ck_assert_int_eq(oomscan_state_save(st, c.s, &d), OOMSCAN_OK);
    oomscan_scan_free(c.s);
    oomscan_state_free(st);
    return c.b.p;
}

/* The ids of the records, in order, one per line. */
static char *record_ids(const char *ndjson)
{
    mbuf b = {0};
    mbuf_write(&b, "", 0);
    for (const char *p = ndjson; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        cJSON *r = cJSON_ParseWithLength(p, n);
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "id"));
        ck_assert_ptr_nonnull(id);
        mbuf_write(&b, id, strlen(id));
        mbuf_write(&b, "\n", 1);
        cJSON_Delete(r);
        p = nl ? nl + 1 : NULL;
    }
    return b.p;
}

/* The real cgroup OOM kill job's launcher log and kernel log, in either order: the first run writes the
 * same records (the kernel's kill as the root, the launcher's -9 of the same pid one of its windows), and
 * a re-run over the unchanged files writes nothing. (Before, the re-run that read the launcher log
 * first made its -9 the root again until the kernel log was read, and said so in updates.) */
START_TEST(test_state_unchanged_rerun_writes_nothing_in_either_order)
{
    const char *out = FIXTURE("realjobs/cgroup_oom_kill/job/torchrun.out");
    const char *kern = FIXTURE("realjobs/cgroup_oom_kill/job/dmesg.log");
    const char *orders[2][2] = {{kern, out}, {out, kern}};
    char *first[2];
    for (int o = 0; o < 2; o++) {
        char *st = state_path();
        char *run1 = state_run_streamed(st, orders[o], 2);
        first[o] = record_ids(run1);
        ck_assert_msg(count_lines_with(run1, "\"role\":\"root\"") == 1, "order %d, first run:\n%s", o, first[o]);
        char *run2 = state_run_streamed(st, orders[o], 2);
        char *again = record_ids(run2);
        ck_assert_msg(run2[0] == 0, "order %d: an unchanged re-run wrote records of\n%s", o, again);
        free(again);
        free(run1);
        free(run2);
        drop(st);
    }
    ck_assert_str_eq(first[0], first[1]);
    free(first[0]);
    free(first[1]);
}
END_TEST

static Suite *state_suite(void)
{
    Suite *s = suite_create("state");
    TCase *tc = tcase_create("state");
    tcase_add_unchecked_fixture(tc, db_setup, db_teardown);
    tcase_add_test(tc, test_state_grown_log_reads_only_new_bytes);
    tcase_add_test(tc, test_state_replaced_file_is_read_again);
    tcase_add_test(tc, test_state_resumed_clock_is_the_last_stamp_before_the_cut);
    tcase_add_test(tc, test_state_resumed_story_keeps_sources_and_settings);
    tcase_add_test(tc, test_state_unusable_file_is_a_warning);
    tcase_add_test(tc, test_state_unchanged_rerun_writes_nothing_in_either_order);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return check_run(state_suite()); }
