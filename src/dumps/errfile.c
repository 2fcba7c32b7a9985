/* errfile.c - torchelastic error files (error.json, written by @record / ErrorHandler in
 * torch/distributed/elastic/multiprocessing/errors/). Two shapes, both read:
 *   {"message": {"message": "Type: text", "extraInfo": {"py_callstack": "...", "timestamp": "N"},
 *                "errorCode": N?}}          (record_exception; errorCode added by dump_error_file)
 *   {"message": "text", "timestamp": N}      (the "new message format" ProcessFailure also accepts)
 * py_callstack is traceback.format_exc() (a string); some writers give a list of lines. The exception
 * goes through the ordinary matcher; the call stack, fed as the traceback it is, gives the phase. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumps/common.h"

/* attempt_N/<local_rank>/error.json (torch/distributed/elastic/agent/server/local_elastic_agent.py
 * lays out the log dir so): the local rank, or "" */
static void rank_from_path(const char *path, char *local_rank, size_t cap)
{
    local_rank[0] = 0;
    const char *a = NULL;
    for (const char *p = path; (p = strstr(p, "attempt_")); p++)
        a = p;
    if (!a)
        return;
    a += 8;
    while (*a >= '0' && *a <= '9')
        a++;
    if (*a != '/')
        return;
    a++;
    size_t k = 0;
    while (a[k] >= '0' && a[k] <= '9')
        k++;
    if (k == 0 || k >= cap || a[k] != '/')
        return;
    memcpy(local_rank, a, k);
    local_rank[k] = 0;
}

/* py_callstack as one text: a string, or a list of strings joined (each usually ends in "\n") */
static char *callstack_text(const cJSON *cs)
{
    if (cJSON_IsString(cs) && cs->valuestring)
        return strdup(cs->valuestring);
    if (!cJSON_IsArray(cs))
        return NULL;
    size_t len = 1;
    const cJSON *e;
    cJSON_ArrayForEach(e, cs) if (cJSON_IsString(e)) len += strlen(e->valuestring) + 1;
    char *s = malloc(len), *w = s;
    if (!s)
        return NULL;
    cJSON_ArrayForEach(e, cs) if (cJSON_IsString(e))
    {
        size_t k = strlen(e->valuestring);
        memcpy(w, e->valuestring, k);
        w += k;
        if (k == 0 || e->valuestring[k - 1] != '\n')
            *w++ = '\n';
    }
    *w = 0;
    return s;
}

/* The first complete JSON string after key `key` at or after p (a string literal whole before `end`),
 * as a cJSON string; NULL when there is none. */
static cJSON *string_after(const char *p, const char *end, const char *key)
{
    size_t kl = strlen(key);
    for (const char *k = p; (k = memmem(k, (size_t)(end - k), key, kl)); k += kl) {
        const char *q = k + kl;
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n'))
            q++;
        if (q >= end || *q != ':')
            continue;
        q++;
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n'))
            q++;
        if (q >= end || *q != '"')
            continue;
        const char *e = q + 1;
        while (e < end && *e != '"')
            e += *e == '\\' ? 2 : 1;
        if (e >= end)
            return NULL; /* cut inside the string */
        cJSON *v = cJSON_ParseWithLength(q, (size_t)(e + 1 - q));
        if (cJSON_IsString(v))
            return v;
        cJSON_Delete(v);
    }
    return NULL;
}

/* What a document cJSON cannot read (cut short by a dying worker, or nested past cJSON's 1,000) still
 * states whole: the first "message" string and the "py_callstack" string, as the nested shape. NULL
 * when it states no message. */
static cJSON *salvage(const char *buf, size_t n)
{
    const char *end = buf + n;
    cJSON *msg = string_after(buf, end, "\"message\"");
    if (!msg)
        return NULL;
    cJSON *doc = cJSON_CreateObject(), *m = cJSON_AddObjectToObject(doc, "message");
    cJSON *extra = m ? cJSON_AddObjectToObject(m, "extraInfo") : NULL;
    cJSON *cs = string_after(buf, end, "\"py_callstack\"");
    if (!extra) {
        cJSON_Delete(msg);
        cJSON_Delete(cs);
        cJSON_Delete(doc);
        return NULL;
    }
    cJSON_AddItemToObject(m, "message", msg);
    if (cs)
        cJSON_AddItemToObject(extra, "py_callstack", cs);
    return doc;
}

