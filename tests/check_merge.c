/* check_merge.c - `oomscan merge` and the record codec under it: per-node NDJSON merged gives the
 * story one scan of all the logs gives; a record turns back into the finding it came from; records
 * that cannot be used are input errors and the rest goes on. */
#include <check.h>

#include "apitest.h"
#include "check_main.h"
#include "pipeline/record.h"
#include "pipeline/session.h"
#include "remedy_lines.h"

static const char *const NODE_A = FIXTURE("golden/nccl-error-after-oom.log");
static const char *const NODE_B = FIXTURE("golden/sigkill-then-childfailed.log");

/* Scan one log to an NDJSON file; the caller unlinks and frees the path. */
static char *ndjson_of(const char *log)
{
    oomscan_output out = {.format = OOMSCAN_FMT_NDJSON};
    char *text = render_paths(&log, 1, &out);
    char *path = write_temp(".ndjson", text, strlen(text));
    free(text);
    return path;
}

/* "id role caused_by" of each finding of a JSON document, one per line, in document order. */
static char *roles_of(const char *json)
{
    cJSON *doc = cJSON_Parse(json);
    ck_assert_ptr_nonnull(doc);
    mbuf b = {0};
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(doc, "findings"))
    {
        char line[128];
        const char *cb = cJSON_GetStringValue(cJSON_GetObjectItem(f, "caused_by"));
        snprintf(line, sizeof line, "%s %s %s\n", cJSON_GetStringValue(cJSON_GetObjectItem(f, "id")),
                 cJSON_GetStringValue(cJSON_GetObjectItem(f, "role")), cb ? cb : "-");
        mbuf_write(&b, line, strlen(line));
    }
    cJSON_Delete(doc);
    return b.p ? b.p : strdup("");
}

START_TEST(test_merge_two_nodes_as_one_scan)
{
    oomscan_output json = {.format = OOMSCAN_FMT_JSON};
    const char *both[] = {NODE_A, NODE_B};
    char *direct = render_paths(both, 2, &json);
    char *a = ndjson_of(NODE_A), *b = ndjson_of(NODE_B);
    oomscan_scan *s = new_scan();
    oomscan_diag d = {0};
    const char *recs[] = {a, b};
    ck_assert_int_eq(oomscan_scan_merge(s, recs, 2, &d), OOMSCAN_OK);
    ck_assert_uint_eq(oomscan_scan_input_errors(s), 0);
    char *merged = write_scan(s, &json);
    oomscan_scan_free(s);
    char *r1 = roles_of(direct), *r2 = roles_of(merged);
    ck_assert_msg(strlen(r1) > 0, "the logs gave no finding");
    ck_assert_str_eq(r2, r1);
    free(r1);
    free(r2);
    free(direct);
    free(merged);
    unlink(a);
    unlink(b);
    free(a);
    free(b);
}
END_TEST

/* Merging merged output again changes nothing (associative). */
START_TEST(test_merge_merged_output_is_stable)
{
    char *a = ndjson_of(NODE_A), *b = ndjson_of(NODE_B);
    oomscan_output nd = {.format = OOMSCAN_FMT_NDJSON}, json = {.format = OOMSCAN_FMT_JSON};
    oomscan_diag d = {0};
    oomscan_scan *s = new_scan();
    const char *recs[] = {a, b};
    ck_assert_int_eq(oomscan_scan_merge(s, recs, 2, &d), OOMSCAN_OK);
    char *once = write_scan(s, &nd);
    oomscan_scan_free(s);
    char *ab = write_temp(".ndjson", once, strlen(once));
    s = new_scan();
    const char *again[] = {ab};
    ck_assert_int_eq(oomscan_scan_merge(s, again, 1, &d), OOMSCAN_OK);
    char *twice = write_scan(s, &json);
    oomscan_scan_free(s);
    s = new_scan();
    ck_assert_int_eq(oomscan_scan_merge(s, recs, 2, &d), OOMSCAN_OK);
    char *direct = write_scan(s, &json);
    oomscan_scan_free(s);
    char *r1 = roles_of(direct), *r2 = roles_of(twice);
    ck_assert_str_eq(r2, r1);
    free(r1), free(r2), free(once), free(twice), free(direct);
    unlink(a), unlink(b), unlink(ab);
    free(a), free(b), free(ab);
}
END_TEST

/* A line that is not a record and a record of a pattern this database lacks are input errors naming
 * the file; the good records of the same file are still merged. */
