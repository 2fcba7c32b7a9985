/* result.h - the answer of a scan, resolved once: per finding its class, phase (with its evidence and,
 * when stated, its confidence), framework, job, role and cause, and the checklist with its diagnosis
 * and proposed settings, asked of the advice module once. Every writer (text, JSON, NDJSON, tickets)
 * takes a result read-only and only formats it; none works anything out again.
 *
 * Ownership: a result borrows the database, the story and the input records it was built from (they
 * must outlive it and not change while it lives) and owns its items and their advice (cJSON trees). */
#ifndef OOMSCAN_RESULT_H
#define OOMSCAN_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/taxonomy.h"
#include "db/patterndb.h"
#include "story/story.h"

typedef enum { INPUT_OK, INPUT_PARTIAL, INPUT_ERROR } input_status;

/* One source that was read (a file, an archive member, an NDJSON file merged) or could not be. */
typedef struct {
    char *path;
    char *member;    /* NULL outside archives */
    char *container; /* "text", "gzip", "tar+gzip", "ndjson", ... or NULL when it could not be opened;
                      * "binary" when skipped as binary data (session.c), "oomscan" for oomscan's
                      * own output: neither is read */
    input_status status;
    char *error;     /* reason when not ok */
    uint64_t bytes, lines, lines_cut;
} input_record;

/* Inputs by what became of them: read (whole or in part), unreadable, skipped as binary, oomscan's
 * own output (not read); bytes and lines over all. One count for the text report's first line and
 * oomscan_scan_input_counts(). */
typedef struct {
    size_t read, unreadable, binary, own_output;
    uint64_t bytes, lines;
} result_tally;
void result_tally_inputs(const input_record *in, size_t n, result_tally *out);

/* Which findings a result holds (oomscan_options' filters); all zero: every finding. */
typedef struct {
    int roots_only;
    uint32_t class_mask; /* bit per tax_class; 0: every class */
    const char *job;     /* NULL: every job */
    int has_since, has_until;
    timefmt since, until; /* log time bounds of the first occurrence */
} result_filter;

/* What a result is built from: the scan's finished story and the scan-wide context. */
typedef struct {
    const pdb *db;
    const story *st;           /* story_finish() already run */
    const uint32_t *votes;     /* [FW__COUNT]: framework evidence over every input */
    const char *job;           /* the scan-wide job ("" when none or the inputs disagree) */
    const input_record *inputs;
    size_t n_inputs;
    size_t excluded, too_large; /* files the walk skipped by name or size (not inputs: counted only) */
    const result_filter *filter; /* NULL: every finding */
} result_scan;

/* One finding as every writer states it. */
typedef struct {
    size_t index;                 /* in scan.st->f */
    const finding *f;             /* the story's finding (numbers, evidence, locations) */
    tax_framework framework;      /* its own, else the scan's (result_framework) */
    const char *job;              /* its own, else the scan's; "" when none */
    int is_root;
    const char *caused_by;        /* id of its root, NULL when it is one */
    const char *phase_confidence; /* "strong" / "weak"; NULL while the story does not state one */
    const char *backend;          /* collective findings: "nccl" / "gloo" (story_backend), else NULL */
    story_window *sources;        /* every window of a failure seen through several (story_sources), the
                                   * reported one first; borrowed views, owned array; NULL when one */
    size_t n_sources;
    cJSON *remediation;           /* the checklist with current/proposed settings; JSON null if none */
    cJSON *diagnosis;             /* {"conclusions": [...]}, NULL when nothing can be concluded */
    cJSON *versions;              /* {"torch": "2.1.0", ...} the job's logs printed (advice.h), NULL: none */
} result_finding;

/* Whether the filter (NULL: none) keeps this resolved finding. */
int result_filter_wants(const result_filter *flt, const result_finding *rf);

typedef struct {
    result_scan scan;
    result_finding *items; /* every finding reported, in report order (roots first, then by first
                            * occurrence); a window joined into another finding is in its sources */
    size_t n;
    size_t *pos; /* story index -> position in items */
    int deferred; /* made by result_new_deferred: items hold no advice, result_advised asks it */
} result;

/* Build the result of a finished scan: every finding resolved, advice asked once each. NULL when out of
 * memory. */
result *result_new(const result_scan *scan);
void result_free(result *r);

/* As result_new, but advice is not asked here: result_advised asks it for one finding as a writer
 * reaches it, so a writer that takes findings in turn (the JSON document) holds one finding's
 * checklist at a time instead of the run's (20,000 jobs' checklists were half a GiB). */
result *result_new_deferred(const result_scan *scan);

/* Item k with its advice: the item itself when result_new resolved it; else `tmp`, resolved now,
 * which the caller clears with result_finding_clear. NULL when out of memory. */
const result_finding *result_advised(const result *r, size_t k, result_finding *tmp);

/* Resolve finding `i` of scan->st into `rf` (for writers that take one finding at a time: the NDJSON
 * stream). `with_advice` 0 leaves remediation JSON null and diagnosis NULL (for records that only
 * carry what merge needs). Returns 0, -1 out of memory (rf is then cleared). */
int result_finding_init(result_finding *rf, const result_scan *scan, size_t i, int with_advice);
void result_finding_clear(result_finding *rf);

/* The framework a finding is read in: its own (from its traceback or the pattern's engine) unless the
 * scan's evidence names one that ranks higher (an RL framework over the engine it drives). */
tax_framework result_framework(const uint32_t votes[FW__COUNT], const finding *f);

/* The item for finding `index` of the story, or NULL. */
const result_finding *result_item(const result *r, size_t index);

#endif