oomscan_status errfile_read(const unsigned char *buf, size_t n, int cut, scanner *sc, phase_state *ps,
                            const scan_source *src, story *tmp, char **why)
{
    cJSON *doc = cut ? NULL : cJSON_ParseWithLength((const char *)buf, n);
    if (!doc) {
        /* keep what is whole, as a truncated gzip keeps its prefix, and say the input is partial */
        doc = salvage((const char *)buf, n);
        *why = cut ? dumps_strf("error file larger than the %zu MiB read: read as far as that", n >> 20)
               : doc ? dumps_strf("error file: cut short or not valid JSON: read what was whole before the fault")
                     : dumps_strf("error file: not valid JSON");
        if (!*why) {
            cJSON_Delete(doc);
            return OOMSCAN_ERR_NOMEM;
        }
        if (!doc)
            return OOMSCAN_OK;
    }
    const cJSON *msg = dumps_get(doc, "message");
    const char *text = NULL;
    char *stack = NULL;
    double ts = 0;
    int64_t code = 0;
    int has_ts = 0, has_code = 0;
    if (cJSON_IsObject(msg)) {
        const cJSON *extra = dumps_obj(msg, "extraInfo");
        text = dumps_str(msg, "message");
        stack = callstack_text(dumps_get(extra, "py_callstack"));
        has_ts = dumps_num(dumps_get(extra, "timestamp"), &ts);
        /* the worker's exit code, or minus its signal: an int */
        has_code = dumps_int(dumps_get(msg, "errorCode"), INT32_MIN + 1, INT32_MAX, &code);
    } else {
        text = dumps_str(doc, "message");
        has_ts = dumps_num(dumps_get(doc, "timestamp"), &ts);
    }
    if (!text && !stack) {
        cJSON_Delete(doc);
        if (!*why)
            *why = dumps_strf("error file: no \"message\"");
        return OOMSCAN_OK;
    }
    /* The call stack ends with the exception line (format_exc); when it was cut, or absent, the
     * message stands for it. */
    char *body;
    if (stack && text && !strstr(stack, text))
        body = dumps_strf("%s%s%s\n", stack, stack[0] && stack[strlen(stack) - 1] != '\n' ? "\n" : "", text);
    else if (stack)
        body = dumps_strf("%s\n", stack);
    else
        body = dumps_strf("%s\n", text);
    free(stack);
    if (!body) {
        cJSON_Delete(doc);
        return OOMSCAN_ERR_NOMEM;
    }
    char local_rank[16];
    rank_from_path(src->member ? src->member : src->path, local_rank, sizeof local_rank);
    scan_source s2 = *src;
    oomscan_status st = dumps_text_scan(sc, ps, &s2, body, strlen(body), tmp);
    free(body);
    if (!st) {
        timefmt t;
        int timed = has_ts && ts > 0 && dumps_epoch_time(ts, &t) == 0;
        dumps_tag(tmp, "error_file", timed ? &t : NULL, NULL, local_rank, NULL, 1);
        /* errorCode is the worker's exit code as the agent saw it: negative for a signal */
        for (size_t i = 0; has_code && code != 0 && i < tmp->n; i++) {
            cJSON_DeleteItemFromObjectCaseSensitive(tmp->f[i].memory, "exitcode");
            cJSON_AddNumberToObject(tmp->f[i].memory, "exitcode", (double)code);
            if (code < 0 && !cJSON_HasObjectItem(tmp->f[i].memory, "signal"))
                cJSON_AddNumberToObject(tmp->f[i].memory, "signal", (double)-code);
        }
    }
    cJSON_Delete(doc);
    return st;
}
