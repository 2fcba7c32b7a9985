/* oomscan.c - the public API: database handles, the scan driver (inputs, directories, worker
 * threads, merging in input order) and output dispatch. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "oomscan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "advice/remedy.h"
#include "advice/memtrend.h"
#include "dumps/dumps.h"
#include "emit/emit.h"
#include "input/input.h"
#include "match/phase.h"
#include "match/scan.h"
#include "pipeline/session.h"
#include "pipeline/state.h"
#include "base/status.h"
#include "pipeline/ndjson.h"

/* ---- database ------------------------------------------------------------------------------ */

/* embedded: 0 nothing, 1 the data files as written, 2 their lean form (no samples) */
static oomscan_status db_make(oomscan_db **out, int embedded, oomscan_diag *diag)
{
    *out = NULL;
    oomscan_db *db = calloc(1, sizeof *db);
    if (!db || !(db->p = pdb_new())) {
        free(db);
        return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    }
    if (embedded) {
        oomscan_status st = embedded == 2 ? pdb_load_embedded_lean(db->p, diag) : pdb_load_embedded(db->p, diag);
        if (st) {
            oomscan_db_free(db);
            return st;
        }
    }
    *out = db;
    return OOMSCAN_OK;
}

oomscan_status oomscan_db_new(oomscan_db **out, oomscan_diag *diag) { return db_make(out, 1, diag); }
oomscan_status oomscan_db_new_lean(oomscan_db **out, oomscan_diag *diag) { return db_make(out, 2, diag); }
oomscan_status oomscan_db_new_empty(oomscan_db **out, oomscan_diag *diag) { return db_make(out, 0, diag); }

oomscan_status oomscan_db_add_dir(oomscan_db *db, const char *dir, oomscan_diag *diag)
{
    return pdb_load_dir(db->p, dir, diag);
}

oomscan_status oomscan_db_compile(oomscan_db *db, oomscan_diag *diag) { return pdb_compile(db->p, diag); }

void oomscan_db_free(oomscan_db *db)
{
    if (!db)
        return;
    pdb_free(db->p);
    free(db);
}

size_t oomscan_db_pattern_count(const oomscan_db *db) { return db->p->n_patterns; }

void oomscan_db_pattern_info(const oomscan_db *db, size_t i, oomscan_pattern_info *out)
{
    const pdb_pattern *p = &db->p->patterns[i];
    out->id = p->id;
    out->class_name = tax_class_name(p->cls);
    out->file = p->file;
    out->regex = p->regex_src;
    out->title = p->title ? p->title : tax_class_human(p->cls);
    out->n_literals = p->n_literals;
}

size_t oomscan_db_checklist_count(const oomscan_db *db)
{
    pdb_load_advice(db->p);
    return db->p->n_checklists;
}

const char *oomscan_db_checklist_id(const oomscan_db *db, size_t i)
{
    pdb_load_advice(db->p);
    return db->p->checklists[i].id;
}

const char *oomscan_db_checklist_title(const oomscan_db *db, size_t i)
{
    pdb_load_advice(db->p);
    const pdb_checklist *c = &db->p->checklists[i];
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(c->json ? c->json : c->raw, "title");
    return cJSON_IsString(t) ? t->valuestring : "";
}

/* Levenshtein distance of a and b, both at most 127 bytes (longer: a large number). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b), row[128];
    if (na > 127 || nb > 127)
        return (size_t)-1;
    for (size_t j = 0; j <= nb; j++)
        row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb];
}

const char *oomscan_db_checklist_closest(const oomscan_db *db, const char *id)
{
    pdb_load_advice(db->p);
    const char *best = NULL;
    size_t bd = (size_t)-1;
    for (size_t i = 0; i < db->p->n_checklists; i++) {
        size_t d = edit_distance(id, db->p->checklists[i].id);
        if (d < bd) {
            bd = d;
            best = db->p->checklists[i].id;
        }
    }
    return best && bd * 3 <= strlen(id) ? best : NULL;
}

const char *oomscan_gzip_backend(void) { return input_gzip_backend(); }

oomscan_status oomscan_explain(const oomscan_db *db, const char *id, oomscan_write_fn fn, void *ud, oomscan_diag *diag)
{
    const pdb_checklist *c = pdb_checklist_by_id(db->p, id);
    if (!c)
        return diag_set(diag, OOMSCAN_ERR_USAGE, id, "no checklist with this id (see oomscan --explain list)");
    return remedy_markdown(c, fn, ud) == 0 ? OOMSCAN_OK : diag_set(diag, OOMSCAN_ERR_IO, id, "write failed");
}

/* ---- scan ---------------------------------------------------------------------------------- */

