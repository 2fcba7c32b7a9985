/* pickle.c - the safe pickle subset reader (pickle.h). Opcode meanings follow CPython's
 * Lib/pickletools.py descriptions; written here from those descriptions, not copied. */
#include "dumps/pickle.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const pickle_limits pickle_default_limits = {.max_input = (size_t)4 << 30,
                                             .max_nodes = 64u << 20,
                                             .max_bytes = (size_t)1 << 30,
                                             .max_string = 64u << 20,
                                             .max_depth = 64};

/* One value. Containers keep their items in k[] (a dict: key, value, key, value ...; n counts pairs);
 * str and bytes keep a malloc'd NUL-terminated copy. A free slot has t == PK_INVALID and links the
 * free list through u.i. */
typedef struct {
    uint8_t t;
    uint8_t h;      /* height when last adopted (an early depth check; walkers bound depth themselves) */
    uint8_t onpath; /* pickle_to_json: the value is being expanded (a value inside itself) */
    uint8_t perm;   /* the memo holds it to the end: its ref names this value for the doc's life */
    uint32_t rc;    /* holders: the stack, containers, the memo, a walk */
    uint32_t n, cap;
    union {
        int64_t i;
        double d;
        char *s;
        pickle_ref *k;
    } u;
} pval;

/* refs 1-3 are None, True and False, shared and never freed */
#define REF_NONE 1u
#define REF_TRUE 2u
#define REF_FALSE 3u
#define FIRST_FREEABLE 4u
/* Small ints are not stored: the ref itself holds them (top bit set, the value in the low 31 bits,
 * two's complement), so the ints of every trace event cost no slot. */
#define IMM_BIT 0x80000000u
#define IS_IMM(r) (((r) & IMM_BIT) != 0)
#define IMM_MIN (-((int64_t)1 << 30))
#define IMM_MAX (((int64_t)1 << 30) - 1)
static int64_t imm_value(pickle_ref r) { return (int64_t)((int32_t)(r << 1) >> 1); }

/* memo index -> ref, for the entries still to be fetched (linear probing, backward-shift delete) */
typedef struct {
    uint32_t *key;
    pickle_ref *val;
    size_t cap, n;
} memo_map;
#define MEMO_EMPTY UINT32_MAX

struct pickle_doc {
    pickle_ref *work; /* decref's stack of values to let go, kept between calls */
    size_t cwork;
    pval *v;
    size_t nv, capv;
    pickle_ref free_head;
    size_t live_nodes, live_bytes, peak_nodes, peak_bytes;
    pickle_ref root;
    uint64_t input;
};

/* The bytes: memory, or a stream read into a window (read again from the start through `reread`). */
typedef struct {
    const unsigned char *mem;
    size_t memn;
    pickle_read_fn rd;
    void *rud;
    pickle_reread_fn rr;
    void *rrud;
    int again;      /* reading through rr */
    uint64_t end;   /* with rr: bytes to read in all (the first pass's STOP) */
    unsigned char *buf;
    size_t cap, lo, hi;
    uint64_t base;  /* stream offset of buf[0] */
} bytes_in;

typedef struct {
    bytes_in in;
    pickle_doc *d;
    pickle_limits lim;
    pickle_ref *stack;
    size_t sp, scap;
    size_t *marks;
    size_t nmarks, mcap;
    memo_map memo;
    uint64_t nmemo;      /* memo entries stored so far */
    uint8_t *fetches;    /* 2 bits per memo entry from the first pass: 0-2 fetches, 3 many; NULL: keep all */
    uint64_t nfetches;
    const pickle_input *pin;
    uint64_t op_at;      /* offset of the opcode being run, for messages */
    oomscan_diag *diag;
} rd;

/* ---- messages and bytes -------------------------------------------------------------------- */

static oomscan_status fail(rd *r, oomscan_status st, const char *fmt, const char *arg)
{
    char m[200];
    snprintf(m, sizeof m, fmt, arg ? arg : "");
    return diag_set(r->diag, st, NULL, "byte %llu: %s", (unsigned long long)r->op_at, m);
}

