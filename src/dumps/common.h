/* common.h - what the readers of src/dumps/ share (common.c); internal to that folder.
 *
 * Ownership: as dumps.h. dumps_text_scan() leaves the findings it made in the caller's temporary
 * story; the caller tags them and merges them on. */
#ifndef OOMSCAN_DUMPS_COMMON_H
#define OOMSCAN_DUMPS_COMMON_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/strmap.h"
#include "db/patterndb.h"
#include "dumps/pickle.h"
#include "match/phase.h"
#include "match/scan.h"
#include "story/story.h"

struct dumps_acc {
    cJSON *fr;   /* one summary per flight recorder dump (flightrec.c) */
    cJSON *snap; /* one summary per memory snapshot (memsnap.c) */
    const volatile sig_atomic_t *stop; /* dumps_acc_stop_on's flag, or NULL */
};

/* The whole rest of a source after its head, up to `cap` bytes, into one malloc'd buffer (NUL
 * added). NULL with *why set ("too large", a read error, out of memory: *nomem set). With `cut`
 * non-NULL a longer source gives its first `cap` bytes and sets *cut instead of failing. */
unsigned char *dumps_slurp(const unsigned char *head, size_t nhead, scan_read_fn rd, void *ud, size_t cap, size_t *n,
                           scan_result *res, char **why, int *nomem, int *cut);

/* Scan `text` (lines the dump holds or that stand for it) with the ordinary scanner into `tmp`, as
 * source `src`. OOMSCAN_OK or OOMSCAN_ERR_NOMEM. */
oomscan_status dumps_text_scan(scanner *sc, phase_state *ps, const scan_source *src, const char *text, size_t n,
                               story *tmp);

/* Give every finding of `tmp` the kind, and (where it has none) the time, rank, local rank and host;
 * NULL / empty arguments change nothing. Locations become line `line` of the dump. */
void dumps_tag(story *tmp, const char *kind, const timefmt *time, const char *rank, const char *local_rank,
               const char *host, uint64_t line);

/* ---- checked reads of a dump's values ------------------------------------------------------------
 * A dump is input like a log: any field may hold any type (a list where an object belongs, a string
 * for a number, NaN, 1e300). The readers read every value of a dump through these, never through
 * cJSON's fields: each gives the value only when it has the type asked for, else NULL or the default.
 * `o` may be NULL or of any type. The results are borrowed from the tree. */

/* Member `key` of `o` when `o` is an object (whatever its type), else NULL. */
const cJSON *dumps_get(const cJSON *o, const char *key);
/* Member `key` when it is an object / an array / a string, else NULL. */
const cJSON *dumps_obj(const cJSON *o, const char *key);
const cJSON *dumps_arr(const cJSON *o, const char *key);
const char *dumps_str(const cJSON *o, const char *key);
/* Element i of array `a` when it is a string, else NULL (i small: a linear walk). */
const char *dumps_item_str(const cJSON *a, int i);
/* `v` as a finite number: a JSON number, or a string that is one whole ("12", as pg_status writes
 * them). 1 and *out set, else 0 (NaN and infinities are not numbers here). */
int dumps_num(const cJSON *v, double *out);
/* Member `key` as a finite number, else `dflt`. */
double dumps_numk(const cJSON *o, const char *key, double dflt);
/* `v` as a whole number in [lo, hi] (dumps_num, then jsonnum_in): 1 and *out set, else 0. */
int dumps_int(const cJSON *v, int64_t lo, int64_t hi, int64_t *out);

/* Frames as PyTorch dumps store them ([{"filename", "line", "name"}], innermost first) written as a
 * Python traceback, outermost first, so the phase rules read them as they read a log's. malloc'd;
 * NULL when out of memory or there are no frames. */
char *dumps_traceback(const cJSON *frames);

/* A timefmt for seconds since the epoch, in local time (TZ): the clock the job's own logs print.
 * 0, or -1 when `secs` is no time a job ran at (NaN, infinite, before 1970 or after 9999: a cast to
 * time_t would be undefined); *t is then cleared. */
int dumps_epoch_time(double secs, timefmt *t);

/* malloc'd printf. */
char *dumps_strf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Readers (errfile.c, kernel.c, flightrec.c, memsnap.c). */
/* An error file in buf[0..n) (`cut`: the file went on past it). One cut short, too deep for cJSON or
 * past the read size keeps the exception and call stack its first bytes state whole, and *why says it
 * was partial. */
oomscan_status errfile_read(const unsigned char *buf, size_t n, int cut, scanner *sc, phase_state *ps,
                            const scan_source *src, story *tmp, char **why);
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

/* Findings that dumps read together state (a laggard rank, a mismatch), made as data: from the values
 * the reader computed, never by matching a sentence about them again (a rank written "node-2" once
 * made the pattern miss, and the finding was lost). A probe scans the frames that explain it followed
 * by `probe`, a line of the finding's own pattern with placeholder numbers, only to learn the pattern,
 * phase and framework that the phase rules give; the finding then takes `text` as its evidence and
 * fingerprint and `values` (consumed) as its memory. One prober serves a whole finish. */
typedef struct dumps_prober dumps_prober;
dumps_prober *dumps_prober_new(const pdb *db);
void dumps_prober_free(dumps_prober *p); /* NULL-safe */

typedef struct {
    const char *probe;     /* a line the finding's pattern matches */
    const char *traceback; /* frames as dumps_traceback wrote them, or NULL */
    const char *text;      /* the finding's one line */
    cJSON *values;         /* its memory; consumed */
    const char *path, *member, *kind, *rank;
    size_t input;
    const timefmt *time;   /* NULL: none */
} dumps_stated;

/* Add the finding `d` states to `st` (merged, as dumps_finish_scan does); *idx is its index, -1 when
 * none was added (the probe matched nothing, or the run's cap). 0, -1 out of memory. */
int dumps_state_finding(dumps_prober *p, const dumps_stated *d, story *st, long *idx);

/* `s` into obj[key] as the scanner gives a captured value: a number when it is all digits (at most
 * 15), else a string. 0, -1 out of memory. */
int dumps_put_value(cJSON *obj, const char *key, const char *s);

/* A read filter over a JSON-lines log (jsonl.c): each record's message as a line, its traceback as
 * lines of their own, any other line as it is. dumps_jsonl_read is a scan_read_fn over `rd`. */
typedef struct dumps_jsonl dumps_jsonl;
dumps_jsonl *dumps_jsonl_new(scan_read_fn rd, void *ud);
void dumps_jsonl_free(dumps_jsonl *j); /* NULL-safe */
ssize_t dumps_jsonl_read(void *ud, void *buf, size_t cap);
/* The bytes of the log itself read so far (the scanner counts the lines made from them; their offsets
 * are those of the lines made). */
uint64_t dumps_jsonl_bytes(const dumps_jsonl *j);

#endif
