/* session.h - the state of one oomscan_scan, shared by the scan driver (oomscan.c) and the emitters.
 * Internal: not part of the public API.
 *
 * Ownership: the session owns its units, input records, merged story and error strings. Emitters only
 * read it (NDJSON streaming also updates each finding's written_version). */
#ifndef OOMSCAN_SESSION_H
#define OOMSCAN_SESSION_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "oomscan.h"
#include "db/patterndb.h"
#include "story/story.h"
#include "base/taxonomy.h"

struct oomscan_db {
    pdb *p;
};

typedef enum { INPUT_OK, INPUT_PARTIAL, INPUT_ERROR } input_status;

/* One source that was read (a file, an archive member) or could not be. */
typedef struct {
    char *path;
    char *member;    /* NULL outside archives */
    char *container; /* "text", "gzip", "tar+gzip", ... or NULL when it could not be opened */
    input_status status;
    char *error;     /* reason when not ok */
    uint64_t bytes, lines, lines_cut;
} input_record;

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
    /* streaming, --state and merge (stream.c, state.c, merge.c) */
    struct rep_table *rep;       /* ids written so far and what their last record said */
    struct oomscan_state *state; /* borrowed: --state for this scan, or NULL */
    volatile sig_atomic_t cancel; /* set from a signal handler: stop reading, flush, return */
    size_t extra_inputs;         /* inputs behind merged records or a stream (they have no unit) */
    /* workers */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t next_unit;
    int split_scan; /* cores to spare (at least two per worker): each worker's scanner takes a helper */
};

/* Append an input record (path and member copied) to `u`; NULL when out of memory. */
input_record *session_add_record(scan_unit *u, const char *path, const char *member);

/* Take `job` (may be empty) as the unit's job id; a second, different one marks a conflict. */
void session_note_job(scan_unit *u, const char *job);

/* The framework of a finding: its own (from its traceback) or the scan's, the RL one winning. */
int session_framework(const struct oomscan_scan *s, const finding *f);

/* Compute ids and roles of everything found so far (idempotent; call before reading findings). */
void session_finish(struct oomscan_scan *s);

/* The whole result as a JSON document (oomscan/1), or one finding as its JSON object. */
cJSON *session_json(const struct oomscan_scan *s);
cJSON *session_finding_json(const struct oomscan_scan *s, size_t i);

/* The scan-wide job: the one given in the options, else the one every input's name agrees on, else "". */
const char *session_scan_job(const struct oomscan_scan *s);

/* The job a finding belongs to: its own (from its file name or message), else the scan's; "" if none. */
const char *session_job_id(const struct oomscan_scan *s, const finding *f);

/* Tickets (OOMSCAN_FMT_TICKET): one JSON object per line per root finding, in report order. */
oomscan_status session_write_tickets(const struct oomscan_scan *s, const oomscan_output *out, oomscan_write_fn fn,
                                     void *ud);

/* The text report. */
oomscan_status session_write_text(const struct oomscan_scan *s, int color, int verbose, oomscan_write_fn fn,
                                  void *ud);

#endif
