/* ndjson.h - NDJSON output: the table of ids written (with a hash of what their last record said) and
 * the writer of "finding" / "update" records (docs/streaming.md), shared by batch NDJSON, live streams
 * and --state re-runs. Records are built by the record codec (record.h).
 *
 * Ownership: the session owns its rep_table (rep_free in oomscan_scan_free). */
#ifndef OOMSCAN_NDJSON_H
#define OOMSCAN_NDJSON_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline/session.h"

typedef struct {
    char id[17];
    uint64_t hash;      /* of the finding's visible content when last written */
    int is_root;
    char caused_by[17]; /* "" when none */
    uint64_t occurrences;
    double at;          /* monotonic seconds when written (0 when loaded from a state file) */
} rep_entry;

typedef struct rep_table rep_table;

rep_table *rep_new(void);
void rep_free(rep_table *t);
/* The entry for id, or NULL. */
rep_entry *rep_find(const rep_table *t, const char *id);
/* The entry for id, created zeroed (with its id) when missing; NULL when out of memory. */
rep_entry *rep_put(rep_table *t, const char *id);
/* Entries in insertion order, for saving. */
size_t rep_count(const rep_table *t);
const rep_entry *rep_at(const rep_table *t, size_t i);

/* For a live stream: is finding i complete enough to be written for the first time? */
typedef int (*ndjson_ready_fn)(void *ud, size_t i);

/* Write a record for every finding whose visible content differs from what was written for its id
 * (a "finding" record the first time, an "update" record after). `ready` NULL means everything is
 * final (end of input); with `ready`, new findings wait until ready() says so and an update that only
 * adds occurrences waits until `min_gap` seconds after the previous record of that id. A finding for
 * which `hold` (may be NULL) says 1 is not written now at all, neither new nor updated: what it says
 * may still change before the end (between the inputs of a batch run). Each record is one write of one
 * line. Returns OOMSCAN_ERR_IO when the writer refused. */
oomscan_status ndjson_emit(struct oomscan_scan *s, ndjson_ready_fn ready, void *ready_ud, ndjson_ready_fn hold,
                           double min_gap, oomscan_write_fn fn, void *ud);

/* Write an "input" record (the document's input object and "type": "input") for every input not read
 * cleanly (status error or partial) since the last call: a consumer of NDJSON alone learns what could
 * not be scanned (docs/output.md, "NDJSON records"). Returns OOMSCAN_ERR_IO when the writer refused. */
oomscan_status ndjson_emit_inputs(struct oomscan_scan *s, oomscan_write_fn fn, void *ud);

/* Monotonic seconds. */
double ndjson_now(void);

#endif
