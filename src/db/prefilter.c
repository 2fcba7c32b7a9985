/* prefilter.c - multi-literal search: Vectorscan when built in, else Wu-Manber with 3-byte blocks. */
#include "db/prefilter.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#ifdef OOMSCAN_HAVE_VECTORSCAN
#include <hs.h>
#include <pthread.h>
#include <sys/mman.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#define SCRATCH_POOL 64
#define REORDER_CAP 512
#endif

#define BLOCK 3
#define TABLE_BITS 16
#define TABLE_SIZE (1u << TABLE_BITS)

struct prefilter {
    size_t n;
    size_t m;      /* window: the shortest literal, capped */
    size_t maxlen; /* longest literal */
    char **lits;
    size_t *lens;
    size_t *ids;   /* what a hit of literal i reports: ids[i] (prefilter_new_ids), NULL: i itself */
    uint8_t shift[TABLE_SIZE];
    int32_t head[TABLE_SIZE]; /* first literal whose window ends with this block, -1 = none */
    int32_t *next;            /* chain of literals sharing a block, in increasing index */
    atomic_int wm_ready;      /* the three above are built (wm_build) */
#ifdef OOMSCAN_HAVE_VECTORSCAN
    hs_database_t *hs; /* NULL: the portable engine runs */
    int from_blob;     /* hs came from prefilter_new_serialized's blob, into `mapped` bytes of mmap */
    size_t mapped;
    hs_scratch_t *proto;
    pthread_mutex_t mu;
    hs_scratch_t *pool[SCRATCH_POOL];
    size_t n_pool;
#endif
};

static inline uint32_t block_hash(const unsigned char *p)
{
    uint32_t v = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16);
    return (v * 2654435761u) >> (32 - TABLE_BITS);
}

void prefilter_free(prefilter *pf)
{
    if (!pf)
        return;
#ifdef OOMSCAN_HAVE_VECTORSCAN
    if (pf->hs) {
        for (size_t i = 0; i < pf->n_pool; i++)
            hs_free_scratch(pf->pool[i]);
        hs_free_scratch(pf->proto);
        if (pf->from_blob)
            munmap(pf->hs, pf->mapped);
        else
            hs_free_database(pf->hs);
        pthread_mutex_destroy(&pf->mu);
    }
#endif
    for (size_t i = 0; i < pf->n; i++)
        free(pf->lits[i]);
    free(pf->lits);
    free(pf->lens);
    free(pf->ids);
    free(pf->next);
    free(pf);
}

#ifdef OOMSCAN_HAVE_VECTORSCAN
/* The serialized form: a header of four little-endian 64-bit words (magic, the literal set's
 * fingerprint, the payload's checksum and length), then hs_serialize_database's bytes. Vectorscan
 * checks its own version and the CPU; the header makes sure the blob is whole and was made for this
 * very literal set (a user's patterns folder changes the set). */
#define BLOB_MAGIC 0x3130734873656f6full /* "oomsHs01" read little-endian */
#define BLOB_HEADER 32

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t fingerprint(const prefilter *pf)
{
    uint64_t h = 0xcbf29ce484222325ull;
    unsigned char w[8];
    for (size_t i = 0; i < pf->n; i++) {
        for (int k = 0; k < 8; k++)
            w[k] = (unsigned char)((uint64_t)pf->lens[i] >> (8 * k));
        h = fnv1a(fnv1a(h, w, 8), pf->lits[i], pf->lens[i]);
        if (pf->ids) { /* a subset's blob is not another subset's, nor the whole set's */
            for (int k = 0; k < 8; k++)
                w[k] = (unsigned char)((uint64_t)pf->ids[i] >> (8 * k));
            h = fnv1a(h, w, 8);
        }
    }
    return h;
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int k = 0; k < 8; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = (v << 8) | p[k];
    return v;
}

