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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/taxonomy.h"
#include "dumps/common.h"

#define SNAP_SITES 5
#define SNAP_SEGMENTS 8
#define SNAP_FRAMES 8

/* the checked reads (common.h): a snapshot's values may be of any type */
static const cJSON *get(const cJSON *o, const char *k) { return dumps_get(o, k); }

static double num(const cJSON *v)
{
    double d;
    return cJSON_IsNumber(v) && dumps_num(v, &d) ? d : 0;
}

static const cJSON *block_frames(const cJSON *b)
{
    const cJSON *f = get(b, "frames");
    if (cJSON_IsArray(f))
        return f;
    return get(cJSON_GetArrayItem(get(b, "history"), 0), "frames"); /* PyTorch 2.0 */
}

/* "name (file:line)" of a frame; the site key is the innermost frame outside torch's own code */
static void frame_text(const cJSON *f, char *buf, size_t cap)
{
    const char *file = cJSON_GetStringValue(get(f, "filename"));
    const char *name = cJSON_GetStringValue(get(f, "name"));
    snprintf(buf, cap, "%s (%s:%.0f)", name ? name : "?", file ? file : "?", num(get(f, "line")));
}

static int torch_internal(const cJSON *f)
{
    const char *file = cJSON_GetStringValue(get(f, "filename"));
    return !file || strstr(file, "/torch/") || file[0] == '?' || strstr(file, "??");
}

static cJSON *frames_list(const cJSON *frames)
{
    cJSON *out = cJSON_CreateArray();
    const cJSON *f;
    int n = 0;
    cJSON_ArrayForEach(f, frames)
    {
        if (++n > SNAP_FRAMES)
            break;
        char t[400];
        frame_text(f, t, sizeof t);
        cJSON_AddItemToArray(out, cJSON_CreateString(t));
    }
    return out;
}

