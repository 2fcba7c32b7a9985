/* oomscan.h - find why a GPU training job died, from its logs.
 *
 * The library reads log inputs (plain, compressed, archives) as streams, recognises failures with a
 * pattern database, attributes each to a pipeline phase, groups repeats into findings, tells the root
 * cause from its consequences, and writes the result as a text report, JSON or NDJSON through a
 * caller-supplied writer. It never prints and never exits: every call returns a status and fills an
 * oomscan_diag the caller owns.
 *
 * Ownership: every *_new has a NULL-safe *_free. A database is immutable once scanning starts and may be
 * shared by any number of scans. Strings passed in are copied; strings handed out are borrowed and valid
 * until the object that handed them out is freed. */
#ifndef OOMSCAN_H
#define OOMSCAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OOMSCAN_VERSION "0.1.0"
#define OOMSCAN_SCHEMA "oomscan/1"

#include "oomscan_status.h"

/* ---- pattern database ---------------------------------------------------------------------- */

typedef struct oomscan_db oomscan_db;

/* Load the database embedded at build time (patterns/). On a broken embedded file the diag names it. */
oomscan_status oomscan_db_new(oomscan_db **out, oomscan_diag *diag);

/* The same database without the sample lines of its rules, which only oomscan_db_check() runs (it
 * reports them missing): for a program that scans, half the text to parse at start-up. */
oomscan_status oomscan_db_new_lean(oomscan_db **out, oomscan_diag *diag);

/* Load an empty database (for --check-patterns DIR on a user's folder alone). */
oomscan_status oomscan_db_new_empty(oomscan_db **out, oomscan_diag *diag);

/* Add every *.json file under `dir` (recursively, sorted). A pattern whose id already exists replaces
 * it. Errors name the file, the entry id and, for regexes, the PCRE2 message and offset. */
oomscan_status oomscan_db_add_dir(oomscan_db *db, const char *dir, oomscan_diag *diag);

/* Compile what was loaded (JIT where available). Must be called before scanning or checking. */
oomscan_status oomscan_db_compile(oomscan_db *db, oomscan_diag *diag);

void oomscan_db_free(oomscan_db *db);

/* One problem found by oomscan_db_check(). */
typedef struct {
    const char *file;    /* data file it came from */
    const char *id;      /* pattern / checklist id */
    const char *message; /* what is wrong */
} oomscan_check_problem;

typedef void (*oomscan_check_fn)(void *ud, const oomscan_check_problem *p);

/* Validate the database and run every sample: match samples must match with the expected values,
 * no_match samples must not, every pattern must have both kinds, literals must occur in the match
 * samples, every class/phase pair must resolve to a checklist. Calls `fn` once per problem and
 * returns the number of problems (0 = healthy). `*samples_run` (may be NULL) receives how many samples
 * were run. */
size_t oomscan_db_check(const oomscan_db *db, oomscan_check_fn fn, void *ud, size_t *samples_run);

/* Counts for --list-patterns and for humans. */
typedef struct {
    const char *id, *class_name, *file, *regex, *title;
    size_t n_literals;
} oomscan_pattern_info;

size_t oomscan_db_pattern_count(const oomscan_db *db);
/* Borrowed view of pattern `i` (0 <= i < count), valid while `db` lives. */
void oomscan_db_pattern_info(const oomscan_db *db, size_t i, oomscan_pattern_info *out);

/* ---- scanning ------------------------------------------------------------------------------ */

/* Writer: called with output bytes. Return 0 on success, non-zero to stop writing (closed pipe). */
typedef int (*oomscan_write_fn)(void *ud, const char *data, size_t len);

/* Called after each top-level input is scanned (in input order, also with jobs > 1), e.g. to stream
 * NDJSON or to show progress. `input_index` is the position of the path in the list given. */
typedef void (*oomscan_input_done_fn)(void *ud, size_t input_index);

/* Called from the scanning thread(s) with bytes read so far in the current input (for a progress
 * display). May be called often: keep it cheap. */
typedef void (*oomscan_progress_fn)(void *ud, uint64_t bytes_done);

/* Bounds on the work hostile input can cause (docs/reliability.md). A field left 0 takes its default,
 * chosen so that no real log reaches it. Past a limit the input concerned is marked partial with a
 * message naming the input and the limit; everything found before stays, and the other inputs go on. */
