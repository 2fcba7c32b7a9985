/* common.h - what the readers of src/dumps/ share (common.c); internal to that folder.
 *
 * Ownership: as dumps.h. dumps_text_scan() leaves the findings it made in the caller's temporary
 * story; the caller tags them and merges them on. */
#ifndef OOMSCAN_DUMPS_COMMON_H
#define OOMSCAN_DUMPS_COMMON_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "db/patterndb.h"
#include "dumps/pickle.h"
#include "match/phase.h"
#include "match/scan.h"
#include "story/story.h"

struct dumps_acc {
    cJSON *fr;   /* one summary per flight recorder dump (flightrec.c) */
    cJSON *snap; /* one summary per memory snapshot (memsnap.c) */
};

/* The whole rest of a source after its head, up to `cap` bytes, into one malloc'd buffer (NUL
 * added). NULL with *why set ("too large", a read error, out of memory: *nomem set). */
unsigned char *dumps_slurp(const unsigned char *head, size_t nhead, scan_read_fn rd, void *ud, size_t cap, size_t *n,
                           scan_result *res, char **why, int *nomem);

/* Scan `text` (lines the dump holds or that stand for it) with the ordinary scanner into `tmp`, as
 * source `src`. OOMSCAN_OK or OOMSCAN_ERR_NOMEM. */
oomscan_status dumps_text_scan(scanner *sc, phase_state *ps, const scan_source *src, const char *text, size_t n,
                               story *tmp);

/* Give every finding of `tmp` the kind, and (where it has none) the time, rank, local rank and host;
 * NULL / empty arguments change nothing. Locations become line `line` of the dump. */
void dumps_tag(story *tmp, const char *kind, const timefmt *time, const char *rank, const char *local_rank,
               const char *host, uint64_t line);

/* Frames as PyTorch dumps store them ([{"filename", "line", "name"}], innermost first) written as a
 * Python traceback, outermost first, so the phase rules read them as they read a log's. malloc'd;
 * NULL when out of memory or there are no frames. */
char *dumps_traceback(const cJSON *frames);

/* A timefmt for seconds since the epoch, in local time (TZ): the clock the job's own logs print. */
void dumps_epoch_time(double secs, timefmt *t);

/* malloc'd printf. */
char *dumps_strf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Readers (errfile.c, kernel.c, flightrec.c, memsnap.c). */
oomscan_status errfile_read(const unsigned char *buf, size_t n, scanner *sc, phase_state *ps, const scan_source *src,
                            story *tmp, char **why);
/* A line-by-line reader of kernel log text that gathers the oom-killer blocks by pid. */
typedef struct kernel_blocks kernel_blocks;
kernel_blocks *kernel_blocks_new(void);
void kernel_blocks_free(kernel_blocks *k);
void kernel_blocks_feed(kernel_blocks *k, const unsigned char *p, size_t n);
/* Add what the blocks said to the findings of `tmp` that name the killed pid; host from syslog lines. */
void kernel_blocks_apply(kernel_blocks *k, story *tmp);
int kernel_line_like(const char *s, size_t n);

/* A decoded flight recorder dump (pickle or JSON) summarised into acc->fr; 0, -1 out of memory,
 * 1 not a flight recorder dump. */
int flightrec_summarise(const cJSON *dump, const scan_source *src, struct dumps_acc *acc, char **why);
int flightrec_finish(struct dumps_acc *acc, const pdb *db, story *st);
/* A memory snapshot's trace, read while the pickle streams (pickle_input.item with stream_key
 * "device_traces"): per device, the live allocations by site, the peak, the window before the OOM. */
typedef struct memsnap_trace memsnap_trace;
memsnap_trace *memsnap_trace_new(void);
void memsnap_trace_free(memsnap_trace *t);
int memsnap_trace_item(void *ud, const pickle_doc *d, size_t device, pickle_ref ev);
/* A decoded memory snapshot (its trace already streamed into `tr`, which may be NULL) summarised into
 * acc->snap; 0, -1 out of memory, 1 not a memory snapshot. */
int memsnap_summarise(const pickle_doc *d, memsnap_trace *tr, const scan_source *src, struct dumps_acc *acc,
                      char **why);
int memsnap_finish(struct dumps_acc *acc, const pdb *db, story *st);

/* Run `text` through a fresh scanner at finish time (no unit exists then) and merge its findings
 * into `st` tagged with `kind`; the index of the first new or merged finding is put in *idx (-1
 * none). 0, -1 out of memory. */
int dumps_finish_scan(const pdb *db, const char *text, const char *path, const char *member, size_t input,
                      const char *kind, const char *rank, const timefmt *time, story *st, long *idx);

#endif
