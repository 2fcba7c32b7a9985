/* decode.c - streaming xz / zstd / bzip2 decoding that keeps every byte decoded before damage.
 * Output goes straight into the caller's buffer; the only copy is the compressed input into our
 * DEC_IN_BUF buffer. A failure found while bytes were produced is held back until those bytes are
 * delivered (the next call reports it). */
#include "input/decode.h"

#include <bzlib.h>
#include <inttypes.h>
#include <limits.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define DEC_IN_BUF (256u * 1024u)
#define DEC_MAX_OUT (1u << 30)          /* bzip2 counts in unsigned int */
#define XZ_MEMLIMIT (256ull << 20)      /* xz -9 needs 65 MiB: a header asking more is hostile */

struct dec_reader {
    dec_kind kind;
    gz_read_fn rd;
    void *ud;
    unsigned char *in;
    size_t in_pos, in_len;
    int eof;          /* the callback returned 0 */
    int in_frame;     /* inside a zstd frame / bzip2 stream (xz handles its own boundaries) */
    int done;
    int failed;       /* -1 from now on */
    int pending;      /* a failure to report once the bytes decoded with it are delivered */
    int read_failed;
    uint64_t total_out;
    char err[160];
    lzma_stream xz;
    int xz_ready;
    ZSTD_DStream *zs;
    bz_stream bz;
    int bz_ready;
};

static const char *kind_name(dec_kind k)
{
    return k == DEC_XZ ? "xz" : k == DEC_ZSTD ? "zstd" : "bzip2";
}

/* Remember why decoding stops; delivered after the bytes of this call. */
static void dec_stop(dec_reader *d, const char *why)
{
    d->pending = 1;
    if (why)
        snprintf(d->err, sizeof d->err, "corrupt %s data: %s", kind_name(d->kind), why);
    else
        snprintf(d->err, sizeof d->err, "truncated %s data (%" PRIu64 " bytes decoded)", kind_name(d->kind),
                 d->total_out);
}

dec_reader *dec_new(dec_kind k, gz_read_fn rd, void *ud)
{
    dec_reader *d = calloc(1, sizeof *d);
    if (!d || !(d->in = malloc(DEC_IN_BUF))) {
        free(d);
        return NULL;
    }
    d->kind = k;
    d->rd = rd;
    d->ud = ud;
    if (k == DEC_XZ) {
        lzma_stream init = LZMA_STREAM_INIT;
        d->xz = init;
        if (lzma_stream_decoder(&d->xz, XZ_MEMLIMIT, LZMA_CONCATENATED) != LZMA_OK) {
            dec_free(d);
            return NULL;
        }
        d->xz_ready = 1;
    } else if (k == DEC_ZSTD) {
        if (!(d->zs = ZSTD_createDStream())) {
            dec_free(d);
            return NULL;
        }
    }
    return d;
}

void dec_free(dec_reader *d)
{
    if (!d)
        return;
    if (d->xz_ready)
        lzma_end(&d->xz);
    ZSTD_freeDStream(d->zs);
    if (d->bz_ready)
        BZ2_bzDecompressEnd(&d->bz);
    free(d->in);
    free(d);
}

const char *dec_error(const dec_reader *d) { return d && d->failed ? d->err : NULL; }
int dec_failed_on_read(const dec_reader *d) { return d && d->read_failed; }

/* Refill an empty input buffer. -1 on a read error. */
static int dec_fill(dec_reader *d)
{
    if (d->in_pos < d->in_len || d->eof)
        return 0;
    ssize_t n = d->rd(d->ud, d->in, DEC_IN_BUF);
    if (n < 0) {
        d->read_failed = 1;
        snprintf(d->err, sizeof d->err, "read error");
        return -1;
    }
    d->in_pos = 0;
    d->in_len = (size_t)n;
    if (n == 0)
        d->eof = 1;
    return 0;
}

static const char *xz_reason(lzma_ret r)
{
    switch (r) {
    case LZMA_FORMAT_ERROR: return "not xz data";
    case LZMA_OPTIONS_ERROR: return "unsupported options";
    case LZMA_MEMLIMIT_ERROR: return "needs more than 256 MiB of memory to decode";
    case LZMA_MEM_ERROR: return "out of memory";
    default: return "damaged data";
    }
}

