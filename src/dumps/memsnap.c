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
#include "dumps/memsnap_site.h"

#define SNAP_SITES 5
#define SNAP_SEGMENTS 8
#define SNAP_DEVICES 64

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static double num(const cJSON *v) { return cJSON_IsNumber(v) ? v->valuedouble : 0; }

/* A number from the file as an integer, 0 when it is not one a cast can hold (a hostile snapshot's
 * sizes may be negative, huge or NaN: a cast of those is undefined). */
static int64_t to_i64(double x) { return x > -9.2e18 && x < 9.2e18 ? (int64_t)x : 0; }

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

/* The event keys and actions met so far, by their refs (permanent ones only: a shared string the
 * memo keeps names the same text to the end), so that an event's keys are known without comparing
 * text: the same few strings are every event's. */
#define SNAP_KNOWN 16
typedef struct {
    pickle_ref ref[SNAP_KNOWN];
    uint8_t what[SNAP_KNOWN];
    int n;
} known_strs;

struct memsnap_trace {
    known_strs keys, actions;
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

enum { K_ACTION, K_ADDR, K_SIZE, K_FRAMES, K_FREE, K_COUNT, K_OTHER = K_COUNT };
enum { A_NONE, A_ALLOC, A_FREE, A_SNAPSHOT, A_OOM, A_OTHER };

static int key_code(const char *k)
{
    return !k                              ? K_OTHER
           : strcmp(k, "action") == 0      ? K_ACTION
           : strcmp(k, "addr") == 0        ? K_ADDR
           : strcmp(k, "size") == 0        ? K_SIZE
           : strcmp(k, "frames") == 0      ? K_FRAMES
           : strcmp(k, "device_free") == 0 ? K_FREE
                                           : K_OTHER;
}

static int action_code(const char *a)
{
    return !a                                                            ? A_NONE
           : strcmp(a, "alloc") == 0                                     ? A_ALLOC
           : strcmp(a, "free_completed") == 0 || strcmp(a, "free") == 0 ? A_FREE
           : strcmp(a, "snapshot") == 0                                  ? A_SNAPSHOT
           : strcmp(a, "oom") == 0                                       ? A_OOM
                                                                         : A_OTHER;
}

/* code(the text of str) for a str or bytes ref (code(NULL) for any other), remembered by its ref
 * when the ref is permanent. */
static int known(known_strs *ks, const pickle_doc *d, pickle_ref str, int (*code)(const char *))
{
    for (int i = 0; i < ks->n; i++)
        if (ks->ref[i] == str)
            return ks->what[i];
    int c = code(pickle_str(d, str));
    if (ks->n < SNAP_KNOWN && pickle_permanent(d, str)) {
        ks->ref[ks->n] = str;
        ks->what[ks->n++] = (uint8_t)c;
    }
    return c;
}

int memsnap_trace_item(void *ud, const pickle_doc *d, size_t device, pickle_ref ev)
{
    memsnap_trace *t = ud;
    if (device >= SNAP_DEVICES || t->nomem)
        return 0;
    if ((int)device >= t->ndev)
        t->ndev = (int)device + 1;
    dev_trace *v = &t->dev[device];
    /* the event's keys in one pass (a look-up for each was a twentieth of a long trace's reading);
     * the last of a repeated key wins, as pickle_get's would */
    pickle_ref r[K_COUNT] = {0};
    for (size_t i = 0, n = pickle_len(d, ev); i < n; i++) {
        int k = known(&t->keys, d, pickle_dict_key(d, ev, i), key_code);
        if (k != K_OTHER)
            r[k] = pickle_dict_value(d, ev, i);
    }
    int act = known(&t->actions, d, r[K_ACTION], action_code);
    if (act == A_NONE)
        return 0;
    v->events++;
    /* a hostile trace's numbers may be negative, huge or not numbers: kept in range before any cast */
    double fa = pickle_num(d, r[K_ADDR], 0), fs = pickle_num(d, r[K_SIZE], 0);
    uint64_t addr = fa > 0 && fa < 1.8e19 ? (uint64_t)fa : 0;
    int64_t size = fs > 0 && fs < 9.2e18 ? (int64_t)fs : 0;
    int bad = 0;
    if (act == A_ALLOC && size > 0) {
        uint32_t s = site_of(&t->sites, d, r[K_FRAMES]);
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
    } else if (act == A_FREE) {
        live_e old;
        if (live_take(&v->live, addr, &old) == 0) {
            v->total -= old.size;
            bad = bytes_add(&v->now, old.site, -old.size);
        }
    } else if (act == A_SNAPSHOT) {
        v->has_base = 1;
        v->base_event = v->events;
        v->base_total = v->total;
        bad = bytes_copy(&v->base, &v->now);
    } else if (act == A_OOM) {
        v->has_oom = 1;
        v->oom_event = v->events;
        v->oom_size = (double)size;
        v->oom_free = pickle_num(d, r[K_FREE], -1);
        v->oom_total = v->total;
        v->oom_peak = v->peak;
        v->oom_peak_event = v->peak_event;
        v->oom_has_base = v->has_base;
        v->oom_base_event = v->base_event;
        v->oom_base_total = v->has_base ? v->base_total : 0;
        pickle_ref fr = r[K_FRAMES];
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
                rc |= story_set_phase(st, target, tmp->f[idx].phase, tmp->f[idx].phase_evidence, tmp->f[idx].framework,
                                      tmp->f[idx].phase_weak ? SINK_PHASE_WEAK : 0);
            free(text);
            story_free(tmp);
        }
        free(tb);
        if (target >= 0)
            attach(&st->f[target], sum, counts ? NULL : other);
    }
    return rc;
}
