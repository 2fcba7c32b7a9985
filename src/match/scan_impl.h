/* scan_impl.h - private to the scanner's files in match/ (scan_run.c the chunk loop and the scanner's life,
 * scan_line.c one hit line, scan_split.c the helper thread, scan_windows.c the settings windows): the
 * scanner's state and what they call of each other. No other file may include it.
 *
 * Ownership as in scan.h: the scanner owns its buffers, its helper and its tracker. */
#ifndef OOMSCAN_SCAN_IMPL_H
#define OOMSCAN_SCAN_IMPL_H

#include "match/scan.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match/classify.h"
#include "match/config.h"
#include "match/lines.h"
#include "match/match.h"
#include "match/names.h"

#define READ_CHUNK (512u * 1024u) /* with the line cap, the buffer is 1.5 MiB: the peak RSS budget is 16 MiB */
#define BUF_CAP (SCAN_LINE_CAP + READ_CHUNK)
#define LOOKAHEAD_LINES 6   /* lines kept after the processed region: wrapped messages, code lines,
                              * a pattern's "continuation" lines (at most PDB_CONT_MAX) */
#define MAX_LINE_TARGETS CLASSIFY_MAX_TARGETS
#define DEFERRED_CAP 1024   /* cheap lines whose timestamp is read only when a finding needs it */
#define SPLIT_MIN (128u * 1024u) /* a region is split for the helper only from twice this size: a gzip
                                  * input's regions are 384-640 KiB (the read-ahead's blocks) */
#define SPLIT_HITS 32768    /* hits the helper keeps for one half; past that the main thread goes on */

/* The helper thread of a split scan (scanner_use_helper): it runs the prefilter over the second part
 * of each region and keeps the hits, while the scanner's thread does the first part. The hits are
 * then replayed in order, so the callback sees exactly the sequence of a one-thread scan. */
typedef struct {
    size_t pos;
    uint64_t lines; /* terminators in [from, pos): the helper counts its part's lines too */
    size_t eol;     /* the end of the hit's line (scan_on_hit's lines_eol), found by the helper */
    uint32_t lit;
    int32_t stamp;  /* the time stamp of the hit's line, when the helper read it: an index into
                     * `stamps`, SPLIT_NO_STAMP (it has none) or SPLIT_UNREAD */
} split_hit;

/* What the scanner needs of a literal at each of its hits, in 8 bytes, so that a hit reads one cache
 * line of this table (the stream has evicted it between hits: a second table cost the nccl shape
 * 3% of its CPU time). */
typedef struct {
    uint8_t cheap; /* classify_is_cheap's answer */
    int8_t vote;   /* a literal whose one target is a framework vote: its framework, else -1 */
    uint32_t len;  /* a setting's name (cheap == CHEAP_SETTINGS): its length, else 0 */
    uint8_t names; /* one of its targets is a setting (pdb_prefilter_names finds it) */
} lit_info;

/* A setting's name among the helper's hits (lit_info.len): what its bytes say, read by the helper
 * (config_occurrence_read), and where its line starts, so that the replay reads neither. */
typedef struct {
    config_occurrence occ;
    uint32_t ls_back; /* the line starts this many bytes before the hit */
} split_occ;

#define SPLIT_UNREAD (-1)
#define SPLIT_NO_STAMP (-2)
#define SPLIT_BATCH 128  /* hits the helper hands over at once (one lock per batch) */
#define SPLIT_STAMPS 4096 /* stamps kept per part; lines past that are read by the scanner's thread */

typedef struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int job, quit;
    const prefilter *pf;
    const unsigned char *buf;
    size_t from, end, avail;
    split_hit *hits;
    split_occ *occs; /* occs[i] for hits[i] when that is a setting's name (info[lit].len); made at the
                      * first one (NULL: none yet, or out of memory) */
    size_t n;
    /* hits[0..published) may be replayed while the helper goes on: the scanner's thread replays them
     * as they come instead of after the whole part (its replay then overlaps the helper's search) */
    size_t published;
    int waiting; /* the scanner's thread waits for the next batch: signal it */
    size_t stopped_at; /* SIZE_MAX: every hit of [from, end) is in hits; else those before it are */
    size_t counted_to; /* terminators counted in [from, counted_to): `lines` */
    uint64_t lines;
    unsigned share;    /* the scanner thread's part of a region, in 64ths (scan_prefilter_region) */
    /* With `stamps_too`, the helper also reads the time stamp of each line its hits are on (with its
     * own matcher), which the scanner's thread would otherwise do for the deferred lines. */
    int stamps_too;
    matcher *m;
    size_t line_end; /* end of the line of the last hit, 0 = none yet */
    timefmt *stamps;
    size_t n_stamps;
    /* The next read, done here once this part is searched (prefetch 1 -> 2): while the scanner's
     * thread replays the hits, the helper reads the bytes after the buffer into the other buffer,
     * so that the scanner's thread, which read alone between regions, no longer does (scanner_run). */
    int prefetch;
    scan_read_fn rd;
    void *rd_ud;
    unsigned char *pre_to;
    size_t pre_cap;
    ssize_t pre_n;
    const lit_info *info; /* the scanner's: hits that are no setting are dropped here too */
    int divert;           /* the region's settings are kept for a window (set_divert): none read ahead */
    const pdb_literal *lits;
    config_prefixes prefixes; /* config_occurrence_read's, this thread's */
    size_t ls, ls_eol; /* the start of the line that ends at ls_eol (read_ahead's: split_collect's line
                        * of the last hit, when a setting's name needed it) */
} splitter;

