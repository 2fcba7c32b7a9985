/* rules.c - one data file of patterns/ parsed and validated into the database by its format's loader
 * (failure patterns, prefixes, phase rules and markers, the lexicon, frameworks, versions, Xids,
 * checklists, steps, the diagnosis wording), and the checklists' steps resolved from the library. */
#include "db/rules.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h" /* GROW zeroes the new room: each parser below fills only its entry's fields */

/* ---- helpers ----------------------------------------------------------------------------- */


static oomscan_status need_str(const cJSON *obj, const char *key, const char *file, const char *id,
                               char **out, oomscan_diag *diag)
{
    const char *s = json_str(obj, key);
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
    const char *s = json_str(obj, key);
    return s ? tax_framework_from_name(s) : -1;
}

/* ---- one failure pattern ------------------------------------------------------------------
 * long: one failure pattern's fields validated one by one, each with its file:id error, in the order the
 * format documents them. */

static oomscan_status parse_pattern(pdb_pattern *p, const cJSON *j, const char *file, oomscan_diag *diag)
{
    oomscan_status st;
    const char *id = json_str(j, "id");
    if (!id || !*id)
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "a pattern has no \"id\"");
    if ((st = need_str(j, "id", file, id, &p->id, diag)) || (st = need_str(j, "regex", file, id, &p->regex_src, diag)))
        return st;
    const char *cls = json_str(j, "class");
    int c = tax_class_from_name(cls);
    if (c < 0)
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: unknown class \"%s\" (see docs/taxonomy.md)", id,
                        cls ? cls : "(none)");
    p->cls = (tax_class)c;
    p->title = dup_or_null(json_str(j, "title"));
    p->file = strdup(file);
    if (!p->file)
        return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
    p->engine = framework_of(j, "engine");
    const cJSON *sev = cJSON_GetObjectItemCaseSensitive(j, "severity");
    p->severity = cJSON_IsNumber(sev) ? sev->valueint : 50;
    p->echo = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "echo"));
    p->phase = -1;
    const char *ph = json_str(j, "phase");
    if (ph && (p->phase = tax_phase_from_name(ph)) < 0)
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: unknown phase \"%s\"", id, ph);
    const char *pc = json_str(j, "phase_confidence");
    if (pc && (!ph || (strcmp(pc, "weak") != 0 && strcmp(pc, "strong") != 0)))
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file,
                        "%s: \"phase_confidence\" is \"strong\" or \"weak\", and goes with a \"phase\"", id);
    p->phase_weak = pc && !strcmp(pc, "weak");
    const cJSON *below = cJSON_GetObjectItemCaseSensitive(j, "stack_below");
    if (below && !cJSON_IsBool(below))
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: \"stack_below\" is true or false", id);
    p->stack_below = cJSON_IsTrue(below);

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
oomscan_status db_build_hints(pdb *db, oomscan_diag *diag)
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
            pdb_free_pattern(&p);
            return st;
        }
        size_t slot = db->n_patterns;
        for (size_t i = 0; i < db->n_patterns; i++)
            if (strcmp(db->patterns[i].id, p.id) == 0)
                slot = i;
        if (slot < db->n_patterns) {
            /* Same id in a later file: the later one replaces (a user's --patterns override). */
            pdb_free_pattern(&db->patterns[slot]);
            db->patterns[slot] = p;
            continue;
        }
        if (GROW(db->patterns, db->n_patterns, db->cap.patterns, 64)) {
            pdb_free_pattern(&p);
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        }
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
        const char *id = json_str(j, "id");
        oomscan_status st;
        if (!id)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "a prefix has no \"id\"");
        if ((st = need_str(j, "id", file, id, &p.id, diag)) ||
            (st = need_str(j, "regex", file, id, &p.regex_src, diag))) {
            pdb_free_prefix(&p);
            return st;
        }
        const char *at = json_str(j, "at");
        p.at_end = at && strcmp(at, "end") == 0;
        p.file = strdup(file);
        const cJSON *samples = cJSON_GetObjectItemCaseSensitive(j, "samples");
        if (samples)
            p.samples = take(j, samples);
        if (!p.file) {
            pdb_free_prefix(&p);
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        }
        size_t slot = db->n_prefixes;
        for (size_t i = 0; i < db->n_prefixes; i++)
            if (strcmp(db->prefixes[i].id, p.id) == 0)
                slot = i;
        if (slot == db->n_prefixes) {
            if (GROW(db->prefixes, db->n_prefixes, db->cap.prefixes, 8)) {
                pdb_free_prefix(&p);
                return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
            }
            db->n_prefixes++;
        } else {
            pdb_free_prefix(&db->prefixes[slot]);
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
    const char *s = json_str(obj, key);
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
            if (json_str(j, kinds[k])) {
                kind = k;
                value = json_str(j, kinds[k]);
            }
        char name[200];
        rule_name(name, sizeof name, section, kind >= 0 ? kinds[kind] : NULL, value);
        int ph = phase_of(j, &ok);
        if (kind < 0 || !*value)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: needs one of func/code/path", name);
        if (!ok || ph < 0)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: unknown or missing phase \"%s\" (see docs/taxonomy.md)",
                            name, json_str(j, "phase") ? json_str(j, "phase") : "(none)");
        if (!known_framework(j, "framework", &fw))
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: unknown framework \"%s\"", name, json_str(j, "framework"));
        if (GROW(db->frames, db->n_frames, db->cap.frames, 8))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
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
        const char *lit = json_str(j, "literal");
        char name[200];
        rule_name(name, sizeof name, "markers", NULL, lit);
        int ph = phase_of(j, &ok);
        if (!lit || strlen(lit) < 4)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: needs a literal of 4 bytes or more", name);
        if (!ok)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: unknown phase \"%s\" (a known one, or null)", name,
                            json_str(j, "phase") ? json_str(j, "phase") : "(not a string)");
        if (!known_framework(j, "framework", &fw))
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: unknown framework \"%s\"", name, json_str(j, "framework"));
        if (GROW(db->markers, db->n_markers, db->cap.markers, 8))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        pdb_marker *m = &db->markers[db->n_markers++];
        m->phase = ph;
        m->framework = fw;
        const char *conf = json_str(j, "confidence");
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
        const char *cn = json_str(j, "class");
        int c = cn ? tax_class_from_name(cn) : -1;
        if (c < 0 || c >= 32 || !ok || ph < 0)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "class_phases: needs a known class and phase");
        db->class_phase[c] = ph;
    }
    return OOMSCAN_OK;
}

