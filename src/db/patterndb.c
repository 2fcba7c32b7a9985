/* patterndb.c - loading, validating and compiling the data files of patterns/. */
#include "db/patterndb.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "match/config.h" /* layering: settings the checklists name become literals, spelled by config_literal() */
#include "db/embedded.h"

#define GROW(arr, n, cap_hint)                                                       \
    do {                                                                             \
        void *grown_ = realloc((arr), ((n) + 1) * sizeof *(arr));                    \
        if (!grown_)                                                                 \
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");          \
        (arr) = grown_;                                                              \
        memset(&(arr)[(n)], 0, sizeof *(arr));                                        \
        (void)(cap_hint);                                                            \
    } while (0)

pdb *pdb_new(void)
{
    pdb *db = calloc(1, sizeof(pdb));
    if (db && pthread_mutex_init(&db->jit_mu, NULL) != 0) {
        free(db);
        return NULL;
    }
    for (size_t c = 0; db && c < sizeof db->class_phase / sizeof db->class_phase[0]; c++)
        db->class_phase[c] = -1;
    return db;
}

static void free_pattern(pdb_pattern *p)
{
    free(p->id);
    free(p->title);
    free(p->file);
    free(p->regex_src);
    free(p->tb_value);
    for (size_t i = 0; i < p->n_literals; i++)
        free(p->literals[i]);
    free(p->literals);
    for (size_t i = 0; i < p->n_lists; i++) {
        free(p->lists[i].key);
        free(p->lists[i].src);
        pcre2_code_free(p->lists[i].re.code);
    }
    free(p->lists);
    for (size_t i = 0; i < p->n_units; i++) {
        free(p->units[i].name);
        free(p->units[i].unit);
    }
    free(p->units);
    for (size_t i = 0; i < p->n_conts; i++) {
        free(p->conts[i].src);
        pcre2_code_free(p->conts[i].re.code);
    }
    free(p->conts);
    cJSON_Delete(p->samples);
    pcre2_code_free(p->re.code);
    memset(p, 0, sizeof *p);
}

static void free_prefix(pdb_prefix *p)
{
    free(p->id);
    free(p->file);
    free(p->regex_src);
    cJSON_Delete(p->samples);
    pcre2_code_free(p->re.code);
    memset(p, 0, sizeof *p);
}

static void free_literals(pdb *db)
{
    for (size_t i = 0; i < db->n_literals; i++) {
        free(db->literals[i].text);
        free(db->literals[i].targets);
    }
    free(db->literals);
    db->literals = NULL;
    db->n_literals = 0;
    free(db->lit_slots);
    db->lit_slots = NULL;
    db->lit_slot_cap = 0;
    for (size_t i = 0; i < db->n_config_lits; i++)
        free(db->config_lits[i]);
    free(db->config_lits);
    db->config_lits = NULL;
    db->n_config_lits = 0;
    prefilter_free(db->pf);
    prefilter_free(db->pf_lean);
    prefilter_free(db->pf_names);
    db->pf = db->pf_lean = db->pf_names = NULL;
}

void pdb_free(pdb *db)
{
    if (!db)
        return;
    for (size_t i = 0; i < db->n_patterns; i++)
        free_pattern(&db->patterns[i]);
    free(db->patterns);
    for (size_t i = 0; i < db->n_prefixes; i++)
        free_prefix(&db->prefixes[i]);
    free(db->prefixes);
    for (size_t i = 0; i < db->n_frames; i++) {
        free(db->frames[i].value);
        free(db->frames[i].file);
        cJSON_Delete(db->frames[i].samples);
        cJSON_Delete(db->frames[i].not_samples);
    }
    free(db->frames);
    for (size_t i = 0; i < db->n_markers; i++) {
        free(db->markers[i].literal);
        free(db->markers[i].file);
        cJSON_Delete(db->markers[i].samples);
        cJSON_Delete(db->markers[i].not_samples);
    }
    free(db->markers);
    for (size_t i = 0; i < db->n_fw_rules; i++) {
        free(db->fw_rules[i].literal);
        free(db->fw_rules[i].file);
        cJSON_Delete(db->fw_rules[i].samples);
        cJSON_Delete(db->fw_rules[i].not_samples);
    }
    free(db->fw_rules);
    for (size_t i = 0; i < db->n_versions; i++) {
        free(db->versions[i].literal);
        free(db->versions[i].component);
        free(db->versions[i].regex_src);
        free(db->versions[i].file);
        cJSON_Delete(db->versions[i].samples);
        cJSON_Delete(db->versions[i].not_samples);
        pcre2_code_free(db->versions[i].re.code);
    }
    free(db->versions);
    for (size_t i = 0; i < db->n_xids; i++) {
        free(db->xids[i].meaning);
        free(db->xids[i].cause);
    }
    free(db->xids);
    for (size_t i = 0; i < db->n_checklists; i++) {
        free(db->checklists[i].id);
        free(db->checklists[i].file);
        cJSON_Delete(db->checklists[i].raw);
        cJSON_Delete(db->checklists[i].json);
    }
    free(db->checklists);
    cJSON_Delete(db->steps);
    cJSON_Delete(db->conclusions);
    free_literals(db);
    pthread_mutex_destroy(&db->jit_mu);
    free(db);
}

/* ---- helpers ----------------------------------------------------------------------------- */

static const char *jstr(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static oomscan_status need_str(const cJSON *obj, const char *key, const char *file, const char *id,
                               char **out, oomscan_diag *diag)
{
    const char *s = jstr(obj, key);
    if (!s || !*s)
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: missing or empty string \"%s\"", id, key);
    if (!(*out = strdup(s)))
        return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
    return OOMSCAN_OK;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* Move `item` out of the document being loaded into the database. The document is pdb_load_text's,
 * deleted once loaded, so the parts kept (samples, checklists, steps) are moved, not copied: copying
 * them was a tenth of start-up. */
static cJSON *take(const cJSON *parent, const cJSON *item)
{
    return cJSON_DetachItemViaPointer((cJSON *)parent, (cJSON *)item);
}

static int framework_of(const cJSON *obj, const char *key)
{
    const char *s = jstr(obj, key);
    return s ? tax_framework_from_name(s) : -1;
}

/* ---- one failure pattern ------------------------------------------------------------------ */

static oomscan_status parse_pattern(pdb_pattern *p, const cJSON *j, const char *file, oomscan_diag *diag)
{
    oomscan_status st;
    const char *id = jstr(j, "id");
    if (!id || !*id)
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "a pattern has no \"id\"");
    if ((st = need_str(j, "id", file, id, &p->id, diag)) || (st = need_str(j, "regex", file, id, &p->regex_src, diag)))
        return st;
    const char *cls = jstr(j, "class");
    int c = tax_class_from_name(cls);
    if (c < 0)
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: unknown class \"%s\" (see docs/taxonomy.md)", id,
                        cls ? cls : "(none)");
    p->cls = (tax_class)c;
    p->title = dup_or_null(jstr(j, "title"));
    p->file = strdup(file);
    if (!p->file)
        return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
    p->engine = framework_of(j, "engine");
    const cJSON *sev = cJSON_GetObjectItemCaseSensitive(j, "severity");
    p->severity = cJSON_IsNumber(sev) ? sev->valueint : 50;
    p->echo = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "echo"));
    p->phase = -1;
    const char *ph = jstr(j, "phase");
    if (ph && (p->phase = tax_phase_from_name(ph)) < 0)
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: unknown phase \"%s\"", id, ph);
    const char *pc = jstr(j, "phase_confidence");
    if (pc && (!ph || (strcmp(pc, "weak") != 0 && strcmp(pc, "strong") != 0)))
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file,
                        "%s: \"phase_confidence\" is \"strong\" or \"weak\", and goes with a \"phase\"", id);
    p->phase_weak = pc && !strcmp(pc, "weak");

    const cJSON *lits = cJSON_GetObjectItemCaseSensitive(j, "literals");
    if (!cJSON_IsArray(lits) || cJSON_GetArraySize(lits) == 0)
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: \"literals\" must be a non-empty array", id);
    p->literals = calloc((size_t)cJSON_GetArraySize(lits), sizeof *p->literals);
    if (!p->literals)
        return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
    const cJSON *it;
    cJSON_ArrayForEach(it, lits)
    {
        if (!cJSON_IsString(it) || strlen(it->valuestring) < 4)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: each literal must be a string of 4 bytes or more",
                            id);
        if (!(p->literals[p->n_literals++] = strdup(it->valuestring)))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
    }

    const cJSON *lists = cJSON_GetObjectItemCaseSensitive(j, "lists");
    if (lists && cJSON_IsObject(lists)) {
        p->lists = calloc((size_t)cJSON_GetArraySize(lists) + 1, sizeof *p->lists);
        if (!p->lists)
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        cJSON_ArrayForEach(it, lists)
        {
            if (!cJSON_IsString(it))
                return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: lists.%s must be a regex string", id,
                                it->string);
            pdb_list *l = &p->lists[p->n_lists++];
            if (!(l->key = strdup(it->string)) || !(l->src = strdup(it->valuestring)))
                return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        }
    }
    const cJSON *units = cJSON_GetObjectItemCaseSensitive(j, "units");
    if (units && cJSON_IsObject(units)) {
        p->units = calloc((size_t)cJSON_GetArraySize(units) + 1, sizeof *p->units);
        if (!p->units)
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        cJSON_ArrayForEach(it, units)
        {
            if (!cJSON_IsString(it))
                return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: units.%s must be a string", id, it->string);
            pdb_unit *u = &p->units[p->n_units++];
            if (!(u->name = strdup(it->string)) || !(u->unit = strdup(it->valuestring)))
                return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        }
    }
    const cJSON *cont = cJSON_GetObjectItemCaseSensitive(j, "continuation");
    if (cont) {
        const cJSON *nl = cJSON_GetObjectItemCaseSensitive(cont, "lines");
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(cont, "regex");
        if (!cJSON_IsNumber(nl) || nl->valuedouble < 1 || nl->valuedouble > PDB_CONT_MAX || !cJSON_IsArray(res) ||
            cJSON_GetArraySize(res) == 0)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file,
                            "%s: \"continuation\" needs \"lines\" (1 to %d) and a non-empty \"regex\" array", id,
                            PDB_CONT_MAX);
        p->cont_lines = (int)nl->valuedouble;
        p->cont_required = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cont, "required"));
        p->conts = calloc((size_t)cJSON_GetArraySize(res), sizeof *p->conts);
        if (!p->conts)
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        cJSON_ArrayForEach(it, res)
        {
            if (!cJSON_IsString(it))
                return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: continuation.regex holds a non-string", id);
            if (!(p->conts[p->n_conts++].src = strdup(it->valuestring)))
                return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        }
    }
    const cJSON *tb = cJSON_GetObjectItemCaseSensitive(j, "in_traceback");
    if (tb) {
        static const char *const kinds[] = {"func", "code", "path"}; /* pdb_frame_kind's order */
        const cJSON *v = cJSON_IsObject(tb) ? tb->child : NULL;
        int k = -1;
        for (int i = 0; v && i < 3; i++)
            if (!strcmp(v->string, kinds[i]))
                k = i;
        if (!v || v->next || k < 0 || !cJSON_IsString(v) || !*v->valuestring)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file,
                            "%s: \"in_traceback\" must be an object with one of \"path\", \"func\" or \"code\" "
                            "(a non-empty string)", id);
        p->tb_kind = k;
        if (!(p->tb_value = strdup(v->valuestring)))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
    }
    const cJSON *samples = cJSON_GetObjectItemCaseSensitive(j, "samples");
    if (samples)
        p->samples = take(j, samples);
    return OOMSCAN_OK;
}

