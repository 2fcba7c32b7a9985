/* dumps.c - recognising crash dumps by content and handing each to its reader (dumps.h). */
#include "dumps/dumps.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dumps/common.h"
#include "dumps/pickle.h"

/* ---- recognising ----------------------------------------------------------------------------- */

static int has(const unsigned char *p, size_t n, const char *needle)
{
    return memmem(p, n, needle, strlen(needle)) != NULL;
}

static int starts(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}

/* 16 lowercase hex digits: an oomscan finding id */
static int is_finding_id(const char *s)
{
    size_t k = 0;
    while (s && ((s[k] >= '0' && s[k] <= '9') || (s[k] >= 'a' && s[k] <= 'f')))
        k++;
    return s && k == 16 && !s[k];
}

/* What one whole JSON value is, by its structure (a value the head holds whole). */
static dump_kind sniff_value(const cJSON *v)
{
    if (!cJSON_IsObject(v))
        return DUMP_NONE;
    /* error.json: {"message": {"message": ..., "extraInfo": {...}}} or {"message": "...", "timestamp": N} */
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(v, "message");
    if (cJSON_IsObject(m) && (cJSON_HasObjectItem(m, "message") || cJSON_HasObjectItem(m, "extraInfo")))
        return DUMP_ERROR_FILE;
    if (cJSON_IsString(m) && (cJSON_HasObjectItem(v, "timestamp") || cJSON_HasObjectItem(v, "errorCode"))) {
        /* and nothing else: a log record has a level, a logger, ... */
        const cJSON *k;
        int other = 0;
        cJSON_ArrayForEach(k, v) other |= strcmp(k->string, "message") != 0 && strcmp(k->string, "timestamp") != 0 &&
                                          strcmp(k->string, "errorCode") != 0;
        if (!other)
            return DUMP_ERROR_FILE;
    }
    if (cJSON_HasObjectItem(v, "version") &&
        (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(v, "entries")) || cJSON_HasObjectItem(v, "pg_config")))
        return DUMP_FR_JSON;
    const char *schema = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "schema"));
    if (schema && strncmp(schema, "oomscan/", 8) == 0)
        return DUMP_OOMSCAN;
    /* an NDJSON record: its id, and the type and merge data no log record has */
    if (is_finding_id(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "id"))) &&
        cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "type")) &&
        cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(v, "merge")))
        return DUMP_OOMSCAN;
    return DUMP_NONE;
}

/* Text that opens with '{'. A JSON-lines log (one object per line, a second line opening with '{')
 * is a log, read by its messages (DUMP_JSONL), whatever keys its records have: an error file or a
 * flight recorder dump is one value. A value the head holds whole is told by its structure; a longer
 * one by the keys it opens with. */
static dump_kind sniff_json(const unsigned char *p, size_t m)
{
    const unsigned char *nl = memchr(p, '\n', m);
    cJSON *first = nl ? cJSON_ParseWithLength((const char *)p, (size_t)(nl - p)) : NULL;
    if (first) {
        size_t k = (size_t)(nl - p) + 1;
        while (k < m && (p[k] == ' ' || p[k] == '\t' || p[k] == '\r' || p[k] == '\n'))
            k++;
        dump_kind d = sniff_value(first);
        cJSON_Delete(first);
        if (k < m && p[k] == '{') /* a second record */
            return d == DUMP_OOMSCAN ? DUMP_OOMSCAN : DUMP_JSONL;
        return d;
    }
    cJSON *whole = cJSON_ParseWithLength((const char *)p, m);
    if (whole) {
        dump_kind d = sniff_value(whole);
        cJSON_Delete(whole);
        return d;
    }
    /* longer than the head: its opening keys (nlohmann::json writes a flight recorder's sorted: "entries"
     * and its first entry's "collective_seq_id", or "nccl_comm_state" / "pg_config" with no entries) */
    if (has(p, m, "\"extraInfo\"") ||
        (has(p, m, "\"message\"") && (has(p, m, "\"timestamp\"") || has(p, m, "\"errorCode\""))))
        return DUMP_ERROR_FILE;
    if (has(p, m, "\"collective_seq_id\"") || has(p, m, "\"pg_config\""))
        return DUMP_FR_JSON;
    if (has(p, m, "\"oomscan/") && has(p, m, "\"schema\""))
        return DUMP_OOMSCAN;
    /* an NDJSON record longer than the head: its 16-digit id first, then what only records state */
    if (m > 26 && memcmp(p, "{\"id\":\"", 7) == 0 && p[23] == '"' && has(p, m, "\"role\":\"") &&
        has(p, m, "\"title\":\"") && has(p, m, "\"evidence\":["))
        return DUMP_OOMSCAN;
    return DUMP_NONE;
}

