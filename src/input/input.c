/* input.c - sniff a container from its first bytes and deliver its decoded sources.
 *
 * Every layer is an input_stream: a pull function over something (a file descriptor, the gzip
 * decoder, libarchive's member data) plus a small sniff head. Sniffing reads up to SNIFF_LEN bytes
 * into the head; reading drains the head first, then pulls straight into the caller's buffer, so the
 * plain-text path is one read() per call and the gzip path decodes in place.
 *
 * The compressions are ours (gz.c for gzip, the fast path; decode.c for zstd, xz, bzip2, so a stream
 * cut short keeps what was decoded before the cut); libarchive does only the archive formats, fed from
 * our own callbacks, so a tar.gz reaches libarchive already inflated.
 *
 * Limits (input_limits) are counted here, on the bytes handed to the caller and the bytes read from
 * the file: a stream past one fails with the limit's name and the input delivers no further source. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open/read/fstat/posix_fadvise under -std=c11 */
#endif
#include "input/input.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input/archive_lib.h" /* libarchive, loaded at the first archive */
#include "input/decode.h"
#include "input/gz.h"
#include "input/input_readahead.h"

#define INPUT_BUF (256u * 1024u)  /* libarchive feed buffer, like the gzip input buffer */
#define SNIFF_LEN 512             /* one tar header: the longest signature we check */
#define LAYER_DEPTH_MAX 8         /* decoders stacked in total (each costs ~300-600 KiB) */
#define RETRY_MAX 64              /* consecutive ARCHIVE_RETRY/FAILED headers before giving up */
#define MAX_READ (1u << 30)       /* one read() or decoder call at most */
#define NAME_LEN 4096
#define KIND_LEN 128

/* Pull up to `cap` bytes. On -1 the reason is written to err[0..errcap). */
typedef ssize_t (*pull_fn)(void *ud, void *buf, size_t cap, char *err, size_t errcap);

typedef struct input_ctx input_ctx;

struct input_stream {
    pull_fn pull;
    void *ud;
    input_ctx *counted; /* set on a stream handed to the caller: its bytes count against the limits */
    const char *note;   /* input_stream_note() */
    size_t hlen, hpos; /* sniffed bytes not yet handed to the reader */
    int eof;
    int failed;        /* may be set while sniffing; reported once the head is drained */
    int pread_fd;      /* a regular file read as plain text: its bytes can be read again (input_pread), */
    uint64_t pread_at; /* the stream's first byte lying at this file offset (stdin may start part-way) */
    char err[OOMSCAN_DIAG_MSG];
    unsigned char head[SNIFF_LEN];
};

typedef enum { K_TEXT, K_GZIP, K_ZSTD, K_XZ, K_BZIP2, K_TAR, K_ZIP } kind;

static const char *kind_name(kind k)
{
    switch (k) {
    case K_TEXT: return "text";
    case K_GZIP: return "gzip";
    case K_ZSTD: return "zstd";
    case K_XZ: return "xz";
    case K_BZIP2: return "bzip2";
    case K_TAR: return "tar";
    case K_ZIP: return "zip";
    }
    return "text";
}

struct input_ctx {
    const char *path; /* display name */
    input_source_fn fn;
    void *ud;
    oomscan_diag *diag;
    int regular;              /* the input is a regular file: read-ahead can never block on it */
    oomscan_status nested_st; /* first error inside a nested archive, returned at the end */
    char nested_msg[OOMSCAN_DIAG_MSG];
    input_limits lim;
    uint64_t raw_in;    /* bytes read from the file; written by a read-ahead thread too (atomics) */
    uint64_t delivered; /* decoded bytes handed to the caller */
    uint64_t members;   /* archive entries seen, nested ones included */
    int stopped;        /* a limit was hit: deliver nothing more */
    int decoder_thread; /* the bytes now delivered are decoded by the read-ahead's thread */
    char depth_note[160];
};

const char *input_gzip_backend(void)
{
    return gz_backend();
}

/* ---- streams ---------------------------------------------------------------------------------- */

static void stream_init(input_stream *s, pull_fn pull, void *ud)
{
    s->pull = pull;
    s->ud = ud;
    s->counted = NULL;
    s->note = NULL;
    s->hlen = s->hpos = 0;
    s->eof = s->failed = 0;
    s->err[0] = '\0';
    s->pread_fd = -1;
}

