/* flightrec.c - NCCL flight recorder dumps (TORCH_NCCL_TRACE_BUFFER_SIZE > 0; written on a watchdog
 * timeout with TORCH_NCCL_DUMP_ON_TIMEOUT=1 to TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank>, default
 * /tmp/nccl_trace_rank_<rank>). Layout as torch/csrc/distributed/c10d/FlightRecorder.cpp (and, before
 * 2.5, NCCLUtils.hpp's NCCLTraceBuffer::dump) writes it, pickled by the C++ Pickler or, from 2.5,
 * also as JSON (dump_json, keys sorted, pg_status values as strings):
 *   {"version": "2.x", "pg_config": {name: {"name", "desc", "ranks": "[0, 1]"}},
 *    "pg_status": {pg_id: {"last_enqueued_collective", "last_started_collective",
 *                          "last_completed_collective"}},            (2.3+)
 *    "entries": [{"record_id", "pg_id", "pg_name": (name, desc), "collective_seq_id", "p2p_seq_id",
 *                 "op_id", "profiling_name": "nccl:all_reduce", "time_created_ns", "input_sizes":
 *                 [[...]], "input_dtypes", "output_sizes", "state": "scheduled|started|completed",
 *                 "time_discovered_started_ns", "time_discovered_completed_ns", "retired",
 *                 "timeout_ms", "is_p2p", "frames": [{"name", "filename", "line"}]}],
 *    "nccl_comm_state": {...}}
 * Read together as tools/flight_recorder (fr_trace) does: per process group, each rank's last
 * enqueued / started / completed collective; ranks behind the others never reached the collective
 * the others wait in, and that is the root of the job's watchdog timeouts. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumps/common.h"

#define FR_OPS_KEPT 8 /* latest collectives kept per process group and rank */
#define FR_FRAMES_KEPT 24
#define FR_SIZES_NODES 256 /* input sizes printed when they hold at most this many values, else "(large)" */
#define FR_SEQ_MAX 9007199254740992.0 /* 2^53: sequence numbers and ids are exact below it */

/* The last run of digits in the file name (nccl_trace_rank_3, rank3.json, fr_3.pkl), or "" */
static void rank_from_name(const char *path, char *out, size_t cap)
{
    out[0] = 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *end = NULL, *start = NULL;
    for (const char *p = base; *p; p++)
        if (*p >= '0' && *p <= '9') {
            if (!(p > base && p[-1] >= '0' && p[-1] <= '9'))
                start = p;
            end = p + 1;
        }
    if (start && end && (size_t)(end - start) < cap) {
        memcpy(out, start, (size_t)(end - start));
        out[end - start] = 0;
    }
}

/* How many values `v` holds, counted up to `limit` + 1. */
static size_t count_values(const cJSON *v, size_t limit)
{
    size_t n = 1;
    for (const cJSON *c = v->child; c && n <= limit; c = c->next)
        n += count_values(c, limit - n);
    return n;
}

static char *sizes_text(const cJSON *sizes)
{
    if (!sizes)
        return strdup("[]");
    if (count_values(sizes, FR_SIZES_NODES) > FR_SIZES_NODES)
        return strdup("(large)");
    char *s = cJSON_PrintUnformatted(sizes);
    return s ? s : strdup("[]");
}

/* A frame as the summary keeps it: its three fields, checked, names cut to what a traceback shows. */
static cJSON *frame_copy(const cJSON *f)
{
    const char *file = dumps_str(f, "filename"), *name = dumps_str(f, "name");
    if (!file || !name)
        return NULL;
    int64_t line = 0;
    dumps_int(dumps_get(f, "line"), 0, INT32_MAX, &line);
    char fb[256], nb[128];
    snprintf(fb, sizeof fb, "%s", file);
    snprintf(nb, sizeof nb, "%s", name);
    cJSON *o = cJSON_CreateObject();
    if (o && (!cJSON_AddStringToObject(o, "filename", fb) || !cJSON_AddNumberToObject(o, "line", (double)line) ||
              !cJSON_AddStringToObject(o, "name", nb))) {
        cJSON_Delete(o);
        o = NULL;
    }
    return o;
}

static cJSON *new_pg(cJSON *pgs, strmap *idx, const char *key, const char *name)
{
    cJSON *pg = cJSON_AddObjectToObject(pgs, key);
    if (!pg || strmap_put(idx, key, pg) != 0)
        return NULL;
    cJSON_AddStringToObject(pg, "name", name);
    cJSON_AddNumberToObject(pg, "enq", -1);
    cJSON_AddNumberToObject(pg, "started", -1);
    cJSON_AddNumberToObject(pg, "completed", -1);
    cJSON_AddObjectToObject(pg, "ops");
    return pg;
}