/* The patterns' frame conditions as hints (pdb_hint): each pattern's tb_hint. */
static oomscan_status build_hints(pdb *db, oomscan_diag *diag)
{
    db->n_hints = 0;
    for (size_t i = 0; i < db->n_patterns; i++) {
        pdb_pattern *p = &db->patterns[i];
        p->tb_hint = -1;
        if (!p->tb_value)
            continue;
        size_t h = 0;
        while (h < db->n_hints && !(db->hints[h].kind == (pdb_frame_kind)p->tb_kind && !strcmp(db->hints[h].value, p->tb_value)))
            h++;
        if (h == db->n_hints) {
            if (h == PDB_HINTS)
                return diag_set(diag, OOMSCAN_ERR_FORMAT, p->file, "%s: more than %d distinct \"in_traceback\" "
                                "conditions in the database", p->id, PDB_HINTS);
            db->hints[h].kind = (pdb_frame_kind)p->tb_kind;
            db->hints[h].value = p->tb_value;
            db->n_hints++;
        }
        p->tb_hint = (int)h;
    }
    return OOMSCAN_OK;
}

static oomscan_status load_patterns(pdb *db, const cJSON *doc, const char *file, oomscan_diag *diag)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, "patterns");
    if (!cJSON_IsArray(arr))
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "\"patterns\" must be an array");
    const cJSON *j;
    cJSON_ArrayForEach(j, arr)
    {
        pdb_pattern p = {0};
        oomscan_status st = parse_pattern(&p, j, file, diag);
        if (st) {
            free_pattern(&p);
            return st;
        }
        size_t slot = db->n_patterns;
        for (size_t i = 0; i < db->n_patterns; i++)
            if (strcmp(db->patterns[i].id, p.id) == 0)
                slot = i;
        if (slot < db->n_patterns) {
            /* Same id in a later file: the later one replaces (a user's --patterns override). */
            free_pattern(&db->patterns[slot]);
            db->patterns[slot] = p;
            continue;
        }
        void *grown = realloc(db->patterns, (db->n_patterns + 1) * sizeof *db->patterns);
        if (!grown) {
            free_pattern(&p);
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        }
        db->patterns = grown;
        db->patterns[db->n_patterns++] = p;
    }
    return OOMSCAN_OK;
}

