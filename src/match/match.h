/* match.h - running the database's regexes on one line: stripping launcher prefixes (collecting the
 * rank, pid, host and time they carry) and matching failure patterns with their captures.
 *
 * Ownership: a matcher is per thread (it owns PCRE2 match data) and borrows its pdb, which must
 * outlive it. Views it hands out point into the caller's line and are valid while that line is. */
#ifndef OOMSCAN_MATCH_H
#define OOMSCAN_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "db/patterndb.h"

typedef struct matcher matcher;

/* What the prefixes of a line said. Empty strings when absent. */
typedef struct {
    char rank[16], local_rank[16], pid[24], ip[64], host[96], time[48], actor[64];
    char container[64]; /* kubectl logs --prefix: the container (its pod is the host) */
    long repeat; /* Ray's "[repeated Nx across cluster]": N, else 0 */
} line_ctx;

matcher *matcher_new(const pdb *db);
void matcher_free(matcher *m);

/* Strip known prefixes from `line` (repeatedly, in database order) and the end-of-line decorations;
 * return the message's start and set *msg_len. Fills `ctx` (cleared first). */
const char *matcher_strip(matcher *m, const char *line, size_t len, size_t *msg_len, line_ctx *ctx);

/* The time stamp matcher_strip would leave in ctx->time, found with less work (the other fields of
 * ctx are not all filled). Returns whether the line has one. */
int matcher_line_time(matcher *m, const char *line, size_t len, line_ctx *ctx);

/* Try failure pattern `idx` on text[0..len). Returns the number of named captures that were set
 * plus one on a match (so >0 means matched), 0 on no match. The match stays available to
 * matcher_values() until the next call. */
int matcher_try(matcher *m, size_t idx, const char *text, size_t len);

/* Add the named captures of the last successful matcher_try (on the same text) to `obj`, converted
 * by docs/data-formats.md, plus the pattern's lists. Returns 0, or -1 when out of memory. */
int matcher_values(matcher *m, size_t idx, const char *text, size_t len, cJSON *obj);

/* Run pattern `idx`'s "continuation" regexes on one following line (its prefixes stripped here) and
 * add the named captures whose key `obj` does not hold yet. Returns how many values were added, or
 * -1 when out of memory. Clobbers the last match (call matcher_span first). */
int matcher_continuation(matcher *m, size_t idx, const char *line, size_t len, cJSON *obj);

/* Regex work per input: a line on which a failure pattern hits PCRE2's match limit (hostile input, or
 * a user pattern like (a+)+$) spends one unit; once `budget` units are spent (0: the default), every
 * pattern that hits the limit again is skipped until the next reset. Call at the start of each input. */
#define MATCHER_BUDGET_DEFAULT 64
void matcher_budget_reset(matcher *m, uint64_t budget);

/* Why patterns are being skipped in this input, or NULL while the budget lasts. Borrowed. */
const char *matcher_budget_note(const matcher *m);

/* Start and end of the last match. */
void matcher_span(const matcher *m, size_t *start, size_t *end);

#endif
