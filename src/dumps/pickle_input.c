/* pickle_input.c - the pickle reader's bytes (pickle_impl.h): a window over memory or a stream, read
 * again from the start for the second pass, and the first pass that counts memo fetches. */
#include "dumps/pickle_impl.h"

const signed char pickle_arg[256] = {
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

/* Make k bytes available at in.buf + in.lo (valid until the next call): need() below. */
oomscan_status pickle_input_need_more(rd *r, size_t k)
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

/* Pass k bytes without keeping them (the first pass's strings). */
oomscan_status pickle_input_skip(rd *r, uint64_t k)
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

/* Read the rest of the stream; *end its size. */
oomscan_status pickle_input_drain(rd *r, uint64_t *end)
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


/* (pickle_impl.h) The first pass: how often each memo entry is fetched (2 bits each, 3 = many). Only the memo
 * opcodes are looked at; anything odd ends the count and the second pass keeps every memo entry
 * (and reports the error, if it is one). *end: the bytes up to the STOP. Returns OOMSCAN_OK (a count
 * or none), or NOMEM / a read error.
 * long: one switch over the opcodes' argument sizes, the mirror of pickle_vm.c's step, kept whole so
 * that the two can be read side by side. */
oomscan_status pickle_input_count_fetches(rd *r, uint64_t *end, int *usable)
{
    uint64_t n = 0, cap = 0;
    *usable = 0;
    for (;;) {
        /* the common opcodes while the window holds them whole; the rest below */
        const unsigned char *b = r->in.buf;
        size_t lo = r->in.lo, hi = r->in.hi;
        while (hi - lo >= 16) {
            unsigned o = b[lo];
            int k = pickle_arg[o];
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
        if ((st = pickle_input_skip(r, len)))
            return st;
        if (op == '.') {
            *end = offset_of(r);
            r->nfetches = n;
            *usable = 1;
            return OOMSCAN_OK;
        }
    }
}

