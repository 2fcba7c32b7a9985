/* compile.c - the loaded database made ready to scan: regexes compiled (or taken from the blob the
 * build serialised), the literal table and its prefilters built, the settings the checklists name
 * turned into literals. */
#include "db/rules.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "db/configkey.h" /* settings the checklists name become literals, spelled by config_literal() */
#include "db/embedded.h"


/* ---- compiling ---------------------------------------------------------------------------- */

static oomscan_status compile_one(const char *src, pdb_regex *re, const char *file, const char *id,
                                  uint32_t extra, oomscan_diag *diag)
{
    int err;
    PCRE2_SIZE off;
    pcre2_code_free(re->code);
    atomic_store(&re->jitted, 0);
    pcre2_code **out = &re->code;
    *out = pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED,
                         PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_DUPNAMES | extra, &err, &off, NULL);
    if (!*out) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return diag_set(diag, OOMSCAN_ERR_PATTERN, file, "%s: regex error at offset %zu: %s", id, (size_t)off,
                        (const char *)msg);
    }
    return OOMSCAN_OK;
}

const pcre2_code *pdb_regex_code(const pdb *db, const pdb_regex *r)
{
    if (!r->code || atomic_load_explicit(&r->jitted, memory_order_acquire))
        return r->code;
    /* Another thread may be matching with other patterns meanwhile, never with this one: it waits
     * here until `jitted` says the code is complete. The mutex is bookkeeping, the pdb stays shared. */
    pdb *mdb = (pdb *)db;
    pdb_regex *mr = (pdb_regex *)r;
    pthread_mutex_lock(&mdb->jit_mu);
    if (!atomic_load_explicit(&mr->jitted, memory_order_relaxed)) {
        /* JIT is an optimisation: a platform without it still matches, only slower. */
        (void)pcre2_jit_compile(mr->code, PCRE2_JIT_COMPLETE);
        atomic_store_explicit(&mr->jitted, 1, memory_order_release);
    }
    pthread_mutex_unlock(&mdb->jit_mu);
    return r->code;
}

