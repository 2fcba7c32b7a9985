/* check_match.c - the matcher's prefix stripping: its fast paths give the answers of the plain one. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/patterndb.h"
#include "match/match.h"
#include "check_main.h"

/* The shipped database, with `extra` more prefixes that match nothing below. */
static pdb *shipped(int extra)
{
    pdb *db = pdb_new();
    ck_assert_ptr_nonnull(db);
    oomscan_diag d = {0};
    ck_assert_int_eq(pdb_load_embedded(db, &d), OOMSCAN_OK);
    if (extra) {
        char json[8192];
        size_t n = (size_t)snprintf(json, sizeof json, "{\"format\":\"oomscan-prefixes/1\",\"prefixes\":[");
        for (int i = 0; i < extra; i++)
            n += (size_t)snprintf(json + n, sizeof json - n, "%s{\"id\":\"never_%d\",\"regex\":\"\\\\Gnever-%d\\\\x01 \"}",
                                  i ? "," : "", i, i);
        n += (size_t)snprintf(json + n, sizeof json - n, "]}");
        ck_assert_uint_lt(n, sizeof json);
        ck_assert_msg(pdb_load_text(db, "extra.json", json, n, &d) == OOMSCAN_OK, "%s", d.msg);
    }
    ck_assert_msg(pdb_compile(db, &d) == OOMSCAN_OK, "%s: %s", d.where, d.msg);
    return db;
}

/* Lines to strip: every prefix sample of the shipped database, each also behind the start-of-line
 * prefixes that stack in front of others and before Ray's end-of-line suffix, and the shapes of
 * issue 18 (genshapes.py). Returns how many were written to out (each malloc'd). */
static size_t lines_to_strip(const pdb *db, char **out, size_t cap)
{
    static const char *const heads[] = {"", "(WorkerDict pid=4012) ", "[rank3]: ", "node7: ", "\x1b[36m",
                                        "(TaskRunner pid=2231) 2025-06-01 11:30:00,123 INFO "};
    static const char *const tails[] = {"", " [repeated 3x across cluster]"};
    static const char *const shapes[] = {
        "(WorkerDict pid=22657) [rank5] generated 296 sequences, mean length 652.5",
        "(TaskRunner pid=2231) step:1 - actor/entropy:49.278184 - perf/max_memory_allocated_gb:8.053813 - timing_s/gen:48.2",
        "node020:4005:4105 [5] NCCL INFO Channel 25/0 : 5[5] -> 6[6] via P2P/CUMEM/read",
        "Training Progress:  2%|##| 2/1000 [02:02<57:57, 35.19s/it]",
        "[2025-06-01 11:30:00] [rank0]: x",
        "r",
        "\xc3\xa9t\xe9 2025-06-01 11:30:00 caf\xff",
    };
    size_t n = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes && n < cap; i++)
        out[n++] = strdup(shapes[i]);
    for (size_t i = 0; i < db->n_prefixes; i++) {
        const cJSON *s;
        cJSON_ArrayForEach(s, db->prefixes[i].samples)
        {
            const cJSON *line = cJSON_GetObjectItemCaseSensitive(s, "line");
            if (!cJSON_IsString(line))
                continue;
            for (size_t h = 0; h < sizeof heads / sizeof *heads; h++)
                for (size_t t = 0; t < sizeof tails / sizeof *tails && n < cap; t++) {
                    size_t len = strlen(heads[h]) + strlen(line->valuestring) + strlen(tails[t]) + 1;
                    out[n] = malloc(len);
                    ck_assert_ptr_nonnull(out[n]);
                    snprintf(out[n], len, "%s%s%s", heads[h], line->valuestring, tails[t]);
                    n++;
                }
        }
    }
    ck_assert_uint_lt(n, cap);
    return n;
}

START_TEST(test_match_two_byte_table_strips_as_one_byte_table)
{
    /* Up to 63 prefixes, the candidates for a line are looked up by its first two bytes; with more,
     * by the first byte alone. Both must strip the same bytes and read the same fields. */
    pdb *two = shipped(0), *one = shipped(64 - (int)two->n_prefixes);
    ck_assert_uint_le(two->n_prefixes, 63);
    ck_assert_uint_ge(one->n_prefixes, 64);
    matcher *a = matcher_new(two), *b = matcher_new(one);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    char *lines[4096];
    size_t n = lines_to_strip(two, lines, sizeof lines / sizeof *lines), stripped = 0;
    for (size_t i = 0; i < n; i++) {
        line_ctx ca, cb;
        size_t la, lb, len = strlen(lines[i]);
        const char *ma = matcher_strip(a, lines[i], len, &la, &ca);
        const char *mb = matcher_strip(b, lines[i], len, &lb, &cb);
        ck_assert_msg(ma == mb && la == lb, "message differs: %s", lines[i]);
        ck_assert_msg(memcmp(&ca, &cb, sizeof ca) == 0, "fields differ: %s", lines[i]);
        stripped += ma != lines[i];
        free(lines[i]);
    }
    ck_assert_uint_gt(stripped, n / 2);
    matcher_free(a);
    matcher_free(b);
    pdb_free(two);
    pdb_free(one);
}
END_TEST

START_TEST(test_match_line_time_is_the_time_strip_reads)
{
    /* The deferred lines of a scan are asked only for their time stamp (matcher_line_time): it must
     * be the one matcher_strip reads, behind other prefixes, with or without an end-of-line suffix. */
    pdb *db = shipped(0);
    matcher *m = matcher_new(db);
    ck_assert_ptr_nonnull(m);
    char *lines[4096];
    size_t n = lines_to_strip(db, lines, sizeof lines / sizeof *lines), timed = 0, untimed = 0;
    for (size_t i = 0; i < n; i++) {
        line_ctx full, fast;
        size_t ml, len = strlen(lines[i]);
        matcher_strip(m, lines[i], len, &ml, &full);
        int has = matcher_line_time(m, lines[i], len, &fast);
        ck_assert_msg(has == (full.time[0] != '\0'), "has a time? %s", lines[i]);
        ck_assert_msg(strcmp(full.time, fast.time) == 0, "time %s, not %s: %s", fast.time, full.time, lines[i]);
        timed += has;
        untimed += !has;
        free(lines[i]);
    }
    ck_assert_uint_gt(timed, 50);
    ck_assert_uint_gt(untimed, 50);
    matcher_free(m);
    pdb_free(db);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("match");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_match_two_byte_table_strips_as_one_byte_table);
    tcase_add_test(tc, test_match_line_time_is_the_time_strip_reads);
    suite_add_tcase(s, tc);
    return check_run(s);
}
