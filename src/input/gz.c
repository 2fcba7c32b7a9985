/* gz.c - streaming multi-member gzip decoder. Two backends with one behaviour: ISA-L's igzip (fast,
 * chosen at build time with OOMSCAN_HAVE_ISAL) and zlib. Output goes straight into the caller's
 * buffer; the only copy is the compressed input into our GZ_IN_BUF buffer. */
#include "input/gz.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef OOMSCAN_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#else
#include <zlib.h>
#endif

/* Largest output request handed to the decoder in one call (ISA-L counts in uint32_t). */
#define GZ_MAX_OUT (1u << 30)

struct gz_reader {
    gz_read_fn rd;
    void *ud;
    unsigned char *in;   /* GZ_IN_BUF bytes */
    size_t in_pos;       /* next unread byte of `in` */
    size_t in_len;       /* bytes held in `in` */
    int eof;             /* the callback returned 0 */
    int in_member;       /* a member's header has been seen and its end has not */
    int done;            /* clean end */
    int failed;
    int read_failed;
    uint64_t members;
    uint64_t total_out;
    char err[160];
#ifdef OOMSCAN_HAVE_ISAL
    struct inflate_state st;
#else
    z_stream zs;
    int zs_ready;
#endif
};

const char *gz_backend(void)
{
#ifdef OOMSCAN_HAVE_ISAL
    return "isa-l";
#else
    return "zlib";
#endif
}

static ssize_t gz_fail(gz_reader *g, const char *fmt, const char *arg)
{
    g->failed = 1;
    snprintf(g->err, sizeof g->err, fmt, arg ? arg : "");
    return -1;
}

static ssize_t gz_truncated(gz_reader *g)
{
    g->failed = 1;
    snprintf(g->err, sizeof g->err, "truncated gzip data (%" PRIu64 " bytes decoded)", g->total_out);
    return -1;
}

/* Make sure at least `want` unread bytes are buffered, unless the input ends first. Keeps the unread
 * tail by moving it to the front, so a member boundary that straddles two reads is seen whole.
 * Returns -1 on a read error, else 0 (check in_len - in_pos for what is actually there). */
static int gz_fill(gz_reader *g, size_t want)
{
    while (g->in_len - g->in_pos < want && !g->eof) {
        if (g->in_pos > 0) {
            memmove(g->in, g->in + g->in_pos, g->in_len - g->in_pos);
            g->in_len -= g->in_pos;
            g->in_pos = 0;
        }
        ssize_t n = g->rd(g->ud, g->in + g->in_len, GZ_IN_BUF - g->in_len);
        if (n < 0) {
            g->read_failed = 1;
            gz_fail(g, "read error", NULL);
            return -1;
        }
        if (n == 0)
            g->eof = 1;
        g->in_len += (size_t)n;
    }
    return 0;
}

gz_reader *gz_new(gz_read_fn rd, void *ud)
{
    gz_reader *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->in = malloc(GZ_IN_BUF);
    if (!g->in) {
        free(g);
        return NULL;
    }
    g->rd = rd;
    g->ud = ud;
#ifdef OOMSCAN_HAVE_ISAL
    isal_inflate_init(&g->st);
    g->st.crc_flag = ISAL_GZIP;
#else
    /* 31 = gzip wrapper only: a zlib or raw stream here is corruption, not something to guess at. */
    if (inflateInit2(&g->zs, 31) != Z_OK) {
        free(g->in);
        free(g);
        return NULL;
    }
    g->zs_ready = 1;
#endif
    return g;
}

void gz_free(gz_reader *g)
{
    if (!g)
        return;
#ifndef OOMSCAN_HAVE_ISAL
    if (g->zs_ready)
        inflateEnd(&g->zs);
#endif
    free(g->in);
    free(g);
}

const char *gz_error(const gz_reader *g)
{
    return g && g->failed ? g->err : NULL;
}

int gz_failed_on_read(const gz_reader *g)
{
    return g && g->read_failed;
}

uint64_t gz_total_out(const gz_reader *g)
{
    return g ? g->total_out : 0;
}

static void gz_member_reset(gz_reader *g)
{
#ifdef OOMSCAN_HAVE_ISAL
    isal_inflate_reset(&g->st);
    g->st.crc_flag = ISAL_GZIP; /* parse the header and check CRC32 + ISIZE of every member */
#else
    inflateReset(&g->zs);
#endif
}

#ifdef OOMSCAN_HAVE_ISAL
/* zlib's wording where there is an equivalent, so messages do not depend on the backend much. */
static const char *isal_msg(int ret)
{
    switch (ret) {
    case ISAL_INVALID_BLOCK: return "invalid block type";
    case ISAL_INVALID_SYMBOL: return "invalid code";
    case ISAL_INVALID_LOOKBACK: return "invalid distance too far back";
    case ISAL_INVALID_WRAPPER: return "incorrect header check";
    case ISAL_UNSUPPORTED_METHOD: return "unknown compression method";
    case ISAL_INCORRECT_CHECKSUM: return "incorrect data check";
    case ISAL_NEED_DICT: return "need dictionary";
    }
    return "invalid data";
}
#endif