static void set_max(cJSON *pg, const char *key, double v)
{
    cJSON *n = cJSON_GetObjectItemCaseSensitive(pg, key);
    if (n && v > n->valuedouble)
        cJSON_SetNumberValue(n, v);
}

/* One entry (a collective) into its process group's summary. 0, -1 out of memory. */
static int summarise_entry(const cJSON *e, cJSON *pgs, strmap *idx)
{
    if (cJSON_IsTrue(dumps_get(e, "is_p2p")))
        return 0;
    int64_t seq, pgid;
    if (!dumps_int(dumps_get(e, "collective_seq_id"), 0, FR_SEQ_MAX, &seq) ||
        !dumps_int(dumps_get(e, "pg_id"), 0, FR_SEQ_MAX, &pgid))
        return 0;
    char key[32], sk[32];
    snprintf(key, sizeof key, "%lld", (long long)pgid);
    snprintf(sk, sizeof sk, "%lld", (long long)seq);
    cJSON *pg = strmap_get(idx, key);
    if (!pg) {
        const cJSON *nm = dumps_arr(e, "pg_name");
        const char *name = dumps_item_str(nm, 0), *desc = dumps_item_str(nm, 1);
        if (!(pg = new_pg(pgs, idx, key, name ? name : key)))
            return -1;
        if (desc)
            cJSON_AddStringToObject(pg, "desc", desc);
    }
    const char *state = dumps_str(e, "state");
    state = state ? state : "scheduled";
    set_max(pg, "enq", (double)seq);
    if (strcmp(state, "started") == 0 || strcmp(state, "completed") == 0)
        set_max(pg, "started", (double)seq);
    if (strcmp(state, "completed") == 0)
        set_max(pg, "completed", (double)seq);
    cJSON *ops = cJSON_GetObjectItemCaseSensitive(pg, "ops");
    cJSON_DeleteItemFromObjectCaseSensitive(ops, sk);
    if (cJSON_GetArraySize(ops) >= FR_OPS_KEPT)
        cJSON_DeleteItemFromArray(ops, 0); /* oldest first: entries come in record order */
    cJSON *op = cJSON_AddObjectToObject(ops, sk);
    if (!op)
        return -1;
    const char *pn = dumps_str(e, "profiling_name");
    cJSON_AddStringToObject(op, "op", pn ? pn : "?");
    cJSON_AddStringToObject(op, "state", state);
    char *sz = sizes_text(dumps_get(e, "input_sizes"));
    if (sz)
        cJSON_AddStringToObject(op, "sizes", sz);
    free(sz);
    /* what is absent reads as 0 or none: a dump naming 40,000 groups keeps 40,000 of these */
    double ns = dumps_numk(e, "time_created_ns", 0), to = dumps_numk(e, "timeout_ms", 0);
    if (ns != 0)
        cJSON_AddNumberToObject(op, "time_ns", ns);
    if (to != 0)
        cJSON_AddNumberToObject(op, "timeout_ms", to);
    const cJSON *f;
    cJSON *fr = NULL;
    int nf = 0;
    cJSON_ArrayForEach(f, dumps_arr(e, "frames"))
    {
        if (nf >= FR_FRAMES_KEPT)
            break;
        cJSON *c = frame_copy(f);
        if (c && (fr || (fr = cJSON_AddArrayToObject(op, "frames")))) {
            cJSON_AddItemToArray(fr, c);
            nf++;
        } else {
            cJSON_Delete(c);
        }
    }
    return 0;
}