static oomscan_status nomem(rd *r) { return diag_set(r->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory"); }

static uint64_t le(const unsigned char *p, size_t k)
{
    uint64_t v = 0;
    for (size_t i = k; i-- > 0;)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t offset_of(const rd *r) { return r->in.base + r->in.lo; }

/* Make k bytes available at in.buf + in.lo (valid until the next call): need() below. */
static oomscan_status need_more(rd *r, size_t k)
{
    bytes_in *in = &r->in;
    if (in->mem)
        return fail(r, OOMSCAN_ERR_FORMAT, "truncated pickle (%sthe data ends inside an opcode)", NULL);
    if (in->lo > 0) {
        memmove(in->buf, in->buf + in->lo, in->hi - in->lo);
        in->base += in->lo;
        in->hi -= in->lo;
        in->lo = 0;
    }
    if (k > in->cap) {
        size_t cap = in->cap * 2 > k ? in->cap * 2 : k;
        unsigned char *g = realloc(in->buf, cap);
        if (!g)
            return nomem(r);
        in->buf = g;
        in->cap = cap;
    }
    while (in->hi < k) {
        ssize_t got;
        if (in->again) {
            uint64_t at = in->base + in->hi, left = in->end > at ? in->end - at : 0;
            size_t want = in->cap - in->hi;
            if (want > left)
                want = (size_t)left;
            got = want ? in->rr(in->rrud, in->buf + in->hi, want, at) : 0;
            if (got >= 0 && (size_t)got != want)
                got = -1;
        } else {
            got = in->rd(in->rud, in->buf + in->hi, in->cap - in->hi);
        }
        if (got < 0)
            return fail(r, OOMSCAN_ERR_FORMAT, "read error in the pickle%s", NULL);
        if (got == 0)
            return fail(r, OOMSCAN_ERR_FORMAT, "truncated pickle (%sthe data ends inside an opcode)", NULL);
        in->hi += (size_t)got;
        if (in->base + in->hi > r->lim.max_input)
            return diag_set(r->diag, OOMSCAN_ERR_LIMIT, NULL, "pickle of more than %zu bytes is over the limit",
                            r->lim.max_input);
    }
    return OOMSCAN_OK;
}

static inline oomscan_status need(rd *r, size_t k)
{
    return r->in.hi - r->in.lo >= k ? OOMSCAN_OK : need_more(r, k);
}

/* Pass k bytes without keeping them (the first pass's strings). */
static oomscan_status skip(rd *r, uint64_t k)
{
    bytes_in *in = &r->in;
    while (k > 0) {
        if (in->hi == in->lo) {
            oomscan_status st = need(r, 1);
            if (st)
                return st;
        }
        size_t have = in->hi - in->lo, take = k < have ? (size_t)k : have;
        in->lo += take;
        k -= take;
    }
    return OOMSCAN_OK;
}

/* ---- values ----------------------------------------------------------------------------------- */

static size_t val_bytes(const pval *p)
{
    size_t b = sizeof *p;
    if (p->t == PK_STR || p->t == PK_BYTES)
        b += (size_t)p->n + 1;
    else if (p->t == PK_LIST)
        b += (size_t)p->cap * sizeof(pickle_ref);
    else if (p->t == PK_DICT)
        b += (size_t)p->cap * 2 * sizeof(pickle_ref);
    return b;
}

static oomscan_status charge(rd *r, size_t nodes, size_t bytes)
{
    pickle_doc *d = r->d;
    d->live_nodes += nodes;
    d->live_bytes += bytes;
    if (d->live_nodes > d->peak_nodes)
        d->peak_nodes = d->live_nodes;
    if (d->live_bytes > d->peak_bytes)
        d->peak_bytes = d->live_bytes;
    if (d->live_nodes > r->lim.max_nodes)
        return fail(r, OOMSCAN_ERR_LIMIT, "more than the node limit of values held at once%s", NULL);
    if (d->live_bytes > r->lim.max_bytes)
        return fail(r, OOMSCAN_ERR_LIMIT, "more than the byte limit held at once%s", NULL);
    return OOMSCAN_OK;
}

/* A new value with one holder (the caller's); 0 with diag set on failure. */
static pickle_ref new_val(rd *r, uint8_t t, oomscan_status *st)
{
    pickle_doc *d = r->d;
    pickle_ref ref;
    if (d->free_head) {
        ref = d->free_head;
        d->free_head = (pickle_ref)d->v[ref].u.i;
    } else {
        if (d->nv == d->capv) {
            size_t cap = d->capv * 2;
            if (cap > IMM_BIT) {
                *st = fail(r, OOMSCAN_ERR_LIMIT, "more than the node limit of values held at once%s", NULL);
                return 0;
            }
            pval *g = realloc(d->v, cap * sizeof *g);
            if (!g) {
                *st = nomem(r);
                return 0;
            }
            d->v = g;
            d->capv = cap;
        }
        ref = (pickle_ref)d->nv++;
    }
    pval *p = &d->v[ref];
    memset(p, 0, sizeof *p);
    p->t = t;
    p->rc = 1;
    if ((*st = charge(r, 1, sizeof *p))) {
        /* still a live value: the caller drops it like any other */
    }
    return ref;
}

/* Drop one holder of v; a value nobody holds is freed, and so, in turn, are its items. Iterative:
 * a long chain of nested values must not recurse. */
static void decref(pickle_doc *d, pickle_ref v)
{
    pickle_ref *work = d->work;
    size_t nw = 0, cw = d->cwork;
    for (;;) {
        if (!IS_IMM(v) && v >= FIRST_FREEABLE && v < d->nv && d->v[v].t != PK_INVALID && --d->v[v].rc == 0) {
            pval *p = &d->v[v];
            d->live_nodes--;
            d->live_bytes -= val_bytes(p);
            if (p->t == PK_LIST || p->t == PK_DICT) {
                size_t k = (size_t)p->n * (p->t == PK_DICT ? 2 : 1);
                if (nw + k > cw) {
                    size_t c = cw ? cw * 2 : 64;
                    while (c < nw + k)
                        c *= 2;
                    pickle_ref *g = realloc(work, c * sizeof *g);
                    if (g) {
                        work = g;
                        cw = c;
                    }
                }
                if (k && nw + k <= cw) {
                    memcpy(work + nw, p->u.k, k * sizeof *work);
                    nw += k;
                } /* else: out of memory; the items stay allocated until the doc is freed */
                free(p->u.k);
            } else if (p->t == PK_STR || p->t == PK_BYTES) {
                free(p->u.s);
            }
            p->t = PK_INVALID;
            p->u.i = d->free_head;
            d->free_head = v;
        }
        if (!nw)
            break;
        v = work[--nw];
    }
    d->work = work;
    d->cwork = cw;
}

static void incref(pickle_doc *d, pickle_ref v)
{
    if (!IS_IMM(v) && v >= FIRST_FREEABLE)
        d->v[v].rc++;
}

static oomscan_status push(rd *r, pickle_ref v)
{
    if (r->sp == r->scap) {
        size_t cap = r->scap ? r->scap * 2 : 64;
        pickle_ref *g = realloc(r->stack, cap * sizeof *g);
        if (!g) {
            decref(r->d, v);
            return nomem(r);
        }
        r->stack = g;
        r->scap = cap;
    }
    r->stack[r->sp++] = v;
    return OOMSCAN_OK;
}

/* Push a new value of type t; *out its slot (valid until the next new value). */
static oomscan_status push_new(rd *r, uint8_t t, pval **out)
{
    oomscan_status st = OOMSCAN_OK;
    pickle_ref v = new_val(r, t, &st);
    if (!v)
        return st;
    if (st) {
        decref(r->d, v);
        return st;
    }
    if ((st = push(r, v)))
        return st;
    if (out)
        *out = &r->d->v[v];
    return OOMSCAN_OK;
}

static oomscan_status push_int(rd *r, int64_t i)
{
    if (i >= IMM_MIN && i <= IMM_MAX)
        return push(r, IMM_BIT | ((uint32_t)i & ~IMM_BIT));
    pval *p = NULL;
    oomscan_status st = push_new(r, PK_INT, &p);
    if (!st)
        p->u.i = i;
    return st;
}

static oomscan_status push_float(rd *r, double x)
{
    pval *p = NULL;
    oomscan_status st = push_new(r, PK_FLOAT, &p);
    if (!st)
        p->u.d = x;
    return st;
}

/* The type of any ref, immediate or stored. */
static uint8_t vtype(const pickle_doc *d, pickle_ref v) { return IS_IMM(v) ? PK_INT : d->v[v].t; }

static size_t floor_sp(const rd *r) { return r->nmarks ? r->marks[r->nmarks - 1] : 0; }

static int is_container(const pickle_doc *d, pickle_ref v)
{
    return !IS_IMM(v) && (d->v[v].t == PK_LIST || d->v[v].t == PK_DICT);
}

/* Room for `more` items (pairs in a dict) in container c. */
static oomscan_status reserve(rd *r, pickle_ref c, size_t more)
{
    pval *p = &r->d->v[c];
    size_t per = p->t == PK_DICT ? 2 : 1;
    if ((size_t)p->n + more <= p->cap)
        return OOMSCAN_OK;
    size_t cap = p->cap ? p->cap : p->t == PK_DICT ? 8 : 4;
    while (cap < (size_t)p->n + more)
        cap *= 2;
    if (cap > UINT32_MAX / 2)
        return fail(r, OOMSCAN_ERR_LIMIT, "a container larger than the node limit%s", NULL);
    oomscan_status st = charge(r, 0, (cap - p->cap) * per * sizeof(pickle_ref));
    if (st)
        return st;
    pickle_ref *g = realloc(p->u.k, cap * per * sizeof *g);
    if (!g)
        return nomem(r);
    p->u.k = g;
    p->cap = (uint32_t)cap;
    return OOMSCAN_OK;
}

static int height_of(const pickle_doc *d, pickle_ref v) { return is_container(d, v) ? d->v[v].h : 0; }


/* The early depth check as an item goes into a container. */
static oomscan_status adopt(rd *r, pickle_ref parent, pickle_ref child)
{
    int h = height_of(r->d, child) + 1;
    if ((unsigned)h > r->lim.max_depth)
        return fail(r, OOMSCAN_ERR_LIMIT, "values nested deeper than the limit%s", NULL);
    if (h > r->d->v[parent].h)
        r->d->v[parent].h = (uint8_t)(h > 255 ? 255 : h);
    return OOMSCAN_OK;
}

/* ---- streaming ------------------------------------------------------------------------------ */

/* Whether the list at stack[i] is one whose items are streamed: stack[0] the root dict, stack[i-2]
 * the key `stream_key` at a key's position, stack[i-1] the outer list being built as its value.
 * This is where Python's and PyTorch's picklers have it while its items are appended; a pickle laid
 * out otherwise is read whole. */
static int streamed(const rd *r, size_t i, size_t *list_index)
{
    const pickle_doc *d = r->d;
    if (!r->pin || !r->pin->stream_key || i < 3 || vtype(d, r->stack[0]) != PK_DICT || (i - 3) % 2 != 0)
        return 0;
    pickle_ref key = r->stack[i - 2], outer = r->stack[i - 1];
    if (vtype(d, key) != PK_STR || vtype(d, outer) != PK_LIST || strcmp(d->v[key].u.s, r->pin->stream_key) != 0)
        return 0;
    *list_index = d->v[outer].n;
    return 1;
}

/* Append item (the stack's reference is handed over) to the list at stack[li]. */
static oomscan_status append_at(rd *r, size_t li, pickle_ref item, int stream, size_t list_index)
{
    pickle_ref list = r->stack[li];
    if (stream) {
        int stop = r->pin->item(r->pin->item_ud, r->d, list_index, item);
        decref(r->d, item);
        return stop ? fail(r, OOMSCAN_ERR_FORMAT, "stopped while reading a streamed item%s", NULL) : OOMSCAN_OK;
    }
    oomscan_status st = adopt(r, list, item);
    if (!st)
        st = reserve(r, list, 1);
    if (st) {
        decref(r->d, item);
        return st;
    }
    pval *p = &r->d->v[list];
    p->u.k[p->n++] = item;
    return OOMSCAN_OK;
}

/* ---- dicts ------------------------------------------------------------------------------------ */

static oomscan_status setitem(rd *r, pickle_ref dict, pickle_ref key, pickle_ref val)
{
    pickle_doc *d = r->d;
    oomscan_status st = adopt(r, dict, val);
    if (!st && vtype(d, key) == PK_STR && d->v[dict].n < 256) {
        /* A repeated key replaces, as in Python. The look-up is linear, so it is only done for dicts of
         * the size real dumps have: a hostile dict of millions of keys keeps its repeats instead of
         * taking quadratic time. */
        pval *p = &d->v[dict];
        for (uint32_t j = 0; j < p->n; j++) {
            pickle_ref k = p->u.k[2 * j];
            if (k != key && (IS_IMM(k) || d->v[k].n != d->v[key].n || d->v[k].u.s[0] != d->v[key].u.s[0]))
                continue;
            if (vtype(d, k) == PK_STR && d->v[k].n == d->v[key].n && memcmp(d->v[k].u.s, d->v[key].u.s, d->v[k].n) == 0) {
                pickle_ref old = p->u.k[2 * j + 1];
                p->u.k[2 * j + 1] = val;
                decref(d, old);
                decref(d, key);
                return OOMSCAN_OK;
            }
        }
    }
    if (!st)
        st = reserve(r, dict, 1);
    if (st) {
        decref(d, key);
        decref(d, val);
        return st;
    }
    pval *p = &d->v[dict];
    p->u.k[2 * p->n] = key;
    p->u.k[2 * p->n + 1] = val;
    p->n++;
    return OOMSCAN_OK;
}

/* ---- scalars ---------------------------------------------------------------------------------- */

/* A str or bytes value of length k at the read position. */
static oomscan_status text(rd *r, uint64_t k, int is_bytes)
{
    if (k > r->lim.max_string)
        return fail(r, OOMSCAN_ERR_LIMIT, "a string longer than the string limit%s", NULL);
    oomscan_status st = need(r, (size_t)k);
    if (st)
        return st;
    const unsigned char *s = r->in.buf + r->in.lo;
    r->in.lo += (size_t)k;
    char m[48];
    const char *src = (const char *)s;
    size_t len = (size_t)k;
    if (is_bytes) {
        for (size_t i = 0; i < k; i++)
            if ((s[i] < 0x20 && s[i] != '\n' && s[i] != '\t') || s[i] >= 0x7f) {
                snprintf(m, sizeof m, "<%llu bytes>", (unsigned long long)k);
                src = m;
                len = strlen(m);
                break;
            }
    }
    char *z = malloc(len + 1);
    if (!z)
        return nomem(r);
    memcpy(z, src, len);
    z[len] = 0;
    pval *p = NULL;
    if ((st = push_new(r, is_bytes ? PK_BYTES : PK_STR, &p))) {
        free(z);
        return st;
    }
    p->u.s = z;
    p->n = (uint32_t)len;
    return charge(r, 0, len + 1);
}

/* LONG1/LONG4: little-endian two's complement of k bytes. Beyond 8 bytes the value is approximate
 * (a double), which is all a number in the tree can hold anyway. */
static oomscan_status long_int(rd *r, uint64_t k)
{
    if (k > 1024)
        return fail(r, OOMSCAN_ERR_LIMIT, "an integer wider than 1024 bytes%s", NULL);
    oomscan_status st = need(r, (size_t)k);
    if (st)
        return st;
    const unsigned char *s = r->in.buf + r->in.lo;
    r->in.lo += (size_t)k;
    if (k == 0)
        return push_int(r, 0);
    if (k <= 8) {
        uint64_t u = le(s, (size_t)k);
        if (k < 8 && (s[k - 1] & 0x80))
            u |= ~(uint64_t)0 << (8 * k);
        return push_int(r, (int64_t)u);
    }
    double v = 0;
    for (size_t i = (size_t)k; i-- > 0;)
        v = v * 256.0 + s[i];
    if (s[k - 1] & 0x80)
        v -= ldexp(1.0, (int)(8 * k));
    return push_float(r, v);
}

/* ---- the memo --------------------------------------------------------------------------------- */

static size_t mhash(uint32_t k, size_t cap) { return (size_t)((k * 2654435761u) & (cap - 1)); }

static pickle_ref *memo_find(memo_map *m, uint32_t k)
{
    if (!m->cap)
        return NULL;
    for (size_t i = mhash(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->key[i] == k)
            return &m->val[i];
        if (m->key[i] == MEMO_EMPTY)
            return NULL;
    }
}

static int memo_insert(memo_map *m, uint32_t k, pickle_ref v)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        uint32_t *nk = malloc(cap * sizeof *nk);
        pickle_ref *nv = malloc(cap * sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return -1;
        }
        memset(nk, 0xff, cap * sizeof *nk);
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i] != MEMO_EMPTY) {
                size_t j = mhash(m->key[i], cap);
                while (nk[j] != MEMO_EMPTY)
                    j = (j + 1) & (cap - 1);
                nk[j] = m->key[i];
                nv[j] = m->val[i];
            }
        free(m->key);
        free(m->val);
        m->key = nk;
        m->val = nv;
        m->cap = cap;
    }
    size_t i = mhash(k, m->cap);
    while (m->key[i] != MEMO_EMPTY && m->key[i] != k)
        i = (i + 1) & (m->cap - 1);
    if (m->key[i] == MEMO_EMPTY)
        m->n++;
    m->key[i] = k;
    m->val[i] = v;
    return 0;
}

