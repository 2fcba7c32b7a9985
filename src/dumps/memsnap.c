/* memsnap.c - PyTorch CUDA memory snapshots (torch.cuda.memory._dump_snapshot: pickle.dump of
 * torch.cuda.memory._snapshot(), written on OOM by the OOM observers of several frameworks). The
 * layout, as torch/cuda/memory.py documents it and torch/cuda/_memory_viz.py reads it:
 *   {"segments": [{"device", "address", "total_size", "allocated_size", "active_size",
 *                  "requested_size", "stream", "segment_type": "large|small", "blocks":
 *                  [{"address", "size", "requested_size", "state": "active_allocated|
 *                    active_awaiting_free|inactive", "frames": [{"filename", "line", "name"}]}]}],
 *    "device_traces": [[{"action": "alloc|free_requested|free_completed|segment_alloc|
 *                        segment_free|snapshot|oom", "addr", "size", "stream", "frames",
 *                        "device_free" (oom only)}]]}
 * PyTorch 2.0's blocks carry "history": [{"addr", "real_size", "frames"}] instead of "frames".
 * Measured at the OOM: reserved against allocated per segment, the largest free (inactive) block
 * against the failed request, the free cache's fragmentation (1 - largest free block / free bytes),
 * and the allocation sites holding the most bytes with their frames. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/taxonomy.h"
#include "dumps/common.h"

#define SNAP_SITES 5
#define SNAP_SEGMENTS 8
#define SNAP_FRAMES 8
#define SNAP_MAX_SITES (1u << 16) /* distinct sites kept; beyond, "(other sites)" */
#define SNAP_DEVICES 64

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static double num(const cJSON *v) { return cJSON_IsNumber(v) ? v->valuedouble : 0; }

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
/* What a frame is, remembered by its ref for frames that stay (pickle_permanent: PyTorch shares each
 * frame dict between every stack that holds it, so most are): 1 a Python frame outside torch's
 * package, 2 one inside it, 3 not Python; 0 not known. Looking at the file name of each frame of every
 * allocation was a sixth of a long trace's reading. */
typedef struct {
    uint8_t *c;
    size_t n;
} frame_kinds;

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
static pickle_ref block_frames(const pickle_doc *d, pickle_ref b)
{
    pickle_ref f = pickle_get(d, b, "frames");
    if (pickle_type_of(d, f) == PK_LIST)
        return f;
    return pickle_get(d, pickle_item(d, pickle_get(d, b, "history"), 0), "frames");
}

/* Frames as [{"filename","line","name"}] (at most `max`, 0 = all), for dumps_traceback. */
static cJSON *frames_json(const pickle_doc *d, pickle_ref frames, size_t max)
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

typedef struct {
    char *key;     /* "name (file:line)", or a placeholder in parentheses */
    char *name, *file;
    double line;
    uint64_t hash;
    cJSON *frames; /* the user-side frames of the first allocation seen there */
} site_t;

/* Sites by their text (open addressing: a snapshot of 30,000 blocks at distinct sites must not
 * compare each with every other). */
typedef struct {
    site_t *s;
    size_t n, cap;
    uint32_t *slot; /* id + 1, 0 empty */
    size_t nslot;
    frame_kinds kinds; /* python_frame's memory of each shared frame */
    /* stacks without a Python frame, by a hash of their frames' text: their site needs the machinery
     * test of every frame, which a long trace would otherwise pay at every allocation */
    uint64_t *ckey;
    uint32_t *cval; /* id + 1, 0 empty */
    size_t ncache, ccap;
} site_table;

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
 * file and line (no text is formatted for an allocation whose site is known). */
static uint32_t site_of(site_table *t, const pickle_doc *d, pickle_ref frames)
{
    pickle_ref f = python_frame(d, frames, &t->kinds);
    uint32_t *cached = NULL;
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

static void site_table_clear(site_table *t)
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
    memset(t, 0, sizeof *t);
}

/* ---- the trace, read as it streams ------------------------------------------------------------ */

/* live allocations of one device: address -> size and site (open addressing, backward-shift delete) */
typedef struct {
    uint64_t addr;
    int64_t size; /* 0: empty slot */
    uint32_t site;
} live_e;

