/* scan_run.c - the streaming scanner: chunks -> prefilter -> candidate lines -> classify -> sink. This file:
 * the scanner's life, the source's name, and the chunk loop (read, region, advance); a hit line is
 * scan_line.c's, the helper thread scan_split.c's, the settings windows scan_windows.c's. */
#include "match/scan_impl.h"

scanner *scanner_new(const pdb *db)
{
    scanner *sc = calloc(1, sizeof *sc);
    if (!sc)
        return NULL;
    sc->db = db;
    sc->m = matcher_new(db);
    sc->cl = sc->m ? classifier_new(db, sc->m) : NULL;
    sc->buf = sc->mem = buffer_new();
    sc->info = calloc(db->n_literals ? db->n_literals : 1, sizeof *sc->info);
    sc->set_tr = config_tracker_new();
    scanner_settings_windows(sc, SCAN_SETTINGS_HEAD, SCAN_SETTINGS_BEFORE, SCAN_SETTINGS_AFTER);
    if (!sc->m || !sc->cl || !sc->buf || !sc->info || !sc->set_tr) {
        scanner_free(sc);
        return NULL;
    }
    for (size_t i = 0; i < db->n_literals; i++) {
        lit_info *f = &sc->info[i];
        const pdb_literal *l = &db->literals[i];
        f->cheap = (uint8_t)classify_is_cheap(db, i);
        /* a setting's literal is its name (patterndb.c, add_config_literal) */
        f->len = f->cheap == CHEAP_SETTINGS ? (uint32_t)strlen(l->text) : 0;
        /* a Ray prefix on every line of a worker's output: its vote counted at once */
        int fw = f->cheap == CHEAP_VOTES && l->n_targets == 1 ? db->fw_rules[l->targets[0].index].framework : -1;
        f->vote = (int8_t)(fw >= 0 && fw < 127 ? fw : -1);
        f->names = (uint8_t)pdb_literal_names_setting(l);
    }
    return sc;
}

void scanner_settings_windows(scanner *sc, uint64_t head, uint64_t before, uint64_t after)
{
    sc->win_head = head;
    sc->win_before = before < SCAN_SETTINGS_BEFORE ? before : SCAN_SETTINGS_BEFORE; /* what the ring holds */
    sc->win_after = after;
}

void scanner_free(scanner *sc)
{
    if (!sc)
        return;
    scan_splitter_free(sc->split);
    classifier_free(sc->cl);
    matcher_free(sc->m);
    free(sc->mem);
    free(sc->mem2);
    free(sc->info);
    free(sc->hist);
    free(sc->win);
    free(sc->kept);
    config_tracker_free(sc->set_tr);
    free(sc);
}

/* ---- names ------------------------------------------------------------------------------- */

static int find_number_after(const char *s, const char *word, char *out, size_t cap, int allow_underscore)
{
    const char *p = s;
    size_t wl = strlen(word);
    while ((p = strstr(p, word))) {
        const char *q = p + wl;
        if (*q == '-' || *q == '_')
            q++;
        if (isdigit((unsigned char)*q)) {
            size_t n = 0;
            while (n + 1 < cap && (isdigit((unsigned char)q[n]) || (allow_underscore && q[n] == '_' && isdigit((unsigned char)q[n + 1]))))
                n++;
            memcpy(out, q, n);
            out[n] = '\0';
            return 1;
        }
        p += wl;
    }
    return 0;
}

void scan_source_from_name(scan_source *src)
{
    char name[1024];
    snprintf(name, sizeof name, "%s%s%s", src->path ? src->path : "", src->member ? "/" : "",
             src->member ? src->member : "");
    src->job_id[0] = src->rank[0] = src->host[0] = src->pid[0] = src->ray_job[0] = '\0';
    /* slurm-1234.out, slurm-1234_7.err (%A_%a), or a job-1234 bundle */
    if (!find_number_after(name, "slurm-", src->job_id, sizeof src->job_id, 1))
        find_number_after(name, "job-", src->job_id, sizeof src->job_id, 1);
    /* the last component naming a rank wins: logs/rank3.log, worker_rank-12.err */
    const char *p = name, *last = NULL;
    while ((p = strstr(p, "rank"))) {
        last = p;
        p += 4;
    }
    if (last)
        find_number_after(last, "rank", src->rank, sizeof src->rank, 0);
    /* a directory component that names a node: node12/, gpu-node-3/ */
    const char *comp = name;
    while (*comp) {
        const char *slash = strchr(comp, '/');
        size_t n = slash ? (size_t)(slash - comp) : strlen(comp);
        /* only directories: a file named host_oom_kill-1.log is not a host */
        if (slash && n > 4 && n < sizeof src->host && (strncmp(comp, "node", 4) == 0 || memmem(comp, n, "-node", 5))) {
            memcpy(src->host, comp, n);
            src->host[n] = '\0';
        }
        if (!slash)
            break;
        comp = slash + 1;
    }
    names_ray(name, src); /* a Ray session's log names: job, pid, node */
}