typedef struct {
    uint64_t max_bytes;    /* decoded bytes from one input (64 GiB) */
    uint64_t max_ratio;    /* decoded bytes per byte read, past the first 64 MiB of an input (1000) */
    uint64_t max_members;  /* archive entries in one input, nested ones included (100000) */
    unsigned max_depth;    /* archives inside archives; a deeper one is scanned as raw bytes (3) */
    uint64_t max_findings; /* findings kept in the whole run; more are counted, not kept (10000) */
    uint64_t regex_budget; /* regex match-limit hits per input before the patterns that hit it are
                            * skipped for the rest of that input (64) */
    uint64_t max_state_bytes; /* --state file size (256 MiB) */
    unsigned lock_wait_s;  /* seconds to wait for another run's --state lock (600) */
    uint64_t max_record_bytes; /* one NDJSON record (line) that `merge` reads (1 MiB); a longer one stops
                                * that input, partial, naming the line */
} oomscan_limits;

typedef struct {
    unsigned jobs;                  /* worker threads for many inputs; 0 = one per core */
    oomscan_input_done_fn on_input; /* may be NULL */
    oomscan_progress_fn on_progress;
    void *ud;
    /* The job these inputs belong to (a Slurm epilog knows it), copied: findings whose file name or
     * message states no job carry it, so one job's findings from many nodes group. NULL: none. */
    const char *job_id;
    oomscan_limits limits; /* all 0: the defaults */
    /* NDJSON records carry the whole checklist (remediation.steps); 0: the compact record, the
     * checklist named by remediation.id (docs/output.md, "NDJSON records") */
    int ndjson_steps;
    /* Which files a folder's walk reads (docs/inputs.md, "What is skipped"): a file whose first 4 KiB
     * are binary data (a checkpoint) is skipped unless read_binary, whether found in a folder or an
     * archive (a path named itself is always read); a file or folder whose name matches one of
     * the fnmatch(3) globs `exclude` (borrowed, n_exclude of them) is skipped, named or walked; a file
     * larger than max_filesize bytes (0: no bound) too. Skipped files are counted, not inputs. */
    int read_binary;
    const char *const *exclude;
    size_t n_exclude;
    uint64_t max_filesize;
    /* The name standard input's findings and record carry (grep's --label), borrowed (it must outlive
     * the scan); NULL: "<stdin>".
     * It is read as a file name would be: "slurm-1234.out" names the job. */
    const char *stdin_label;
    /* Which findings are written, by every format (docs/output.md, "Filters"): roots only; only the
     * classes in `classes` (taxonomy names, comma-separated; NULL: all; an unknown name is
     * OOMSCAN_ERR_USAGE from oomscan_scan_new); only the job `only_job` (NULL: all). Borrowed. */
    int roots_only;
    const char *classes;
    const char *only_job;
    /* only findings first seen at or after `since` / at or before `until` (log time, any stamp form
     * the scan reads: "2024-05-01T12:00:00", "2024-05-01 12:00"); a finding with no stamp that compares
     * is left out. NULL: no bound; an unreadable one is OOMSCAN_ERR_USAGE from oomscan_scan_new. */
    const char *since, *until;
} oomscan_options;

typedef struct oomscan_scan oomscan_scan;

/* A scan over a set of inputs, using `db` (borrowed: it must outlive the scan). */
oomscan_status oomscan_scan_new(oomscan_scan **out, const oomscan_db *db, const oomscan_options *opt,
                                oomscan_diag *diag);
void oomscan_scan_free(oomscan_scan *scan);

/* Scan these inputs: files, directories (walked recursively in sorted order), "-" for stdin.
 * A bad input is recorded with its reason (see oomscan_scan_input_errors) and the others go on.
 * Returns OOMSCAN_OK unless the scan itself could not run (out of memory). */
oomscan_status oomscan_scan_paths(oomscan_scan *scan, const char *const *paths, size_t n,
                                  oomscan_diag *diag);

/* Number of input sources (files and archive members) that were not read cleanly. */
size_t oomscan_scan_input_errors(const oomscan_scan *scan);
/* The i-th such problem, as "path: reason". Borrowed. */
const char *oomscan_scan_input_error(const oomscan_scan *scan, size_t i);