/* The database in `blob`, or NULL when it is not one for this set, this Vectorscan or this CPU. */
static hs_database_t *hs_from_blob(const prefilter *pf, const unsigned char *blob, size_t len, size_t *mapped)
{
    if (!blob || len <= BLOB_HEADER || get64(blob) != BLOB_MAGIC || get64(blob + 8) != fingerprint(pf) ||
        get64(blob + 24) != len - BLOB_HEADER ||
        get64(blob + 16) != fnv1a(0xcbf29ce484222325ull, blob + BLOB_HEADER, len - BLOB_HEADER))
        return NULL;
    const char *bytes = (const char *)blob + BLOB_HEADER;
    char *info = NULL;
    if (hs_valid_platform() != HS_SUCCESS || hs_serialized_database_info(bytes, len - BLOB_HEADER, &info) != HS_SUCCESS)
        return NULL;
    free(info); /* Vectorscan's misc allocator: malloc unless a caller set another */
    /* In pages of its own: freeing a block this size from the heap made glibc consolidate every
     * small free chunk at exit (a tenth of an empty run). */
    size_t size = 0;
    if (hs_serialized_database_size(bytes, len - BLOB_HEADER, &size) != HS_SUCCESS)
        return NULL;
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return NULL;
    if (hs_deserialize_database_at(bytes, len - BLOB_HEADER, mem) != HS_SUCCESS) {
        munmap(mem, size); /* HS_DB_VERSION_ERROR, HS_DB_PLATFORM_ERROR, HS_INVALID: compile instead */
        return NULL;
    }
    *mapped = size;
    return mem;
}

/* Build the set's Vectorscan database, from `blob` when it fits, else compiled. On any refusal the
 * portable engine runs instead: same hits. */
static void hs_build(prefilter *pf, const void *blob, size_t blob_len)
{
    if (pthread_mutex_init(&pf->mu, NULL) != 0)
        return;
    if ((pf->hs = hs_from_blob(pf, blob, blob_len, &pf->mapped))) {
        if (hs_alloc_scratch(pf->hs, &pf->proto) == HS_SUCCESS) {
            pf->from_blob = 1;
            return;
        }
        munmap(pf->hs, pf->mapped);
        pf->hs = NULL;
    }
    unsigned *ids = malloc(pf->n * sizeof *ids);
    unsigned *flags = calloc(pf->n, sizeof *flags);
    if (ids && flags) {
        for (size_t i = 0; i < pf->n; i++)
            ids[i] = (unsigned)i;
        hs_compile_error_t *err = NULL;
        if (hs_compile_lit_multi((const char *const *)pf->lits, flags, ids, pf->lens, (unsigned)pf->n,
                                 HS_MODE_BLOCK, NULL, &pf->hs, &err) != HS_SUCCESS) {
            hs_free_compile_error(err);
            pf->hs = NULL;
        } else if (hs_alloc_scratch(pf->hs, &pf->proto) != HS_SUCCESS) {
            hs_free_database(pf->hs);
            pf->hs = NULL;
        }
    }
    if (!pf->hs)
        pthread_mutex_destroy(&pf->mu);
    free(ids);
    free(flags);
#if defined(__GLIBC__)
    /* the compiler's working memory is freed but glibc keeps it mapped; hand it back (the peak RSS
     * budget is 16 MiB, docs/performance.md) */
    malloc_trim(0);
#endif
}
#endif

static prefilter *build(const char *const *lits, const size_t *ids, size_t n, prefilter_engine engine,
                        const void *blob, size_t blob_len);

prefilter *prefilter_new(const char *const *lits, size_t n)
{
    return build(lits, NULL, n, PREFILTER_AUTO, NULL, 0);
}

prefilter *prefilter_new_engine(const char *const *lits, size_t n, prefilter_engine engine)
{
    return build(lits, NULL, n, engine, NULL, 0);
}

prefilter *prefilter_new_serialized(const char *const *lits, size_t n, const void *blob, size_t blob_len)
{
    return build(lits, NULL, n, PREFILTER_AUTO, blob, blob_len);
}