struct scanner {
    const pdb *db;
    matcher *m;     /* shared with the classifier: the deferred time stamps are read with it */
    classifier *cl; /* what a hit line means (classify.h) */
    unsigned char *buf; /* the bytes held, buf[0] at stream offset base; it lies in mem (buffer_at) */
    /* per run */
    const scan_source *src;
    phase_state *ps;
    oomscan_status status;
    size_t len;        /* bytes in buf */
    uint64_t base;     /* stream offset of buf[0] */
    size_t counted_to; /* terminators counted in buf[0..counted_to) */
    uint64_t lines_before;
    /* The helper counted the lines of its part: at jump_pos, lines_before is jump_lines (scan_line_number_at).
     * SIZE_MAX: no such count. */
    size_t jump_pos;
    uint64_t jump_lines;
    scan_clock clock;
    /* the line being collected from prefilter hits */
    size_t cur_start, cur_end;
    int cur_open;
    size_t cur_targets[MAX_LINE_TARGETS];
    size_t n_cur;
    size_t region_end; /* end of the processed region (hits beyond are next round's) */
    /* The hit line: every literal seen on it once. Marker, framework and setting literals ("cheap") act at
     * once, without stripping the line; the others wait in cur_targets for scan_process_line. */
    size_t line_end;   /* end of the line of the last hit; 0 = none yet in this region */
    size_t line_pos;   /* first hit on it */
    size_t seen[MAX_LINE_TARGETS];
    size_t n_seen;
    /* per literal (lit_info). A setting's name inside a longer name reads nothing (config_name_whole):
     * it is dropped as found, before it costs a line; the others go to classify_setting without a look
     * at the literal's targets; a framework vote is counted without classify_cheap. */
    lit_info *info;
    /* Lines that had only cheap hits: the original design read each one's timestamp (findings carry
     * the last time seen). That costs a regex run per line, so it is done lazily, newest first, only
     * up to the first line that has a time, when a finding or the end of the buffer needs it. */
    struct {
        size_t pos, end; /* the first hit on the line and the line's end (scan_on_hit found it) */
        const timefmt *stamp; /* the helper read the line: its stamp, or scan_no_stamp when none */
        int settings; /* the line's hits were all setting names (it stands for its run, see scan_close_line) */
    } deferred[DEFERRED_CAP];
    size_t n_deferred;
    timefmt stamp_of[DEFERRED_CAP]; /* deferred[i]'s stamp when read as its line closed (eager_stamps) */
    int eager_stamps;               /* read them so: the helper reads those of its part (scan_prefilter_region) */
    const timefmt *line_stamp; /* the same for the line of the last hit (NULL: not read yet) */
    int line_settings; /* every hit on the line of the last hit named a setting (lit_info.cheap == CHEAP_SETTINGS) */
    size_t line_start; /* where that line starts, SIZE_MAX until a cheap target needed it */
    const timefmt *replay_stamp; /* the same for the line of the hit being replayed */
    size_t replay_eol;           /* and the end of its line (0: scan_on_hit finds it) */
    const split_occ *replay_occ; /* and the helper's reading of its setting's name (NULL: none) */
    size_t n_pushed, n_read;   /* deferred lines, and how many of them had to be read, since the last split */
    splitter *split; /* NULL: one thread */
    unsigned char *mem;   /* the block buf lies in (buffer_new): buf is placed in it so that reads land on
                           * a cache line (buffer_at) */
    unsigned char *mem2;  /* with a helper: the block it reads the next bytes into (prefetch) */
    scan_read_fn rd;      /* this run's reader, */
    void *rd_ud;
    int may_prefetch;     /* and whether the helper may read ahead for the region being scanned */
    int prefetching;      /* it was asked to: scanner_run takes what it read (take_prefetch) */
    size_t pre_n;         /* bytes it read */
    unsigned split_cores; /* scanner_use_helper's `cores` */
    uint64_t n_split;     /* regions split in this run (scan_result.regions_split) */
    uint64_t n_ahead;     /* and read ahead for (scan_result.reads_ahead) */
    unsigned char last_byte; /* last byte of the stream so far: did it end with a terminator? */
    /* The settings windows (scan.h). Past set_head_end a region is searched without the settings'
     * names (set_lean); at its end, the parts of it and of the history that a window covers are
     * searched again for them alone (scan_settings_windows). Every setting in a window before set_read_to
     * has been read; set_open_until is where the last failure's window ends. */
    uint64_t set_head_end, set_read_to, set_open_until;
    uint64_t win_head, win_before, win_after; /* the windows' sizes (scanner_settings_windows) */
    int set_lean;
    const prefilter *pf_lean, *pf_names; /* the database's (pdb_prefilter_lean), once a source needed them */
    config_tracker *set_tr; /* the windows' own: reset at each, it reads back as a lost tracker does */
    /* The bytes before the region, the last HIST_CAP of them, for the window before a failure: a ring
     * whose next byte goes to hist[hist_at], holding the hist_len bytes that end at offset hist_end. */
    unsigned char *hist;
    size_t hist_len, hist_at;
    uint64_t hist_end;
    unsigned char *win;   /* a window's part before the region, copied (HIST_CAP bytes) */
    /* A region that a window goes on through is searched with the whole set (pf), its settings' hits
     * kept here for the window (set_divert) instead of a second search with pf_names: in order. */
    int set_divert;
    struct kept_hit {
        size_t pos;
        size_t lit;
    } *kept;
    size_t n_kept, cap_kept;
    uint64_t set_tr_at;   /* where set_tr stands: the end of the last window read */
    uint64_t region_line; /* the line number at the region's start */
};