/* What a scan read: inputs read (whole or in part), their bytes and lines; inputs that could not be
 * read (an empty folder named is one); files skipped as binary, by an exclude glob, for their size;
 * oomscan's own output found among the inputs (not read as a log). Nothing read (`read` 0) is not
 * "no failure found": the CLI says so and exits 2 (docs/output.md, "Exit status"). */
typedef struct {
    size_t read, unreadable, binary, excluded, too_large, own_output;
    uint64_t bytes, lines;
} oomscan_input_counts;
void oomscan_scan_input_counts(const oomscan_scan *scan, oomscan_input_counts *out);

/* Number of findings after grouping and root-cause analysis (those the options' filters keep). */
size_t oomscan_scan_finding_count(const oomscan_scan *scan);

/* ---- output -------------------------------------------------------------------------------- */

typedef enum {
    OOMSCAN_FMT_TEXT,
    OOMSCAN_FMT_JSON,
    OOMSCAN_FMT_NDJSON,
    OOMSCAN_FMT_TICKET,
    OOMSCAN_FMT_MARKDOWN,   /* one report per job to attach (docs/markdown.md) */
    OOMSCAN_FMT_OPENMETRICS /* counters for Prometheus (docs/metrics.md) */
} oomscan_format;

/* OOMSCAN_FMT_TICKET writes one JSON object per line per root finding (docs/ticketing.md): oomscan's
 * own ticket, or the request body of GitHub's or Jira's create-issue call. */
typedef enum {
    OOMSCAN_TICKET_PLAIN,
    OOMSCAN_TICKET_GITHUB,
    OOMSCAN_TICKET_JIRA,      /* Jira REST v2 (Data Center / Server): description in wiki markup */
    OOMSCAN_TICKET_JIRA_CLOUD /* Jira Cloud REST v3: description in Atlassian Document Format */
} oomscan_ticket_style;

typedef struct {
    oomscan_format format;
    int color;   /* text only: ANSI colour */
    int verbose; /* text only: every finding in full, not just the cascade summary */
    oomscan_ticket_style ticket_style; /* ticket only */
    const char *jira_project;   /* jira style: fields.project.key, required (else OOMSCAN_ERR_USAGE) */
    const char *jira_issuetype; /* jira style: fields.issuetype.name; NULL means "Bug" */
    unsigned width; /* text only: lines fitted to this many columns; 0 means 80 */
    /* openmetrics only: the run's time, Unix seconds, as oomscan_last_run_timestamp_seconds; 0: the
     * gauge is not written (the library reads no clock: the same logs give the same bytes) */
    long long run_time;
} oomscan_output;

/* Write the whole result. For NDJSON, writes every finding not yet written or changed since, then an
 * "input" record for each input not read cleanly (docs/output.md, "NDJSON records"). */
oomscan_status oomscan_scan_write(oomscan_scan *scan, const oomscan_output *out, oomscan_write_fn fn,
                                  void *ud);

/* NDJSON streaming: write findings that are new or changed since the last call (after an input):
 * a "finding" record the first time an id is written, an "update" record when what it says changed
 * (docs/streaming.md). Between the inputs of a run, a finding whose own source states no job is not
 * written (new or updated) before the last input: a later one may name its job, and so its id, or
 * change what it says; unless the options give the job.
 * With a state (oomscan_scan_use_state), ids reported by earlier runs count as written. */
oomscan_status oomscan_scan_write_ndjson_delta(oomscan_scan *scan, oomscan_write_fn fn, void *ud);

/* ---- live streams, incremental runs, merging (docs/streaming.md) ---------------------------- */

/* Read a live stream: `path` "-" (stdin: a pipe, a socket) or a file; with `follow`, keep reading the
 * file as it grows, through rotation (a new inode at the path) and truncation, until cancelled. NDJSON
 * records go to `fn` as soon as each finding is complete (`flush_ms` of quiet, 0 = 2000, or enough
 * lines after it), one call per record; updates follow when later input changes a finding. Returns
 * after the end of the stream or oomscan_scan_cancel(), having written every record (the last record
 * per id is the final state). Compressed or archived data on stdin (a gzip file through a pipe) is decoded
 * and scanned as a file is, its records written at its end; with `follow` it is an input error. Use on a
 * fresh scan, instead of oomscan_scan_paths. */
oomscan_status oomscan_scan_stream(oomscan_scan *scan, const char *path, int follow, unsigned flush_ms,
                                   oomscan_write_fn fn, void *ud, oomscan_diag *diag);

