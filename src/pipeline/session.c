/* session.c - what every path through the pipeline shares: adding an input record or error, the job
 * rule, finishing the story, and the view a result is built from. */
#include "pipeline/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumps/dumps.h"

input_record *session_add_record(input_record **recs, size_t *n, const char *path, const char *member)
{
    input_record *g = realloc(*recs, (*n + 1) * sizeof *g);
    if (!g)
        return NULL;
    *recs = g;
    input_record *r = &g[*n];
    memset(r, 0, sizeof *r);
    r->path = strdup(path);
    r->member = member ? strdup(member) : NULL;
    if (!r->path || (member && !r->member)) {
        free(r->path);
        free(r->member);
        return NULL;
    }
    (*n)++;
    return r;
}

int session_add_error(struct oomscan_scan *s, const input_record *r)
{
    const char *why = r->error ? r->error : "error";
    size_t len = strlen(r->path) + (r->member ? strlen(r->member) + 1 : 0) + strlen(why) + 4;
    char *msg = malloc(len);
    char **g = realloc(s->errors, (s->n_errors + 1) * sizeof *g);
    if (g)
        s->errors = g;
    if (!msg || !g) {
        free(msg);
        return -1;
    }
    snprintf(msg, len, "%s%s%s: %s", r->path, r->member ? ":" : "", r->member ? r->member : "", why);
    s->errors[s->n_errors++] = msg;
    return 0;
}

void session_note_job(char job[32], int *conflict, const char *name)
{
    if (!name || !name[0])
        return;
    if (!job[0])
        snprintf(job, 32, "%s", name);
    else if (strcmp(job, name) != 0)
        *conflict = 1;
}

const char *session_scan_job(const struct oomscan_scan *s)
{
    return s->job_given[0] ? s->job_given : s->job_conflict ? "" : s->job_id;
}

void session_finish(struct oomscan_scan *s) { story_finish(s->st, session_scan_job(s)); }

void session_result_scan(const struct oomscan_scan *s, result_scan *out)
{
    out->db = s->db->p;
    out->st = s->st;
    out->votes = s->votes;
    out->job = session_scan_job(s);
    out->inputs = s->recs;
    out->n_inputs = s->n_recs;
    out->excluded = s->excluded;
    out->too_large = s->too_large;
    out->filter = s->filtering ? &s->filter : NULL;
}

int session_wants(const struct oomscan_scan *s, size_t i)
{
    if (!s->filtering)
        return 1;
    result_scan view;
    session_result_scan(s, &view);
    result_finding rf;
    if (result_finding_init(&rf, &view, i, 0) != 0)
        return 1; /* out of memory: written rather than lost */
    int want = result_filter_wants(&s->filter, &rf);
    result_finding_clear(&rf);
    return want;
}

/* The bytes taken to recognise a dump, then the rest of the source (dumps.h). */
typedef struct {
    const unsigned char *head;
    size_t nhead, pos;
    int err; /* the source failed while the head was read */
    const session_source *in;
} sniffed;

static ssize_t read_sniffed(void *ud, void *buf, size_t cap)
{
    sniffed *r = ud;
    if (r->pos < r->nhead) {
        size_t k = r->nhead - r->pos < cap ? r->nhead - r->pos : cap;
        memcpy(buf, r->head + r->pos, k);
        r->pos += k;
        return (ssize_t)k;
    }
    return r->err ? -1 : r->in->read(r->in->read_ud, buf, cap);
}

/* Whether a source's head is binary data, not a log. A NUL byte is the trigger, as in grep and ripgrep,
 * but real logs hold lone NULs (PyTorch's DataLoader writes one before "ERROR: Unexpected bus error",
 * fixtures/realjobs/dataloader_bus_error) and a node that crashed leaves a log's tail as zeros: so a
 * run of NULs reaching the end of the head is not counted, and the head is binary when a NUL is in its
 * first 64 bytes (safetensors' header length, most file headers) or a tenth of its bytes are not text
 * (printable ASCII, tab, newline, CR, FF, VT, BS, ESC, valid UTF-8): tensors, pickled storages. */