static void memo_remove(memo_map *m, uint32_t k)
{
    if (!m->cap)
        return;
    size_t i = mhash(k, m->cap);
    while (m->key[i] != k) {
        if (m->key[i] == MEMO_EMPTY)
            return;
        i = (i + 1) & (m->cap - 1);
    }
    /* backward-shift deletion keeps every probe chain unbroken */
    size_t j = i;
    for (;;) {
        j = (j + 1) & (m->cap - 1);
        if (m->key[j] == MEMO_EMPTY)
            break;
        size_t home = mhash(m->key[j], m->cap);
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->key[i] = m->key[j];
            m->val[i] = m->val[j];
            i = j;
        }
    }
    m->key[i] = MEMO_EMPTY;
    m->n--;
}

static unsigned fetches_left(const rd *r, uint64_t idx)
{
    if (!r->fetches || idx >= r->nfetches)
        return 3;
    return (r->fetches[idx / 4] >> (2 * (idx % 4))) & 3u;
}

static void fetches_set(rd *r, uint64_t idx, unsigned v)
{
    uint8_t *b = &r->fetches[idx / 4];
    *b = (uint8_t)((*b & ~(3u << (2 * (idx % 4)))) | (v << (2 * (idx % 4))));
}

static oomscan_status memo_put(rd *r, uint64_t idx)
{
    if (r->sp <= floor_sp(r))
        return fail(r, OOMSCAN_ERR_FORMAT, "memo store with an empty stack%s", NULL);
    /* Python's and PyTorch's picklers number the memo in order; anything else is refused so that a
     * hostile index cannot make the table huge */
    if (idx > r->nmemo || idx >= MEMO_EMPTY)
        return fail(r, OOMSCAN_ERR_FORMAT, "memo index out of order%s", NULL);
    if (idx == r->nmemo)
        r->nmemo++;
    pickle_ref v = r->stack[r->sp - 1], *old = memo_find(&r->memo, (uint32_t)idx);
    if (old) {
        decref(r->d, *old);
        memo_remove(&r->memo, (uint32_t)idx);
    }
    unsigned left = fetches_left(r, idx);
    if (left == 0)
        return OOMSCAN_OK; /* never fetched: the memo need not hold it */
    if (memo_insert(&r->memo, (uint32_t)idx, v) != 0)
        return nomem(r);
    incref(r->d, v);
    if (left == 3 && !IS_IMM(v))
        r->d->v[v].perm = 1; /* fetched "many" times, or not counted: never let go before the end */
    return OOMSCAN_OK;
}

