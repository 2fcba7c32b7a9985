/* memsnap_site.c - the frames of a memory snapshot's stacks and the site each is charged to
 * (memsnap_site.h): the machinery test, the Python-frame preference and the site table's hashing. */
#include "dumps/memsnap_site.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A number from the file as an integer, 0 when it is not one a cast can hold (a hostile snapshot's
 * sizes may be negative, huge or NaN: a cast of those is undefined). */
static int64_t to_i64(double x) { return x > -9.2e18 && x < 9.2e18 ? (int64_t)x : 0; }

/* ---- frames and sites ------------------------------------------------------------------------- */

static const char *fstr(const pickle_doc *d, pickle_ref f, const char *k) { return pickle_str(d, pickle_get(d, f, k)); }

static int has_any(const char *s, const char *const *subs)
{
    for (; *subs; subs++)
        if (strstr(s, *subs))
            return 1;
    return 0;
}

/* Frames of the machinery under the user's code: the unwinder, the allocator, the dispatcher and the
 * interpreter. The lists are torch/cuda/_memory_viz.py's _frame_filter (omit_functions,
 * omit_filenames), with the allocator's and the dispatcher's namespaces added: with C++ stacks
 * recorded (stacks="all") those are the innermost frames of every allocation. */
static int machinery(const char *name, const char *file)
{
    static const char *const names[] = {"unwind::unwind", "torch::unwind", "CapturedTraceback", "gather_with_cpp",
                                        "__libc_start_main", "PyEval_", "PyObject_", "PyFunction_", "_PyEval",
                                        "CUDACachingAllocator", "c10::", "at::", "torch::autograd::", NULL};
    static const char *const files[] = {"core/boxing", "/Register", "/Redispatch", "pythonrun.c", "Modules/main.c",
                                        "Objects/call.c", "Objects/methodobject.c", "pycore_ceval.h", "ceval.c",
                                        "cpython/abstract.h", "CUDACachingAllocator", "memory_snapshot.cpp", NULL};
    if (!name || !file)
        return 1;
    return strcmp(name, "_start") == 0 || has_any(name, names) || has_any(file, files) || file[0] == '?' ||
           strstr(file, "??") != NULL;
}

/* The frame an allocation is charged to: the innermost frame of the user's stack. In order of
 * preference: a Python frame outside torch's own package, any Python frame, a C++ frame that is not
 * machinery. Frames are innermost first. 0 when there is none: the stack holds PyTorch's machinery
 * only (the autograd engine's thread has no Python frames), or nothing. The Python frames are looked
 * for first: that test is a suffix, the machinery test two dozen substrings. */

static int frame_kind(const pickle_doc *d, pickle_ref f, frame_kinds *fk)
{
    if (fk && f < fk->n && fk->c[f])
        return fk->c[f];
    pickle_ref fr = pickle_get(d, f, "filename");
    const char *file = pickle_str(d, fr);
    size_t fl = pickle_len(d, fr);
    int k = fl > 3 && memcmp(file + fl - 3, ".py", 3) == 0 ? (strstr(file, "/torch/") ? 2 : 1) : 3;
    if (fk && pickle_permanent(d, f) && f < (1u << 28)) {
        if (f >= fk->n) {
            size_t n = fk->n ? fk->n : 4096;
            while (n <= f)
                n *= 2;
            uint8_t *g = realloc(fk->c, n);
            if (!g)
                return k;
            memset(g + fk->n, 0, n - fk->n);
            fk->c = g;
            fk->n = n;
        }
        fk->c[f] = (uint8_t)k;
    }
    return k;
}

static pickle_ref python_frame(const pickle_doc *d, pickle_ref frames, frame_kinds *fk)
{
    size_t n = pickle_len(d, frames);
    pickle_ref any_py = 0;
    for (size_t i = 0; i < n; i++) {
        pickle_ref f = pickle_item(d, frames, i);
        int k = frame_kind(d, f, fk);
        if (k == 1)
            return f;
        if (k == 2 && !any_py)
            any_py = f;
    }
    return any_py;
}

static pickle_ref cpp_frame(const pickle_doc *d, pickle_ref frames)
{
    for (size_t i = 0; i < pickle_len(d, frames); i++) {
        pickle_ref f = pickle_item(d, frames, i);
        if (!machinery(fstr(d, f, "name"), fstr(d, f, "filename")))
            return f;
    }
    return 0;
}

