/* scan.c - the streaming scanner: chunks -> prefilter -> candidate lines -> classify -> sink. */
#include "match/scan.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match/classify.h"
#include "match/config.h"
#include "match/lines.h"
#include "match/match.h"
#include "match/names.h"

#define READ_CHUNK (512u * 1024u) /* with the line cap, the buffer is 1.5 MiB: the peak RSS budget is 16 MiB */
#define BUF_CAP (SCAN_LINE_CAP + READ_CHUNK)
#define LOOKAHEAD_LINES 6   /* lines kept after the processed region: wrapped messages, code lines,
                              * a pattern's "continuation" lines (at most PDB_CONT_MAX) */
#define MAX_LINE_TARGETS CLASSIFY_MAX_TARGETS
#define DEFERRED_CAP 1024   /* cheap lines whose timestamp is read only when a finding needs it */
#define SPLIT_MIN (128u * 1024u) /* a region is split for the helper only from twice this size: a gzip
                                  * input's regions are 384-640 KiB (the read-ahead's blocks) */
#define SPLIT_HITS 32768    /* hits the helper keeps for one half; past that the main thread goes on */

/* The helper thread of a split scan (scanner_use_helper): it runs the prefilter over the second part
 * of each region and keeps the hits, while the scanner's thread does the first part. The hits are
 * then replayed in order, so the callback sees exactly the sequence of a one-thread scan. */
typedef struct {
    size_t pos;
    uint64_t lines; /* terminators in [from, pos): the helper counts its part's lines too */
    size_t eol;     /* the end of the hit's line (on_hit's lines_eol), found by the helper */
    uint32_t lit;
    int32_t stamp;  /* the time stamp of the hit's line, when the helper read it: an index into
                     * `stamps`, SPLIT_NO_STAMP (it has none) or SPLIT_UNREAD */
} split_hit;

/* What the scanner needs of a literal at each of its hits, in 8 bytes, so that a hit reads one cache
 * line of this table (the stream has evicted it between hits: a second table cost the nccl shape
 * 3% of its CPU time). */
typedef struct {
    uint8_t cheap; /* classify_is_cheap's answer */
    int8_t vote;   /* a literal whose one target is a framework vote: its framework, else -1 */
    uint32_t len;  /* a setting's name (cheap == CHEAP_SETTINGS): its length, else 0 */
    uint8_t names; /* one of its targets is a setting (pdb_prefilter_names finds it) */
} lit_info;

/* A setting's name among the helper's hits (lit_info.len): what its bytes say, read by the helper
 * (config_occurrence_read), and where its line starts, so that the replay reads neither. */
typedef struct {
    config_occurrence occ;
    uint32_t ls_back; /* the line starts this many bytes before the hit */
} split_occ;

#define SPLIT_UNREAD (-1)
#define SPLIT_NO_STAMP (-2)
#define SPLIT_BATCH 128  /* hits the helper hands over at once (one lock per batch) */
#define SPLIT_STAMPS 4096 /* stamps kept per part; lines past that are read by the scanner's thread */

typedef struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int job, quit;
    const prefilter *pf;
    const unsigned char *buf;
    size_t from, end, avail;
    split_hit *hits;
    split_occ *occs; /* occs[i] for hits[i] when that is a setting's name (info[lit].len); made at the
                      * first one (NULL: none yet, or out of memory) */
    size_t n;
    /* hits[0..published) may be replayed while the helper goes on: the scanner's thread replays them
     * as they come instead of after the whole part (its replay then overlaps the helper's search) */
    size_t published;
    int waiting; /* the scanner's thread waits for the next batch: signal it */
    size_t stopped_at; /* SIZE_MAX: every hit of [from, end) is in hits; else those before it are */
    size_t counted_to; /* terminators counted in [from, counted_to): `lines` */
    uint64_t lines;
    unsigned share;    /* the scanner thread's part of a region, in 64ths (prefilter_region) */
    /* With `stamps_too`, the helper also reads the time stamp of each line its hits are on (with its
     * own matcher), which the scanner's thread would otherwise do for the deferred lines. */
    int stamps_too;
    matcher *m;
    size_t line_end; /* end of the line of the last hit, 0 = none yet */
    timefmt *stamps;
    size_t n_stamps;
    /* The next read, done here once this part is searched (prefetch 1 -> 2): while the scanner's
     * thread replays the hits, the helper reads the bytes after the buffer into the other buffer,
     * so that the scanner's thread, which read alone between regions, no longer does (scanner_run). */
    int prefetch;
    scan_read_fn rd;
    void *rd_ud;
    unsigned char *pre_to;
    size_t pre_cap;
    ssize_t pre_n;
    const lit_info *info; /* the scanner's: hits that are no setting are dropped here too */
    int divert;           /* the region's settings are kept for a window (set_divert): none read ahead */
    const pdb_literal *lits;
    config_prefixes prefixes; /* config_occurrence_read's, this thread's */
    size_t ls, ls_eol; /* the start of the line that ends at ls_eol (read_ahead's: split_collect's line
                        * of the last hit, when a setting's name needed it) */
} splitter;