static oomscan_status memo_get(rd *r, uint64_t idx)
{
    pickle_ref *slot = idx < r->nmemo && idx < MEMO_EMPTY ? memo_find(&r->memo, (uint32_t)idx) : NULL;
    if (!slot) {
        if (idx < r->nmemo && r->fetches)
            return fail(r, OOMSCAN_ERR_FORMAT, "memo fetch the first pass did not count%s", NULL);
        return fail(r, OOMSCAN_ERR_FORMAT, "memo fetch of a value never stored%s", NULL);
    }
    pickle_ref v = *slot;
    incref(r->d, v);
    unsigned left = fetches_left(r, idx);
    if (left == 1 || left == 2)
        fetches_set(r, idx, left - 1);
    if (left == 1) {
        /* its last fetch: the memo lets it go */
        memo_remove(&r->memo, (uint32_t)idx);
        decref(r->d, v);
    }
    return push(r, v);
}

/* ---- opcodes ---------------------------------------------------------------------------------- */

/* Items above the top MARK, which is removed. */
static oomscan_status take_mark(rd *r, size_t *from)
{
    if (!r->nmarks)
        return fail(r, OOMSCAN_ERR_FORMAT, "no MARK for this opcode%s", NULL);
    *from = r->marks[--r->nmarks];
    return OOMSCAN_OK;
}

static void drop_from(rd *r, size_t from)
{
    while (r->sp > from)
        decref(r->d, r->stack[--r->sp]);
}

static oomscan_status build_seq(rd *r, size_t from)
{
    oomscan_status st = OOMSCAN_OK;
    pickle_ref a = new_val(r, PK_LIST, &st);
    if (!a) {
        drop_from(r, from);
        return st;
    }
    if (!st)
        st = reserve(r, a, r->sp - from);
    for (size_t i = from; i < r->sp; i++) {
        if (!st)
            st = adopt(r, a, r->stack[i]);
        if (st) {
            decref(r->d, r->stack[i]);
            continue;
        }
        pval *p = &r->d->v[a];
        p->u.k[p->n++] = r->stack[i];
    }
    r->sp = from;
    if (st) {
        decref(r->d, a);
        return st;
    }
    return push(r, a);
}

static oomscan_status fill_list(rd *r, size_t from)
{
    if (from == 0 || from > r->sp || vtype(r->d, r->stack[from - 1]) != PK_LIST) {
        oomscan_status st = fail(r, OOMSCAN_ERR_FORMAT, "APPENDS/ADDITEMS without a list under the MARK%s", NULL);
        drop_from(r, from);
        return st;
    }
    size_t li;
    int stream = streamed(r, from - 1, &li);
    /* room for the whole batch at once: a frames list of 30 items grew four times otherwise */
    oomscan_status st = stream ? OOMSCAN_OK : reserve(r, r->stack[from - 1], r->sp - from);
    size_t top = r->sp;
    r->sp = from; /* the items leave the stack in order, each handed to the list (or to the stream) */
    for (size_t i = from; i < top; i++) {
        if (st)
            decref(r->d, r->stack[i]);
        else
            st = append_at(r, from - 1, r->stack[i], stream, li);
    }
    return st;
}

static oomscan_status fill_dict(rd *r, size_t from)
{
    if (from == 0 || from > r->sp || vtype(r->d, r->stack[from - 1]) != PK_DICT) {
        oomscan_status st = fail(r, OOMSCAN_ERR_FORMAT, "SETITEMS/DICT without a dict under the MARK%s", NULL);
        drop_from(r, from);
        return st;
    }
    if ((r->sp - from) % 2) {
        oomscan_status st = fail(r, OOMSCAN_ERR_FORMAT, "odd number of items for a dict%s", NULL);
        drop_from(r, from);
        return st;
    }
    pickle_ref dict = r->stack[from - 1];
    oomscan_status st = reserve(r, dict, (r->sp - from) / 2);
    size_t top = r->sp;
    r->sp = from;
    for (size_t i = from; i < top; i += 2) {
        if (st) {
            decref(r->d, r->stack[i]);
            decref(r->d, r->stack[i + 1]);
        } else {
            st = setitem(r, dict, r->stack[i], r->stack[i + 1]);
        }
    }
    return st;
}

static oomscan_status refuse(rd *r, const char *what)
{
    return fail(r, OOMSCAN_ERR_FORMAT,
                "%s refused: this reader never constructs objects or runs code from a file", what);
}

/* The argument bytes of each opcode: a fixed size (ARG_FIXED), or a length prefix of 1, 4 or 8 bytes
 * whose value counts too (ARG_LEN1/4/8); ARG_NO for an opcode this reader refuses or does not know
 * (the second pass says which). A table: the first pass looks every opcode up. */
enum { ARG_NO = -1, ARG_ZERO = 15, ARG_LEN1 = 16, ARG_LEN4 = 17, ARG_LEN8 = 18 };
static const signed char ARG[256] = {
    [0x80] = 1, ['K'] = 1, ['q'] = 1, ['h'] = 1, ['M'] = 2, ['J'] = 4, ['r'] = 4, ['j'] = 4, [0x95] = 8, ['G'] = 8,
    [0x8a] = ARG_LEN1, [0x8c] = ARG_LEN1, ['C'] = ARG_LEN1, ['U'] = ARG_LEN1,
    [0x8b] = ARG_LEN4, ['X'] = ARG_LEN4, ['B'] = ARG_LEN4, ['T'] = ARG_LEN4,
    [0x8d] = ARG_LEN8, [0x8e] = ARG_LEN8, [0x96] = ARG_LEN8,
    ['('] = ARG_ZERO, ['0'] = ARG_ZERO, ['1'] = ARG_ZERO, ['2'] = ARG_ZERO, ['N'] = ARG_ZERO, [0x88] = ARG_ZERO,
    [0x89] = ARG_ZERO, [']'] = ARG_ZERO, [0x8f] = ARG_ZERO, [')'] = ARG_ZERO, ['}'] = ARG_ZERO, ['l'] = ARG_ZERO,
    ['t'] = ARG_ZERO, [0x91] = ARG_ZERO, [0x85] = ARG_ZERO, [0x86] = ARG_ZERO, [0x87] = ARG_ZERO, ['d'] = ARG_ZERO,
    ['a'] = ARG_ZERO, ['e'] = ARG_ZERO, [0x90] = ARG_ZERO, ['s'] = ARG_ZERO, ['u'] = ARG_ZERO, [0x94] = ARG_ZERO,
    ['.'] = ARG_ZERO,
};

