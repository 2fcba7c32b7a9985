/* story.h - one finding per failure, and the story of the job: grouping repeated failure lines into
 * findings with occurrences, ranks and hosts; stable fingerprints; root cause versus consequences.
 * No I/O.
 *
 * Ownership: a story owns its findings and everything in them. story_add() takes ownership of the
 * event's `memory` object whatever it returns. */
#ifndef OOMSCAN_STORY_H
#define OOMSCAN_STORY_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "db/patterndb.h"
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
    int framework; /* from the failure's own traceback/engine, -1 if none */
    int echo;
    char *group;   /* pattern id + masked matched text: what makes two lines the same failure */
    char job_id[32];
    char rank[16], local_rank[16], pid[24], host[96]; /* of the first occurrence */
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
    /* For NDJSON records: `version` is bumped on every change; `written_version` holds stream.c's
     * signature (version, role, cause, framework) when the finding was last compared with its record. */
    uint64_t version, written_version;
} finding;

struct config_store;

typedef struct {
    finding *f;
    size_t n, cap;
    size_t dropped; /* findings not kept past the cap */
    size_t max_findings; /* story_merge keeps at most this many (0: no cap): the whole run's limit */
    struct config_store *config; /* settings the log printed (config.h), NULL until one is read */
} story;

typedef struct {
    const pdb_pattern *pattern;
    tax_phase phase;
    const char *phase_evidence;
    int phase_weak; /* the phase is a weak inference (taxonomy.md, phase_confidence) */
    int framework;
    const char *match;
    size_t match_len;
    const char *evidence;
    size_t evidence_len;
    cJSON *memory; /* consumed */
    size_t input;
    const char *path, *member;
    uint64_t line, offset;
    const timefmt *time; /* NULL when the line has no time */
    const char *rank, *local_rank, *pid, *host, *job_id;
    long repeat;          /* Ray's "[repeated Nx]": counts N more occurrences */
    long merge_into;      /* an earlier finding this line continues (same failure, other wording), or -1 */
} story_event;

story *story_new(void);
void story_free(story *s);

/* Add one failure line. Returns the index of the finding it landed in, -1 if dropped (cap or OOM). */
long story_add(story *s, const story_event *ev);

/* Evidence printed after a finding (its faulthandler stack) names the phase its lines did not: give
 * finding `idx` that phase, evidence and (if it has none) framework, as set_phase does for a burst.
 * Nothing changes when the finding already has a phase, unless that one is weak. Returns 0, -1 out of memory. */
int story_set_phase(story *s, long idx, tax_phase phase, const char *evidence, int framework);

/* Move every finding of `src` into `dst` (findings with the same group merge). `src` is left empty.
 * Call in input order: first/last locations keep that order. Returns 0, -1 out of memory. */
int story_merge(story *dst, story *src);

/* Compute ids, roles and causes. `job_id` is the scan-wide job when all inputs agree (else ""). */
void story_finish(story *s, const char *job_id);

/* How strongly a finding is an echo of another: 0 a cause, 1 NCCL, 2 a crash after an abort, 3 a
 * supervisor's report. A finding can be a consequence only of one with a lower level. */
int story_echo_level(const finding *f);

/* Order for output: roots first, then by first occurrence. Fills `order` (s->n entries). */
void story_order(const story *s, size_t *order);

/* 1 if a happened before b (by time when both have comparable times, else by input and line). */
int story_loc_before(const story_loc *a, const story_loc *b);

/* Mask numbers, hex addresses and runs of spaces in text (for fingerprints). Returns a new string. */
char *story_mask(const char *text, size_t n);

#endif