prefilter *prefilter_new_ids(const char *const *lits, const size_t *ids, size_t n, prefilter_engine engine,
                             const void *blob, size_t blob_len)
{
    for (size_t i = 1; i < n; i++)
        if (ids[i] <= ids[i - 1])
            return NULL;
    return build(lits, ids, n, engine, blob, blob_len);
}

int prefilter_serialize(const prefilter *pf, unsigned char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
#ifdef OOMSCAN_HAVE_VECTORSCAN
    char *bytes = NULL;
    size_t n = 0;
    if (!pf || !pf->hs || hs_serialize_database(pf->hs, &bytes, &n) != HS_SUCCESS)
        return -1;
    unsigned char *b = malloc(BLOB_HEADER + n);
    if (b) {
        put64(b, BLOB_MAGIC);
        put64(b + 8, fingerprint(pf));
        put64(b + 16, fnv1a(0xcbf29ce484222325ull, bytes, n));
        put64(b + 24, n);
        memcpy(b + BLOB_HEADER, bytes, n);
    }
    free(bytes); /* Vectorscan's misc allocator: malloc */
    if (!b)
        return -1;
    *out = b;
    *len = BLOB_HEADER + n;
    return 0;
#else
    (void)pf;
    return -1;
#endif
}

int prefilter_from_blob(const prefilter *pf)
{
#ifdef OOMSCAN_HAVE_VECTORSCAN
    return pf && pf->hs && pf->from_blob;
#else
    (void)pf;
    return 0;
#endif
}

/* The portable engine's tables. With Vectorscan running they wait for the portable engine's first
 * use (no scratch space to be had): building them touched 320 KiB at every start. */
static void wm_build(prefilter *pf)
{
    const size_t n = pf->n;
    size_t max_shift = pf->m - BLOCK + 1;
    if (max_shift > 255)
        max_shift = 255;
    memset(pf->shift, (int)max_shift, sizeof pf->shift);
    for (size_t i = 0; i < TABLE_SIZE; i++)
        pf->head[i] = -1;
    /* built from the last literal back so each chain runs in increasing index (the reported order) */
    for (size_t i = n; i-- > 0;) {
        const unsigned char *l = (const unsigned char *)pf->lits[i];
        for (size_t q = BLOCK - 1; q < pf->m; q++) {
            uint32_t h = block_hash(l + q - (BLOCK - 1));
            size_t s = pf->m - 1 - q;
            if (s < pf->shift[h])
                pf->shift[h] = (uint8_t)s;
        }
        uint32_t h = block_hash(l + pf->m - BLOCK);
        pf->next[i] = pf->head[h];
        pf->head[h] = (int32_t)i;
    }
}

static prefilter *build(const char *const *lits, const size_t *ids, size_t n, prefilter_engine engine,
                        const void *blob, size_t blob_len)
{
    prefilter *pf = calloc(1, sizeof *pf);
    if (!pf)
        return NULL;
    pf->n = n;
    if (ids) {
        if (!(pf->ids = malloc((n ? n : 1) * sizeof *pf->ids)))
            goto fail;
        memcpy(pf->ids, ids, n * sizeof *ids);
    }
    pf->lits = calloc(n ? n : 1, sizeof *pf->lits);
    pf->lens = calloc(n ? n : 1, sizeof *pf->lens);
    pf->next = calloc(n ? n : 1, sizeof *pf->next);
    if (!pf->lits || !pf->lens || !pf->next)
        goto fail;
    /* Cap the window so one long literal set does not make the tables sparse; 16 is plenty to jump. */
    pf->m = 16;
    for (size_t i = 0; i < n; i++) {
        pf->lens[i] = strlen(lits[i]);
        if (pf->lens[i] < PREFILTER_MIN_LITERAL)
            goto fail;
        if (!(pf->lits[i] = strdup(lits[i])))
            goto fail;
        if (pf->lens[i] < pf->m)
            pf->m = pf->lens[i];
        if (pf->lens[i] > pf->maxlen)
            pf->maxlen = pf->lens[i];
    }
#ifdef OOMSCAN_HAVE_VECTORSCAN
    if (engine == PREFILTER_AUTO && n > 0)
        hs_build(pf, blob, blob_len);
    if (pf->hs)
        return pf;
#else
    (void)engine;
    (void)blob;
    (void)blob_len;
#endif
    wm_build(pf);
    atomic_store(&pf->wm_ready, 1);
    return pf;
fail:
    prefilter_free(pf);
    return NULL;
}