struct scanner {
    const pdb *db;
    matcher *m;     /* shared with the classifier: the deferred time stamps are read with it */
    classifier *cl; /* what a hit line means (classify.h) */
    unsigned char *buf; /* the bytes held, buf[0] at stream offset base; it lies in mem (buffer_at) */
    /* per run */
    const scan_source *src;
    phase_state *ps;
    oomscan_status status;
    size_t len;        /* bytes in buf */
    uint64_t base;     /* stream offset of buf[0] */
    size_t counted_to; /* terminators counted in buf[0..counted_to) */
    uint64_t lines_before;
    /* The helper counted the lines of its part: at jump_pos, lines_before is jump_lines (line_number_at).
     * SIZE_MAX: no such count. */
    size_t jump_pos;
    uint64_t jump_lines;
    scan_clock clock;
    /* the line being collected from prefilter hits */
    size_t cur_start, cur_end;
    int cur_open;
    size_t cur_targets[MAX_LINE_TARGETS];
    size_t n_cur;
    size_t region_end; /* end of the processed region (hits beyond are next round's) */
    /* The hit line: every literal seen on it once. Marker, framework and setting literals ("cheap") act at
     * once, without stripping the line; the others wait in cur_targets for process_line. */
    size_t line_end;   /* end of the line of the last hit; 0 = none yet in this region */
    size_t line_pos;   /* first hit on it */
    size_t seen[MAX_LINE_TARGETS];
    size_t n_seen;
    /* per literal (lit_info). A setting's name inside a longer name reads nothing (config_name_whole):
     * it is dropped as found, before it costs a line; the others go to classify_setting without a look
     * at the literal's targets; a framework vote is counted without classify_cheap. */
    lit_info *info;
    /* Lines that had only cheap hits: the original design read each one's timestamp (findings carry
     * the last time seen). That costs a regex run per line, so it is done lazily, newest first, only
     * up to the first line that has a time, when a finding or the end of the buffer needs it. */
    struct {
        size_t pos, end; /* the first hit on the line and the line's end (on_hit found it) */
        const timefmt *stamp; /* the helper read the line: its stamp, or no_stamp when none */
        int settings; /* the line's hits were all setting names (it stands for its run, see close_line) */
    } deferred[DEFERRED_CAP];
    size_t n_deferred;
    timefmt stamp_of[DEFERRED_CAP]; /* deferred[i]'s stamp when read as its line closed (eager_stamps) */
    int eager_stamps;               /* read them so: the helper reads those of its part (prefilter_region) */
    const timefmt *line_stamp; /* the same for the line of the last hit (NULL: not read yet) */
    int line_settings; /* every hit on the line of the last hit named a setting (lit_info.cheap == CHEAP_SETTINGS) */
    size_t line_start; /* where that line starts, SIZE_MAX until a cheap target needed it */
    const timefmt *replay_stamp; /* the same for the line of the hit being replayed */
    size_t replay_eol;           /* and the end of its line (0: on_hit finds it) */
    const split_occ *replay_occ; /* and the helper's reading of its setting's name (NULL: none) */
    size_t n_pushed, n_read;   /* deferred lines, and how many of them had to be read, since the last split */
    splitter *split; /* NULL: one thread */
    unsigned char *mem;   /* the block buf lies in (buffer_new): buf is placed in it so that reads land on
                           * a cache line (buffer_at) */
    unsigned char *mem2;  /* with a helper: the block it reads the next bytes into (prefetch) */
    scan_read_fn rd;      /* this run's reader, */
    void *rd_ud;
    int may_prefetch;     /* and whether the helper may read ahead for the region being scanned */
    int prefetching;      /* it was asked to: scanner_run takes what it read (take_prefetch) */
    size_t pre_n;         /* bytes it read */
    unsigned split_cores; /* scanner_use_helper's `cores` */
    uint64_t n_split;     /* regions split in this run (scan_result.regions_split) */
    uint64_t n_ahead;     /* and read ahead for (scan_result.reads_ahead) */
    unsigned char last_byte; /* last byte of the stream so far: did it end with a terminator? */
    /* The settings windows (scan.h). Past set_head_end a region is searched without the settings'
     * names (set_lean); at its end, the parts of it and of the history that a window covers are
     * searched again for them alone (settings_windows). Every setting in a window before set_read_to
     * has been read; set_open_until is where the last failure's window ends. */
    uint64_t set_head_end, set_read_to, set_open_until;
    uint64_t win_head, win_before, win_after; /* the windows' sizes (scanner_settings_windows) */
    int set_lean;
    const prefilter *pf_lean, *pf_names; /* the database's (pdb_prefilter_lean), once a source needed them */
    config_tracker *set_tr; /* the windows' own: reset at each, it reads back as a lost tracker does */
    /* The bytes before the region, the last HIST_CAP of them, for the window before a failure: a ring
     * whose next byte goes to hist[hist_at], holding the hist_len bytes that end at offset hist_end. */
    unsigned char *hist;
    size_t hist_len, hist_at;
    uint64_t hist_end;
    unsigned char *win;   /* a window's part before the region, copied (HIST_CAP bytes) */
    /* A region that a window goes on through is searched with the whole set (pf), its settings' hits
     * kept here for the window (set_divert) instead of a second search with pf_names: in order. */
    int set_divert;
    struct kept_hit {
        size_t pos;
        size_t lit;
    } *kept;
    size_t n_kept, cap_kept;
    uint64_t set_tr_at;   /* where set_tr stands: the end of the last window read */
    uint64_t region_line; /* the line number at the region's start */
};

