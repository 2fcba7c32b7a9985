/* input.c - sniff a container from its first bytes and deliver its decoded sources.
 *
 * Every layer is an input_stream: a pull function over something (a file descriptor, the gzip
 * decoder, libarchive's member data) plus a small sniff head. Sniffing reads up to SNIFF_LEN bytes
 * into the head; reading drains the head first, then pulls straight into the caller's buffer, so the
 * plain-text path is one read() per call and the gzip path decodes in place.
 *
 * gzip is always ours (gz.c, the fast path); libarchive does zstd/xz/bzip2 and the archive formats,
 * fed from our own callbacks, so a tar.gz reaches libarchive already inflated. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open/read/fstat/posix_fadvise under -std=c11 */
#endif
#include "input/input.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input/gz.h"
#include "input/input_readahead.h"

#define INPUT_BUF (256u * 1024u)  /* libarchive feed buffer, like the gzip input buffer */
#define SNIFF_LEN 512             /* one tar header: the longest signature we check */
#define ARCHIVE_DEPTH_MAX 3       /* archives inside archives: deeper ones are delivered as bytes */
#define LAYER_DEPTH_MAX 8         /* decoders stacked in total (each costs ~300-600 KiB) */
#define RETRY_MAX 64              /* consecutive ARCHIVE_RETRY/FAILED headers before giving up */
#define MAX_READ (1u << 30)       /* one read() or decoder call at most */
#define NAME_LEN 4096
#define KIND_LEN 128

/* Pull up to `cap` bytes. On -1 the reason is written to err[0..errcap). */
typedef ssize_t (*pull_fn)(void *ud, void *buf, size_t cap, char *err, size_t errcap);