dump_kind dumps_sniff(const unsigned char *head, size_t n)
{
    if (pickle_sniff(head, n))
        return DUMP_PICKLE;
    size_t i = 0;
    if (n >= 3 && memcmp(head, "\xef\xbb\xbf", 3) == 0)
        i = 3;
    while (i < n && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n'))
        i++;
    if (i < n && head[i] == '{')
        return sniff_json(head + i, n - i);
    /* text: look at the whole lines of the head */
    const char *s = (const char *)head + i;
    size_t left = n - i, lines = 0, kernel = 0;
    int first = 1;
    while (left > 0 && lines < 64) {
        const char *nl = memchr(s, '\n', left);
        if (!nl && lines > 0)
            break; /* a cut last line says nothing */
        size_t len = nl ? (size_t)(nl - s) : left;
        if (len && s[len - 1] == '\r')
            len--;
        if (len > 0) {
            if (first && (starts(s, len, "Fatal Python error: ") ||
                          ((starts(s, len, "Current thread 0x") || starts(s, len, "Thread 0x")) &&
                           memmem(s, len, "(most recent call first)", 24))))
                return DUMP_FAULTHANDLER;
            first = 0;
            lines++;
            kernel += kernel_line_like(s, len) != 0;
            if (lines - kernel > 32)
                return DUMP_NONE; /* the rest of the 64 lines could no longer make kernel lines half */
        }
        if (!nl)
            break;
        left -= (size_t)(nl + 1 - s);
        s = nl + 1;
    }
    /* mostly kernel lines (a kernel log); a syslog where the kernel says little stays a log */
    if (kernel >= 1 && kernel * 2 >= lines)
        return DUMP_KERNEL;
    return DUMP_NONE;
}

const char *dumps_kind_name(dump_kind k)
{
    switch (k) {
    case DUMP_ERROR_FILE:
        return "error_file";
    case DUMP_KERNEL:
        return "kernel";
    case DUMP_FAULTHANDLER:
        return "faulthandler";
    case DUMP_PICKLE:
    case DUMP_FR_JSON:
        return "flight_recorder";
    case DUMP_NONE:
    case DUMP_JSONL:
    case DUMP_OOMSCAN:
        break;
    }
    return NULL;
}

/* ---- the accumulator ------------------------------------------------------------------------ */

dumps_acc *dumps_acc_new(void)
{
    dumps_acc *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->fr = cJSON_CreateArray();
    a->snap = cJSON_CreateArray();
    if (!a->fr || !a->snap) {
        dumps_acc_free(a);
        return NULL;
    }
    return a;
}

void dumps_acc_free(dumps_acc *a)
{
    if (!a)
        return;
    cJSON_Delete(a->fr);
    cJSON_Delete(a->snap);
    free(a);
}

static void move_all(cJSON *dst, cJSON *src)
{
    while (src->child) {
        cJSON *c = cJSON_DetachItemViaPointer(src, src->child);
        cJSON_AddItemToArray(dst, c);
    }
}

int dumps_acc_merge(dumps_acc *dst, dumps_acc *src)
{
    if (!src)
        return 0;
    move_all(dst->fr, src->fr);
    move_all(dst->snap, src->snap);
    return 0;
}

void dumps_acc_stop_on(dumps_acc *acc, const volatile sig_atomic_t *stop)
{
    if (acc)
        acc->stop = stop;
}

int dumps_acc_finish(dumps_acc *acc, const pdb *db, story *st)
{
    if (!acc)
        return 0;
    int rc = 0;
    if (cJSON_GetArraySize(acc->fr) > 0 && flightrec_finish(acc, db, st) < 0)
        rc = -1;
    if (cJSON_GetArraySize(acc->snap) > 0 && memsnap_finish(acc, db, st) < 0)
        rc = -1;
    cJSON *fr = cJSON_CreateArray(), *snap = cJSON_CreateArray();
    if (fr && snap) {
        cJSON_Delete(acc->fr);
        cJSON_Delete(acc->snap);
        acc->fr = fr;
        acc->snap = snap;
    } else {
        cJSON_Delete(fr);
        cJSON_Delete(snap);
        rc = -1;
    }
    return rc;
}

/* ---- reading one source --------------------------------------------------------------------- */

/* The head first, then the rest of the stream; bytes pass a kernel line reader on the way. */
typedef struct {
    const unsigned char *head;
    size_t nhead, pos;
    scan_read_fn rd;
    void *ud;
    kernel_blocks *kb;
} replay;

static ssize_t replay_read(void *ud, void *buf, size_t cap)
{
    replay *r = ud;
    ssize_t got;
    if (r->pos < r->nhead) {
        size_t k = r->nhead - r->pos < cap ? r->nhead - r->pos : cap;
        memcpy(buf, r->head + r->pos, k);
        r->pos += k;
        got = (ssize_t)k;
    } else {
        got = r->rd(r->ud, buf, cap);
    }
    if (got > 0 && r->kb)
        kernel_blocks_feed(r->kb, buf, (size_t)got);
    return got;
}

#define DUMPS_MAX_JSON (64u << 20)
#define DUMPS_JSON_VALUES 1000000u /* values of a JSON dump parsed (~96 MiB of tree); a real dump of
                                    * 2,000 entries with their frames holds ~300,000 */

/* How many values JSON text holds (an upper bound: separators and openers outside strings, plus one). */
static size_t json_values(const unsigned char *p, size_t n)
{
    size_t v = 1;
    int in_str = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == ',' || c == '[' || c == '{') {
            v++;
        }
    }
    return v;
}

