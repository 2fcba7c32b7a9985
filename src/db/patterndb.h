/* patterndb.h - the knowledge base: failure patterns, line prefixes, phase and framework rules and
 * remediation checklists, loaded from JSON (embedded or a user's folder), validated and compiled.
 *
 * Ownership: a pdb owns everything in it (strings, compiled regexes, the kept JSON of samples and
 * checklists). After pdb_compile() it is read-only and may be shared between threads; per-thread
 * match data is created by the matcher, not here. */
#ifndef OOMSCAN_PATTERNDB_H
#define OOMSCAN_PATTERNDB_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "db/prefilter.h" /* the compiled database owns its literal prefilter */
#include "base/status.h"
#include "base/taxonomy.h"
#include "base/jsonget.h"

/* A compiled regex. pdb_compile() compiles it; JIT compiling waits for its first use (pdb_regex_code),
 * as most patterns never see a candidate line and JIT work was a third of start-up. */
typedef struct {
    pcre2_code *code;
    atomic_int jitted; /* 1 once pcre2_jit_compile ran on `code` */
} pdb_regex;

typedef struct {
    char *key;    /* output key, e.g. "other_processes" */
    char *src;    /* regex source */
    pdb_regex re;
} pdb_list;

typedef struct {
    char *name;
    char *unit;
} pdb_unit;

typedef struct {
    char *id, *title, *file, *regex_src;
    tax_class cls;
    int engine;   /* tax_framework or -1 */
    int severity; /* 0-100 */
    int phase;    /* tax_phase the message itself implies (engine start-up, ...), or -1 */
    int phase_weak; /* "phase_confidence": "weak": the message points to `phase` one inference step
                     * away (NCCL's set-up failing: start-up, though a communicator may be built later) */
    int echo;     /* the message usually reports a consequence (a launcher killing siblings) */
    int stack_below; /* "stack_below": the failure prints its own stack under it (faulthandler's "Fatal
                      * Python error:"): a traceback above it is another failure's, and names no phase for it */
    char **literals;
    size_t n_literals;
    pdb_list *lists;
    size_t n_lists;
    pdb_unit *units;
    size_t n_units;
    /* "continuation": regexes tried on each of the next cont_lines lines (prefixes stripped); their
     * named captures fill values the message states on later lines (Ray's ActorDiedError pid/ip,
     * srun's step id). A value the matched line gave is never replaced. */
    pdb_list *conts;
    size_t n_conts;
    int cont_lines;
    int cont_required; /* "required": the match stands only when a continuation regex gave a value
                        * (NCCL's nvml WARN is fatal only when NCCL unwinds its error after it) */
    /* "in_traceback": the pattern stands only when the traceback that carries the line (phase.h,
     * phase_traceback_hints) has a frame whose path, function or code line holds tb_value (tb_kind
     * as a frame rule's): the same bare message means another failure under another caller (ENOSPC
     * from multiprocessing's SemLock is /dev/shm, not a disk). tb_value NULL: no condition.
     * tb_hint: its bit in the frames' hints (pdb_compile; db->hints[tb_hint]). */
    int tb_kind; /* pdb_frame_kind */
    char *tb_value;
    int tb_hint;
    cJSON *samples; /* the "samples" object, kept for --check-patterns */
    pdb_regex re;
} pdb_pattern;

typedef struct {
    char *id, *file, *regex_src;
    int at_end; /* matched at the end of the line (Ray's "[repeated 3x across cluster]") */
    cJSON *samples;
    pdb_regex re;
} pdb_prefix;

typedef enum { FRAME_FUNC, FRAME_CODE, FRAME_PATH } pdb_frame_kind;

/* A frame condition of the patterns' "in_traceback" (pdb_compile: one per distinct kind and value,
 * at most PDB_HINTS): value borrowed from the first pattern that names it. */
typedef struct {
    pdb_frame_kind kind;
    const char *value;
} pdb_hint;
#define PDB_HINTS 32 /* a frame's hints are a 32-bit mask */

/* Context rules keep their file and their "samples" / "not_samples" arrays (each {"line","source"})
 * for --check-patterns; pdb_rule_name() names one in messages. */