static oomscan_status load_prefixes(pdb *db, const cJSON *doc, const char *file, oomscan_diag *diag)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, "prefixes");
    if (!cJSON_IsArray(arr))
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "\"prefixes\" must be an array");
    const cJSON *j;
    cJSON_ArrayForEach(j, arr)
    {
        pdb_prefix p = {0};
        const char *id = jstr(j, "id");
        oomscan_status st;
        if (!id)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "a prefix has no \"id\"");
        if ((st = need_str(j, "id", file, id, &p.id, diag)) ||
            (st = need_str(j, "regex", file, id, &p.regex_src, diag))) {
            free_prefix(&p);
            return st;
        }
        const char *at = jstr(j, "at");
        p.at_end = at && strcmp(at, "end") == 0;
        p.file = strdup(file);
        const cJSON *samples = cJSON_GetObjectItemCaseSensitive(j, "samples");
        if (samples)
            p.samples = take(j, samples);
        if (!p.file) {
            free_prefix(&p);
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        }
        size_t slot = db->n_prefixes;
        for (size_t i = 0; i < db->n_prefixes; i++)
            if (strcmp(db->prefixes[i].id, p.id) == 0)
                slot = i;
        if (slot == db->n_prefixes) {
            void *grown = realloc(db->prefixes, (db->n_prefixes + 1) * sizeof *db->prefixes);
            if (!grown) {
                free_prefix(&p);
                return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
            }
            db->prefixes = grown;
            db->n_prefixes++;
        } else {
            free_prefix(&db->prefixes[slot]);
        }
        db->prefixes[slot] = p;
    }
    return OOMSCAN_OK;
}

static int phase_of(const cJSON *obj, int *ok)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "phase");
    *ok = 1;
    if (!v || cJSON_IsNull(v))
        return -1;
    int ph = cJSON_IsString(v) ? tax_phase_from_name(v->valuestring) : -1;
    if (ph < 0)
        *ok = 0;
    return ph;
}

/* A context rule's name in messages: its section and the value that identifies it, as written in
 * the file (an index would mean nothing to the person editing it). */
static void rule_name(char *out, size_t cap, const char *section, const char *kind, const char *value)
{
    snprintf(out, cap, "%s %s%s\"%.120s\"", section, kind ? kind : "", kind ? " " : "", value ? value : "?");
}

/* The framework named by `key` of `obj`: 1 and *fw (-1 when absent), 0 when it names none we know. */
static int known_framework(const cJSON *obj, const char *key, int *fw)
{
    const char *s = jstr(obj, key);
    *fw = s ? tax_framework_from_name(s) : -1;
    return !s || *fw >= 0;
}

/* A context rule's "samples" and "not_samples": absent, or arrays kept for --check-patterns. */
static oomscan_status keep_samples(const cJSON *j, const char *file, const char *name, char **file_out,
                                   cJSON **yes, cJSON **no, oomscan_diag *diag)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "samples");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(j, "not_samples");
    if ((s && !cJSON_IsArray(s)) || (n && !cJSON_IsArray(n)))
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: \"samples\" and \"not_samples\" must be arrays", name);
    if (!(*file_out = strdup(file)))
        return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
    if (s)
        *yes = take(j, s);
    if (n)
        *no = take(j, n);
    return OOMSCAN_OK;
}

void pdb_frame_rule_name(const pdb_frame_rule *r, char *out, size_t cap)
{
    static const char *const kinds[] = {"func", "code", "path"};
    rule_name(out, cap, r->fallback ? "fallback_frames" : "frames", kinds[r->kind], r->value);
}

void pdb_marker_name(const pdb_marker *m, char *out, size_t cap) { rule_name(out, cap, "markers", NULL, m->literal); }

void pdb_fw_rule_name(const pdb_fw_rule *r, char *out, size_t cap) { rule_name(out, cap, "rules", NULL, r->literal); }

void pdb_version_rule_name(const pdb_version_rule *r, char *out, size_t cap)
{
    rule_name(out, cap, "rules", NULL, r->literal);
}

