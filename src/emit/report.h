/* report.h - the words every human-facing writer (text report, tickets, the JSON "title") uses for a
 * finding, so one failure reads the same wherever it is shown: its title, the one-sentence root cause,
 * its location, its numbers in human units, and the cascade that follows from a root. No I/O.
 *
 * Ownership: every function fills a buffer the caller owns (always NUL-terminated, cut to fit). */
#ifndef OOMSCAN_REPORT_H
#define OOMSCAN_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "story/story.h"
#include "base/taxonomy.h"

/* What failed: the pattern's title without what it says of the wording matched ("(PyTorch caching
 * allocator, 2.1+ wording)", "(wrapped line)": that is the pattern's, named by `pattern`), or the
 * class's description when the title names a witness ("... summary line"). */
void report_what(const finding *f, char *buf, size_t cap);

/* What failed, where, on which rank: "<what> during <phase> on rank <r>" (the phase omitted when
 * unknown; " on <host>" when no rank is known but a host is). Ticket and JSON titles. */
void report_title(const finding *f, char *buf, size_t cap);

/* The one-sentence root cause without a leading label: the title, the phase (or that the log does not
 * state it), then " at <time>", " on rank <r>", " (host <h>)" for what the first occurrence states. */
void report_sentence(const finding *f, char *buf, size_t cap);

/* "path:line" or "archive:member:line" of the first occurrence. */
void report_where(const finding *f, char *buf, size_t cap);

/* The finding's memory numbers as "key=value, ..." with byte counts in human units; "" if none. */
void report_numbers(const finding *f, char *buf, size_t cap);

/* What a checklist setting (remediation.steps[].settings[]) asks of this job: "32 -> 16 (halve)" when
 * the log printed the job's value and the rule applies, "32 already (set:32)", "now 32 (decrease)", or
 * just the rule ("decrease"). */
void report_setting_change(const cJSON *setting, char *buf, size_t cap);

/* The consequences of one root counted by class: `findings` and `lines` (occurrences) per class, and
 * the ranks they were seen on as "1,2,5" (cut when long). */
typedef struct {
    size_t findings;
    uint64_t lines;
    char ranks[512];
} report_cascade_row;

/* Fill rows[0..CLS__COUNT) for the consequences of root finding `root` (an index into st->f) and
 * return how many consequence findings there are in all. */
size_t report_cascade(const story *st, size_t root, report_cascade_row rows[CLS__COUNT]);

/* The first `n` entries of `order` (story_order) regrouped so that each job's findings come together,
 * jobs in the order their first finding appears in `order`, each job's findings in their order. */
void report_group_by_job(const story *st, const size_t *order, size_t n, size_t *out);

#endif