#define HIST_CAP (SCAN_SETTINGS_BEFORE + CONFIG_BACK_CAP)

/* A scan buffer's block: page-aligned, with room for BUF_CAP bytes placed up to a cache line in
 * (buffer_at) and 16 more for vector loads past their end. Where a read lands matters: the kernel's
 * copy out of the page cache (`rep movsb`) ran at a third of its speed into a destination that sat
 * otherwise on the cache line than its source (malloc's block, a read after a region's carried rest):
 * on 512 rank files that copy was a ninth of the run's time. */
#define BUF_LINE 64u
#define BUF_ALIGN 4096u
static unsigned char *buffer_new(void)
{
    return aligned_alloc(BUF_ALIGN, (BUF_CAP + BUF_LINE + 16 + BUF_ALIGN - 1) / BUF_ALIGN * BUF_ALIGN);
}

/* Where in block `mem` the buffer of stream offset `base` starts: each byte then sits on the cache line
 * as it sits in the file's pages, so that a read's destination is as aligned as its source. */
static unsigned char *buffer_at(unsigned char *mem, uint64_t base)
{
    return mem + base % BUF_LINE;
}

/* How much to ask of a read at stream offset `at` with room for `cap`: a large read ends at a page of
 * the file, so that the next one starts on one, and (buffer_at) at the start of a cache line of the
 * buffer. A plain file's stream offset is its file offset. */
static size_t read_cap(uint64_t at, size_t cap)
{
    return cap > 2 * BUF_ALIGN ? cap - (size_t)((at + cap) % BUF_ALIGN) : cap;
}

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
    if (sc->split) {
        pthread_mutex_lock(&sc->split->mu);
        sc->split->quit = 1;
        pthread_cond_broadcast(&sc->split->cv);
        pthread_mutex_unlock(&sc->split->mu);
        pthread_join(sc->split->thread, NULL);
        pthread_mutex_destroy(&sc->split->mu);
        pthread_cond_destroy(&sc->split->cv);
        free(sc->split->hits);
        free(sc->split->occs);
        free(sc->split->stamps);
        matcher_free(sc->split->m);
        free(sc->split);
    }
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

/* ---- line counting ----------------------------------------------------------------------- */

static uint64_t line_number_at(scanner *sc, size_t pos)
{
    if (pos >= sc->jump_pos && sc->counted_to <= sc->jump_pos) {
        sc->lines_before = sc->jump_lines;
        sc->counted_to = sc->jump_pos;
    }
    if (pos > sc->counted_to) {
        sc->lines_before += scan_count_lines(sc->buf + sc->counted_to, pos - sc->counted_to);
        sc->counted_to = pos;
    }
    return sc->lines_before + 1;
}

/* ---- one hit line ------------------------------------------------------------------------ */

static void resolve_deferred_time(scanner *sc);

/* What the classifier may read of the buffer. */
static scan_view view(const scanner *sc)
{
    scan_view v = {sc->buf, sc->len, sc->region_end, sc->base};
    return v;
}

static void process_line(scanner *sc)
{
    uint64_t line = line_number_at(sc, sc->cur_start);
    resolve_deferred_time(sc); /* earlier lines' time first: this line's own time then wins */
    scan_view v = view(sc);
    oomscan_status st = classify_line(sc->cl, &v, sc->cur_start, sc->cur_end, line, sc->cur_targets, sc->n_cur,
                                      &sc->clock);
    if (st)
        sc->status = st;
}

static const timefmt no_stamp; /* a line read and found without a time stamp (by its address) */

/* The time stamp of the line holding pos and ending at end, as the clock takes it: 1 when it has one. */
static int read_stamp(matcher *m, const unsigned char *buf, size_t pos, size_t end, timefmt *t)
{
    size_t s = lines_bol(buf, 0, pos); /* the end is known (a metrics line runs to kilobytes) */
    if (!timefmt_may_hold((const char *)buf + s, end - s))
        return 0; /* no stamp can be read from it: no prefix regex need run (a settings dump's lines) */
    line_ctx ctx;
    return matcher_line_time(m, (const char *)buf + s, end - s, &ctx) &&
           timefmt_parse(ctx.time, strlen(ctx.time), t) == 0;
}

/* Read the timestamps of the deferred cheap lines, newest first, until one has a time: exactly what
 * stripping each of them in order would have left in last_time. */
static void resolve_deferred_time(scanner *sc)
{
    while (sc->n_deferred > 0) {
        --sc->n_deferred;
        const timefmt *stamp = sc->deferred[sc->n_deferred].stamp;
        timefmt t;
        sc->n_read++; /* needed, whichever thread read it */
        if (!stamp) {
            if (read_stamp(sc->m, sc->buf, sc->deferred[sc->n_deferred].pos, sc->deferred[sc->n_deferred].end, &t))
                stamp = &t;
        }
        if (stamp && stamp != &no_stamp) {
            sc->clock.last = *stamp;
            sc->clock.have = 1;
            sc->clock.at = sc->base + sc->deferred[sc->n_deferred].end;
            sc->clock.cls = -1;
            break;
        }
    }
    sc->n_deferred = 0;
}