static size_t text_hash(const char *s)
{
    size_t h = 14695981039346656037ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The slot of `text` in the literal index: the one holding it, or the empty one it would go in.
 * A hash, not a walk over the literals: with ~400 literals and ~200 settings the walk was a sixth of
 * start-up (strcmp). The index stays under half full. */
static size_t *lit_slot(const pdb *db, const char *text)
{
    size_t mask = db->lit_slot_cap - 1, i = text_hash(text) & mask;
    while (db->lit_slots[i] && strcmp(db->literals[db->lit_slots[i] - 1].text, text) != 0)
        i = (i + 1) & mask;
    return &db->lit_slots[i];
}

/* Room for one more literal in db->literals and in the index (doubled, rehashed, when half full). */
static int lit_reserve(pdb *db)
{
    size_t n = db->n_literals; /* capacity: 64, then doubled whenever n reaches a power of two */
    if (n == 0 || (n >= 64 && (n & (n - 1)) == 0)) {
        size_t cap = n ? n * 2 : 64;
        void *grown = realloc(db->literals, cap * sizeof *db->literals);
        if (!grown)
            return -1;
        db->literals = grown;
    }
    if ((db->n_literals + 1) * 2 > db->lit_slot_cap) {
        size_t cap = db->lit_slot_cap ? db->lit_slot_cap * 2 : 256;
        size_t *slots = calloc(cap, sizeof *slots);
        if (!slots)
            return -1;
        free(db->lit_slots);
        db->lit_slots = slots;
        db->lit_slot_cap = cap;
        for (size_t i = 0; i < db->n_literals; i++)
            *lit_slot(db, db->literals[i].text) = i + 1;
    }
    return 0;
}

static oomscan_status add_literal(pdb *db, const char *text, pdb_lit_kind kind, size_t index, oomscan_diag *diag)
{
    if (lit_reserve(db) != 0)
        return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    size_t *slot = lit_slot(db, text);
    size_t i = *slot ? *slot - 1 : db->n_literals;
    if (i == db->n_literals) {
        memset(&db->literals[i], 0, sizeof db->literals[i]);
        if (!(db->literals[i].text = strdup(text)))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
        db->n_literals++;
        *slot = i + 1;
    }
    pdb_literal *l = &db->literals[i];
    void *grown = realloc(l->targets, (l->n_targets + 1) * sizeof *l->targets);
    if (!grown)
        return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    l->targets = grown;
    l->targets[l->n_targets].kind = kind;
    l->targets[l->n_targets].index = index;
    l->n_targets++;
    return OOMSCAN_OK;
}

/* One text to read settings by (see config_literal), once: a literal that already leads to a
 * setting is that setting. */
static oomscan_status add_config_literal(pdb *db, const char *text, oomscan_diag *diag)
{
    if (db->lit_slot_cap) {
        size_t at = *lit_slot(db, text);
        for (size_t k = 0; at && k < db->literals[at - 1].n_targets; k++)
            if (db->literals[at - 1].targets[k].kind == LIT_CONFIG)
                return OOMSCAN_OK;
    }
    if (GROW(db->config_lits, db->n_config_lits, db->cap.config_lits, 16))
        return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    if (!(db->config_lits[db->n_config_lits] = strdup(text)))
        return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    db->n_config_lits++;
    return add_literal(db, text, LIT_CONFIG, db->n_config_lits - 1, diag);
}

/* The settings that checklist steps name are the only configuration worth reading from a log. */
static oomscan_status add_config_literals(pdb *db, oomscan_diag *diag)
{
    oomscan_status st;
    for (size_t i = 0; i < db->n_checklists; i++) {
        const cJSON *step;
        cJSON_ArrayForEach(step, cJSON_GetObjectItemCaseSensitive(db->checklists[i].json, "steps"))
        {
            const cJSON *fw;
            cJSON_ArrayForEach(fw, cJSON_GetObjectItemCaseSensitive(step, "settings"))
            {
                const cJSON *set;
                cJSON_ArrayForEach(set, fw)
                {
                    const char *key = json_str(set, "key"), *change = json_str(set, "change");
                    char lit[128], alt[128];
                    /* a placeholder value ("set:<path>") has nothing to compare the job's value with */
                    if (!key || !change || strncmp(change, "set:<", 5) == 0 ||
                        !config_literal(key, lit, sizeof lit, alt, sizeof alt))
                        continue;
                    if ((st = add_config_literal(db, lit, diag)) || (alt[0] && (st = add_config_literal(db, alt, diag))))
                        return st;
                }
            }
        }
    }
    return OOMSCAN_OK;
}

/* ---- the serialized regexes ---------------------------------------------------------------- */

/* Every regex of the database in one fixed order, with what compiles it: the build-time tool
 * serializes them in this order (pdb_regex_serialize) and pdb_compile takes them back in it. */
typedef struct {
    pdb_regex *re;
    const char *src;
    uint32_t extra; /* compile options beyond compile_one's own */
} regex_ref;

static regex_ref *regex_list(pdb *db, size_t *n)
{
    size_t cap = db->n_prefixes + db->n_versions;
    for (size_t i = 0; i < db->n_patterns; i++)
        cap += 1 + db->patterns[i].n_lists + db->patterns[i].n_conts;
    regex_ref *l = malloc((cap ? cap : 1) * sizeof *l);
    size_t k = 0;
    for (size_t i = 0; l && i < db->n_patterns; i++) {
        pdb_pattern *p = &db->patterns[i];
        l[k++] = (regex_ref){&p->re, p->regex_src, 0};
        for (size_t j = 0; j < p->n_lists; j++)
            l[k++] = (regex_ref){&p->lists[j].re, p->lists[j].src, 0};
        for (size_t j = 0; j < p->n_conts; j++)
            l[k++] = (regex_ref){&p->conts[j].re, p->conts[j].src, 0};
    }
    for (size_t i = 0; l && i < db->n_prefixes; i++)
        l[k++] = (regex_ref){&db->prefixes[i].re, db->prefixes[i].regex_src, db->prefixes[i].at_end ? 0 : PCRE2_ANCHORED};
    for (size_t i = 0; l && i < db->n_versions; i++)
        l[k++] = (regex_ref){&db->versions[i].re, db->versions[i].regex_src, 0};
    *n = k;
    return l;
}

#define REGEX_BLOB_MAGIC 0x3130584552534f4full /* "OOSREX01" */
#define REGEX_BLOB_HEADER 32                    /* magic, fingerprint, count, PCRE2's bytes */

static void put_u64(unsigned char *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

/* What the regexes are: their sources and options in order. A blob made for other regexes (a user's
 * patterns folder, another version of the data) has another fingerprint and is not used. */
static uint64_t regex_fingerprint(const regex_ref *l, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        for (const unsigned char *c = (const unsigned char *)l[i].src; *c; c++)
            h = (h ^ *c) * 0x100000001b3ull;
        for (int b = 0; b < 5; b++) /* the options, then a separator no source holds */
            h = (h ^ (b < 4 ? (l[i].extra >> (8 * b)) & 0xff : 0x100)) * 0x100000001b3ull;
    }
    return h;
}

int pdb_regex_serialize(pdb *db, unsigned char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    size_t n;
    regex_ref *l = regex_list(db, &n);
    const pcre2_code **codes = malloc((n ? n : 1) * sizeof *codes);
    int rc = -1;
    for (size_t i = 0; l && codes && i < n; i++)
        if (!(codes[i] = l[i].re->code))
            goto end;
    uint8_t *bytes = NULL;
    PCRE2_SIZE size = 0;
    if (!l || !codes || n == 0 || pcre2_serialize_encode(codes, (int32_t)n, &bytes, &size, NULL) != (int32_t)n)
        goto end;
    unsigned char *b = malloc(REGEX_BLOB_HEADER + size);
    if (b) {
        put_u64(b, REGEX_BLOB_MAGIC);
        put_u64(b + 8, regex_fingerprint(l, n));
        put_u64(b + 16, n);
        put_u64(b + 24, size);
        memcpy(b + REGEX_BLOB_HEADER, bytes, size);
        *out = b;
        *len = REGEX_BLOB_HEADER + size;
        rc = 0;
    }
    pcre2_serialize_free(bytes);
end:
    free(codes);
    free(l);
    return rc;
}

/* Take every regex from `blob` (made at build time by pdb_regex_serialize) when it was made for
 * exactly these regexes and this PCRE2 accepts it (its header checks the library's version and
 * build); decoding is a copy where compiling was a sixth of start-up. All or nothing: 1 when every
 * regex was taken, 0 when the blob does not fit (the caller then compiles them). No checksum, unlike
 * the prefilter's: the blob is in the binary's own read-only data, whole if the code is. */
static int regexes_from_blob(pdb *db, const unsigned char *blob, size_t len)
{
    if (len <= REGEX_BLOB_HEADER || get_u64(blob) != REGEX_BLOB_MAGIC)
        return 0;
    size_t n;
    regex_ref *l = regex_list(db, &n);
    pcre2_code **codes = NULL;
    int ok = 0;
    if (!l || n == 0 || get_u64(blob + 16) != n || get_u64(blob + 24) != len - REGEX_BLOB_HEADER ||
        get_u64(blob + 8) != regex_fingerprint(l, n) ||
        pcre2_serialize_get_number_of_codes(blob + REGEX_BLOB_HEADER) != (int32_t)n ||
        !(codes = malloc(n * sizeof *codes)))
        goto end;
    if (pcre2_serialize_decode(codes, (int32_t)n, blob + REGEX_BLOB_HEADER, NULL) != (int32_t)n)
        goto end;
    for (size_t i = 0; i < n; i++) {
        pcre2_code_free(l[i].re->code);
        l[i].re->code = codes[i];
        atomic_store(&l[i].re->jitted, 0);
    }
    ok = 1;
end:
    free(codes);
    free(l);
    return ok;
}

int pdb_config_serialize(const pdb *db, unsigned char **out, size_t *len)
{
    size_t n = 0;
    for (size_t i = 0; i < db->n_config_lits; i++)
        n += strlen(db->config_lits[i]) + 1;
    *len = n;
    if (!(*out = malloc(n ? n : 1)))
        return -1;
    n = 0;
    for (size_t i = 0; i < db->n_config_lits; i++) {
        size_t l = strlen(db->config_lits[i]) + 1;
        memcpy(*out + n, db->config_lits[i], l);
        n += l;
    }
    return 0;
}

int pdb_regexes_from_blob(pdb *db, const unsigned char *blob, size_t len) { return regexes_from_blob(db, blob, len); }

/* The traceback markers are fixed by Python's own output, not by the data files. */
const char PDB_TRACEBACK_LITERAL[] = "Traceback (most recent call last)";
const char PDB_FRAME_LITERAL[] = "File \"";
/* verl's step metrics, DeepSpeed's see_memory_usage, Megatron's report_memory, slime's print_memory and
 * report_peak_memory (match/telemetry.h) */
const char *const PDB_TELEMETRY_LITERALS[] = {"perf/max_memory_allocated_gb:", "perf/cpu_memory_used_gb:", "Max_MA ",
                                              "CPU Virtual Memory:", "memory (MB) | allocated:",
                                              "Memory-Usage ", "Peak-Memory ", NULL};
/* faulthandler's stack headers ("Stack (...)", "Current thread 0x... (...)"); a LIT_TRACEBACK target
 * with index 1. c10's C++ stacks share the words; phase_stack_header tells them apart. */
const char PDB_STACK_FIRST_LITERAL[] = "(most recent call first)";

static oomscan_status build_prefilters(pdb *db, oomscan_diag *diag);

/* The largest capture count a match data must hold: db->max_captures raised to code's groups + 1. */
static void note_captures(pdb *db, const pcre2_code *code)
{
    uint32_t caps = 0;
    pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &caps);
    if (caps + 1 > db->max_captures)
        db->max_captures = caps + 1;
}