#define HIST_CAP (SCAN_SETTINGS_BEFORE + CONFIG_BACK_CAP)

/* A scan buffer's block: page-aligned, with room for BUF_CAP bytes placed up to a cache line in
 * (buffer_at) and 16 more for vector loads past their end. Where a read lands matters: the kernel's
 * copy out of the page cache (`rep movsb`) ran at a third of its speed into a destination that sat
 * otherwise on the cache line than its source (malloc's block, a read after a region's carried rest):
 * on 512 rank files that copy was a ninth of the run's time. */
#define BUF_LINE 64u
#define BUF_ALIGN 4096u
static inline unsigned char *buffer_new(void)
{
    return aligned_alloc(BUF_ALIGN, (BUF_CAP + BUF_LINE + 16 + BUF_ALIGN - 1) / BUF_ALIGN * BUF_ALIGN);
}

/* Where in block `mem` the buffer of stream offset `base` starts: each byte then sits on the cache line
 * as it sits in the file's pages, so that a read's destination is as aligned as its source. */
static inline unsigned char *buffer_at(unsigned char *mem, uint64_t base)
{
    return mem + base % BUF_LINE;
}

/* How much to ask of a read at stream offset `at` with room for `cap`: a large read ends at a page of
 * the file, so that the next one starts on one, and (buffer_at) at the start of a cache line of the
 * buffer. A plain file's stream offset is its file offset. */
static inline size_t read_cap(uint64_t at, size_t cap)
{
    return cap > 2 * BUF_ALIGN ? cap - (size_t)((at + cap) % BUF_ALIGN) : cap;
}

/* What the classifier may read of the buffer. */
static inline scan_view scan_view_at(const scanner *sc)
{
    scan_view v = {sc->buf, sc->len, sc->region_end, sc->base};
    return v;
}

/* ---- scan_line.c: one hit line ---- */

/* a line read and found without a time stamp (by its address) */
extern const timefmt scan_no_stamp;
/* The line number of buf[pos] (counting terminators from the last counted position). */
uint64_t scan_line_number_at(scanner *sc, size_t pos);
/* The time stamp of the line holding pos and ending at end, as the clock takes it: 1 when it has one. */
int scan_read_stamp(matcher *m, const unsigned char *buf, size_t pos, size_t end, timefmt *t);
/* Read the deferred cheap lines' stamps, newest first, until one has a time. */
void scan_resolve_deferred_time(scanner *sc);
/* Classify the open hit line. */
void scan_process_line(scanner *sc);
/* Finish the open hit line, if any: cheap lines deferred, others classified. */
void scan_close_line(scanner *sc);
/* The prefilter's callback (prefilter_fn): literal lit found at buf[pos]; returns where to go on. */
size_t scan_on_hit(void *ud, size_t lit, size_t pos);

/* ---- scan_split.c: the helper thread ---- */

/* Every hit of [0, end) to scan_on_hit, in order: in two parts on two threads when a helper is there. */
void scan_prefilter_region(scanner *sc, size_t end, size_t avail);
/* Stop the helper thread and free it (NULL: nothing). */
void scan_splitter_free(splitter *h);

/* ---- scan_windows.c: the settings windows ---- */

/* Keep the bytes of buf[0..end) that a later window may reach back to (sc->hist). */
void scan_hist_push(scanner *sc, size_t end);
/* Search the settings windows that reach into buf[0..end) for the settings' names. */
void scan_settings_windows(scanner *sc, size_t end);

#endif