/* The hit line is over: run its full work, or remember it for its timestamp. */
static void close_line(scanner *sc)
{
    if (sc->line_end == 0)
        return;
    if (sc->cur_open) {
        process_line(sc);
        sc->cur_open = 0;
    } else {
        /* A run of lines that only name settings is one dump, printed in one format: its last line
         * stands for it (a run of a million unstamped echoes is read once, not a million times; the
         * clock differs only when a run's last line lacks the stamp an earlier one of it had) */
        int extend = sc->line_settings && sc->n_deferred > 0 && sc->deferred[sc->n_deferred - 1].settings;
        if (!extend && sc->n_deferred == DEFERRED_CAP)
            resolve_deferred_time(sc); /* newest first, so resolving early changes nothing */
        size_t i = extend ? sc->n_deferred - 1 : sc->n_deferred++;
        sc->deferred[i].pos = sc->line_pos;
        sc->deferred[i].stamp = sc->line_stamp;
        sc->deferred[i].end = sc->line_end;
        sc->deferred[i].settings = sc->line_settings;
        sc->n_pushed++;
        /* A log whose lines mostly lack a stamp has each of them read at the end of the region, newest
         * first; for the lines of this thread's part that came after the helper had finished, with
         * the second core idle. While the helper reads the stamps of its part (stamps_too), this
         * thread reads those of its own as they close: the same reads, in the parallel phase, where
         * the share balances them. Not a settings run: only its last line would be read. */
        if (!sc->line_stamp && !sc->line_settings && sc->eager_stamps) {
            timefmt *t = &sc->stamp_of[i];
            sc->deferred[i].stamp = read_stamp(sc->m, sc->buf, sc->line_pos, sc->line_end, t) ? t : &no_stamp;
        }
    }
    sc->line_end = 0;
}

/* A setting's hit in a region a window goes on through: kept for settings_windows. 0 out of memory. */
static int keep_hit(scanner *sc, size_t lit, size_t pos)
{
    if (sc->n_kept == sc->cap_kept) {
        size_t cap = sc->cap_kept ? 2 * sc->cap_kept : 4096;
        struct kept_hit *k = realloc(sc->kept, cap * sizeof *k);
        if (!k) {
            sc->status = OOMSCAN_ERR_NOMEM;
            return 0;
        }
        sc->kept = k;
        sc->cap_kept = cap;
    }
    sc->kept[sc->n_kept].pos = pos;
    sc->kept[sc->n_kept++].lit = lit;
    return 1;
}

static size_t on_hit(void *ud, size_t lit, size_t pos)
{
    scanner *sc = ud;
    lit_info f = sc->info[lit];
    uint32_t len = f.len;
    if (f.names && sc->set_divert && !keep_hit(sc, lit, pos))
        return SIZE_MAX;
    if (len && sc->base + pos >= sc->set_head_end)
        return pos + 1; /* past the head a setting is read in a window (settings_windows), not here */
    if (len && !sc->replay_eol && !config_name_whole((const char *)sc->buf, pos, len, sc->len))
        return pos + 1; /* not the setting: a part of a longer name (a replayed hit: the helper saw to it) */
    if (sc->line_end == 0 || pos >= sc->line_end) {
        close_line(sc);
        if (sc->status)
            return SIZE_MAX;
        sc->line_end = sc->replay_eol ? sc->replay_eol : lines_eol(sc->buf, pos, sc->region_end);
        sc->line_pos = pos;
        sc->line_stamp = sc->replay_stamp;
        sc->line_settings = 1;
        sc->line_start = SIZE_MAX;
        sc->n_seen = 0;
    }
    /* one literal acts once per line, however often it occurs there */
    for (size_t i = 0; i < sc->n_seen; i++)
        if (sc->seen[i] == lit)
            return pos + 1;
    if (sc->n_seen == MAX_LINE_TARGETS)
        return pos + 1; /* as many literals as one line may carry: the rest adds nothing */
    sc->seen[sc->n_seen++] = lit;
    sc->line_settings &= f.cheap == CHEAP_SETTINGS;
    if (f.cheap) {
        if (f.vote >= 0) {
            phase_framework_vote(sc->ps, f.vote); /* what classify_cheap would do */
            return pos + 1;
        }
        scan_view v = view(sc);
        uint64_t line = f.cheap == CHEAP_VOTES ? 0 : line_number_at(sc, pos); /* counted later */
        oomscan_status st;
        if (len) {
            const config_occurrence *occ = NULL;
            if (sc->replay_occ) {
                occ = &sc->replay_occ->occ;
                sc->line_start = pos - sc->replay_occ->ls_back;
            }
            st = classify_setting(sc->cl, &v, sc->db->literals[lit].text, len, pos, line, &sc->line_start, sc->line_end,
                                  occ);
        } else {
            st = classify_cheap(sc->cl, &v, lit, pos, line, &sc->line_start, sc->line_end);
        }
        if (st) {
            sc->status = st;
            return SIZE_MAX;
        }
        return pos + 1;
    }
    if (!sc->cur_open) {
        size_t e;
        lines_bounds(sc->buf, 0, sc->region_end, pos, &sc->cur_start, &e);
        sc->cur_end = sc->line_end;
        sc->cur_open = 1;
        sc->n_cur = 0;
    }
    if (sc->n_cur < MAX_LINE_TARGETS)
        sc->cur_targets[sc->n_cur++] = lit;
    return pos + 1;
}