/* The failure patterns' regexes (each pattern's own, its lists', its continuations') and the prefixes',
 * compiled unless `taken` (the embedded blob's), and the largest capture count noted. */
static oomscan_status compile_regexes(pdb *db, int taken, oomscan_diag *diag)
{
    oomscan_status st;
    for (size_t i = 0; i < db->n_patterns; i++) {
        pdb_pattern *p = &db->patterns[i];
        if (!taken && (st = compile_one(p->regex_src, &p->re, p->file, p->id, 0, diag)))
            return st;
        note_captures(db, p->re.code);
        for (size_t k = 0; k < p->n_lists; k++) {
            char where[300];
            if (!taken) {
                snprintf(where, sizeof where, "%s lists.%s", p->id, p->lists[k].key);
                if ((st = compile_one(p->lists[k].src, &p->lists[k].re, p->file, where, 0, diag)))
                    return st;
            }
            note_captures(db, p->lists[k].re.code);
        }
        for (size_t k = 0; k < p->n_conts; k++) {
            char where[300];
            if (!taken) {
                snprintf(where, sizeof where, "%s continuation.regex[%zu]", p->id, k);
                if ((st = compile_one(p->conts[k].src, &p->conts[k].re, p->file, where, 0, diag)))
                    return st;
            }
            note_captures(db, p->conts[k].re.code);
        }
    }
    for (size_t i = 0; i < db->n_prefixes; i++) {
        pdb_prefix *p = &db->prefixes[i];
        if (!taken && (st = compile_one(p->regex_src, &p->re, p->file, p->id, p->at_end ? 0 : PCRE2_ANCHORED, diag)))
            return st;
        note_captures(db, p->re.code);
    }
    return OOMSCAN_OK;
}