/* long: one dump's summary built from its sections in order, with one cleanup path (goto) on failure. */
int flightrec_summarise(const cJSON *dump, const scan_source *src, struct dumps_acc *acc, char **why)
{
    (void)why;
    if (!cJSON_IsObject(dump) || !dumps_get(dump, "version") ||
        (!dumps_get(dump, "entries") && !dumps_get(dump, "pg_config")))
        return 1;
    cJSON *sum = cJSON_CreateObject();
    strmap *idx = strmap_new(), *cfg = strmap_new();
    int rc = -1;
    if (!sum || !idx || !cfg)
        goto done;
    /* a rank that is no whole number (a name, -1, NaN) is taken from the file name, as when absent */
    char rank[32];
    int64_t rk;
    if (dumps_int(dumps_get(dump, "rank"), 0, INT32_MAX, &rk))
        snprintf(rank, sizeof rank, "%lld", (long long)rk);
    else
        rank_from_name(src->member ? src->member : src->path, rank, sizeof rank);
    cJSON_AddStringToObject(sum, "rank", rank);
    cJSON_AddStringToObject(sum, "path", src->path);
    if (src->member)
        cJSON_AddStringToObject(sum, "member", src->member);
    cJSON_AddNumberToObject(sum, "input", (double)src->input);
    const char *ver = dumps_str(dump, "version");
    cJSON_AddStringToObject(sum, "version", ver ? ver : "?");
    cJSON *pgs = cJSON_AddObjectToObject(sum, "pgs");
    if (!pgs)
        goto done;
    /* collectives from the entries, in record order */
    const cJSON *e;
    cJSON_ArrayForEach(e, dumps_arr(dump, "entries"))
    {
        if (summarise_entry(e, pgs, idx) != 0)
            goto done;
    }
    /* pg_status (2.3+) says it directly, and also for groups whose entries the ring buffer lost */
    const cJSON *ps;
    cJSON_ArrayForEach(ps, dumps_obj(dump, "pg_status"))
    {
        cJSON *pg = strmap_get(idx, ps->string);
        if (!pg && !(pg = new_pg(pgs, idx, ps->string, ps->string)))
            goto done;
        static const char *const keys[3][2] = {{"enq", "last_enqueued_collective"},
                                               {"started", "last_started_collective"},
                                               {"completed", "last_completed_collective"}};
        for (int k = 0; k < 3; k++) {
            int64_t v = -1;
            if (!dumps_int(dumps_get(ps, keys[k][1]), -1, FR_SEQ_MAX, &v))
                v = -1;
            cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(pg, keys[k][0]), (double)v);
        }
    }
    /* members of each group, from pg_config (keyed by name) */
    const cJSON *pc;
    cJSON_ArrayForEach(pc, dumps_obj(dump, "pg_config"))
    {
        if (strmap_put(cfg, pc->string, (void *)pc) != 0)
            goto done;
    }
    cJSON *pg;
    cJSON_ArrayForEach(pg, pgs)
    {
        pc = strmap_get(cfg, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pg, "name")));
        if (!pc)
            continue;
        const char *desc = dumps_str(pc, "desc");
        if (desc && !cJSON_HasObjectItem(pg, "desc"))
            cJSON_AddStringToObject(pg, "desc", desc);
        const char *rks = dumps_str(pc, "ranks");
        if (rks)
            cJSON_AddStringToObject(pg, "ranks", rks);
    }
    cJSON_AddItemToArray(acc->fr, sum);
    sum = NULL;
    rc = 0;
done:
    cJSON_Delete(sum);
    strmap_free(idx);
    strmap_free(cfg);
    return rc;
}

/* ---- reading the ranks together (the summaries are this reader's own: their types are known) ---- */

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static double num(const cJSON *v, double dflt) { return cJSON_IsNumber(v) ? v->valuedouble : dflt; }

typedef struct {
    const pdb *db;
    story *st;
    cJSON **dumps;      /* the summaries, by rank */
    strmap **pgs;    /* per dump: process group key -> its summary */
    size_t n;
    dumps_prober *prober;
    const volatile sig_atomic_t *stop;
} fr_ctx;

static const cJSON *pg_of(const fr_ctx *c, size_t i, const char *pgkey) { return strmap_get(c->pgs[i], pgkey); }

/* "0,1,2" from the ranks in `set` (a JSON array of rank strings) */
static void join_ranks(const cJSON *set, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, set)
    {
        int k = snprintf(out + len, cap - len, "%s%s", len ? "," : "", r->valuestring);
        if (k < 0 || (size_t)k >= cap - len)
            break;
        len += (size_t)k;
    }
}

static long long rank_no(const cJSON *d)
{
    const char *r = cJSON_GetStringValue(get(d, "rank"));
    return r && r[0] ? strtoll(r, NULL, 10) : -1;
}

static int cmp_rank(const void *a, const void *b)
{
    long long x = rank_no(*(const cJSON *const *)a), y = rank_no(*(const cJSON *const *)b);
    return (x > y) - (x < y);
}