/* Findings kept in the whole run by default: a real run has tens, a fleet run one or a few per job;
 * 50,000 covers 20,000 jobs with room to spare, at about 4 KiB each (docs/reliability.md). */
#define SCAN_MAX_FINDINGS 50000

oomscan_status oomscan_scan_new(oomscan_scan **out, const oomscan_db *db, const oomscan_options *opt,
                                oomscan_diag *diag)
{
    *out = NULL;
    if (!db || !db->p->compiled)
        return diag_set(diag, OOMSCAN_ERR_USAGE, NULL, "the database must be compiled before scanning");
    oomscan_scan *s = calloc(1, sizeof *s);
    if (!s || !(s->st = story_new())) {
        free(s);
        return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    }
    s->db = db;
    if (opt)
        s->opt = *opt;
    s->st->max_findings = s->opt.limits.max_findings ? (size_t)s->opt.limits.max_findings : SCAN_MAX_FINDINGS;
    if (opt && opt->job_id) {
        if (strlen(opt->job_id) >= sizeof s->job_given) {
            story_free(s->st);
            free(s);
            return diag_set(diag, OOMSCAN_ERR_USAGE, NULL, "job id longer than 31 characters");
        }
        snprintf(s->job_given, sizeof s->job_given, "%s", opt->job_id);
        s->opt.job_id = NULL; /* the caller's string is not kept */
    }
    /* the filters: class names resolved once */
    s->filter.roots_only = s->opt.roots_only;
    s->filter.job = s->opt.only_job;
    for (const char *c = s->opt.classes; c && *c;) {
        size_t n = strcspn(c, ",");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), c);
        int k = tax_class_from_name(name);
        if (k < 0) {
            story_free(s->st);
            free(s);
            return diag_set(diag, OOMSCAN_ERR_USAGE, NULL, "--class: no class '%s' (docs/taxonomy.md)", name);
        }
        s->filter.class_mask |= 1u << k;
        c += n + (c[n] == ',');
    }
    const char *bound[2] = {s->opt.since, s->opt.until};
    for (int b = 0; b < 2; b++) {
        timefmt *t = b ? &s->filter.until : &s->filter.since;
        if (!bound[b])
            continue;
        if (timefmt_parse(bound[b], strlen(bound[b]), t) != 0 || t->uptime_only) {
            story_free(s->st);
            free(s);
            return diag_set(diag, OOMSCAN_ERR_USAGE, NULL, "--%s '%s': not a time (2024-05-01T12:00:00)",
                            b ? "until" : "since", bound[b]);
        }
        *(b ? &s->filter.has_until : &s->filter.has_since) = 1;
    }
    s->filtering = s->filter.roots_only || s->filter.class_mask || s->filter.job || s->filter.has_since ||
                   s->filter.has_until;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    *out = s;
    return OOMSCAN_OK;
}

static void free_rec(input_record *r)
{
    free(r->path);
    free(r->member);
    free(r->container);
    free(r->error);
}

static void free_unit(scan_unit *u)
{
    free(u->path);
    story_free(u->st);
    for (size_t i = 0; i < u->n_recs; i++)
        free_rec(&u->recs[i]);
    free(u->recs);
    dumps_acc_free(u->dumps);
}

void oomscan_scan_free(oomscan_scan *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_units; i++)
        free_unit(&s->units[i]);
    free(s->units);
    story_free(s->st);
    dumps_acc_free(s->dumps);
    rep_free(s->rep);
    for (size_t i = 0; i < s->n_recs; i++)
        free_rec(&s->recs[i]);
    free(s->recs);
    for (size_t i = 0; i < s->n_errors; i++)
        free(s->errors[i]);
    free(s->errors);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

