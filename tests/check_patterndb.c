/* check_patterndb.c - loading, validation, errors that name file/id/offset, replacement by id,
 * and the embedded default database. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oomscan.h"
#include "db/patterndb.h"
#include "db/embedded.h"
#include "match/match.h"
#include "db/prefilter.h"
#include "testdb.h"
#include "check_main.h"

static oomscan_status load(pdb *db, const char *json, oomscan_diag *d)
{
    return pdb_load_text(db, "user.json", json, strlen(json), d);
}

START_TEST(test_patterndb_regex_error_names_file_id_offset)
{
    pdb *db = pdb_new();
    oomscan_diag d = {0};
    ck_assert_int_eq(load(db, "{\"format\":\"oomscan-patterns/1\",\"patterns\":[{\"id\":\"cuda_oom.bad\",\"class\":"
                              "\"cuda_oom\",\"literals\":[\"CUDA out\"],\"regex\":\"CUDA (out\"}]}", &d), OOMSCAN_OK);
    ck_assert_int_eq(pdb_compile(db, &d), OOMSCAN_ERR_PATTERN);
    ck_assert_str_eq(d.where, "user.json");
    ck_assert_ptr_nonnull(strstr(d.msg, "cuda_oom.bad"));
    ck_assert_ptr_nonnull(strstr(d.msg, "offset 9"));
    ck_assert_ptr_nonnull(strstr(d.msg, "missing closing parenthesis"));
    pdb_free(db);
}
END_TEST

START_TEST(test_patterndb_rejects_bad_entries)
{
    static const char *const bad[] = {
        "not json",
        "{\"patterns\":[]}",
        "{\"format\":\"oomscan-patterns/9\"}",
        "{\"format\":\"oomscan-patterns/1\",\"patterns\":[{\"id\":\"x.y\",\"class\":\"no_such_class\",\"literals\":[\"abcd\"],\"regex\":\"a\"}]}",
        "{\"format\":\"oomscan-patterns/1\",\"patterns\":[{\"id\":\"cuda_oom.z\",\"class\":\"cuda_oom\",\"literals\":[\"ab\"],\"regex\":\"a\"}]}",
        "{\"format\":\"oomscan-patterns/1\",\"patterns\":[{\"id\":\"cuda_oom.z\",\"class\":\"cuda_oom\",\"regex\":\"a\"}]}",
        "{\"format\":\"oomscan-phases/1\",\"frames\":[{\"func\":\"f\",\"phase\":\"lunch\"}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pdb *db = pdb_new();
        oomscan_diag d = {0};
        ck_assert_msg(load(db, bad[i], &d) != OOMSCAN_OK, "accepted: %s", bad[i]);
        ck_assert_str_eq(d.where, "user.json");
        ck_assert_msg(d.msg[0] != '\0', "no reason for: %s", bad[i]);
        pdb_free(db);
    }
}
END_TEST

START_TEST(test_patterndb_same_id_replaces)
{
    pdb *db = testdb_new();
    size_t before = db->n_patterns;
    oomscan_diag d = {0};
    ck_assert_int_eq(load(db, "{\"format\":\"oomscan-patterns/1\",\"patterns\":[{\"id\":\"child_failed.test\",\"class\":"
                              "\"child_failed\",\"literals\":[\"worker died\"],\"regex\":\"worker died\"}]}", &d), OOMSCAN_OK);
    ck_assert_uint_eq(db->n_patterns, before);
    int found = 0;
    for (size_t i = 0; i < db->n_patterns; i++)
        if (strcmp(db->patterns[i].id, "child_failed.test") == 0) {
            found = 1;
            ck_assert_str_eq(db->patterns[i].regex_src, "worker died");
            ck_assert_str_eq(db->patterns[i].file, "user.json");
        }
    ck_assert(found);
    ck_assert_int_eq(pdb_compile(db, &d), OOMSCAN_OK);
    pdb_free(db);
}
END_TEST

static size_t problems_seen;
static void count_problem(void *ud, const oomscan_check_problem *p)
{
    (void)ud;
    (void)p;
    problems_seen++;
}

START_TEST(test_patterndb_check_fails_pattern_without_samples)
{
    oomscan_db *db = NULL;
    oomscan_diag d = {0};
    ck_assert_int_eq(oomscan_db_new_empty(&db, &d), OOMSCAN_OK);
    char dir[] = "/tmp/oomscan-pdb-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/p.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"format\":\"oomscan-patterns/1\",\"patterns\":["
          "{\"id\":\"segfault.nosamples\",\"class\":\"segfault\",\"literals\":[\"Segmentation fault\"],\"regex\":\"Segmentation fault\"},"
          "{\"id\":\"segfault.good\",\"class\":\"segfault\",\"literals\":[\"SIGSEGV\"],\"regex\":\"SIGSEGV\","
          " \"samples\":{\"match\":[{\"line\":\"*** SIGSEGV received at time=1\"}],\"no_match\":[{\"line\":\"SIGTERM\"}]}},"
          "{\"id\":\"segfault.wrong\",\"class\":\"segfault\",\"literals\":[\"core dumped\"],\"regex\":\"(?<what>Aborted) \\\\(core dumped\\\\)\","
          " \"samples\":{\"match\":[{\"line\":\"Aborted (core dumped)\",\"expect\":{\"what\":\"Segfault\"}}],\"no_match\":[{\"line\":\"Aborted (core dumped)\"}]}}"
          "]}", f);
    fclose(f);
    ck_assert_int_eq(oomscan_db_add_dir(db, dir, &d), OOMSCAN_OK);
    ck_assert_int_eq(oomscan_db_compile(db, &d), OOMSCAN_OK);
    problems_seen = 0;
    size_t runs = 0;
    size_t n = oomscan_db_check(db, count_problem, NULL, &runs);
    /* nosamples: two missing kinds; wrong: bad capture + matches its no_match line */
    ck_assert_uint_eq(n, 4);
    ck_assert_uint_eq(problems_seen, 4);
    ck_assert_uint_eq(runs, 4);
    unlink(path);
    rmdir(dir);
    oomscan_db_free(db);
}
END_TEST

