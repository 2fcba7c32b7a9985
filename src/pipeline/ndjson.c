/* ndjson.c - NDJSON output (docs/streaming.md): records of findings that are new or changed since
 * they were last written, and the table of ids written (shared with --state, which saves it). The same
 * writer serves a batch run, a live stream and a --state re-run. */
#include "pipeline/ndjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/grow.h"
#include "emit/emit.h"
#include "pipeline/record.h"
#include "result/result.h"

/* ---- the table of ids written ------------------------------------------------------------ */

struct rep_table {
    rep_entry *e;
    size_t n, cap;
    size_t *idx; /* open addressing over e: index + 1, 0 = empty */
    size_t icap;
};

rep_table *rep_new(void) { return calloc(1, sizeof(rep_table)); }

void rep_free(rep_table *t)
{
    if (!t)
        return;
    free(t->e);
    free(t->idx);
    free(t);
}

static size_t id_hash(const char *id)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *id; id++)
        h = (h ^ (unsigned char)*id) * 0x100000001b3ULL;
    return (size_t)h;
}

rep_entry *rep_find(const rep_table *t, const char *id)
{
    if (!t || !t->icap)
        return NULL;
    for (size_t k = id_hash(id) & (t->icap - 1);; k = (k + 1) & (t->icap - 1)) {
        if (!t->idx[k])
            return NULL;
        if (strcmp(t->e[t->idx[k] - 1].id, id) == 0)
            return &t->e[t->idx[k] - 1];
    }
}

static int rep_reindex(rep_table *t, size_t icap)
{
    size_t *idx = calloc(icap, sizeof *idx);
    if (!idx)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        size_t k = id_hash(t->e[i].id) & (icap - 1);
        while (idx[k])
            k = (k + 1) & (icap - 1);
        idx[k] = i + 1;
    }
    free(t->idx);
    t->idx = idx;
    t->icap = icap;
    return 0;
}

rep_entry *rep_put(rep_table *t, const char *id)
{
    rep_entry *e = rep_find(t, id);
    if (e)
        return e;
    if (GROW(t->e, t->n, t->cap, 64))
        return NULL;
    if ((t->n + 1) * 2 > t->icap && rep_reindex(t, t->icap ? t->icap * 2 : 128) != 0)
        return NULL;
    e = &t->e[t->n];
    memset(e, 0, sizeof *e);
    snprintf(e->id, sizeof e->id, "%s", id);
    size_t k = id_hash(id) & (t->icap - 1);
    while (t->idx[k])
        k = (k + 1) & (t->icap - 1);
    t->idx[k] = ++t->n;
    return e;
}

size_t rep_count(const rep_table *t) { return t ? t->n : 0; }
const rep_entry *rep_at(const rep_table *t, size_t i) { return &t->e[i]; }

/* ---- writing records --------------------------------------------------------------------- */

double ndjson_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t fnv(const char *p, uint64_t h)
{
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    return h;
}

/* The hash of what a record says, taken over its tree rather than its printed text: printing every
 * record twice (once to hash, once to write) was a third of a merge's time. Keys, strings and number
 * bits are hashed in order, with each item's type and a separator, so {"a":"bc"} and {"ab":"c"} differ. */
static uint64_t tree_hash(const cJSON *j, uint64_t h)
{
    for (; j; j = j->next) {
        h = (h ^ (uint64_t)(j->type & 0xff)) * 0x100000001b3ULL;
        if (j->string)
            h = (fnv(j->string, h) ^ 1u) * 0x100000001b3ULL;
        if (cJSON_IsString(j) && j->valuestring)
            h = (fnv(j->valuestring, h) ^ 2u) * 0x100000001b3ULL;
        else if (cJSON_IsNumber(j)) {
            uint64_t bits;
            memcpy(&bits, &j->valuedouble, sizeof bits);
            h = (h ^ bits) * 0x100000001b3ULL;
        } else if (j->child)
            h = (tree_hash(j->child, h) ^ 3u) * 0x100000001b3ULL;
    }
    return h;
}

