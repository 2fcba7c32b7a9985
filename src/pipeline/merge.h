/* merge.h - findings as self-contained records and back: what `oomscan merge` and --state need to
 * rebuild a story from NDJSON exactly as if the logs behind it had been scanned together.
 *
 * Ownership: JSON objects returned are the caller's (cJSON_Delete). merge_finding_from_json() copies
 * everything it needs out of the record into the story, which owns the new finding. */
#ifndef OOMSCAN_MERGE_H
#define OOMSCAN_MERGE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "db/patterndb.h"
#include "story/story.h"

struct oomscan_scan;

/* The "merge" object of an NDJSON record (docs/streaming.md): the finding's own job and framework,
 * input indexes, exact time stamps, raw rank/host sets, and the scan-wide context ("scan": input
 * count, job, framework votes) that root election and framework choice depend on. */
cJSON *merge_info_json(const struct oomscan_scan *s, const finding *f);

/* Only the "scan" part of it (also saved by --state). */
cJSON *merge_scan_json(const struct oomscan_scan *s);

/* Append to `st` the finding a record describes (a finding or update record with a "merge" object),
 * with its input indexes shifted by `input_offset`. Returns 0, or -1 with a reason in err (a record
 * without merge data, a pattern this database does not have, a malformed key, out of memory). */
int merge_finding_from_json(const pdb *db, const cJSON *rec, size_t input_offset, story *st, char *err,
                            size_t errcap);

/* Fold a "scan" object (see merge_scan_json) into the session: sums votes, agrees or conflicts on
 * the job. Returns its input count. */
size_t merge_scan_into(struct oomscan_scan *s, const cJSON *scan);

#endif
