/* oomscan_summary.h - the fleet view: what failed, and how often, across many jobs.
 *
 * A summary reads oomscan's own NDJSON output (from many runs: epilog spools, a shipper's archive),
 * keeps the last record of each finding per job, and counts root failures by class x phase x framework
 * with how many jobs each, and the fingerprints that recur across jobs with when they were first and
 * last seen. It reads only the documented output contract (docs/output.md), so NDJSON written by any
 * version with the same `schema` can be summarised.
 *
 * Ownership: a summary owns copies of everything it was given; oomscan_summary_free() takes NULL. */
#ifndef OOMSCAN_SUMMARY_H
#define OOMSCAN_SUMMARY_H

#include <stddef.h>
#include <time.h>

#include "oomscan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oomscan_summary oomscan_summary;

oomscan_status oomscan_summary_new(oomscan_summary **out, oomscan_diag *diag);
void oomscan_summary_free(oomscan_summary *sum);

/* Add one NDJSON document (`len` bytes, not necessarily NUL-terminated) read from `name`. Records
 * without `id` and `class` are ignored; a line that is not a JSON object is counted as bad and skipped
 * (the first one is named in `diag` with its line number, status OOMSCAN_ERR_FORMAT, but everything
 * good in the document is kept). `mtime` (0: unknown) dates the records whose finding states no full
 * date. A record's job is its `job`, else `context.job_id`, else the Slurm epilog spool name
 * `<job>.<node>.ndjson`, else `name` itself (one run, one job). */
oomscan_status oomscan_summary_add_ndjson(oomscan_summary *sum, const char *name, const char *data, size_t len,
                                          time_t mtime, oomscan_diag *diag);

/* Lines that were skipped as not JSON, over every document added. */
size_t oomscan_summary_bad_lines(const oomscan_summary *sum);

typedef enum { OOMSCAN_SUMMARY_TEXT, OOMSCAN_SUMMARY_JSON } oomscan_summary_format;

/* Write the summary (docs/summary.md): JSON keys `jobs`, `findings`, `inputs_not_read`, `inputs_partial`,
 * `jobs_not_scanned` (from input records and documents' inputs), `groups` (each `class`, `phase`,
 * `framework`, `jobs`, `findings`, `occurrences`) and `fingerprints` (each `id`, `class`, `jobs`,
 * `first`, `last`), or the same as a text table. Returns OOMSCAN_ERR_CANCELLED if `fn` asked to stop. */
oomscan_status oomscan_summary_write(oomscan_summary *sum, oomscan_summary_format format, oomscan_write_fn fn,
                                     void *ud, oomscan_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