/* The literal table, from scratch: the patterns', markers', frameworks' and versions' literals (a
 * version rule's regex compiled here unless `taken`), the fixed ones (tracebacks, frames, telemetry)
 * and the settings the checklists name. */
static oomscan_status add_literals(pdb *db, int taken, oomscan_diag *diag)
{
    oomscan_status st;
    pdb_free_literals(db);
    for (size_t i = 0; i < db->n_patterns; i++)
        for (size_t k = 0; k < db->patterns[i].n_literals; k++)
            if ((st = add_literal(db, db->patterns[i].literals[k], LIT_PATTERN, i, diag)))
                return st;
    for (size_t i = 0; i < db->n_markers; i++)
        if ((st = add_literal(db, db->markers[i].literal, LIT_MARKER, i, diag)))
            return st;
    for (size_t i = 0; i < db->n_fw_rules; i++)
        if (!db->fw_rules[i].in_path && (st = add_literal(db, db->fw_rules[i].literal, LIT_FRAMEWORK, i, diag)))
            return st;
    for (size_t i = 0; i < db->n_versions; i++) {
        pdb_version_rule *r = &db->versions[i];
        char name[200];
        if (!taken) {
            pdb_version_rule_name(r, name, sizeof name);
            if ((st = compile_one(r->regex_src, &r->re, r->file, name, 0, diag)))
                return st;
        }
        if ((st = add_literal(db, r->literal, LIT_VERSION, i, diag)))
            return st;
    }
    if ((st = add_literal(db, PDB_TRACEBACK_LITERAL, LIT_TRACEBACK, 0, diag)) ||
        (st = add_literal(db, PDB_STACK_FIRST_LITERAL, LIT_TRACEBACK, 1, diag)) ||
        (st = add_literal(db, PDB_FRAME_LITERAL, LIT_FRAME, 0, diag)))
        return st;
    for (size_t i = 0; PDB_TELEMETRY_LITERALS[i]; i++)
        if ((st = add_literal(db, PDB_TELEMETRY_LITERALS[i], LIT_TELEMETRY, i, diag)))
            return st;
    if (atomic_load(&db->advice_pending)) { /* the settings the embedded checklists name, as built */
        for (size_t at = 0; at < embedded_config_len; at += strlen((const char *)embedded_config + at) + 1)
            if ((st = add_config_literal(db, (const char *)embedded_config + at, diag)))
                return st;
        return OOMSCAN_OK;
    }
    if ((st = db_resolve_checklists(db, diag)))
        return st;
    return add_config_literals(db, diag);
}

