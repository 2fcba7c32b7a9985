/* emit.h - the writers: the oomscan/1 JSON document and finding objects (docs/output.md), the
 * text report a person reads, and the ticketing feed (docs/ticketing.md). Each takes a result
 * (result/result.h) read-only and only formats it: nothing is worked out here, no advice is asked.
 *
 * Ownership: JSON returned is the caller's (cJSON_Delete). Writers write through the caller's fn. */
#ifndef OOMSCAN_EMIT_H
#define OOMSCAN_EMIT_H

#include <cjson/cJSON.h>

#include "oomscan.h"
#include "result/result.h"

/* One finding as its JSON object (the same object in the document, NDJSON records and the state). */
cJSON *emit_finding_json(const result_finding *rf);
/* The same, moving rf's remediation and diagnosis into the object instead of copying them: for a
 * result_finding the caller clears next (a record per finding: the copy was a tenth of a merge). */
cJSON *emit_finding_json_take(result_finding *rf);

/* One input as its JSON object (the document's inputs[], NDJSON's input records): path, status, error,
 * bytes, lines, member, container, lines_cut; made valid UTF-8 (safe_json). */
cJSON *emit_input_json(const input_record *in);

/* The whole document: schema, tool, inputs, findings in report order, findings_dropped. */
cJSON *emit_json(const result *r);

/* The document, pretty-printed, then a newline. OOMSCAN_ERR_IO when the writer refused. */
oomscan_status emit_json_write(const result *r, oomscan_write_fn fn, void *ud);

/* The text report: one line counting the inputs (each input with `verbose`, in natural order), every
 * finding with `verbose`, then the answer: each root in one sentence with its diagnosis and first steps,
 * the cascade counted by class. ANSI colour with `color` (reset
 * before each newline). Lines fit `width` columns (0: 80): longer ones wrap at a blank under their
 * own indent, and an evidence line is cut at a word with an ellipsis. */
oomscan_status emit_text(const result *r, int color, int verbose, unsigned width, oomscan_write_fn fn, void *ud);

/* Tickets: one JSON object per line per root finding, in report order, in out->ticket_style.
 * OOMSCAN_ERR_USAGE for the Jira style without a project. */
oomscan_status emit_tickets(const result *r, const oomscan_output *out, oomscan_write_fn fn, void *ud);

/* The report to attach to a ticket, a chat thread or a PR (docs/markdown.md): one section per job,
 * root cause first, numbers and cascade as tables, the checklist as the user types it. */
oomscan_status emit_markdown(const result *r, oomscan_write_fn fn, void *ud);

/* Counters by class, phase, framework and role, inputs by status, jobs scanned by outcome, and (when
 * `run_time` is not 0) the run's time as a gauge, ending in "# EOF" (docs/metrics.md). */
oomscan_status emit_openmetrics(const result *r, long long run_time, oomscan_write_fn fn, void *ud);

#endif
