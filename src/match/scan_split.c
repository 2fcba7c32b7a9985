/* scan_split.c - the helper thread of a split scan (scanner_use_helper): the prefilter over the
 * second part of a large region on a second core, its hits replayed in order on the scanner's thread,
 * so the sink sees what a one-thread scan gives. */
#include "match/scan_impl.h"

/* A setting's name among the helper's hits: its bytes read here, where the second core has time,
 * not in the replay (a log that echoes settings on every line is a log of hits), with scan_on_hit's line
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
        return pos + 1; /* as scan_on_hit: not a hit at all */
    h->lines += scan_count_lines(h->buf + h->counted_to, pos - h->counted_to);
    h->counted_to = pos;
    int32_t stamp = SPLIT_UNREAD;
    int new_line = h->line_end == 0 || pos >= h->line_end;
    if (new_line)
        h->line_end = lines_eol(h->buf, pos, h->end); /* scan_on_hit's bounds: the replay need not look */
    if (len && !h->divert)
        read_ahead(h, lit, pos);
    if (h->stamps_too && new_line) {
        /* a new line: its stamp, as scan_resolve_deferred_time would read it (scan_on_hit's bounds) */
        if (h->n_stamps < SPLIT_STAMPS) {
            stamp = scan_read_stamp(h->m, h->buf, pos, h->line_end, &h->stamps[h->n_stamps]) ? (int32_t)h->n_stamps++
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
    return pos + 1; /* scan_on_hit never skips either: the replay equals a direct scan */
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
    h->share = 26; /* 40%: a start; scan_prefilter_region moves it to where both threads end together */
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

/* Every hit of [0, end) to scan_on_hit, in order: in two parts on two threads when a helper is there.
 * long: one region in two parts on two threads: the hand-off and the replay share the lock, the split point
 * and the counts, so the protocol reads in one place. */
void scan_prefilter_region(scanner *sc, size_t end, size_t avail)
{
    const prefilter *pf = sc->set_lean ? sc->pf_lean : sc->db->pf;
    splitter *h = sc->split;
    sc->eager_stamps = 0;
    if (!h || end < 2 * SPLIT_MIN || (sc->src->decoder_thread && sc->split_cores < 3)) {
        prefilter_scan(pf, sc->buf, 0, end, avail, scan_on_hit, sc);
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
    prefilter_scan(pf, sc->buf, 0, mid, avail, scan_on_hit, sc);
    pthread_mutex_lock(&h->mu);
    int helper_first = !h->job;
    pthread_mutex_unlock(&h->mu);
    /* the helper counted the lines of its part from mid: each of its hits carries its count */
    if (!sc->status)
        scan_line_number_at(sc, mid);
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
            sc->replay_stamp = x->stamp >= 0 ? &stamps[x->stamp] : x->stamp == SPLIT_NO_STAMP ? &scan_no_stamp : NULL;
            sc->replay_eol = x->eol;
            sc->replay_occ = occs && sc->info[x->lit].len ? &occs[i] : NULL;
            (void)scan_on_hit(sc, x->lit, x->pos); /* it stops only by setting sc->status */
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
        prefilter_scan(pf, sc->buf, h->stopped_at, end, avail, scan_on_hit, sc);
}

void scan_splitter_free(splitter *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->quit = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    splitter_free_parts(h);
}