static oomscan_status read_json(const unsigned char *buf, size_t n, const scan_source *src, dumps_acc *acc, char **why)
{
    /* The tree cJSON builds costs ~96 bytes a value however few bytes the value took ("0," is two):
     * 64 KB of gzip decoding to 64 MiB of them asked for 1.75 GB. Counted first, and refused past
     * the budget, whatever the compression. */
    size_t values = json_values(buf, n);
    if (values > DUMPS_JSON_VALUES) {
        *why = dumps_strf("flight recorder JSON of %zu values: more than the %u this reader builds (%u MiB)", values,
                          DUMPS_JSON_VALUES, (unsigned)((DUMPS_JSON_VALUES * 96ull) >> 20));
        return *why ? OOMSCAN_OK : OOMSCAN_ERR_NOMEM;
    }
    cJSON *doc = cJSON_ParseWithLength((const char *)buf, n);
    if (!doc) {
        *why = dumps_strf("flight recorder JSON does not parse");
        return OOMSCAN_OK;
    }
    int rc = flightrec_summarise(doc, src, acc, why);
    cJSON_Delete(doc);
    return rc < 0 ? OOMSCAN_ERR_NOMEM : OOMSCAN_OK;
}

/* The pickle's stream: the rest of the source after the head, counted as it passes. */
typedef struct {
    replay r;
    uint64_t bytes, lines;
    int read_error;
} counted;

static ssize_t counted_read(void *ud, void *buf, size_t cap)
{
    counted *c = ud;
    ssize_t got;
    do
        got = replay_read(&c->r, buf, cap);
    while (got == SCAN_READ_IDLE);
    if (got < 0) {
        c->read_error = 1;
        return -1;
    }
    c->bytes += (uint64_t)got;
    c->lines += scan_count_lines(buf, (size_t)got);
    return got;
}

/* A pickle read as it streams, read again from the file for the memo's count when the source can
 * be (src->reread): a memory snapshot's trace goes to memsnap_trace as it is read; what is left is
 * a memory snapshot (read here) or a flight recorder (expanded to a tree for flightrec.c). */