START_TEST(test_merge_bad_records_are_input_errors)
{
    char *a = ndjson_of(NODE_A);
    size_t len;
    char *text = slurp_file(a, &len);
    mbuf b = {0};
    mbuf_write(&b, "this is not json\n", 17);
    mbuf_write(&b, text, len);
    char *bad = strdup(text);
    char *pat = strstr(bad, "\"pattern\":\"");
    ck_assert_ptr_nonnull(pat);
    memcpy(pat + 11, "zz", 2); /* an unknown pattern id */
    char *id = strstr(bad, "\"id\":\"");
    ck_assert_ptr_nonnull(id);
    memcpy(id + 6, "ffff", 4); /* its own id: it must not replace the good record it was copied from */
    char *nl = strchr(bad, '\n');
    mbuf_write(&b, bad, (size_t)(nl - bad + 1));
    char *mixed = write_temp(".ndjson", b.p, b.len);
    oomscan_scan *s = new_scan();
    oomscan_diag d = {0};
    const char *recs[] = {mixed};
    ck_assert_int_eq(oomscan_scan_merge(s, recs, 1, &d), OOMSCAN_OK);
    ck_assert_uint_eq(oomscan_scan_input_errors(s), 1);
    const char *e = oomscan_scan_input_error(s, 0);
    ck_assert_msg(strstr(e, mixed) && strstr(e, "line 1"), "%s", e);
    ck_assert_uint_eq(oomscan_scan_finding_count(s), count_lines_with(text, "\"type\":\"finding\""));
    oomscan_scan_free(s);
    unlink(a), unlink(mixed);
    free(a), free(mixed), free(text), free(bad), free(b.p);
}
END_TEST

/* record_json then record_to_finding gives back the finding: group, occurrences, locations, evidence. */
START_TEST(test_merge_record_round_trip)
{
    oomscan_scan *s = new_scan();
    oomscan_diag d = {0};
    ck_assert_int_eq(oomscan_scan_paths(s, &NODE_A, 1, &d), OOMSCAN_OK);
    session_finish(s);
    ck_assert_uint_gt(s->st->n, 0);
    story *back = story_new();
    for (size_t i = 0; i < s->st->n; i++) {
        cJSON *rec = record_json(s, i, 0);
        char err[200] = "";
        ck_assert_msg(record_to_finding(s->db->p, rec, 0, back, err, sizeof err) == 0, "%s", err);
        cJSON_Delete(rec);
        const finding *x = &s->st->f[i], *y = &back->f[back->n - 1];
        ck_assert_str_eq(y->group, x->group);
        ck_assert_uint_eq(y->occurrences, x->occurrences);
        ck_assert_uint_eq(y->first.line, x->first.line);
        ck_assert_uint_eq(y->last.line, x->last.line);
        ck_assert_uint_eq(y->n_evidence, x->n_evidence);
        ck_assert_int_eq(y->phase, x->phase);
        ck_assert_str_eq(y->rank, x->rank);
    }
    story_free(back);
    oomscan_scan_free(s);
}
END_TEST

/* A real cgroup OOM kill (the kernel's block and torchrun's -9: one root with two windows) beside a real
 * Slurm job whose script printed its --mem: the merged records tell what one scan tells, sources and the
 * job's settings in the advice included. */
START_TEST(test_merge_keeps_sources_and_settings)
{
    char *mem = write_temp(".log", LOG_SLURM_5932, strlen(LOG_SLURM_5932));
    /* the kernel's kill first: its record is written before torchrun's window joins it, and the
     * record must be written again with that window in its sources */
    const char *logs[] = {FIXTURE("realjobs/cgroup_oom_kill/job/dmesg.log"),
                          FIXTURE("realjobs/cgroup_oom_kill/job/torchrun.out"), mem};
    oomscan_output nd = {.format = OOMSCAN_FMT_NDJSON}, json = {.format = OOMSCAN_FMT_JSON};
    char *direct = render_paths(logs, 3, &json);
    char *text = render_paths(logs, 3, &nd);
    char *recs = write_temp(".ndjson", text, strlen(text));
    oomscan_scan *s = new_scan();
    oomscan_diag d = {0};
    const char *paths[] = {recs};
    ck_assert_int_eq(oomscan_scan_merge(s, paths, 1, &d), OOMSCAN_OK);
    char *merged = write_scan(s, &json);
    oomscan_scan_free(s);
    char *want = story_keys_of(direct), *got = story_keys_of(merged);
    /* not vacuous: one scan gives both */
    ck_assert_msg(strstr(want, "\"kind\":\"kernel\"") && strstr(want, "\"kind\":\"launcher\""), "%s", want);
    ck_assert_msg(strstr(want, "\"current\":\"64Gb\""), "%s", want);
    assert_same_lines(got, want);
    free(want), free(got), free(direct), free(merged), free(text);
    unlink(recs), unlink(mem);
    free(recs), free(mem);
}
END_TEST

static Suite *merge_suite(void)
{
    Suite *s = suite_create("merge");
    TCase *tc = tcase_create("merge");
    tcase_add_unchecked_fixture(tc, db_setup, db_teardown);
    tcase_add_test(tc, test_merge_two_nodes_as_one_scan);
    tcase_add_test(tc, test_merge_merged_output_is_stable);
    tcase_add_test(tc, test_merge_bad_records_are_input_errors);
    tcase_add_test(tc, test_merge_record_round_trip);
    tcase_add_test(tc, test_merge_keeps_sources_and_settings);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return check_run(merge_suite()); }