/* A setting's name among the helper's hits: its bytes read here, where the second core has time,
 * not in the replay (a log that echoes settings on every line is a log of hits), with on_hit's line
 * bounds and classify_cheap's line start. Out of split_collect's line: most logs have few. */
static __attribute__((noinline)) void read_ahead(splitter *h, size_t lit, size_t pos)
{
    if (!h->occs && !(h->occs = malloc(SPLIT_HITS * sizeof *h->occs)))
        return; /* out of memory: the replay reads them itself */
    if (h->ls_eol != h->line_end) {
        h->ls = lines_bol(h->buf, 0, pos);
        h->ls_eol = h->line_end;
    }
    split_occ *o = &h->occs[h->n];
    config_occurrence_read((const char *)h->buf, h->ls, h->line_end, pos, h->lits[lit].text, h->info[lit].len,
                           &h->prefixes, &o->occ);
    o->ls_back = (uint32_t)(pos - h->ls);
}

static size_t split_collect(void *ud, size_t lit, size_t pos)
{
    splitter *h = ud;
    if (h->n == SPLIT_HITS) {
        /* full: hand back everything before this position; the scanner's thread scans on from it */
        h->stopped_at = pos;
        while (h->n > 0 && h->hits[h->n - 1].pos == pos)
            h->n--;
        return SIZE_MAX;
    }
    uint32_t len = h->info[lit].len;
    if (len && !config_name_whole((const char *)h->buf, pos, len, h->avail))
        return pos + 1; /* as on_hit: not a hit at all */
    h->lines += scan_count_lines(h->buf + h->counted_to, pos - h->counted_to);
    h->counted_to = pos;
    int32_t stamp = SPLIT_UNREAD;
    int new_line = h->line_end == 0 || pos >= h->line_end;
    if (new_line)
        h->line_end = lines_eol(h->buf, pos, h->end); /* on_hit's bounds: the replay need not look */
    if (len && !h->divert)
        read_ahead(h, lit, pos);
    if (h->stamps_too && new_line) {
        /* a new line: its stamp, as resolve_deferred_time would read it (on_hit's bounds) */
        if (h->n_stamps < SPLIT_STAMPS) {
            stamp = read_stamp(h->m, h->buf, pos, h->line_end, &h->stamps[h->n_stamps]) ? (int32_t)h->n_stamps++
                                                                                          : SPLIT_NO_STAMP;
        }
    }
    h->hits[h->n].pos = pos;
    h->hits[h->n].lit = (uint32_t)lit;
    h->hits[h->n].lines = h->lines;
    h->hits[h->n].eol = h->line_end;
    h->hits[h->n].stamp = stamp;
    h->n++;
    if (h->n - h->published >= SPLIT_BATCH) {
        pthread_mutex_lock(&h->mu);
        h->published = h->n;
        if (h->waiting)
            pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
    }
    return pos + 1; /* on_hit never skips either: the replay equals a direct scan */
}

