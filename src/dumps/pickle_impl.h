/* pickle_impl.h - what the pickle reader's files share (internal to src/dumps/pickle_*.c; nothing else
 * includes it). The reader is four files, one concern each:
 *   pickle_vm.c     the opcode machine: the stack, MARKs, values made and filled, the memo, the
 *                   streamed lists, pickle_parse and pickle_parse_mem;
 *   pickle_input.c  the bytes: the read window over memory or a stream, and the first pass that
 *                   counts each memo entry's fetches;
 *   pickle_value.c  the value model: the arena, reference counts, and the read-only accessors of
 *                   pickle.h;
 *   pickle_json.c   pickle_to_json and pickle_decode: a value expanded into a cJSON tree.
 *
 * Ownership: the arena (pickle_doc) owns every value and string in it; an rd (one parse's state)
 * owns its stack, marks, memo pages, fetch counts and read window, and borrows its doc until
 * pickle_parse hands the doc to the caller. Pointers into the arena (pval *) are valid until the
 * next value is made. */
#ifndef OOMSCAN_PICKLE_IMPL_H
#define OOMSCAN_PICKLE_IMPL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumps/pickle.h"

/* ---- the value model (pickle_value.c) ------------------------------------------------------------ */

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
static inline int64_t imm_value(pickle_ref r) { return (int64_t)((int32_t)(r << 1) >> 1); }

/* ---- one parse (pickle_vm.c, pickle_input.c) ------------------------------------------------------------ */

/* memo index -> ref, for the entries still to be fetched: pages of 4096 slots indexed directly (the
 * memo is numbered in order, so an index is its own address), a page made when an entry in it is
 * held and let go when its last one is. A fetch is two loads, not a hash probe; the pages of a long
 * trace's events, which nobody fetches, are never made. Slot 0: not held (no value has ref 0). */
#define MEMO_PAGE_BITS 12
#define MEMO_PAGE ((size_t)1 << MEMO_PAGE_BITS)
typedef struct {
    pickle_ref **page;
    uint32_t *held; /* slots held in each page */
    size_t npages;
} memo_map;
#define MEMO_EMPTY UINT32_MAX /* the first index the memo refuses */

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


static inline size_t val_bytes(const pval *p)
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

/* The type of any ref, immediate or stored. */
static inline uint8_t vtype(const pickle_doc *d, pickle_ref v) { return IS_IMM(v) ? PK_INT : d->v[v].t; }

static inline const pval *pickle_value_at(const pickle_doc *d, pickle_ref v)
{
    return d && !IS_IMM(v) && v > 0 && v < d->nv && d->v[v].t != PK_INVALID ? &d->v[v] : NULL;
}


/* An empty document: None, True and False in place. NULL out of memory. */
pickle_doc *pickle_value_doc_new(void);

/* Drop one holder of v; a value nobody holds is freed, and so, in turn, are its items (iteratively:
 * a long chain of nested values must not recurse). Refs 1-3 and immediates are never freed. */
void pickle_value_release(pickle_doc *d, pickle_ref v);

/* ---- messages and bytes (pickle_input.c) ------------------------------------------------------- */

static inline oomscan_status fail(rd *r, oomscan_status st, const char *fmt, const char *arg)
{
    char m[200];
    snprintf(m, sizeof m, fmt, arg ? arg : "");
    return diag_set(r->diag, st, NULL, "byte %llu: %s", (unsigned long long)r->op_at, m);
}

static inline oomscan_status nomem(rd *r) { return diag_set(r->diag, OOMSCAN_ERR_NOMEM, NULL, "out of memory"); }

static inline uint64_t le(const unsigned char *p, size_t k)
{
    if (k == 4) /* the common width (LONG_BINGET, BININT, lengths): one load once compiled */
        return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
    uint64_t v = 0;
    for (size_t i = k; i-- > 0;)
        v = (v << 8) | p[i];
    return v;
}

static inline uint64_t offset_of(const rd *r) { return r->in.base + r->in.lo; }

/* Make k bytes available at in.buf + in.lo (valid until the next call) when need() below finds
 * fewer: the window moved and refilled, from the stream or, in the second pass, read again. */
oomscan_status pickle_input_need_more(rd *r, size_t k);

static inline oomscan_status need(rd *r, size_t k)
{
    return r->in.hi - r->in.lo >= k ? OOMSCAN_OK : pickle_input_need_more(r, k);
}

/* Pass k bytes without keeping them (the first pass's strings). */
oomscan_status pickle_input_skip(rd *r, uint64_t k);

/* Read the rest of the stream; *end its size. */
oomscan_status pickle_input_drain(rd *r, uint64_t *end);

/* The first pass: how often each memo entry is fetched, into r->fetches (2 bits each, 3 = many).
 * Only the memo opcodes are looked at; anything odd ends the count (*usable 0) and the second pass
 * keeps every memo entry and reports the error, if it is one. *end: the bytes up to the STOP.
 * OOMSCAN_OK (a count or none), or NOMEM / a read error. */
oomscan_status pickle_input_count_fetches(rd *r, uint64_t *end, int *usable);

static inline unsigned fetches_left(const rd *r, uint64_t idx)
{
    if (!r->fetches || idx >= r->nfetches)
        return 3;
    return (r->fetches[idx / 4] >> (2 * (idx % 4))) & 3u;
}

static inline void fetches_set(rd *r, uint64_t idx, unsigned v)
{
    uint8_t *b = &r->fetches[idx / 4];
    *b = (uint8_t)((*b & ~(3u << (2 * (idx % 4)))) | (v << (2 * (idx % 4))));
}

/* The argument bytes of each opcode: a fixed size (ARG_FIXED), or a length prefix of 1, 4 or 8 bytes
 * whose value counts too (ARG_LEN1/4/8); ARG_NO for an opcode this reader refuses or does not know
 * (the second pass says which). A table: the first pass looks every opcode up. */
enum { ARG_NO = -1, ARG_ZERO = 15, ARG_LEN1 = 16, ARG_LEN4 = 17, ARG_LEN8 = 18 };
extern const signed char pickle_arg[256];

static inline int arg_size(unsigned op, int *len_bytes)
{
    int a = pickle_arg[op];
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


#endif
