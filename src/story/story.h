/* story.h - one finding per failure, and the story of each job: grouping repeated failure lines into
 * findings with occurrences, ranks and hosts; stable fingerprints; the job each finding belongs to; one
 * failure seen through several windows (log, launcher, kernel, Slurm, error file) joined into one
 * finding; root cause versus consequences, decided within a job. No I/O. Grouping is by hash (of the
 * group and the job), and the story of each job is told among that job's findings only, so a run over
 * many jobs costs time linear in their number.
 *
 * Ownership: a story owns its findings and everything in them. story_add() takes ownership of the
 * event's `memory` object whatever it returns. */
#ifndef OOMSCAN_STORY_H
#define OOMSCAN_STORY_H

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
    int attempt;       /* torchrun's attempt_<n> folder its first line is in, -1 when its path names none */
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
} story;

/* One failure line, as the scanner reports it (match/event.h) and as crash dumps report theirs. */
typedef scan_event story_event;

story *story_new(void);
void story_free(story *s);

/* Add one failure line. Returns the index of the finding it landed in, -1 if dropped (cap or OOM). */
long story_add(story *s, const story_event *ev);

/* The sink a scan feeds this story through (match/event.h): add is story_add, set_phase is
 * story_set_phase, settings is story_job_settings. Owned by the story, valid while it lives. */
const scan_sink *story_sink(story *s);

/* Evidence printed after a finding (its faulthandler stack, the traceback after its message) names the
 * phase its lines did not: give finding `idx` that phase, evidence and (if it has none) framework, as
 * set_phase does for a burst; weak with SINK_PHASE_WEAK (match/event.h). Nothing changes when the
 * finding already has a phase, unless that one is weak or `flags` holds SINK_PHASE_REPLACE. Returns 0,
 * -1 out of memory. */
int story_set_phase(story *s, long idx, tax_phase phase, const char *evidence, int framework, unsigned flags);

/* Move every finding of `src` into `dst` (findings with the same group merge). `src` is left empty.
 * Call in input order: first/last locations keep that order. Returns 0, -1 out of memory. */
int story_merge(story *dst, story *src);

/* The finding of `group` (a finding's group) that a line of source path/member naming job `job_id` (and
 * Ray job `ray_job`, may be NULL) lands in: the same job, or for no job the same run folder
 * (story_run_folder). -1 when there is none. */
long story_find(story *s, const char *group, const char *job_id, const char *ray_job, const char *path,
                const char *member);

/* The settings store of `job` ("" for inputs that name none), created on first use, for the scanner to
 * read into (config_capture, version_capture). NULL out of memory. */
struct config_store **story_job_settings(story *s, const char *job);

/* What advice reads for a finding of `job`, into *out (borrowed from the story): that job's settings,
 * and those of inputs naming no job when the scan holds no other job (story_finish counts them); a
 * finding of no job sees every job's. */
void story_settings_view(const story *s, const char *job, struct config_view *out);

/* The folder of the run a source belongs to, guessed from its name alone (docs/taxonomy.md, "Runs"):
 * its directory, a torchrun log tree (<log dir>/<run id>/attempt_<n>/<local rank>/) taken back to the
 * folder holding the log dir, folders that name one rank or node of a run (rank3/, node12/, 0/) taken
 * back to the folder holding them; "./" and "//" dropped. Written to out (cap bytes, cut); "" for a
 * source in the current folder. *attempt (may be NULL) gets the attempt_<n> number, -1 when none. */
void story_run_folder(const char *path, const char *member, char *out, size_t cap, int *attempt);

/* Compute jobs, ids, joins, roles and causes (idempotent: call again after more story_add).
 * `job_id` is the scan-wide job when all inputs agree or one was given (else ""): the job of findings
 * whose own source states none. Without it, a Ray worker log's job id (ray_job) is the job: of its own
 * findings, and of every finding without one when the scan holds a single Ray job. Within one job:
 * - findings with the same id, and one failure's windows (same class, a launcher, kernel, Slurm or
 *   error-file window beside another, no rank, pid, host or time telling them apart) are joined: the
 *   best window (kernel, then Slurm, then the log, then error file, then launcher) is reported, with
 *   every window in story_sources() and the numbers the others add;
 * - an echo (story_echo_level > 0) follows from the earliest finding of a lower level that is not
 *   after it: not stamped later, and not printed later in the same source when times cannot tell;
 *   across sources that times cannot order, the choice does not depend on input order and the echo
 *   carries a note that the order is unknown.
 * Findings of no job are split into runs (story_run_folder) when their sources lie in two run folders or
 * more, neither inside the other: each run is a job of its own for the story (its `run` says which), and
 * the run enters the id. Within a run, torchrun's attempts (attempt_<n>) never cause each other.
 * A finding's cause is never in another job. Returns 0, -1 out of memory (roles are then left as the
 * last successful call made them, or all roots). */
int story_finish(story *s, const char *job_id);

/* The static name of window kind `name` ("log", "launcher", "kernel", "slurm", "error_file",
 * "faulthandler", "flight_recorder", "memory_snapshot"), NULL for a name no window has (records). */
const char *story_kind(const char *name);

/* Give finding `f` one more window (a record's `sources`); kept once per kind and source, at most
 * STORY_MAX_WINDOWS; `kind` must be story_kind()'s. Returns 0, -1 out of memory. */
int story_add_window(finding *f, const char *kind, const char *path, const char *member, uint64_t line);

/* Every window finding `idx` was seen through, its own first, then those of the findings joined into
 * it, without repeats; at most `cap` are written to `out` (borrowed views). Returns the count. */
size_t story_sources(const story *s, size_t idx, story_window *out, size_t cap);

/* Add `votes` ([FW__COUNT] framework votes of one input) to `job`'s ("" for inputs naming none).
 * Returns 0, -1 out of memory. */
int story_note_votes(story *s, const char *job, const uint32_t *votes);

/* The framework votes of `job` if any input of that job voted, else those of inputs naming no job,
 * else NULL: a job's framework is never lent by another job. */
const uint32_t *story_job_votes(const story *s, const char *job);

/* How strongly a finding is an echo of another: 0 a cause, 1 NCCL, 2 a crash after an abort, 3 a
 * supervisor's report. A finding can be a consequence only of one with a lower level. */
int story_echo_level(const finding *f);

/* The collective library a collective finding (nccl_error, nccl_timeout) is about, from its pattern's
 * family: "nccl", "gloo"; NULL for other classes or when the family does not say. */
const char *story_backend(const finding *f);

/* Order for output: roots first, then by first occurrence; findings joined into another come last.
 * Fills `order` (s->n entries) and returns how many come before the joined ones: the findings to report. */
size_t story_order(const story *s, size_t *order);

/* 1 if a happened before b (by time when both have comparable times, else by input and line). */
int story_loc_before(const story_loc *a, const story_loc *b);

/* Mask numbers, hex addresses and runs of spaces in text (for fingerprints). Returns a new string. */
char *story_mask(const char *text, size_t n);

#endif