static ssize_t stream_pull(input_stream *s, void *buf, size_t cap)
{
    if (cap > MAX_READ)
        cap = MAX_READ;
    ssize_t n = s->pull(s->ud, buf, cap, s->err, sizeof s->err);
    if (n < 0) {
        if (!s->err[0])
            snprintf(s->err, sizeof s->err, "read error");
        s->failed = 1;
    } else if (n == 0) {
        s->eof = 1;
    }
    return n;
}

/* Fill the head with up to SNIFF_LEN bytes, stopping early only at the end or an error. A pipe that
 * trickles is waited on: the tar check needs a whole header. */
static void stream_sniff(input_stream *s)
{
    while (s->hlen < SNIFF_LEN && !s->eof && !s->failed) {
        ssize_t n = stream_pull(s, s->head + s->hlen, SNIFF_LEN - s->hlen);
        if (n > 0)
            s->hlen += (size_t)n;
    }
}

static const char *human(uint64_t v, char *buf, size_t cap)
{
    if (v >= (1ull << 30) && v % (1ull << 30) == 0)
        snprintf(buf, cap, "%llu GiB", (unsigned long long)(v >> 30));
    else if (v >= (1ull << 20) && v % (1ull << 20) == 0)
        snprintf(buf, cap, "%llu MiB", (unsigned long long)(v >> 20));
    else
        snprintf(buf, cap, "%llu bytes", (unsigned long long)v);
    return buf;
}

/* Before handing bytes to the caller: fail the stream when the input is past a byte limit, else
 * shrink `cap` so the total limit is met exactly. */
static int limit_bytes(input_stream *s, size_t *cap)
{
    input_ctx *c = s->counted;
    uint64_t raw = __atomic_load_n(&c->raw_in, __ATOMIC_RELAXED);
    char a[32], b[32];
    if (c->lim.stop && *c->lim.stop)
        snprintf(s->err, sizeof s->err, "interrupted after %s: not read to the end", human(c->delivered, a, sizeof a));
    else if (c->delivered >= c->lim.max_bytes)
        snprintf(s->err, sizeof s->err, "stopped after %s of decoded data: the limit per input (--limit bytes=%llu)",
                 human(c->delivered, a, sizeof a), (unsigned long long)c->lim.max_bytes);
    else if (c->delivered > c->lim.ratio_after && c->delivered / c->lim.max_ratio > raw)
        snprintf(s->err, sizeof s->err,
                 "stopped after %s decoded from %s read: more than %llu:1, a decompression bomb? (--limit ratio=%llu)",
                 human(c->delivered, a, sizeof a), human(raw, b, sizeof b), (unsigned long long)c->lim.max_ratio,
                 (unsigned long long)c->lim.max_ratio);
    else {
        if (*cap > c->lim.max_bytes - c->delivered)
            *cap = (size_t)(c->lim.max_bytes - c->delivered);
        return 0;
    }
    s->failed = 1;
    s->hpos = s->hlen;
    c->stopped = 1;
    return -1;
}

ssize_t input_read(input_stream *s, void *buf, size_t cap)
{
    if (!s)
        return -1;
    if (s->counted && !s->failed && cap > 0 && limit_bytes(s, &cap) != 0)
        return -1;
    ssize_t n;
    if (s->hpos < s->hlen) {
        n = (ssize_t)(s->hlen - s->hpos);
        if ((size_t)n > cap)
            n = (ssize_t)cap;
        memcpy(buf, s->head + s->hpos, (size_t)n);
        s->hpos += (size_t)n;
    } else if (s->failed) {
        return -1;
    } else if (s->eof || cap == 0) {
        return 0;
    } else {
        n = stream_pull(s, buf, cap);
    }
    if (n > 0 && s->counted)
        s->counted->delivered += (uint64_t)n;
    return n;
}

const char *input_stream_error(const input_stream *s)
{
    if (!s || !s->failed || s->hpos < s->hlen)
        return NULL;
    return s->err;
}

const char *input_stream_note(const input_stream *s)
{
    return s ? s->note : NULL;
}

int input_can_pread(const input_stream *s) { return s && s->pread_fd >= 0; }