/* "name (file:line)" */
static void frame_text(const pickle_doc *d, pickle_ref f, char *buf, size_t cap)
{
    const char *file = fstr(d, f, "filename"), *name = fstr(d, f, "name");
    snprintf(buf, cap, "%s (%s:%.0f)", name ? name : "?", file ? file : "?", pickle_num(d, pickle_get(d, f, "line"), 0));
}

/* The frames list of a block: "frames", or PyTorch 2.0's history[0].frames. */
pickle_ref block_frames(const pickle_doc *d, pickle_ref b)
{
    pickle_ref f = pickle_get(d, b, "frames");
    if (pickle_type_of(d, f) == PK_LIST)
        return f;
    return pickle_get(d, pickle_item(d, pickle_get(d, b, "history"), 0), "frames");
}

/* Frames as [{"filename","line","name"}] (at most `max`, 0 = all), for dumps_traceback. */
cJSON *frames_json(const pickle_doc *d, pickle_ref frames, size_t max)
{
    cJSON *out = cJSON_CreateArray();
    size_t n = pickle_len(d, frames);
    for (size_t i = 0; out && i < n && (!max || i < max); i++) {
        pickle_ref f = pickle_item(d, frames, i);
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        const char *file = fstr(d, f, "filename"), *name = fstr(d, f, "name");
        cJSON_AddStringToObject(o, "filename", file ? file : "?");
        cJSON_AddNumberToObject(o, "line", pickle_num(d, pickle_get(d, f, "line"), 0));
        cJSON_AddStringToObject(o, "name", name ? name : "?");
        cJSON_AddItemToArray(out, o);
    }
    return out;
}

/* The user-side frames as text, innermost first, machinery left out (as _memory_viz's _frames_fmt). */
static cJSON *frames_list(const pickle_doc *d, pickle_ref frames)
{
    cJSON *out = cJSON_CreateArray();
    size_t n = pickle_len(d, frames);
    int k = 0;
    for (size_t i = 0; out && i < n && k < SNAP_FRAMES; i++) {
        pickle_ref f = pickle_item(d, frames, i);
        if (machinery(fstr(d, f, "name"), fstr(d, f, "filename")))
            continue;
        char t[400];
        frame_text(d, f, t, sizeof t);
        cJSON_AddItemToArray(out, cJSON_CreateString(t));
        k++;
    }
    return out;
}



static uint64_t frames_hash(const pickle_doc *d, pickle_ref frames)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < pickle_len(d, frames); i++) {
        pickle_ref f = pickle_item(d, frames, i);
        const char *parts[2] = {fstr(d, f, "name"), fstr(d, f, "filename")};
        for (int k = 0; k < 2; k++) {
            for (const char *c = parts[k] ? parts[k] : ""; *c; c++)
                h = (h ^ (unsigned char)*c) * 1099511628211ull;
            h = (h ^ 0xff) * 1099511628211ull;
        }
        h = (h ^ (uint64_t)to_i64(pickle_num(d, pickle_get(d, f, "line"), 0))) * 1099511628211ull;
    }
    return h | 1; /* 0 marks an empty slot */
}

static uint32_t *cache_slot(site_table *t, uint64_t h)
{
    if ((t->ncache + 1) * 2 > t->ccap) {
        size_t cap = t->ccap ? t->ccap * 2 : 256;
        uint64_t *k = calloc(cap, sizeof *k);
        uint32_t *v = calloc(cap, sizeof *v);
        if (!k || !v) {
            free(k);
            free(v);
            return NULL;
        }
        for (size_t i = 0; i < t->ccap; i++)
            if (t->ckey[i]) {
                size_t j = t->ckey[i] & (cap - 1);
                while (k[j])
                    j = (j + 1) & (cap - 1);
                k[j] = t->ckey[i];
                v[j] = t->cval[i];
            }
        free(t->ckey);
        free(t->cval);
        t->ckey = k;
        t->cval = v;
        t->ccap = cap;
    }
    size_t j = h & (t->ccap - 1);
    while (t->ckey[j] && t->ckey[j] != h)
        j = (j + 1) & (t->ccap - 1);
    if (!t->ckey[j]) {
        t->ckey[j] = h;
        t->ncache++;
    }
    return &t->cval[j];
}

/* The id of the site of `frames`; UINT32_MAX out of memory. */
static uint64_t site_hash(const char *name, const char *file, double line)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *c = name; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
    for (const char *c = file; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return (h ^ (uint64_t)to_i64(line)) * 1099511628211ull;
}