void scanner_regex_budget(scanner *sc, uint64_t budget) { matcher_budget_reset(sc->m, budget); }
const char *scanner_regex_note(const scanner *sc) { return matcher_budget_note(sc->m); }

static void scan_region(scanner *sc, size_t end, size_t avail, int last)
{
    sc->region_end = end;
    sc->cur_open = 0;
    sc->line_end = 0;
    sc->n_deferred = 0;
    if (!sc->pf_lean && sc->base + end > sc->set_head_end) {
        /* the first region past a head: the prefilters for it, built at their first use */
        sc->pf_lean = pdb_prefilter_lean(sc->db);
        sc->pf_names = pdb_prefilter_names(sc->db);
        if (!sc->pf_lean) { /* out of memory: read settings everywhere, as the head does */
            sc->set_head_end = sc->set_read_to = UINT64_MAX;
            classify_settings_until(sc->cl, UINT64_MAX);
        }
    }
    sc->set_lean = sc->pf_lean && sc->base >= sc->set_head_end;
    /* a window goes on through this region: one search with the whole set, the names' hits kept */
    sc->set_divert = sc->set_lean && sc->set_read_to == sc->base && sc->set_open_until > sc->base;
    if (sc->set_divert)
        sc->set_lean = 0;
    sc->n_kept = 0;
    sc->region_line = sc->lines_before + 1; /* advance() left the count at the region's start */
    scan_prefilter_region(sc, end, avail);
    if (!sc->status)
        scan_close_line(sc);
    if (!sc->status)
        scan_settings_windows(sc, end);
    /* the buffer moves on: read the pending timestamps while their lines are here (after the source's
     * last failure only a caller that resumes from its clock needs them) */
    if (!sc->status && (!last || sc->src->keep_time))
        scan_resolve_deferred_time(sc);
    sc->cur_open = 0;
    sc->line_end = 0;
}

/* Where the processed region may end: after the line that leaves LOOKAHEAD_LINES complete lines
 * behind it in the buffer. 0 when more data is needed first. */
static size_t safe_end(const scanner *sc, int eof)
{
    if (eof)
        return sc->len;
    size_t hi = sc->len;
    if (hi && sc->buf[hi - 1] == '\r')
        hi--; /* maybe the first half of \r\n */
    size_t seen = 0, first_term = 0;
    for (size_t i = hi; i > 0; i--) {
        unsigned char c = sc->buf[i - 1];
        if (c == '\n' || c == '\r') {
            if (seen == 0)
                first_term = i;
            if (++seen > LOOKAHEAD_LINES)
                return i;
            if (c == '\n' && i >= 2 && sc->buf[i - 2] == '\r')
                i--;
        }
        if (hi - i > 65536 && seen > 0)
            return first_term; /* long lines: do not wait for lookahead */
    }
    return sc->len >= BUF_CAP ? first_term : 0;
}

/* The reading side of a run: the callback and what it said so far. */
typedef struct {
    scan_read_fn rd;
    void *ud;
    int eof;
    int idle; /* the reader said SCAN_READ_IDLE: scan all complete lines before reading again */
    uint64_t total;
    scan_result *res;
} reader;

/* One read into the free end of the buffer; 1 when bytes came. */
static int read_once(scanner *sc, reader *r)
{
    ssize_t n = r->rd(r->ud, sc->buf + sc->len, read_cap(sc->base + sc->len, BUF_CAP - sc->len));
    if (n == SCAN_READ_IDLE) {
        r->idle = 1;
        return 0;
    }
    if (n <= 0) {
        r->eof = 1;
        r->res->read_error = n < 0;
        return 0;
    }
    sc->len += (size_t)n;
    r->total += (uint64_t)n;
    return 1;
}