ssize_t input_pread(input_stream *s, void *buf, size_t n, uint64_t off)
{
    if (!s || s->pread_fd < 0)
        return -1;
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(s->pread_fd, (char *)buf + got, n - got, (off_t)(s->pread_at + off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1; /* an error, or the file shrank since it was read */
        got += (size_t)k;
    }
    return (ssize_t)got;
}

/* ---- sniffing --------------------------------------------------------------------------------- */

/* An old (v7) tar has no magic; a header whose stored checksum matches its bytes is convincing. */
static int tar_checksum_ok(const unsigned char *h)
{
    if (h[0] == 0)
        return 0;
    size_t i = 148;
    while (i < 156 && h[i] == ' ')
        i++;
    unsigned long want = 0;
    int digits = 0;
    while (i < 156 && h[i] >= '0' && h[i] <= '7') {
        want = want * 8 + (unsigned long)(h[i] - '0');
        digits++;
        i++;
    }
    if (!digits || (i < 156 && h[i] != ' ' && h[i] != '\0'))
        return 0;
    unsigned long sum = 0;
    long ssum = 0;
    for (size_t k = 0; k < 512; k++) {
        unsigned char c = (k >= 148 && k < 156) ? ' ' : h[k];
        sum += c;
        ssum += (signed char)c; /* some old tars summed signed chars */
    }
    return sum == want || (ssum >= 0 && (unsigned long)ssum == want);
}

static kind sniff_kind(const unsigned char *h, size_t n)
{
    if (n >= 2 && h[0] == 0x1f && h[1] == 0x8b)
        return K_GZIP;
    if (n >= 4 && memcmp(h, "\x28\xb5\x2f\xfd", 4) == 0)
        return K_ZSTD;
    if (n >= 6 && memcmp(h, "\xfd\x37\x7a\x58\x5a\x00", 6) == 0)
        return K_XZ;
    /* "BZh" plus the block-size digit: a log line starting with "BZh" stays text. */
    if (n >= 4 && memcmp(h, "BZh", 3) == 0 && h[3] >= '1' && h[3] <= '9')
        return K_BZIP2;
    if (n >= 4 && (memcmp(h, "PK\x03\x04", 4) == 0 || memcmp(h, "PK\x05\x06", 4) == 0))
        return K_ZIP;
    if (n >= 512 && (memcmp(h + 257, "ustar", 5) == 0 || tar_checksum_ok(h)))
        return K_TAR;
    return K_TEXT;
}

const char *input_sniff(const void *head, size_t n) { return kind_name(sniff_kind(head, n)); }

/* ---- delivery --------------------------------------------------------------------------------- */

static oomscan_status layer(input_ctx *c, input_stream *s, const char *outer, const char *member,
                            const char *comp, int layers, int adepth);

/* "a" + sep + "b", either side may be empty; cut at cap (a container name is a label, and the
 * check of snprintf's result is what tells GCC's -Wformat-truncation that the cut is meant). */
static void join(char *out, size_t cap, const char *a, const char *sep, const char *b)
{
    int n;
    if (!a || !*a)
        n = snprintf(out, cap, "%s", b ? b : "");
    else if (!b || !*b)
        n = snprintf(out, cap, "%s", a);
    else
        n = snprintf(out, cap, "%s%s%s", a, sep, b);
    if (n < 0 && cap)
        out[0] = '\0';
}

static oomscan_status deliver(input_ctx *c, input_stream *s, const char *outer, const char *member,
                              const char *own)
{
    char container[KIND_LEN];
    /* A plain member carries its archive's name; an encoded one says how it was encoded too. */
    if (outer && strcmp(own, "text") == 0)
        snprintf(container, sizeof container, "%s", outer);
    else
        join(container, sizeof container, outer, "/", own);
    input_source_info info = {c->path, member, container, c->decoder_thread};
    s->counted = c;
    if (c->fn(c->ud, &info, s) != 0)
        return diag_set(c->diag, OOMSCAN_ERR_CANCELLED, c->path, "stopped by the caller");
    return OOMSCAN_OK;
}

/* Compression layer: the decoder (gz.c for gzip, decode.c for the others) pulls from the stream below. */
typedef struct {
    gz_reader *g;
    dec_reader *d;
    input_stream *lower;
} codec_src;

static ssize_t lower_read(void *ud, void *buf, size_t cap)
{
    return input_read((input_stream *)ud, buf, cap);
}

static ssize_t codec_pull(void *ud, void *buf, size_t cap, char *err, size_t errcap)
{
    codec_src *z = ud;
    ssize_t n = z->g ? gz_read(z->g, buf, cap) : dec_read(z->d, buf, cap);
    if (n < 0) {
        int on_read = z->g ? gz_failed_on_read(z->g) : dec_failed_on_read(z->d);
        const char *lower = on_read ? input_stream_error(z->lower) : NULL;
        snprintf(err, errcap, "%s", lower ? lower : z->g ? gz_error(z->g) : dec_error(z->d));
    }
    return n;
}

static ssize_t ra_pull(void *ud, void *buf, size_t cap, char *err, size_t errcap)
{
    return input_ra_read(ud, buf, cap, err, errcap);
}

static oomscan_status open_codec(input_ctx *c, input_stream *s, kind k, const char *outer, const char *member,
                                 const char *comp, int layers, int adepth)
{
    codec_src z = {NULL, NULL, s};
    if (k == K_GZIP)
        z.g = gz_new(lower_read, s);
    else
        z.d = dec_new(k == K_XZ ? DEC_XZ : k == K_ZSTD ? DEC_ZSTD : DEC_BZIP2, lower_read, s);
    if (!z.g && !z.d)
        return diag_set(c->diag, OOMSCAN_ERR_NOMEM, c->path, "out of memory");
    /* The outermost decoder of a regular file may run in its own thread. Not a pipe: stopping early
     * would have to wait for a read() that may never return. */
    input_ra *ra = NULL;
    if (layers == 0 && c->regular && input_readahead_enabled())
        ra = input_ra_start(codec_pull, &z);
    input_stream inner;
    if (ra)
        stream_init(&inner, ra_pull, ra);
    else
        stream_init(&inner, codec_pull, &z);
    char chain[KIND_LEN];
    join(chain, sizeof chain, kind_name(k), "+", comp);
    c->decoder_thread = ra != NULL; /* only the outermost layer has one: set for all it delivers */
    oomscan_status st = layer(c, &inner, outer, member, chain, layers + 1, adepth);
    c->decoder_thread = 0;
    input_ra_stop(ra); /* before freeing the decoder: the thread may still be inside it */
    gz_free(z.g);
    dec_free(z.d);
    return st;
}

/* libarchive layer: our read callback feeds it from the stream below. */
typedef struct {
    input_stream *lower;
    unsigned char *buf;
    const archive_lib *al;
} ar_feed;

static la_ssize_t feed_read(struct archive *a, void *ud, const void **out)
{
    ar_feed *f = ud;
    ssize_t n = input_read(f->lower, f->buf, INPUT_BUF);
    if (n < 0) {
        const char *why = input_stream_error(f->lower);
        f->al->set_error(a, EIO, "%s", why ? why : "read error");
        return ARCHIVE_FATAL;
    }
    *out = f->buf;
    return n;
}

/* One archive being read: member_pull's state. */
typedef struct {
    struct archive *a;
    const archive_lib *al;
} ar_member;

static ssize_t member_pull(void *ud, void *buf, size_t cap, char *err, size_t errcap)
{
    ar_member *m = ud;
    la_ssize_t n = m->al->read_data(m->a, buf, cap);
    if (n < 0) {
        const char *why = m->al->error_string(m->a);
        snprintf(err, errcap, "%s", why ? why : "damaged archive member");
        return -1;
    }
    return n;
}

/* An archive error: at the top it ends the input; inside an archive member it is remembered and the
 * outer archive goes on (its other members are intact). */
static const char *fail_reason(struct archive *a, const ar_feed *feed, const char *fallback)
{
    /* When the bytes under the archive failed (a truncated .tar.gz), that is the cause; libarchive
     * would only say "Truncated input file". */
    const char *why = feed ? input_stream_error(feed->lower) : NULL;
    if (!why && a && feed)
        why = feed->al->error_string(a);
    return why ? why : fallback;
}

static oomscan_status archive_fail(input_ctx *c, const char *member, struct archive *a,
                                   const ar_feed *feed, oomscan_status st, const char *fallback)
{
    const char *why = fail_reason(a, feed, fallback);
    if (!member)
        return diag_set(c->diag, st, c->path, "%s", why);
    if (c->nested_st == OOMSCAN_OK) {
        c->nested_st = st;
        snprintf(c->nested_msg, sizeof c->nested_msg, "%.200s: %.280s", member, why);
    }
    return OOMSCAN_OK;
}

/* long: one container opened and walked member by member; the libarchive handle and the feed it reads are
 * released at one exit. */
static oomscan_status open_archive(input_ctx *c, input_stream *s, kind k, const char *outer,
                                   const char *member, const char *comp, int layers, int adepth)
{
    const archive_lib *al = archive_lib_get();
    if (!al) {
        char m[OOMSCAN_DIAG_MSG];
        snprintf(m, sizeof m, "a %s archive, but %s", kind_name(k), archive_lib_error());
        return archive_fail(c, member, NULL, NULL, OOMSCAN_ERR_FORMAT, m);
    }
    ar_feed feed = {s, malloc(INPUT_BUF), al};
    struct archive *a = al->read_new();
    if (!feed.buf || !a) {
        free(feed.buf);
        if (a)
            al->read_free(a);
        return diag_set(c->diag, OOMSCAN_ERR_NOMEM, c->path, "out of memory");
    }
    /* Only the formats we sniff for: support_*_all would also bring formats (mtree, ...) that can
     * claim plain text. The compressions were peeled off before (open_codec). */
    al->read_support_format_tar(a);
    al->read_support_format_zip_streamable(a);
    const char *chain = comp;

    oomscan_status st = OOMSCAN_OK;
    if (al->read_open(a, &feed, NULL, feed_read, NULL) != ARCHIVE_OK) {
        st = archive_fail(c, member, a, &feed, OOMSCAN_ERR_FORMAT, "unrecognized archive");
        goto end;
    }
    int retries = 0;
    while (!c->stopped) {
        struct archive_entry *e;
        int r = al->read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r == ARCHIVE_RETRY || r == ARCHIVE_FAILED) {
            /* This entry is unreadable but the next one may not be. */
            if (++retries > RETRY_MAX) {
                st = archive_fail(c, member, a, &feed, OOMSCAN_ERR_FORMAT, "damaged archive");
                break;
            }
            continue;
        }
        if (r < ARCHIVE_WARN) {
            st = archive_fail(c, member, a, &feed, OOMSCAN_ERR_FORMAT, "damaged archive");
            break;
        }
        retries = 0;
        if (++c->members > c->lim.max_members) {
            /* Each member costs a record: a million empty ones would cost a gigabyte. */
            c->stopped = 1;
            char m[OOMSCAN_DIAG_MSG];
            snprintf(m, sizeof m, "stopped after %llu archive members: the limit per input (--limit members=%llu)",
                     (unsigned long long)c->lim.max_members, (unsigned long long)c->lim.max_members);
            st = member ? archive_fail(c, member, NULL, NULL, OOMSCAN_ERR_LIMIT, m)
                        : diag_set(c->diag, OOMSCAN_ERR_LIMIT, c->path, "%s", m);
            break;
        }
        int fmt = al->format(a) & ARCHIVE_FORMAT_BASE_MASK;
        ar_member am = {a, al};
        input_stream ms;
        stream_init(&ms, member_pull, &am);
        if (al->entry_filetype(e) != AE_IFREG || al->entry_hardlink(e))
            continue; /* directories, links, devices; a hard link's data came with its first name */
        const char *name = al->entry_pathname(e);
        if (!name)
            name = al->entry_pathname_utf8(e);
        if (!name || !*name)
            continue;
        char arch[KIND_LEN], inner_outer[KIND_LEN], mname[NAME_LEN];
        join(arch, sizeof arch, fmt == ARCHIVE_FORMAT_ZIP ? "zip" : "tar", "+", chain);
        join(inner_outer, sizeof inner_outer, outer, "/", arch);
        join(mname, sizeof mname, member, "/", name);
        st = layer(c, &ms, inner_outer, mname, "", layers + 1, adepth + 1);
        if (st != OOMSCAN_OK)
            break;
    }
end:
    al->read_free(a);
    free(feed.buf);
    return st;
}