/* -- expanding directories -- */

typedef struct {
    char **v;
    unsigned char *how; /* per path: WALKED, EMPTY_DIR, or 0 for a path named */
    size_t n, cap;
} strvec;

enum { WALKED = 1, EMPTY_DIR = 2 };

static int vec_push_how(strvec *v, const char *s, unsigned char how)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        char **g = realloc(v->v, cap * sizeof *g);
        if (g)
            v->v = g;
        unsigned char *h = g ? realloc(v->how, cap) : NULL;
        if (!h)
            return -1;
        v->how = h;
        v->cap = cap;
    }
    if (!(v->v[v->n] = strdup(s)))
        return -1;
    v->how[v->n++] = how;
    return 0;
}

static int vec_push(strvec *v, const char *s) { return vec_push_how(v, s, 0); }

/* What the walk leaves out (oomscan_options): a name an exclude glob matches (the last component, as
 * grep's --exclude), a file larger than max_filesize. Counted in the scan; stdin is never left out. */
static int left_out(oomscan_scan *s, const char *path, const struct stat *sb)
{
    const char *base = strrchr(path, '/');
    base = base && base[1] ? base + 1 : path;
    for (size_t i = 0; i < s->opt.n_exclude; i++)
        if (fnmatch(s->opt.exclude[i], base, 0) == 0 || fnmatch(s->opt.exclude[i], path, 0) == 0) {
            s->excluded++;
            return 1;
        }
    struct stat own;
    if (s->opt.max_filesize && !sb && stat(path, &own) == 0)
        sb = &own;
    if (s->opt.max_filesize && sb && S_ISREG(sb->st_mode) && (uint64_t)sb->st_size > s->opt.max_filesize) {
        s->too_large++;
        return 1;
    }
    return 0;
}

/* by name, past the tag byte expand() puts first */
static int cmp_tagged(const void *a, const void *b)
{
    return strcmp(*(char *const *)a + 1, *(char *const *)b + 1);
}

/* Files under dir, recursively, sorted by name at each level; symlinked directories are not followed
 * (loops). Inside a directory only regular files are read, whether reached directly or through a
 * symlink: a FIFO would block for ever, a device (/dev/zero) never ends, a socket cannot be opened.
 * A symlink that leads nowhere (dangling, or a loop: ELOOP) is kept, so it is reported once with its
 * reason. A path named on the command line is read whatever it is (<(cmd) is a pipe). Returns -1 only
 * when out of memory; unreadable directories become paths that fail later with their reason. */