typedef struct {
    live_e *e;
    size_t n, cap;
} live_map;

typedef struct {
    int64_t *v;
    size_t n;
} site_bytes;

typedef struct {
    uint64_t events;
    live_map live;
    int64_t total, peak;
    uint64_t peak_event;
    site_bytes now, base; /* live bytes by site now, and at the window's start */
    int has_base;         /* a "snapshot" action started the window; else the recording's start */
    uint64_t base_event;
    int64_t base_total;
    /* the last OOM: the trace at that moment */
    int has_oom;
    uint64_t oom_event;
    double oom_size, oom_free;
    int64_t oom_total, oom_peak, oom_base_total;
    uint64_t oom_peak_event, oom_base_event;
    int oom_has_base;
    site_bytes oom_now, oom_base;
    uint32_t oom_site;
    cJSON *oom_frames;
} dev_trace;

struct memsnap_trace {
    site_table sites;
    dev_trace dev[SNAP_DEVICES];
    int ndev;
    int nomem;
};

memsnap_trace *memsnap_trace_new(void) { return calloc(1, sizeof(memsnap_trace)); }

void memsnap_trace_free(memsnap_trace *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->ndev; i++) {
        dev_trace *v = &t->dev[i];
        free(v->live.e);
        free(v->now.v);
        free(v->base.v);
        free(v->oom_now.v);
        free(v->oom_base.v);
        cJSON_Delete(v->oom_frames);
    }
    site_table_clear(&t->sites);
    free(t);
}

static size_t addr_hash(uint64_t a, size_t cap) { return (size_t)((a >> 9) * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1); }

static int live_put(live_map *m, uint64_t addr, int64_t size, uint32_t site)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        live_e *g = calloc(cap, sizeof *g);
        if (!g)
            return -1;
        for (size_t i = 0; i < m->cap; i++)
            if (m->e[i].size) {
                size_t j = addr_hash(m->e[i].addr, cap);
                while (g[j].size)
                    j = (j + 1) & (cap - 1);
                g[j] = m->e[i];
            }
        free(m->e);
        m->e = g;
        m->cap = cap;
    }
    size_t j = addr_hash(addr, m->cap);
    while (m->e[j].size && m->e[j].addr != addr)
        j = (j + 1) & (m->cap - 1);
    if (!m->e[j].size)
        m->n++;
    m->e[j] = (live_e){addr, size, site};
    return 0;
}

/* Remove addr; its entry into *out. 0 found, -1 not. */
static int live_take(live_map *m, uint64_t addr, live_e *out)
{
    if (!m->cap)
        return -1;
    size_t i = addr_hash(addr, m->cap);
    while (m->e[i].addr != addr || !m->e[i].size) {
        if (!m->e[i].size)
            return -1;
        i = (i + 1) & (m->cap - 1);
    }
    *out = m->e[i];
    size_t j = i;
    for (;;) {
        j = (j + 1) & (m->cap - 1);
        if (!m->e[j].size)
            break;
        size_t home = addr_hash(m->e[j].addr, m->cap);
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->e[i] = m->e[j];
            i = j;
        }
    }
    m->e[i].size = 0;
    m->n--;
    return 0;
}

static int bytes_add(site_bytes *b, uint32_t site, int64_t delta)
{
    if (site >= b->n) {
        size_t n = b->n ? b->n : 64;
        while (n <= site)
            n *= 2;
        int64_t *g = realloc(b->v, n * sizeof *g);
        if (!g)
            return -1;
        memset(g + b->n, 0, (n - b->n) * sizeof *g);
        b->v = g;
        b->n = n;
    }
    b->v[site] += delta;
    return 0;
}

static int bytes_copy(site_bytes *dst, const site_bytes *src)
{
    if (dst->n < src->n) {
        int64_t *g = realloc(dst->v, src->n * sizeof *g);
        if (!g)
            return -1;
        dst->v = g;
        dst->n = src->n;
    }
    if (src->n)
        memcpy(dst->v, src->v, src->n * sizeof *dst->v);
    if (dst->n > src->n)
        memset(dst->v + src->n, 0, (dst->n - src->n) * sizeof *dst->v);
    return 0;
}

static int64_t bytes_at(const site_bytes *b, size_t site) { return site < b->n ? b->v[site] : 0; }