static inline int arg_size(unsigned op, int *len_bytes)
{
    int a = ARG[op];
    *len_bytes = 0;
    if (a == 0)
        return ARG_NO;
    if (a == ARG_ZERO)
        return 0;
    if (a >= ARG_LEN1) {
        *len_bytes = a == ARG_LEN1 ? 1 : a == ARG_LEN4 ? 4 : 8;
        return 0;
    }
    return a;
}

/* The first pass: how often each memo entry is fetched (2 bits each, 3 = many). Only the memo
 * opcodes are looked at; anything odd ends the count and the second pass keeps every memo entry
 * (and reports the error, if it is one). *end: the bytes up to the STOP. Returns OOMSCAN_OK (a count
 * or none), or NOMEM / a read error.
 * long: the pickle machine's first pass, one switch over the opcodes; split, the opcode would be read
 * twice. */
static oomscan_status count_fetches(rd *r, uint64_t *end, int *usable)
{
    uint64_t n = 0, cap = 0;
    *usable = 0;
    for (;;) {
        /* the common opcodes while the window holds them whole; the rest below */
        const unsigned char *b = r->in.buf;
        size_t lo = r->in.lo, hi = r->in.hi;
        while (hi - lo >= 16) {
            unsigned o = b[lo];
            int k = ARG[o];
            if (k == ARG_ZERO && o != '.' && o != 0x94) {
                lo++;
            } else if (o == 0x94 && n / 4 < cap) {
                n++;
                lo++;
            } else if (o == 'h' || o == 'j') {
                uint64_t idx = o == 'h' ? b[lo + 1] : le(b + lo + 1, 4);
                if (idx >= n)
                    break;
                unsigned c = (r->fetches[idx / 4] >> (2 * (idx % 4))) & 3u;
                if (c < 3)
                    r->fetches[idx / 4] = (uint8_t)((r->fetches[idx / 4] & ~(3u << (2 * (idx % 4)))) |
                                                    ((c + 1) << (2 * (idx % 4))));
                lo += 1 + (size_t)k;
            } else if (k > 0 && k <= 8 && o != 'q' && o != 'r') {
                lo += 1 + (size_t)k;
            } else if (k == ARG_LEN1 && o != 0x8a) {
                if (hi - lo < 2 + (size_t)b[lo + 1])
                    break;
                lo += 2 + (size_t)b[lo + 1];
            } else if (k == ARG_LEN4 && o != 0x8b) {
                uint64_t len = le(b + lo + 1, 4);
                if (len > hi - lo - 5)
                    break;
                lo += 5 + (size_t)len;
            } else {
                break;
            }
        }
        r->in.lo = lo;
        r->nfetches = n;
        r->op_at = offset_of(r);
        oomscan_status st = need(r, 1);
        if (st)
            return st;
        unsigned op = r->in.buf[r->in.lo++];
        int lb;
        int k = arg_size(op, &lb);
        if (k < 0)
            return OOMSCAN_OK;
        uint64_t len = (uint64_t)k;
        if (lb) {
            if ((st = need(r, (size_t)lb)))
                return st;
            len = le(r->in.buf + r->in.lo, (size_t)lb);
            r->in.lo += (size_t)lb;
            if (len > r->lim.max_string && op != 0x8a && op != 0x8b)
                return OOMSCAN_OK;
            if ((op == 0x8a || op == 0x8b) && len > 1024)
                return OOMSCAN_OK;
        } else if (k > 0) {
            if ((st = need(r, (size_t)k)))
                return st;
        }
        const unsigned char *a = r->in.buf + r->in.lo;
        uint64_t idx = UINT64_MAX;
        int put = 0;
        if (op == 0x94) {
            put = 1, idx = n;
        } else if (op == 'q' || op == 'r') {
            put = 1, idx = le(a, (size_t)k);
        } else if (op == 'h' || op == 'j') {
            idx = le(a, (size_t)k);
        }
        if (put) {
            if (idx != n)
                return OOMSCAN_OK; /* a memo entry stored again or out of order: count nothing */
            if (n >= MEMO_EMPTY)
                return OOMSCAN_OK;
            if (n / 4 >= cap) {
                uint64_t c = cap ? cap * 2 : 4096;
                uint8_t *g = realloc(r->fetches, (size_t)c);
                if (!g)
                    return nomem(r);
                memset(g + cap, 0, (size_t)(c - cap));
                r->fetches = g;
                cap = c;
            }
            n++;
        } else if (idx != UINT64_MAX) {
            if (idx >= n)
                return OOMSCAN_OK;
            r->nfetches = n;
            unsigned c = fetches_left(r, idx);
            if (c < 3)
                fetches_set(r, idx, c + 1);
        }
        if ((st = skip(r, len)))
            return st;
        if (op == '.') {
            *end = offset_of(r);
            r->nfetches = n;
            *usable = 1;
            return OOMSCAN_OK;
        }
    }
}

/* long: one opcode of the pickle machine, one switch case per opcode: the machine's dispatch is this
 * function. */
