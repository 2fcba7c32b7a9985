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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumps/common.h"

#define FR_OPS_KEPT 8 /* latest collectives kept per process group and rank */
#define FR_FRAMES_KEPT 24

static double num(const cJSON *v, double dflt)
{
    if (cJSON_IsNumber(v))
        return v->valuedouble;
    if (cJSON_IsString(v) && v->valuestring[0]) {
        char *e;
        double d = strtod(v->valuestring, &e);
        if (!*e)
            return d;
    }
    return dflt;
}

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

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

static char *sizes_text(const cJSON *sizes)
{
    char *s = sizes ? cJSON_PrintUnformatted(sizes) : NULL;
    return s ? s : strdup("[]");
}

int flightrec_summarise(const cJSON *dump, const scan_source *src, struct dumps_acc *acc, char **why)
{
    (void)why;
    if (!cJSON_IsObject(dump) || !get(dump, "version") || (!get(dump, "entries") && !get(dump, "pg_config")))
        return 1;
    cJSON *sum = cJSON_CreateObject();
    if (!sum)
        return -1;
    char rank[32];
    const cJSON *r = get(dump, "rank");
    if (cJSON_IsNumber(r) || cJSON_IsString(r))
        snprintf(rank, sizeof rank, "%.0f", num(r, -1));
    else
        rank_from_name(src->member ? src->member : src->path, rank, sizeof rank);
    cJSON_AddStringToObject(sum, "rank", rank);
    cJSON_AddStringToObject(sum, "path", src->path);
    if (src->member)
        cJSON_AddStringToObject(sum, "member", src->member);
    cJSON_AddNumberToObject(sum, "input", (double)src->input);
    const char *ver = cJSON_GetStringValue(get(dump, "version"));
    cJSON_AddStringToObject(sum, "version", ver ? ver : "?");
    cJSON *pgs = cJSON_AddObjectToObject(sum, "pgs");
    /* collectives from the entries, in record order */
    const cJSON *e;
    cJSON_ArrayForEach(e, get(dump, "entries"))
    {
        if (cJSON_IsTrue(get(e, "is_p2p")))
            continue;
        double seq = num(get(e, "collective_seq_id"), -1), pgid = num(get(e, "pg_id"), -1);
        if (seq < 0 || pgid < 0)
            continue;
        char key[32], sk[32];
        snprintf(key, sizeof key, "%.0f", pgid);
        snprintf(sk, sizeof sk, "%.0f", seq);
        cJSON *pg = cJSON_GetObjectItemCaseSensitive(pgs, key);
        if (!pg) {
            pg = cJSON_AddObjectToObject(pgs, key);
            if (!pg)
                break;
            const cJSON *nm = get(e, "pg_name");
            cJSON_AddStringToObject(pg, "name", cJSON_GetStringValue(cJSON_GetArrayItem(nm, 0)) ? cJSON_GetStringValue(cJSON_GetArrayItem(nm, 0)) : key);
            if (cJSON_GetStringValue(cJSON_GetArrayItem(nm, 1)))
                cJSON_AddStringToObject(pg, "desc", cJSON_GetStringValue(cJSON_GetArrayItem(nm, 1)));
            cJSON_AddNumberToObject(pg, "enq", -1);
            cJSON_AddNumberToObject(pg, "started", -1);
            cJSON_AddNumberToObject(pg, "completed", -1);
            cJSON_AddObjectToObject(pg, "ops");
        }
        const char *state = cJSON_GetStringValue(get(e, "state"));
        state = state ? state : "scheduled";
        cJSON *enq = cJSON_GetObjectItemCaseSensitive(pg, "enq"), *sta = cJSON_GetObjectItemCaseSensitive(pg, "started"),
              *com = cJSON_GetObjectItemCaseSensitive(pg, "completed");
        if (seq > enq->valuedouble)
            cJSON_SetNumberValue(enq, seq);
        if ((strcmp(state, "started") == 0 || strcmp(state, "completed") == 0) && seq > sta->valuedouble)
            cJSON_SetNumberValue(sta, seq);
        if (strcmp(state, "completed") == 0 && seq > com->valuedouble)
            cJSON_SetNumberValue(com, seq);
        cJSON *ops = cJSON_GetObjectItemCaseSensitive(pg, "ops");
        cJSON_DeleteItemFromObjectCaseSensitive(ops, sk);
        if (cJSON_GetArraySize(ops) >= FR_OPS_KEPT)
            cJSON_DeleteItemFromArray(ops, 0); /* oldest first: entries come in record order */
        cJSON *op = cJSON_AddObjectToObject(ops, sk);
        if (!op)
            continue;
        const char *pn = cJSON_GetStringValue(get(e, "profiling_name"));
        cJSON_AddStringToObject(op, "op", pn ? pn : "?");
        cJSON_AddStringToObject(op, "state", state);
        char *sz = sizes_text(get(e, "input_sizes"));
        if (sz)
            cJSON_AddStringToObject(op, "sizes", sz);
        free(sz);
        cJSON_AddNumberToObject(op, "time_ns", num(get(e, "time_created_ns"), 0));
        cJSON_AddNumberToObject(op, "timeout_ms", num(get(e, "timeout_ms"), 0));
        cJSON *fr = cJSON_AddArrayToObject(op, "frames");
        const cJSON *f;
        int nf = 0;
        cJSON_ArrayForEach(f, get(e, "frames"))
        {
            if (++nf > FR_FRAMES_KEPT)
                break;
            cJSON_AddItemToArray(fr, cJSON_Duplicate(f, 1));
        }
    }
    /* pg_status (2.3+) says it directly, and also for groups whose entries the ring buffer lost */
    const cJSON *ps;
    cJSON_ArrayForEach(ps, get(dump, "pg_status"))
    {
        cJSON *pg = cJSON_GetObjectItemCaseSensitive(pgs, ps->string);
        if (!pg) {
            pg = cJSON_AddObjectToObject(pgs, ps->string);
            if (!pg)
                break;
            cJSON_AddStringToObject(pg, "name", ps->string);
            cJSON_AddObjectToObject(pg, "ops");
        }
        static const char *const keys[3][2] = {{"enq", "last_enqueued_collective"},
                                               {"started", "last_started_collective"},
                                               {"completed", "last_completed_collective"}};
        for (int k = 0; k < 3; k++) {
            cJSON_DeleteItemFromObjectCaseSensitive(pg, keys[k][0]);
            cJSON_AddNumberToObject(pg, keys[k][0], num(get(ps, keys[k][1]), -1));
        }
    }
    /* members of each group, from pg_config (keyed by name) */
    const cJSON *pc;
    cJSON_ArrayForEach(pc, get(dump, "pg_config"))
    {
        cJSON *pg;
        cJSON_ArrayForEach(pg, pgs)
        {
            const char *nm = cJSON_GetStringValue(get(pg, "name"));
            if (nm && strcmp(nm, pc->string) == 0) {
                const char *desc = cJSON_GetStringValue(get(pc, "desc"));
                if (desc && !get(pg, "desc"))
                    cJSON_AddStringToObject(pg, "desc", desc);
                const char *rk = cJSON_GetStringValue(get(pc, "ranks"));
                if (rk)
                    cJSON_AddStringToObject(pg, "ranks", rk);
            }
        }
    }
    cJSON_AddItemToArray(acc->fr, sum);
    return 0;
}

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