/* Run the decoder on the buffered input into out[0..cap). Sets *member_end when the member's trailer
 * was consumed. Returns bytes produced, or -1 on corrupt data (g->err set). */
static ssize_t gz_step(gz_reader *g, unsigned char *out, size_t cap, int *member_end)
{
    *member_end = 0;
#ifdef OOMSCAN_HAVE_ISAL
    struct inflate_state *st = &g->st;
    st->next_in = g->in + g->in_pos;
    st->avail_in = (uint32_t)(g->in_len - g->in_pos);
    st->next_out = out;
    st->avail_out = (uint32_t)cap;
    int ret = isal_inflate(st);
    size_t used = (size_t)(st->next_in - (g->in + g->in_pos));
    size_t made = cap - st->avail_out;
    g->in_pos += used;
    /* Positive returns (END_INPUT, OUT_OVERFLOW) only mean "give me more"; negatives are damage. */
    if (ret < 0 || ret == ISAL_NEED_DICT) {
        gz_fail(g, "corrupt gzip data: %s", isal_msg(ret));
        return -1;
    }
    if (st->block_state == ISAL_BLOCK_FINISH)
        *member_end = 1;
    return (ssize_t)made;
#else
    z_stream *zs = &g->zs;
    zs->next_in = g->in + g->in_pos;
    zs->avail_in = (uInt)(g->in_len - g->in_pos);
    zs->next_out = out;
    zs->avail_out = (uInt)cap;
    int ret = inflate(zs, Z_NO_FLUSH);
    size_t used = (size_t)(zs->next_in - (g->in + g->in_pos));
    size_t made = cap - zs->avail_out;
    g->in_pos += used;
    switch (ret) {
    case Z_OK:
    case Z_BUF_ERROR: /* no progress possible with what we have: the caller reads more */
        break;
    case Z_STREAM_END:
        *member_end = 1;
        break;
    case Z_MEM_ERROR:
        gz_fail(g, "%s", "out of memory in gzip decoder");
        return -1;
    default:
        gz_fail(g, "corrupt gzip data: %s", zs->msg ? zs->msg : "invalid data");
        return -1;
    }
    return (ssize_t)made;
#endif
}

/* Between members: decide whether another member starts, the input ends (perhaps after zero
 * padding), or garbage follows. Returns 1 = a member starts, 0 = clean end, -1 = error. */
static int gz_next_member(gz_reader *g)
{
    for (;;) {
        if (gz_fill(g, 2) < 0)
            return -1;
        size_t have = g->in_len - g->in_pos;
        if (have == 0)
            return 0;
        const unsigned char *p = g->in + g->in_pos;
        if (p[0] == 0) {
            /* Padding: skip the zero run in the buffer, then look again (more may follow). */
            size_t i = 0;
            while (i < have && p[i] == 0)
                i++;
            g->in_pos += i;
            continue;
        }
        if (have >= 2 && p[0] == 0x1f && p[1] == 0x8b)
            return 1;
        if (have == 1 && p[0] == 0x1f) {
            gz_truncated(g);
            return -1;
        }
        if (g->members == 0)
            gz_fail(g, "%s", "corrupt gzip data: not in gzip format");
        else
            gz_fail(g, "%s", "corrupt gzip data: trailing garbage after the last member");
        return -1;
    }
}

ssize_t gz_read(gz_reader *g, void *buf, size_t cap)
{
    if (g->failed)
        return -1;
    if (g->done || cap == 0)
        return 0;
    if (cap > GZ_MAX_OUT)
        cap = GZ_MAX_OUT;
    for (;;) {
        if (!g->in_member) {
            int r = gz_next_member(g);
            if (r < 0)
                return -1;
            if (r == 0) {
                g->done = 1;
                return 0;
            }
            if (g->members > 0)
                gz_member_reset(g);
            g->members++;
            g->in_member = 1;
        }
        if (g->in_pos == g->in_len) {
            if (gz_fill(g, 1) < 0)
                return -1;
        }
        int member_end;
        size_t before = g->in_pos;
        ssize_t made = gz_step(g, buf, cap, &member_end);
        if (made < 0)
            return -1;
        g->total_out += (uint64_t)made;
        if (member_end)
            g->in_member = 0;
        if (made > 0)
            return made;
        if (member_end)
            continue;
        /* Nothing came out and the member is still open: the decoder wants more input. */
        size_t have = g->in_len - g->in_pos;
        if (have == 0 && g->eof)
            return gz_truncated(g);
        if (have > 0 && g->in_pos == before) {
            /* It took nothing from a non-empty buffer (a header split across reads): give it more
             * contiguous bytes, or conclude the data ends inside the member. */
            if (g->eof)
                return gz_truncated(g);
            if (have >= GZ_IN_BUF)
                return gz_fail(g, "%s", "corrupt gzip data: decoder made no progress");
            if (gz_fill(g, have + 1) < 0)
                return -1;
        }
    }
}
