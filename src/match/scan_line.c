/* scan_line.c - one hit line: the prefilter's hits gathered by line, cheap lines' time stamps
 * deferred until a finding needs them, the rest classified (classify.h). Line numbers counted here. */
#include "match/scan_impl.h"

#include "base/grow.h"

/* ---- line counting ----------------------------------------------------------------------- */

uint64_t scan_line_number_at(scanner *sc, size_t pos)
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

void scan_resolve_deferred_time(scanner *sc);

void scan_process_line(scanner *sc)
{
    uint64_t line = scan_line_number_at(sc, sc->cur_start);
    scan_resolve_deferred_time(sc); /* earlier lines' time first: this line's own time then wins */
    scan_view v = scan_view_at(sc);
    oomscan_status st = classify_line(sc->cl, &v, sc->cur_start, sc->cur_end, line, sc->cur_targets, sc->n_cur,
                                      &sc->clock);
    if (st)
        sc->status = st;
}

const timefmt scan_no_stamp; /* a line read and found without a time stamp (by its address) */

/* The time stamp of the line holding pos and ending at end, as the clock takes it: 1 when it has one. */
int scan_read_stamp(matcher *m, const unsigned char *buf, size_t pos, size_t end, timefmt *t)
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
void scan_resolve_deferred_time(scanner *sc)
{
    while (sc->n_deferred > 0) {
        --sc->n_deferred;
        const timefmt *stamp = sc->deferred[sc->n_deferred].stamp;
        timefmt t;
        sc->n_read++; /* needed, whichever thread read it */
        if (!stamp) {
            if (scan_read_stamp(sc->m, sc->buf, sc->deferred[sc->n_deferred].pos, sc->deferred[sc->n_deferred].end, &t))
                stamp = &t;
        }
        if (stamp && stamp != &scan_no_stamp) {
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
void scan_close_line(scanner *sc)
{
    if (sc->line_end == 0)
        return;
    if (sc->cur_open) {
        scan_process_line(sc);
        sc->cur_open = 0;
    } else {
        /* A run of lines that only name settings is one dump, printed in one format: its last line
         * stands for it (a run of a million unstamped echoes is read once, not a million times; the
         * clock differs only when a run's last line lacks the stamp an earlier one of it had) */
        int extend = sc->line_settings && sc->n_deferred > 0 && sc->deferred[sc->n_deferred - 1].settings;
        if (!extend && sc->n_deferred == DEFERRED_CAP)
            scan_resolve_deferred_time(sc); /* newest first, so resolving early changes nothing */
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
            sc->deferred[i].stamp = scan_read_stamp(sc->m, sc->buf, sc->line_pos, sc->line_end, t) ? t : &scan_no_stamp;
        }
    }
    sc->line_end = 0;
}

/* A setting's hit in a region a window goes on through: kept for scan_settings_windows. 0 out of memory. */
static int keep_hit(scanner *sc, size_t lit, size_t pos)
{
    if (GROW(sc->kept, sc->n_kept, sc->cap_kept, 4096)) {
        sc->status = OOMSCAN_ERR_NOMEM;
        return 0;
    }
    sc->kept[sc->n_kept].pos = pos;
    sc->kept[sc->n_kept++].lit = lit;
    return 1;
}

size_t scan_on_hit(void *ud, size_t lit, size_t pos)
{
    scanner *sc = ud;
    lit_info f = sc->info[lit];
    uint32_t len = f.len;
    if (f.names && sc->set_divert && !keep_hit(sc, lit, pos))
        return SIZE_MAX;
    if (len && sc->base + pos >= sc->set_head_end)
        return pos + 1; /* past the head a setting is read in a window (scan_settings_windows), not here */
    if (len && !sc->replay_eol && !config_name_whole((const char *)sc->buf, pos, len, sc->len))
        return pos + 1; /* not the setting: a part of a longer name (a replayed hit: the helper saw to it) */
    if (sc->line_end == 0 || pos >= sc->line_end) {
        scan_close_line(sc);
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
        scan_view v = scan_view_at(sc);
        uint64_t line = f.cheap == CHEAP_VOTES ? 0 : scan_line_number_at(sc, pos); /* counted later */
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