typedef struct fd_src { /* a file descriptor read at the top (open_fd) */
    int fd;
    input_ctx *c;
    uint64_t start; /* its offset when opened: a shell may hand over a file part-way read */
    const unsigned char *pre; /* bytes the caller already read from fd, delivered first */
    size_t pre_n, pre_pos;
} fd_src;
static ssize_t fd_pull(void *ud, void *buf, size_t cap, char *err, size_t errcap);

/* Identify what `s` holds and deliver its sources. `outer` is the enclosing archive's container
 * (NULL at the top), `comp` the compressions already peeled at this level ("gzip", "gzip+xz"). */
static oomscan_status layer(input_ctx *c, input_stream *s, const char *outer, const char *member,
                            const char *comp, int layers, int adepth)
{
    stream_sniff(s);
    kind k = sniff_kind(s->head, s->hlen);
    int archive = (k == K_TAR || k == K_ZIP);
    /* Past the limits a container is just bytes: bounded memory beats completeness. The source says
     * so (input_stream_note), so the report does not pass it off as read. */
    if (k != K_TEXT && (layers >= LAYER_DEPTH_MAX || (archive && (unsigned)adepth >= c->lim.max_depth))) {
        char own[KIND_LEN];
        join(own, sizeof own, kind_name(k), "+", comp);
        if (archive)
            snprintf(c->depth_note, sizeof c->depth_note,
                     "%s archive nested deeper than %u archives: scanned as raw bytes (--limit depth=%u)",
                     kind_name(k), c->lim.max_depth, c->lim.max_depth);
        else
            snprintf(c->depth_note, sizeof c->depth_note,
                     "%s data under %d layers of compression: scanned as raw bytes", kind_name(k), LAYER_DEPTH_MAX);
        s->note = c->depth_note;
        return deliver(c, s, outer, member, own);
    }
    switch (k) {
    case K_TEXT:
        if (s->pull == fd_pull && c->regular) { /* the file itself, not a decoded layer */
            s->pread_fd = ((const fd_src *)s->ud)->fd;
            s->pread_at = ((const fd_src *)s->ud)->start;
        }
        return deliver(c, s, outer, member, *comp ? comp : "text");
    case K_GZIP:
    case K_ZSTD:
    case K_XZ:
    case K_BZIP2:
        return open_codec(c, s, k, outer, member, comp, layers, adepth);
    default:
        return open_archive(c, s, k, outer, member, comp, layers, adepth);
    }
}