/* 1 if ranks may pass different input sizes to op `name` ("nccl:all_to_all"): fr_trace compares no input
 * sizes for all-to-all and scatter, whose per-rank splits differ by design (tools/flight_recorder/
 * components/types.py, Op.match). */
static int uneven_inputs(const char *name)
{
    const char *c = strchr(name, ':');
    const char *op = c ? c + 1 : name;
    return strncmp(op, "all_to_all", 10) == 0 || strncmp(op, "alltoall", 8) == 0 || strcmp(op, "scatter") == 0;
}

/* The time of an op's record, when it is one a job ran at. */
static const timefmt *op_time(const cJSON *op, timefmt *t)
{
    double ns = op ? num(get(op, "time_ns"), 0) : 0;
    return ns > 0 && dumps_epoch_time(ns / 1e9, t) == 0 ? t : NULL;
}

/* Every rank reached the same collectives: fr_trace's other check, whether they agree on what each
 * one is. The first collective every rank kept whose op or input sizes differ between ranks is a
 * mismatch (a rank called another collective, or with other shapes): NCCL waits for ever there. */
static int mismatch(const fr_ctx *c, const char *pgkey)
{
    const cJSON *pg0 = NULL;
    size_t first = 0;
    for (size_t i = 0; i < c->n && !pg0; i++)
        if ((pg0 = pg_of(c, i, pgkey)))
            first = i;
    if (!pg0)
        return 0;
    const cJSON *op0;
    cJSON_ArrayForEach(op0, get(pg0, "ops"))
    {
        const char *name0 = cJSON_GetStringValue(get(op0, "op")), *sz0 = cJSON_GetStringValue(get(op0, "sizes"));
        for (size_t i = first + 1; i < c->n; i++) {
            const cJSON *pg = pg_of(c, i, pgkey);
            const cJSON *op = pg ? get(get(pg, "ops"), op0->string) : NULL;
            if (!op)
                continue;
            const char *name = cJSON_GetStringValue(get(op, "op")), *sz = cJSON_GetStringValue(get(op, "sizes"));
            if (name0 && name && strcmp(name0, name) == 0 &&
                (uneven_inputs(name) || (sz0 && sz && strcmp(sz0, sz) == 0)))
                continue;
            const char *r0 = cJSON_GetStringValue(get(c->dumps[first], "rank")),
                       *r1 = cJSON_GetStringValue(get(c->dumps[i], "rank"));
            r0 = r0 && r0[0] ? r0 : "?";
            r1 = r1 && r1[0] ? r1 : "?";
            const char *pname = cJSON_GetStringValue(get(pg0, "name")), *desc = cJSON_GetStringValue(get(pg0, "desc"));
            name0 = name0 ? name0 : "?";
            name = name ? name : "?";
            sz0 = sz0 ? sz0 : "?";
            sz = sz ? sz : "?";
            char *pgtext = dumps_strf("%s%s%s%s", pname ? pname : pgkey, desc ? " (" : "", desc ? desc : "", desc ? ")" : "");
            char *text = pgtext ? dumps_strf("Flight recorder: collective #%s of process group %s differs across ranks: "
                                             "rank %s %s (input sizes %s) but rank %s %s (input sizes %s)",
                                             op0->string, pgtext, r0, name0, sz0, r1, name, sz)
                                : NULL;
            cJSON *v = cJSON_CreateObject();
            int bad = !text || !v;
            bad = bad || dumps_put_value(v, "seq", op0->string) || dumps_put_value(v, "pg", pgtext) ||
                  dumps_put_value(v, "rank", r0) || dumps_put_value(v, "op", name0) ||
                  dumps_put_value(v, "input_sizes", sz0) || dumps_put_value(v, "other_rank", r1) ||
                  dumps_put_value(v, "other_op", name) || dumps_put_value(v, "other_input_sizes", sz);
            char *tb = dumps_traceback(get(op, "frames"));
            timefmt t;
            dumps_stated d = {
                .probe = "Flight recorder: collective #1 of process group 0 differs across ranks: rank 0 x (input sizes "
                         "[]) but rank 1 y (input sizes [])",
                .traceback = tb,
                .text = text,
                .values = v,
                .path = cJSON_GetStringValue(get(c->dumps[i], "path")),
                .member = cJSON_GetStringValue(get(c->dumps[i], "member")),
                .kind = "flight_recorder",
                .rank = r1,
                .input = (size_t)num(get(c->dumps[i], "input"), 0),
                .time = op_time(op, &t),
            };
            long idx = -1;
            int rc = bad ? (cJSON_Delete(v), -1) : dumps_state_finding(c->prober, &d, c->st, &idx);
            free(tb);
            free(text);
            free(pgtext);
            if (idx >= 0)
                c->st->f[idx].echo = 0; /* the cause the job's watchdog timeouts echo */
            return rc;
        }
    }
    return 0;
}