static int expand(oomscan_scan *s, strvec *out, const char *path, int depth)
{
    struct stat sb;
    if (strcmp(path, "-") == 0)
        return vec_push(out, path);
    /* the _long calls reach paths past PATH_MAX too (24 folders of 200 bytes): such a log was skipped */
    if (input_stat_long(path, &sb, 0) != 0 || !S_ISDIR(sb.st_mode) || depth > 64) {
        if (depth > 0 && input_stat_long(path, &sb, 0) == 0 && !S_ISREG(sb.st_mode))
            return 0;
        if (left_out(s, path, NULL))
            return 0;
        return vec_push_how(out, path, depth > 0 ? WALKED : 0);
    }
    if (depth > 0 && s->opt.n_exclude && left_out(s, path, &sb))
        return 0; /* a folder excluded by name: not walked */
    size_t before = out->n, left_before = s->excluded + s->too_large;
    int dfd = input_open_long(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d && dfd >= 0)
        close(dfd);
    if (!d)
        return vec_push(out, path);
    /* each name is kept behind one byte: 'f' when readdir already says it is a regular file (no
     * stat needed: four per file were a sixth of a run over 2,000 small files), '?' otherwise */
    strvec names = {0};
    struct dirent *e;
    int rc = 0;
    char tagged[sizeof e->d_name + 1];
    while ((e = readdir(d)) && rc == 0)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            tagged[0] = e->d_type == DT_REG ? 'f' : '?';
            memcpy(tagged + 1, e->d_name, strlen(e->d_name) + 1);
            rc = vec_push(&names, tagged);
        }
    closedir(d);
    if (names.n)
        qsort(names.v, names.n, sizeof *names.v, cmp_tagged);
    for (size_t i = 0; i < names.n && rc == 0; i++) {
        const char *name = names.v[i] + 1;
        size_t len = strlen(path) + strlen(name) + 2;
        char *child = malloc(len);
        if (!child) {
            rc = -1;
            break;
        }
        snprintf(child, len, "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/", name);
        if (names.v[i][0] == 'f') {
            if ((s->opt.n_exclude || s->opt.max_filesize) && left_out(s, child, NULL)) {
                free(child);
                continue;
            }
            rc = vec_push_how(out, child, WALKED);
            free(child);
            continue;
        }
        struct stat lb;
        int looked = input_stat_long(child, &lb, 1) == 0, lerr = looked ? 0 : errno;
        if (looked && S_ISLNK(lb.st_mode) && input_stat_long(child, &sb, 0) == 0 && S_ISDIR(sb.st_mode)) {
            free(child);
            continue;
        }
        if (looked && (S_ISREG(lb.st_mode) || S_ISDIR(lb.st_mode) || S_ISLNK(lb.st_mode)))
            rc = expand(s, out, child, depth + 1);
        else if (!looked && lerr != ENOENT) /* listed with its reason, never skipped in silence */
            rc = vec_push(out, child);
        free(child);
    }
    for (size_t i = 0; i < names.n; i++)
        free(names.v[i]);
    free(names.v);
    free(names.how);
    /* a folder named that holds no file at all is an input error, not "no failure" (an epilog pointed
     * at the wrong folder); files left out by --exclude or --max-filesize are counted instead */
    if (rc == 0 && depth == 0 && out->n == before && s->excluded + s->too_large == left_before)
        rc = vec_push_how(out, path, EMPTY_DIR);
    return rc;
}

/* -- one unit -- */

typedef struct {
    oomscan_scan *s;
    scan_unit *u;
    scanner *sc;
    phase_state *ps;
    input_stream *stream;
} unit_ctx;

static ssize_t read_stream(void *ud, void *buf, size_t cap) { return input_read(ud, buf, cap); }
static const char *stream_why(void *ud) { return input_stream_error(ud); }
static ssize_t reread_stream(void *ud, void *buf, size_t n, uint64_t off) { return input_pread(ud, buf, n, off); }

static void progress_cb(void *ud, uint64_t bytes)
{
    unit_ctx *c = ud;
    if (c->s->opt.on_progress)
        c->s->opt.on_progress(c->s->opt.ud, bytes);
}

static int on_source(void *ud, const input_source_info *info, input_stream *stream)
{
    unit_ctx *c = ud;
    scan_unit *u = c->u;
    input_record *r = session_add_record(&u->recs, &u->n_recs, info->path, info->member);
    if (!r) {
        u->status = OOMSCAN_ERR_NOMEM;
        return 1;
    }
    r->container = info->container ? strdup(info->container) : NULL;
    phase_reset_source(c->ps);
    int budget_spent = scanner_regex_note(c->sc) != NULL;
    size_t ri = (size_t)(r - u->recs);
    session_source in = {.src = {.path = info->path, .member = info->member, .input = (size_t)(u - c->s->units),
                                 .decoder_thread = info->decoder_thread,
                                 .reread = input_can_pread(stream) ? reread_stream : NULL, .reread_ud = stream},
                         .read = read_stream, .read_ud = stream, .why = stream_why, .progress = progress_cb,
                         .progress_ud = c, .dumps = &u->dumps,
                         .skip_binary = !c->s->opt.read_binary && (u->walked || info->member)};
    oomscan_status st = session_scan_source(c->sc, c->ps, &in, u->st, u->job_id, &u->job_conflict, r, NULL);
    r = &u->recs[ri];
    if (r->status == INPUT_OK && input_stream_note(stream)) { /* read, but not as what it is (nested too deep) */
        r->status = INPUT_PARTIAL;
        r->error = strdup(input_stream_note(stream));
    } else if (r->status == INPUT_OK && !budget_spent && scanner_regex_note(c->sc)) { /* patterns skipped from here */
        r->status = INPUT_PARTIAL;
        r->error = strdup(scanner_regex_note(c->sc));
    }
    if (st) {
        u->status = st;
        return 1;
    }
    return 0;
}

