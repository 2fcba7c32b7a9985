/* pickle_vm.c - the safe pickle subset reader (pickle.h): the opcode machine (pickle_impl.h says what
 * the other files hold). Opcode meanings follow CPython's Lib/pickletools.py descriptions; written
 * here from those descriptions, not copied. */
#include <math.h>

#include "dumps/pickle_impl.h"

const pickle_limits pickle_default_limits = {.max_input = (size_t)4 << 30,
                                             .max_nodes = 64u << 20,
                                             .max_bytes = (size_t)1 << 30,
                                             .max_string = 64u << 20,
                                             .max_depth = 64};

static void decref(pickle_doc *d, pickle_ref v) { pickle_value_release(d, v); }

/* ---- values ----------------------------------------------------------------------------------- */

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

static inline void incref(pickle_doc *d, pickle_ref v)
{
    if (!IS_IMM(v) && v >= FIRST_FREEABLE)
        d->v[v].rc++;
}

static oomscan_status push_grow(rd *r, pickle_ref v)
{
    {
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

static inline oomscan_status push(rd *r, pickle_ref v)
{
    if (r->sp < r->scap) {
        r->stack[r->sp++] = v;
        return OOMSCAN_OK;
    }
    return push_grow(r, v);
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

static size_t floor_sp(const rd *r) { return r->nmarks ? r->marks[r->nmarks - 1] : 0; }

static int is_container(const pickle_doc *d, pickle_ref v)
{
    return !IS_IMM(v) && (d->v[v].t == PK_LIST || d->v[v].t == PK_DICT);
}

/* Room for `more` items (pairs in a dict) in container c: reserve() below. */
static oomscan_status reserve_grow(rd *r, pickle_ref c, size_t more)
{
    pval *p = &r->d->v[c];
    size_t per = p->t == PK_DICT ? 2 : 1;
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

static inline oomscan_status reserve(rd *r, pickle_ref c, size_t more)
{
    const pval *p = &r->d->v[c];
    return (size_t)p->n + more <= p->cap ? OOMSCAN_OK : reserve_grow(r, c, more);
}

static inline int height_of(const pickle_doc *d, pickle_ref v) { return is_container(d, v) ? d->v[v].h : 0; }


/* The early depth check as an item goes into a container. */
static inline oomscan_status adopt(rd *r, pickle_ref parent, pickle_ref child)
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
        uint32_t kn = d->v[key].n;
        const char *ks = d->v[key].u.s;
        for (uint32_t j = 0; j < p->n; j++) {
            pickle_ref k = p->u.k[2 * j];
            if (k != key && (IS_IMM(k) || d->v[k].t != PK_STR || d->v[k].n != kn || d->v[k].u.s[0] != ks[0] ||
                             memcmp(d->v[k].u.s, ks, kn) != 0))
                continue;
            pickle_ref old = p->u.k[2 * j + 1];
            p->u.k[2 * j + 1] = val;
            decref(d, old);
            decref(d, key);
            return OOMSCAN_OK;
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

static inline pickle_ref *memo_find(const memo_map *m, uint32_t k)
{
    size_t pi = k >> MEMO_PAGE_BITS;
    if (pi >= m->npages || !m->page[pi])
        return NULL;
    pickle_ref *slot = &m->page[pi][k & (MEMO_PAGE - 1)];
    return *slot ? slot : NULL;
}

static int memo_insert(memo_map *m, uint32_t k, pickle_ref v)
{
    size_t pi = k >> MEMO_PAGE_BITS;
    if (pi >= m->npages) {
        size_t n = m->npages ? m->npages * 2 : 64;
        while (n <= pi)
            n *= 2;
        pickle_ref **g = realloc(m->page, n * sizeof *g);
        if (!g)
            return -1;
        m->page = g;
        uint32_t *h = realloc(m->held, n * sizeof *h);
        if (!h)
            return -1;
        m->held = h;
        memset(g + m->npages, 0, (n - m->npages) * sizeof *g);
        memset(h + m->npages, 0, (n - m->npages) * sizeof *h);
        m->npages = n;
    }
    if (!m->page[pi] && !(m->page[pi] = calloc(MEMO_PAGE, sizeof **m->page)))
        return -1;
    pickle_ref *slot = &m->page[pi][k & (MEMO_PAGE - 1)];
    if (!*slot)
        m->held[pi]++;
    *slot = v;
    return 0;
}

/* Empty a slot memo_find gave for index k. */
static inline void memo_remove(memo_map *m, uint32_t k, pickle_ref *slot)
{
    size_t pi = k >> MEMO_PAGE_BITS;
    *slot = 0;
    if (--m->held[pi] == 0) {
        free(m->page[pi]);
        m->page[pi] = NULL;
    }
}

static void memo_free(memo_map *m, pickle_doc *d)
{
    for (size_t pi = 0; pi < m->npages; pi++) {
        for (size_t i = 0; m->page[pi] && i < MEMO_PAGE; i++)
            if (m->page[pi][i])
                decref(d, m->page[pi][i]);
        free(m->page[pi]);
    }
    free(m->page);
    free(m->held);
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
        memo_remove(&r->memo, (uint32_t)idx, old);
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

static oomscan_status memo_get_missing(rd *r, uint64_t idx)
{
    if (idx < r->nmemo && r->fetches)
        return fail(r, OOMSCAN_ERR_FORMAT, "memo fetch the first pass did not count%s", NULL);
    return fail(r, OOMSCAN_ERR_FORMAT, "memo fetch of a value never stored%s", NULL);
}

/* The most common opcode of a trace (each frame of each event is one): kept small enough to inline. */
static inline oomscan_status memo_get(rd *r, uint64_t idx)
{
    pickle_ref *slot = idx < r->nmemo && idx < MEMO_EMPTY ? memo_find(&r->memo, (uint32_t)idx) : NULL;
    if (!slot)
        return memo_get_missing(r, idx);
    pickle_ref v = *slot;
    unsigned left = fetches_left(r, idx);
    if (left == 1) {
        /* its last fetch: the memo's reference passes to the stack */
        memo_remove(&r->memo, (uint32_t)idx, slot);
    } else {
        incref(r->d, v);
        if (left == 2)
            fetches_set(r, idx, 1);
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
    size_t top = r->sp;
    oomscan_status st = OOMSCAN_OK;
    if (!stream) {
        /* the whole batch at once: room made once (a frames list of 30 items grew four times
         * otherwise), the depth checked item by item, the refs moved in one copy */
        pickle_ref list = r->stack[from - 1];
        if (!(st = reserve(r, list, top - from))) {
            unsigned h = r->d->v[list].h;
            for (size_t i = from; i < top; i++) {
                unsigned hi = (unsigned)height_of(r->d, r->stack[i]) + 1;
                if (hi > h)
                    h = hi;
            }
            if (h > r->lim.max_depth) {
                st = fail(r, OOMSCAN_ERR_LIMIT, "values nested deeper than the limit%s", NULL);
            } else {
                pval *p = &r->d->v[list];
                p->h = (uint8_t)(h > 255 ? 255 : h);
                if (top > from) /* APPENDS after an empty mark: nothing to copy, and no item array yet */
                    memcpy(p->u.k + p->n, r->stack + from, (top - from) * sizeof *r->stack);
                p->n += (uint32_t)(top - from);
                r->sp = from;
                return OOMSCAN_OK;
            }
        }
    }
    r->sp = from; /* the items leave the stack in order, each handed to the stream (or let go) */
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

/* One opcode of the pickle machine: the switch over every opcode the reader accepts (and those it
 * refuses, by name). long: a virtual machine's dispatch is one switch; its cases are short and share the
 * stack, the memo and the budgets. */
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

/* The opcodes that make most of a long trace (each frame of each event is a BINGET; each event a
 * MARK, a MEMOIZE nobody fetches, small ints), run while the window holds 16 bytes, without step()'s
 * call, look-ups and checks for each. Only the plain case is done here: anything else (an error, a
 * full stack, a memo entry to keep) returns with the opcode unread, and step() runs it. */
static void run_common(rd *r)
{
    pickle_doc *d = r->d;
    const unsigned char *b = r->in.buf;
    size_t lo = r->in.lo, hi = r->in.hi;
    while (hi - lo >= 16 && r->sp < r->scap) {
        unsigned op = b[lo];
        pickle_ref v;
        if (op == 'h' || op == 'j') {
            uint64_t idx = op == 'h' ? b[lo + 1] : le(b + lo + 1, 4);
            pickle_ref *slot = idx < r->nmemo ? memo_find(&r->memo, (uint32_t)idx) : NULL;
            if (!slot)
                break;
            v = *slot;
            unsigned left = fetches_left(r, idx);
            if (left == 1) {
                memo_remove(&r->memo, (uint32_t)idx, slot);
            } else {
                incref(d, v);
                if (left == 2)
                    fetches_set(r, idx, 1);
            }
            lo += op == 'h' ? 2 : 5;
        } else if (op == 'K') {
            v = IMM_BIT | b[lo + 1];
            lo += 2;
        } else if (op == 'M') {
            v = IMM_BIT | (pickle_ref)le(b + lo + 1, 2);
            lo += 3;
        } else if (op == 'N') {
            v = REF_NONE;
            lo++;
        } else if (op == '(' && r->nmarks < r->mcap && r->nmarks < r->lim.max_depth) {
            r->marks[r->nmarks++] = r->sp;
            lo++;
            continue;
        } else if (op == 0x94 && r->sp > floor_sp(r) && r->nmemo < r->nfetches && fetches_left(r, r->nmemo) == 0) {
            r->nmemo++; /* never fetched: nothing to keep */
            lo++;
            continue;
        } else {
            break;
        }
        r->stack[r->sp++] = v;
    }
    r->in.lo = lo;
}

static oomscan_status run(rd *r)
{
    /* the first pass, when the bytes can be had again */
    uint64_t end = 0;
    int usable = 0;
    oomscan_status st = OOMSCAN_OK;
    if (r->in.mem || r->in.rr) {
        st = pickle_input_count_fetches(r, &end, &usable);
        if (st == OOMSCAN_ERR_NOMEM || (st && !r->in.mem))
            return st; /* a stream that failed cannot be read again */
        if (r->diag)
            diag_clear(r->diag);
        st = OOMSCAN_OK;
        if (!usable) {
            free(r->fetches);
            r->fetches = NULL;
            /* the second pass keeps every memo entry and says what is wrong; it reads to the end */
            if (!r->in.mem && (st = pickle_input_drain(r, &end)))
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
    while (!st && !stop) {
        run_common(r);
        st = step(r, &stop);
    }
    if (!st) {
        r->d->root = r->stack[--r->sp];
        r->d->input = offset_of(r);
    }
    return st;
}

static oomscan_status parse(rd *r, pickle_doc **out)
{
    *out = NULL;
    if (!(r->d = pickle_value_doc_new()))
        return nomem(r);
    oomscan_status st = run(r);
    drop_from(r, 0);
    memo_free(&r->memo, r->d);
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

int pickle_sniff(const unsigned char *p, size_t n)
{
    if (n < 3 || p[0] != 0x80 || p[1] < 2 || p[1] > 5)
        return 0;
    /* the second opcode: FRAME (protocol 4+), or a container or value that opens a dump */
    return p[2] == 0x95 || p[2] == '}' || p[2] == ']' || p[2] == '(' || p[2] == ')' || p[2] == 'c';
}