oomscan_status pdb_compile(pdb *db, oomscan_diag *diag)
{
    if (db->compiled)
        return OOMSCAN_OK;
    oomscan_status st;
    db->max_captures = 0;
    /* the embedded database's regexes were compiled at build time; any others are compiled here */
    int taken = db->regex_from_blob = regexes_from_blob(db, embedded_regex, embedded_regex_len);
    /* in dependency order: the hints read the compiled regexes, the prefilters the literal table */
    if ((st = compile_regexes(db, taken, diag)) || (st = db_build_hints(db, diag)) ||
        (st = add_literals(db, taken, diag)) || (st = build_prefilters(db, diag)))
        return st;
    db->compiled = 1;
    return OOMSCAN_OK;
}

/* ---- the prefilters --------------------------------------------------------------------- */

/* The embedded blob holds the three prefilters' serialized forms, each after its length (8 bytes,
 * little-endian), in the order of pf, pf_lean, pf_names; a missing or short one is compiled. */
#define PF_BLOBS 3

static int blob_part(const unsigned char *b, size_t len, int which, const unsigned char **part, size_t *part_len)
{
    size_t at = 0;
    for (int i = 0; i <= which; i++) {
        if (len - at < 8)
            return 0;
        uint64_t n = 0;
        for (int k = 7; k >= 0; k--)
            n = (n << 8) | b[at + (size_t)k];
        at += 8;
        if (n > len - at)
            return 0;
        *part = b + at;
        *part_len = (size_t)n;
        at += (size_t)n;
    }
    return 1;
}

int pdb_literal_settings_only(const pdb_literal *l)
{
    for (size_t k = 0; k < l->n_targets; k++)
        if (l->targets[k].kind != LIT_CONFIG)
            return 0;
    return l->n_targets > 0;
}

int pdb_literal_names_setting(const pdb_literal *l)
{
    for (size_t k = 0; k < l->n_targets; k++)
        if (l->targets[k].kind == LIT_CONFIG)
            return 1;
    return 0;
}

/* With settings named: pf_lean without the settings-only literals and pf_names over the literals
 * that name one, both reporting the full set's indices (from the embedded blob when it fits). Left
 * NULL when out of memory: the scanner then reads settings everywhere, with pf. */
