/* record.h - the record codec: a finding as a self-contained JSON record and back. One codec for the
 * NDJSON output (batch and live), the --state file and `oomscan merge`, so a story rebuilt from records
 * is exactly the story the logs behind them would give if scanned together (docs/streaming.md).
 *
 * Ownership: JSON objects returned are the caller's (cJSON_Delete). record_to_finding() copies
 * everything it needs out of the record into the story, which owns the new finding. */
#ifndef OOMSCAN_RECORD_H
#define OOMSCAN_RECORD_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "db/patterndb.h"
#include "story/story.h"

struct oomscan_scan;

/* What a consumer of finding i of the finished story sees: its finding object (resolved by
 * result/result.h, with advice when `with_advice`) plus "group" and "echo_level". No "merge" data. */
cJSON *record_visible_json(const struct oomscan_scan *s, size_t i, int with_advice);

/* The whole record of finding i: record_visible_json plus "merge". "type" is the emitter's. */
cJSON *record_json(const struct oomscan_scan *s, size_t i, int with_advice);

/* The "merge" object of a record: the finding's own job and framework, input indexes, exact time
 * stamps, raw rank/host sets, and the scan-wide context ("scan") that root election and framework
 * choice depend on. */
cJSON *record_merge_json(const struct oomscan_scan *s, const finding *f);

/* Only the "scan" part of it: input count, job, framework votes, findings dropped. */
cJSON *record_scan_json(const struct oomscan_scan *s);

/* Append to `st` the finding a record describes (a finding or update record with a "merge" object),
 * its input indexes shifted by `input_offset`. Returns 0; -1 with a reason in err (a record without
 * merge data, a pattern this database does not have, a malformed key); -2 out of memory. */
int record_to_finding(const pdb *db, const cJSON *rec, size_t input_offset, story *st, char *err, size_t errcap);

/* Fold a "scan" object (see record_scan_json) into the session: sums votes, the job rule, dropped
 * counts. Returns its input count. */
size_t record_scan_into(struct oomscan_scan *s, const cJSON *scan);

#endif
