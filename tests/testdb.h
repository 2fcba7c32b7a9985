/* testdb.h - a small database written in the test itself, so module tests do not depend on the
 * shipped patterns/ (which the --check-patterns test covers). */
#ifndef OOMSCAN_TESTDB_H
#define OOMSCAN_TESTDB_H

#include <check.h>

#include "db/patterndb.h"

static const char TESTDB_PATTERNS[] =
    "{\"format\":\"oomscan-patterns/1\",\"family\":\"test\",\"patterns\":["
    "{\"id\":\"cuda_oom.test\",\"class\":\"cuda_oom\",\"literals\":[\"CUDA out of memory\"],"
    " \"regex\":\"CUDA out of memory\\\\. Tried to allocate (?<requested_bytes>[0-9.]+ ?[KMGT]iB)(?:\\\\. GPU (?<gpu>[0-9]+) has a total capacity of (?<total_bytes>[0-9.]+ [KMGT]iB) of which (?<free_bytes>[0-9.]+ [KMGT]iB) is free)?\"},"
    "{\"id\":\"nccl_timeout.test\",\"class\":\"nccl_timeout\",\"literals\":[\"Watchdog caught\"],"
    " \"regex\":\"Watchdog caught collective operation timeout: WorkNCCL\\\\(SeqNum=(?<seq>[0-9]+), OpType=(?<op>[A-Z_]+)\"},"
    "{\"id\":\"child_failed.test\",\"class\":\"child_failed\",\"literals\":[\"ChildFailedError\"],\"regex\":\"ChildFailedError\"},"
    "{\"id\":\"host_oom_kill.test\",\"class\":\"host_oom_kill\",\"literals\":[\"Killed\"],\"regex\":\"^Killed$\"}"
    "]}";

static const char TESTDB_PREFIXES[] =
    "{\"format\":\"oomscan-prefixes/1\",\"prefixes\":["
    "{\"id\":\"rank\",\"regex\":\"\\\\[rank(?<rank>[0-9]+)\\\\]: ?\"},"
    "{\"id\":\"iso\",\"regex\":\"(?<time>[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.,]+) \"}"
    "]}";

static const char TESTDB_PHASES[] =
    "{\"format\":\"oomscan-phases/1\","
    "\"frames\":[{\"code\":\"loss.backward(\",\"phase\":\"backward\"},{\"func\":\"compute_log_prob\",\"phase\":\"log_probs\",\"framework\":\"verl\"}],"
    "\"markers\":[{\"literal\":\"Before update_actor\",\"phase\":\"forward\",\"framework\":\"verl\"},{\"literal\":\"After update_actor\",\"phase\":null},"
    "{\"literal\":\"Loading checkpoint shards:\",\"phase\":\"model_init\"},"
    "{\"literal\":\"Loading checkpoint shards: 100%\",\"phase\":null}]}";

static inline pdb *testdb_new(void)
{
    pdb *db = pdb_new();
    ck_assert_ptr_nonnull(db);
    oomscan_diag d = {0};
    ck_assert_int_eq(pdb_load_text(db, "test.json", TESTDB_PATTERNS, sizeof TESTDB_PATTERNS - 1, &d), OOMSCAN_OK);
    ck_assert_int_eq(pdb_load_text(db, "prefixes.json", TESTDB_PREFIXES, sizeof TESTDB_PREFIXES - 1, &d), OOMSCAN_OK);
    ck_assert_int_eq(pdb_load_text(db, "phases.json", TESTDB_PHASES, sizeof TESTDB_PHASES - 1, &d), OOMSCAN_OK);
    ck_assert_msg(pdb_compile(db, &d) == OOMSCAN_OK, "%s: %s", d.where, d.msg);
    return db;
}

#endif
