/* pickle.c - the safe pickle subset reader (pickle.h). Opcode meanings follow CPython's
 * Lib/pickletools.py descriptions; written here from those descriptions, not copied. */
#include "dumps/pickle.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const pickle_limits pickle_default_limits = {
    .max_input = 256u << 20, .max_nodes = 16u << 20, .max_string = 64u << 20, .max_depth = 64};

/* A container's height (1 + its deepest child's) is kept in its cJSON valueint, which cJSON leaves
 * unused for arrays and objects: nodes are only ever added to a container while it is on the stack
 * (memo GET and DUP copy), so the height of a node never changes once it is inside another. */
#define HEIGHT(n) ((n)->valueint)
/* and its number of keys in valuedouble (dicts only), for the repeated-key rule in setitem() */
#define NCHILD(n) ((n)->valuedouble)

typedef struct {
    const unsigned char *p;
    size_t n, pos;
    pickle_limits lim;
    cJSON **stack;
    size_t sp, scap;
    size_t *marks;
    size_t nmarks, mcap;
    cJSON **memo; /* borrowed pointers into the stack, the tree or the graveyard */
    size_t nmemo, memocap;
    cJSON *grave; /* values popped off the stack: kept until the end, the memo may point at them */
    size_t nodes;
    size_t op_at; /* offset of the opcode being run, for messages */
    oomscan_diag *diag;
} rd;

static oomscan_status fail(rd *r, oomscan_status st, const char *fmt, const char *arg)
{
    char m[200];
    snprintf(m, sizeof m, fmt, arg ? arg : "");
    return diag_set(r->diag, st, NULL, "byte %zu: %s", r->op_at, m);
}

static oomscan_status need(rd *r, size_t k)
{
    if (r->n - r->pos < k)
        return fail(r, OOMSCAN_ERR_FORMAT, "truncated pickle (%sthe data ends inside an opcode)", NULL);
    return OOMSCAN_OK;
}

static uint64_t le(const unsigned char *p, size_t k)
{
    uint64_t v = 0;
    for (size_t i = k; i-- > 0;)
        v = (v << 8) | p[i];
    return v;
}

static oomscan_status count_node(rd *r)
{
    if (++r->nodes > r->lim.max_nodes)
        return fail(r, OOMSCAN_ERR_LIMIT, "more than the node limit of values%s", NULL);
    return OOMSCAN_OK;
}