/* Everything that can change a finding's record without story_add noticing: its role, its cause, the
 * scan-wide framework, the windows joined into it (its sources, its numbers). Cheap, so that only
 * findings that may have changed are printed and hashed. */
static uint64_t signature(const struct oomscan_scan *s, const finding *f)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    h = (h ^ f->version) * 0x100000001b3ULL;
    h = (h ^ (uint64_t)f->is_root) * 0x100000001b3ULL;
    h = (h ^ (uint64_t)(f->caused_by + 2)) * 0x100000001b3ULL;
    h = (h ^ (uint64_t)result_framework(s->votes, f)) * 0x100000001b3ULL;
    h = (h ^ (uint64_t)(uintptr_t)f->note) * 0x100000001b3ULL;
    if (f->caused_by >= 0)
        h = fnv(s->st->f[f->caused_by].id, h);
    for (long k = f->first_joined; k >= 0; k = s->st->f[k].next_joined) {
        h = (h ^ (uint64_t)k) * 0x100000001b3ULL;
        h = (h ^ s->st->f[k].version) * 0x100000001b3ULL;
    }
    return h | 1; /* 0 means "never considered" */
}

/* The compact record (docs/output.md, "NDJSON records"): the checklist named by its id, title and
 * page, its steps left out (they made a record 7 KB). The hash is taken before, over the whole
 * record, so a re-run sees the same change either way and a --state file serves both forms. */
static void compact_remediation(cJSON *j)
{
    cJSON *rem = cJSON_GetObjectItemCaseSensitive(j, "remediation");
    if (cJSON_IsObject(rem))
        cJSON_DeleteItemFromObjectCaseSensitive(rem, "steps");
}

/* Print record j (consumed) as one line and hand it to fn: one call per record, so a line-buffered
 * reader never sees half of one. */
static oomscan_status write_record(cJSON *j, oomscan_write_fn fn, void *ud)
{
    char *txt = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    size_t len = txt ? strlen(txt) : 0;
    char *line = txt ? realloc(txt, len + 2) : NULL;
    if (!line) {
        free(txt);
        return OOMSCAN_ERR_NOMEM;
    }
    line[len] = '\n';
    line[len + 1] = '\0';
    int bad = fn(ud, line, len + 1);
    free(line);
    return bad ? OOMSCAN_ERR_IO : OOMSCAN_OK;
}

oomscan_status ndjson_emit_inputs(struct oomscan_scan *s, oomscan_write_fn fn, void *ud)
{
    oomscan_status st = OOMSCAN_OK;
    for (; s->inputs_written < s->n_recs && !st; s->inputs_written++) {
        const input_record *in = &s->recs[s->inputs_written];
        if (in->status == INPUT_OK)
            continue;
        cJSON *j = emit_input_json(in);
        if (!j)
            return OOMSCAN_ERR_NOMEM;
        cJSON_AddStringToObject(j, "type", "input");
        st = write_record(j, fn, ud);
    }
    return st;
}

/* long: the records of one scan in order: the findings shown, then those joined since; both loops share the
 * report and the order. */