static void run_unit(oomscan_scan *s, size_t i, scanner *sc, phase_state *ps)
{
    scan_unit *u = &s->units[i];
    scanner_regex_budget(sc, s->opt.limits.regex_budget); /* per input */
    if (u->empty_dir) {
        input_record *r = session_add_record(&u->recs, &u->n_recs, u->path, NULL);
        if (!r || !(r->error = strdup("no file to scan in this folder")))
            u->status = OOMSCAN_ERR_NOMEM;
        else
            r->status = INPUT_ERROR;
        return;
    }
    if (s->state && state_run_unit(s, i, sc, ps))
        return; /* --state: a plain file read on from where the last run stopped */
    unit_ctx c = {.s = s, .u = u, .sc = sc, .ps = ps};
    oomscan_diag d;
    diag_clear(&d);
    const oomscan_limits *l = &s->opt.limits;
    input_limits lim = {.max_bytes = l->max_bytes, .max_ratio = l->max_ratio, .max_members = l->max_members,
                        .max_depth = l->max_depth, .stop = &s->cancel};
    int is_stdin = strcmp(u->path, "-") == 0;
    oomscan_status st = is_stdin && s->opt.stdin_label
                            ? input_open_fd_after(STDIN_FILENO, s->opt.stdin_label, NULL, 0, &lim, on_source, &c, &d)
                            : input_open_limited(u->path, &lim, on_source, &c, &d);
    if (st && st != OOMSCAN_ERR_CANCELLED) {
        const char *name = !is_stdin ? u->path : s->opt.stdin_label ? s->opt.stdin_label : "<stdin>";
        input_record *r = session_add_record(&u->recs, &u->n_recs, name, NULL);
        if (r) {
            r->status = INPUT_ERROR;
            r->error = strdup(d.msg[0] ? d.msg : status_name(st));
        } else {
            u->status = OOMSCAN_ERR_NOMEM;
        }
        /* an archive that broke after some members: the members read stay, the archive is partial */
        if (r && u->n_recs > 1)
            r->status = INPUT_PARTIAL;
    }
    memcpy(u->votes, phase_framework_votes(ps), sizeof u->votes);
}

static void unit_not_read(const oomscan_scan *s, scan_unit *u, const char *why);

static void merge_unit(oomscan_scan *s, size_t i)
{
    scan_unit *u = &s->units[i];
    /* an input its worker could not even list (out of memory while it tried): listed here, once its
     * worker has let go of its scanner, so every input given is read or listed with its error */
    if (u->n_recs == 0)
        unit_not_read(s, u, "not read: out of memory while reading it");
    size_t dropped = s->st->dropped + u->st->dropped;
    /* a job's framework is read from that job's inputs only (story_job_votes) */
    if (story_note_votes(u->st, u->job_conflict ? "" : u->job_id, u->votes) != 0 || story_merge(s->st, u->st) != 0)
        u->status = OOMSCAN_ERR_NOMEM;
    if (s->st->dropped > dropped && !s->findings_capped && u->n_recs > 0) {
        /* said once, on the input where it happened; later inputs' new findings are only counted */
        s->findings_capped = 1;
        input_record *r = &u->recs[u->n_recs - 1];
        char msg[200];
        snprintf(msg, sizeof msg, "%zu findings kept: the limit of the run; new findings from here on are only "
                 "counted (--limit findings=%zu)", s->st->max_findings, s->st->max_findings);
        char *e = strdup(msg);
        if (e && r->status == INPUT_OK) {
            r->status = INPUT_PARTIAL;
            free(r->error);
            r->error = e;
        } else {
            free(e);
        }
    }
    if (u->dumps && !s->dumps) {
        s->dumps = u->dumps;
        u->dumps = NULL;
    } else if (u->dumps && dumps_acc_merge(s->dumps, u->dumps) != 0) {
        u->status = OOMSCAN_ERR_NOMEM;
    }
    for (int f = 0; f < FW__COUNT; f++)
        s->votes[f] += u->votes[f];
    session_note_job(s->job_id, &s->job_conflict, u->job_id);
    s->job_conflict |= u->job_conflict;
    input_record *g = realloc(s->recs, (s->n_recs + u->n_recs) * sizeof *g);
    if (!g) {
        u->status = OOMSCAN_ERR_NOMEM;
        return;
    }
    s->recs = g;
    for (size_t k = 0; k < u->n_recs; k++) {
        input_record *r = &u->recs[k];
        if (r->status != INPUT_OK && session_add_error(s, r) != 0)
            u->status = OOMSCAN_ERR_NOMEM;
        s->recs[s->n_recs++] = *r;
    }
    free(u->recs);
    u->recs = NULL;
    u->n_recs = 0;
}