START_TEST(test_patterndb_embedded_database_is_healthy)
{
    oomscan_db *db = NULL;
    oomscan_diag d = {0};
    ck_assert_msg(oomscan_db_new(&db, &d) == OOMSCAN_OK, "%s: %s", d.where, d.msg);
    ck_assert_msg(oomscan_db_compile(db, &d) == OOMSCAN_OK, "%s: %s", d.where, d.msg);
    ck_assert_uint_gt(oomscan_db_pattern_count(db), 0);
    problems_seen = 0;
    ck_assert_uint_eq(oomscan_db_check(db, count_problem, NULL, NULL), 0);
    oomscan_db_free(db);
}
END_TEST

START_TEST(test_patterndb_xid_catalog_loads_checks_and_replaces)
{
    pdb *db = pdb_new();
    oomscan_diag d = {0};
    static const char *const bad[] = {
        "{\"format\":\"oomscan-xid/1\",\"codes\":{}}",
        "{\"format\":\"oomscan-xid/1\",\"codes\":[{\"xid\":79,\"meaning\":\"x\",\"cause\":\"cosmic rays\"}]}",
        "{\"format\":\"oomscan-xid/1\",\"codes\":[{\"xid\":\"79\",\"meaning\":\"x\",\"cause\":\"hardware\"}]}",
        "{\"format\":\"oomscan-xid/1\",\"codes\":[{\"xid\":79,\"cause\":\"hardware\"}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&d, 0, sizeof d);
        ck_assert_msg(load(db, bad[i], &d) == OOMSCAN_ERR_FORMAT, "accepted: %s", bad[i]);
        ck_assert_str_eq(d.where, "user.json");
    }
    ck_assert_int_eq(load(db, "{\"format\":\"oomscan-xid/1\",\"codes\":[{\"xid\":79,\"meaning\":\"gone\",\"cause\":\"hardware\"},"
                              "{\"xid\":13,\"meaning\":\"fault\",\"cause\":\"application\"}]}", &d), OOMSCAN_OK);
    /* a later file corrects an entry instead of adding a second one */
    ck_assert_int_eq(load(db, "{\"format\":\"oomscan-xid/1\",\"codes\":[{\"xid\":79,\"meaning\":\"off the bus\",\"cause\":\"hardware\"}]}", &d),
                     OOMSCAN_OK);
    ck_assert_uint_eq(db->n_xids, 2);
    const pdb_xid *x = pdb_xid_lookup(db, 79);
    ck_assert_ptr_nonnull(x);
    ck_assert_str_eq(x->meaning, "off the bus");
    ck_assert_str_eq(pdb_xid_lookup(db, 13)->cause, "application");
    ck_assert_ptr_null(pdb_xid_lookup(db, 9999));
    pdb_free(db);

    /* the shipped catalog knows the codes the gpu_hardware patterns capture */
    db = pdb_new();
    ck_assert_int_eq(pdb_load_embedded(db, &d), OOMSCAN_OK);
    static const long hw[] = {48, 63, 64, 74, 79, 92, 94, 95, 149, 154};
    for (size_t i = 0; i < sizeof hw / sizeof *hw; i++)
        ck_assert_msg(pdb_xid_lookup(db, hw[i]) != NULL, "Xid %ld missing from patterns/context/xid.json", hw[i]);
    ck_assert_str_eq(pdb_xid_lookup(db, 79)->cause, "hardware");
    ck_assert_str_eq(pdb_xid_lookup(db, 31)->cause, "application");
    pdb_free(db);
}
END_TEST