const char *prefilter_engine_name(const prefilter *pf)
{
#ifdef OOMSCAN_HAVE_VECTORSCAN
    if (pf && pf->hs)
        return "vectorscan";
#endif
    (void)pf;
    return "portable";
}

static void wm_scan(const prefilter *pf, const unsigned char *buf, size_t from, size_t end, size_t avail,
                    prefilter_hit_fn fn, void *ud)
{
    const size_t m = pf->m;
    /* j is the index of the window's last byte; the window starts at j - m + 1. */
    size_t j = from + m - 1;
    size_t limit = end + m - 1; /* windows starting before `end` */
    if (limit > avail)
        limit = avail;
    const uint8_t *shift = pf->shift;
    while (j < limit) {
        uint32_t h = block_hash(buf + j - (BLOCK - 1));
        size_t s = shift[h];
        if (s) {
            j += s;
            continue;
        }
        size_t start = j - m + 1;
        size_t resume = start + 1;
        for (int32_t i = pf->head[h]; i >= 0; i = pf->next[i]) {
            size_t len = pf->lens[i];
            if (start + len <= avail && memcmp(buf + start, pf->lits[i], len) == 0) {
                size_t r = fn(ud, pf->ids ? pf->ids[i] : (size_t)i, start);
                if (r == SIZE_MAX)
                    return;
                if (r > resume)
                    resume = r;
            }
        }
        j = resume + m - 1;
    }
}

#ifdef OOMSCAN_HAVE_VECTORSCAN
/* Vectorscan reports a hit when its literal ends. A hit that ends at e starts at e - len, so once the
 * scan has reached end e, every hit still to come starts at e - maxlen or later: pending hits that
 * start before that are final and go out, smallest (start, literal) first. */
typedef struct {
    size_t start, lit;
} pending;

typedef struct {
    const prefilter *pf;
    size_t from, end;
    prefilter_hit_fn fn;
    void *ud;
    pending q[REORDER_CAP]; /* sorted by (start, lit) */
    size_t nq;
    size_t last_start, resume; /* the WM engine's skip rule, replayed */
    int started, stopped;
} hs_ctx;

static int deliver(hs_ctx *c, size_t upto)
{
    size_t k = 0;
    for (; k < c->nq && c->q[k].start < upto; k++) {
        const pending *p = &c->q[k];
        if (c->started && p->start != c->last_start && p->start < c->resume)
            continue;
        if (!c->started || p->start != c->last_start) {
            c->started = 1;
            c->last_start = p->start;
            c->resume = p->start + 1;
        }
        size_t r = c->fn(c->ud, c->pf->ids ? c->pf->ids[p->lit] : p->lit, p->start);
        if (r == SIZE_MAX) {
            c->stopped = 1;
            return 1;
        }
        if (r > c->resume)
            c->resume = r;
    }
    memmove(c->q, c->q + k, (c->nq - k) * sizeof *c->q);
    c->nq -= k;
    return 0;
}

static int on_hs_match(unsigned int id, unsigned long long from, unsigned long long to, unsigned int flags,
                       void *ctx)
{
    (void)from;
    (void)flags;
    hs_ctx *c = ctx;
    size_t len = c->pf->lens[id];
    size_t at = c->from + (size_t)to; /* absolute end */
    size_t start = at - len;
    /* everything that starts before this can no longer be preceded by a later hit */
    if (at > c->pf->maxlen && deliver(c, at - c->pf->maxlen))
        return 1;
    if (start >= c->end)
        return 0;
    if (c->nq == REORDER_CAP && deliver(c, c->q[0].start + 1)) /* only a pathological set gets here */
        return 1;
    size_t k = c->nq;
    while (k > 0 && (c->q[k - 1].start > start || (c->q[k - 1].start == start && c->q[k - 1].lit > id))) {
        c->q[k] = c->q[k - 1];
        k--;
    }
    c->q[k].start = start;
    c->q[k].lit = id;
    c->nq++;
    return 0;
}

