/* phase.h - where in the pipeline a failure struck, and whose code was running.
 *
 * Fed, line by line, with the context the prefilter found (traceback headers and frames, progress
 * markers, framework banners), it keeps a little state per output stream (rank or pid, since ranks
 * interleave) and answers, at a failure, the phase and the evidence for it. Evidence, strongest first:
 * the innermost mapped frame of the traceback that carries the error; the message's own phase (engine
 * start-up); the latest progress marker; else unknown. No I/O.
 *
 * Ownership: a phase_state is per source; it borrows the pdb. */
#ifndef OOMSCAN_PHASE_H
#define OOMSCAN_PHASE_H

#include <stdint.h>

#include "patterndb.h"

typedef struct phase_state phase_state;

phase_state *phase_new(const pdb *db);
void phase_free(phase_state *ps);
/* Forget everything (a new source begins). Framework votes are kept: they are per input. */
void phase_reset_source(phase_state *ps);

/* "Traceback (most recent call last):" for stream `key` (e.g. "r3" or "p1234" or ""). */
void phase_traceback(phase_state *ps, const char *key, uint64_t line);

/* A frame `File "path", line N, in func` with its code line (may be NULL). */
void phase_frame(phase_state *ps, const char *key, const char *path, size_t path_len, const char *func,
                 size_t func_len, const char *code, size_t code_len, uint64_t line);

/* A progress marker (index into db->markers) seen at `line`. */
void phase_marker(phase_state *ps, size_t marker, uint64_t line);

/* A framework rule (index into db->fw_rules) matched a line. */
void phase_framework_vote(phase_state *ps, int framework);

typedef struct {
    tax_phase phase;
    int framework;     /* from the deciding frame or marker, -1 if none */
    char evidence[256];
} phase_answer;

/* The phase of a failure on stream `key` at `line`, whose pattern implies `pattern_phase` (-1 none)
 * and comes from engine `engine` (-1 none). */
void phase_decide(const phase_state *ps, const char *key, uint64_t line, int pattern_phase, int engine,
                  phase_answer *out);

/* The framework with the strongest evidence in everything fed so far (FW_UNKNOWN if none), and the
 * per-framework vote counts (FW__COUNT entries) for merging inputs. */
int phase_framework(const phase_state *ps);
const uint32_t *phase_framework_votes(const phase_state *ps);

#endif