static oomscan_status push(rd *r, cJSON *v)
{
    if (!v)
        return diag_set(r->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    oomscan_status st = count_node(r);
    if (st) {
        cJSON_Delete(v);
        return st;
    }
    if (r->sp == r->scap) {
        size_t cap = r->scap ? r->scap * 2 : 64;
        cJSON **g = realloc(r->stack, cap * sizeof *g);
        if (!g) {
            cJSON_Delete(v);
            return diag_set(r->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
        }
        r->stack = g;
        r->scap = cap;
    }
    r->stack[r->sp++] = v;
    return OOMSCAN_OK;
}

static size_t floor_sp(const rd *r) { return r->nmarks ? r->marks[r->nmarks - 1] : 0; }

static cJSON *pop(rd *r)
{
    if (r->sp <= floor_sp(r))
        return NULL;
    return r->stack[--r->sp];
}

/* A value leaves the stack without going into a container: keep it for the memo's sake. */
static void bury(rd *r, cJSON *v) { cJSON_AddItemToArray(r->grave, v); }

/* Copy of v with the node budget charged; NULL and diag set on failure. Recursion is bounded by
 * the height limit every stored container respects. */
static cJSON *copy(rd *r, const cJSON *v, oomscan_status *st)
{
    if ((*st = count_node(r)))
        return NULL;
    cJSON *c;
    if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
        c = cJSON_IsArray(v) ? cJSON_CreateArray() : cJSON_CreateObject();
        if (!c)
            goto nomem;
        HEIGHT(c) = HEIGHT(v);
        for (const cJSON *e = v->child; e; e = e->next) {
            cJSON *ce = copy(r, e, st);
            if (!ce) {
                cJSON_Delete(c);
                return NULL;
            }
            if (cJSON_IsObject(v)) {
                if (!cJSON_AddItemToObject(c, e->string ? e->string : "", ce)) {
                    cJSON_Delete(ce);
                    cJSON_Delete(c);
                    goto nomem;
                }
            } else {
                cJSON_AddItemToArray(c, ce);
            }
        }
        return c;
    }
    c = cJSON_Duplicate(v, 0);
    if (c)
        return c;
nomem:
    *st = diag_set(r->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    return NULL;
}

static int height_of(const cJSON *v) { return (cJSON_IsArray(v) || cJSON_IsObject(v)) ? HEIGHT(v) : 0; }

static oomscan_status adopt(rd *r, cJSON *parent, cJSON *child)
{
    int h = height_of(child) + 1;
    if ((unsigned)h > r->lim.max_depth) {
        bury(r, child);
        return fail(r, OOMSCAN_ERR_LIMIT, "values nested deeper than the limit%s", NULL);
    }
    if (h > HEIGHT(parent))
        HEIGHT(parent) = h;
    return OOMSCAN_OK;
}

static oomscan_status append(rd *r, cJSON *list, cJSON *item)
{
    oomscan_status st = adopt(r, list, item);
    if (st)
        return st;
    cJSON_AddItemToArray(list, item);
    return OOMSCAN_OK;
}

/* Nodes in v, or -1 once more than `budget` (a walk that stops early, so it costs at most budget). */
static int small_key_nodes(const cJSON *v, int budget)
{
    int n = 1;
    for (const cJSON *e = (cJSON_IsArray(v) || cJSON_IsObject(v)) ? v->child : NULL; e; e = e->next) {
        int k = small_key_nodes(e, budget - n);
        if (k < 0 || (n += k) > budget)
            return -1;
        if ((e->string && strlen(e->string) > 256) || (cJSON_IsString(e) && strlen(e->valuestring) > 256))
            return -1;
    }
    return n > budget ? -1 : n;
}

static oomscan_status setitem(rd *r, cJSON *dict, cJSON *key, cJSON *val)
{
    char *ks = NULL;
    const char *k;
    if (cJSON_IsString(key)) {
        k = key->valuestring;
    } else if (small_key_nodes(key, 64) < 0) {
        /* a container printed as a key grows with every level a dict keyed by such keys adds: a few
         * DUPs of a 139-byte pickle asked for gigabytes (fuzz_pickle); real dumps key by str or int */
        k = cJSON_IsArray(key) ? "<tuple>" : "<dict>";
    } else {
        if (!(ks = cJSON_PrintUnformatted(key))) {
            bury(r, key);
            bury(r, val);
            return diag_set(r->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
        }
        k = ks;
    }
    oomscan_status st = adopt(r, dict, val);
    if (!st) {
        /* A repeated key replaces, as in Python; the old value may be memoised, so it is buried. The
         * look-up is linear, so it is only done for dicts of the size real dumps have: a hostile
         * dict of millions of keys keeps its repeats instead of taking quadratic time. */
        cJSON *old = NCHILD(dict) < 256 ? cJSON_DetachItemFromObjectCaseSensitive(dict, k) : NULL;
        if (!old)
            NCHILD(dict)++;
        if (old)
            bury(r, old);
        if (!cJSON_AddItemToObject(dict, k, val)) {
            bury(r, val);
            st = diag_set(r->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
        }
    }
    free(ks);
    bury(r, key);
    return st;
}

/* A str or bytes value of length k at the read position. */
static oomscan_status text(rd *r, uint64_t k, int is_bytes)
{
    if (k > r->lim.max_string)
        return fail(r, OOMSCAN_ERR_LIMIT, "a string longer than the string limit%s", NULL);
    oomscan_status st = need(r, (size_t)k);
    if (st)
        return st;
    const unsigned char *s = r->p + r->pos;
    r->pos += (size_t)k;
    if (is_bytes) {
        for (size_t i = 0; i < k; i++)
            if ((s[i] < 0x20 && s[i] != '\n' && s[i] != '\t') || s[i] >= 0x7f) {
                char m[48];
                snprintf(m, sizeof m, "<%llu bytes>", (unsigned long long)k);
                return push(r, cJSON_CreateString(m));
            }
    }
    char *z = malloc((size_t)k + 1);
    if (!z)
        return diag_set(r->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    memcpy(z, s, (size_t)k);
    z[k] = 0;
    cJSON *v = cJSON_CreateString(z);
    free(z);
    return push(r, v);
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
    const unsigned char *s = r->p + r->pos;
    r->pos += (size_t)k;
    double v;
    if (k == 0) {
        v = 0;
    } else if (k <= 8) {
        uint64_t u = le(s, (size_t)k);
        if (k < 8 && (s[k - 1] & 0x80))
            u |= ~(uint64_t)0 << (8 * k);
        v = (double)(int64_t)u;
    } else {
        v = 0;
        for (size_t i = (size_t)k; i-- > 0;)
            v = v * 256.0 + s[i];
        if (s[k - 1] & 0x80)
            v -= ldexp(1.0, (int)(8 * k));
    }
    return push(r, cJSON_CreateNumber(v));
}

static oomscan_status memo_put(rd *r, uint64_t idx)
{
    if (r->sp <= floor_sp(r))
        return fail(r, OOMSCAN_ERR_FORMAT, "memo store with an empty stack%s", NULL);
    /* Python's and PyTorch's picklers number the memo in order; anything else is refused so that a
     * hostile index cannot make the table huge */
    if (idx > r->nmemo)
        return fail(r, OOMSCAN_ERR_FORMAT, "memo index out of order%s", NULL);
    if (idx == r->nmemo) {
        if (r->nmemo == r->memocap) {
            size_t cap = r->memocap ? r->memocap * 2 : 64;
            cJSON **g = realloc(r->memo, cap * sizeof *g);
            if (!g)
                return diag_set(r->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
            r->memo = g;
            r->memocap = cap;
        }
        r->nmemo++;
    }
    r->memo[idx] = r->stack[r->sp - 1];
    return OOMSCAN_OK;
}

static oomscan_status memo_get(rd *r, uint64_t idx)
{
    if (idx >= r->nmemo)
        return fail(r, OOMSCAN_ERR_FORMAT, "memo fetch of a value never stored%s", NULL);
    oomscan_status st = OOMSCAN_OK;
    r->nodes--; /* push() charges the root again */
    cJSON *c = copy(r, r->memo[idx], &st);
    if (!c)
        return st;
    return push(r, c);
}

/* Items above the top MARK, which is removed. */
static oomscan_status take_mark(rd *r, size_t *from)
{
    if (!r->nmarks)
        return fail(r, OOMSCAN_ERR_FORMAT, "no MARK for this opcode%s", NULL);
    *from = r->marks[--r->nmarks];
    return OOMSCAN_OK;
}

static oomscan_status build_seq(rd *r, int array_kind, size_t from)
{
    cJSON *a = cJSON_CreateArray();
    if (!a)
        return diag_set(r->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    HEIGHT(a) = 0;
    oomscan_status st = OOMSCAN_OK;
    for (size_t i = from; i < r->sp; i++) {
        if (st)
            bury(r, r->stack[i]);
        else
            st = append(r, a, r->stack[i]);
    }
    r->sp = from;
    (void)array_kind;
    if (st) {
        cJSON_Delete(a);
        return st;
    }
    r->nodes--; /* the items were charged; the new container is charged by push() */
    return push(r, a);
}

static oomscan_status fill_list(rd *r, size_t from)
{
    if (from == 0 || from > r->sp || !cJSON_IsArray(r->stack[from - 1]))
        return fail(r, OOMSCAN_ERR_FORMAT, "APPENDS/ADDITEMS without a list under the MARK%s", NULL);
    cJSON *list = r->stack[from - 1];
    oomscan_status st = OOMSCAN_OK;
    for (size_t i = from; i < r->sp; i++) {
        if (st)
            bury(r, r->stack[i]);
        else
            st = append(r, list, r->stack[i]);
    }
    r->sp = from;
    return st;
}

static oomscan_status fill_dict(rd *r, size_t from)
{
    if (from == 0 || from > r->sp || !cJSON_IsObject(r->stack[from - 1]))
        return fail(r, OOMSCAN_ERR_FORMAT, "SETITEMS/DICT without a dict under the MARK%s", NULL);
    if ((r->sp - from) % 2)
        return fail(r, OOMSCAN_ERR_FORMAT, "odd number of items for a dict%s", NULL);
    cJSON *dict = r->stack[from - 1];
    oomscan_status st = OOMSCAN_OK;
    for (size_t i = from; i < r->sp; i += 2) {
        if (st) {
            bury(r, r->stack[i]);
            bury(r, r->stack[i + 1]);
        } else {
            st = setitem(r, dict, r->stack[i], r->stack[i + 1]);
        }
    }
    r->sp = from;
    return st;
}

static oomscan_status refuse(rd *r, const char *what)
{
    return fail(r, OOMSCAN_ERR_FORMAT,
                "%s refused: this reader never constructs objects or runs code from a file", what);
}

static oomscan_status step(rd *r, int *stop)
{
    oomscan_status st;
    r->op_at = r->pos;
    if ((st = need(r, 1)))
        return st;
    unsigned op = r->p[r->pos++];
    const unsigned char *a = r->p + r->pos;
    size_t from = 0; /* set by take_mark before any use; GCC -O3 cannot see that through fail() */
    cJSON *x, *y, *z;
    switch (op) {
    case 0x80: /* PROTO */
        if ((st = need(r, 1)))
            return st;
        r->pos++;
        if (a[0] < 2 || a[0] > 5) {
            char v[8];
            snprintf(v, sizeof v, "%u", a[0]);
            return fail(r, OOMSCAN_ERR_FORMAT, "pickle protocol %s is not supported (2 to 5 are)", v);
        }
        return OOMSCAN_OK;
    case 0x95: /* FRAME: only a read-ahead hint, but its length must fit */
        if ((st = need(r, 8)))
            return st;
        r->pos += 8;
        if (le(a, 8) > r->n - r->pos)
            return fail(r, OOMSCAN_ERR_FORMAT, "truncated pickle (%sa frame runs past the end)", NULL);
        return OOMSCAN_OK;
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
                return diag_set(r->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
            r->marks = g;
            r->mcap = cap;
        }
        r->marks[r->nmarks++] = r->sp;
        return OOMSCAN_OK;
    case '0': /* POP */
        if (!(x = pop(r)))
            return fail(r, OOMSCAN_ERR_FORMAT, "POP with an empty stack%s", NULL);
        bury(r, x);
        return OOMSCAN_OK;
    case '1': /* POP_MARK */
        if ((st = take_mark(r, &from)))
            return st;
        while (r->sp > from)
            bury(r, r->stack[--r->sp]);
        return OOMSCAN_OK;
    case '2': /* DUP: a copy, never a second reference */
        if (r->sp <= floor_sp(r))
            return fail(r, OOMSCAN_ERR_FORMAT, "DUP with an empty stack%s", NULL);
        st = OOMSCAN_OK;
        r->nodes--;
        if (!(x = copy(r, r->stack[r->sp - 1], &st)))
            return st;
        return push(r, x);
    case 'N':
        return push(r, cJSON_CreateNull());
    case 0x88:
        return push(r, cJSON_CreateTrue());
    case 0x89:
        return push(r, cJSON_CreateFalse());
    case 'J':
        if ((st = need(r, 4)))
            return st;
        r->pos += 4;
        return push(r, cJSON_CreateNumber((double)(int32_t)(uint32_t)le(a, 4)));
    case 'K':
        if ((st = need(r, 1)))
            return st;
        r->pos += 1;
        return push(r, cJSON_CreateNumber(a[0]));
    case 'M':
        if ((st = need(r, 2)))
            return st;
        r->pos += 2;
        return push(r, cJSON_CreateNumber((double)le(a, 2)));
    case 0x8a: /* LONG1 */
        if ((st = need(r, 1)))
            return st;
        r->pos += 1;
        return long_int(r, a[0]);
    case 0x8b: /* LONG4 */
        if ((st = need(r, 4)))
            return st;
        r->pos += 4;
        if (a[3] & 0x80)
            return fail(r, OOMSCAN_ERR_FORMAT, "negative LONG4 length%s", NULL);
        return long_int(r, le(a, 4));
    case 'G': { /* BINFLOAT: big-endian IEEE double */
        if ((st = need(r, 8)))
            return st;
        r->pos += 8;
        uint64_t u = 0;
        for (int i = 0; i < 8; i++)
            u = (u << 8) | a[i];
        double d;
        memcpy(&d, &u, sizeof d);
        if (!isfinite(d))
            return push(r, cJSON_CreateNull()); /* JSON has no inf/nan */
        return push(r, cJSON_CreateNumber(d));
    }
    case 0x8c: /* SHORT_BINUNICODE */
    case 'C':  /* SHORT_BINBYTES */
    case 'U':  /* SHORT_BINSTRING (protocol 2's byte string) */
        if ((st = need(r, 1)))
            return st;
        r->pos += 1;
        return text(r, a[0], op != 0x8c);
    case 'X': /* BINUNICODE */
    case 'B': /* BINBYTES */
    case 'T': /* BINSTRING */
        if ((st = need(r, 4)))
            return st;
        r->pos += 4;
        if (op == 'T' && (a[3] & 0x80))
            return fail(r, OOMSCAN_ERR_FORMAT, "negative BINSTRING length%s", NULL);
        return text(r, le(a, 4), op != 'X');
    case 0x8d: /* BINUNICODE8 */
    case 0x8e: /* BINBYTES8 */
    case 0x96: /* BYTEARRAY8 */
        if ((st = need(r, 8)))
            return st;
        r->pos += 8;
        return text(r, le(a, 8), op != 0x8d);
    case ']':
    case 0x8f: /* EMPTY_SET: a list will do, nothing here needs set semantics */
        if (!(x = cJSON_CreateArray()))
            return diag_set(r->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
        HEIGHT(x) = 0;
        return push(r, x);
    case ')':
        if (!(x = cJSON_CreateArray()))
            return diag_set(r->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
        HEIGHT(x) = 0;
        return push(r, x);
    case '}':
        if (!(x = cJSON_CreateObject()))
            return diag_set(r->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
        HEIGHT(x) = 0;
        return push(r, x);
    case 'l': /* LIST */
    case 't': /* TUPLE */
    case 0x91: /* FROZENSET */
        if ((st = take_mark(r, &from)))
            return st;
        return build_seq(r, op, from);
    case 0x85: /* TUPLE1..3 */
    case 0x86:
    case 0x87: {
        size_t k = op - 0x84;
        if (r->sp < floor_sp(r) + k)
            return fail(r, OOMSCAN_ERR_FORMAT, "TUPLEn with too few items%s", NULL);
        return build_seq(r, op, r->sp - k);
    }
    case 'd': /* DICT */
        if ((st = take_mark(r, &from)))
            return st;
        if (!(x = cJSON_CreateObject()))
            return diag_set(r->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
        HEIGHT(x) = 0;
        /* insert the new dict under the items, then fill it as SETITEMS would */
        if ((st = push(r, x)))
            return st;
        memmove(&r->stack[from + 1], &r->stack[from], (r->sp - 1 - from) * sizeof *r->stack);
        r->stack[from] = x;
        return fill_dict(r, from + 1);
    case 'a': /* APPEND */
        if (r->sp < floor_sp(r) + 2 || !cJSON_IsArray(r->stack[r->sp - 2]))
            return fail(r, OOMSCAN_ERR_FORMAT, "APPEND without a list%s", NULL);
        x = pop(r);
        return append(r, r->stack[r->sp - 1], x);
    case 'e':  /* APPENDS */
    case 0x90: /* ADDITEMS */
        if ((st = take_mark(r, &from)))
            return st;
        return fill_list(r, from);
    case 's': /* SETITEM */
        if (r->sp < floor_sp(r) + 3 || !cJSON_IsObject(r->stack[r->sp - 3]))
            return fail(r, OOMSCAN_ERR_FORMAT, "SETITEM without a dict%s", NULL);
        z = pop(r);
        y = pop(r);
        return setitem(r, r->stack[r->sp - 1], y, z);
    case 'u': /* SETITEMS */
        if ((st = take_mark(r, &from)))
            return st;
        return fill_dict(r, from);
    case 'q': /* BINPUT */
        if ((st = need(r, 1)))
            return st;
        r->pos += 1;
        return memo_put(r, a[0]);
    case 'r': /* LONG_BINPUT */
        if ((st = need(r, 4)))
            return st;
        r->pos += 4;
        return memo_put(r, le(a, 4));
    case 0x94: /* MEMOIZE */
        return memo_put(r, r->nmemo);
    case 'h': /* BINGET */
        if ((st = need(r, 1)))
            return st;
        r->pos += 1;
        return memo_get(r, a[0]);
    case 'j': /* LONG_BINGET */
        if ((st = need(r, 4)))
            return st;
        r->pos += 4;
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

oomscan_status pickle_decode(const unsigned char *p, size_t n, const pickle_limits *lim, cJSON **out,
                             oomscan_diag *diag)
{
    *out = NULL;
    rd r = {.p = p, .n = n, .lim = lim ? *lim : pickle_default_limits, .diag = diag};
    if (n > r.lim.max_input)
        return diag_set(diag, OOMSCAN_ERR_LIMIT, NULL, "pickle of %zu bytes is over the limit of %zu", n,
                        r.lim.max_input);
    if (!(r.grave = cJSON_CreateArray()))
        return diag_set(diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory");
    oomscan_status st = OOMSCAN_OK;
    int stop = 0;
    while (!st && !stop)
        st = step(&r, &stop);
    if (!st) {
        *out = r.stack[--r.sp];
        r.nmarks = 0;
    }
    while (r.sp > 0)
        cJSON_Delete(r.stack[--r.sp]);
    cJSON_Delete(r.grave);
    free(r.stack);
    free(r.marks);
    free(r.memo);
    return st;
}

int pickle_sniff(const unsigned char *p, size_t n)
{
    if (n < 3 || p[0] != 0x80 || p[1] < 2 || p[1] > 5)
        return 0;
    /* the second opcode: FRAME (protocol 4+), or a container or value that opens a dump */
    return p[2] == 0x95 || p[2] == '}' || p[2] == ']' || p[2] == '(' || p[2] == ')' || p[2] == 'c';
}
