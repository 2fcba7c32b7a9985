/* config.h - the job's own settings, read from the configuration the log prints (verl's config dump,
 * OpenRLHF's Namespace, a launcher's echoed command line, Megatron-style argument tables, #SBATCH
 * lines), and the concrete change a checklist step asks for ("32 -> 16").
 *
 * Only the settings that checklist steps name are read: pdb_compile() asks config_literal() (db/configkey.h)
 * which text to look for, the scanner calls config_capture() on lines that hold one, and remedy asks
 * config_lookup() and config_propose() when it writes a step. No I/O.
 *
 * Ownership: a config_store owns its entries; config_lookup() returns a borrowed view valid until the
 * store changes.
 *
 * Where it lives: config_store.c the store (put, get, lookup, merge), config_track.c the tracker,
 * config_read.c reading a line (occurrences, capture), config_propose.c the proposed change;
 * config_impl.h is what they share. */
#ifndef OOMSCAN_CONFIG_H
#define OOMSCAN_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "db/configkey.h" /* config_literal, CONFIG_MAX_COMPONENTS */

#define CONFIG_BACK_CAP (256u * 1024u) /* how far back a tracker starts reading when it lost its place */
#define CONFIG_TRACK_DEPTH 64       /* open brackets remembered with their keys */
#define CONFIG_MEMO 64              /* settings a tracker remembers the entry of (config_read.c, capture_at) */

typedef struct {
    char *path;  /* dotted, normalised (no leading dashes, '-' -> '_'), as much as the log shows */
    char *value; /* as printed, quotes removed */
    char *file;  /* where it was read */
    uint64_t line;
    char job[32];
    uint64_t seq; /* later reads have higher seq */
    uint32_t hash; /* of path and job, for finding the entry again */
    /* for reading it again cheaply (config_store.c, config_store_touch): the lengths of path and value, the room value
     * has, and the tracker's source (config_tracker.source) that last set file, 0 none */
    uint32_t plen, vlen, vcap;
    uint64_t file_from;
} config_entry;

#define CONFIG_SLOTS 64 /* the store's index: a setting read again is found without a search */

typedef struct config_store {
    config_entry *e;
    size_t n, cap;
    uint32_t slot[CONFIG_SLOTS]; /* by entry hash: 1 + the index of the entry last found there, 0 none */
    uint64_t next_seq;
    uint64_t *clock; /* shared with the other jobs' stores of one story: reads ordered across them; or NULL */
} config_store;

/* An empty store whose reads take their order from *clock (NULL: its own). NULL out of memory. */
config_store *config_store_new(uint64_t *clock);
void config_store_free(config_store *s);

/* The settings one job sees, borrowed from their owner (story.h keeps a store per job): its own store
 * and the store of inputs that name no job; a finding of no job sees every job's (`all`). */
typedef struct config_view {
    const config_store *own, *shared;
    const config_store *const *all;
    size_t n_all;
    /* Settings of inputs naming no job held back from this job because the scan holds several jobs
     * (story_settings_view): never read for a step, only named in the hint that --job-id ties them. */
    const config_store *withheld;
} config_view;

/* A view of one store alone (tests, tools that read one log). */
config_view config_view_of(const config_store *st);

/* Append every entry of *src to *dst (creating it if needed), later reads winning; *src is freed and
 * set to NULL. Returns 0, -1 out of memory. */
int config_store_merge(config_store **dst, config_store **src);

/* Set `path` = `value` for job `job` as read at file:line, a later read of the same path and job
 * winning: for values other rules read (versions, version.h). Returns 0, -1 out of memory. */
int config_put(config_store **st, const char *path, const char *value, const char *job, const char *file,
               uint64_t line);

/* The latest entry whose path is exactly `path`, of job `job` ("" matches every job); NULL when none. */
const config_entry *config_get(const config_store *st, const char *path, const char *job);
const config_entry *config_view_get(const config_view *v, const char *path, const char *job);

/* What the scan has passed of a nested dump: the brackets still open before the scan position, each
 * with the key written before it ("'actor': {"), and the open "key:" lines of the YAML block it is in,
 * each with its indentation, so that a setting printed deep in a dump finds its enclosing keys without
 * reading back, the same whatever the buffer boundaries (a log that echoes settings stays linear). Per
 * source: the scanner owns one, resets it at each source and lets it pass each processed region. */
typedef struct config_tracker config_tracker;
config_tracker *config_tracker_new(void);
void config_tracker_free(config_tracker *t);
void config_tracker_reset(config_tracker *t);

/* The scan moves past buf[0..end) (buf[0] is at stream offset `base`): a tracker in use (a setting
 * read in the last CONFIG_BACK_CAP bytes) counts the brackets and YAML lines up to there, else it
 * forgets. */