/* Start-up compiles every regex but JIT-compiles none: a pattern is JIT-compiled on its first
 * candidate line, and only that one. */
START_TEST(test_patterndb_jit_waits_for_first_use)
{
    pdb *db = testdb_new();
    oomscan_diag d = {0};
    ck_assert_int_eq(pdb_compile(db, &d), OOMSCAN_OK);
    size_t oom = db->n_patterns;
    for (size_t i = 0; i < db->n_patterns; i++) {
        ck_assert_ptr_nonnull(db->patterns[i].re.code);
        ck_assert_msg(!atomic_load(&db->patterns[i].re.jitted), "%s JIT-compiled at start-up", db->patterns[i].id);
        if (strcmp(db->patterns[i].id, "cuda_oom.test") == 0)
            oom = i;
    }
    ck_assert_uint_lt(oom, db->n_patterns);
    matcher *m = matcher_new(db);
    ck_assert_ptr_nonnull(m);
    static const char line[] = "CUDA out of memory. Tried to allocate 2.00 GiB";
    ck_assert_int_gt(matcher_try(m, oom, line, sizeof line - 1), 0);
    for (size_t i = 0; i < db->n_patterns; i++)
        ck_assert_msg(atomic_load(&db->patterns[i].re.jitted) == (i == oom), "%s", db->patterns[i].id);
    uint32_t jit = 0;
    if (pcre2_config(PCRE2_CONFIG_JIT, &jit) >= 0 && jit) {
        size_t size = 0;
        pcre2_pattern_info(db->patterns[oom].re.code, PCRE2_INFO_JITSIZE, &size);
        ck_assert_uint_gt(size, 0);
    }
    /* and it matches as before: a second line uses the JIT code */
    ck_assert_int_gt(matcher_try(m, oom, line, sizeof line - 1), 0);
    matcher_free(m);
    pdb_free(db);
}
END_TEST

/* A checklist's steps come out whole and in order: a library step by name, a library step with
 * some keys of its own (replaced in place, new ones after), a step written in place; and a step
 * library loaded later (a user's fix) is what the next compile resolves, with nothing left pointing
 * at the replaced step (resolved steps refer to the library, they are not copies). */