/* ---- the phase lexicon (lexicon.json) ------------------------------------------------------ */

/* "log prob*" -> words "log", "prob" (prefix); lower case, at most PDB_STEM_WORDS words. */
static int split_stem(pdb_stem *st, const char *text)
{
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        const char *e = p;
        while (*e && *e != ' ')
            e++;
        size_t n = (size_t)(e - p);
        int pre = n > 1 && p[n - 1] == '*';
        if (st->n_words == PDB_STEM_WORDS || n - (size_t)pre == 0)
            return -1;
        char *w = strndup(p, n - (size_t)pre);
        if (!w)
            return -2;
        for (char *q = w; *q; q++) {
            if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9'))) {
                free(w);
                return -1; /* tokens are lower-case letters and digits: anything else never matches */
            }
        }
        st->prefix[st->n_words] = (unsigned char)pre;
        st->words[st->n_words++] = w;
        p = e;
    }
    return st->n_words ? 0 : -1;
}

static oomscan_status load_lexicon(pdb *db, const cJSON *doc, const char *file, oomscan_diag *diag)
{
    static const char *const levels[] = {"strong", "fallback", "weak"}; /* STEM_STRONG.. order */
    const cJSON *j;
    cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(doc, "stems"))
    {
        const char *words = json_str(j, "words"), *level = json_str(j, "level"), *where = json_str(j, "where");
        char name[200];
        rule_name(name, sizeof name, "stems", NULL, words);
        int ok, ph = phase_of(j, &ok);
        if (!words || !ok)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: needs \"words\" and a known phase (or null)", name);
        if (GROW(db->stems, db->n_stems, db->cap.stems, 8))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        pdb_stem *st = &db->stems[db->n_stems++];
        st->phase = ph;
        st->level = -1;
        for (int k = 0; k < 3; k++)
            if (level && strcmp(level, levels[k]) == 0)
                st->level = k;
        if (!level)
            st->level = STEM_STRONG;
        if (st->level < 0)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: \"level\" is strong, fallback or weak", name);
        st->where = where ? 0 : STEM_IN_FUNC | STEM_IN_CALL | STEM_IN_TASK;
        for (const char *w = where; w && *w; w++)
            st->where |= *w == 'f' ? STEM_IN_FUNC : *w == 'c' ? STEM_IN_CALL : *w == 't' ? STEM_IN_TASK : 0x80;
        if (st->where & 0x80 || !st->where)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: \"where\" is letters of f (function), c (call), t (task)", name);
        int sp = split_stem(st, words);
        if (sp == -2 || !(st->text = strdup(words)))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        if (sp < 0)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file,
                            "%s: 1 to %d lower-case words of letters and digits, a trailing * for a prefix", name,
                            PDB_STEM_WORDS);
        oomscan_status s = keep_samples(j, file, name, &st->file, &st->samples, &st->not_samples, diag);
        if (s)
            return s;
    }
    cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(doc, "skip_paths"))
    {
        if (!cJSON_IsString(j) || !*j->valuestring)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "skip_paths: strings only");
        if (GROW(db->lex_skip_paths, db->n_lex_skip_paths, db->cap.lex_skip_paths, 8))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        if (!(db->lex_skip_paths[db->n_lex_skip_paths++] = strdup(j->valuestring)))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
    }
    /* Task markers: a literal after which an identifier is read with the lexicon (Ray's "ray::"). */
    cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(doc, "task_markers"))
    {
        const char *lit = json_str(j, "literal");
        char name[200];
        rule_name(name, sizeof name, "task_markers", NULL, lit);
        if (!lit || strlen(lit) < 4)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: needs a literal of 4 bytes or more", name);
        if (GROW(db->markers, db->n_markers, db->cap.markers, 8))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        pdb_marker *m = &db->markers[db->n_markers++];
        m->phase = -1;
        m->framework = -1;
        m->lexicon = 1;
        if (!(m->literal = strdup(lit)))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
        oomscan_status s = keep_samples(j, file, name, &m->file, &m->samples, &m->not_samples, diag);
        if (s)
            return s;
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
        const char *lit = json_str(j, "literal");
        int fw;
        const char *where = json_str(j, "where");
        char name[200];
        rule_name(name, sizeof name, "rules", NULL, lit);
        if (!lit || strlen(lit) < 4)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: needs a literal of 4 bytes or more", name);
        if (!known_framework(j, "framework", &fw) || fw < 0)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: unknown or missing framework \"%s\"", name,
                            json_str(j, "framework") ? json_str(j, "framework") : "(none)");
        if (where && strcmp(where, "path") != 0 && strcmp(where, "line") != 0)
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: \"where\" is \"path\" or \"line\", not \"%s\"", name, where);
        if (GROW(db->fw_rules, db->n_fw_rules, db->cap.fw_rules, 8))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
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
        const char *lit = json_str(j, "literal"), *comp = json_str(j, "component"), *re = json_str(j, "regex");
        char name[200];
        rule_name(name, sizeof name, "rules", NULL, lit);
        if (!lit || strlen(lit) < 4 || !comp || !*comp || !re || !strstr(re, "(?<version>"))
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file,
                            "%s: needs a literal of 4 bytes or more, a \"component\" and a \"regex\" with a "
                            "(?<version>...) group", name);
        if (GROW(db->versions, db->n_versions, db->cap.versions, 8))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
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
        const char *meaning = json_str(j, "meaning"), *cause = json_str(j, "cause");
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
            if (GROW(db->xids, db->n_xids, db->cap.xids, 8))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
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
    const char *id = json_str(doc, "id");
    if (!id || !*id)
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "checklist has no \"id\"");
    const cJSON *applies = cJSON_GetObjectItemCaseSensitive(doc, "applies");
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(doc, "steps");
    if (!cJSON_IsArray(applies) || !cJSON_IsArray(steps) || cJSON_GetArraySize(steps) == 0)
        return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: needs \"applies\" and a non-empty \"steps\"", id);
    const cJSON *a;
    cJSON_ArrayForEach(a, applies)
    {
        const char *c = json_str(a, "class"), *ph = json_str(a, "phase");
        if (tax_class_from_name(c) < 0 || !ph || (strcmp(ph, "*") != 0 && tax_phase_from_name(ph) < 0))
            return diag_set(diag, OOMSCAN_ERR_FORMAT, file, "%s: \"applies\" has an unknown class or phase", id);
    }
    size_t slot = db->n_checklists;
    for (size_t i = 0; i < db->n_checklists; i++)
        if (strcmp(db->checklists[i].id, id) == 0)
            slot = i;
    if (slot == db->n_checklists) {
        if (GROW(db->checklists, db->n_checklists, db->cap.checklists, 8))
            return diag_set(diag, OOMSCAN_ERR_NOMEM, file, "out of memory");
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
        const char *id = json_str(st, "id");
        if (!id || !*id || !json_str(st, need))
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
    const char *use = cJSON_IsString(entry) ? entry->valuestring : json_str(entry, "use");
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
oomscan_status db_resolve_checklists(pdb *db, oomscan_diag *diag)
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
oomscan_status db_parse_doc(pdb *db, const char *file, const char *text, size_t len, oomscan_diag *diag)
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
    const char *format = json_str(doc, "format");
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
    else if (strcmp(format, "oomscan-lexicon/1") == 0)
        st = load_lexicon(db, doc, file, diag);
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
                      "oomscan-patterns/1, -prefixes/1, -phases/1, -lexicon/1, -frameworks/1, -remediation/1, -steps/1, -diagnosis/1, -xid/1, -versions/1)", format);
    cJSON_Delete(doc);
    return st;
}