typedef struct {
    oomscan_scan *s;
    oomscan_status status;
} worker_arg;

/* Whether units [from, to) are all done (under s->mu). */
#define MERGE_BATCH 16    /* units the merging thread waits for at once (oomscan_scan_paths) */
#define MERGE_WAIT_MS 100 /* and for how long, once the first of them is done */

static int units_done(const oomscan_scan *s, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (!s->units[i].done)
            return 0;
    return 1;
}

/* An input this worker could not read: listed with the reason, as every input given is read or listed. */
static void unit_not_read(const oomscan_scan *s, scan_unit *u, const char *why)
{
    input_record *r = session_add_record(&u->recs, &u->n_recs, strcmp(u->path, "-") ? u->path
                                         : s->opt.stdin_label ? s->opt.stdin_label : "<stdin>", NULL);
    if (r) {
        r->status = INPUT_ERROR;
        r->error = strdup(why);
    } else {
        u->status = OOMSCAN_ERR_NOMEM;
    }
}

static void *worker(void *arg)
{
    worker_arg *w = arg;
    oomscan_scan *s = w->s;
    scanner *sc = scanner_new(s->db->p);
    phase_state *ps = phase_new(s->db->p);
    if (sc && s->split_cores >= 2)
        (void)scanner_use_helper(sc, s->split_cores); /* without it the scan is only slower, never different */
    for (;;) {
        pthread_mutex_lock(&s->mu);
        size_t i = s->next_unit++;
        pthread_mutex_unlock(&s->mu);
        if (i >= s->n_units)
            break;
        if (s->cancel) {
            /* stopped by a signal: the inputs not begun are listed as not read, the report says so */
            unit_not_read(s, &s->units[i], "not read: interrupted before this input");
        } else {
            /* framework votes are per input: a fresh state for each; a scanner that could not be had
             * is tried again (memory may have come free), and the input is listed when it cannot be:
             * such inputs were marked done unread, and the run said "out of memory" naming none */
            phase_free(ps);
            ps = phase_new(s->db->p);
            if (!sc)
                sc = scanner_new(s->db->p);
            if (ps && sc)
                run_unit(s, i, sc, ps);
            else
                unit_not_read(s, &s->units[i], "not read: out of memory for its scanner");
        }
        pthread_mutex_lock(&s->mu);
        s->units[i].done = 1;
        if (i >= s->wait_from && i < s->wait_to && units_done(s, s->wait_from, s->wait_to))
            pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
    }
    scanner_free(sc);
    phase_free(ps);
    return NULL;
}

/* long: the scan driver: inputs expanded, workers started, results merged in input order; what it starts is
 * stopped here. */