int memsnap_trace_item(void *ud, const pickle_doc *d, size_t device, pickle_ref ev)
{
    memsnap_trace *t = ud;
    if (device >= SNAP_DEVICES || t->nomem)
        return 0;
    if ((int)device >= t->ndev)
        t->ndev = (int)device + 1;
    dev_trace *v = &t->dev[device];
    const char *action = pickle_str(d, pickle_get(d, ev, "action"));
    if (!action)
        return 0;
    v->events++;
    /* a hostile trace's numbers may be negative, huge or not numbers: kept in range before any cast */
    double fa = pickle_num(d, pickle_get(d, ev, "addr"), 0), fs = pickle_num(d, pickle_get(d, ev, "size"), 0);
    uint64_t addr = fa > 0 && fa < 1.8e19 ? (uint64_t)fa : 0;
    int64_t size = fs > 0 && fs < 9.2e18 ? (int64_t)fs : 0;
    int bad = 0;
    if (strcmp(action, "alloc") == 0 && size > 0) {
        uint32_t s = site_of(&t->sites, d, pickle_get(d, ev, "frames"));
        live_e old;
        if (s == UINT32_MAX)
            bad = 1;
        else if (live_take(&v->live, addr, &old) == 0) { /* an address reused without its free recorded */
            v->total -= old.size;
            bad |= bytes_add(&v->now, old.site, -old.size);
        }
        if (!bad && !(bad = live_put(&v->live, addr, size, s) || bytes_add(&v->now, s, size))) {
            v->total += size;
            if (v->total > v->peak) {
                v->peak = v->total;
                v->peak_event = v->events;
            }
        }
    } else if (strcmp(action, "free_completed") == 0 || strcmp(action, "free") == 0) {
        live_e old;
        if (live_take(&v->live, addr, &old) == 0) {
            v->total -= old.size;
            bad = bytes_add(&v->now, old.site, -old.size);
        }
    } else if (strcmp(action, "snapshot") == 0) {
        v->has_base = 1;
        v->base_event = v->events;
        v->base_total = v->total;
        bad = bytes_copy(&v->base, &v->now);
    } else if (strcmp(action, "oom") == 0) {
        v->has_oom = 1;
        v->oom_event = v->events;
        v->oom_size = (double)size;
        v->oom_free = pickle_num(d, pickle_get(d, ev, "device_free"), -1);
        v->oom_total = v->total;
        v->oom_peak = v->peak;
        v->oom_peak_event = v->peak_event;
        v->oom_has_base = v->has_base;
        v->oom_base_event = v->base_event;
        v->oom_base_total = v->has_base ? v->base_total : 0;
        pickle_ref fr = pickle_get(d, ev, "frames");
        v->oom_site = site_of(&t->sites, d, fr);
        cJSON_Delete(v->oom_frames);
        v->oom_frames = frames_json(d, fr, 0);
        bad = v->oom_site == UINT32_MAX || !v->oom_frames || bytes_copy(&v->oom_now, &v->now) ||
              (v->has_base ? bytes_copy(&v->oom_base, &v->base) : bytes_copy(&v->oom_base, &(site_bytes){0}));
    }
    if (bad)
        t->nomem = 1;
    return 0;
}

static int by_bytes_desc(const void *a, const void *b)
{
    double x = num(get(*(const cJSON *const *)a, "bytes")), y = num(get(*(const cJSON *const *)b, "bytes"));
    return (x < y) - (x > y);
}

/* Keep the `keep` largest entries of array `a` by "bytes". */
static void keep_largest(cJSON *a, int keep)
{
    int n = cJSON_GetArraySize(a);
    if (n <= 1)
        return;
    cJSON **v = malloc((size_t)n * sizeof *v);
    if (!v)
        return;
    int k = 0;
    while (a->child)
        v[k++] = cJSON_DetachItemViaPointer(a, a->child);
    qsort(v, (size_t)n, sizeof *v, by_bytes_desc);
    for (int i = 0; i < n; i++) {
        if (i < keep)
            cJSON_AddItemToArray(a, v[i]);
        else
            cJSON_Delete(v[i]);
    }
    free(v);
}