/* Ask a running oomscan_scan_stream to stop: it scans what it has, writes what is pending and
 * returns. Async-signal-safe (call it from a SIGTERM handler). */
void oomscan_scan_cancel(oomscan_scan *scan);

/* Combine NDJSON records written by other oomscan runs (files, or "-" for stdin; finding and update
 * records, the last per id winning) into this scan, as if their logs had been scanned here, in this
 * order, after this scan's own inputs. Roles and ids are elected again when written. A file that cannot
 * be read or a record that cannot be used is an input error (see oomscan_scan_input_errors); the
 * rest goes on. Associative: merging merged output gives the same result. */
oomscan_status oomscan_scan_merge(oomscan_scan *scan, const char *const *paths, size_t n, oomscan_diag *diag);

/* An incremental-run state file (--state): per input how far it was read and what was found, and
 * which findings were already reported. Opening locks it (a lock file beside it) until freed, so
 * concurrent runs take turns; a missing file is an empty state; an unusable one is ignored with a
 * warning (everything is then read again, and what was reported is still not repeated when the
 * table of reported ids could be read). */
typedef struct oomscan_state oomscan_state;
oomscan_status oomscan_state_open(oomscan_state **out, const char *path, oomscan_diag *diag);
/* The same under `lim` (NULL: the defaults): a state file larger than lim->max_state_bytes is ignored
 * with a warning; another run holding the lock longer than lim->lock_wait_s seconds is
 * OOMSCAN_ERR_LIMIT, the diag naming the lock file and the limit. */
oomscan_status oomscan_state_open_limited(oomscan_state **out, const char *path, const oomscan_limits *lim,
                                          oomscan_diag *diag);
/* Why the state file was ignored, or NULL. Borrowed. */
const char *oomscan_state_warning(const oomscan_state *state);
/* Use the state for this scan: call before oomscan_scan_paths. Inputs that are plain files it knows
 * and that only grew are read from where the last run stopped. */
oomscan_status oomscan_scan_use_state(oomscan_scan *scan, oomscan_state *state);
/* Write the state after the scan's output was written: atomically (temporary file and rename). */
oomscan_status oomscan_state_save(oomscan_state *state, oomscan_scan *scan, oomscan_diag *diag);
/* Release the lock and free. NULL-safe. */
void oomscan_state_free(oomscan_state *state);

/* Render checklist `id` (e.g. "cuda_oom-backward") as Markdown. OOMSCAN_ERR_USAGE if unknown. */
oomscan_status oomscan_explain(const oomscan_db *db, const char *id, oomscan_write_fn fn, void *ud,
                               oomscan_diag *diag);

/* `--explain` for a terminal (docs/remediation.md, "Reading a checklist"): the checklist page `md`
 * (what oomscan_explain wrote) as plain lines fitted to `width` columns (0: 80), settings and commands
 * on lines of their own and never broken, oomscan's internal source tags left out; ANSI colour with
 * `color`. OOMSCAN_ERR_NOMEM, OOMSCAN_ERR_IO when fn refused. */
oomscan_status oomscan_explain_page_text(const char *md, size_t len, int color, unsigned width,
                                         oomscan_write_fn fn, void *ud);
/* The same for one finding: `finding_json` is a finding object as the JSON document writes it (with
 * its remediation.steps); its title, place, quote, diagnosis and its own steps (values filled in, a
 * step the diagnosis ruled out marked) are written. OOMSCAN_ERR_USAGE when it is not JSON. */
oomscan_status oomscan_explain_finding_text(const char *finding_json, size_t len, int color, unsigned width,
                                            oomscan_write_fn fn, void *ud);

/* Ids of all checklists, for --explain listing and the docs renderer. */
size_t oomscan_db_checklist_count(const oomscan_db *db);
const char *oomscan_db_checklist_id(const oomscan_db *db, size_t i);
/* The checklist's title ("" when it has none). Borrowed, valid while `db` lives. */
const char *oomscan_db_checklist_title(const oomscan_db *db, size_t i);
/* The checklist id closest to `id` by edit distance (a near-miss: "cuda_oom_log_probs"), or NULL when
 * none is within a third of its length. Borrowed. */
const char *oomscan_db_checklist_closest(const oomscan_db *db, const char *id);

/* "isa-l" or "zlib". */
const char *oomscan_gzip_backend(void);

#ifdef __cplusplus
}
#endif
#endif