void config_tracker_pass(config_tracker *t, const char *buf, uint64_t base, size_t end);

/* Read setting `lit` (a text config_literal gave) wherever it occurs in the line buf[start..end).
 * buf[0] is at stream offset `base`; buf[0..start) is earlier text of the same stream, read (with what
 * `tr` remembers from before it) for the keys that enclose a nested dump line. Values land in *st
 * (created on first use). `file` is where they were read: the same for every capture through `tr`
 * between two of its resets (a source's path; an entry read again through it keeps its file without
 * comparing). Returns the number of values read, -1 out of memory. */
int config_capture(config_store **st, config_tracker *tr, const char *lit, const char *buf, uint64_t base,
                   size_t start, size_t end, const char *job, const char *file, uint64_t line);

/* What the bytes alone say of one occurrence of a setting's name: whether a value is read there, how
 * the setting's path is to be built and where its value lies, as offsets from the name (small: a
 * scanner may keep one per hit). It reads no state, so it may be read on another thread ahead of the
 * capture: the scanner's helper reads those of its part of a buffer while the scanner's thread
 * replays the hits before them. */
typedef struct {
    uint32_t kind;  /* 0: no value is read there; else how (config_read.c, OCC_) */
    uint32_t shape; /* a name read in a dump's surroundings: where, for finding its entry again */
    uint32_t back;  /* a dotted name: its prefix starts this many bytes before it */
    uint32_t vat;   /* the value starts this many bytes after the name's start, */
    uint32_t vlen;  /* and is vlen bytes long (a switch without a value: 0, read as "true") */
} config_occurrence;

/* What one thread reading occurrences remembers of the dotted names it read, the last prefix of each
 * setting, so that an override echoed on every line is compared with it instead of walked back over:
 * the answers are the same as without it. Zeroed before first use; one per thread. */
typedef struct {
    struct config_prefix {
        const char *lit;
        uint32_t back, kind;
        char text[64];
    } e[32];
} config_prefixes;

/* Fill *o for the occurrence of setting lit (len bytes) at b[p], in the line b[ls..le). Reads only
 * b[ls..le). pm: this thread's memory of prefixes (NULL: none). */
void config_occurrence_read(const char *b, size_t ls, size_t le, size_t p, const char *lit, size_t len,
                            config_prefixes *pm, config_occurrence *o);

/* config_capture for a caller that knows where the setting's first occurrence in the line is: buf[first]
 * starts lit (len bytes; no occurrence of it in buf[start..first) that config_name_whole takes), so
 * the line is searched only after it. occ: config_occurrence_read's answer for buf[first] with these
 * bounds, when the caller has it (then that occurrence's bytes are not read again), else NULL. Same
 * values, same order. */
int config_capture_from(config_store **st, config_tracker *tr, const char *lit, size_t len, const char *buf,
                        uint64_t base, size_t start, size_t first, size_t end, const config_occurrence *occ,
                        const char *job, const char *file, uint64_t line);

/* Whether the occurrence of setting name `lit` (len bytes) at b[p] may be read as that setting: not
 * inside a longer name, that is no letter, digit or '_' before it and none of those or '-' after it
 * (b[p - 1] is read only when p > 0, b[p + len] only when p + len < avail). config_capture reads no
 * value where this is 0, whatever the line holds: a scanner may drop such an occurrence before it
 * costs a line (a log that echoes ppo_micro_batch_size_per_gpu also holds micro_batch_size_per_gpu
 * in it, on every line). */
int config_name_whole(const char *b, size_t p, size_t len, size_t avail);

/* The value the job used for checklist key `key` in job `job` ("" matches every job): the entry whose
 * path agrees with the most trailing components of the key (one a suffix of the other), the latest
 * read among equals. NULL when the log never printed it. */
const config_entry *config_lookup(const config_store *st, const char *key, const char *job);
const config_entry *config_view_lookup(const config_view *v, const char *key, const char *job);

/* Calls fn for each store of view v (own, shared, or all). */
void config_view_each(const config_view *v, void (*fn)(const config_store *st, void *ud), void *ud);

typedef enum { CONFIG_NO_PROPOSAL, CONFIG_PROPOSED, CONFIG_ALREADY } config_verdict;

/* The value that `change` (halve, double, decrease, increase, enable, disable, set:<v>) gives from
 * `current`, written into out. CONFIG_ALREADY when current already is what the change asks for;
 * CONFIG_NO_PROPOSAL when the rule does not apply to this value (a text for "halve"). */
config_verdict config_propose(const char *change, const char *current, char *out, size_t cap);

#endif