typedef struct {
    pdb_frame_kind kind;
    char *value;
    char *file;
    cJSON *samples, *not_samples;
    int phase;     /* tax_phase */
    int framework; /* tax_framework or -1 */
    int fallback;  /* 1 from "fallback_frames": used only when no ordinary rule matches any frame;
                    * 2 from "weak_frames": one inference step away (phase_confidence "weak"), used only
                    * when nothing stronger decides, the first listed rule winning within a frame */
} pdb_frame_rule;

/* A stem of the phase lexicon (patterns/context/lexicon.json): words that name a phase wherever they
 * stand in a function's, a called name's or a Ray task's identifier (match/lexicon.h reads them). */
#define PDB_STEM_WORDS 4
enum { STEM_STRONG, STEM_FALLBACK, STEM_WEAK };          /* how far the words are from the phase */
enum { STEM_IN_FUNC = 1, STEM_IN_CALL = 2, STEM_IN_TASK = 4 }; /* where the words may be read */
typedef struct {
    char *text;                   /* the stem as written ("log prob*"), for evidence and messages */
    char *words[PDB_STEM_WORDS];  /* lower case; a word of `prefix` matches a token it begins */
    unsigned char prefix[PDB_STEM_WORDS];
    size_t n_words;
    int phase;    /* tax_phase, or -1: an ambiguous reading that says nothing and blocks its parts */
    int level;    /* STEM_STRONG, STEM_FALLBACK (only when nothing else in the stack decides), STEM_WEAK */
    unsigned where;
    char *file;
    cJSON *samples, *not_samples;
} pdb_stem;

typedef struct {
    char *literal;
    int phase;     /* tax_phase, or -1: "a phase ended" */
    int framework; /* or -1 */
    int weak;      /* "confidence": "weak": counts only close before the failure, and only when no
                    * stronger evidence decides (docs/phases.md) */
    long reach;    /* "reach": speaks only for failures this many lines after it (0: until the next marker) */
    int lexicon;   /* from lexicon.json "task_markers": the identifier after the literal (a Ray task's
                    * Class.method) is read with the lexicon; phase is -1 and means nothing here */
    int late;      /* "late": true: printed after the failure it explains (Ray's memory table): names the
                    * phase of the failure just above it on the stream, within `reach` lines */
    char *file;
    cJSON *samples, *not_samples;
} pdb_marker;

typedef struct {
    char *literal;
    int framework;
    char *file;
    cJSON *samples, *not_samples;
    int in_path; /* 1: matched against traceback paths; 0: anywhere in a line */
} pdb_fw_rule;

/* A version rule (patterns/context/versions.json): on a line holding `literal`, `regex` reads the
 * version of `component` (named group "version"; any other named group gives "<component>_<name>"). */
typedef struct {
    char *literal, *component, *regex_src, *file;
    cJSON *samples, *not_samples;
    pdb_regex re; /* matched without JIT: a version line is rare */
} pdb_version_rule;

/* One NVIDIA Xid code from patterns/context/xid.json: what it means and where its cause usually lies
 * ("hardware", "application", "driver" or "follow_on"). */
typedef struct {
    long code;
    char *meaning, *cause;
} pdb_xid;

typedef struct {
    char *id, *file;
    cJSON *raw;  /* the checklist document as loaded: steps may name the step library by id */
    cJSON *json; /* the same with every step taken from the library (pdb_compile), or NULL before */
} pdb_checklist;

/* What a prefilter literal leads to. */
typedef enum {
    LIT_PATTERN,
    LIT_MARKER,
    LIT_FRAMEWORK,
    LIT_TRACEBACK,
    LIT_FRAME,
    LIT_CONFIG,
    LIT_VERSION,
    LIT_TELEMETRY /* a memory line the job prints about itself (match/telemetry.h) */
} pdb_lit_kind;

typedef struct {
    pdb_lit_kind kind;
    size_t index; /* into patterns / markers / fw_rules; LIT_TRACEBACK: 0 Python's, 1 faulthandler's */
} pdb_target;