static oomscan_status step(rd *r, int *stop)
{
    oomscan_status st;
    r->op_at = offset_of(r);
    if ((st = need(r, 1)))
        return st;
    unsigned op = r->in.buf[r->in.lo++];
    int lb;
    int k = arg_size(op, &lb);
    if (k > 0 && (st = need(r, (size_t)k)))
        return st;
    if (lb && (st = need(r, (size_t)lb)))
        return st;
    const unsigned char *a = r->in.buf + r->in.lo;
    size_t from = 0; /* set by take_mark before any use; GCC -O3 cannot see that through fail() */
    pickle_ref x, y, z;
    switch (op) {
    case 0x80: /* PROTO */
        r->in.lo++;
        if (a[0] < 2 || a[0] > 5) {
            char v[8];
            snprintf(v, sizeof v, "%u", a[0]);
            return fail(r, OOMSCAN_ERR_FORMAT, "pickle protocol %s is not supported (2 to 5 are)", v);
        }
        return OOMSCAN_OK;
    case 0x95: { /* FRAME: only a read-ahead hint, but its length must fit */
        uint64_t len = le(a, 8);
        r->in.lo += 8;
        if (r->in.mem && len > r->in.memn - r->in.lo)
            return fail(r, OOMSCAN_ERR_FORMAT, "truncated pickle (%sa frame runs past the end)", NULL);
        if (len > r->lim.max_input)
            return fail(r, OOMSCAN_ERR_FORMAT, "truncated pickle (%sa frame runs past the end)", NULL);
        return OOMSCAN_OK;
    }
    case '.':
        if (r->sp == 0)
            return fail(r, OOMSCAN_ERR_FORMAT, "STOP with an empty stack%s", NULL);
        *stop = 1;
        return OOMSCAN_OK;
    case '(':
        if (r->nmarks >= r->lim.max_depth)
            return fail(r, OOMSCAN_ERR_LIMIT, "MARKs nested deeper than the limit%s", NULL);
        if (r->nmarks == r->mcap) {
            size_t cap = r->mcap ? r->mcap * 2 : 16;
            size_t *g = realloc(r->marks, cap * sizeof *g);
            if (!g)
                return nomem(r);
            r->marks = g;
            r->mcap = cap;
        }
        r->marks[r->nmarks++] = r->sp;
        return OOMSCAN_OK;
    case '0': /* POP */
        if (r->sp <= floor_sp(r))
            return fail(r, OOMSCAN_ERR_FORMAT, "POP with an empty stack%s", NULL);
        decref(r->d, r->stack[--r->sp]);
        return OOMSCAN_OK;
    case '1': /* POP_MARK */
        if ((st = take_mark(r, &from)))
            return st;
        drop_from(r, from);
        return OOMSCAN_OK;
    case '2': /* DUP: a second reference */
        if (r->sp <= floor_sp(r))
            return fail(r, OOMSCAN_ERR_FORMAT, "DUP with an empty stack%s", NULL);
        x = r->stack[r->sp - 1];
        incref(r->d, x);
        return push(r, x);
    case 'N':
        return push(r, REF_NONE);
    case 0x88:
        return push(r, REF_TRUE);
    case 0x89:
        return push(r, REF_FALSE);
    case 'J':
        r->in.lo += 4;
        return push_int(r, (int32_t)(uint32_t)le(a, 4));
    case 'K':
        r->in.lo += 1;
        return push_int(r, a[0]);
    case 'M':
        r->in.lo += 2;
        return push_int(r, (int64_t)le(a, 2));
    case 0x8a: /* LONG1 */
        r->in.lo += 1;
        return long_int(r, a[0]);
    case 0x8b: /* LONG4 */
        r->in.lo += 4;
        if (a[3] & 0x80)
            return fail(r, OOMSCAN_ERR_FORMAT, "negative LONG4 length%s", NULL);
        return long_int(r, le(a, 4));
    case 'G': { /* BINFLOAT: big-endian IEEE double */
        r->in.lo += 8;
        uint64_t u = 0;
        for (int i = 0; i < 8; i++)
            u = (u << 8) | a[i];
        double dv;
        memcpy(&dv, &u, sizeof dv);
        if (!isfinite(dv))
            return push(r, REF_NONE); /* JSON has no inf/nan */
        return push_float(r, dv);
    }
    case 0x8c: /* SHORT_BINUNICODE */
    case 'C':  /* SHORT_BINBYTES */
    case 'U':  /* SHORT_BINSTRING (protocol 2's byte string) */
        r->in.lo += 1;
        return text(r, a[0], op != 0x8c);
    case 'X': /* BINUNICODE */
    case 'B': /* BINBYTES */
    case 'T': /* BINSTRING */
        r->in.lo += 4;
        if (op == 'T' && (a[3] & 0x80))
            return fail(r, OOMSCAN_ERR_FORMAT, "negative BINSTRING length%s", NULL);
        return text(r, le(a, 4), op != 'X');
    case 0x8d: /* BINUNICODE8 */
    case 0x8e: /* BINBYTES8 */
    case 0x96: /* BYTEARRAY8 */
        r->in.lo += 8;
        return text(r, le(a, 8), op != 0x8d);
    case ']':
    case 0x8f: /* EMPTY_SET: a list will do, nothing here needs set semantics */
    case ')':
        return push_new(r, PK_LIST, NULL);
    case '}':
        return push_new(r, PK_DICT, NULL);
    case 'l': /* LIST */
    case 't': /* TUPLE */
    case 0x91: /* FROZENSET */
        if ((st = take_mark(r, &from)))
            return st;
        return build_seq(r, from);
    case 0x85: /* TUPLE1..3 */
    case 0x86:
    case 0x87: {
        size_t n = op - 0x84;
        if (r->sp < floor_sp(r) + n)
            return fail(r, OOMSCAN_ERR_FORMAT, "TUPLEn with too few items%s", NULL);
        return build_seq(r, r->sp - n);
    }
    case 'd': /* DICT */
        if ((st = take_mark(r, &from)))
            return st;
        if ((st = push_new(r, PK_DICT, NULL))) {
            drop_from(r, from);
            return st;
        }
        /* insert the new dict under the items, then fill it as SETITEMS would */
        x = r->stack[r->sp - 1];
        memmove(&r->stack[from + 1], &r->stack[from], (r->sp - 1 - from) * sizeof *r->stack);
        r->stack[from] = x;
        return fill_dict(r, from + 1);
    case 'a': { /* APPEND */
        if (r->sp < floor_sp(r) + 2 || vtype(r->d, r->stack[r->sp - 2]) != PK_LIST)
            return fail(r, OOMSCAN_ERR_FORMAT, "APPEND without a list%s", NULL);
        size_t li;
        int stream = streamed(r, r->sp - 2, &li);
        x = r->stack[--r->sp];
        return append_at(r, r->sp - 1, x, stream, li);
    }
    case 'e':  /* APPENDS */
    case 0x90: /* ADDITEMS */
        if ((st = take_mark(r, &from)))
            return st;
        return fill_list(r, from);
    case 's': /* SETITEM */
        if (r->sp < floor_sp(r) + 3 || vtype(r->d, r->stack[r->sp - 3]) != PK_DICT)
            return fail(r, OOMSCAN_ERR_FORMAT, "SETITEM without a dict%s", NULL);
        z = r->stack[--r->sp];
        y = r->stack[--r->sp];
        return setitem(r, r->stack[r->sp - 1], y, z);
    case 'u': /* SETITEMS */
        if ((st = take_mark(r, &from)))
            return st;
        return fill_dict(r, from);
    case 'q': /* BINPUT */
        r->in.lo += 1;
        return memo_put(r, a[0]);
    case 'r': /* LONG_BINPUT */
        r->in.lo += 4;
        return memo_put(r, le(a, 4));
    case 0x94: /* MEMOIZE */
        return memo_put(r, r->nmemo);
    case 'h': /* BINGET */
        r->in.lo += 1;
        return memo_get(r, a[0]);
    case 'j': /* LONG_BINGET */
        r->in.lo += 4;
        return memo_get(r, le(a, 4));
    case 'c':
        return refuse(r, "GLOBAL");
    case 0x93:
        return refuse(r, "STACK_GLOBAL");
    case 'R':
        return refuse(r, "REDUCE");
    case 'b':
        return refuse(r, "BUILD");
    case 'i':
        return refuse(r, "INST");
    case 'o':
        return refuse(r, "OBJ");
    case 0x81:
    case 0x92:
        return refuse(r, "NEWOBJ");
    case 'P':
    case 'Q':
        return refuse(r, "PERSID");
    case 0x82:
    case 0x83:
    case 0x84:
        return refuse(r, "EXT");
    case 0x97:
    case 0x98:
        return refuse(r, "out-of-band buffer");
    default: {
        char v[8];
        snprintf(v, sizeof v, "0x%02x", op);
        return fail(r, OOMSCAN_ERR_FORMAT, "unknown or protocol 0/1 opcode %s", v);
    }
    }
}

/* ---- the document ------------------------------------------------------------------------------ */

static pickle_doc *doc_new(void)
{
    pickle_doc *d = calloc(1, sizeof *d);
    if (!d || !(d->v = calloc(1024, sizeof *d->v))) {
        free(d);
        return NULL;
    }
    d->capv = 1024;
    d->nv = FIRST_FREEABLE;
    d->v[REF_NONE].t = PK_NONE;
    d->v[REF_TRUE].t = PK_BOOL;
    d->v[REF_TRUE].u.i = 1;
    d->v[REF_FALSE].t = PK_BOOL;
    for (pickle_ref i = REF_NONE; i < FIRST_FREEABLE; i++)
        d->v[i].rc = 1;
    return d;
}

void pickle_doc_free(pickle_doc *d)
{
    if (!d)
        return;
    for (size_t i = FIRST_FREEABLE; i < d->nv; i++) {
        pval *p = &d->v[i];
        if (p->t == PK_LIST || p->t == PK_DICT)
            free(p->u.k);
        else if (p->t == PK_STR || p->t == PK_BYTES)
            free(p->u.s);
    }
    free(d->v);
    free(d->work);
    free(d);
}