/* Read until a chunk is held, the input ends or goes idle (a live stream: after each read). */
static void fill(scanner *sc, reader *r)
{
    while (!r->eof && !r->idle && sc->len < READ_CHUNK)
        if (!read_once(sc, r) || sc->src->eager)
            break; /* a live stream: what came is all there is for now */
}

/* Where this round's region ends: 0 when more bytes are needed for a complete line. */
static size_t region_end_for(const scanner *sc, const reader *r)
{
    size_t end = safe_end(sc, r->eof);
    if (r->idle && !r->eof) {
        /* the stream went quiet: scan every complete line, keep only an unfinished one */
        size_t hi = sc->buf[sc->len - 1] == '\r' ? sc->len - 1 : sc->len;
        for (end = hi; end > 0 && sc->buf[end - 1] != '\n' && sc->buf[end - 1] != '\r'; end--)
            ;
    }
    if (r->eof && sc->len > SCAN_LINE_CAP && !memchr(sc->buf, '\n', sc->len) && !memchr(sc->buf, '\r', sc->len))
        end = 0; /* the tail is one over-long line: cut it like any other */
    return end;
}

/* The region buf[0..end) is done: count its lines, let the classifier pass it (unless it is the last:
 * a settings tracker brought to the end of a source is reset unused, a tenth of a rank file's cost),
 * and keep the rest. */
static void advance(scanner *sc, size_t end, int last)
{
    scan_line_number_at(sc, end);
    if (!last && sc->set_head_end != UINT64_MAX && !sc->src->reread)
        scan_hist_push(sc, end);
    scan_view v = scan_view_at(sc);
    if (!last)
        classify_pass(sc->cl, &v, end);
    sc->last_byte = sc->buf[end - 1];
    size_t rest = sc->len - end;
    if (sc->prefetching) {
        /* the helper read the next bytes into the other buffer after room for the rest: put the
         * rest there, and go on in that buffer */
        unsigned char *to = buffer_at(sc->mem2, sc->base + end), *t = sc->mem;
        memcpy(to, sc->buf + end, rest);
        sc->buf = to;
        sc->mem = sc->mem2;
        sc->mem2 = t;
    } else {
        unsigned char *to = buffer_at(sc->mem, sc->base + end);
        memmove(to, sc->buf + end, rest);
        sc->buf = to;
    }
    sc->base += end;
    sc->len = rest;
    sc->counted_to = 0;
    sc->jump_pos = SIZE_MAX;
}

/* What the helper read ahead for the region just scanned (prefetch): waited for, and counted as
 * read_once counts a read. The bytes sit after the rest in the buffer advance() goes on in. */
static void take_prefetch(scanner *sc, reader *r)
{
    splitter *h = sc->split;
    int waited = 0;
    pthread_mutex_lock(&h->mu);
    while (h->prefetch == 1) {
        waited = 1;
        pthread_cond_wait(&h->cv, &h->mu);
    }
    h->prefetch = 0;
    ssize_t n = h->pre_n;
    pthread_mutex_unlock(&h->mu);
    /* the helper had more to do than this thread: give it less of the next region's search */
    if (waited && h->share < 56)
        h->share++;
    if (n == SCAN_READ_IDLE) {
        r->idle = 1;
        n = 0;
    } else if (n <= 0) {
        r->eof = 1;
        r->res->read_error = n < 0;
        n = 0;
    }
    sc->pre_n = (size_t)n;
    sc->n_ahead++;
    r->total += (uint64_t)n;
}

/* long: the chunk loop (read, region, advance) and the end of the source, which share its locals; one loop,
 * one exit. */
