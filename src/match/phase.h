/* phase.h - where in the pipeline a failure struck, and whose code was running.
 *
 * Fed, line by line, with the context the prefilter found (traceback headers and frames, progress
 * markers, framework banners), it keeps a little state per output stream (rank or pid, since ranks
 * interleave) and answers, at a failure, the phase and the evidence for it. Evidence, strongest first:
 * the innermost mapped frame of the traceback that carries the error; the message's own phase (engine
 * start-up); the latest progress marker; else unknown. A faulthandler stack comes after its failure
 * and lists the most recent call first: phase_late() answers for the failure above it. No I/O.
 *
 * Ownership: a phase_state is per source; it borrows the pdb. */
#ifndef OOMSCAN_PHASE_H
#define OOMSCAN_PHASE_H

#include <stdint.h>

#include "db/patterndb.h"

typedef struct phase_state phase_state;

phase_state *phase_new(const pdb *db);
void phase_free(phase_state *ps);
/* Forget everything (a new source begins). Framework votes are kept: they are per input. */
void phase_reset_source(phase_state *ps);

/* "Traceback (most recent call last):" for stream `key` (e.g. "r3" or "p1234" or ""). */
void phase_traceback(phase_state *ps, const char *key, uint64_t line);

/* A faulthandler stack header (a line holding "(most recent call first)") for stream `key`: "Stack" or
 * "Current thread 0x..." starts the failing thread's stack, "Thread 0x..." another thread's (its frames
 * never give a phase); any other line (c10's C++ stack header) changes nothing. */
void phase_stack_header(phase_state *ps, const char *key, const char *text, size_t len, uint64_t line);

/* A frame `File "path", line N, in func` (faulthandler: `..., line N in func`) with its code line (may
 * be NULL). In a faulthandler stack the frames come innermost first. */
void phase_frame(phase_state *ps, const char *key, const char *path, size_t path_len, const char *func,
                 size_t func_len, const char *code, size_t code_len, uint64_t line);

/* The frame rules a frame matches (any of path, func, code may be NULL): the index into db->frames
 * of the ordinary rule that decides for it (-1 none), and in *fallback the fallback rule's (-1 none).
 * Code rules beat func rules beat path rules; among equals the first in the data wins. */
int phase_frame_rule(const pdb *db, const char *path, size_t path_len, const char *func, size_t func_len,
                     const char *code, size_t code_len, int *fallback);

/* The framework a traceback path tells (the highest-ranked "path" framework rule it holds), or -1. */
int phase_path_framework(const pdb *db, const char *path, size_t path_len);

/* A progress marker (index into db->markers) seen at `line`. */
void phase_marker(phase_state *ps, size_t marker, uint64_t line);

/* A task marker (lexicon.json "task_markers", Ray's "ray::") at `line`: `after` is the text after its
 * literal; the task's method is read with the lexicon and, when it names a phase, speaks for failures
 * shortly after it (strong or weak as its stem). */
void phase_task_marker(phase_state *ps, const char *after, size_t n, uint64_t line);

/* The lexicon stem a frame reads as (its called name first, else its function), -1 when none or when
 * its path is one the lexicon skips; the name read goes to word. For phase_frame and the checker. */
int phase_frame_stem(const pdb *db, const char *path, size_t path_len, const char *func, size_t func_len,
                     const char *code, size_t code_len, char *word, size_t cap);

/* A framework rule (index into db->fw_rules) matched a line. */
void phase_framework_vote(phase_state *ps, int framework);

typedef struct {
    tax_phase phase;
    int framework;     /* from the deciding frame or marker, -1 if none */
    int weak;          /* phase_confidence "weak": one inference step away (taxonomy.md) */
    int from_frames;   /* read from the failure's own traceback or stack (not a marker or the message) */
    char evidence[256];
} phase_answer;

/* The db->hints (a pattern's "in_traceback") that some frame of the traceback explaining a failure
 * at `line` of stream `key` satisfies, as a mask (bit h: db->hints[h]); 0 when no traceback is close
 * enough above it (the one phase_decide_class reads). */
uint32_t phase_traceback_hints(const phase_state *ps, const char *key, uint64_t line);

/* The phase of a failure on stream `key` at `line`, whose pattern implies `pattern_phase` (-1 none)
 * and comes from engine `engine` (-1 none). Strongest evidence first: a mapped frame of the failure's
 * traceback, the message's own phase, the last progress marker; then the weak ones: a weak frame rule
 * (a model's forward), a weak marker a few lines before (NCCL set-up), the class's weak default
 * (`cls`, -1 none: a collective timeout alone is communication). */
void phase_decide(const phase_state *ps, const char *key, uint64_t line, int pattern_phase, int engine,
                  phase_answer *out);
/* The same for a failure of class `cls`, whose pattern's phase may be weak evidence (`pattern_weak`,
 * its "phase_confidence"): then it speaks after the strong evidence and a weak frame, before a weak
 * marker and the class's default. `stack_below`: the failure's own stack follows it (phase_late reads
 * it), so a traceback above the line speaks only weakly. */
void phase_decide_class(const phase_state *ps, const char *key, uint64_t line, int pattern_phase, int pattern_weak,
                        int engine, int cls, int stack_below, phase_answer *out);

/* Late evidence: the phase named by the failing thread's faulthandler stack on stream `key` whose
 * header came after `failure_line` and within a few lines of it (the failure's own stack, printed
 * below it). An ordinary frame rule's answer is final once given; until one matches, the other tiers'
 * answer is given as weak (out->weak), for a later frame to replace. 1 and `out` filled if the frames so
 * far name a phase, else 0. The caller gives it only to a failure that has no phase, or a weak one. */
int phase_late(const phase_state *ps, const char *key, uint64_t failure_line, phase_answer *out);

/* A Python traceback printed just after its failure (vLLM logs "... hit an exception." or the error
 * itself, then the traceback; an engine logs the message before the stack): the phase its frames name
 * so far, for the failure at `failure_line`, when the header of the traceback last started on stream
 * `key` is at most a few lines after that failure. Read as a traceback above a failure is (the strong
 * tiers, then the weak ones, out->weak telling which), so the answer may change as inner frames come:
 * the caller replaces the answer it gave before, known by *tb_line (the traceback's header line).
 * 1 and `out` filled when the frames name a phase, else 0. */
int phase_following(const phase_state *ps, const char *key, uint64_t failure_line, phase_answer *out,
                    uint64_t *tb_line);

/* The framework with the strongest evidence in everything fed so far (FW_UNKNOWN if none), and the
 * per-framework vote counts (FW__COUNT entries) for merging inputs. */
int phase_framework(const phase_state *ps);

/* The last progress marker (index into db->markers) and its line, -1 if none: saved by --state so that
 * a re-run continues with the phase the log was in (restore it with phase_marker()). */
int phase_last_marker(const phase_state *ps, uint64_t *line);
const uint32_t *phase_framework_votes(const phase_state *ps);

#endif