/* Read the rest of the stream; *end its size. */
static oomscan_status drain(rd *r, uint64_t *end)
{
    bytes_in *in = &r->in;
    for (;;) {
        in->base += in->hi;
        in->lo = in->hi = 0;
        if (in->base > r->lim.max_input)
            return diag_set(r->diag, OOMSCAN_ERR_LIMIT, NULL, "pickle of more than %zu bytes is over the limit",
                            r->lim.max_input);
        ssize_t got = in->rd(in->rud, in->buf, in->cap);
        if (got < 0)
            return fail(r, OOMSCAN_ERR_FORMAT, "read error in the pickle%s", NULL);
        if (got == 0)
            break;
        in->hi = (size_t)got;
    }
    *end = in->base;
    return OOMSCAN_OK;
}

static oomscan_status run(rd *r)
{
    /* the first pass, when the bytes can be had again */
    uint64_t end = 0;
    int usable = 0;
    oomscan_status st = OOMSCAN_OK;
    if (r->in.mem || r->in.rr) {
        st = count_fetches(r, &end, &usable);
        if (st == OOMSCAN_ERR_NOMEM || (st && !r->in.mem))
            return st; /* a stream that failed cannot be read again */
        if (r->diag)
            diag_clear(r->diag);
        st = OOMSCAN_OK;
        if (!usable) {
            free(r->fetches);
            r->fetches = NULL;
            /* the second pass keeps every memo entry and says what is wrong; it reads to the end */
            if (!r->in.mem && (st = drain(r, &end)))
                return st;
        }
        if (r->in.mem) {
            r->in.lo = 0;
        } else {
            r->in.again = 1;
            r->in.end = end;
            r->in.base = 0;
            r->in.lo = r->in.hi = 0;
        }
    }
    int stop = 0;
    while (!st && !stop)
        st = step(r, &stop);
    if (!st) {
        r->d->root = r->stack[--r->sp];
        r->d->input = offset_of(r);
    }
    return st;
}

static oomscan_status parse(rd *r, pickle_doc **out)
{
    *out = NULL;
    if (!(r->d = doc_new()))
        return nomem(r);
    oomscan_status st = run(r);
    drop_from(r, 0);
    for (size_t i = 0; i < r->memo.cap; i++)
        if (r->memo.key[i] != MEMO_EMPTY)
            decref(r->d, r->memo.val[i]);
    free(r->memo.key);
    free(r->memo.val);
    free(r->stack);
    free(r->marks);
    free(r->fetches);
    if (st) {
        pickle_doc_free(r->d);
        return st;
    }
    *out = r->d;
    return OOMSCAN_OK;
}

oomscan_status pickle_parse(const pickle_input *in, const pickle_limits *lim, pickle_doc **out, oomscan_diag *diag)
{
    rd r = {.lim = lim ? *lim : pickle_default_limits, .diag = diag, .pin = in};
    r.in.rd = in->read;
    r.in.rud = in->read_ud;
    r.in.rr = in->reread;
    r.in.rrud = in->reread_ud;
    r.in.cap = 1u << 20;
    if (!(r.in.buf = malloc(r.in.cap))) {
        *out = NULL;
        return nomem(&r);
    }
    oomscan_status st = parse(&r, out);
    free(r.in.buf);
    return st;
}

oomscan_status pickle_parse_mem(const unsigned char *p, size_t n, const pickle_limits *lim, pickle_doc **out,
                                oomscan_diag *diag)
{
    rd r = {.lim = lim ? *lim : pickle_default_limits, .diag = diag};
    *out = NULL;
    if (n > r.lim.max_input)
        return diag_set(diag, OOMSCAN_ERR_LIMIT, NULL, "pickle of %zu bytes is over the limit of %zu", n,
                        r.lim.max_input);
    r.in.mem = p;
    r.in.memn = n;
    r.in.buf = (unsigned char *)p; /* only read */
    r.in.hi = n;
    return parse(&r, out);
}

void pickle_doc_stats(const pickle_doc *d, uint64_t *input, size_t *peak_nodes, size_t *peak_bytes)
{
    *input = d ? d->input : 0;
    *peak_nodes = d ? d->peak_nodes : 0;
    *peak_bytes = d ? d->peak_bytes : 0;
}

/* ---- reading values ----------------------------------------------------------------------------- */

static const pval *at(const pickle_doc *d, pickle_ref v)
{
    return d && !IS_IMM(v) && v > 0 && v < d->nv && d->v[v].t != PK_INVALID ? &d->v[v] : NULL;
}

pickle_ref pickle_root(const pickle_doc *d) { return d ? d->root : 0; }

int pickle_permanent(const pickle_doc *d, pickle_ref v)
{
    const pval *p = at(d, v);
    return p && p->perm;
}

pickle_type pickle_type_of(const pickle_doc *d, pickle_ref v)
{
    if (d && IS_IMM(v))
        return PK_INT;
    const pval *p = at(d, v);
    return p ? (pickle_type)p->t : PK_INVALID;
}

size_t pickle_len(const pickle_doc *d, pickle_ref v)
{
    const pval *p = at(d, v);
    return p && (p->t == PK_LIST || p->t == PK_DICT || p->t == PK_STR || p->t == PK_BYTES) ? p->n : 0;
}

pickle_ref pickle_item(const pickle_doc *d, pickle_ref list, size_t i)
{
    const pval *p = at(d, list);
    return p && p->t == PK_LIST && i < p->n ? p->u.k[i] : 0;
}

pickle_ref pickle_dict_key(const pickle_doc *d, pickle_ref dict, size_t i)
{
    const pval *p = at(d, dict);
    return p && p->t == PK_DICT && i < p->n ? p->u.k[2 * i] : 0;
}

pickle_ref pickle_dict_value(const pickle_doc *d, pickle_ref dict, size_t i)
{
    const pval *p = at(d, dict);
    return p && p->t == PK_DICT && i < p->n ? p->u.k[2 * i + 1] : 0;
}

pickle_ref pickle_get(const pickle_doc *d, pickle_ref dict, const char *key)
{
    const pval *p = at(d, dict);
    if (!p || p->t != PK_DICT)
        return 0;
    size_t kl = strlen(key);
    /* The last of repeated keys wins, as it would in Python. setitem() already replaced repeats in a
     * dict of fewer than 256 keys, so there the first match is the only one, and is looked for from
     * the front (where the keys read most, "action", "filename", come in PyTorch's dumps). */
    int fwd = p->n < 256;
    for (size_t i = 0; i < p->n; i++) {
        size_t j = fwd ? i : p->n - 1 - i;
        pickle_ref kr = p->u.k[2 * j];
        if (IS_IMM(kr))
            continue;
        const pval *k = &d->v[kr];
        if (k->t == PK_STR && k->n == kl && k->u.s[0] == key[0] && memcmp(k->u.s, key, kl) == 0)
            return p->u.k[2 * j + 1];
    }
    return 0;
}

const char *pickle_str(const pickle_doc *d, pickle_ref v)
{
    const pval *p = at(d, v);
    return p && (p->t == PK_STR || p->t == PK_BYTES) ? p->u.s : NULL;
}

double pickle_num(const pickle_doc *d, pickle_ref v, double dflt)
{
    if (d && IS_IMM(v))
        return (double)imm_value(v);
    const pval *p = at(d, v);
    if (!p)
        return dflt;
    if (p->t == PK_INT || p->t == PK_BOOL)
        return (double)p->u.i;
    if (p->t == PK_FLOAT)
        return p->u.d;
    return dflt;
}