START_TEST(test_patterndb_checklist_steps_resolve_in_order)
{
    static const char lib[] = "{\"format\":\"oomscan-steps/1\",\"steps\":[{\"id\":\"a\",\"do\":\"A\",\"why\":\"lib\","
                              "\"source\":[\"x\"]}]}";
    static const char cl[] = "{\"format\":\"oomscan-remediation/1\",\"id\":\"mine\",\"applies\":[{\"class\":\"segfault\","
                             "\"phase\":\"rollout\"}],\"steps\":[\"a\",{\"use\":\"a\",\"why\":\"own\",\"extra\":1},"
                             "{\"do\":\"inline\"}],\"title\":\"T\"}";
    static const char fix[] = "{\"format\":\"oomscan-steps/1\",\"steps\":[{\"id\":\"a\",\"do\":\"B\"}]}";
    pdb *db = pdb_new();
    oomscan_diag d = {0};
    ck_assert_int_eq(load(db, lib, &d), OOMSCAN_OK);
    ck_assert_int_eq(load(db, cl, &d), OOMSCAN_OK);
    ck_assert_int_eq(pdb_compile(db, &d), OOMSCAN_OK);
    char *js = cJSON_PrintUnformatted(pdb_checklist_by_id(db, "mine")->json);
    ck_assert_str_eq(js, "{\"format\":\"oomscan-remediation/1\",\"id\":\"mine\",\"applies\":[{\"class\":\"segfault\","
                         "\"phase\":\"rollout\"}],\"steps\":[{\"id\":\"a\",\"do\":\"A\",\"why\":\"lib\",\"source\":[\"x\"]},"
                         "{\"id\":\"a\",\"do\":\"A\",\"why\":\"own\",\"source\":[\"x\"],\"extra\":1},{\"do\":\"inline\"}],"
                         "\"title\":\"T\"}");
    free(js);
    ck_assert_int_eq(load(db, fix, &d), OOMSCAN_OK);
    ck_assert_ptr_null(pdb_checklist_by_id(db, "mine")->json); /* dropped with the step it named */
    ck_assert_int_eq(pdb_compile(db, &d), OOMSCAN_OK);
    js = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(pdb_checklist_by_id(db, "mine")->json, "steps"));
    ck_assert_str_eq(js, "[{\"id\":\"a\",\"do\":\"B\"},{\"id\":\"a\",\"do\":\"B\",\"why\":\"own\",\"extra\":1},"
                         "{\"do\":\"inline\"}]");
    free(js);
    pdb_free(db);
}
END_TEST

/* A scan loads the embedded files lean (no samples, no whitespace): the same database but for the
 * samples, which only --check-patterns runs; the same literals, so the serialized prefilter fits;
 * the advice files (checklists, steps, conclusions) parsed at their first use. */