/* ---- entry points ----------------------------------------------------------------------------- */

static ssize_t fd_pull(void *ud, void *buf, size_t cap, char *err, size_t errcap)
{
    fd_src *f = ud;
    if (f->pre_pos < f->pre_n) {
        size_t k = f->pre_n - f->pre_pos < cap ? f->pre_n - f->pre_pos : cap;
        memcpy(buf, f->pre + f->pre_pos, k);
        f->pre_pos += k;
        __atomic_fetch_add(&f->c->raw_in, (uint64_t)k, __ATOMIC_RELAXED);
        return (ssize_t)k;
    }
    for (;;) {
        /* A pipe may block for ever: wait in short slices so a stop (a signal that reached another
         * thread) is seen. A regular file never blocks. */
        while (!f->c->regular && f->c->lim.stop) {
            if (*f->c->lim.stop) {
                snprintf(err, errcap, "interrupted: not read to the end");
                return -1;
            }
            struct pollfd p = {f->fd, POLLIN, 0};
            int pr = poll(&p, 1, 200);
            if (pr > 0 || (pr < 0 && errno != EINTR))
                break; /* readable, at the end, or an error read() will tell */
        }
        ssize_t n = read(f->fd, buf, cap);
        if (n > 0)
            __atomic_fetch_add(&f->c->raw_in, (uint64_t)n, __ATOMIC_RELAXED);
        if (n >= 0)
            return n;
        if (errno != EINTR) {
            snprintf(err, errcap, "read error: %s", strerror(errno));
            return -1;
        }
        if (f->c->lim.stop && *f->c->lim.stop) { /* a stop signal: do not wait on a pipe again */
            snprintf(err, errcap, "interrupted: not read to the end");
            return -1;
        }
    }
}