/* ---- as a cJSON tree ---------------------------------------------------------------------------- */

typedef struct {
    pickle_doc *d;
    size_t nodes, bytes, max_nodes, max_bytes;
    unsigned max_depth;
    oomscan_diag *diag;
} tree_budget;

static oomscan_status tree_charge(tree_budget *b, size_t extra)
{
    b->nodes++;
    b->bytes += sizeof(cJSON) + extra;
    if (b->nodes > b->max_nodes)
        return diag_set(b->diag, OOMSCAN_ERR_LIMIT, NULL,
                        "tree: more than the node limit of values (shared values are copied into the tree)");
    if (b->bytes > b->max_bytes)
        return diag_set(b->diag, OOMSCAN_ERR_LIMIT, NULL,
                        "tree: more than the byte limit (shared values are copied into the tree)");
    return OOMSCAN_OK;
}

/* A key that is not a string is written as its JSON text when it is small. */
static char *key_text(tree_budget *b, pickle_ref key, unsigned depth, oomscan_status *st);
static cJSON *tree(tree_budget *b, pickle_ref v, unsigned depth, oomscan_status *st);

static cJSON *tree(tree_budget *b, pickle_ref v, unsigned depth, oomscan_status *st)
{
    if (IS_IMM(v)) {
        cJSON *c = (*st = tree_charge(b, 0)) ? NULL : cJSON_CreateNumber((double)imm_value(v));
        if (!c && !*st)
            *st = diag_set(b->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
        return c;
    }
    pval *p = &b->d->v[v];
    size_t extra = (p->t == PK_STR || p->t == PK_BYTES) ? (size_t)p->n + 1 : 0;
    if ((*st = tree_charge(b, extra)))
        return NULL;
    cJSON *c = NULL;
    switch (p->t) {
    case PK_NONE:
        c = cJSON_CreateNull();
        break;
    case PK_BOOL:
        c = cJSON_CreateBool(p->u.i != 0);
        break;
    case PK_INT:
        c = cJSON_CreateNumber((double)p->u.i);
        break;
    case PK_FLOAT:
        c = cJSON_CreateNumber(p->u.d);
        break;
    case PK_STR:
    case PK_BYTES:
        c = cJSON_CreateString(p->u.s);
        break;
    case PK_LIST:
    case PK_DICT:
        if (depth >= b->max_depth) {
            *st = diag_set(b->diag, OOMSCAN_ERR_LIMIT, NULL, "tree: values nested deeper than the limit");
            return NULL;
        }
        if (p->onpath) {
            *st = diag_set(b->diag, OOMSCAN_ERR_LIMIT, NULL,
                           "tree: values nested deeper than the limit (a list or dict that contains itself)");
            return NULL;
        }
        c = p->t == PK_LIST ? cJSON_CreateArray() : cJSON_CreateObject();
        if (!c)
            break;
        b->d->v[v].onpath = 1;
        for (uint32_t i = 0; i < b->d->v[v].n && !*st; i++) {
            pval *q = &b->d->v[v]; /* re-read: nothing reallocates the arena here, but stay honest */
            if (q->t == PK_LIST) {
                cJSON *e = tree(b, q->u.k[i], depth + 1, st);
                if (e)
                    cJSON_AddItemToArray(c, e);
            } else {
                char *k = key_text(b, q->u.k[2 * i], depth + 1, st);
                cJSON *e = k ? tree(b, q->u.k[2 * i + 1], depth + 1, st) : NULL;
                if (e && !cJSON_AddItemToObject(c, k, e)) {
                    cJSON_Delete(e);
                    *st = diag_set(b->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
                }
                free(k);
            }
        }
        b->d->v[v].onpath = 0;
        if (*st) {
            cJSON_Delete(c);
            return NULL;
        }
        return c;
    default:
        break;
    }
    if (!c)
        *st = diag_set(b->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    return c;
}

/* Nodes in v, or -1 once more than `budget` (a walk that stops early, so it costs at most budget). */
static int small_key_nodes(const pickle_doc *d, pickle_ref v, int budget, unsigned depth)
{
    if (IS_IMM(v))
        return 1;
    const pval *p = &d->v[v];
    if ((p->t == PK_STR || p->t == PK_BYTES) && p->n > 256)
        return -1;
    if (p->t != PK_LIST && p->t != PK_DICT)
        return 1;
    if (depth > 8)
        return -1;
    int n = 1;
    size_t k = (size_t)p->n * (p->t == PK_DICT ? 2 : 1);
    for (size_t i = 0; i < k; i++) {
        int m = small_key_nodes(d, p->u.k[i], budget - n, depth + 1);
        if (m < 0 || (n += m) > budget)
            return -1;
    }
    return n;
}

static char *key_text(tree_budget *b, pickle_ref key, unsigned depth, oomscan_status *st)
{
    const pval *p = IS_IMM(key) ? NULL : &b->d->v[key];
    char *s = NULL;
    if (p && (p->t == PK_STR || p->t == PK_BYTES)) {
        s = strdup(p->u.s);
    } else if (small_key_nodes(b->d, key, 64, 0) < 0) {
        /* a container printed as a key grows with every level a dict keyed by such keys adds: a few
         * DUPs of a 139-byte pickle asked for gigabytes (fuzz_pickle); real dumps key by str or int */
        s = strdup(p && p->t == PK_LIST ? "<tuple>" : "<dict>");
    } else {
        tree_budget kb = *b;
        cJSON *t = tree(&kb, key, depth, st);
        if (!t)
            return NULL;
        s = cJSON_PrintUnformatted(t);
        cJSON_Delete(t);
    }
    if (!s)
        *st = diag_set(b->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    else if ((*st = tree_charge(b, strlen(s) + 1))) {
        free(s);
        s = NULL;
    }
    return s;
}

oomscan_status pickle_to_json(const pickle_doc *d, pickle_ref v, const pickle_limits *lim, uint64_t input,
                              cJSON **out, oomscan_diag *diag)
{
    *out = NULL;
    const pickle_limits *l = lim ? lim : &pickle_default_limits;
    if (!at(d, v))
        return diag_set(diag, OOMSCAN_ERR_FORMAT, NULL, "no value");
    uint64_t bound = ((uint64_t)64 << 20) + 8 * input;
    tree_budget b = {.d = (pickle_doc *)d, /* only the onpath marks change, and are restored */
                     .max_nodes = l->max_nodes,
                     .max_bytes = bound < l->max_bytes ? (size_t)bound : l->max_bytes,
                     .max_depth = l->max_depth,
                     .diag = diag};
    oomscan_status st = OOMSCAN_OK;
    *out = tree(&b, v, 0, &st);
    return *out ? OOMSCAN_OK : st;
}

oomscan_status pickle_decode(const unsigned char *p, size_t n, const pickle_limits *lim, cJSON **out,
                             oomscan_diag *diag)
{
    pickle_doc *d = NULL;
    *out = NULL;
    oomscan_status st = pickle_parse_mem(p, n, lim, &d, diag);
    if (st)
        return st;
    st = pickle_to_json(d, pickle_root(d), lim, n, out, diag);
    pickle_doc_free(d);
    return st;
}

int pickle_sniff(const unsigned char *p, size_t n)
{
    if (n < 3 || p[0] != 0x80 || p[1] < 2 || p[1] > 5)
        return 0;
    /* the second opcode: FRAME (protocol 4+), or a container or value that opens a dump */
    return p[2] == 0x95 || p[2] == '}' || p[2] == ']' || p[2] == '(' || p[2] == ')' || p[2] == 'c';
}