/* The laggard finding's figures beyond what its line states. */
static void laggard_values(cJSON *m, const char *wait, const char *sizes, const cJSON *last, const char *lagk,
                           const cJSON *wait_op)
{
    if (!cJSON_HasObjectItem(m, "waiting_ranks"))
        cJSON_AddStringToObject(m, "waiting_ranks", wait);
    if (sizes && !cJSON_HasObjectItem(m, "input_sizes"))
        cJSON_AddStringToObject(m, "input_sizes", sizes);
    if (last && !cJSON_HasObjectItem(m, "laggard_last_collective")) {
        const char *op = cJSON_GetStringValue(get(last, "op")), *state = cJSON_GetStringValue(get(last, "state"));
        char *l = dumps_strf("#%s %s (%s)", lagk, op ? op : "?", state ? state : "?");
        if (l)
            cJSON_AddStringToObject(m, "laggard_last_collective", l);
        free(l);
    }
    if (wait_op && !cJSON_HasObjectItem(m, "timeout_ms") && num(get(wait_op, "timeout_ms"), 0) > 0)
        cJSON_AddNumberToObject(m, "timeout_ms", num(get(wait_op, "timeout_ms"), 0));
}

/* One process group across the dumps that know it: a finding when some ranks are behind.
 * long: one process group's verdict across ranks: the laggards found, then the finding built from the same
 * locals. */
static int analyse_pg(const fr_ctx *c, const char *pgkey)
{
    double max_enq = -1;
    for (size_t i = 0; i < c->n; i++) {
        const cJSON *pg = pg_of(c, i, pgkey);
        if (pg && num(get(pg, "enq"), -1) > max_enq)
            max_enq = num(get(pg, "enq"), -1);
    }
    if (max_enq < 0)
        return 0;
    cJSON *waiting = cJSON_CreateArray(), *missing = cJSON_CreateArray();
    if (!waiting || !missing) {
        cJSON_Delete(waiting);
        cJSON_Delete(missing);
        return -1;
    }
    double min_lag = max_enq;
    const cJSON *lag_pg = NULL, *lag_dump = NULL, *wait_op = NULL;
    for (size_t i = 0; i < c->n; i++) {
        const cJSON *pg = pg_of(c, i, pgkey);
        if (!pg)
            continue;
        double enq = num(get(pg, "enq"), -1);
        const char *rk = cJSON_GetStringValue(get(c->dumps[i], "rank"));
        cJSON_AddItemToArray(enq < max_enq ? missing : waiting, cJSON_CreateString(rk && rk[0] ? rk : "?"));
        if (enq < max_enq && enq < min_lag) {
            min_lag = enq;
            lag_pg = pg;
            lag_dump = c->dumps[i];
        }
    }
    int rc = 0;
    if (missing->child && waiting->child) {
        /* the first collective the laggards never enqueued, as a waiting rank recorded it */
        char seqk[32], lagk[32];
        snprintf(seqk, sizeof seqk, "%.0f", min_lag + 1);
        snprintf(lagk, sizeof lagk, "%.0f", min_lag);
        for (size_t i = 0; i < c->n && !wait_op; i++) {
            const cJSON *pg = pg_of(c, i, pgkey);
            if (pg && num(get(pg, "enq"), -1) == max_enq)
                wait_op = get(get(pg, "ops"), seqk);
        }
        char miss[256], wait[256];
        join_ranks(missing, miss, sizeof miss);
        join_ranks(waiting, wait, sizeof wait);
        const char *name = cJSON_GetStringValue(get(lag_pg, "name"));
        const char *desc = cJSON_GetStringValue(get(lag_pg, "desc"));
        const char *op = wait_op ? cJSON_GetStringValue(get(wait_op, "op")) : NULL;
        const char *sizes = wait_op ? cJSON_GetStringValue(get(wait_op, "sizes")) : NULL;
        const cJSON *last = get(get(lag_pg, "ops"), lagk);
        char *pgtext = dumps_strf("%s%s%s%s", name ? name : pgkey, desc ? " (" : "", desc ? desc : "", desc ? ")" : "");
        char *text = pgtext ? dumps_strf("Flight recorder: rank%s %s never joined collective #%s %s%s%s%s of process "
                                         "group %s that rank%s %s wait in",
                                         strchr(miss, ',') ? "s" : "", miss, seqk, op ? op : "(op not recorded)",
                                         sizes ? " (input sizes " : "", sizes ? sizes : "", sizes ? ")" : "", pgtext,
                                         strchr(wait, ',') ? "s" : "", wait)
                            : NULL;
        cJSON *v = cJSON_CreateObject();
        int bad = !text || !v || dumps_put_value(v, "missing_ranks", miss) || dumps_put_value(v, "seq", seqk) ||
                  dumps_put_value(v, "op", op ? op : "(op not recorded)") || dumps_put_value(v, "pg", pgtext);
        if (!bad)
            laggard_values(v, wait, sizes, last, lagk, wait_op);
        char *tb = wait_op ? dumps_traceback(get(wait_op, "frames")) : NULL;
        timefmt t;
        /* the dump that shows the rank stopping */
        const char *lag_rank = cJSON_GetStringValue(get(lag_dump, "rank"));
        dumps_stated d = {
            .probe = "Flight recorder: rank 1 never joined collective #1 (op not recorded) of process group 0 that "
                     "rank 0 wait in",
            .traceback = tb,
            .text = text,
            .values = v,
            .path = cJSON_GetStringValue(get(lag_dump, "path")),
            .member = cJSON_GetStringValue(get(lag_dump, "member")),
            .kind = "flight_recorder",
            .rank = lag_rank && lag_rank[0] ? lag_rank : NULL,
            .input = (size_t)num(get(lag_dump, "input"), 0),
            .time = op_time(wait_op, &t),
        };
        long idx = -1;
        if (bad) {
            cJSON_Delete(v);
            rc = -1;
        } else {
            rc = dumps_state_finding(c->prober, &d, c->st, &idx);
        }
        free(tb);
        free(text);
        free(pgtext);
        /* read across every rank, this names the cause the watchdog timeouts echo: it is not itself an
         * echo (story.c's echo levels), so the job's timeouts become its consequences */
        if (idx >= 0)
            c->st->f[idx].echo = 0;
    }
    if (!missing->child && rc == 0)
        rc = mismatch(c, pgkey);
    cJSON_Delete(waiting);
    cJSON_Delete(missing);
    return rc;
}

