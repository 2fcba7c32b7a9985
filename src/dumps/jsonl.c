/* jsonl.c - JSON-lines logs (python-json-logger, structlog, a container runtime's json-file driver): a
 * read filter that gives the scanner each record's message as the line it stands for, so a log written
 * as JSON is read as the log it is. A record's "message" (or "msg", "log", "event") is the line; its
 * traceback ("exc_info", "exception", "stack_trace") follows as lines of their own, as Python's logging
 * prints it; a string "timestamp" / "time" / "asctime" goes before the message, where a log line's stamp
 * is. A line that is no JSON object, or has no message, is passed on as it is. */
#include <stdlib.h>
#include <string.h>

#include "dumps/common.h"

#define JSONL_LINE_CAP (1u << 20) /* a longer line is passed on raw, in pieces, as the scanner cuts it */

struct dumps_jsonl {
    scan_read_fn rd;
    void *ud;
    char *in;      /* raw bytes read, not yet a whole line */
    size_t nin;
    char *out;     /* lines made, not yet given */
    size_t nout, pos, cap_out;
    int eof, err;
    uint64_t raw; /* bytes read from rd */
};

dumps_jsonl *dumps_jsonl_new(scan_read_fn rd, void *ud)
{
    dumps_jsonl *j = calloc(1, sizeof *j);
    if (j && !(j->in = malloc(JSONL_LINE_CAP))) {
        free(j);
        return NULL;
    }
    if (j) {
        j->rd = rd;
        j->ud = ud;
    }
    return j;
}

void dumps_jsonl_free(dumps_jsonl *j)
{
    if (!j)
        return;
    free(j->in);
    free(j->out);
    free(j);
}

static int put(dumps_jsonl *j, const char *s, size_t n)
{
    if (j->nout + n + 1 > j->cap_out) {
        size_t c = j->cap_out ? j->cap_out : 65536;
        while (c < j->nout + n + 1)
            c *= 2;
        char *g = realloc(j->out, c);
        if (!g)
            return -1;
        j->out = g;
        j->cap_out = c;
    }
    memcpy(j->out + j->nout, s, n);
    j->nout += n;
    return 0;
}

static const char *field(const cJSON *o, const char *const *keys)
{
    for (; *keys; keys++) {
        const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, *keys));
        if (v && v[0])
            return v;
    }
    return NULL;
}

/* The line(s) that stand for raw line s[0..n) (no newline). */
static int transform(dumps_jsonl *j, const char *s, size_t n)
{
    static const char *const msg_keys[] = {"message", "msg", "log", "event", NULL};
    static const char *const time_keys[] = {"timestamp", "time", "asctime", "@timestamp", NULL};
    static const char *const tb_keys[] = {"exc_info", "exception", "stack_trace", "traceback", NULL};
    size_t k = 0;
    while (k < n && (s[k] == ' ' || s[k] == '\t'))
        k++;
    cJSON *o = k < n && s[k] == '{' ? cJSON_ParseWithLength(s + k, n - k) : NULL;
    const char *msg = cJSON_IsObject(o) ? field(o, msg_keys) : NULL;
    int rc;
    if (!msg) {
        rc = put(j, s, n) || put(j, "\n", 1);
    } else {
        const char *ts = field(o, time_keys), *tb = field(o, tb_keys);
        size_t ml = strlen(msg);
        rc = (ts && (put(j, ts, strlen(ts)) || put(j, " ", 1))) || put(j, msg, ml) ||
             ((ml == 0 || msg[ml - 1] != '\n') && put(j, "\n", 1));
        if (!rc && tb) {
            size_t tl = strlen(tb);
            rc = put(j, tb, tl) || ((tl == 0 || tb[tl - 1] != '\n') && put(j, "\n", 1));
        }
    }
    cJSON_Delete(o);
    return rc;
}

ssize_t dumps_jsonl_read(void *ud, void *buf, size_t cap)
{
    dumps_jsonl *j = ud;
    while (j->pos == j->nout) {
        j->pos = j->nout = 0;
        char *nl = memchr(j->in, '\n', j->nin);
        if (nl || (j->eof && j->nin > 0) || j->nin == JSONL_LINE_CAP) {
            size_t len = nl ? (size_t)(nl - j->in) : j->nin;
            size_t used = nl ? len + 1 : len;
            size_t tl = len > 0 && j->in[len - 1] == '\r' ? len - 1 : len;
            int rc = nl || j->eof ? transform(j, j->in, tl) : put(j, j->in, len); /* too long: raw */
            memmove(j->in, j->in + used, j->nin - used);
            j->nin -= used;
            if (rc)
                return -1;
            continue;
        }
        if (j->eof)
            return j->err ? -1 : 0;
        ssize_t r = j->rd(j->ud, j->in + j->nin, JSONL_LINE_CAP - j->nin);
        if (r == SCAN_READ_IDLE)
            return r;
        if (r <= 0) {
            j->eof = 1;
            j->err = r < 0;
        } else {
            j->nin += (size_t)r;
            j->raw += (uint64_t)r;
        }
    }
    size_t k = j->nout - j->pos < cap ? j->nout - j->pos : cap;
    memcpy(buf, j->out + j->pos, k);
    j->pos += k;
    return (ssize_t)k;
}

uint64_t dumps_jsonl_bytes(const dumps_jsonl *j) { return j->raw; }