static void *split_main(void *arg)
{
    splitter *h = arg;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (!h->job && !h->quit)
            pthread_cond_wait(&h->cv, &h->mu);
        if (h->quit)
            break;
        pthread_mutex_unlock(&h->mu);
        h->stopped_at = SIZE_MAX;
        h->counted_to = h->from;
        h->lines = 0;
        h->line_end = 0;
        h->ls_eol = SIZE_MAX; /* a line of the last region may end where one of this ends */
        h->n_stamps = 0;
        prefilter_scan(h->pf, h->buf, h->from, h->end, h->avail, split_collect, h);
        /* and the lines up to where the scanner's thread goes on (a hit's start, or the end) */
        size_t upto = h->stopped_at != SIZE_MAX ? h->stopped_at : h->end;
        h->lines += scan_count_lines(h->buf + h->counted_to, upto - h->counted_to);
        h->counted_to = upto;
        pthread_mutex_lock(&h->mu);
        h->published = h->n;
        h->job = 0;
        pthread_cond_broadcast(&h->cv);
        if (h->prefetch == 1) {
            pthread_mutex_unlock(&h->mu);
            ssize_t n = h->rd(h->rd_ud, h->pre_to, h->pre_cap);
            pthread_mutex_lock(&h->mu);
            h->pre_n = n;
            h->prefetch = 2;
            pthread_cond_broadcast(&h->cv);
        }
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

void scanner_regex_budget(scanner *sc, uint64_t budget) { matcher_budget_reset(sc->m, budget); }
const char *scanner_regex_note(const scanner *sc) { return matcher_budget_note(sc->m); }

static void splitter_free_parts(splitter *h)
{
    free(h->hits);
    free(h->occs);
    free(h->stamps);
    matcher_free(h->m);
    free(h);
}

int scanner_use_helper(scanner *sc, unsigned cores)
{
    sc->split_cores = cores;
    if (sc->split)
        return 0;
    splitter *h = calloc(1, sizeof *h);
    if (!h)
        return -1;
    if (!sc->mem2 && !(sc->mem2 = buffer_new())) {
        free(h);
        return -1;
    }
    h->hits = malloc(SPLIT_HITS * sizeof *h->hits);
    h->stamps = malloc(SPLIT_STAMPS * sizeof *h->stamps);
    h->m = matcher_new(sc->db);
    h->info = sc->info;
    h->lits = sc->db->literals;
    h->share = 26; /* 40%: a start; prefilter_region moves it to where both threads end together */
    if (!h->hits || !h->stamps || !h->m || pthread_mutex_init(&h->mu, NULL) != 0) {
        splitter_free_parts(h);
        return -1;
    }
    if (pthread_cond_init(&h->cv, NULL) != 0) {
        pthread_mutex_destroy(&h->mu);
        splitter_free_parts(h);
        return -1;
    }
    if (pthread_create(&h->thread, NULL, split_main, h) != 0) {
        pthread_cond_destroy(&h->cv);
        pthread_mutex_destroy(&h->mu);
        splitter_free_parts(h);
        return -1;
    }
    sc->split = h;
    return 0;
}

/* Every hit of [0, end) to on_hit, in order: in two parts on two threads when a helper is there. */
static void prefilter_region(scanner *sc, size_t end, size_t avail)
{
    const prefilter *pf = sc->set_lean ? sc->pf_lean : sc->db->pf;
    splitter *h = sc->split;
    sc->eager_stamps = 0;
    if (!h || end < 2 * SPLIT_MIN || (sc->src->decoder_thread && sc->split_cores < 3)) {
        prefilter_scan(pf, sc->buf, 0, end, avail, on_hit, sc);
        return;
    }
    sc->n_split++;
    /* The scanner's thread also handles the hits, of both parts, and reads the input: its part of the
     * prefilter work (`share`) is moved, a 64th per region, towards where both threads finish their
     * parts at once: it was 40% always, which left the helper idle for a third of a mixed log's scan
     * and the scanner's thread alone on a log of hits (metrics lines). Where a part ends changes
     * nothing in the output: the hits are replayed in order. */
    size_t mid = end / 64 * h->share;
    if (sc->buf[mid - 1] == '\r')
        mid++; /* not between \r and \n: each thread would count a terminator there */
    pthread_mutex_lock(&h->mu);
    h->pf = pf;
    h->buf = sc->buf;
    h->from = mid;
    h->end = end;
    h->avail = avail;
    /* the stamps of the helper's lines too, when most deferred lines had to be read last time (a log
     * without stamps: each line is read back to the last finding or the start of the region); where
     * most lines have a stamp, the newest one ends the reading and the rest is never read */
    h->stamps_too = sc->n_read * 2 > sc->n_pushed;
    h->divert = sc->set_divert;
    sc->eager_stamps = h->stamps_too;
    sc->n_read = sc->n_pushed = 0;
    h->n = h->published = 0;
    h->job = 1;
    if (sc->may_prefetch) {
        /* the bytes after the buffer go to the other one, after room for this region's carry */
        size_t rest = sc->len - end;
        h->prefetch = 1;
        h->rd = sc->rd;
        h->rd_ud = sc->rd_ud;
        h->pre_to = buffer_at(sc->mem2, sc->base + end) + rest;
        h->pre_cap = read_cap(sc->base + sc->len, BUF_CAP - rest);
        sc->prefetching = 1;
    }
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    prefilter_scan(pf, sc->buf, 0, mid, avail, on_hit, sc);
    pthread_mutex_lock(&h->mu);
    int helper_first = !h->job;
    pthread_mutex_unlock(&h->mu);
    /* the helper counted the lines of its part from mid: each of its hits carries its count */
    if (!sc->status)
        line_number_at(sc, mid);
    uint64_t at_mid = sc->lines_before;
    /* Replay the helper's hits in batches as it publishes them. The helper reads the buffer: wait for
     * it to finish even when this thread stops early. */
    size_t i = 0, left = SIZE_MAX; /* left: hits still to replay when the helper was seen done */
    int waited = 0;
    for (;;) {
        pthread_mutex_lock(&h->mu);
        while (h->job && (h->published == i || sc->status)) {
            waited = 1;
            h->waiting = 1;
            pthread_cond_wait(&h->cv, &h->mu);
        }
        h->waiting = 0;
        size_t upto = h->published;
        int done = !h->job;
        if (done && left == SIZE_MAX)
            left = upto - i;
        /* taken here, not per hit: the fields around them are the helper's, written at every hit (a
         * read of that cache line per replayed hit cost the nccl shape 5%); occs may be made while
         * the helper goes on, before any hit it holds is published */
        const split_hit *hits = h->hits;
        const split_occ *occs = h->occs;
        const timefmt *stamps = h->stamps;
        pthread_mutex_unlock(&h->mu);
        for (; i < upto && !sc->status; i++) {
            const split_hit *x = &hits[i];
            sc->jump_pos = x->pos;
            sc->jump_lines = at_mid + x->lines;
            sc->replay_stamp = x->stamp >= 0 ? &stamps[x->stamp] : x->stamp == SPLIT_NO_STAMP ? &no_stamp : NULL;
            sc->replay_eol = x->eol;
            sc->replay_occ = occs && sc->info[x->lit].len ? &occs[i] : NULL;
            (void)on_hit(sc, x->lit, x->pos); /* it stops only by setting sc->status */
            sc->replay_stamp = NULL;
            sc->replay_eol = 0;
            sc->replay_occ = NULL;
        }
        if (done && (i == upto || sc->status))
            break;
    }
    /* The share moves, a 64th per region, towards where this thread's part and replay end as the
     * helper ends: it waited for hits, so it takes more; the helper was done before this thread's own
     * part was, or while this thread still had more than an eighth of its hits to replay (a log of
     * settings, each read ahead by the helper), so it takes less. Between the two it stays: moving
     * it whenever this thread did not wait made it wait every other region on a log whose replay is
     * quick (nccl), each wait a wake-up. */
    if (waited && !helper_first && h->share < 56)
        h->share++;
    else if ((helper_first || (left != SIZE_MAX && left > h->n / 8)) && h->share > 8)
        h->share--;
    if (sc->status)
        return;
    sc->jump_pos = h->counted_to;
    sc->jump_lines = at_mid + h->lines;
    if (h->stopped_at != SIZE_MAX)
        prefilter_scan(pf, sc->buf, h->stopped_at, end, avail, on_hit, sc);
}

/* ---- the settings windows ------------------------------------------------------------------ */

/* One piece of a window's search (window_piece): the bytes it reads (the history's copy, or the
 * buffer), the line of the last hit and the literals acted on there. */
typedef struct {
    scanner *sc;
    scan_view v;      /* v.base is the stream offset of v.buf[0] */
    size_t line_end;  /* the end of the last hit's line, 0 none yet */
    size_t ls;
    uint64_t line;    /* its number */
    size_t counted;   /* line numbers counted up to here (a hit position) */
    size_t seen[MAX_LINE_TARGETS];
    size_t n_seen;
} window_walk;

static size_t on_window_hit(void *ud, size_t lit, size_t pos)
{
    window_walk *w = ud;
    scanner *sc = w->sc;
    const char *b = (const char *)w->v.buf;
    size_t len = sc->info[lit].len ? sc->info[lit].len : strlen(sc->db->literals[lit].text);
    if (!config_name_whole(b, pos, len, w->v.len))
        return pos + 1;
    if (w->line_end == 0 || pos >= w->line_end) {
        w->line += scan_count_lines(w->v.buf + w->counted, pos - w->counted);
        w->counted = pos;
        w->ls = lines_bol(w->v.buf, 0, pos);
        w->line_end = lines_eol(w->v.buf, pos, w->v.region_end);
        w->n_seen = 0;
    }
    for (size_t i = 0; i < w->n_seen; i++) /* as on_hit: one literal acts once per line */
        if (w->seen[i] == lit)
            return pos + 1;
    if (w->n_seen == MAX_LINE_TARGETS)
        return pos + 1;
    w->seen[w->n_seen++] = lit;
    oomscan_status st = classify_window_setting(sc->cl, sc->set_tr, &w->v, lit, pos, w->line, w->ls, w->line_end);
    if (st) {
        sc->status = st;
        return SIZE_MAX;
    }
    return pos + 1;
}

/* The stream bytes [from, hist_end) of the history into dst. */
static void hist_copy(const scanner *sc, unsigned char *dst, uint64_t from)
{
    size_t n = (size_t)(sc->hist_end - from);
    size_t at = (sc->hist_at + HIST_CAP - n) % HIST_CAP; /* where `from` lies in the ring */
    size_t first = n < HIST_CAP - at ? n : HIST_CAP - at;
    memcpy(dst, sc->hist + at, first);
    memcpy(dst + first, sc->hist, n - first);
}

/* The region buf[0..end) is done: remember its last bytes for a later failure's window. */
static void hist_push(scanner *sc, size_t end)
{
    if (!sc->hist && !(sc->hist = malloc(HIST_CAP)))
        return; /* out of memory: a window then starts where the history does (the region) */
    const unsigned char *p = sc->buf;
    size_t n = end;
    if (n >= HIST_CAP) {
        p += n - HIST_CAP;
        n = HIST_CAP;
        sc->hist_at = 0;
    }
    size_t first = n < HIST_CAP - sc->hist_at ? n : HIST_CAP - sc->hist_at;
    memcpy(sc->hist + sc->hist_at, p, first);
    memcpy(sc->hist, p + first, n - first);
    sc->hist_at = (sc->hist_at + n) % HIST_CAP;
    sc->hist_len = sc->hist_len + n < HIST_CAP ? sc->hist_len + n : HIST_CAP;
    sc->hist_end = sc->base + end;
}

/* The stream bytes [s0, base) into dst: from the file again (scan_source.reread) or from the ring.
 * 0 when the file no longer has them. */
static int history_into(const scanner *sc, unsigned char *dst, uint64_t s0)
{
    size_t n = (size_t)(sc->base - s0);
    if (sc->src->reread)
        return sc->src->reread(sc->src->reread_ud, dst, n, s0) == (ssize_t)n;
    hist_copy(sc, dst, s0);
    return 1;
}

/* The window's hits in buf[from..to) (buf[0] at stream offset base, len bytes held, lines ending by
 * region_end), the first on line `line` or later; the tracker then stands at `to`. */
static void window_piece(scanner *sc, const unsigned char *buf, size_t len, size_t region_end, uint64_t base,
                         size_t from, size_t to, uint64_t line)
{
    window_walk w = {.sc = sc, .v = {buf, len, region_end, base}, .counted = from, .line = line};
    if (buf == sc->buf && sc->set_divert) { /* the search found them already */
        size_t lo = 0, hi = sc->n_kept;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (sc->kept[mid].pos < from)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t i = lo; i < sc->n_kept && sc->kept[i].pos < to && !sc->status; i++)
            if (on_window_hit(&w, sc->kept[i].lit, sc->kept[i].pos) == SIZE_MAX)
                break;
    } else
        prefilter_scan(sc->pf_names, buf, from, to, len, on_window_hit, &w);
    config_tracker_pass(sc->set_tr, (const char *)buf, base, to);
}