static oomscan_status read_pickle(const unsigned char *head, size_t nhead, scan_read_fn rd, void *rd_ud,
                                  const scan_source *src, dumps_acc *acc, scan_result *res, char **why)
{
    counted c = {.r = {.head = head, .nhead = nhead, .rd = rd, .ud = rd_ud}};
    memsnap_trace *tr = memsnap_trace_new();
    if (!tr)
        return OOMSCAN_ERR_NOMEM;
    pickle_input in = {.read = counted_read,
                       .read_ud = &c,
                       .reread = src->reread,
                       .reread_ud = src->reread_ud,
                       .stream_key = "device_traces",
                       .item = memsnap_trace_item,
                       .item_ud = tr};
    pickle_doc *doc = NULL;
    oomscan_diag d;
    diag_clear(&d);
    oomscan_status st = pickle_parse(&in, NULL, &doc, &d), ret = OOMSCAN_OK;
    /* the rest of the stream, for the byte and line counts */
    unsigned char sink[65536];
    while (!c.read_error && counted_read(&c, sink, sizeof sink) > 0)
        ;
    res->bytes = c.bytes;
    res->lines = c.lines;
    res->read_error = c.read_error;
    if (st == OOMSCAN_ERR_NOMEM) {
        ret = st;
    } else if (st) {
        if (!c.read_error)
            *why = dumps_strf("pickle: %s", d.msg);
    } else {
        int rc = memsnap_summarise(doc, tr, src, acc, why);
        if (rc == 1) {
            cJSON *tree = NULL;
            st = pickle_to_json(doc, pickle_root(doc), NULL, c.bytes, &tree, &d);
            if (st == OOMSCAN_ERR_NOMEM)
                rc = -1;
            else if (st)
                *why = dumps_strf("pickle: %s", d.msg);
            else
                rc = flightrec_summarise(tree, src, acc, why);
            cJSON_Delete(tree);
        }
        if (rc == 1 && !*why)
            *why = dumps_strf("a pickle that is neither a flight recorder dump nor a memory snapshot");
        if (rc < 0)
            ret = OOMSCAN_ERR_NOMEM;
    }
    pickle_doc_free(doc);
    memsnap_trace_free(tr);
    return ret;
}

oomscan_status dumps_read(dump_kind kind, const unsigned char *head, size_t nhead, scan_read_fn rd, void *rd_ud,
                          scanner *sc, phase_state *ps, const scan_source *src, story *st, dumps_acc *acc,
                          scan_result *res, char **why)
{
    memset(res, 0, sizeof *res);
    *why = NULL;
    story *tmp = story_new();
    if (!tmp)
        return OOMSCAN_ERR_NOMEM;
    oomscan_status ret = OOMSCAN_OK;
    if (kind == DUMP_JSONL) {
        /* a log: its messages scanned as its lines, its findings those of a log */
        replay r = {.head = head, .nhead = nhead, .rd = rd, .ud = rd_ud};
        dumps_jsonl *j = dumps_jsonl_new(replay_read, &r);
        if (!j) {
            story_free(tmp);
            return OOMSCAN_ERR_NOMEM;
        }
        ret = scanner_run(sc, dumps_jsonl_read, j, src, ps, story_sink(tmp), res, NULL, NULL);
        res->bytes = dumps_jsonl_bytes(j);
        dumps_jsonl_free(j);
    } else if (kind == DUMP_KERNEL || kind == DUMP_FAULTHANDLER) {
        replay r = {.head = head, .nhead = nhead, .rd = rd, .ud = rd_ud};
        if (kind == DUMP_KERNEL && !(r.kb = kernel_blocks_new())) {
            story_free(tmp);
            return OOMSCAN_ERR_NOMEM;
        }
        ret = scanner_run(sc, replay_read, &r, src, ps, story_sink(tmp), res, NULL, NULL);
        if (!ret) {
            if (r.kb)
                kernel_blocks_apply(r.kb, tmp);
            dumps_tag(tmp, dumps_kind_name(kind), NULL, NULL, NULL, NULL, 0);
        }
        kernel_blocks_free(r.kb);
    } else if (kind == DUMP_PICKLE) {
        ret = read_pickle(head, nhead, rd, rd_ud, src, acc, res, why);
    } else {
        size_t n = 0;
        int nomem = 0;
        size_t cap = kind == DUMP_ERROR_FILE ? (16u << 20) : DUMPS_MAX_JSON;
        int cut = 0; /* an error file past its read size keeps its first bytes: they state the exception */
        unsigned char *buf =
            dumps_slurp(head, nhead, rd, rd_ud, cap, &n, res, why, &nomem, kind == DUMP_ERROR_FILE ? &cut : NULL);
        if (nomem)
            ret = OOMSCAN_ERR_NOMEM;
        else if (buf && kind == DUMP_ERROR_FILE)
            ret = errfile_read(buf, n, cut, sc, ps, src, tmp, why);
        else if (buf)
            ret = read_json(buf, n, src, acc, why);
        free(buf);
    }
    if (!ret && story_merge(st, tmp) != 0)
        ret = OOMSCAN_ERR_NOMEM;
    story_free(tmp);
    return ret;
}