static int looks_binary(const unsigned char *h, size_t n)
{
    while (n > 0 && h[n - 1] == 0)
        n--;
    if (!memchr(h, 0, n))
        return 0;
    if (memchr(h, 0, n < 64 ? n : 64))
        return 1;
    size_t other = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = h[i];
        if ((c >= 0x20 && c < 0x7f) || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '\b' ||
            c == 0x1b) {
            i++;
            continue;
        }
        size_t len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
        size_t k = 1;
        while (len && k < len && i + k < n && (h[i + k] & 0xc0) == 0x80)
            k++;
        if (len && k == len) {
            i += len;
            continue;
        }
        other++;
        i++;
    }
    return other * 10 >= n;
}

/* A whole source read from its start (not a continuation, not a live stream): crash dumps are told by
 * their first bytes, never their names, and read by src/dumps/; anything else is scanned as a log. */
static oomscan_status scan_or_read_dump(scanner *sc, phase_state *ps, session_source *in, story *st,
                                        input_record *rec, scan_result *res)
{
    unsigned char head[DUMPS_SNIFF_BYTES];
    sniffed sn = {.head = head, .in = in};
    while (sn.nhead < sizeof head) {
        ssize_t k = in->read(in->read_ud, head + sn.nhead, sizeof head - sn.nhead);
        if (k == SCAN_READ_IDLE)
            continue;
        if (k <= 0) {
            sn.err = k < 0;
            break;
        }
        sn.nhead += (size_t)k;
    }
    dump_kind kind = dumps_sniff(head, sn.nhead);
    /* binary data (looks_binary): a checkpoint in a run folder (model.safetensors) is not read as half
     * a million "lines" */
    int binary = kind == DUMP_NONE && in->skip_binary && looks_binary(head, sn.nhead);
    if (kind == DUMP_NONE && !binary)
        return scanner_run(sc, read_sniffed, &sn, &in->src, ps, story_sink(st), res, in->progress, in->progress_ud);
    /* oomscan's own output is not read again: its quoted evidence would be every failure a second time */
    if (binary || kind == DUMP_OOMSCAN) {
        char *c = strdup(binary ? "binary" : "oomscan");
        if (!c)
            return OOMSCAN_ERR_NOMEM;
        free(rec->container);
        rec->container = c;
        return OOMSCAN_OK; /* nothing scanned: no bytes, no lines */
    }
    if (!*in->dumps && !(*in->dumps = dumps_acc_new()))
        return OOMSCAN_ERR_NOMEM;
    sn.pos = sn.nhead; /* dumps_read is given the head itself */
    char *bad = NULL;
    size_t had = st->n;
    oomscan_status status =
        dumps_read(kind, head, sn.nhead, read_sniffed, &sn, sc, ps, &in->src, st, *in->dumps, res, &bad);
    if (bad && !res->read_error) { /* a dump that could not be decoded: named, the rest goes on */
        rec->status = st->n > had ? INPUT_PARTIAL : INPUT_ERROR; /* partial: what was whole was read */
        free(rec->error);
        rec->error = bad;
        bad = NULL;
    }
    free(bad);
    return status;
}

oomscan_status session_scan_source(scanner *sc, phase_state *ps, session_source *in, story *st, char job[32],
                                   int *job_conflict, input_record *rec, scan_result *res_out)
{
    scan_source_from_name(&in->src);
    session_note_job(job, job_conflict, in->src.job_id);
    scan_result res;
    memset(&res, 0, sizeof res);
    oomscan_status status =
        in->dumps && !in->src.eager && in->src.base_offset == 0
            ? scan_or_read_dump(sc, ps, in, st, rec, &res)
            : scanner_run(sc, in->read, in->read_ud, &in->src, ps, story_sink(st), &res, in->progress, in->progress_ud);
    rec->bytes = res.bytes;
    rec->lines = res.lines;
    rec->lines_cut = res.lines_cut;
    if (res.read_error) {
        const char *why = in->why ? in->why(in->read_ud) : NULL;
        rec->status = res.bytes > 0 || in->src.base_offset > 0 ? INPUT_PARTIAL : INPUT_ERROR;
        free(rec->error);
        rec->error = strdup(why && why[0] ? why : "read error");
    }
    if (res_out)
        *res_out = res;
    return status;
}