static void limits_fill(input_limits *out, const input_limits *lim)
{
    input_limits d = {INPUT_MAX_BYTES_DEFAULT, INPUT_MAX_RATIO_DEFAULT, INPUT_RATIO_AFTER_DEFAULT,
                      INPUT_MAX_MEMBERS_DEFAULT, INPUT_MAX_DEPTH_DEFAULT, NULL};
    *out = d;
    if (!lim)
        return;
    if (lim->max_bytes)
        out->max_bytes = lim->max_bytes;
    if (lim->max_ratio)
        out->max_ratio = lim->max_ratio;
    if (lim->ratio_after)
        out->ratio_after = lim->ratio_after;
    if (lim->max_members)
        out->max_members = lim->max_members;
    if (lim->max_depth)
        out->max_depth = lim->max_depth;
    out->stop = lim->stop;
}

static oomscan_status open_fd(int fd, const char *name, const void *pre, size_t pre_n, const input_limits *lim,
                              input_source_fn fn, void *ud, oomscan_diag *diag)
{
    const char *shown = !name ? "<fd>" : strcmp(name, "-") == 0 ? "<stdin>" : name;
    if (fd < 0 || !fn)
        return diag_set(diag, OOMSCAN_ERR_USAGE, shown, "no input");
    struct stat sb;
    int regular = 0;
    if (fstat(fd, &sb) == 0) {
        if (S_ISDIR(sb.st_mode))
            return diag_set(diag, OOMSCAN_ERR_USAGE, shown, "cannot open: %s", strerror(EISDIR));
        if (S_ISREG(sb.st_mode)) {
            regular = 1;
            (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL); /* bigger kernel read-ahead */
        }
    }
    input_ctx c = {.path = shown, .fn = fn, .ud = ud, .diag = diag, .regular = regular, .nested_st = OOMSCAN_OK};
    limits_fill(&c.lim, lim);
    off_t at = regular ? lseek(fd, 0, SEEK_CUR) : -1;
    fd_src src = {fd, &c, at > 0 ? (uint64_t)at : 0, pre, pre ? pre_n : 0, 0};
    if (pre_n)
        c.regular = 0; /* the bytes are not all in the file at their offsets: no pread */
    input_stream s;
    stream_init(&s, fd_pull, &src);
    oomscan_status st = layer(&c, &s, NULL, NULL, "", 0, 0);
    if (st == OOMSCAN_OK && c.nested_st != OOMSCAN_OK)
        st = diag_set(diag, c.nested_st, shown, "%s", c.nested_msg);
    return st;
}