typedef struct {
    char *text;
    pdb_target *targets;
    size_t n_targets;
} pdb_literal;

typedef struct pdb {
    pdb_pattern *patterns;
    size_t n_patterns;
    pdb_prefix *prefixes;
    size_t n_prefixes;
    pdb_frame_rule *frames;
    size_t n_frames;
    pdb_marker *markers;
    size_t n_markers;
    pdb_fw_rule *fw_rules;
    size_t n_fw_rules;
    pdb_stem *stems;
    size_t n_stems;
    char **lex_skip_paths; /* lexicon.json "skip_paths": frames under these paths are not read as words */
    size_t n_lex_skip_paths;
    pdb_version_rule *versions;
    size_t n_versions;
    pdb_xid *xids;
    size_t n_xids;
    pdb_checklist *checklists;
    size_t n_checklists;
    struct { /* the room allocated for each array above and config_lits, in elements (base/grow.h) */
        size_t patterns, prefixes, frames, markers, fw_rules, stems, lex_skip_paths, versions, xids, checklists,
            config_lits;
    } cap;
    pdb_hint hints[PDB_HINTS]; /* built by pdb_compile from the patterns' "in_traceback" */
    size_t n_hints;
    int class_phase[32]; /* phases.json "class_phases": a class's weak default phase (tax_phase), -1 none */
    cJSON *steps; /* the step library (format oomscan-steps/1): an object, step id -> step */
    cJSON *conclusions; /* diagnosis wording (format oomscan-diagnosis/1): an object, id -> conclusion */
    /* Built by pdb_compile(): */
    pdb_literal *literals;
    size_t n_literals;
    size_t *lit_slots; /* literals by text, open addressing: index + 1, 0 = empty (pdb_compile's dedup) */
    size_t lit_slot_cap;
    char **config_lits; /* settings the checklists name, as config_literal() spells them (src/config.h) */
    size_t n_config_lits;
    prefilter *pf;
    /* With settings named (n_config_lits > 0): pf without the literals that only name a setting, for
     * the scan past a source's head, and the literals that name one, for the settings windows
     * (match/scan.h); both report pf's indices. Built at first use: pdb_prefilter_lean/_names. */
    prefilter *pf_lean, *pf_names;
    atomic_int settings_pf_ready;
    uint32_t max_captures;
    int regex_from_blob; /* pdb_compile took the regexes compiled at build time (embedded_regex) */
    /* 1 while the embedded advice files (checklists, steps, conclusions) wait for their first use:
     * pdb_load_advice, called by every lookup of them below */
    atomic_int advice_pending;
    int compiled;
    pthread_mutex_t jit_mu; /* serialises lazy JIT compiles (pdb_regex_code) between threads */
} pdb;

/* Most lines a pattern's "continuation" may look ahead (the scanner keeps this many in its buffer). */
#define PDB_CONT_MAX 6

/* Free what one pattern or prefix holds (not the struct itself): pdb_free's, and a loader's on error. */
void pdb_free_pattern(pdb_pattern *p);
void pdb_free_prefix(pdb_prefix *p);
/* Free the literal table, the settings' literals and the prefilters (pdb_compile builds them, and
 * frees them first when compiling again). */
void pdb_free_literals(pdb *db);

/* Python's own traceback and faulthandler stack markers, always in the prefilter. */
extern const char PDB_TRACEBACK_LITERAL[];
extern const char PDB_FRAME_LITERAL[];
extern const char PDB_STACK_FIRST_LITERAL[];
/* The literals of the job's memory lines (match/telemetry.h reads them), NULL-terminated; always in the
 * prefilter, each a LIT_TELEMETRY target. */
extern const char *const PDB_TELEMETRY_LITERALS[];

/* An empty database. NULL when out of memory. */
pdb *pdb_new(void);
void pdb_free(pdb *db);

/* Load the data files embedded in the binary. */
oomscan_status pdb_load_embedded(pdb *db, oomscan_diag *diag);
/* The same without the rules' samples (NULL in the database, so not for
 * oomscan_db_check): what a scan
 * needs, at half the parsing. */
