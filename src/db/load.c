/* load.c - filling the database: from the embedded copies of patterns/ (the advice files at their
 * first use), from a folder walked in name order, or from one text; each file parsed by rules.c. */
#include "db/rules.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "db/embedded.h"

/* The embedded files under remediation/ (checklists, the step library, the diagnosis wording): only
 * a finding's advice reads them. */
static int is_advice_file(const embedded_file *f) { return strncmp(f->name, "remediation/", 12) == 0; }

static oomscan_status load_embedded_file(pdb *db, const embedded_file *f, int lean, oomscan_diag *diag)
{
    char name[300];
    snprintf(name, sizeof name, "patterns/%s", f->name);
    return db_parse_doc(db, name, lean ? f->lean : f->data, lean ? f->lean_len : f->len, diag);
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
    return st ? st : db_parse_doc(db, file, text, len, diag);
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
            (void)db_resolve_checklists(db, &d);
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

/* ---- the advice files' lookups (each loads them at its first use) ---------------------------- */

static int applies_to(const pdb_checklist *c, tax_class cls, const char *phase)
{
    const cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(c->raw, "applies"))
    {
        const char *ac = json_str(a, "class"), *ap = json_str(a, "phase");
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
