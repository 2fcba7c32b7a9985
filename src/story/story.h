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

#include "story/story_types.h"

story *story_new(void);
void story_free(story *s);

/* Add one failure line. Returns the index of the finding it landed in, -1 if dropped (cap or OOM). A line
 * of a later attempt (its attempt_<n> folder, or a log attempts appended to: docs/taxonomy.md) lands in a
 * finding of its own attempt. */
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
 * and those of inputs naming no job when the scan holds no other job (story_finish counts them; with
 * several, they are out->withheld, for the hint only); a finding of no job sees every job's. */
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
 * the run enters the id. Within a run, torchrun's attempts (attempt_<n>, or the attempts appended to one
 * console that story_add tells apart) never cause each other, and their windows are never joined.
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