oomscan_status input_open_fd(int fd, const char *name, input_source_fn fn, void *ud, oomscan_diag *diag)
{
    return open_fd(fd, name, NULL, 0, NULL, fn, ud, diag);
}

oomscan_status input_open_fd_after(int fd, const char *name, const void *head, size_t n, const input_limits *lim,
                                   input_source_fn fn, void *ud, oomscan_diag *diag)
{
    return open_fd(fd, name, head, n, lim, fn, ud, diag);
}

int input_open_long(const char *path, int flags)
{
    int fd = open(path, flags);
    if (fd >= 0 || errno != ENAMETOOLONG)
        return fd;
    char *p = strdup(path);
    if (!p)
        return -1;
    int dfd = open(p[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char *save = NULL, *comp = strtok_r(p, "/", &save);
    while (dfd >= 0 && comp) {
        char *next = strtok_r(NULL, "/", &save);
        int nfd = next ? openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : openat(dfd, comp, flags);
        int e = errno;
        close(dfd);
        errno = e;
        dfd = nfd;
        if (!next) {
            free(p);
            return nfd; /* the last component, opened with the caller's flags */
        }
        comp = next;
    }
    int e = errno;
    if (dfd >= 0)
        close(dfd); /* "/" or "." alone: not a long path */
    free(p);
    errno = e;
    return -1;
}

int input_stat_long(const char *path, struct stat *sb, int nofollow)
{
    if ((nofollow ? lstat(path, sb) : stat(path, sb)) == 0)
        return 0;
    if (errno != ENAMETOOLONG)
        return -1;
    const char *slash = strrchr(path, '/');
    if (!slash)
        return -1;
    char *dir = strndup(path, (size_t)(slash - path) + (slash == path));
    int dfd = dir ? input_open_long(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    free(dir);
    if (dfd < 0)
        return -1;
    int rc = fstatat(dfd, slash + 1, sb, nofollow ? AT_SYMLINK_NOFOLLOW : 0);
    int e = errno;
    close(dfd);
    errno = e;
    return rc;
}

oomscan_status input_open_path(const char *path, input_source_fn fn, void *ud, oomscan_diag *diag)
{
    return input_open_limited(path, NULL, fn, ud, diag);
}

oomscan_status input_open_limited(const char *path, const input_limits *lim, input_source_fn fn, void *ud,
                                  oomscan_diag *diag)
{
    if (!path || !fn)
        return diag_set(diag, OOMSCAN_ERR_USAGE, path, "no input");
    if (strcmp(path, "-") == 0)
        return open_fd(STDIN_FILENO, "-", NULL, 0, lim, fn, ud, diag);
    int fd;
    do
        fd = input_open_long(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return diag_set(diag, OOMSCAN_ERR_IO, path, "cannot open: %s", strerror(errno));
    oomscan_status st = open_fd(fd, path, NULL, 0, lim, fn, ud, diag);
    close(fd);
    return st;
}