static void build_settings_prefilters(pdb *db)
{
    size_t n = db->n_literals ? db->n_literals : 1, n_lean = 0, n_names = 0;
    const char **lean = malloc(2 * n * sizeof *lean), **names = lean ? lean + n : NULL;
    size_t *lean_ids = malloc(2 * n * sizeof *lean_ids), *name_ids = lean_ids ? lean_ids + n : NULL;
    if (!lean || !lean_ids) {
        free(lean);
        free(lean_ids);
        return;
    }
    for (size_t i = 0; i < db->n_literals; i++) {
        const pdb_literal *l = &db->literals[i];
        if (!pdb_literal_settings_only(l)) {
            lean[n_lean] = l->text;
            lean_ids[n_lean++] = i;
        }
        if (pdb_literal_names_setting(l)) {
            names[n_names] = l->text;
            name_ids[n_names++] = i;
        }
    }
    const unsigned char *part[PF_BLOBS] = {NULL, NULL, NULL};
    size_t part_len[PF_BLOBS] = {0, 0, 0};
    for (int k = 1; k < PF_BLOBS; k++)
        if (!blob_part(embedded_prefilter, embedded_prefilter_len, k, &part[k], &part_len[k]))
            part[k] = NULL, part_len[k] = 0;
    db->pf_lean = prefilter_new_ids(lean, lean_ids, n_lean, PREFILTER_AUTO, part[1], part_len[1]);
    db->pf_names = prefilter_new_ids(names, name_ids, n_names, PREFILTER_AUTO, part[2], part_len[2]);
    if (!db->pf_lean || !db->pf_names) {
        prefilter_free(db->pf_lean);
        prefilter_free(db->pf_names);
        db->pf_lean = db->pf_names = NULL;
    }
    free(lean);
    free(lean_ids);
}

/* Built at their first use, not at every start: loading them was a fifth of an empty input's run. */
static void settings_prefilters(const pdb *cdb)
{
    if (atomic_load_explicit(&cdb->settings_pf_ready, memory_order_acquire))
        return;
    pdb *db = (pdb *)cdb; /* lazily built state of a read-only database, under its lock */
    pthread_mutex_lock(&db->jit_mu);
    if (!atomic_load_explicit(&db->settings_pf_ready, memory_order_relaxed)) {
        if (db->n_config_lits > 0)
            build_settings_prefilters(db);
        atomic_store_explicit(&db->settings_pf_ready, 1, memory_order_release);
    }
    pthread_mutex_unlock(&db->jit_mu);
}

const prefilter *pdb_prefilter_lean(const pdb *db)
{
    settings_prefilters(db);
    return db->pf_lean;
}

const prefilter *pdb_prefilter_names(const pdb *db)
{
    settings_prefilters(db);
    return db->pf_names;
}

/* pf over every literal (from the embedded blob's first part when it fits). */
static oomscan_status build_prefilters(pdb *db, oomscan_diag *diag)
{
    const char **texts = malloc((db->n_literals ? db->n_literals : 1) * sizeof *texts);
    if (!texts)
        return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    for (size_t i = 0; i < db->n_literals; i++)
        texts[i] = db->literals[i].text;
    /* the embedded database's sets were compiled at build time; any other set is compiled here */
    const unsigned char *part = NULL;
    size_t part_len = 0;
    if (!blob_part(embedded_prefilter, embedded_prefilter_len, 0, &part, &part_len))
        part = NULL, part_len = 0;
    db->pf = prefilter_new_serialized(texts, db->n_literals, part, part_len);
    free(texts);
    atomic_store(&db->settings_pf_ready, 0); /* pf_lean and pf_names: at their first use */
    if (!db->pf)
        return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory building the prefilter");
    return OOMSCAN_OK;
}

int pdb_prefilter_serialize(const pdb *db, unsigned char **out, size_t *len)
{
    const prefilter *pfs[PF_BLOBS] = {db->pf, pdb_prefilter_lean(db), pdb_prefilter_names(db)};
    unsigned char *blob[PF_BLOBS] = {NULL, NULL, NULL};
    size_t n[PF_BLOBS] = {0, 0, 0}, total = 0;
    int rc = 0;
    for (int k = 0; k < PF_BLOBS; k++) {
        if (pfs[k] && prefilter_serialize(pfs[k], &blob[k], &n[k]) != 0)
            rc = -1; /* the portable engine: nothing to serialize */
        total += 8 + n[k];
    }
    *out = NULL;
    *len = 0;
    if (rc == 0 && (*out = malloc(total))) {
        size_t at = 0;
        for (int k = 0; k < PF_BLOBS; k++) {
            for (int b = 0; b < 8; b++)
                (*out)[at + (size_t)b] = (unsigned char)((uint64_t)n[k] >> (8 * b));
            at += 8;
            if (n[k])
                memcpy(*out + at, blob[k], n[k]);
            at += n[k];
        }
        *len = total;
    } else
        rc = -1;
    for (int k = 0; k < PF_BLOBS; k++)
        free(blob[k]);
    return rc;
}