START_TEST(test_patterndb_lean_embedded_is_the_database_without_samples)
{
    for (size_t i = 0; i < embedded_count; i++) {
        ck_assert_msg(strstr(embedded_files[i].lean, "\"samples\"") == NULL, "%s", embedded_files[i].name);
        ck_assert_uint_lt(embedded_files[i].lean_len, embedded_files[i].len);
    }
    pdb *full = pdb_new(), *lean = pdb_new();
    oomscan_diag d = {0};
    ck_assert_int_eq(pdb_load_embedded(full, &d), OOMSCAN_OK);
    ck_assert_int_eq(pdb_load_embedded_lean(lean, &d), OOMSCAN_OK);
    ck_assert_int_eq(pdb_compile(full, &d), OOMSCAN_OK);
    ck_assert_int_eq(pdb_compile(lean, &d), OOMSCAN_OK);
    ck_assert_uint_eq(lean->n_patterns, full->n_patterns);
    size_t with_samples = 0;
    for (size_t i = 0; i < full->n_patterns; i++) {
        ck_assert_str_eq(lean->patterns[i].id, full->patterns[i].id);
        ck_assert_str_eq(lean->patterns[i].regex_src, full->patterns[i].regex_src);
        ck_assert_ptr_null(lean->patterns[i].samples);
        with_samples += full->patterns[i].samples != NULL;
    }
    ck_assert_uint_eq(with_samples, full->n_patterns);
    ck_assert_uint_eq(lean->n_frames, full->n_frames);
    ck_assert_uint_eq(lean->n_markers, full->n_markers);
    for (size_t i = 0; i < full->n_markers; i++)
        ck_assert_ptr_null(lean->markers[i].samples);
    ck_assert_uint_eq(lean->n_fw_rules, full->n_fw_rules);
    ck_assert_uint_eq(lean->n_versions, full->n_versions);
    ck_assert_uint_eq(lean->n_prefixes, full->n_prefixes);
    ck_assert_uint_eq(lean->n_xids, full->n_xids);
    ck_assert_uint_eq(lean->n_literals, full->n_literals);
    for (size_t i = 0; i < full->n_literals; i++) {
        ck_assert_str_eq(lean->literals[i].text, full->literals[i].text);
        ck_assert_uint_eq(lean->literals[i].n_targets, full->literals[i].n_targets);
    }
    /* the advice files wait for their first use; the settings they name are literals already (above) */
    ck_assert_int_eq(atomic_load(&lean->advice_pending), 1);
    ck_assert_uint_eq(lean->n_checklists, 0);
    ck_assert_ptr_nonnull(pdb_checklist_by_id(lean, "cuda_oom-backward"));
    ck_assert_int_eq(atomic_load(&lean->advice_pending), 0);
    ck_assert_uint_eq(lean->n_checklists, full->n_checklists);
    for (size_t i = 0; i < full->n_checklists; i++) {
        char *a = cJSON_PrintUnformatted(full->checklists[i].json), *b = cJSON_PrintUnformatted(lean->checklists[i].json);
        ck_assert_str_eq(b, a);
        free(a);
        free(b);
    }
#ifdef OOMSCAN_HAVE_VECTORSCAN
    ck_assert_msg(prefilter_from_blob(lean->pf), "the lean database did not use the serialized prefilter");
#endif
    ck_assert_ptr_nonnull(pdb_conclusions(lean));
    pdb_free(full);
    pdb_free(lean);
    /* a user's file after a lean load: the advice files come first, and the user's step replaces
     * theirs, as after a full load */
    lean = pdb_new();
    ck_assert_int_eq(pdb_load_embedded_lean(lean, &d), OOMSCAN_OK);
    ck_assert_int_eq(load(lean, "{\"format\":\"oomscan-steps/1\",\"steps\":[{\"id\":\"micro_batch\",\"do\":\"MINE\"}]}", &d),
                     OOMSCAN_OK);
    ck_assert_int_eq(atomic_load(&lean->advice_pending), 0);
    ck_assert_int_eq(pdb_compile(lean, &d), OOMSCAN_OK);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(lean->steps, "micro_batch"), "do")->valuestring,
                     "MINE");
    pdb_free(lean);
}
END_TEST

/* The embedded database's regexes come compiled from the build (embedded_regex), each the regex its
 * slot names (as pcre2_compile makes it from the source); a blob made for other regexes, or damaged,
 * is refused whole and they are compiled, as with a user's extra pattern. */