static cJSON *site_entry(const site_table *t, size_t id, double bytes)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "site", t->s[id].key);
    cJSON_AddNumberToObject(o, "bytes", bytes);
    cJSON_AddItemToObject(o, "frames", cJSON_Duplicate(t->s[id].frames, 1));
    return o;
}

/* What the trace of device `dev` tells: the window before the OOM (from the last "snapshot" action,
 * else from the recording's start) and what grew in it by site, the peak, the failing allocation's
 * site. Without an OOM in the trace, the same at the trace's end. NULL when the device has none. */
static cJSON *trace_story(const memsnap_trace *t, int dev)
{
    if (!t || dev < 0 || dev >= t->ndev || t->nomem || !t->dev[dev].events)
        return NULL;
    const dev_trace *v = &t->dev[dev];
    int oom = v->has_oom;
    const site_bytes *now = oom ? &v->oom_now : &v->now, *base = oom ? &v->oom_base : &v->base;
    int has_base = oom ? v->oom_has_base : v->has_base;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "events", (double)v->events);
    cJSON_AddStringToObject(o, "until", oom ? "oom" : "end");
    cJSON_AddStringToObject(o, "window_start", has_base ? "snapshot" : "recording_start");
    cJSON_AddNumberToObject(o, "window_start_event", has_base ? (double)(oom ? v->oom_base_event : v->base_event) : 0);
    double start = has_base ? (double)(oom ? v->oom_base_total : v->base_total) : 0;
    double end = (double)(oom ? v->oom_total : v->total);
    cJSON_AddNumberToObject(o, "window_start_bytes", start);
    cJSON_AddNumberToObject(o, "live_bytes", end);
    cJSON_AddNumberToObject(o, "grew_bytes", end - start);
    cJSON_AddNumberToObject(o, "peak_bytes", (double)(oom ? v->oom_peak : v->peak));
    cJSON_AddNumberToObject(o, "peak_event", (double)(oom ? v->oom_peak_event : v->peak_event));
    cJSON *grew = cJSON_AddArrayToObject(o, "grew_sites");
    for (size_t s = 0; grew && s < t->sites.n; s++) {
        int64_t g = bytes_at(now, s) - bytes_at(base, s);
        cJSON *e = g > 0 ? site_entry(&t->sites, s, (double)g) : NULL;
        if (e)
            cJSON_AddItemToArray(grew, e);
    }
    keep_largest(grew, SNAP_SITES);
    if (oom) {
        cJSON_AddNumberToObject(o, "oom_event", (double)v->oom_event);
        if (v->oom_site < t->sites.n)
            cJSON_AddStringToObject(o, "oom_site", t->sites.s[v->oom_site].key);
    }
    return o;
}

/* long: one snapshot's summary from one pass over its segments; the figures gathered there are the locals
 * the summary writes. */