oomscan_status ndjson_emit(struct oomscan_scan *s, ndjson_ready_fn ready, void *ready_ud, ndjson_ready_fn hold,
                           double min_gap, oomscan_write_fn fn, void *ud)
{
    session_finish(s);
    if (!s->rep && !(s->rep = rep_new()))
        return OOMSCAN_ERR_NOMEM;
    size_t *order = malloc((s->st->n + 1) * sizeof *order);
    if (!order)
        return OOMSCAN_ERR_NOMEM;
    size_t shown = story_order(s->st, order); /* a window joined into another finding is in its sources */
    double now = ndjson_now();
    oomscan_status st = OOMSCAN_OK;
    for (size_t k = 0; k < shown && !st; k++) {
        size_t i = order[k];
        finding *f = &s->st->f[i];
        uint64_t sig = signature(s, f);
        if (f->written_version == sig || (hold && hold(ready_ud, i)) || !session_wants(s, i))
            continue;
        rep_entry *e = rep_find(s->rep, f->id);
        if (!e && ready && !ready(ready_ud, i))
            continue;
        cJSON *j = record_visible_json(s, i, 1);
        if (!j) {
            st = OOMSCAN_ERR_NOMEM;
            break;
        }
        uint64_t hash = tree_hash(j->child, 0xcbf29ce484222325ULL);
        const char *cb = f->caused_by >= 0 ? s->st->f[f->caused_by].id : "";
        int role_changed = e && (e->is_root != f->is_root || strcmp(e->caused_by, cb) != 0);
        if (e && e->hash == hash) {
            f->written_version = sig;
            cJSON_Delete(j);
            continue;
        }
        if (e && ready && !role_changed && now - e->at < min_gap) {
            cJSON_Delete(j); /* only more of the same: say it at most every min_gap seconds */
            continue;
        }
        if (!s->opt.ndjson_steps)
            compact_remediation(j);
        cJSON_AddStringToObject(j, "type", e ? "update" : "finding");
        if (e) {
            cJSON *ch = cJSON_AddArrayToObject(j, "changes");
            if (e->is_root != f->is_root)
                cJSON_AddItemToArray(ch, cJSON_CreateString("role"));
            if (strcmp(e->caused_by, cb) != 0)
                cJSON_AddItemToArray(ch, cJSON_CreateString("caused_by"));
            if (e->occurrences != f->occurrences)
                cJSON_AddItemToArray(ch, cJSON_CreateString("occurrences"));
            if (cJSON_GetArraySize(ch) == 0)
                cJSON_AddItemToArray(ch, cJSON_CreateString("details"));
        }
        cJSON_AddItemToObject(j, "merge", record_merge_json(s, f));
        if ((st = write_record(j, fn, ud)) != OOMSCAN_OK)
            break;
        if (!(e = rep_put(s->rep, f->id))) {
            st = OOMSCAN_ERR_NOMEM;
            break;
        }
        e->hash = hash;
        e->is_root = f->is_root;
        snprintf(e->caused_by, sizeof e->caused_by, "%s", cb);
        e->occurrences = f->occurrences;
        e->at = now;
        f->written_version = sig;
    }
    /* A finding reported on its own that has since been joined into another (torchrun's -9 read before
     * the kernel's kill of the same worker): one more record for its id, saying so, so that a consumer
     * keeping the last record per id does not keep a second root. */
    for (size_t k = shown; k < s->st->n && !st; k++) {
        finding *f = &s->st->f[order[k]];
        rep_entry *e = f->joined_into >= 0 ? rep_find(s->rep, f->id) : NULL;
        if (!e)
            continue;
        const char *into = s->st->f[f->joined_into].id;
        /* the same id joined (one line seen in two sources): its record is the one reported */
        if (strcmp(f->id, into) == 0 || (!e->is_root && strcmp(e->caused_by, into) == 0))
            continue;
        cJSON *j = record_visible_json(s, order[k], 1);
        if (!j) {
            st = OOMSCAN_ERR_NOMEM;
            break;
        }
        if (!s->opt.ndjson_steps)
            compact_remediation(j);
        cJSON_ReplaceItemInObjectCaseSensitive(j, "role", cJSON_CreateString("consequence"));
        cJSON_DeleteItemFromObjectCaseSensitive(j, "caused_by");
        cJSON_AddStringToObject(j, "caused_by", into);
        cJSON_AddStringToObject(j, "joined_into", into);
        cJSON_AddStringToObject(j, "type", "update");
        cJSON *ch = cJSON_AddArrayToObject(j, "changes");
        if (e->is_root)
            cJSON_AddItemToArray(ch, cJSON_CreateString("role"));
        cJSON_AddItemToArray(ch, cJSON_CreateString("caused_by"));
        cJSON_AddItemToObject(j, "merge", record_merge_json(s, f));
        if ((st = write_record(j, fn, ud)) != OOMSCAN_OK)
            break;
        e->is_root = 0;
        snprintf(e->caused_by, sizeof e->caused_by, "%s", into);
    }
    free(order);
    return st;
}