int flightrec_finish(struct dumps_acc *acc, const pdb *db, story *st)
{
    fr_ctx c = {.db = db, .st = st, .stop = acc->stop};
    for (cJSON *d = acc->fr->child; d; d = d->next)
        c.n++;
    c.dumps = malloc((c.n ? c.n : 1) * sizeof *c.dumps);
    c.pgs = calloc(c.n ? c.n : 1, sizeof *c.pgs);
    strmap *seen = strmap_new();
    c.prober = dumps_prober_new(db);
    int rc = c.dumps && c.pgs && seen && c.prober ? 0 : -1;
    size_t k = 0;
    for (cJSON *d = acc->fr->child; d && rc == 0; d = d->next)
        c.dumps[k++] = d;
    if (rc == 0)
        qsort(c.dumps, c.n, sizeof *c.dumps, cmp_rank);
    for (size_t i = 0; i < c.n && rc == 0; i++) {
        if (!(c.pgs[i] = strmap_new()))
            rc = -1;
        const cJSON *pg;
        cJSON_ArrayForEach(pg, get(c.dumps[i], "pgs"))
        {
            if (rc == 0 && strmap_put(c.pgs[i], pg->string, (void *)pg) != 0)
                rc = -1;
        }
    }
    /* each process group once, in the order the dumps name them */
    for (size_t i = 0; i < c.n && rc == 0; i++) {
        const cJSON *pg;
        cJSON_ArrayForEach(pg, get(c.dumps[i], "pgs"))
        {
            if (rc != 0 || (c.stop && *c.stop))
                break; /* asked to stop: what was found so far is kept */
            if (strmap_get(seen, pg->string))
                continue;
            if (strmap_put(seen, pg->string, (void *)pg) != 0 || analyse_pg(&c, pg->string) < 0)
                rc = -1;
        }
    }
    for (size_t i = 0; c.pgs && i < c.n; i++)
        strmap_free(c.pgs[i]);
    free(c.pgs);
    free(c.dumps);
    strmap_free(seen);
    dumps_prober_free(c.prober);
    return rc;
}