int memsnap_summarise(const pickle_doc *d, memsnap_trace *tr, const scan_source *src, struct dumps_acc *acc,
                      char **why)
{
    (void)why;
    pickle_ref root = pickle_root(d), segs = pickle_get(d, root, "segments");
    if (pickle_type_of(d, root) != PK_DICT || pickle_type_of(d, segs) != PK_LIST)
        return 1;
    /* the device measured: the one that ran out (the last OOM of the trace), else the first segment's */
    int oom_dev = -1;
    for (int i = 0; tr && i < tr->ndev; i++)
        if (tr->dev[i].has_oom && (oom_dev < 0 || tr->dev[i].oom_event > 0))
            oom_dev = i;
    const dev_trace *ov = oom_dev >= 0 ? &tr->dev[oom_dev] : NULL;
    double device = ov ? oom_dev : pickle_num(d, pickle_get(d, pickle_item(d, segs, 0), "device"), 0);
    cJSON *sum = cJSON_CreateObject();
    if (!sum)
        return -1;
    cJSON_AddStringToObject(sum, "path", src->path);
    if (src->member)
        cJSON_AddStringToObject(sum, "member", src->member);
    cJSON_AddNumberToObject(sum, "input", (double)src->input);
    cJSON_AddNumberToObject(sum, "device", device);
    double reserved = 0, allocated = 0, free_cached = 0, largest_free = 0, nseg = 0;
    cJSON *segd = cJSON_CreateArray();
    site_table own = {0};
    site_table *sites = tr ? &tr->sites : &own;
    site_bytes held = {0};
    int bad = 0;
    for (size_t si = 0; si < pickle_len(d, segs); si++) {
        pickle_ref s = pickle_item(d, segs, si);
        if (pickle_num(d, pickle_get(d, s, "device"), 0) != device)
            continue;
        nseg++;
        double seg_total = pickle_num(d, pickle_get(d, s, "total_size"), 0), seg_alloc = 0, seg_free = 0,
               seg_largest = 0;
        pickle_ref blocks = pickle_get(d, s, "blocks");
        for (size_t bi = 0; bi < pickle_len(d, blocks); bi++) {
            pickle_ref b = pickle_item(d, blocks, bi);
            const char *state = pickle_str(d, pickle_get(d, b, "state"));
            double size = pickle_num(d, pickle_get(d, b, "size"), 0);
            if (state && strcmp(state, "inactive") == 0) {
                seg_free += size;
                if (size > seg_largest)
                    seg_largest = size;
                continue;
            }
            if (!state || strcmp(state, "active_allocated") != 0)
                continue;
            seg_alloc += size;
            uint32_t id = site_of(sites, d, block_frames(d, b));
            if (id == UINT32_MAX || bytes_add(&held, id, to_i64(size)))
                bad = 1;
        }
        if (!blocks && pickle_get(d, s, "allocated_size"))
            seg_alloc = pickle_num(d, pickle_get(d, s, "allocated_size"), 0);
        reserved += seg_total;
        allocated += seg_alloc;
        free_cached += seg_free;
        if (seg_largest > largest_free)
            largest_free = seg_largest;
        cJSON *sd = cJSON_CreateObject();
        if (sd && segd) {
            cJSON_AddNumberToObject(sd, "address", pickle_num(d, pickle_get(d, s, "address"), 0));
            const char *type = pickle_str(d, pickle_get(d, s, "segment_type"));
            if (type)
                cJSON_AddStringToObject(sd, "type", type);
            cJSON_AddNumberToObject(sd, "reserved_bytes", seg_total);
            cJSON_AddNumberToObject(sd, "allocated_bytes", seg_alloc);
            cJSON_AddNumberToObject(sd, "largest_free_block_bytes", seg_largest);
            cJSON_AddNumberToObject(sd, "bytes", seg_total - seg_alloc); /* sort key: the most unused first */
            cJSON_AddItemToArray(segd, sd);
        } else {
            cJSON_Delete(sd);
        }
    }
    cJSON_AddNumberToObject(sum, "segments", nseg);
    cJSON_AddNumberToObject(sum, "reserved_bytes", reserved);
    cJSON_AddNumberToObject(sum, "allocated_bytes", allocated);
    cJSON_AddNumberToObject(sum, "free_cached_bytes", free_cached);
    cJSON_AddNumberToObject(sum, "largest_free_block_bytes", largest_free);
    cJSON_AddNumberToObject(sum, "fragmentation", free_cached > 0 ? 1.0 - largest_free / free_cached : 0.0);
    if (ov) {
        cJSON_AddNumberToObject(sum, "requested_bytes", ov->oom_size);
        if (ov->oom_free >= 0)
            cJSON_AddNumberToObject(sum, "device_free_bytes", ov->oom_free);
        cJSON_AddItemToObject(sum, "oom_frames", cJSON_Duplicate(ov->oom_frames, 1));
        cJSON_AddBoolToObject(sum, "trace_oom", 1);
    }
    keep_largest(segd, SNAP_SEGMENTS);
    cJSON *a;
    cJSON_ArrayForEach(a, segd) cJSON_DeleteItemFromObjectCaseSensitive(a, "bytes");
    cJSON_AddItemToObject(sum, "segments_detail", segd);
    cJSON *top = cJSON_CreateArray();
    for (size_t id = 0; top && id < held.n; id++) {
        cJSON *e = held.v[id] > 0 ? site_entry(sites, id, (double)held.v[id]) : NULL;
        if (e)
            cJSON_AddItemToArray(top, e);
    }
    keep_largest(top, SNAP_SITES);
    cJSON_AddItemToObject(sum, "top_sites", top);
    cJSON *tstory = device >= 0 && device < SNAP_DEVICES ? trace_story(tr, (int)device) : NULL;
    if (tstory)
        cJSON_AddItemToObject(sum, "trace", tstory);
    free(held.v);
    site_table_clear(&own);
    if (bad) {
        cJSON_Delete(sum);
        return -1;
    }
    cJSON_AddItemToArray(acc->snap, sum);
    return 0;
}

