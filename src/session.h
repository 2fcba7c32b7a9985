/* session.h - the state of one oomscan_scan, shared by the scan driver (oomscan.c) and the emitters.
 * Internal: not part of the public API.
 *
 * Ownership: the session owns its units, input records, merged story and error strings. Emitters only
 * read it (NDJSON streaming also updates each finding's written_version). */
#ifndef OOMSCAN_SESSION_H
#define OOMSCAN_SESSION_H

#include <pthread.h>
#include <stdint.h>

#include "oomscan.h"
#include "patterndb.h"
#include "story.h"
#include "taxonomy.h"

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
    char **errors; /* "path: reason" for every bad source, in input order */
    size_t n_errors;
    int finished;
    /* workers */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t next_unit;
};

/* The framework of a finding: its own (from its traceback) or the scan's, the RL one winning. */
int session_framework(const struct oomscan_scan *s, const finding *f);

/* The whole result as a JSON document (oomscan/1), or one finding as its JSON object. */
cJSON *session_json(const struct oomscan_scan *s);
cJSON *session_finding_json(const struct oomscan_scan *s, size_t i);

/* The text report. */
oomscan_status session_write_text(const struct oomscan_scan *s, int color, int verbose, oomscan_write_fn fn,
                                  void *ud);

#endif