static int cmp_rank(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    return atoi(cJSON_GetStringValue(get(x, "rank"))) - atoi(cJSON_GetStringValue(get(y, "rank")));
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

/* Every rank reached the same collectives: fr_trace's other check, whether they agree on what each
 * one is. The first collective every rank kept whose op or input sizes differ between ranks is a
 * mismatch (a rank called another collective, or with other shapes): NCCL waits for ever there. */
static int mismatch(const char *pgkey, cJSON **dumps, size_t n, const pdb *db, story *st)
{
    const cJSON *pg0 = NULL;
    size_t first = 0;
    for (size_t i = 0; i < n && !pg0; i++)
        if ((pg0 = get(get(dumps[i], "pgs"), pgkey)))
            first = i;
    if (!pg0)
        return 0;
    const cJSON *op0;
    cJSON_ArrayForEach(op0, get(pg0, "ops"))
    {
        const char *name0 = cJSON_GetStringValue(get(op0, "op")), *sz0 = cJSON_GetStringValue(get(op0, "sizes"));
        for (size_t i = first + 1; i < n; i++) {
            const cJSON *pg = get(get(dumps[i], "pgs"), pgkey);
            const cJSON *op = pg ? get(get(pg, "ops"), op0->string) : NULL;
            if (!op)
                continue;
            const char *name = cJSON_GetStringValue(get(op, "op")), *sz = cJSON_GetStringValue(get(op, "sizes"));
            if (name0 && name && strcmp(name0, name) == 0 &&
                (uneven_inputs(name) || (sz0 && sz && strcmp(sz0, sz) == 0)))
                continue;
            const char *r0 = cJSON_GetStringValue(get(dumps[first], "rank")), *r1 = cJSON_GetStringValue(get(dumps[i], "rank"));
            const char *pname = cJSON_GetStringValue(get(pg0, "name")), *desc = cJSON_GetStringValue(get(pg0, "desc"));
            char *tb = dumps_traceback(get(op, "frames"));
            char *text = dumps_strf("%sFlight recorder: collective #%s of process group %s%s%s%s differs across ranks: rank %s "
                                    "%s (input sizes %s) but rank %s %s (input sizes %s)\n",
                                    tb ? tb : "", op0->string, pname ? pname : pgkey, desc ? " (" : "", desc ? desc : "",
                                    desc ? ")" : "", r0 ? r0 : "?", name0 ? name0 : "?", sz0 ? sz0 : "?", r1 ? r1 : "?",
                                    name ? name : "?", sz ? sz : "?");
            free(tb);
            if (!text)
                return -1;
            timefmt t;
            double ns = num(get(op, "time_ns"), 0);
            if (ns > 0)
                dumps_epoch_time(ns / 1e9, &t);
            long idx = -1;
            int rc = dumps_finish_scan(db, text, cJSON_GetStringValue(get(dumps[i], "path")),
                                       cJSON_GetStringValue(get(dumps[i], "member")), (size_t)num(get(dumps[i], "input"), 0),
                                       "flight_recorder", r1, ns > 0 ? &t : NULL, st, &idx);
            free(text);
            if (idx >= 0)
                st->f[idx].echo = 0; /* the cause the job's watchdog timeouts echo */
            return rc;
        }
    }
    return 0;
}

/* One process group across the dumps that know it: a finding when some ranks are behind. */
static int analyse_pg(const char *pgkey, cJSON **dumps, size_t n, const pdb *db, story *st)
{
    double max_enq = -1;
    for (size_t i = 0; i < n; i++) {
        const cJSON *pg = get(get(dumps[i], "pgs"), pgkey);
        if (pg && num(get(pg, "enq"), -1) > max_enq)
            max_enq = num(get(pg, "enq"), -1);
    }
    if (max_enq < 0)
        return 0;
    cJSON *waiting = cJSON_CreateArray(), *missing = cJSON_CreateArray();
    double min_lag = max_enq;
    const cJSON *lag_pg = NULL, *lag_dump = NULL, *wait_op = NULL, *wait_dump = NULL;
    char seqk[32];
    for (size_t i = 0; i < n; i++) {
        const cJSON *pg = get(get(dumps[i], "pgs"), pgkey);
        if (!pg)
            continue;
        double enq = num(get(pg, "enq"), -1);
        const char *rk = cJSON_GetStringValue(get(dumps[i], "rank"));
        cJSON_AddItemToArray(enq < max_enq ? missing : waiting, cJSON_CreateString(rk ? rk : "?"));
        if (enq < max_enq && enq < min_lag) {
            min_lag = enq;
            lag_pg = pg;
            lag_dump = dumps[i];
        }
    }
    int rc = 0;
    if (cJSON_GetArraySize(missing) > 0 && cJSON_GetArraySize(waiting) > 0) {
        /* the first collective the laggards never enqueued, as a waiting rank recorded it */
        snprintf(seqk, sizeof seqk, "%.0f", min_lag + 1);
        for (size_t i = 0; i < n && !wait_op; i++) {
            const cJSON *pg = get(get(dumps[i], "pgs"), pgkey);
            if (pg && num(get(pg, "enq"), -1) == max_enq && get(get(pg, "ops"), seqk)) {
                wait_op = get(get(pg, "ops"), seqk);
                wait_dump = dumps[i];
            }
        }
        char miss[256], wait[256], lagk[32];
        join_ranks(missing, miss, sizeof miss);
        join_ranks(waiting, wait, sizeof wait);
        const cJSON *pg0 = lag_pg;
        const char *name = cJSON_GetStringValue(get(pg0, "name"));
        const char *desc = cJSON_GetStringValue(get(pg0, "desc"));
        const char *op = wait_op ? cJSON_GetStringValue(get(wait_op, "op")) : NULL;
        const char *sizes = wait_op ? cJSON_GetStringValue(get(wait_op, "sizes")) : NULL;
        snprintf(lagk, sizeof lagk, "%.0f", min_lag);
        const cJSON *last = get(get(lag_pg, "ops"), lagk);
        char *tb = wait_op ? dumps_traceback(get(wait_op, "frames")) : NULL;
        char *text = dumps_strf(
            "%sFlight recorder: rank%s %s never joined collective #%s %s%s%s%s of process group %s%s%s%s that rank%s %s "
            "wait in\n",
            tb ? tb : "", strchr(miss, ',') ? "s" : "", miss, seqk, op ? op : "(op not recorded)", sizes ? " (input sizes " : "",
            sizes ? sizes : "", sizes ? ")" : "", name ? name : pgkey, desc ? " (" : "", desc ? desc : "", desc ? ")" : "",
            strchr(wait, ',') ? "s" : "", wait);
        free(tb);
        timefmt t;
        double ns = wait_op ? num(get(wait_op, "time_ns"), 0) : 0;
        if (ns > 0)
            dumps_epoch_time(ns / 1e9, &t);
        long idx = -1;
        const cJSON *src = lag_dump; /* the dump that shows the rank stopping */
        (void)wait_dump;
        if (!text)
            rc = -1;
        else if (dumps_finish_scan(db, text, cJSON_GetStringValue(get(src, "path")),
                                   cJSON_GetStringValue(get(src, "member")), (size_t)num(get(src, "input"), 0),
                                   "flight_recorder", cJSON_GetStringValue(get(lag_dump, "rank")), ns > 0 ? &t : NULL,
                                   st, &idx) != 0)
            rc = -1;
        free(text);
        if (idx >= 0) {
            /* read across every rank, this names the cause the watchdog timeouts echo: it is not
             * itself an echo (story.c's echo levels), so the job's timeouts become its consequences */
            st->f[idx].echo = 0;
            cJSON *m = st->f[idx].memory;
            if (!cJSON_HasObjectItem(m, "waiting_ranks"))
                cJSON_AddStringToObject(m, "waiting_ranks", wait);
            if (sizes && !cJSON_HasObjectItem(m, "input_sizes"))
                cJSON_AddStringToObject(m, "input_sizes", sizes);
            if (last && !cJSON_HasObjectItem(m, "laggard_last_collective")) {
                char *l = dumps_strf("#%s %s (%s)", lagk, cJSON_GetStringValue(get(last, "op")),
                                     cJSON_GetStringValue(get(last, "state")));
                if (l)
                    cJSON_AddStringToObject(m, "laggard_last_collective", l);
                free(l);
            }
            if (wait_op && !cJSON_HasObjectItem(m, "timeout_ms") && num(get(wait_op, "timeout_ms"), 0) > 0)
                cJSON_AddNumberToObject(m, "timeout_ms", num(get(wait_op, "timeout_ms"), 0));
        }
    }
    if (cJSON_GetArraySize(missing) == 0 && rc == 0)
        rc = mismatch(pgkey, dumps, n, db, st);
    cJSON_Delete(waiting);
    cJSON_Delete(missing);
    return rc;
}

int flightrec_finish(struct dumps_acc *acc, const pdb *db, story *st)
{
    size_t n = (size_t)cJSON_GetArraySize(acc->fr);
    cJSON **dumps = malloc((n ? n : 1) * sizeof *dumps);
    if (!dumps)
        return -1;
    size_t k = 0;
    cJSON *d;
    cJSON_ArrayForEach(d, acc->fr) dumps[k++] = d;
    qsort(dumps, n, sizeof *dumps, cmp_rank);
    /* each process group once, in the order the dumps name them */
    cJSON *seen = cJSON_CreateObject();
    int rc = seen ? 0 : -1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const cJSON *pg;
        cJSON_ArrayForEach(pg, get(dumps[i], "pgs"))
        {
            if (cJSON_HasObjectItem(seen, pg->string))
                continue;
            cJSON_AddTrueToObject(seen, pg->string);
            if (analyse_pg(pg->string, dumps, n, db, st) < 0)
                rc = -1;
        }
    }
    cJSON_Delete(seen);
    free(dumps);
    return rc;
}