/* Whether the snapshot can be the failure f reports, and if not why (into why[cap]). It can when its
 * trace holds an OOM, or when its device and totals agree with the message's: the message prints two
 * decimals of its unit (up to 5 MiB off in GiB) and the allocator rounds blocks to 512 bytes and
 * segments to 2 MiB, so totals within 1% or 32 MiB, whichever is more, agree. A message that states
 * no totals cannot be checked, and the snapshot is then not this failure's either. */
static int can_be(const finding *f, const cJSON *sum, char *why, size_t cap)
{
    why[0] = 0;
    if (cJSON_IsTrue(get(sum, "trace_oom")))
        return 1;
    const cJSON *m = f->memory;
    const cJSON *gpu = get(m, "gpu"), *alloc = get(m, "allocated_bytes"), *res = get(m, "reserved_bytes"),
                *unalloc = get(m, "reserved_unallocated_bytes");
    double dev = num(get(sum, "device"));
    if (cJSON_IsNumber(gpu) && gpu->valuedouble != dev) {
        snprintf(why, cap, "the snapshot is of device %.0f, the failure on GPU %.0f", dev, gpu->valuedouble);
        return 0;
    }
    double msg_res = cJSON_IsNumber(res) ? res->valuedouble
                     : cJSON_IsNumber(alloc) && cJSON_IsNumber(unalloc) ? alloc->valuedouble + unalloc->valuedouble
                                                                          : -1;
    struct {
        const char *what;
        double msg, snap;
    } t[2] = {{"allocated", cJSON_IsNumber(alloc) ? alloc->valuedouble : -1, num(get(sum, "allocated_bytes"))},
              {"reserved", msg_res, num(get(sum, "reserved_bytes"))}};
    int checked = 0;
    for (int i = 0; i < 2; i++) {
        if (t[i].msg < 0)
            continue;
        checked++;
        double diff = t[i].msg > t[i].snap ? t[i].msg - t[i].snap : t[i].snap - t[i].msg;
        double tol = t[i].msg * 0.01 > 32.0 * 1048576 ? t[i].msg * 0.01 : 32.0 * 1048576;
        if (diff > tol) {
            snprintf(why, cap, "the snapshot measured %.2f GiB %s, the failure's message %.2f GiB", t[i].snap / 1073741824.0,
                     t[i].what, t[i].msg / 1073741824.0);
            return 0;
        }
    }
    if (!checked) {
        snprintf(why, cap, "its trace holds no out-of-memory event and the failure's message states no totals to "
                           "compare with");
        return 0;
    }
    return 1;
}

/* The snapshot's measurements as memory.snapshot of finding f (or, when it cannot be this failure,
 * as memory.snapshot_context with the reason, which nothing draws a conclusion from); the request
 * from the finding when the log stated it, else from the snapshot's OOM record. */
static void attach(finding *f, const cJSON *sum, const char *other)
{
    cJSON *m = f->memory;
    const char *key = other ? "snapshot_context" : "snapshot";
    if (!m || cJSON_HasObjectItem(m, key))
        return;
    cJSON *o = cJSON_Duplicate(sum, 1);
    if (!o)
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(o, "input");
    cJSON_DeleteItemFromObjectCaseSensitive(o, "oom_frames");
    cJSON_DeleteItemFromObjectCaseSensitive(o, "trace_oom");
    if (other) {
        cJSON_AddStringToObject(o, "taken_at_another_moment", other);
        cJSON_AddItemToObject(m, key, o);
        f->version++;
        return;
    }
    const cJSON *req = get(m, "requested_bytes");
    if (cJSON_IsNumber(req)) {
        cJSON_DeleteItemFromObjectCaseSensitive(o, "requested_bytes");
        cJSON_AddNumberToObject(o, "requested_bytes", req->valuedouble);
    }
    double r = num(get(o, "requested_bytes")), lf = num(get(o, "largest_free_block_bytes")),
           fc = num(get(o, "free_cached_bytes"));
    if (r > 0) {
        /* the cache held enough in all but not in one piece: fragmentation, not capacity, failed it */
        cJSON_AddBoolToObject(o, "fragmented", fc >= r && lf < r);
        cJSON_AddBoolToObject(o, "request_fits_largest_free_block", lf >= r);
    }
    cJSON_AddItemToObject(m, key, o);
    f->version++;
}

