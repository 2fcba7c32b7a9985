/* lexicon.h - reading identifiers as words, as an expert reads an unfamiliar stack.
 *
 * A function name, a called name on a frame's code line or a Ray task's Class.method is split into
 * lower-case tokens (snake_case, camelCase, dotted paths, digits kept with their letters) and matched
 * against the stems of patterns/context/lexicon.json. The readings are greedy and longest-first from
 * left to right; the last reading decides, since the words at the end name the operation
 * (actor_rollout_update_actor is an update, compute_ref_log_prob a log-prob). A stem with no phase is
 * an ambiguous reading (forward_backward_func) that blocks the shorter ones inside it.
 *
 * Ownership: pure functions over a borrowed pdb; no allocation, no state. */
#ifndef OOMSCAN_LEXICON_H
#define OOMSCAN_LEXICON_H

#include <stddef.h>

#include "db/patterndb.h"

/* The stem (index into db->stems) that reads identifier s[0..n) in a place of kind `where`
 * (STEM_IN_FUNC, STEM_IN_CALL or STEM_IN_TASK), or -1. The stem may have phase -1 (says nothing). */
int lexicon_read(const pdb *db, const char *s, size_t n, unsigned where);

/* The stem that reads a frame's code line: the first called name (an identifier followed by "(") that
 * has a reading; *word and *word_len give that name. -1 when none. */
int lexicon_read_code(const pdb *db, const char *code, size_t n, const char **word, size_t *word_len);

/* The stem that reads a Ray task named after a task marker: `Class.method(` starting at s; the
 * method is read, *word and *word_len give it. -1 when none. */
int lexicon_read_task(const pdb *db, const char *s, size_t n, const char **word, size_t *word_len);

/* 1 when frames under this path are not read as words (lexicon.json "skip_paths": torch's own
 * internals, whose words mean other things: torch/utils/checkpoint.py is activation recomputation). */
int lexicon_skips_path(const pdb *db, const char *path, size_t n);

#endif
