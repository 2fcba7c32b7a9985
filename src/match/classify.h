/* classify.h - what a line the prefilter found means. A prefilter hit leads to its literal's targets:
 * context for the phase (traceback headers, frames, progress markers, framework votes), a setting of
 * the job (config.h), or candidate failure patterns. For those the best pattern is chosen (trying the
 * message joined with wrapped continuation lines), its values and continuation read, its phase
 * decided, a burst of the same failure recognised, and the event handed to the sink (event.h: the
 * story, in a scan).
 *
 * Ownership: a classifier belongs to one scanner (one thread). It borrows the pdb and the matcher
 * (which must outlive it) and, between classifier_begin calls, the source, phase state and the sink's ud
 * (the sink itself is copied). */
#ifndef OOMSCAN_CLASSIFY_H
#define OOMSCAN_CLASSIFY_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "base/timefmt.h"
#include "db/patterndb.h"
#include "match/config.h"
#include "match/match.h"
#include "match/phase.h"
#include "match/source.h"
#include "match/event.h"

#define CLASSIFY_MAX_TARGETS 64 /* literals acted on per line; past that a line adds nothing */

typedef struct classifier classifier;

/* The scanner's buffer: buf[0..len) starts at stream offset `base`; hits are being processed up to
 * `region_end`, and the complete lines after a line are its lookahead. */
typedef struct {
    const unsigned char *buf;
    size_t len, region_end;
    uint64_t base;
} scan_view;

/* The last time stamp seen in the source, and where: a failure line without a stamp of its own takes it
 * only when every line from that one to it goes on with the same record (lines_continue_record). */
typedef struct {
    int have;
    timefmt last;
    uint64_t at; /* stream offset of the stamped line's end (its terminator); UINT64_MAX when not known */
    int cls;     /* the class of a failure the stamped line states itself, -1 none: another class's record */
} scan_clock;

/* NULL when out of memory. */
classifier *classifier_new(const pdb *db, matcher *m);
void classifier_free(classifier *c);

/* A new source begins: what it feeds, and nothing remembered from the previous one. */
void classifier_begin(classifier *c, const scan_source *src, phase_state *ps, const scan_sink *sink);

/* A literal whose targets are all context or settings (classify_is_cheap) found at v->buf[pos], on
 * line `line`, which ends at v->buf[le] (lines_eol): they act at once, without the line being stripped
 * or matched. *ls is where the line starts, SIZE_MAX while unknown: found (and kept there) only when a
 * target reads the line, so the several literals of one line look for its start once. */
oomscan_status classify_cheap(classifier *c, const scan_view *v, size_t lit, size_t pos, uint64_t line, size_t *ls,
                              size_t le);

/* classify_cheap for a literal whose one target is a setting (CHEAP_SETTINGS), named `name` (len
 * bytes, the literal's text): the scanner calls it without reading the literal's targets. occ: what
 * config_occurrence_read said of the name at pos in this line, when the caller read it (the
 * scanner's helper), else NULL. */
oomscan_status classify_setting(classifier *c, const scan_view *v, const char *name, size_t len, size_t pos,
                                uint64_t line, size_t *ls, size_t le, const config_occurrence *occ);

/* Whether literal `lit` is cheap, and what its targets read: 0 not cheap (the line is stripped and
 * matched); CHEAP_SETTINGS, all its targets are settings; CHEAP_VOTES, all are framework votes, which
 * read neither the line nor its number (classify_cheap may be given 0: a Ray prefix on every line of a
 * rank file then costs no line count); else CHEAP. */
enum { CHEAP = 1, CHEAP_SETTINGS = 2, CHEAP_VOTES = 3 };
int classify_is_cheap(const pdb *db, size_t lit);

/* The line v->buf[start..end), numbered `line`, holding literals lits[0..n) (indices into
 * db->literals): its prefixes stripped (a time they state goes into *clock), context fed to the phase
 * state, settings read, and a failure it states added to the story. */
oomscan_status classify_line(classifier *c, const scan_view *v, size_t start, size_t end, uint64_t line,
                             const size_t *lits, size_t n, scan_clock *clock);

/* The source ends: what it gathered for the job (its memory series, match/telemetry.h) goes to the
 * sink's store for the job. OOMSCAN_OK or OOMSCAN_ERR_NOMEM. */
oomscan_status classify_end(classifier *c);

/* The scan moves past v->buf[0..end): a settings dump being read keeps its enclosing keys. */
void classify_pass(classifier *c, const scan_view *v, size_t end);

/* Settings named at stream offset `off` or later are no longer read from the lines the scanner hands
 * over (classify_cheap, classify_setting, classify_line), until the next source: the scanner reads them
 * in its settings windows instead (scan.h). */
void classify_settings_until(classifier *c, uint64_t off);

/* The settings of literal `lit` (its targets that are settings) named at v->buf[pos], in the line
 * v->buf[ls..le), numbered `line`, read through tracker `tr` into the source's job store: the
 * scanner's settings windows. */
oomscan_status classify_window_setting(classifier *c, config_tracker *tr, const scan_view *v, size_t lit, size_t pos,
                                       uint64_t line, size_t ls, size_t le);

/* How many failures were added since the last call (or the source's start), with the stream offsets
 * of the first's and the last's lines in *first and *last (when there were any). */
size_t classify_failures_take(classifier *c, uint64_t *first, uint64_t *last);

#endif
