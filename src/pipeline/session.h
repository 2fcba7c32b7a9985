/* session.h - the state of one oomscan_scan, shared by the pipeline: the scan driver (oomscan.c), the
 * live stream (stream.c), --state (state.c) and merge (merge.c). Writers never see it: they read a
 * result (result/result.h) built from it. Internal: not part of the public API.
 *
 * Ownership: the session owns its units, input records, merged story and error strings. */
#ifndef OOMSCAN_SESSION_H
#define OOMSCAN_SESSION_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "oomscan.h"
#include "base/taxonomy.h"
#include "db/patterndb.h"
#include "match/phase.h"
#include "match/scan.h"
#include "result/result.h"
#include "story/story.h"

/* One top-level input after directory expansion, scanned by one worker. */
typedef struct {
    char *path;
    story *st;
    uint32_t votes[FW__COUNT];
    input_record *recs;
    size_t n_recs;
    char job_id[32];   /* from names, when this input states one */
    int job_conflict;  /* names in this input disagree about the job */
    int done;
    oomscan_status status; /* OOMSCAN_OK or out of memory */
    struct dumps_acc *dumps; /* crash dumps read together after all inputs (dumps.h), NULL if none */
    int walked;    /* found by walking a folder, not named: a binary file is skipped (read_binary aside) */
    int empty_dir; /* a folder named that holds no file: an input error, not "no failure" */
} scan_unit;

struct oomscan_scan {
    const struct oomscan_db *db;
    oomscan_options opt;
    scan_unit *units;
    size_t n_units;
    size_t merged; /* units merged into `st` so far, in order */
    story *st;
    input_record *recs; /* merged, in input order */
    size_t n_recs;
    uint32_t votes[FW__COUNT];
    char job_id[32];
    int job_conflict;
    char job_given[32]; /* oomscan_options.job_id: the fallback whatever the names say */
    char **errors; /* "path: reason" for every bad source, in input order */
    size_t n_errors;
    int finished;
    struct dumps_acc *dumps; /* the units' dumps, merged in input order; read at the end of a scan */
    /* streaming, --state and merge (stream.c, state.c, merge.c) */
    struct rep_table *rep;       /* ids written so far and what their last record said */
    struct oomscan_state *state; /* borrowed: --state for this scan, or NULL */
    volatile sig_atomic_t cancel; /* set from a signal handler: stop reading, flush, return */
    size_t extra_inputs;         /* inputs behind merged records or a stream (they have no unit) */
    int findings_capped;         /* the whole run's findings limit was reached and said so */
    size_t excluded, too_large;  /* files not read: an exclude glob matched, larger than max_filesize */
    size_t inputs_written;       /* input records looked at by ndjson_emit_inputs so far */
    result_filter filter;        /* oomscan_options' filters, class names resolved */
    int filtering;               /* any filter set */
    /* workers */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t next_unit;
    /* The merging thread sleeps until units [wait_from, wait_to) are all done (MERGE_BATCH at a
     * time): a worker wakes it only then, not once per input (512 rank files made 512 wake-ups). */
    size_t wait_from, wait_to;
    unsigned split_cores; /* cores per worker: from two on, each worker's scanner takes a helper */
};

/* Append an input record (path and member copied, everything else zero) to recs/n; NULL when out of
 * memory (nothing appended). */
input_record *session_add_record(input_record **recs, size_t *n, const char *path, const char *member);

/* Record in `s` that input record `r` was not read cleanly: "path[:member]: reason" in the error list.
 * Returns 0, -1 out of memory. */
int session_add_error(struct oomscan_scan *s, const input_record *r);

/* The job rule, one place for every input, unit, stream and merged run: the first job named is taken
 * into job[32]; a second, different one sets *conflict. An empty `name` changes nothing. */
void session_note_job(char job[32], int *conflict, const char *name);

/* One source to scan: where its bytes come from and what it is called. */
typedef struct {
    scan_source src;                    /* path, member, input index, resume point (base_*, time0), eager */
    scan_read_fn read;
    void *read_ud;
    const char *(*why)(void *read_ud);  /* the reason after a read error (NULL or "": "read error") */
    scan_progress_fn progress;          /* may be NULL */
    struct dumps_acc **dumps;           /* crash dumps are recognised (dumps.h) and kept here; NULL: read as a log */
    int skip_binary;                    /* with dumps: a NUL byte in the head skips the source (container "binary") */
    void *progress_ud;
} session_source;

/* Scan one source: the one path for a whole input, an archive member, a --state continuation and a
 * live stream. The name's context (job, rank, host) is read, its job joins job/job_conflict by the job
 * rule, the scanner runs to the end of the source into `st` (the caller resets `ps` when a new source
 * starts afresh), and `rec` gets its bytes and lines and, on a read error, its status (partial when
 * anything was read, here or by an earlier run) and reason. `res` (may be NULL) receives the scanner's
 * result. Returns OOMSCAN_OK or OOMSCAN_ERR_NOMEM; a read error is not a failure of the scan. */
oomscan_status session_scan_source(scanner *sc, phase_state *ps, session_source *in, story *st, char job[32],
                                   int *job_conflict, input_record *rec, scan_result *res);

/* Compute ids and roles of everything found so far (idempotent; call before reading findings). */
void session_finish(struct oomscan_scan *s);

/* The scan-wide job: the one given in the options, else the one every input's name agrees on, else "". */
const char *session_scan_job(const struct oomscan_scan *s);

/* Whether finding i passes the options' filters (always, when none is set). */
int session_wants(const struct oomscan_scan *s, size_t i);

/* The view a result is built from (session_finish() first). Borrowed from `s`. */
void session_result_scan(const struct oomscan_scan *s, result_scan *out);

#endif