static void site_key(const cJSON *frames, char *buf, size_t cap)
{
    const cJSON *f, *pick = cJSON_GetArrayItem(frames, 0);
    cJSON_ArrayForEach(f, frames) if (!torch_internal(f))
    {
        pick = f;
        break;
    }
    if (pick)
        frame_text(pick, buf, cap);
    else
        snprintf(buf, cap, "(no frames recorded)");
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

/* The last OOM of the device traces: its device, size, free bytes and frames. */
static const cJSON *last_oom(const cJSON *dump, int *device)
{
    const cJSON *found = NULL, *dev;
    int d = 0;
    cJSON_ArrayForEach(dev, get(dump, "device_traces"))
    {
        const cJSON *e;
        cJSON_ArrayForEach(e, dev)
        {
            const char *a = cJSON_GetStringValue(get(e, "action"));
            if (a && strcmp(a, "oom") == 0) {
                found = e;
                *device = d;
            }
        }
        d++;
    }
    return found;
}

int memsnap_summarise(const cJSON *dump, const scan_source *src, struct dumps_acc *acc, char **why)
{
    (void)why;
    const cJSON *segs = get(dump, "segments");
    if (!cJSON_IsObject(dump) || !cJSON_IsArray(segs))
        return 1;
    int oom_dev = -1;
    const cJSON *oom = last_oom(dump, &oom_dev);
    /* the device measured: the one that ran out, else the first segment's */
    double device = oom ? oom_dev : num(get(cJSON_GetArrayItem(segs, 0), "device"));
    cJSON *sum = cJSON_CreateObject();
    if (!sum)
        return -1;
    cJSON_AddStringToObject(sum, "path", src->path);
    if (src->member)
        cJSON_AddStringToObject(sum, "member", src->member);
    cJSON_AddNumberToObject(sum, "input", (double)src->input);
    cJSON_AddNumberToObject(sum, "device", device);
    double reserved = 0, allocated = 0, free_cached = 0, largest_free = 0, nseg = 0;
    cJSON *segd = cJSON_CreateArray(), *sites = cJSON_CreateObject();
    strmap *site_idx = strmap_new(); /* sites by key: a lookup in `sites` walked all 4096 */
    const cJSON *s;
    cJSON_ArrayForEach(s, segs)
    {
        if (num(get(s, "device")) != device)
            continue;
        nseg++;
        double seg_total = num(get(s, "total_size")), seg_alloc = 0, seg_free = 0, seg_largest = 0;
        const cJSON *b;
        cJSON_ArrayForEach(b, get(s, "blocks"))
        {
            const char *state = cJSON_GetStringValue(get(b, "state"));
            double size = num(get(b, "size"));
            if (state && strcmp(state, "inactive") == 0) {
                seg_free += size;
                if (size > seg_largest)
                    seg_largest = size;
                continue;
            }
            if (!state || strcmp(state, "active_allocated") != 0)
                continue;
            seg_alloc += size;
            char key[400];
            const cJSON *fr = block_frames(b);
            site_key(fr, key, sizeof key);
            cJSON *site = strmap_get(site_idx, key);
            if (!site && site_idx && strmap_count(site_idx) < 4096 && (site = cJSON_AddObjectToObject(sites, key)) &&
                strmap_put(site_idx, key, site) == 0) {
                cJSON_AddStringToObject(site, "site", key);
                cJSON_AddNumberToObject(site, "bytes", 0);
                cJSON_AddNumberToObject(site, "blocks", 0);
                cJSON_AddItemToObject(site, "frames", frames_list(fr));
            }
            if (site) {
                cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(site, "bytes"), num(get(site, "bytes")) + size);
                cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(site, "blocks"), num(get(site, "blocks")) + 1);
            }
        }
        if (!get(s, "blocks") && get(s, "allocated_size"))
            seg_alloc = num(get(s, "allocated_size"));
        reserved += seg_total;
        allocated += seg_alloc;
        free_cached += seg_free;
        if (seg_largest > largest_free)
            largest_free = seg_largest;
        cJSON *sd = cJSON_CreateObject();
        if (sd) {
            cJSON_AddNumberToObject(sd, "address", num(get(s, "address")));
            const char *type = cJSON_GetStringValue(get(s, "segment_type"));
            if (type)
                cJSON_AddStringToObject(sd, "type", type);
            cJSON_AddNumberToObject(sd, "reserved_bytes", seg_total);
            cJSON_AddNumberToObject(sd, "allocated_bytes", seg_alloc);
            cJSON_AddNumberToObject(sd, "largest_free_block_bytes", seg_largest);
            cJSON_AddNumberToObject(sd, "bytes", seg_total - seg_alloc); /* sort key: the most unused first */
            cJSON_AddItemToArray(segd, sd);
        }
    }
    cJSON_AddNumberToObject(sum, "segments", nseg);
    cJSON_AddNumberToObject(sum, "reserved_bytes", reserved);
    cJSON_AddNumberToObject(sum, "allocated_bytes", allocated);
    cJSON_AddNumberToObject(sum, "free_cached_bytes", free_cached);
    cJSON_AddNumberToObject(sum, "largest_free_block_bytes", largest_free);
    cJSON_AddNumberToObject(sum, "fragmentation", free_cached > 0 ? 1.0 - largest_free / free_cached : 0.0);
    if (oom) {
        cJSON_AddNumberToObject(sum, "requested_bytes", num(get(oom, "size")));
        if (get(oom, "device_free"))
            cJSON_AddNumberToObject(sum, "device_free_bytes", num(get(oom, "device_free")));
        cJSON_AddItemToObject(sum, "oom_frames", cJSON_Duplicate(get(oom, "frames"), 1));
    }
    keep_largest(segd, SNAP_SEGMENTS);
    cJSON *a;
    cJSON_ArrayForEach(a, segd) cJSON_DeleteItemFromObjectCaseSensitive(a, "bytes");
    cJSON_AddItemToObject(sum, "segments_detail", segd);
    cJSON *top = cJSON_CreateArray();
    while (sites && sites->child)
        cJSON_AddItemToArray(top, cJSON_DetachItemViaPointer(sites, sites->child));
    cJSON_Delete(sites);
    strmap_free(site_idx);
    keep_largest(top, SNAP_SITES);
    cJSON_AddItemToObject(sum, "top_sites", top);
    cJSON_AddItemToArray(acc->snap, sum);
    return 0;
}

/* The snapshot's measurements as memory.snapshot of finding f; the request from the finding when the
 * log stated it, else from the snapshot's OOM record. */
static void attach(finding *f, const cJSON *sum)
{
    cJSON *m = f->memory;
    if (!m || cJSON_HasObjectItem(m, "snapshot"))
        return;
    cJSON *o = cJSON_Duplicate(sum, 1);
    if (!o)
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(o, "input");
    cJSON_DeleteItemFromObjectCaseSensitive(o, "oom_frames");
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
    cJSON_AddItemToObject(m, "snapshot", o);
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
        } else if (target >= 0 && tb[0] && st->f[target].phase == PH_UNKNOWN) {
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
            attach(&st->f[target], sum);
    }
    return rc;
}