static hs_scratch_t *scratch_get(prefilter *pf)
{
    hs_scratch_t *s = NULL;
    pthread_mutex_lock(&pf->mu);
    if (pf->n_pool > 0)
        s = pf->pool[--pf->n_pool];
    pthread_mutex_unlock(&pf->mu);
    if (!s && hs_clone_scratch(pf->proto, &s) != HS_SUCCESS)
        s = NULL;
    return s;
}

static void scratch_put(prefilter *pf, hs_scratch_t *s)
{
    pthread_mutex_lock(&pf->mu);
    if (pf->n_pool < SCRATCH_POOL) {
        pf->pool[pf->n_pool++] = s;
        s = NULL;
    }
    pthread_mutex_unlock(&pf->mu);
    if (s)
        hs_free_scratch(s);
}

/* 0 when it ran; -1 when no scratch could be had (the caller runs the portable engine). */
static int hs_run(const prefilter *cpf, const unsigned char *buf, size_t from, size_t end, size_t avail,
                  prefilter_hit_fn fn, void *ud)
{
    /* the pool is internal bookkeeping; the search itself reads the prefilter only */
    prefilter *pf = (prefilter *)cpf;
    hs_scratch_t *s = scratch_get(pf);
    if (!s)
        return -1;
    hs_ctx c;
    c.pf = pf;
    c.from = from;
    c.end = end;
    c.fn = fn;
    c.ud = ud;
    c.nq = 0;
    c.last_start = c.resume = 0;
    c.started = c.stopped = 0;
    size_t stop = end - 1 + pf->maxlen; /* the last byte a literal starting before `end` can need */
    if (stop > avail)
        stop = avail;
    size_t pos = from;
    /* hs_scan takes an unsigned int length: feed very large regions in pieces that overlap by a
     * literal, and keep each hit to the piece where it starts */
    while (pos < end && !c.stopped) {
        size_t piece_end = end - pos > (1u << 30) ? pos + (1u << 30) : end;
        size_t piece_stop = piece_end - 1 + pf->maxlen;
        if (piece_stop > stop)
            piece_stop = stop;
        c.from = pos;
        c.end = piece_end;
        hs_scan(pf->hs, (const char *)buf + pos, (unsigned)(piece_stop - pos), 0, s, on_hs_match, &c);
        if (!c.stopped)
            deliver(&c, SIZE_MAX);
        pos = piece_end;
    }
    scratch_put(pf, s);
    return 0;
}
#endif

void prefilter_scan(const prefilter *pf, const unsigned char *buf, size_t from, size_t end, size_t avail,
                    prefilter_hit_fn fn, void *ud)
{
    if (!pf || pf->n == 0 || end <= from)
        return;
#ifdef OOMSCAN_HAVE_VECTORSCAN
    if (pf->hs && hs_run(pf, buf, from, end, avail, fn, ud) == 0)
        return;
    if (!atomic_load_explicit(&pf->wm_ready, memory_order_acquire)) {
        /* the tables are bookkeeping of a read-only prefilter: built once, under the pool's lock */
        prefilter *mpf = (prefilter *)pf;
        pthread_mutex_lock(&mpf->mu);
        if (!atomic_load_explicit(&mpf->wm_ready, memory_order_relaxed)) {
            wm_build(mpf);
            atomic_store_explicit(&mpf->wm_ready, 1, memory_order_release);
        }
        pthread_mutex_unlock(&mpf->mu);
    }
#endif
    wm_scan(pf, buf, from, end, avail, fn, ud);
}
