/* story_types.h - the story's data: a finding (one failure, its locations, windows, sets and role) and
 * the story holding a scan's findings with its per-job settings and votes. The functions over them are
 * story.h's; this header lets the story's own files share helpers (story_internal.h) without a loop.
 *
 * Ownership: a story owns its findings and everything in them (story.h). */
#ifndef OOMSCAN_STORY_TYPES_H
#define OOMSCAN_STORY_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "db/patterndb.h"
#include "match/event.h"
#include "base/taxonomy.h"
#include "base/timefmt.h"

#define STORY_MAX_EVIDENCE 3
#define STORY_MAX_SET 256 /* distinct ranks / hosts listed per finding; more are counted, not listed */

typedef struct {
    size_t input;      /* index of the top-level input, for ordering */
    char *path;
    char *member;      /* NULL outside archives */
    uint64_t line, offset;
    int has_time;
    timefmt time;
    const char *kind;  /* static: what kind of window saw it ("error_file", "kernel", ...; dumps.h), NULL a log */
} story_loc;

/* One window a failure was seen through: the first line of it in one source of one kind. */
typedef struct {
    char *path, *member; /* member NULL outside archives */
    uint64_t line;
    const char *kind;    /* static: "log", "launcher", "kernel", "slurm", "error_file", ... */
} story_window;

#define STORY_MAX_WINDOWS 8

typedef struct {
    char **items;
    size_t n;
    size_t dropped;
} story_set;

typedef struct {
    const pdb_pattern *pattern;
    tax_class cls;
    tax_phase phase;
    char *phase_evidence;
    int phase_weak; /* phase_confidence "weak" (one inference step away), else "strong"; 0 when unknown */
    int phase_from_frames; /* the phase was read from the failure's own traceback, not a marker */
    int phase_from_job; /* story_finish replaced a weak phase with another finding's strong one (the
                         * job-wide reading, taxonomy.md): never itself a donor, so a re-run is the same */
    int framework; /* from the failure's own traceback/engine, -1 if none */
    int echo;
    char *group;   /* pattern id + masked matched text: what makes two lines the same failure */
    char job_id[32];
    char rank[16], local_rank[16], pid[24], host[96]; /* of the first occurrence */
    char container[64], ray_job[48]; /* of the first occurrence: kubectl's container, a Ray job */
    story_loc first, last;
    char *evidence[STORY_MAX_EVIDENCE];
    size_t n_evidence;
    cJSON *memory;
    uint64_t occurrences;
    story_set ranks, hosts;
    /* Set by story_finish(): */
    int is_root;
    long caused_by; /* index of the root finding, -1 */
    char id[17];
    const char *note;
    char job[32];      /* the job it belongs to: its own job_id, else one its source states, else the scan's */
    char run[96];      /* a finding of no job: the run folder it belongs to (story_run_folder), relative to
                        * the folder holding the scan's runs; "" when the scan holds one run or less */
    int attempt;       /* torchrun's attempt_<n> folder its first line is in, else its attempt in a log several
                        * attempts appended to (appended_attempt), -1 when neither says */
    int appended_attempt; /* n + 1: attempt n of a log that several attempts appended to (story_add); 0 none */
    int job_stated;    /* job is its own job_id or one its source states: inputs read later cannot change it */
    long joined_into;  /* another window of finding joined_into: not reported on its own (-1 when reported) */
    long next_joined;  /* the next finding joined into the same one (chain from first_joined), -1 */
    long first_joined; /* the first finding joined into this one, -1 */
    /* Windows this finding's own lines came from (story_add, story_merge); story_sources() adds those
     * of the findings joined into it. */
    story_window *windows; /* n_windows of them, at most STORY_MAX_WINDOWS (most findings have one) */
    size_t n_windows;
    long job_head;     /* the first finding of its job (story_finish), for walking one job's findings */
    long job_next;     /* the next finding of the same job, -1 */
    size_t job_no;     /* jobs numbered 0.. by story_finish(), in order of their first finding's index */
    /* index by group and job (story.c) */
    uint64_t ghash;
    long hnext;
    /* For NDJSON records: `version` is bumped on every change; `written_version` holds stream.c's
     * signature (version, role, cause, framework) when the finding was last compared with its record. */
    uint64_t version, written_version;
} finding;

struct config_store;
struct config_view;

struct story_jobvotes;

typedef struct {
    finding *f;
    size_t n, cap;
    size_t dropped; /* findings not kept past the cap */
    size_t max_findings; /* story_merge keeps at most this many (0: no cap): the whole run's limit */
    /* The settings each job's logs printed (config.h), owned per job: settings[i] is the store of job
     * settings_job[i] ("" for inputs naming none), created by story_job_settings() */
    struct config_store **settings;
    char (*settings_job)[32];
    size_t n_settings, cap_settings;
    long *sbucket, *snext;   /* settings by job hash: chain heads and links */
    uint64_t settings_clock; /* orders reads across the jobs' stores: the later read wins */
    long *bucket;   /* index by group and job: heads of hnext chains */
    size_t n_bucket;
    size_t n_indexed; /* f[0..n_indexed) are in the index (merge.c appends findings it builds itself) */
    struct story_jobvotes *votes; /* framework votes per job (story_note_votes) */
    size_t n_votes, cap_votes;
    long *vbucket;  /* chains of votes by job hash */
    size_t n_jobs;  /* distinct jobs, set by story_finish() */
    scan_sink sink; /* story_sink's */
    /* The attempts of the source story_add reads now (a log several restarts append to): its path and
     * member, the attempt its lines are in, whether a launcher's report of a failed worker was read
     * since (a worker's line after it starts the next attempt), and whether any attempt ended in it. */
    char *att_path, *att_member;
    int att_no, att_pending, att_split;
} story;

/* One failure line, as the scanner reports it (match/event.h) and as crash dumps report theirs. */
typedef scan_event story_event;

#endif