static oomscan_status load_frames(pdb *db, const cJSON *doc, const char *file, int fallback, oomscan_diag *diag)
{
    static const char *const kinds[] = {"func", "code", "path"};
    static const char *const sections[] = {"frames", "fallback_frames", "weak_frames"};
    const char *section = sections[fallback];
    const cJSON *j;
    cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(doc, section))
    {
        int ok, fw, kind = -1;
        const char *value = NULL;
        for (int k = 0; k < 3; k++)
            if (jstr(j, kinds[k])) {
                kind = k;
                value = jstr(j, kinds[k]);
            }
        char name[200];
        rule_name(name, sizeof name, section, kind >= 0 ? kinds[kind] : NULL, value);
        int ph = phase_of(j, &ok);
        if (kind < 0 || !*value)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: needs one of func/code/path", name);
        if (!ok || ph < 0)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: unknown or missing phase \"%s\" (see docs/taxonomy.md)",
                            name, jstr(j, "phase") ? jstr(j, "phase") : "(none)");
        if (!known_framework(j, "framework", &fw))
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: unknown framework \"%s\"", name, jstr(j, "framework"));
        GROW(db->frames, db->n_frames, 0);
        pdb_frame_rule *r = &db->frames[db->n_frames++];
        r->kind = (pdb_frame_kind)kind;
        r->fallback = fallback;
        r->phase = ph;
        r->framework = fw;
        if (!(r->value = strdup(value)))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        oomscan_status st = keep_samples(j, file, name, &r->file, &r->samples, &r->not_samples, diag);
        if (st)
            return st;
    }
    return OOMSCAN_OK;
}

static oomscan_status load_phases(pdb *db, const cJSON *doc, const char *file, oomscan_diag *diag)
{
    oomscan_status st;
    if ((st = load_frames(db, doc, file, 0, diag)) || (st = load_frames(db, doc, file, 1, diag)) ||
        (st = load_frames(db, doc, file, 2, diag)))
        return st;
    const cJSON *j;
    cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(doc, "markers"))
    {
        int ok, fw;
        const char *lit = jstr(j, "literal");
        char name[200];
        rule_name(name, sizeof name, "markers", NULL, lit);
        int ph = phase_of(j, &ok);
        if (!lit || strlen(lit) < 4)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: needs a literal of 4 bytes or more", name);
        if (!ok)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: unknown phase \"%s\" (a known one, or null)", name,
                            jstr(j, "phase") ? jstr(j, "phase") : "(not a string)");
        if (!known_framework(j, "framework", &fw))
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: unknown framework \"%s\"", name, jstr(j, "framework"));
        GROW(db->markers, db->n_markers, 0);
        pdb_marker *m = &db->markers[db->n_markers++];
        m->phase = ph;
        m->framework = fw;
        const char *conf = jstr(j, "confidence");
        m->weak = conf && strcmp(conf, "weak") == 0;
        const cJSON *reach = cJSON_GetObjectItemCaseSensitive(j, "reach");
        m->reach = cJSON_IsNumber(reach) && reach->valuedouble > 0 ? (long)reach->valuedouble : 0;
        m->late = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "late"));
        if (m->late && (ph < 0 || m->weak || !m->reach))
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "marker %d: a late marker needs a phase and a reach",
                            (int)db->n_markers - 1);
        if ((conf && !m->weak && strcmp(conf, "strong") != 0) || (m->weak && ph < 0))
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file,
                            "marker %d: confidence must be \"strong\" or \"weak\" (and a weak marker needs a phase)",
                            (int)db->n_markers - 1);
        if (!(m->literal = strdup(lit)))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        if ((st = keep_samples(j, file, name, &m->file, &m->samples, &m->not_samples, diag)))
            return st;
    }
    /* A class whose message alone points to a phase, one inference step away (a watchdog timeout with
     * nothing else is a collective: communication, weak). */
    cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(doc, "class_phases"))
    {
        int ok, ph = phase_of(j, &ok);
        const char *cn = jstr(j, "class");
        int c = cn ? tax_class_from_name(cn) : -1;
        if (c < 0 || c >= 32 || !ok || ph < 0)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "class_phases: needs a known class and phase");
        db->class_phase[c] = ph;
    }
    return OOMSCAN_OK;
}

static oomscan_status load_frameworks(pdb *db, const cJSON *doc, const char *file, oomscan_diag *diag)
{
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(doc, "rules");
    if (!cJSON_IsArray(rules))
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "\"rules\" must be an array");
    const cJSON *j;
    cJSON_ArrayForEach(j, rules)
    {
        const char *lit = jstr(j, "literal");
        int fw;
        const char *where = jstr(j, "where");
        char name[200];
        rule_name(name, sizeof name, "rules", NULL, lit);
        if (!lit || strlen(lit) < 4)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: needs a literal of 4 bytes or more", name);
        if (!known_framework(j, "framework", &fw) || fw < 0)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: unknown or missing framework \"%s\"", name,
                            jstr(j, "framework") ? jstr(j, "framework") : "(none)");
        if (where && strcmp(where, "path") != 0 && strcmp(where, "line") != 0)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: \"where\" is \"path\" or \"line\", not \"%s\"", name, where);
        GROW(db->fw_rules, db->n_fw_rules, 0);
        pdb_fw_rule *r = &db->fw_rules[db->n_fw_rules++];
        r->framework = fw;
        r->in_path = where && strcmp(where, "path") == 0;
        if (!(r->literal = strdup(lit)))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        oomscan_status st = keep_samples(j, file, name, &r->file, &r->samples, &r->not_samples, diag);
        if (st)
            return st;
    }
    return OOMSCAN_OK;
}