oomscan_status pdb_load_embedded_lean(pdb *db, oomscan_diag *diag);

/* Load one JSON document named `file` (for messages). Entries with an existing id replace it. */
oomscan_status pdb_load_text(pdb *db, const char *file, const char *text, size_t len, oomscan_diag *diag);

/* Load every *.json below `dir`, recursively, in sorted order. */
oomscan_status pdb_load_dir(pdb *db, const char *dir, oomscan_diag *diag);

/* Compile regexes and build the literal prefilter. Idempotent. */
oomscan_status pdb_compile(pdb *db, oomscan_diag *diag);

/* The advice data (checklists, steps, conclusions) loaded if a lean load left it for its first use;
 * thread-safe. pdb_checklist_for, pdb_checklist_by_id and pdb_conclusions call it; a reader of the
 * fields calls it first. */
void pdb_load_advice(const pdb *db);
const cJSON *pdb_conclusions(const pdb *db);

/* Whether a literal names a setting (one of its targets is LIT_CONFIG: pf_names holds it), and whether
 * it does nothing else (every target is: pf_lean leaves it out). */
int pdb_literal_names_setting(const pdb_literal *l);
int pdb_literal_settings_only(const pdb_literal *l);

/* pf_lean and pf_names of a compiled `db`, built at the first call (thread-safe); NULL when it names
 * no setting, or out of memory (then settings are read with pf, everywhere). */
const prefilter *pdb_prefilter_lean(const pdb *db);
const prefilter *pdb_prefilter_names(const pdb *db);

/* The three prefilters of a compiled `db` serialized into `*out` (malloc'd), for the build-time tool
 * (embedded_prefilter); -1 when one runs the portable engine or out of memory. */
int pdb_prefilter_serialize(const pdb *db, unsigned char **out, size_t *len);

/* The settings literals of a compiled `db` (config_lits), each NUL-terminated, into `*out`
 * (malloc'd), for the build-time tool (embedded_config); 0, or -1 when out of memory. */
int pdb_config_serialize(const pdb *db, unsigned char **out, size_t *len);

/* Every compiled regex of `db` serialized (PCRE2's own format, after a header naming these very
 * regexes) into `*out` (malloc'd), for the build-time tool; 0, or -1 when not compiled or out of memory. */
int pdb_regex_serialize(pdb *db, unsigned char **out, size_t *len);

/* Tests: take the regexes from `blob` as pdb_compile does from the embedded one: 1 when it fits and
 * every regex was taken, 0 (nothing changed) when not. */
int pdb_regexes_from_blob(pdb *db, const unsigned char *blob, size_t len);

/* `r`'s code, JIT-compiled first if this is its first use (thread-safe; a platform without JIT
 * keeps the interpreter). NULL when `r` was not compiled. */
const pcre2_code *pdb_regex_code(const pdb *db, const pdb_regex *r);

/* The checklist for (class, phase): the specific one, else the class's fallback ("phase": "*"),
 * else NULL. */
const pdb_checklist *pdb_checklist_for(const pdb *db, tax_class cls, tax_phase phase);
const pdb_checklist *pdb_checklist_by_id(const pdb *db, const char *id);

/* The catalog entry for Xid `code`, or NULL when the catalog does not know it. */
const pdb_xid *pdb_xid_lookup(const pdb *db, long code);

/* A context rule's name for messages, as the data file spells it: `frames func "clip_grad_norm_"`,
 * `markers "Before generate_sequences,"`, `rules "/verl/"`. */
void pdb_frame_rule_name(const pdb_frame_rule *r, char *out, size_t cap);
void pdb_marker_name(const pdb_marker *m, char *out, size_t cap);
void pdb_fw_rule_name(const pdb_fw_rule *r, char *out, size_t cap);
void pdb_version_rule_name(const pdb_version_rule *r, char *out, size_t cap);

/* The unit declared for capture `name` of pattern `p`, or NULL. */
const char *pdb_unit_for(const pdb_pattern *p, const char *name);

/* The public handle (oomscan.h) is the database itself. */
struct oomscan_db {
    pdb *p;
};

#endif