START_TEST(test_patterndb_embedded_regexes_come_from_the_build)
{
    pdb *db = pdb_new();
    oomscan_diag d = {0};
    ck_assert_int_eq(pdb_load_embedded(db, &d), OOMSCAN_OK);
    ck_assert_int_eq(pdb_compile(db, &d), OOMSCAN_OK);
    ck_assert_uint_gt(embedded_regex_len, 0);
    ck_assert_msg(db->regex_from_blob, "the serialized regexes were not used");
    size_t checked = 0;
    for (size_t i = 0; i < db->n_patterns; i++) {
        const pdb_pattern *p = &db->patterns[i];
        const pdb_regex *res[2] = {&p->re, p->n_lists ? &p->lists[0].re : NULL};
        const char *srcs[2] = {p->regex_src, p->n_lists ? p->lists[0].src : NULL};
        for (int k = 0; k < 2 && res[k]; k++) {
            int err;
            PCRE2_SIZE off;
            pcre2_code *fresh = pcre2_compile((PCRE2_SPTR)srcs[k], PCRE2_ZERO_TERMINATED,
                                              PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_DUPNAMES, &err, &off, NULL);
            ck_assert_ptr_nonnull(fresh);
            static const uint32_t what[] = {PCRE2_INFO_SIZE, PCRE2_INFO_CAPTURECOUNT, PCRE2_INFO_NAMECOUNT};
            for (size_t w = 0; w < 3; w++) {
                size_t a = 0, b = 0; /* PCRE2_INFO_SIZE is a size_t, the others uint32_t: zeroed first */
                pcre2_pattern_info(res[k]->code, what[w], &a);
                pcre2_pattern_info(fresh, what[w], &b);
                ck_assert_msg(a == b, "%s: regex %d differs from its source (info %u: %zu, %zu)", p->id, k, what[w], a, b);
            }
            pcre2_code_free(fresh);
            checked++;
        }
    }
    ck_assert_uint_gt(checked, db->n_patterns);
    /* damaged or foreign blobs: refused, nothing changed */
    unsigned char *copy = malloc(embedded_regex_len);
    const pcre2_code *before = db->patterns[0].re.code;
    static const size_t flip[] = {0, 8, 16, 24}; /* magic, fingerprint, count, size */
    for (size_t f = 0; f < sizeof flip / sizeof *flip; f++) {
        memcpy(copy, embedded_regex, embedded_regex_len);
        copy[flip[f]] ^= 1;
        ck_assert_int_eq(pdb_regexes_from_blob(db, copy, embedded_regex_len), 0);
    }
    ck_assert_int_eq(pdb_regexes_from_blob(db, embedded_regex, embedded_regex_len - 1), 0);
    ck_assert_ptr_eq(db->patterns[0].re.code, before);
    ck_assert_int_eq(pdb_regexes_from_blob(db, embedded_regex, embedded_regex_len), 1);
    free(copy);
    /* a user's pattern: other regexes, compiled here */
    ck_assert_int_eq(load(db, "{\"format\":\"oomscan-patterns/1\",\"patterns\":[{\"id\":\"cuda_oom.mine\",\"class\":"
                              "\"cuda_oom\",\"literals\":[\"my OOM\"],\"regex\":\"my OOM (?<n>\\\\d+)\"}]}", &d), OOMSCAN_OK);
    ck_assert_int_eq(pdb_compile(db, &d), OOMSCAN_OK);
    ck_assert(!db->regex_from_blob);
    ck_assert_ptr_nonnull(db->patterns[db->n_patterns - 1].re.code);
    pdb_free(db);
}
END_TEST

typedef struct {
    size_t n;
    uint64_t sum; /* order-sensitive digest of (literal, position) */
} pf_digest;

static size_t digest_hit(void *ud, size_t lit, size_t pos)
{
    pf_digest *d = ud;
    d->n++;
    d->sum = (d->sum ^ (lit * 1000003u + pos)) * 0x100000001b3ull;
    return pos + 1;
}

/* The full set's hits that the lean (names 0) or the names (1) prefilter must give: a digest_hit over
 * only those literals. */
typedef struct {
    pf_digest d;
    const pdb *db;
    int names;
} pf_part;

static size_t part_hit(void *ud, size_t lit, size_t pos)
{
    pf_part *p = ud;
    const pdb_literal *l = &p->db->literals[lit];
    int config = 0, other = 0;
    for (size_t k = 0; k < l->n_targets; k++) /* counted here, not with pdb_literal_*: the test's own reading */
        l->targets[k].kind == LIT_CONFIG ? config++ : other++;
    if (p->names ? config > 0 : other > 0)
        digest_hit(&p->d, lit, pos);
    return pos + 1;
}

/* The build-time serialized prefilter is the one the embedded database loads, and it finds what a
 * prefilter compiled here from the same literals finds; a user's extra pattern changes the set, and
 * then the set is compiled (same hits as ever, just the old start-up). */