/* Read the settings named in stream bytes [from, to) (to <= the region's end, buf[0..end)) that
 * set_read_to has not passed, with the names' prefilter: the part before the region in a copy of
 * the history (from the file again, or the ring; HIST_CAP bytes at most, with CONFIG_BACK_CAP before
 * `from` for the keys of a nested dump), the rest in place. A window that goes on where the last one
 * stopped keeps its tracker, as the scan's own does from region to region; one that starts apart
 * starts a new one, which reads back within the bytes it is given, as a tracker that lost its place. */
static void window_read(scanner *sc, size_t end, uint64_t from, uint64_t to)
{
    uint64_t oldest = sc->base - sc->hist_len;
    if (sc->src->reread)
        oldest = sc->base - sc->src->base_offset < HIST_CAP ? sc->src->base_offset : sc->base - HIST_CAP;
    else if (sc->hist_end != sc->base)
        oldest = sc->base;
    if (from < sc->set_read_to)
        from = sc->set_read_to;
    if (from < oldest)
        from = oldest; /* a failure found after the history moved on: its window starts there */
    if (from >= to)
        return;
    if (from != sc->set_tr_at)
        config_tracker_reset(sc->set_tr);
    if (from < sc->base) {
        uint64_t s0 = from - oldest > CONFIG_BACK_CAP ? from - CONFIG_BACK_CAP : oldest;
        size_t n = (size_t)(sc->base - s0), f = (size_t)(from - s0);
        if (!sc->win && !(sc->win = malloc(HIST_CAP + 16))) {
            sc->status = OOMSCAN_ERR_NOMEM;
            return;
        }
        /* the file may have shrunk since it was read: then the window starts with the region */
        if (history_into(sc, sc->win, s0)) {
            size_t t = to < sc->base ? (size_t)(to - s0) : n;
            window_piece(sc, sc->win, n, n, s0, f, t, sc->region_line - scan_count_lines(sc->win + f, n - f));
        }
        from = sc->base;
    }
    if (from < to && !sc->status) {
        size_t f = (size_t)(from - sc->base);
        window_piece(sc, sc->buf, sc->len, end, sc->base, f, (size_t)(to - sc->base),
                     sc->region_line + scan_count_lines(sc->buf, f));
    }
    sc->set_read_to = sc->set_tr_at = to;
}

