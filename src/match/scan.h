/* scan.h - scanning one source (a file or an archive member): its failures go to a sink (event.h; in a
 * scan the story's, story_sink), its context to a phase state.
 *
 * The bytes come through a read callback in large chunks. Line ends are \n, \r\n and a bare \r; a line
 * longer than SCAN_LINE_CAP is cut into pieces that keep its line number. The prefilter runs over the
 * whole chunk; only lines holding a literal are split out, stripped of prefixes and matched. Line
 * numbers and byte offsets are exact (terminators are counted over every byte, vectorised).
 *
 * Ownership: a scanner is per thread; it borrows the pdb. The phase state and sink passed to
 * scanner_run are the caller's. */
#ifndef OOMSCAN_SCAN_H
#define OOMSCAN_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "db/patterndb.h"
#include "match/classify.h"
#include "match/event.h"
#include "match/lines.h"    /* scan_count_lines */
#include "match/phase.h"
#include "match/source.h"

#define SCAN_LINE_CAP (1u << 20)

/* Where the settings a log prints are read (config.h): its first SCAN_SETTINGS_HEAD bytes (the
 * launch: the config dump, the echoed command line), and around each failure, the
 * SCAN_SETTINGS_BEFORE bytes before its line (what the job printed as it ran into it) and the
 * SCAN_SETTINGS_AFTER bytes from it on (a relaunch echoes its settings). Elsewhere a line that names
 * a setting costs what any line costs: past the head the prefilter runs without the settings' names
 * (pdb.pf_lean), and only the windows are searched for them (pdb.pf_names). Offsets count from the
 * source's start (scan_source.base_offset); the windows are the same whatever the read sizes. */
#define SCAN_SETTINGS_HEAD (4u << 20)
#define SCAN_SETTINGS_BEFORE (1u << 20)
#define SCAN_SETTINGS_AFTER (4u << 20)

typedef struct scanner scanner;

/* Read callback: up to `cap` bytes into buf; >0 bytes, 0 end, -1 error (see scan_result.error), or
 * SCAN_READ_IDLE: no data for a while on a live stream, so scan every complete line held back for
 * lookahead now (a finding must not wait for lines that may never come), then read on. */
typedef ssize_t (*scan_read_fn)(void *ud, void *buf, size_t cap);
#define SCAN_READ_IDLE (-2)

typedef void (*scan_progress_fn)(void *ud, uint64_t bytes);

typedef struct {
    uint64_t bytes, lines, lines_cut;
    uint64_t regions_split; /* buffers whose prefilter pass the helper shared (scanner_use_helper) */
    uint64_t reads_ahead;   /* reads the helper did meanwhile, for the next buffer (a plain source) */
    int read_error; /* the read callback returned -1 */
    int have_time;  /* last_time holds the last stamp seen (to resume after this source); read to the
                     * source's end only with scan_source.keep_time, else up to its last failure */
    timefmt last_time;
    uint64_t last_time_end; /* stream offset of the end of last_time's line (source.h time0_end) */
} scan_result;

scanner *scanner_new(const pdb *db);
void scanner_free(scanner *sc);

/* The settings windows' sizes for the next sources, in bytes (SCAN_SETTINGS_*: the defaults;
 * `before` at most SCAN_SETTINGS_BEFORE). Smaller ones bring the window code to small inputs: the
 * fuzz target that compares read sizes, and tests. */
void scanner_settings_windows(scanner *sc, uint64_t head, uint64_t before, uint64_t after);

/* Give the scanner a helper thread (for one input when a core is spare): each buffer's prefilter pass
 * is split in two halves run at once, and the hits are replayed in order, so findings, line numbers
 * and output are exactly those of one thread. `cores`: how many this scanner's input may keep busy,
 * its own thread's included; a source whose bytes a decoder thread makes (scan_source.decoder_thread)
 * is split only from three, since that thread takes one (on two cores, splitting a gzip input made it
 * slower: three threads on two cores). 0, or -1 when no thread could be had (the scanner then works
 * alone, as before). The thread ends in scanner_free. */
int scanner_use_helper(scanner *sc, unsigned cores);

/* The regex work budget of the next input (matcher_budget_reset; 0: the default), and the note saying
 * it was spent (NULL while it lasts). */
void scanner_regex_budget(scanner *sc, uint64_t budget);
const char *scanner_regex_note(const scanner *sc);

/* Fill the name-derived context of `src` from its path and member. */
void scan_source_from_name(scan_source *src);

/* Scan one source to its end. Failures go to `sink`, context into `ps` (reset for this source by the
 * caller when appropriate). Returns OOMSCAN_OK, or OOMSCAN_ERR_NOMEM. A read error is not a failure
 * of the scan: it is reported in `res->read_error` and what was read before is kept. */
oomscan_status scanner_run(scanner *sc, scan_read_fn rd, void *rd_ud, const scan_source *src, phase_state *ps,
                           const scan_sink *sink, scan_result *res, scan_progress_fn progress, void *progress_ud);

/* scanner_run over text[0..n) held in memory (a sample, a crash dump's text): one read, no progress. */
oomscan_status scanner_run_text(scanner *sc, const char *text, size_t n, const scan_source *src, phase_state *ps,
                                const scan_sink *sink, scan_result *res);

#endif