/* The id of the site of `frames`; UINT32_MAX out of memory. Sites are found by their frame's name,
 * file and line (no text is formatted for an allocation whose site is known).
 * long: the three caches (a shared Python frame's site, a machinery-only stack's, the table itself) are
 * tried in order on the hot path of every allocation event; split, each would repeat the others' keys. */
uint32_t site_of(site_table *t, const pickle_doc *d, pickle_ref frames)
{
    pickle_ref f = python_frame(d, frames, &t->kinds);
    uint32_t *cached = NULL;
    if (f && f < t->nfsite && t->fsite[f])
        return t->fsite[f] - 1;
    if (f && pickle_permanent(d, f) && f < (1u << 28)) {
        if (f >= t->nfsite) {
            size_t n = t->nfsite ? t->nfsite : 4096;
            while (n <= f)
                n *= 2;
            uint32_t *g = realloc(t->fsite, n * sizeof *g);
            if (!g)
                return UINT32_MAX;
            memset(g + t->nfsite, 0, (n - t->nfsite) * sizeof *g);
            t->fsite = g;
            t->nfsite = n;
        }
        cached = &t->fsite[f];
    }
    if (!f && pickle_len(d, frames)) {
        if (!(cached = cache_slot(t, frames_hash(d, frames))))
            return UINT32_MAX;
        if (*cached)
            return *cached - 1;
        f = cpp_frame(d, frames);
    }
    const char *name, *file = "";
    double line = -1;
    if (t->n >= SNAP_MAX_SITES) {
        name = "(other sites)";
    } else if (f) {
        name = fstr(d, f, "name");
        file = fstr(d, f, "filename");
        name = name ? name : "?";
        file = file ? file : "?";
        line = pickle_num(d, pickle_get(d, f, "line"), 0);
    } else {
        name = pickle_len(d, frames) ? "(no user frame: PyTorch's own frames only)" : "(no frames recorded)";
    }
    uint64_t h = site_hash(name, file, line);
    if ((t->n + 1) * 2 > t->nslot) {
        size_t ns = t->nslot ? t->nslot * 2 : 256;
        uint32_t *g = calloc(ns, sizeof *g);
        if (!g)
            return UINT32_MAX;
        for (size_t i = 0; i < t->nslot; i++)
            if (t->slot[i]) {
                size_t j = t->s[t->slot[i] - 1].hash & (ns - 1);
                while (g[j])
                    j = (j + 1) & (ns - 1);
                g[j] = t->slot[i];
            }
        free(t->slot);
        t->slot = g;
        t->nslot = ns;
    }
    size_t j = h & (t->nslot - 1);
    for (; t->slot[j]; j = (j + 1) & (t->nslot - 1)) {
        const site_t *c = &t->s[t->slot[j] - 1];
        if (c->hash == h && c->line == line && strcmp(c->name, name) == 0 && strcmp(c->file, file) == 0) {
            if (cached)
                *cached = t->slot[j];
            return t->slot[j] - 1;
        }
    }
    if (t->n == t->cap) {
        size_t c = t->cap ? t->cap * 2 : 64;
        site_t *g = realloc(t->s, c * sizeof *g);
        if (!g)
            return UINT32_MAX;
        t->s = g;
        t->cap = c;
    }
    site_t *s = &t->s[t->n];
    memset(s, 0, sizeof *s);
    s->hash = h;
    s->line = line;
    s->key = f ? dumps_strf("%s (%s:%.0f)", name, file, line) : strdup(name);
    s->name = strdup(name);
    s->file = strdup(file);
    if (!s->key || !s->name || !s->file || !(s->frames = frames_list(d, frames))) {
        free(s->key);
        free(s->name);
        free(s->file);
        return UINT32_MAX;
    }
    t->slot[j] = (uint32_t)++t->n;
    if (cached)
        *cached = (uint32_t)t->n;
    return (uint32_t)(t->n - 1);
}

void site_table_clear(site_table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->s[i].key);
        free(t->s[i].name);
        free(t->s[i].file);
        cJSON_Delete(t->s[i].frames);
    }
    free(t->s);
    free(t->slot);
    free(t->ckey);
    free(t->cval);
    free(t->kinds.c);
    free(t->fsite);
    memset(t, 0, sizeof *t);
}