oomscan_status oomscan_scan_paths(oomscan_scan *s, const char *const *paths, size_t n, oomscan_diag *diag)
{
    strvec files = {0};
    int stdin_seen = 0;
    for (size_t i = 0; i < n; i++) {
        /* stdin is one stream: a second "-" would make two workers split one pipe between them */
        if (strcmp(paths[i], "-") == 0 && stdin_seen++)
            continue;
        if (expand(s, &files, paths[i], 0) != 0) {
            for (size_t k = 0; k < files.n; k++)
                free(files.v[k]);
            free(files.v);
            free(files.how);
            return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
        }
    }
    size_t first = s->n_units;
    scan_unit *g = realloc(s->units, (s->n_units + files.n + 1) * sizeof *g);
    if (!g) {
        for (size_t k = 0; k < files.n; k++)
            free(files.v[k]);
        free(files.v);
        free(files.how);
        return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    }
    s->units = g;
    oomscan_status st = OOMSCAN_OK;
    for (size_t k = 0; k < files.n; k++) {
        scan_unit *u = &s->units[s->n_units++];
        memset(u, 0, sizeof *u);
        u->path = files.v[k];
        u->walked = files.how[k] == WALKED;
        u->empty_dir = files.how[k] == EMPTY_DIR;
        if (!(u->st = story_new()))
            st = OOMSCAN_ERR_NOMEM;
    }
    free(files.v);
    free(files.how);
    if (!st && s->state)
        st = state_plan(s);
    if (st)
        return diag_set(diag, st, NULL, "out of memory");

    unsigned jobs = s->opt.jobs;
    if (jobs == 0) {
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        jobs = nc > 0 ? (unsigned)nc : 1;
    }
    size_t todo = s->n_units - first;
    /* fewer inputs than cores: the spare cores split each input's prefilter pass (docs/performance.md) */
    s->split_cores = todo > 0 ? jobs / (unsigned)todo : 0;
    if (jobs > todo)
        jobs = todo ? (unsigned)todo : 1;
    /* stdin can only be read once and by one reader; nothing else needs care */
    s->next_unit = first;
    pthread_t tids[64];
    worker_arg args[64];
    if (jobs > 64)
        jobs = 64;
    unsigned started = 0;
    if (jobs > 1) {
        for (unsigned t = 0; t < jobs; t++) {
            args[t].s = s;
            args[t].status = OOMSCAN_OK;
            if (pthread_create(&tids[t], NULL, worker, &args[t]) == 0)
                started++;
        }
    }
    if (started == 0) {
        args[0].s = s;
        args[0].status = OOMSCAN_OK;
        worker(&args[0]);
    }
    /* Merge in input order as units complete, so output is the same whatever the thread timing. A
     * unit not done yet is waited for with the next MERGE_BATCH - 1 (the workers go through every
     * unit whatever this thread does), so that this thread wakes once a batch, not once an input;
     * but for MERGE_WAIT_MS at most once its own unit is done: what --format ndjson writes as each
     * input is merged is not held back behind a slow input further on. */
    for (size_t i = first; i < s->n_units; i++) {
        pthread_mutex_lock(&s->mu);
        if (!s->units[i].done) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += MERGE_WAIT_MS * 1000000L;
            until.tv_sec += until.tv_nsec / 1000000000L;
            until.tv_nsec %= 1000000000L;
            s->wait_from = i;
            s->wait_to = s->n_units - i > MERGE_BATCH ? i + MERGE_BATCH : s->n_units;
            while (!units_done(s, s->wait_from, s->wait_to)) {
                if (s->wait_to == i + 1) {
                    pthread_cond_wait(&s->cv, &s->mu);
                } else if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT) {
                    s->wait_to = i + 1; /* the batch is slow: only this unit now */
                }
            }
            s->wait_from = s->wait_to = 0;
        }
        pthread_mutex_unlock(&s->mu);
        merge_unit(s, i);
        if (s->units[i].status)
            st = s->units[i].status;
        s->merged = i + 1;
        if (s->opt.on_input)
            s->opt.on_input(s->opt.ud, i);
    }
    for (unsigned t = 0; t < started; t++) {
        pthread_join(tids[t], NULL);
        if (args[t].status)
            st = args[t].status;
    }
    if (started == 0 && args[0].status)
        st = args[0].status;
    /* dumps read together: every rank's flight recorder, snapshots against their OOM */
    dumps_acc_stop_on(s->dumps, &s->cancel); /* a signal there ends it with what it found */
    if (!st && s->dumps && dumps_acc_finish(s->dumps, s->db->p, s->st) != 0)
        st = OOMSCAN_ERR_NOMEM;
    /* the memory series each job printed, given to its out-of-memory failures */
    if (!st && memtrend_attach(s->st, session_scan_job(s)) != 0)
        st = OOMSCAN_ERR_NOMEM;
    if (st)
        return diag_set(diag, st, NULL, "%s", status_name(st));
    return OOMSCAN_OK;
}