START_TEST(test_patterndb_embedded_prefilter_is_loaded_and_agrees)
{
    pdb *db = pdb_new();
    oomscan_diag d = {0};
    ck_assert_int_eq(pdb_load_embedded(db, &d), OOMSCAN_OK);
    ck_assert_int_eq(pdb_compile(db, &d), OOMSCAN_OK);
#ifdef OOMSCAN_HAVE_VECTORSCAN
    ck_assert_uint_gt(embedded_prefilter_len, 0);
    ck_assert_msg(prefilter_from_blob(db->pf), "the embedded serialized prefilter was not used");
    ck_assert_msg(prefilter_from_blob(pdb_prefilter_lean(db)) && prefilter_from_blob(pdb_prefilter_names(db)),
                  "the embedded lean and names prefilters were not used");
#else
    ck_assert_uint_eq(embedded_prefilter_len, 0);
#endif
    /* every literal once, each followed by a newline: every literal must be found */
    const char **texts = malloc(db->n_literals * sizeof *texts);
    size_t cap = 1, used = 0;
    for (size_t i = 0; i < db->n_literals; i++)
        cap += strlen(db->literals[i].text) + 1;
    char *buf = malloc(cap);
    ck_assert(texts && buf);
    for (size_t i = 0; i < db->n_literals; i++) {
        texts[i] = db->literals[i].text;
        size_t l = strlen(texts[i]);
        memcpy(buf + used, texts[i], l);
        used += l;
        buf[used++] = '\n';
    }
    prefilter *compiled = prefilter_new(texts, db->n_literals);
    ck_assert_ptr_nonnull(compiled);
    ck_assert(!prefilter_from_blob(compiled));
    pf_digest a = {0}, b = {0};
    prefilter_scan(db->pf, (const unsigned char *)buf, 0, used, used, digest_hit, &a);
    prefilter_scan(compiled, (const unsigned char *)buf, 0, used, used, digest_hit, &b);
    ck_assert_uint_ge(a.n, db->n_literals);
    ck_assert_uint_eq(a.n, b.n);
    ck_assert_uint_eq(a.sum, b.sum);
    /* the lean prefilter finds every literal but those that only name a setting, the names one every
     * literal that names one, each by its index in the whole set */
    ck_assert_uint_gt(db->n_config_lits, 0);
    for (int names = 0; names < 2; names++) {
        pf_part want = {{0}, db, names};
        pf_digest got = {0};
        prefilter_scan(db->pf, (const unsigned char *)buf, 0, used, used, part_hit, &want);
        prefilter_scan(names ? pdb_prefilter_names(db) : pdb_prefilter_lean(db), (const unsigned char *)buf, 0, used, used, digest_hit, &got);
        ck_assert_uint_gt(got.n, 0);
        ck_assert_uint_eq(got.n, want.d.n);
        ck_assert_uint_eq(got.sum, want.d.sum);
    }
    prefilter_free(compiled);
    free(buf);
    free(texts);
    static const char user[] = "{\"format\":\"oomscan-patterns/1\",\"patterns\":[{\"id\":\"child_failed.user\","
                               "\"class\":\"child_failed\",\"literals\":[\"my worker vanished\"],\"regex\":\"my worker vanished\"}]}";
    ck_assert_int_eq(pdb_load_text(db, "user.json", user, sizeof user - 1, &d), OOMSCAN_OK);
    ck_assert_int_eq(pdb_compile(db, &d), OOMSCAN_OK);
    ck_assert(!prefilter_from_blob(db->pf));
    pdb_free(db);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("patterndb");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_patterndb_regex_error_names_file_id_offset);
    tcase_add_test(tc, test_patterndb_rejects_bad_entries);
    tcase_add_test(tc, test_patterndb_same_id_replaces);
    tcase_add_test(tc, test_patterndb_check_fails_pattern_without_samples);
    tcase_add_test(tc, test_patterndb_embedded_database_is_healthy);
    tcase_add_test(tc, test_patterndb_xid_catalog_loads_checks_and_replaces);
    tcase_add_test(tc, test_patterndb_jit_waits_for_first_use);
    tcase_add_test(tc, test_patterndb_embedded_regexes_come_from_the_build);
    tcase_add_test(tc, test_patterndb_checklist_steps_resolve_in_order);
    tcase_add_test(tc, test_patterndb_lean_embedded_is_the_database_without_samples);
    tcase_add_test(tc, test_patterndb_embedded_prefilter_is_loaded_and_agrees);
    suite_add_tcase(s, tc);
    return check_run(s);
}