/* Version rules (versions.json): a literal, the component it names and the regex that reads it. */
static oomscan_status load_versions(pdb *db, const cJSON *doc, const char *file, oomscan_diag *diag)
{
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(doc, "rules");
    if (!cJSON_IsArray(rules))
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "\"rules\" must be an array");
    const cJSON *j;
    cJSON_ArrayForEach(j, rules)
    {
        const char *lit = jstr(j, "literal"), *comp = jstr(j, "component"), *re = jstr(j, "regex");
        char name[200];
        rule_name(name, sizeof name, "rules", NULL, lit);
        if (!lit || strlen(lit) < 4 || !comp || !*comp || !re || !strstr(re, "(?<version>"))
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file,
                            "%s: needs a literal of 4 bytes or more, a \"component\" and a \"regex\" with a "
                            "(?<version>...) group", name);
        GROW(db->versions, db->n_versions, 0);
        pdb_version_rule *r = &db->versions[db->n_versions++];
        if (!(r->literal = strdup(lit)) || !(r->component = strdup(comp)) || !(r->regex_src = strdup(re)))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        oomscan_status st = keep_samples(j, file, name, &r->file, &r->samples, &r->not_samples, diag);
        if (st)
            return st;
    }
    return OOMSCAN_OK;
}

/* The Xid catalog: a later file's entry for a code replaces the earlier one (a user's folder can
 * correct a meaning). */
static oomscan_status load_xids(pdb *db, const cJSON *doc, const char *file, oomscan_diag *diag)
{
    const cJSON *codes = cJSON_GetObjectItemCaseSensitive(doc, "codes");
    if (!cJSON_IsArray(codes))
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "\"codes\" must be an array");
    static const char *const causes[] = {"hardware", "application", "driver", "follow_on"};
    const cJSON *j;
    cJSON_ArrayForEach(j, codes)
    {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, "xid");
        const char *meaning = jstr(j, "meaning"), *cause = jstr(j, "cause");
        int known = 0;
        for (size_t k = 0; cause && k < sizeof causes / sizeof *causes; k++)
            known |= strcmp(cause, causes[k]) == 0;
        if (!cJSON_IsNumber(x) || x->valuedouble < 0 || !meaning || !*meaning || !known)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file,
                            "Xid entry %d: needs a numeric \"xid\", a \"meaning\" and a \"cause\" of hardware, "
                            "application, driver or follow_on", (int)db->n_xids);
        long code = (long)x->valuedouble;
        size_t slot = db->n_xids;
        for (size_t i = 0; i < db->n_xids; i++)
            if (db->xids[i].code == code)
                slot = i;
        if (slot == db->n_xids) {
            GROW(db->xids, db->n_xids, 0);
            db->n_xids++;
        } else {
            free(db->xids[slot].meaning);
            free(db->xids[slot].cause);
        }
        pdb_xid *e = &db->xids[slot];
        e->code = code;
        e->meaning = strdup(meaning);
        e->cause = strdup(cause);
        if (!e->meaning || !e->cause)
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
    }
    return OOMSCAN_OK;
}

const pdb_xid *pdb_xid_lookup(const pdb *db, long code)
{
    for (size_t i = 0; i < db->n_xids; i++)
        if (db->xids[i].code == code)
            return &db->xids[i];
    return NULL;
}

static oomscan_status load_checklist(pdb *db, cJSON *doc, const char *file, oomscan_diag *diag)
{
    const char *id = jstr(doc, "id");
    if (!id || !*id)
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "checklist has no \"id\"");
    const cJSON *applies = cJSON_GetObjectItemCaseSensitive(doc, "applies");
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(doc, "steps");
    if (!cJSON_IsArray(applies) || !cJSON_IsArray(steps) || cJSON_GetArraySize(steps) == 0)
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: needs \"applies\" and a non-empty \"steps\"", id);
    const cJSON *a;
    cJSON_ArrayForEach(a, applies)
    {
        const char *c = jstr(a, "class"), *ph = jstr(a, "phase");
        if (tax_class_from_name(c) < 0 || !ph || (strcmp(ph, "*") != 0 && tax_phase_from_name(ph) < 0))
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: \"applies\" has an unknown class or phase", id);
    }
    size_t slot = db->n_checklists;
    for (size_t i = 0; i < db->n_checklists; i++)
        if (strcmp(db->checklists[i].id, id) == 0)
            slot = i;
    if (slot == db->n_checklists) {
        GROW(db->checklists, db->n_checklists, 0);
        db->n_checklists++;
    } else {
        free(db->checklists[slot].id);
        free(db->checklists[slot].file);
        cJSON_Delete(db->checklists[slot].raw);
        cJSON_Delete(db->checklists[slot].json);
    }
    pdb_checklist *c = &db->checklists[slot];
    c->id = strdup(id);
    c->file = strdup(file);
    /* the whole document is the checklist: its members move to a fresh object */
    if ((c->raw = cJSON_CreateObject())) {
        c->raw->child = doc->child;
        doc->child = NULL;
    }
    c->json = NULL;
    if (!c->id || !c->file || !c->raw)
        return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
    return OOMSCAN_OK;
}

/* Entries of `arr` keyed by their "id" into *into (created on first use); a later entry of the same id
 * replaces the earlier. `need` names a second key each entry must have. */
static oomscan_status load_keyed(cJSON **into, const cJSON *arr, const char *need, const char *file, oomscan_diag *diag)
{
    if (!cJSON_IsArray(arr))
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "needs an array of entries");
    if (!*into && !(*into = cJSON_CreateObject()))
        return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
    const cJSON *st, *next;
    for (st = arr->child; st; st = next) {
        next = st->next; /* st moves out of arr below */
        const char *id = jstr(st, "id");
        if (!id || !*id || !jstr(st, need))
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: needs \"id\" and \"%s\"", id ? id : "(no id)", need);
        cJSON *copy = take(arr, st);
        if (cJSON_GetObjectItemCaseSensitive(*into, id))
            cJSON_ReplaceItemInObjectCaseSensitive(*into, id, copy);
        else
            cJSON_AddItemToObject(*into, id, copy);
    }
    return OOMSCAN_OK;
}

/* The step library: steps several checklists share, defined once (a later file's step replaces an
 * earlier one of the same id, as a later checklist replaces one). */
