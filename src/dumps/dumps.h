/* dumps.h - crash dumps a failed job leaves beside its logs, recognised by their content (never their
 * name) and read into the same story as the logs: torchelastic error files, kernel logs (the
 * oom-killer block as one event), Python faulthandler dumps, NCCL flight recorder dumps (pickle or
 * JSON) and CUDA memory snapshots (pickle). docs/inputs.md describes each format and its versions.
 *
 * Text that a dump holds (an exception, a call stack, a kernel line) goes through the ordinary
 * scanner, so it is classified by the same patterns as a log line; what the dump adds (rank from the
 * path, time from a timestamp, the kernel's RSS figures) is set on the findings it produced. Dumps
 * that must be read together (every rank's flight recorder, a snapshot against the OOM it explains)
 * are summarised into a dumps_acc per input, merged in input order, and turned into findings by
 * dumps_acc_finish() once every input is read.
 *
 * Ownership: a dumps_acc is owned by whoever made it (dumps_acc_new / dumps_acc_free, NULL-safe);
 * the scanner, phase state and story passed in are borrowed. */
#ifndef OOMSCAN_DUMPS_H
#define OOMSCAN_DUMPS_H

#include <signal.h>
#include <stddef.h>

#include "db/patterndb.h"
#include "match/phase.h"
#include "match/scan.h"
#include "story/story.h"

/* How many leading bytes dumps_sniff() wants to see (fewer at the end of a short source). */
#define DUMPS_SNIFF_BYTES 4096

typedef enum {
    DUMP_NONE = 0,    /* an ordinary log: scan it as text */
    DUMP_ERROR_FILE,  /* torchelastic error.json */
    DUMP_KERNEL,      /* dmesg, journalctl -k, kern.log / syslog kernel lines */
    DUMP_FAULTHANDLER,/* a faulthandler dump in its own file */
    DUMP_PICKLE,      /* flight recorder or memory snapshot, told apart after decoding */
    DUMP_FR_JSON,     /* flight recorder written as JSON (PyTorch 2.5+) */
    DUMP_OOMSCAN,     /* oomscan's own JSON document or NDJSON records: not read (a job folder often
                       * holds the epilog's spool or a saved report beside the logs it came from) */
    DUMP_JSONL        /* a JSON-lines log (structlog, python-json-logger, k8s): a log whose records'
                       * "message" values are its lines (dumps_read scans them) */
} dump_kind;

/* What the first bytes of a source are. */
dump_kind dumps_sniff(const unsigned char *head, size_t n);

/* The source kind a finding read from `k` carries in its location ("error_file", "kernel", ...);
 * NULL for DUMP_NONE (a log). */
const char *dumps_kind_name(dump_kind k);

typedef struct dumps_acc dumps_acc;

dumps_acc *dumps_acc_new(void);
void dumps_acc_free(dumps_acc *a);

/* Move everything `src` holds to the end of `dst`. 0, -1 out of memory (src is then unchanged). */
int dumps_acc_merge(dumps_acc *dst, dumps_acc *src);

/* Read one source that dumps_sniff() called `kind` (not DUMP_NONE): `head` holds its first `nhead`
 * bytes, already taken from `rd`, which gives the rest. Findings go into `st`; flight recorder and
 * snapshot summaries into `acc`. `res` gets the byte and line counts; a read error sets
 * res->read_error. A dump that cannot be decoded is not a scan failure: OOMSCAN_OK is returned
 * with *why set to the reason (malloc'd, the caller frees) and nothing added. Returns
 * OOMSCAN_ERR_NOMEM only when out of memory. */
oomscan_status dumps_read(dump_kind kind, const unsigned char *head, size_t nhead, scan_read_fn rd, void *rd_ud,
                          scanner *sc, phase_state *ps, const scan_source *src, story *st, dumps_acc *acc,
                          scan_result *res, char **why);

/* Have dumps_acc_finish() check `stop` (set from a signal handler; NULL: none) between process
 * groups and snapshots: when set, it ends early with the findings made so far. */
void dumps_acc_stop_on(dumps_acc *acc, const volatile sig_atomic_t *stop);

/* After every input: the flight recorder's ranks read together (the rank that never joined the
 * collective the others wait in, as a finding) and each memory snapshot measured and attached to the
 * CUDA OOM finding it explains (or made one from its own OOM record). Empties `acc`.
 * Returns 0, -1 out of memory. */
int dumps_acc_finish(dumps_acc *acc, const pdb *db, story *st);

#endif
