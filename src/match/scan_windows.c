/* scan_windows.c - the settings windows (scan.h, SCAN_SETTINGS_*): past a source's head, the
 * settings' names are searched only around failures, in the bytes kept before them and read after. */
#include "match/scan_impl.h"

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
    for (size_t i = 0; i < w->n_seen; i++) /* as scan_on_hit: one literal acts once per line */
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
void scan_hist_push(scanner *sc, size_t end)
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
void scan_settings_windows(scanner *sc, size_t end)
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