static oomscan_status load_steps(pdb *db, cJSON *doc, const char *file, oomscan_diag *diag)
{
    return load_keyed(&db->steps, cJSON_GetObjectItemCaseSensitive(doc, "steps"), "do", file, diag);
}

/* The diagnosis wording: one entry per conclusion the arithmetic of src/advice/diagnosis.c can reach. */
static oomscan_status load_conclusions(pdb *db, cJSON *doc, const char *file, oomscan_diag *diag)
{
    return load_keyed(&db->conclusions, cJSON_GetObjectItemCaseSensitive(doc, "conclusions"), "what", file, diag);
}

/* One checklist step from its entry, appended to `steps`: "id" (the library's step), {"use": id,
 * key: value...} (the library's step with those keys replaced, e.g. a phase's own "why"), or a whole
 * step written in place. The step is made of references (cJSON's IsReference items) to the library's
 * and the entry's values, not copies: copying every step of every checklist was a third of
 * start-up. Both stay in the database as long as the step does (pdb_load_text drops resolved steps
 * before it changes anything). Returns 0, 1 when out of memory, 2 with `*missing` set. */
static int resolve_step(const pdb *db, cJSON *steps, const cJSON *entry, const char **missing)
{
    const char *use = cJSON_IsString(entry) ? entry->valuestring : jstr(entry, "use");
    if (!use)
        return !cJSON_AddItemReferenceToArray(steps, (cJSON *)entry);
    const cJSON *lib = cJSON_GetObjectItemCaseSensitive(db->steps, use);
    if (!lib) {
        *missing = use;
        return 2;
    }
    if (!cJSON_IsObject(entry))
        return !cJSON_AddItemReferenceToArray(steps, (cJSON *)lib);
    cJSON *st = cJSON_CreateObject();
    if (!st || !cJSON_AddItemToArray(steps, st)) {
        cJSON_Delete(st);
        return 1;
    }
    /* the library's keys in its order, each replaced by the entry's when it has one; then the
     * entry's other keys: the order replacing in place and appending gave */
    const cJSON *kv;
    cJSON_ArrayForEach(kv, lib)
    {
        const cJSON *own = strcmp(kv->string, "use") != 0 ? cJSON_GetObjectItemCaseSensitive(entry, kv->string) : NULL;
        if (!cJSON_AddItemReferenceToObject(st, kv->string, (cJSON *)(own ? own : kv)))
            return 1;
    }
    cJSON_ArrayForEach(kv, entry)
    {
        if (strcmp(kv->string, "use") != 0 && !cJSON_GetObjectItemCaseSensitive(lib, kv->string) &&
            !cJSON_AddItemReferenceToObject(st, kv->string, (cJSON *)kv))
            return 1;
    }
    return 0;
}

/* Every checklist's steps taken from the library, so that later readers see whole steps. */
static oomscan_status resolve_checklists(pdb *db, oomscan_diag *diag)
{
    for (size_t i = 0; i < db->n_checklists; i++) {
        pdb_checklist *c = &db->checklists[i];
        cJSON_Delete(c->json);
        /* the document's other keys referenced, its "steps" resolved */
        if (!(c->json = cJSON_CreateObject()))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, c->file, "out of memory");
        cJSON *steps = NULL;
        cJSON *kv;
        cJSON_ArrayForEach(kv, c->raw)
        {
            int ok;
            if (strcmp(kv->string, "steps") == 0)
                ok = !steps && (steps = cJSON_AddArrayToObject(c->json, kv->string)) != NULL;
            else
                ok = cJSON_AddItemReferenceToObject(c->json, kv->string, kv);
            if (!ok)
                return diag_set(diag, OOMSCAN_ERR_NOMEM, c->file, "out of memory");
        }
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(c->raw, "steps"))
        {
            const char *missing = NULL;
            int r = resolve_step(db, steps, e, &missing);
            if (r == 2)
                return diag_set(diag, OOMSCAN_ERR_FORMAT, c->file, "%s: step \"%s\" is not in the step library "
                                "(patterns/remediation/steps.json)", c->id, missing);
            if (r)
                return diag_set(diag, OOMSCAN_ERR_NOMEM, c->file, "out of memory");
        }
    }
    return OOMSCAN_OK;
}

/* One document into the database (pdb_load_text without its bookkeeping). */
static oomscan_status load_doc(pdb *db, const char *file, const char *text, size_t len, oomscan_diag *diag)
{
    cJSON *doc = cJSON_ParseWithLength(text, len);
    if (!doc) {
        const char *at = cJSON_GetErrorPtr();
        long off = (at && at >= text && at <= text + len) ? (long)(at - text) : -1;
        int line = 1;
        for (long i = 0; i < off; i++)
            line += text[i] == '\n';
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "not valid JSON (near line %d)", line);
    }
    const char *format = jstr(doc, "format");
    oomscan_status st;
    if (!format)
        st = diag_set(diag, OOMSCAN_ERR_FORMAT, file, "no \"format\" key");
    else if (strcmp(format, "oomscan-patterns/1") == 0)
        st = load_patterns(db, doc, file, diag);
    else if (strcmp(format, "oomscan-prefixes/1") == 0)
        st = load_prefixes(db, doc, file, diag);
    else if (strcmp(format, "oomscan-phases/1") == 0)
        st = load_phases(db, doc, file, diag);
    else if (strcmp(format, "oomscan-frameworks/1") == 0)
        st = load_frameworks(db, doc, file, diag);
    else if (strcmp(format, "oomscan-remediation/1") == 0)
        st = load_checklist(db, doc, file, diag);
    else if (strcmp(format, "oomscan-xid/1") == 0)
        st = load_xids(db, doc, file, diag);
    else if (strcmp(format, "oomscan-versions/1") == 0)
        st = load_versions(db, doc, file, diag);
    else if (strcmp(format, "oomscan-steps/1") == 0)
        st = load_steps(db, doc, file, diag);
    else if (strcmp(format, "oomscan-diagnosis/1") == 0)
        st = load_conclusions(db, doc, file, diag);
    else
        st = diag_set(diag, OOMSCAN_ERR_FORMAT, file, "unknown format \"%s\" (this oomscan reads "
                      "oomscan-patterns/1, -prefixes/1, -phases/1, -frameworks/1, -remediation/1, -steps/1, -diagnosis/1, -xid/1, -versions/1)", format);
    cJSON_Delete(doc);
    return st;
}