static const char *rank_of_path(const char *p, char *buf, size_t cap)
{
    /* oom_rank-3_..., rank3, rank_3 */
    buf[0] = 0;
    const char *r = strstr(p, "rank");
    if (!r)
        return buf;
    r += 4;
    while (*r == '-' || *r == '_')
        r++;
    size_t k = 0;
    while (r[k] >= '0' && r[k] <= '9' && k + 1 < cap) {
        buf[k] = r[k];
        k++;
    }
    buf[k] = 0;
    return buf;
}

int memsnap_finish(struct dumps_acc *acc, const pdb *db, story *st)
{
    const cJSON *sum;
    int rc = 0;
    cJSON_ArrayForEach(sum, acc->snap)
    {
        const char *path = cJSON_GetStringValue(get(sum, "path"));
        const char *member = cJSON_GetStringValue(get(sum, "member"));
        char rank[16];
        rank_of_path(member ? member : path, rank, sizeof rank);
        /* the CUDA OOM it explains: the same rank's when both say, else the first one found */
        long target = -1;
        for (size_t i = 0; i < st->n; i++) {
            const finding *f = &st->f[i];
            if (f->cls != CLS_CUDA_OOM || cJSON_HasObjectItem(f->memory, "snapshot"))
                continue;
            if (rank[0] && f->rank[0] && strcmp(rank, f->rank) != 0)
                continue;
            target = (long)i;
            break;
        }
        const cJSON *oomf = get(sum, "oom_frames");
        char *tb = cJSON_GetArraySize(oomf) > 0 ? dumps_traceback(oomf) : strdup("");
        if (!tb)
            return -1;
        if (target < 0 && get(sum, "requested_bytes")) {
            /* no log reported it: the snapshot's own OOM record is the finding */
            char *text = dumps_strf("%sCUDA memory snapshot: out of memory on device %.0f trying to allocate %.0f bytes%s\n",
                                    tb, num(get(sum, "device")), num(get(sum, "requested_bytes")), "");
            if (text && get(sum, "device_free_bytes")) {
                free(text);
                text = dumps_strf("%sCUDA memory snapshot: out of memory on device %.0f trying to allocate %.0f bytes "
                                  "(%.0f bytes free on the device)\n",
                                  tb, num(get(sum, "device")), num(get(sum, "requested_bytes")),
                                  num(get(sum, "device_free_bytes")));
            }
            if (!text || dumps_finish_scan(db, text, path, member, (size_t)num(get(sum, "input")), "memory_snapshot",
                                           rank, NULL, st, &target) != 0)
                rc = -1;
            free(text);
        }
        char other[200] = "";
        int counts = target >= 0 && can_be(&st->f[target], sum, other, sizeof other);
        if (target >= 0 && counts && tb[0] && st->f[target].phase == PH_UNKNOWN) {
            /* the failing allocation's own stack names the phase the log did not */
            story *tmp = story_new();
            long idx = -1;
            char *text = dumps_strf("%sCUDA memory snapshot: out of memory on device 0 trying to allocate 1 bytes\n", tb);
            if (tmp && text && dumps_finish_scan(db, text, path, member, 0, "memory_snapshot", NULL, NULL, tmp, &idx) == 0 &&
                idx >= 0 && tmp->f[idx].phase != PH_UNKNOWN)
                rc |= story_set_phase(st, target, tmp->f[idx].phase, tmp->f[idx].phase_evidence, tmp->f[idx].framework);
            free(text);
            story_free(tmp);
        }
        free(tb);
        if (target >= 0)
            attach(&st->f[target], sum, counts ? NULL : other);
    }
    return rc;
}