oomscan_status scanner_run(scanner *sc, scan_read_fn rd, void *rd_ud, const scan_source *src, phase_state *ps,
                           const scan_sink *sink, scan_result *res, scan_progress_fn progress, void *progress_ud)
{
    memset(res, 0, sizeof *res);
    sc->src = src;
    sc->ps = ps;
    sc->status = OOMSCAN_OK;
    sc->len = 0;
    sc->buf = buffer_at(sc->mem, src->base_offset);
    sc->base = src->base_offset;
    sc->counted_to = 0;
    sc->jump_pos = SIZE_MAX;
    sc->lines_before = src->base_line;
    sc->n_split = sc->n_ahead = 0;
    sc->clock.have = src->time0 != NULL;
    sc->clock.at = src->time0 ? src->time0_end : UINT64_MAX; /* where the resumed clock's line ended */
    sc->clock.cls = -1;
    if (src->time0)
        sc->clock.last = *src->time0;
    classifier_begin(sc->cl, src, ps, sink);
    sc->set_head_end = sc->db->n_config_lits ? src->base_offset + sc->win_head : UINT64_MAX;
    sc->set_read_to = sc->set_head_end;
    sc->set_open_until = 0;
    sc->set_tr_at = UINT64_MAX;
    sc->hist_len = sc->hist_at = 0;
    sc->hist_end = src->base_offset;
    classify_settings_until(sc->cl, sc->set_head_end);
    reader r = {rd, rd_ud, 0, 0, 0, res};
    sc->rd = rd;
    sc->rd_ud = rd_ud;
    int in_long_line = 0;
    while (!sc->status) {
        fill(sc, &r);
        if (progress)
            progress(progress_ud, r.total);
        if (sc->len == 0) {
            if (r.idle) {
                r.idle = 0;
                continue;
            }
            break;
        }
        size_t end = region_end_for(sc, &r);
        if (end == 0 && r.idle) {
            r.idle = 0; /* only an unfinished line: wait for the rest of it */
            continue;
        }
        if (end == 0 && sc->len < BUF_CAP && !r.eof && sc->len <= SCAN_LINE_CAP) {
            read_once(sc, &r); /* need more bytes for a complete line: read on */
            continue;
        }
        /* a plain source read in one go (not a live stream, not the last bytes) may be read ahead */
        sc->may_prefetch = sc->split && !r.eof && !src->eager; /* a helper has its buffer */
        sc->prefetching = 0;
        if (end == 0) {
            /* No terminator in a full buffer: a line over the cap. Cut it; the piece keeps the line
             * number and the rest is scanned as the same line. */
            end = SCAN_LINE_CAP;
            if (!in_long_line)
                res->lines_cut++;
            in_long_line = 1;
            scan_region(sc, end, end, r.eof && end == sc->len);
        } else {
            in_long_line = 0;
            scan_region(sc, end, sc->len, r.eof && end == sc->len);
        }
        if (sc->prefetching)
            take_prefetch(sc, &r); /* even after an error: the helper writes the other buffer */
        advance(sc, end, r.eof && end == sc->len && !sc->prefetching);
        if (sc->prefetching) {
            sc->len += sc->pre_n;
            sc->prefetching = 0;
        }
        r.idle = 0;
        if (r.eof && sc->len == 0)
            break;
    }
    res->bytes = sc->base - src->base_offset;
    /* the last line counts even without a terminator */
    res->lines = sc->lines_before - src->base_line;
    if (sc->base > src->base_offset && sc->last_byte != '\n' && sc->last_byte != '\r')
        res->lines++;
    res->regions_split = sc->n_split;
    res->reads_ahead = sc->n_ahead;
    res->have_time = sc->clock.have;
    res->last_time = sc->clock.last;
    res->last_time_end = sc->clock.at;
    if (!sc->status && sc->cl)
        sc->status = classify_end(sc->cl);
    return sc->status;
}

typedef struct {
    const char *p;
    size_t n, pos;
} text_src;

static ssize_t text_read(void *ud, void *buf, size_t cap)
{
    text_src *t = ud;
    size_t k = t->n - t->pos < cap ? t->n - t->pos : cap;
    memcpy(buf, t->p + t->pos, k);
    t->pos += k;
    return (ssize_t)k;
}

oomscan_status scanner_run_text(scanner *sc, const char *text, size_t n, const scan_source *src, phase_state *ps,
                                const scan_sink *sink, scan_result *res)
{
    text_src t = {text, n, 0};
    return scanner_run(sc, text_read, &t, src, ps, sink, res, NULL, NULL);
}