/* The embedded files under remediation/ (checklists, the step library, the diagnosis wording): only
 * a finding's advice reads them. */
static int is_advice_file(const embedded_file *f) { return strncmp(f->name, "remediation/", 12) == 0; }

static oomscan_status load_embedded_file(pdb *db, const embedded_file *f, int lean, oomscan_diag *diag)
{
    char name[300];
    snprintf(name, sizeof name, "patterns/%s", f->name);
    return load_doc(db, name, lean ? f->lean : f->data, lean ? f->lean_len : f->len, diag);
}

/* The advice files a lean load left for later, now. */
static oomscan_status load_advice_files(pdb *db, oomscan_diag *diag)
{
    for (size_t i = 0; i < embedded_count; i++)
        if (is_advice_file(&embedded_files[i])) {
            oomscan_status st = load_embedded_file(db, &embedded_files[i], 1, diag);
            if (st)
                return st;
        }
    return OOMSCAN_OK;
}

/* Before loading more: what a lean load left for later comes first (a document may replace one of
 * its steps or checklists), and resolved steps go (they refer to what may be replaced). */
static oomscan_status begin_load(pdb *db, oomscan_diag *diag)
{
    if (atomic_load(&db->advice_pending)) {
        oomscan_status st = load_advice_files(db, diag);
        if (st)
            return st;
        atomic_store(&db->advice_pending, 0);
    }
    db->compiled = 0;
    for (size_t i = 0; i < db->n_checklists; i++) {
        cJSON_Delete(db->checklists[i].json);
        db->checklists[i].json = NULL;
    }
    return OOMSCAN_OK;
}

oomscan_status pdb_load_text(pdb *db, const char *file, const char *text, size_t len, oomscan_diag *diag)
{
    oomscan_status st = begin_load(db, diag);
    return st ? st : load_doc(db, file, text, len, diag);
}

static oomscan_status load_embedded(pdb *db, int lean, oomscan_diag *diag)
{
    oomscan_status bst = begin_load(db, diag);
    if (bst)
        return bst;
    /* Lean, the advice files wait for their first use (pdb_load_advice): a scan without findings
     * never parses them, half of the data. The settings they name are literals of the prefilter,
     * needed at once: the build wrote them out (embedded_config). */
    int defer = lean && embedded_config_len > 0 && db->n_patterns == 0 && db->n_checklists == 0;
    for (size_t i = 0; i < embedded_count; i++) {
        if (defer && is_advice_file(&embedded_files[i]))
            continue;
        oomscan_status st = load_embedded_file(db, &embedded_files[i], lean, diag);
        if (st)
            return st;
    }
    if (defer)
        atomic_store(&db->advice_pending, 1);
    return OOMSCAN_OK;
}

void pdb_load_advice(const pdb *cdb)
{
    pdb *db = (pdb *)cdb; /* the advice is part of the database, read as if it had been there */
    if (!atomic_load_explicit(&db->advice_pending, memory_order_acquire))
        return;
    pthread_mutex_lock(&db->jit_mu);
    if (atomic_load_explicit(&db->advice_pending, memory_order_relaxed)) {
        /* The embedded files were checked when built; only memory can fail here, and then the
         * advice is what loaded. */
        oomscan_diag d = {0};
        if (load_advice_files(db, &d) == OOMSCAN_OK && db->compiled)
            (void)resolve_checklists(db, &d);
        atomic_store_explicit(&db->advice_pending, 0, memory_order_release);
    }
    pthread_mutex_unlock(&db->jit_mu);
}

const cJSON *pdb_conclusions(const pdb *db)
{
    pdb_load_advice(db);
    return db->conclusions;
}

oomscan_status pdb_load_embedded(pdb *db, oomscan_diag *diag) { return load_embedded(db, 0, diag); }
oomscan_status pdb_load_embedded_lean(pdb *db, oomscan_diag *diag) { return load_embedded(db, 1, diag); }

/* ---- directories -------------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static oomscan_status load_file(pdb *db, const char *path, oomscan_diag *diag)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return diag_set(diag, OOMSCAN_ERR_IO, path, "cannot open: %s", strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    oomscan_status st = OOMSCAN_OK;
    while (buf) {
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (len < cap)
            break;
        if (cap >= (64u << 20)) { /* a data file this big is a mistake, not a database */
            st = diag_set(diag, OOMSCAN_ERR_LIMIT, path, "data file larger than 64 MiB");
            break;
        }
        char *grown = realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf)
        return diag_set(diag, OOMSCAN_ERR_NOMEM, path, "out of memory");
    if (!st && err)
        st = diag_set(diag, OOMSCAN_ERR_IO, path, "read error");
    if (!st)
        st = pdb_load_text(db, path, buf, len, diag);
    free(buf);
    return st;
}

static oomscan_status walk(pdb *db, const char *dir, int depth, oomscan_diag *diag)
{
    if (depth > 16)
        return diag_set(diag, OOMSCAN_ERR_LIMIT, dir, "directories nested too deep");
    DIR *d = opendir(dir);
    if (!d)
        return diag_set(diag, OOMSCAN_ERR_IO, dir, "cannot open directory: %s", strerror(errno));
    char **names = NULL;
    size_t n = 0;
    oomscan_status st = OOMSCAN_OK;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char **grown = realloc(names, (n + 1) * sizeof *names);
        if (!grown || !(grown[n] = strdup(e->d_name))) {
            names = grown ? grown : names;
            st = diag_set(diag, OOMSCAN_ERR_NOMEM, dir, "out of memory");
            break;
        }
        names = grown;
        n++;
    }
    closedir(d);
    if (!st && n)
        qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n && !st; i++) {
        size_t plen = strlen(dir) + strlen(names[i]) + 2;
        char *path = malloc(plen);
        if (!path) {
            st = diag_set(diag, OOMSCAN_ERR_NOMEM, dir, "out of memory");
            break;
        }
        snprintf(path, plen, "%s/%s", dir, names[i]);
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            st = walk(db, path, depth + 1, diag);
        else {
            size_t l = strlen(names[i]);
            if (l > 5 && strcmp(names[i] + l - 5, ".json") == 0)
                st = load_file(db, path, diag);
        }
        free(path);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return st;
}