size_t oomscan_scan_input_errors(const oomscan_scan *s) { return s->n_errors; }
const char *oomscan_scan_input_error(const oomscan_scan *s, size_t i) { return i < s->n_errors ? s->errors[i] : NULL; }

void oomscan_scan_input_counts(const oomscan_scan *s, oomscan_input_counts *out)
{
    result_tally t;
    result_tally_inputs(s->recs, s->n_recs, &t);
    *out = (oomscan_input_counts){.read = t.read, .unreadable = t.unreadable, .binary = t.binary,
                                  .excluded = s->excluded, .too_large = s->too_large, .own_output = t.own_output,
                                  .bytes = t.bytes, .lines = t.lines};
}

size_t oomscan_scan_finding_count(const oomscan_scan *s)
{
    session_finish((oomscan_scan *)s);
    size_t n = 0;
    for (size_t i = 0; i < s->st->n; i++) /* windows joined into another finding are not counted */
        n += s->st->f[i].joined_into < 0 && session_wants(s, i);
    return n;
}

/* ---- output -------------------------------------------------------------------------------- */

/* Between the inputs of a run: a finding whose own source states no job takes the scan's job, which an
 * input read later may still name (a kernel log read before slurm-77.out), and its id changes with it;
 * and what it says may change with an input not read yet (a --state re-run reads its kernel log again
 * after the launcher's -9 of the same kill). Such a finding is written once every input is read, so
 * that its first record has the id it keeps, whatever the order of the inputs (one-shot and --state
 * alike), and an unchanged re-run writes nothing for it. */
static int job_unsettled(void *ud, size_t i)
{
    const oomscan_scan *s = ud;
    return s->merged < s->n_units && !s->job_given[0] && !s->st->f[i].job_stated;
}

oomscan_status oomscan_scan_write_ndjson_delta(oomscan_scan *s, oomscan_write_fn fn, void *ud)
{
    return ndjson_emit(s, NULL, s, job_unsettled, 0, fn, ud);
}

/* Resolve the result once and hand it to the writer asked for; NDJSON is written by stream.c, which
 * resolves only the findings that changed since the last record (ndjson.c). */
oomscan_status oomscan_scan_write(oomscan_scan *s, const oomscan_output *out, oomscan_write_fn fn, void *ud)
{
    session_finish(s);
    if (out->format == OOMSCAN_FMT_NDJSON) { /* the findings, then what could not be scanned */
        oomscan_status st = oomscan_scan_write_ndjson_delta(s, fn, ud);
        return st ? st : ndjson_emit_inputs(s, fn, ud);
    }
    result_scan view;
    session_result_scan(s, &view);
    /* the JSON document takes findings one at a time: advice is asked as each is written */
    result *r = out->format == OOMSCAN_FMT_JSON ? result_new_deferred(&view) : result_new(&view);
    if (!r)
        return OOMSCAN_ERR_NOMEM;
    oomscan_status st = out->format == OOMSCAN_FMT_TEXT     ? emit_text(r, out->color, out->verbose, out->width, fn, ud)
                        : out->format == OOMSCAN_FMT_TICKET ? emit_tickets(r, out, fn, ud)
                        : out->format == OOMSCAN_FMT_MARKDOWN ? emit_markdown(r, fn, ud)
                        : out->format == OOMSCAN_FMT_OPENMETRICS ? emit_openmetrics(r, out->run_time, fn, ud)
                                                            : emit_json_write(r, fn, ud);
    result_free(r);
    return st;
}