/* After a region: read the settings of the windows it holds (scan.h): the rest of an earlier
 * failure's, and the one around each failure found in it. */
static void settings_windows(scanner *sc, size_t end)
{
    if (!sc->pf_names)
        return;
    uint64_t e = sc->base + end, first, last, until = sc->set_open_until;
    if (classify_failures_take(sc->cl, &first, &last)) {
        uint64_t lo = first > sc->win_before ? first - sc->win_before : 0;
        if (lo > until) { /* apart from the earlier window: its rest first */
            window_read(sc, end, sc->set_read_to, until < e ? until : e);
            if (sc->set_read_to < lo)
                sc->set_read_to = lo;
        }
        if (last + sc->win_after > until)
            until = sc->set_open_until = last + sc->win_after;
    }
    if (!sc->status)
        window_read(sc, end, sc->set_read_to, until < e ? until : e);
}

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
    prefilter_region(sc, end, avail);
    if (!sc->status)
        close_line(sc);
    if (!sc->status)
        settings_windows(sc, end);
    /* the buffer moves on: read the pending timestamps while their lines are here (after the source's
     * last failure only a caller that resumes from its clock needs them) */
    if (!sc->status && (!last || sc->src->keep_time))
        resolve_deferred_time(sc);
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
    line_number_at(sc, end);
    if (!last && sc->set_head_end != UINT64_MAX && !sc->src->reread)
        hist_push(sc, end);
    scan_view v = view(sc);
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