struct input_stream {
    pull_fn pull;
    void *ud;
    size_t hlen, hpos; /* sniffed bytes not yet handed to the reader */
    int eof;
    int failed;        /* may be set while sniffing; reported once the head is drained */
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

typedef struct {
    const char *path; /* display name */
    input_source_fn fn;
    void *ud;
    oomscan_diag *diag;
    int regular;              /* the input is a regular file: read-ahead can never block on it */
    oomscan_status nested_st; /* first error inside a nested archive, returned at the end */
    char nested_msg[OOMSCAN_DIAG_MSG];
} input_ctx;

const char *input_gzip_backend(void)
{
    return gz_backend();
}

/* ---- streams ---------------------------------------------------------------------------------- */

static void stream_init(input_stream *s, pull_fn pull, void *ud)
{
    s->pull = pull;
    s->ud = ud;
    s->hlen = s->hpos = 0;
    s->eof = s->failed = 0;
    s->err[0] = '\0';
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

ssize_t input_read(input_stream *s, void *buf, size_t cap)
{
    if (!s)
        return -1;
    if (s->hpos < s->hlen) {
        size_t n = s->hlen - s->hpos;
        if (n > cap)
            n = cap;
        memcpy(buf, s->head + s->hpos, n);
        s->hpos += n;
        return (ssize_t)n;
    }
    if (s->failed)
        return -1;
    if (s->eof || cap == 0)
        return 0;
    return stream_pull(s, buf, cap);
}

const char *input_stream_error(const input_stream *s)
{
    if (!s || !s->failed || s->hpos < s->hlen)
        return NULL;
    return s->err;
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

/* "a" + sep + "b", either side may be empty. */
static void join(char *out, size_t cap, const char *a, const char *sep, const char *b)
{
    if (!a || !*a)
        snprintf(out, cap, "%s", b ? b : "");
    else if (!b || !*b)
        snprintf(out, cap, "%s", a);
    else
        snprintf(out, cap, "%s%s%s", a, sep, b);
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
    input_source_info info = {c->path, member, container};
    if (c->fn(c->ud, &info, s) != 0)
        return diag_set(c->diag, OOMSCAN_ERR_CANCELLED, c->path, "stopped by the caller");
    return OOMSCAN_OK;
}

/* gzip layer: the decoder pulls from the stream below. */
typedef struct {
    gz_reader *g;
    input_stream *lower;
} gz_src;

static ssize_t gz_lower_read(void *ud, void *buf, size_t cap)
{
    return input_read((input_stream *)ud, buf, cap);
}

static ssize_t gz_pull(void *ud, void *buf, size_t cap, char *err, size_t errcap)
{
    gz_src *z = ud;
    ssize_t n = gz_read(z->g, buf, cap);
    if (n < 0) {
        const char *lower = gz_failed_on_read(z->g) ? input_stream_error(z->lower) : NULL;
        snprintf(err, errcap, "%s", lower ? lower : gz_error(z->g));
    }
    return n;
}

static ssize_t ra_pull(void *ud, void *buf, size_t cap, char *err, size_t errcap)
{
    return input_ra_read(ud, buf, cap, err, errcap);
}

static oomscan_status open_gzip(input_ctx *c, input_stream *s, const char *outer, const char *member,
                                const char *comp, int layers, int adepth)
{
    gz_src z = {gz_new(gz_lower_read, s), s};
    if (!z.g)
        return diag_set(c->diag, OOMSCAN_ERR_NOMEM, c->path, "out of memory");
    /* The outermost gzip of a regular file may inflate in its own thread. Not a pipe: stopping early
     * would have to wait for a read() that may never return. */
    input_ra *ra = NULL;
    if (layers == 0 && c->regular && input_readahead_enabled())
        ra = input_ra_start(gz_pull, &z);
    input_stream inner;
    if (ra)
        stream_init(&inner, ra_pull, ra);
    else
        stream_init(&inner, gz_pull, &z);
    char chain[KIND_LEN];
    join(chain, sizeof chain, "gzip", "+", comp);
    oomscan_status st = layer(c, &inner, outer, member, chain, layers + 1, adepth);
    input_ra_stop(ra); /* before gz_free: the thread may still be inside gz_read */
    gz_free(z.g);
    return st;
}

/* libarchive layer: our read callback feeds it from the stream below. */
typedef struct {
    input_stream *lower;
    unsigned char *buf;
} ar_feed;

static la_ssize_t feed_read(struct archive *a, void *ud, const void **out)
{
    ar_feed *f = ud;
    ssize_t n = input_read(f->lower, f->buf, INPUT_BUF);
    if (n < 0) {
        const char *why = input_stream_error(f->lower);
        archive_set_error(a, EIO, "%s", why ? why : "read error");
        return ARCHIVE_FATAL;
    }
    *out = f->buf;
    return n;
}

static ssize_t member_pull(void *ud, void *buf, size_t cap, char *err, size_t errcap)
{
    struct archive *a = ud;
    la_ssize_t n = archive_read_data(a, buf, cap);
    if (n < 0) {
        const char *why = archive_error_string(a);
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
    if (!why && a)
        why = archive_error_string(a);
    return why ? why : fallback;
}

/* A compressed file that cannot even be opened is still a source, like a damaged gzip: deliver it
 * as a stream that fails at once with the reason. */
static oomscan_status deliver_failed(input_ctx *c, const char *outer, const char *member, const char *own,
                                     const char *why)
{
    input_stream bad;
    stream_init(&bad, NULL, NULL);
    bad.failed = 1;
    snprintf(bad.err, sizeof bad.err, "%s", why);
    return deliver(c, &bad, outer, member, own);
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

static oomscan_status open_archive(input_ctx *c, input_stream *s, kind k, const char *outer,
                                   const char *member, const char *comp, int layers, int adepth)
{
    ar_feed feed = {s, malloc(INPUT_BUF)};
    struct archive *a = archive_read_new();
    if (!feed.buf || !a) {
        free(feed.buf);
        archive_read_free(a);
        return diag_set(c->diag, OOMSCAN_ERR_NOMEM, c->path, "out of memory");
    }
    /* Only the filters and formats we sniff for: support_*_all would also bring external-program
     * filters and formats (mtree, ...) that can claim plain text. */
    int single = (k == K_ZSTD || k == K_XZ || k == K_BZIP2);
    if (k == K_ZSTD)
        archive_read_support_filter_zstd(a);
    else if (k == K_XZ)
        archive_read_support_filter_xz(a);
    else if (k == K_BZIP2)
        archive_read_support_filter_bzip2(a);
    archive_read_support_format_tar(a);
    archive_read_support_format_zip_streamable(a);
    if (single) {
        archive_read_support_format_raw(a);   /* a singly compressed file */
        archive_read_support_format_empty(a); /* ... that decompresses to nothing */
    }

    char chain[KIND_LEN];
    join(chain, sizeof chain, single ? kind_name(k) : "", "+", comp);

    oomscan_status st = OOMSCAN_OK;
    if (archive_read_open(a, &feed, NULL, feed_read, NULL) != ARCHIVE_OK) {
        if (single)
            st = deliver_failed(c, outer, member, chain, fail_reason(a, &feed, "unrecognized data"));
        else
            st = archive_fail(c, member, a, &feed, OOMSCAN_ERR_FORMAT, "unrecognized archive");
        goto end;
    }
    int retries = 0, entries = 0;
    for (;;) {
        struct archive_entry *e;
        int r = archive_read_next_header(a, &e);
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
            if (single && !entries)
                st = deliver_failed(c, outer, member, chain, fail_reason(a, &feed, "damaged data"));
            else
                st = archive_fail(c, member, a, &feed, OOMSCAN_ERR_FORMAT, "damaged archive");
            break;
        }
        retries = 0;
        entries++;
        int fmt = archive_format(a) & ARCHIVE_FORMAT_BASE_MASK;
        if (fmt == ARCHIVE_FORMAT_EMPTY)
            break;
        input_stream ms;
        stream_init(&ms, member_pull, a);
        if (fmt == ARCHIVE_FORMAT_RAW) {
            /* Not an archive: the one entry is the decompressed file itself, named like its parent.
             * At the top of a regular file its decompression may run in its own thread. */
            input_ra *ra = NULL;
            if (layers == 0 && c->regular && input_readahead_enabled())
                ra = input_ra_start(member_pull, a);
            if (ra)
                stream_init(&ms, ra_pull, ra);
            st = layer(c, &ms, outer, member, chain, layers + 1, adepth);
            input_ra_stop(ra);
            break;
        }
        if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e))
            continue; /* directories, links, devices; a hard link's data came with its first name */
        const char *name = archive_entry_pathname(e);
        if (!name)
            name = archive_entry_pathname_utf8(e);
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
    archive_read_free(a);
    free(feed.buf);
    return st;
}

/* Identify what `s` holds and deliver its sources. `outer` is the enclosing archive's container
 * (NULL at the top), `comp` the compressions already peeled at this level ("gzip", "gzip+xz"). */
static oomscan_status layer(input_ctx *c, input_stream *s, const char *outer, const char *member,
                            const char *comp, int layers, int adepth)
{
    stream_sniff(s);
    kind k = sniff_kind(s->head, s->hlen);
    int archive = (k == K_TAR || k == K_ZIP);
    /* Past the limits a container is just bytes: bounded memory beats completeness. */
    if (k != K_TEXT && (layers >= LAYER_DEPTH_MAX || (archive && adepth >= ARCHIVE_DEPTH_MAX))) {
        char own[KIND_LEN];
        join(own, sizeof own, kind_name(k), "+", comp);
        return deliver(c, s, outer, member, own);
    }
    switch (k) {
    case K_TEXT:
        return deliver(c, s, outer, member, *comp ? comp : "text");
    case K_GZIP:
        return open_gzip(c, s, outer, member, comp, layers, adepth);
    default:
        return open_archive(c, s, k, outer, member, comp, layers, adepth);
    }
}

/* ---- entry points ----------------------------------------------------------------------------- */

static ssize_t fd_pull(void *ud, void *buf, size_t cap, char *err, size_t errcap)
{
    int fd = *(const int *)ud;
    for (;;) {
        ssize_t n = read(fd, buf, cap);
        if (n >= 0)
            return n;
        if (errno != EINTR) {
            snprintf(err, errcap, "read error: %s", strerror(errno));
            return -1;
        }
    }
}

oomscan_status input_open_fd(int fd, const char *name, input_source_fn fn, void *ud, oomscan_diag *diag)
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
    input_ctx c = {shown, fn, ud, diag, 0, OOMSCAN_OK, ""};
    c.regular = regular;
    input_stream s;
    stream_init(&s, fd_pull, &fd);
    oomscan_status st = layer(&c, &s, NULL, NULL, "", 0, 0);
    if (st == OOMSCAN_OK && c.nested_st != OOMSCAN_OK)
        st = diag_set(diag, c.nested_st, shown, "%s", c.nested_msg);
    return st;
}

oomscan_status input_open_path(const char *path, input_source_fn fn, void *ud, oomscan_diag *diag)
{
    if (!path || !fn)
        return diag_set(diag, OOMSCAN_ERR_USAGE, path, "no input");
    if (strcmp(path, "-") == 0)
        return input_open_fd(STDIN_FILENO, "-", fn, ud, diag);
    int fd;
    do
        fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return diag_set(diag, OOMSCAN_ERR_IO, path, "cannot open: %s", strerror(errno));
    oomscan_status st = input_open_fd(fd, path, fn, ud, diag);
    close(fd);
    return st;
}