oomscan_status pdb_load_dir(pdb *db, const char *dir, oomscan_diag *diag)
{
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return diag_set(diag, OOMSCAN_ERR_IO, dir, "cannot open: %s", strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return load_file(db, dir, diag);
    return walk(db, dir, 0, diag);
}

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
    char **grown = realloc(db->config_lits, (db->n_config_lits + 1) * sizeof *grown);
    if (!grown)
        return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    db->config_lits = grown;
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
                    const char *key = jstr(set, "key"), *change = jstr(set, "change");
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
/* verl's step metrics, DeepSpeed's see_memory_usage, Megatron's report_memory (match/telemetry.h) */
const char *const PDB_TELEMETRY_LITERALS[] = {"perf/max_memory_allocated_gb:", "perf/cpu_memory_used_gb:", "Max_MA ",
                                              "CPU Virtual Memory:", "memory (MB) | allocated:", NULL};
/* faulthandler's stack headers ("Stack (...)", "Current thread 0x... (...)"); a LIT_TRACEBACK target
 * with index 1. c10's C++ stacks share the words; phase_stack_header tells them apart. */
const char PDB_STACK_FIRST_LITERAL[] = "(most recent call first)";

static oomscan_status build_prefilters(pdb *db, oomscan_diag *diag);

oomscan_status pdb_compile(pdb *db, oomscan_diag *diag)
{
    if (db->compiled)
        return OOMSCAN_OK;
    oomscan_status st;
    db->max_captures = 0;
    /* the embedded database's regexes were compiled at build time; any others are compiled here */
    int taken = db->regex_from_blob = regexes_from_blob(db, embedded_regex, embedded_regex_len);
    for (size_t i = 0; i < db->n_patterns; i++) {
        pdb_pattern *p = &db->patterns[i];
        if (!taken && (st = compile_one(p->regex_src, &p->re, p->file, p->id, 0, diag)))
            return st;
        uint32_t caps = 0;
        pcre2_pattern_info(p->re.code, PCRE2_INFO_CAPTURECOUNT, &caps);
        if (caps + 1 > db->max_captures)
            db->max_captures = caps + 1;
        for (size_t k = 0; k < p->n_lists; k++) {
            char where[300];
            if (!taken) {
                snprintf(where, sizeof where, "%s lists.%s", p->id, p->lists[k].key);
                if ((st = compile_one(p->lists[k].src, &p->lists[k].re, p->file, where, 0, diag)))
                    return st;
            }
            pcre2_pattern_info(p->lists[k].re.code, PCRE2_INFO_CAPTURECOUNT, &caps);
            if (caps + 1 > db->max_captures)
                db->max_captures = caps + 1;
        }
        for (size_t k = 0; k < p->n_conts; k++) {
            char where[300];
            if (!taken) {
                snprintf(where, sizeof where, "%s continuation.regex[%zu]", p->id, k);
                if ((st = compile_one(p->conts[k].src, &p->conts[k].re, p->file, where, 0, diag)))
                    return st;
            }
            pcre2_pattern_info(p->conts[k].re.code, PCRE2_INFO_CAPTURECOUNT, &caps);
            if (caps + 1 > db->max_captures)
                db->max_captures = caps + 1;
        }
    }
    for (size_t i = 0; i < db->n_prefixes; i++) {
        pdb_prefix *p = &db->prefixes[i];
        if (!taken && (st = compile_one(p->regex_src, &p->re, p->file, p->id, p->at_end ? 0 : PCRE2_ANCHORED, diag)))
            return st;
        uint32_t caps = 0;
        pcre2_pattern_info(p->re.code, PCRE2_INFO_CAPTURECOUNT, &caps);
        if (caps + 1 > db->max_captures)
            db->max_captures = caps + 1;
    }
    if ((st = build_hints(db, diag)))
        return st;
    free_literals(db);
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
    } else if ((st = resolve_checklists(db, diag)) || (st = add_config_literals(db, diag)))
        return st;
    if ((st = build_prefilters(db, diag)))
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

/* ---- lookups ------------------------------------------------------------------------------ */

static int applies_to(const pdb_checklist *c, tax_class cls, const char *phase)
{
    const cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(c->raw, "applies"))
    {
        const char *ac = jstr(a, "class"), *ap = jstr(a, "phase");
        if (ac && ap && strcmp(ac, tax_class_name(cls)) == 0 && strcmp(ap, phase) == 0)
            return 1;
    }
    return 0;
}

const pdb_checklist *pdb_checklist_for(const pdb *db, tax_class cls, tax_phase phase)
{
    pdb_load_advice(db);
    for (size_t i = 0; i < db->n_checklists; i++)
        if (applies_to(&db->checklists[i], cls, tax_phase_name(phase)))
            return &db->checklists[i];
    for (size_t i = 0; i < db->n_checklists; i++)
        if (applies_to(&db->checklists[i], cls, "*"))
            return &db->checklists[i];
    return NULL;
}

const pdb_checklist *pdb_checklist_by_id(const pdb *db, const char *id)
{
    pdb_load_advice(db);
    for (size_t i = 0; i < db->n_checklists; i++)
        if (strcmp(db->checklists[i].id, id) == 0)
            return &db->checklists[i];
    return NULL;
}

const char *pdb_unit_for(const pdb_pattern *p, const char *name)
{
    for (size_t i = 0; i < p->n_units; i++)
        if (strcmp(p->units[i].name, name) == 0)
            return p->units[i].unit;
    return NULL;
}