/* One decoder call. Returns bytes produced; sets d->pending on an error or truncation. */
static size_t step_xz(dec_reader *d, unsigned char *buf, size_t cap)
{
    d->xz.next_in = d->in + d->in_pos;
    d->xz.avail_in = d->in_len - d->in_pos;
    d->xz.next_out = buf;
    d->xz.avail_out = cap;
    lzma_ret r = lzma_code(&d->xz, d->eof ? LZMA_FINISH : LZMA_RUN);
    d->in_pos = d->in_len - d->xz.avail_in;
    size_t got = cap - d->xz.avail_out;
    d->total_out += got;
    if (r == LZMA_STREAM_END)
        d->done = 1;
    else if (r == LZMA_BUF_ERROR)
        dec_stop(d, NULL); /* no progress possible: the input ended inside a stream */
    else if (r != LZMA_OK)
        dec_stop(d, xz_reason(r));
    return got;
}

static size_t step_zstd(dec_reader *d, unsigned char *buf, size_t cap)
{
    ZSTD_inBuffer in = {d->in + d->in_pos, d->in_len - d->in_pos, 0};
    ZSTD_outBuffer out = {buf, cap, 0};
    size_t r = ZSTD_decompressStream(d->zs, &out, &in);
    d->in_pos += in.pos;
    d->total_out += out.pos;
    if (ZSTD_isError(r))
        dec_stop(d, ZSTD_getErrorName(r));
    else
        d->in_frame = r != 0;
    return out.pos;
}

static size_t step_bzip2(dec_reader *d, unsigned char *buf, size_t cap)
{
    if (!d->bz_ready) {
        memset(&d->bz, 0, sizeof d->bz);
        if (BZ2_bzDecompressInit(&d->bz, 0, 0) != BZ_OK) {
            dec_stop(d, "out of memory");
            return 0;
        }
        d->bz_ready = 1;
    }
    d->in_frame = 1;
    d->bz.next_in = (char *)(d->in + d->in_pos);
    d->bz.avail_in = (unsigned)(d->in_len - d->in_pos);
    d->bz.next_out = (char *)buf;
    d->bz.avail_out = (unsigned)cap;
    int r = BZ2_bzDecompress(&d->bz);
    d->in_pos = d->in_len - d->bz.avail_in;
    size_t got = cap - d->bz.avail_out;
    d->total_out += got;
    if (r == BZ_STREAM_END) {
        BZ2_bzDecompressEnd(&d->bz);
        d->bz_ready = 0;
        d->in_frame = 0; /* another stream may follow (pbzip2 writes many) */
    } else if (r != BZ_OK) {
        dec_stop(d, r == BZ_DATA_ERROR_MAGIC ? "not bzip2 data" : r == BZ_MEM_ERROR ? "out of memory" : "damaged data");
    }
    return got;
}

ssize_t dec_read(dec_reader *d, void *buf, size_t cap)
{
    if (!d || d->failed)
        return -1;
    if (d->pending) {
        d->failed = 1;
        return -1;
    }
    if (d->done || cap == 0)
        return 0;
    if (cap > DEC_MAX_OUT)
        cap = DEC_MAX_OUT;
    for (;;) {
        if (dec_fill(d) != 0) {
            d->failed = 1;
            return -1;
        }
        if (d->kind != DEC_XZ && !d->in_frame) {
            /* Between frames: zero padding is skipped; the end of input here is the clean end. */
            while (d->in_pos < d->in_len && d->in[d->in_pos] == 0)
                d->in_pos++;
            if (d->in_pos == d->in_len) {
                if (d->eof) {
                    d->done = 1;
                    return 0;
                }
                continue;
            }
        }
        size_t got = d->kind == DEC_XZ ? step_xz(d, buf, cap)
                     : d->kind == DEC_ZSTD ? step_zstd(d, buf, cap)
                                           : step_bzip2(d, buf, cap);
        if (got > 0)
            return (ssize_t)got;
        if (d->kind != DEC_XZ && !d->pending && d->in_frame && d->eof && d->in_pos == d->in_len)
            dec_stop(d, NULL); /* inside a frame, nothing buffered, and nothing more will come */
        if (d->pending) {
            d->failed = 1;
            return -1;
        }
        if (d->done)
            return 0;
    }
}
