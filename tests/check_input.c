/* check_input.c - the input module: sniffing, gzip (both backends), libarchive formats, nesting,
 * stdin, and the error reports. Every input is built inside the test, in a temp dir. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <archive.h>
#include <archive_entry.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "input/archive_lib.h"
#include "input/input.h"
#include "input/input_readahead.h"

/* ---- fixtures and helpers --------------------------------------------------------------------- */

static char tmpdir[256];

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_input.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    input_set_readahead(0); /* the default is on: these cases read in the caller's thread */
}

static void setup_readahead(void)
{
    setup();
    input_set_readahead(1);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static void teardown(void)
{
    if (getenv("CHECK_INPUT_KEEP")) /* keep the inputs of a failing test to look at them */
        return;
    nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *tpath(const char *name)
{
    static char bufs[8][512];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, 512, "%s/%s", tmpdir, name);
    return b;
}

typedef struct {
    unsigned char *p;
    size_t n, cap;
} blob;

static void blob_add(blob *b, const void *data, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        ck_assert_ptr_nonnull(b->p);
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    if (n)
        ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

static blob read_file(const char *path)
{
    blob b = {0};
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        blob_add(&b, buf, n);
    fclose(f);
    return b;
}

/* Log-like text that does not compress to nothing: `n` bytes, deterministic. */
static blob make_log(size_t n, unsigned seed)
{
    blob b = {0};
    char line[160];
    unsigned x = seed * 2654435761u + 1;
    size_t i = 0;
    while (b.n < n) {
        x = x * 1103515245u + 12345u;
        int len = snprintf(line, sizeof line, "[rank%u] step %zu loss %u.%04u lr 3e-4 tok/s %u %08x\n",
                           x % 8, i++, (x >> 8) % 10, (x >> 3) % 10000, (x >> 12) % 99999, x);
        size_t take = (size_t)len < n - b.n ? (size_t)len : n - b.n;
        blob_add(&b, line, take);
    }
    return b;
}

/* gzip one member in memory, optionally with all the optional header fields. */
static blob gzip_mem(const void *data, size_t n, const char *fname)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    ck_assert_int_eq(deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
    gz_header h;
    memset(&h, 0, sizeof h);
    if (fname) { /* every optional header field: FEXTRA, FNAME, FCOMMENT, FHCRC */
        static Bytef extra[] = "AB\x04\x00" "data";
        h.extra = extra;
        h.extra_len = 8;
        h.comment = (Bytef *)"rotated by logrotate";
        h.hcrc = 1;
        h.name = (Bytef *)fname;
        ck_assert_int_eq(deflateSetHeader(&zs, &h), Z_OK);
    }
    blob out = {0};
    size_t cap = deflateBound(&zs, n) + 64;
    out.p = malloc(cap + 1);
    zs.next_in = (Bytef *)data;
    zs.avail_in = (uInt)n;
    zs.next_out = out.p;
    zs.avail_out = (uInt)cap;
    ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
    out.n = cap - zs.avail_out;
    out.cap = cap + 1;
    deflateEnd(&zs);
    return out;
}

/* What one source delivered. */
typedef struct {
    char path[256], member[512], container[64];
    int has_member;
    blob data;
    char err[512];
    char note[256]; /* input_stream_note() */
    int failed;
    int again_failed; /* input_read after -1 returned -1 again */
} src_rec;

typedef struct {
    src_rec r[32];
    size_t n;
    size_t chunk;      /* read size; 0 = 64 KiB */
    size_t read_limit; /* stop reading a source after this many bytes; 0 = no limit */
    size_t stop_after; /* return non-zero after this many sources; 0 = never */
    const input_limits *lim; /* NULL: the defaults */
} collect;

static int collect_cb(void *ud, const input_source_info *info, input_stream *s)
{
    collect *c = ud;
    ck_assert_uint_lt(c->n, 32);
    src_rec *r = &c->r[c->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", info->path);
    snprintf(r->container, sizeof r->container, "%s", info->container);
    if (info->member) {
        r->has_member = 1;
        snprintf(r->member, sizeof r->member, "%s", info->member);
    }
    size_t chunk = c->chunk ? c->chunk : 65536;
    unsigned char *buf = malloc(chunk);
    for (;;) {
        if (c->read_limit && r->data.n >= c->read_limit)
            break;
        ssize_t n = input_read(s, buf, chunk);
        if (n < 0) {
            r->failed = 1;
            const char *e = input_stream_error(s);
            snprintf(r->err, sizeof r->err, "%s", e ? e : "(null)");
            r->again_failed = input_read(s, buf, chunk) == -1;
            break;
        }
        if (n == 0)
            break;
        blob_add(&r->data, buf, (size_t)n);
    }
    const char *note = input_stream_note(s);
    snprintf(r->note, sizeof r->note, "%s", note ? note : "");
    free(buf);
    return c->stop_after && c->n >= c->stop_after;
}

static void collect_free(collect *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->r[i].data.p);
}

static oomscan_status scan(const char *path, collect *c, oomscan_diag *d)
{
    diag_clear(d);
    return c->lim ? input_open_limited(path, c->lim, collect_cb, c, d) : input_open_path(path, collect_cb, c, d);
}

static void assert_bytes(const src_rec *r, const void *want, size_t n)
{
    ck_assert_msg(r->data.n == n, "%s: got %zu bytes, want %zu", r->member, r->data.n, n);
    ck_assert_msg(n == 0 || memcmp(r->data.p, want, n) == 0, "%s: bytes differ", r->member);
}

/* Archives through libarchive's writer. */
typedef struct {
    const char *name;
    const void *data;
    size_t n;
    char type; /* 'f' file, 'd' directory, 'l' symlink */
} entry;

enum { FMT_USTAR, FMT_V7, FMT_PAX, FMT_ZIP, FMT_ZIP_STORE, FMT_RAW };
enum { FLT_NONE, FLT_GZIP, FLT_XZ, FLT_ZSTD, FLT_BZIP2 };

static void write_archive(const char *path, int fmt, int flt, const entry *e, size_t n)
{
    struct archive *a = archive_write_new();
    switch (fmt) {
    case FMT_USTAR: archive_write_set_format_ustar(a); break;
    case FMT_V7: archive_write_set_format_v7tar(a); break;
    case FMT_PAX: archive_write_set_format_pax_restricted(a); break;
    case FMT_ZIP: archive_write_set_format_zip(a); break;
    case FMT_ZIP_STORE:
        archive_write_set_format_zip(a);
        archive_write_zip_set_compression_store(a);
        break;
    case FMT_RAW: archive_write_set_format_raw(a); break;
    }
    switch (flt) {
    case FLT_GZIP: archive_write_add_filter_gzip(a); break;
    case FLT_XZ: archive_write_add_filter_xz(a); break;
    case FLT_ZSTD: archive_write_add_filter_zstd(a); break;
    case FLT_BZIP2: archive_write_add_filter_bzip2(a); break;
    default: archive_write_add_filter_none(a); break;
    }
    ck_assert_int_eq(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *ae = archive_entry_new();
        archive_entry_set_pathname(ae, e[i].name);
        archive_entry_set_mtime(ae, 1700000000, 0);
        if (e[i].type == 'd') {
            archive_entry_set_filetype(ae, AE_IFDIR);
            archive_entry_set_perm(ae, 0755);
        } else if (e[i].type == 'l') {
            archive_entry_set_filetype(ae, AE_IFLNK);
            archive_entry_set_symlink(ae, (const char *)e[i].data);
            archive_entry_set_perm(ae, 0777);
        } else {
            archive_entry_set_filetype(ae, AE_IFREG);
            archive_entry_set_perm(ae, 0644);
            archive_entry_set_size(ae, (la_int64_t)e[i].n);
        }
        ck_assert_int_eq(archive_write_header(a, ae), ARCHIVE_OK);
        if (e[i].type == 'f' && e[i].n)
            ck_assert_int_eq(archive_write_data(a, e[i].data, e[i].n), (la_ssize_t)e[i].n);
        archive_entry_free(ae);
    }
    ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

static const char LOG_A[] = "2024-05-01 12:00:00 INFO starting\nRuntimeError: CUDA out of memory.\n";
static const char LOG_B[] = "NCCL WARN Call to connect returned Connection refused\n";
static const char LOG_C[] = "slurmstepd: error: Detected 1 oom_kill event\n";

/* ---- plain text ------------------------------------------------------------------------------- */

START_TEST(test_input_plain_text_exact_bytes)
{
    blob log = make_log(700000, 1); /* several read() calls */
    write_file(tpath("a.log"), log.p, log.n);
    collect c = {.chunk = 4093};
    oomscan_diag d;
    ck_assert_int_eq(scan(tpath("a.log"), &c, &d), OOMSCAN_OK);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_str_eq(c.r[0].container, "text");
    ck_assert_str_eq(c.r[0].path, tpath("a.log"));
    ck_assert_int_eq(c.r[0].has_member, 0);
    ck_assert_int_eq(c.r[0].failed, 0);
    assert_bytes(&c.r[0], log.p, log.n);
    collect_free(&c);
    free(log.p);
}
END_TEST

START_TEST(test_input_empty_file_is_one_empty_source)
{
    write_file(tpath("empty.log"), "", 0);
    collect c = {0};
    oomscan_diag d;
    ck_assert_int_eq(scan(tpath("empty.log"), &c, &d), OOMSCAN_OK);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_str_eq(c.r[0].container, "text");
    ck_assert_uint_eq(c.r[0].data.n, 0);
    collect_free(&c);
}
END_TEST

/* Sniffing is by content: names lie, and short or odd prefixes stay text. */
START_TEST(test_input_sniff_ignores_name_and_junk_is_text)
{
    static const struct {
        const char *name;
        const char *bytes;
        size_t n;
    } cases[] = {
        {"fake.gz", "plain text in a .gz name\n", 25},
        {"junk.bin", "\x00\x01\x02\xff\xfe binary\x00junk", 18},
        {"bzh.log", "BZh is not bzip2 without a digit\n", 33},
        {"pk.log", "PK\x03", 3},
        {"one.log", "\x1f", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(tpath(cases[i].name), cases[i].bytes, cases[i].n);
        collect c = {0};
        oomscan_diag d;
        ck_assert_msg(scan(tpath(cases[i].name), &c, &d) == OOMSCAN_OK, "%s: %s", cases[i].name, d.msg);
        ck_assert_msg(c.n == 1 && strcmp(c.r[0].container, "text") == 0, "%s sniffed as %s",
                      cases[i].name, c.n ? c.r[0].container : "nothing");
        assert_bytes(&c.r[0], cases[i].bytes, cases[i].n);
        collect_free(&c);
    }
}
END_TEST

/* ---- gzip ------------------------------------------------------------------------------------- */

START_TEST(test_input_gzip_backend_name)
{
#ifdef OOMSCAN_HAVE_ISAL
    ck_assert_str_eq(input_gzip_backend(), "isa-l");
#else
    ck_assert_str_eq(input_gzip_backend(), "zlib");
#endif
}
END_TEST

START_TEST(test_input_gzip_large_odd_reads)
{
    blob log = make_log(3 * 1024 * 1024 + 17, 2);
    blob gz = gzip_mem(log.p, log.n, NULL);
    write_file(tpath("big.log"), gz.p, gz.n); /* the name says nothing */
    static const size_t chunks[] = {1, 4093, 65536, 1 << 20};
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        if (chunks[i] == 1 && log.n > 400000)
            continue; /* byte-at-a-time on 3 MiB is slow under sanitizers; done below on a smaller one */
        collect c = {.chunk = chunks[i]};
        oomscan_diag d;
        ck_assert_int_eq(scan(tpath("big.log"), &c, &d), OOMSCAN_OK);
        ck_assert_uint_eq(c.n, 1);
        ck_assert_str_eq(c.r[0].container, "gzip");
        ck_assert_int_eq(c.r[0].failed, 0);
        assert_bytes(&c.r[0], log.p, log.n);
        collect_free(&c);
    }
    free(log.p);
    free(gz.p);

    log = make_log(50000, 3);
    gz = gzip_mem(log.p, log.n, "original-name.log"); /* FNAME field in the header */
    write_file(tpath("small"), gz.p, gz.n);
    collect c = {.chunk = 1};
    oomscan_diag d;
    ck_assert_int_eq(scan(tpath("small"), &c, &d), OOMSCAN_OK);
    assert_bytes(&c.r[0], log.p, log.n);
    collect_free(&c);
    free(log.p);
    free(gz.p);
}
END_TEST

/* cat a.gz b.gz c.gz, an empty member among them, zero padding after the last. */
START_TEST(test_input_gzip_concatenated_members_and_padding)
{
    blob big = make_log(600000, 4);
    const void *parts[] = {LOG_A, "", big.p, LOG_B};
    size_t lens[] = {strlen(LOG_A), 0, big.n, strlen(LOG_B)};
    blob file = {0}, want = {0};
    for (size_t i = 0; i < 4; i++) {
        blob gz = gzip_mem(parts[i], lens[i], i == 3 ? "b.log" : NULL);
        blob_add(&file, gz.p, gz.n);
        blob_add(&want, parts[i], lens[i]);
        free(gz.p);
    }
    static const unsigned char zeros[1000];
    blob_add(&file, zeros, sizeof zeros);
    write_file(tpath("cat.gz"), file.p, file.n);
    collect c = {.chunk = 100000};
    oomscan_diag d;
    ck_assert_int_eq(scan(tpath("cat.gz"), &c, &d), OOMSCAN_OK);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_int_eq(c.r[0].failed, 0);
    assert_bytes(&c.r[0], want.p, want.n);
    collect_free(&c);
    free(big.p);
    free(file.p);
    free(want.p);
}
END_TEST

START_TEST(test_input_gzip_truncated_delivers_prefix_then_error)
{
    blob log = make_log(900000, 5);
    blob gz = gzip_mem(log.p, log.n, NULL);
    static const size_t cuts[] = {2, 5, 12, 0 /* half */, 0 /* all but the trailer */};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        size_t cut = cuts[i] ? cuts[i] : i == 3 ? gz.n / 2 : gz.n - 4;
        write_file(tpath("cut.gz"), gz.p, cut);
        collect c = {0};
        oomscan_diag d;
        ck_assert_int_eq(scan(tpath("cut.gz"), &c, &d), OOMSCAN_OK);
        ck_assert_uint_eq(c.n, 1);
        ck_assert_str_eq(c.r[0].container, "gzip");
        ck_assert_msg(c.r[0].failed, "cut at %zu: no error", cut);
        ck_assert(c.r[0].again_failed);
        ck_assert_uint_le(c.r[0].data.n, log.n);
        ck_assert_msg(memcmp(c.r[0].data.p ? (void *)c.r[0].data.p : (void *)"", log.p, c.r[0].data.n) == 0,
                      "cut at %zu: delivered bytes are not a prefix", cut);
        if (i >= 3)
            ck_assert_uint_gt(c.r[0].data.n, log.n / 4);
        char want[128];
        snprintf(want, sizeof want, "truncated gzip data (%zu bytes decoded)", c.r[0].data.n);
        ck_assert_msg(strcmp(c.r[0].err, want) == 0, "cut at %zu: \"%s\"", cut, c.r[0].err);
        collect_free(&c);
    }
    free(log.p);
    free(gz.p);
}
END_TEST

START_TEST(test_input_gzip_corrupt_reports_decoder_message)
{
    blob log = make_log(300000, 6);
    blob gz = gzip_mem(log.p, log.n, NULL);

    /* A wrong CRC in the trailer: all data comes out, then the check fails. */
    gz.p[gz.n - 6] ^= 0xff;
    write_file(tpath("crc.gz"), gz.p, gz.n);
    collect c = {0};
    oomscan_diag d;
    ck_assert_int_eq(scan(tpath("crc.gz"), &c, &d), OOMSCAN_OK);
    ck_assert(c.r[0].failed);
    ck_assert_str_eq(c.r[0].err, "corrupt gzip data: incorrect data check");
    collect_free(&c);
    gz.p[gz.n - 6] ^= 0xff;

    /* A reserved block type (11) right at the start of the deflate data. */
    unsigned char bad[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    write_file(tpath("block.gz"), bad, sizeof bad);
    collect c2 = {0};
    ck_assert_int_eq(scan(tpath("block.gz"), &c2, &d), OOMSCAN_OK);
    ck_assert(c2.r[0].failed);
    ck_assert_msg(strncmp(c2.r[0].err, "corrupt gzip data: ", 19) == 0, "%s", c2.r[0].err);
    collect_free(&c2);

    /* Garbage (not zeros) after a complete member. */
    blob file = {0};
    blob_add(&file, gz.p, gz.n);
    blob_add(&file, "garbage", 7);
    write_file(tpath("trail.gz"), file.p, file.n);
    collect c3 = {0};
    ck_assert_int_eq(scan(tpath("trail.gz"), &c3, &d), OOMSCAN_OK);
    assert_bytes(&c3.r[0], log.p, log.n);
    ck_assert(c3.r[0].failed);
    ck_assert_msg(strncmp(c3.r[0].err, "corrupt gzip data: ", 19) == 0, "%s", c3.r[0].err);
    collect_free(&c3);
    free(file.p);
    free(log.p);
    free(gz.p);
}
END_TEST

/* ---- libarchive: single compressed files and archives ----------------------------------------- */

START_TEST(test_input_single_compressed_zstd_xz_bzip2)
{
    blob log = make_log(400000, 7);
    static const struct {
        int flt;
        const char *container;
    } cases[] = {{FLT_ZSTD, "zstd"}, {FLT_XZ, "xz"}, {FLT_BZIP2, "bzip2"}};
    for (size_t i = 0; i < 3; i++) {
        entry e = {"data", log.p, log.n, 'f'};
        write_archive(tpath("single"), FMT_RAW, cases[i].flt, &e, 1);
        collect c = {.chunk = 5000};
        oomscan_diag d;
        ck_assert_msg(scan(tpath("single"), &c, &d) == OOMSCAN_OK, "%s: %s", cases[i].container, d.msg);
        ck_assert_uint_eq(c.n, 1);
        ck_assert_str_eq(c.r[0].container, cases[i].container);
        ck_assert_int_eq(c.r[0].has_member, 0);
        ck_assert_msg(!c.r[0].failed, "%s: %s", cases[i].container, c.r[0].err);
        assert_bytes(&c.r[0], log.p, log.n);
        collect_free(&c);
    }
    free(log.p);
}
END_TEST

/* Every tar flavour and zip: the same members in order, directories and symlinks skipped. */
START_TEST(test_input_archives_members_in_order)
{
    blob big = make_log(700000, 8);
    entry ents[] = {
        {"logs", NULL, 0, 'd'},
        {"logs/rank0.log", LOG_A, strlen(LOG_A), 'f'},
        {"logs/latest", "rank0.log", 0, 'l'},
        {"logs/empty.log", "", 0, 'f'},
        {"logs/big.log", big.p, big.n, 'f'},
        {"rank1.log", LOG_B, strlen(LOG_B), 'f'},
    };
    static const struct {
        int fmt, flt;
        const char *container;
    } cases[] = {
        {FMT_USTAR, FLT_NONE, "tar"},  {FMT_PAX, FLT_NONE, "tar"},    {FMT_USTAR, FLT_GZIP, "tar+gzip"},
        {FMT_PAX, FLT_XZ, "tar+xz"},   {FMT_USTAR, FLT_ZSTD, "tar+zstd"}, {FMT_USTAR, FLT_BZIP2, "tar+bzip2"},
        {FMT_ZIP, FLT_NONE, "zip"},    {FMT_ZIP_STORE, FLT_NONE, "zip"}, {FMT_V7, FLT_NONE, "tar"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = sizeof ents / sizeof ents[0];
        entry *e = ents;
        entry v7[3];
        if (cases[i].fmt == FMT_V7) { /* no directories or symlinks in our v7 case */
            v7[0] = ents[1], v7[1] = ents[4], v7[2] = ents[5];
            e = v7, n = 3;
        }
        write_archive(tpath("arch"), cases[i].fmt, cases[i].flt, e, n);
        collect c = {.chunk = 30000};
        oomscan_diag d;
        ck_assert_msg(scan(tpath("arch"), &c, &d) == OOMSCAN_OK, "case %zu (%s): %s", i, cases[i].container,
                      d.msg);
        const char *names[] = {"logs/rank0.log", "logs/latest", "logs/empty.log", "logs/big.log", "rank1.log"};
        const void *datas[] = {LOG_A, "rank0.log", "", big.p, LOG_B};
        size_t lens[] = {strlen(LOG_A), 9, 0, big.n, strlen(LOG_B)};
        size_t idx[] = {0, 2, 3, 4, 4}, want = 4;
        if (cases[i].fmt == FMT_V7)
            idx[1] = 3, idx[2] = 4, want = 3;
        /* A streamed zip cannot tell a symlink from a file (the mode is only in the central
         * directory), so the link comes out as a small file holding its target. */
        if (cases[i].fmt == FMT_ZIP || cases[i].fmt == FMT_ZIP_STORE)
            idx[1] = 1, idx[2] = 2, idx[3] = 3, idx[4] = 4, want = 5;
        ck_assert_msg(c.n == want, "case %zu (%s): %zu sources", i, cases[i].container, c.n);
        for (size_t k = 0; k < want; k++) {
            const src_rec *r = &c.r[k];
            ck_assert_str_eq(r->path, tpath("arch"));
            ck_assert_msg(r->has_member && strcmp(r->member, names[idx[k]]) == 0, "case %zu: member %s", i,
                          r->member);
            ck_assert_str_eq(r->container, cases[i].container);
            ck_assert_msg(!r->failed, "case %zu %s: %s", i, r->member, r->err);
            assert_bytes(r, datas[idx[k]], lens[idx[k]]);
        }
        collect_free(&c);
    }
    free(big.p);
}
END_TEST

/* Without libarchive (it is opened only when an archive is met) an archive is an input error naming
 * the input, the kind of archive and the library, and the next input is still read. In a child
 * process of its own: the library is looked up once per process. */
START_TEST(test_input_archive_without_libarchive_names_input_and_library)
{
#ifdef OOMSCAN_ARCHIVE_DLOPEN
    entry e = {"rank0.log", LOG_A, strlen(LOG_A), 'f'};
    write_archive(tpath("job.tar"), FMT_USTAR, FLT_NONE, &e, 1);
    write_file(tpath("plain.log"), LOG_B, strlen(LOG_B));
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        archive_lib_use("liboomscan-test-no-such-archive.so.0");
        collect c = {0};
        oomscan_diag d;
        oomscan_status st = scan(tpath("job.tar"), &c, &d);
        collect_free(&c);
        collect p = {0};
        oomscan_diag pd;
        oomscan_status pst = scan(tpath("plain.log"), &p, &pd);
        char out[1024];
        int n = snprintf(out, sizeof out, "%d %zu %d %zu|%s|%s", (int)st, c.n, (int)pst, p.n, d.where, d.msg);
        collect_free(&p);
        if (write(fds[1], out, (size_t)n) != n)
            _exit(2);
        _exit(0);
    }
    close(fds[1]);
    char got[1024] = {0};
    ssize_t n = read(fds[0], got, sizeof got - 1);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    ck_assert_int_gt(n, 0);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %s", got);
    char want[600];
    snprintf(want, sizeof want, "%d 0 0 1|%s|", (int)OOMSCAN_ERR_FORMAT, tpath("job.tar"));
    ck_assert_msg(strncmp(got, want, strlen(want)) == 0, "got %s", got);
    ck_assert_msg(strstr(got, "a tar archive, but libarchive cannot be loaded") != NULL, "got %s", got);
    ck_assert_msg(strstr(got, "liboomscan-test-no-such-archive.so.0") != NULL, "got %s", got);
#endif
}
END_TEST

START_TEST(test_input_empty_zip_has_no_sources)
{
    write_archive(tpath("empty.zip"), FMT_ZIP, FLT_NONE, NULL, 0);
    blob b = read_file(tpath("empty.zip"));
    ck_assert(b.n >= 4 && memcmp(b.p, "PK\x05\x06", 4) == 0);
    free(b.p);
    collect c = {0};
    oomscan_diag d;
    ck_assert_int_eq(scan(tpath("empty.zip"), &c, &d), OOMSCAN_OK);
    ck_assert_uint_eq(c.n, 0);
}
END_TEST

/* member.log.gz, an .xz, and a tar inside a tar are decoded; a corrupt .gz member fails alone. */
START_TEST(test_input_nested_members_are_decoded)
{
    blob big = make_log(300000, 9);
    blob gz = gzip_mem(big.p, big.n, NULL);
    blob badgz = gzip_mem(LOG_C, strlen(LOG_C), NULL);
    badgz.p[badgz.n - 6] ^= 0x55;

    entry xz_e = {"x", LOG_B, strlen(LOG_B), 'f'};
    write_archive(tpath("m.xz"), FMT_RAW, FLT_XZ, &xz_e, 1);
    blob xz = read_file(tpath("m.xz"));

    entry inner_e[] = {{"inner/a.log", LOG_A, strlen(LOG_A), 'f'}, {"inner/c.log", LOG_C, strlen(LOG_C), 'f'}};
    write_archive(tpath("inner.tar.gz"), FMT_USTAR, FLT_GZIP, inner_e, 2);
    blob inner = read_file(tpath("inner.tar.gz"));

    entry outer_e[] = {
        {"member.log.gz", gz.p, gz.n, 'f'},
        {"bad.log.gz", badgz.p, badgz.n, 'f'},
        {"trace.xz", xz.p, xz.n, 'f'},
        {"inner.tar.gz", inner.p, inner.n, 'f'},
        {"last.log", LOG_B, strlen(LOG_B), 'f'},
    };
    write_archive(tpath("outer.zip"), FMT_ZIP, FLT_NONE, outer_e, 5);
    collect c = {0};
    oomscan_diag d;
    ck_assert_msg(scan(tpath("outer.zip"), &c, &d) == OOMSCAN_OK, "%s", d.msg);
    ck_assert_uint_eq(c.n, 6);

    ck_assert_str_eq(c.r[0].member, "member.log.gz");
    ck_assert_str_eq(c.r[0].container, "zip/gzip");
    ck_assert(!c.r[0].failed);
    assert_bytes(&c.r[0], big.p, big.n);

    ck_assert_str_eq(c.r[1].member, "bad.log.gz");
    ck_assert(c.r[1].failed);
    ck_assert_str_eq(c.r[1].err, "corrupt gzip data: incorrect data check");

    ck_assert_str_eq(c.r[2].member, "trace.xz");
    ck_assert_str_eq(c.r[2].container, "zip/xz");
    assert_bytes(&c.r[2], LOG_B, strlen(LOG_B));

    ck_assert_str_eq(c.r[3].member, "inner.tar.gz/inner/a.log");
    ck_assert_str_eq(c.r[3].container, "zip/tar+gzip");
    assert_bytes(&c.r[3], LOG_A, strlen(LOG_A));
    ck_assert_str_eq(c.r[4].member, "inner.tar.gz/inner/c.log");
    assert_bytes(&c.r[4], LOG_C, strlen(LOG_C));

    ck_assert_str_eq(c.r[5].member, "last.log");
    ck_assert_str_eq(c.r[5].container, "zip");
    assert_bytes(&c.r[5], LOG_B, strlen(LOG_B));
    collect_free(&c);
    free(big.p), free(gz.p), free(badgz.p), free(xz.p), free(inner.p);
}
END_TEST

/* tar in tar in tar in tar: three levels are opened, the fourth is delivered as bytes. */
START_TEST(test_input_nesting_depth_limit)
{
    entry e = {"deep.log", LOG_A, strlen(LOG_A), 'f'};
    write_archive(tpath("l4.tar"), FMT_USTAR, FLT_NONE, &e, 1);
    blob l4 = read_file(tpath("l4.tar"));
    entry e3 = {"l4.tar", l4.p, l4.n, 'f'};
    write_archive(tpath("l3.tar"), FMT_USTAR, FLT_NONE, &e3, 1);
    blob l3 = read_file(tpath("l3.tar"));
    entry e2 = {"l3.tar", l3.p, l3.n, 'f'};
    write_archive(tpath("l2.tar"), FMT_USTAR, FLT_NONE, &e2, 1);
    blob l2 = read_file(tpath("l2.tar"));
    entry e1 = {"l2.tar", l2.p, l2.n, 'f'};
    write_archive(tpath("l1.tar"), FMT_USTAR, FLT_NONE, &e1, 1);

    collect c = {0};
    oomscan_diag d;
    ck_assert_int_eq(scan(tpath("l1.tar"), &c, &d), OOMSCAN_OK);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_str_eq(c.r[0].member, "l2.tar/l3.tar/l4.tar");
    ck_assert_str_eq(c.r[0].container, "tar/tar/tar/tar");
    assert_bytes(&c.r[0], l4.p, l4.n);
    /* the source says it was not read as an archive, and why */
    ck_assert_msg(strstr(c.r[0].note, "nested deeper than 3 archives") && strstr(c.r[0].note, "--limit depth=3"),
                  "note: \"%s\"", c.r[0].note);
    collect_free(&c);
    /* a deeper limit reads l4.tar as the archive it is */
    input_limits deeper = {.max_depth = 4};
    collect c4 = {.lim = &deeper};
    ck_assert_int_eq(scan(tpath("l1.tar"), &c4, &d), OOMSCAN_OK);
    ck_assert_str_eq(c4.r[0].member, "l2.tar/l3.tar/l4.tar/deep.log");
    ck_assert_str_eq(c4.r[0].note, "");
    collect_free(&c4);
    free(l4.p), free(l3.p), free(l2.p);
}
END_TEST

/* Damaged things inside a tar: a bad .xz member is a failing source, a bad zip member is reported at
 * the end, and the members after them still come. A bad top-level .xz is a failing source too. */
START_TEST(test_input_damaged_nested_members)
{
    static const char badxz[] = "\xfd\x37\x7a\x58\x5a\x00 this is not xz data at all........";
    static const char badzip[] = "PK\x03\x04 then nothing sensible";
    entry ents[] = {
        {"bad.xz", badxz, sizeof badxz - 1, 'f'},
        {"bad.zip", badzip, sizeof badzip - 1, 'f'},
        {"good.log", LOG_A, strlen(LOG_A), 'f'},
    };
    write_archive(tpath("t.tar"), FMT_USTAR, FLT_NONE, ents, 3);
    collect c = {0};
    oomscan_diag d;
    ck_assert_int_eq(scan(tpath("t.tar"), &c, &d), OOMSCAN_ERR_FORMAT);
    ck_assert_msg(strncmp(d.msg, "bad.zip: ", 9) == 0, "%s", d.msg);
    ck_assert_str_eq(d.where, tpath("t.tar"));
    ck_assert_uint_eq(c.n, 2);
    ck_assert_str_eq(c.r[0].member, "bad.xz");
    ck_assert_str_eq(c.r[0].container, "tar/xz");
    ck_assert(c.r[0].failed);
    ck_assert(c.r[0].err[0] != 0);
    ck_assert_str_eq(c.r[1].member, "good.log");
    assert_bytes(&c.r[1], LOG_A, strlen(LOG_A));
    collect_free(&c);

    write_file(tpath("bad.xz"), badxz, sizeof badxz - 1);
    collect c2 = {0};
    ck_assert_int_eq(scan(tpath("bad.xz"), &c2, &d), OOMSCAN_OK);
    ck_assert_uint_eq(c2.n, 1);
    ck_assert_str_eq(c2.r[0].container, "xz");
    ck_assert(c2.r[0].failed);
    ck_assert(c2.r[0].again_failed);
    collect_free(&c2);
}
END_TEST

/* ---- damaged archives ------------------------------------------------------------------------- */

static size_t find_bytes(const blob *b, size_t from, const void *needle, size_t n)
{
    for (size_t i = from; i + n <= b->n; i++)
        if (memcmp(b->p + i, needle, n) == 0)
            return i;
    return (size_t)-1;
}

/* A zip cut inside its second member: the first stays delivered, the second fails, the input reports
 * libarchive's reason. A file with a zip signature and nothing else is a format error. */
START_TEST(test_input_corrupt_zip_keeps_earlier_members)
{
    blob big = make_log(200000, 10);
    entry ents[] = {{"a.log", LOG_A, strlen(LOG_A), 'f'}, {"b.log", big.p, big.n, 'f'}};
    write_archive(tpath("z.zip"), FMT_ZIP, FLT_NONE, ents, 2);
    blob z = read_file(tpath("z.zip"));
    write_file(tpath("bad.zip"), z.p, z.n / 2);
    collect c = {0};
    oomscan_diag d;
    oomscan_status st = scan(tpath("bad.zip"), &c, &d);
    ck_assert_uint_eq(c.n, 2);
    ck_assert_str_eq(c.r[0].member, "a.log");
    ck_assert(!c.r[0].failed);
    assert_bytes(&c.r[0], LOG_A, strlen(LOG_A));
    ck_assert_str_eq(c.r[1].member, "b.log");
    ck_assert(c.r[1].failed);
    ck_assert(c.r[1].err[0] != 0);
    ck_assert(c.r[1].data.n == 0 || memcmp(c.r[1].data.p, big.p, c.r[1].data.n) == 0);
    ck_assert_msg(st == OOMSCAN_ERR_FORMAT, "status %d", st);
    ck_assert_str_eq(d.where, tpath("bad.zip"));
    ck_assert_msg(d.msg[0] != 0, "no message");
    collect_free(&c);

    static const char sig[] = "PK\x03\x04 then nothing sensible";
    write_file(tpath("sig.zip"), sig, sizeof sig - 1);
    collect c2 = {0};
    ck_assert_int_eq(scan(tpath("sig.zip"), &c2, &d), OOMSCAN_ERR_FORMAT);
    ck_assert_uint_eq(c2.n, 0);
    ck_assert_str_eq(d.where, tpath("sig.zip"));
    ck_assert(d.msg[0] != 0);
    free(z.p), free(big.p);
}
END_TEST

/* A zip member whose CRC does not match fails alone; the next member still comes. */
START_TEST(test_input_zip_damaged_member_then_next)
{
    entry ents[] = {{"a.log", LOG_A, strlen(LOG_A), 'f'}, {"b.log", LOG_B, strlen(LOG_B), 'f'}};
    write_archive(tpath("z.zip"), FMT_ZIP, FLT_NONE, ents, 2);
    blob z = read_file(tpath("z.zip"));
    size_t dd = find_bytes(&z, 0, "PK\x07\x08", 4); /* a.log's data descriptor */
    ck_assert_uint_ne(dd, (size_t)-1);
    z.p[dd + 4] ^= 0xff;
    write_file(tpath("crc.zip"), z.p, z.n);
    collect c = {0};
    oomscan_diag d;
    ck_assert_msg(scan(tpath("crc.zip"), &c, &d) == OOMSCAN_OK, "%s", d.msg);
    ck_assert_uint_eq(c.n, 2);
    ck_assert(c.r[0].failed);
    ck_assert(c.r[0].err[0] != 0);
    ck_assert_str_eq(c.r[1].member, "b.log");
    ck_assert(!c.r[1].failed);
    assert_bytes(&c.r[1], LOG_B, strlen(LOG_B));
    collect_free(&c);
    free(z.p);
}
END_TEST

/* A tar.gz cut short: the first member comes whole, the cut one fails, the input reports why. */
START_TEST(test_input_truncated_tar_gz)
{
    blob big = make_log(800000, 11);
    entry ents[] = {{"a.log", LOG_A, strlen(LOG_A), 'f'}, {"big.log", big.p, big.n, 'f'}};
    write_archive(tpath("t.tgz"), FMT_USTAR, FLT_GZIP, ents, 2);
    blob t = read_file(tpath("t.tgz"));
    write_file(tpath("cut.tgz"), t.p, t.n / 2);
    collect c = {0};
    oomscan_diag d;
    oomscan_status st = scan(tpath("cut.tgz"), &c, &d);
    ck_assert_uint_eq(c.n, 2);
    assert_bytes(&c.r[0], LOG_A, strlen(LOG_A));
    ck_assert(c.r[1].failed);
    ck_assert_msg(strstr(c.r[1].err, "truncated gzip data (") != NULL, "%s", c.r[1].err);
    ck_assert_uint_gt(c.r[1].data.n, 100000);
    ck_assert(memcmp(c.r[1].data.p, big.p, c.r[1].data.n) == 0);
    ck_assert_int_eq(st, OOMSCAN_ERR_FORMAT);
    ck_assert_msg(strstr(d.msg, "truncated gzip data (") != NULL, "%s", d.msg);
    collect_free(&c);
    free(t.p), free(big.p);
}
END_TEST

/* ---- open errors, stdin, callback control ----------------------------------------------------- */

START_TEST(test_input_open_errors)
{
    collect c = {0};
    oomscan_diag d;
    ck_assert_int_eq(scan(tpath("missing.log"), &c, &d), OOMSCAN_ERR_IO);
    ck_assert_str_eq(d.where, tpath("missing.log"));
    ck_assert_str_eq(d.msg, "cannot open: No such file or directory");

    ck_assert_int_eq(scan(tmpdir, &c, &d), OOMSCAN_ERR_USAGE);
    ck_assert_str_eq(d.where, tmpdir);
    ck_assert_str_eq(d.msg, "cannot open: Is a directory");
    ck_assert_uint_eq(c.n, 0);

    if (geteuid() != 0) { /* root reads anything */
        write_file(tpath("secret.log"), "x", 1);
        chmod(tpath("secret.log"), 0);
        ck_assert_int_eq(scan(tpath("secret.log"), &c, &d), OOMSCAN_ERR_IO);
        ck_assert_str_eq(d.msg, "cannot open: Permission denied");
    }
}
END_TEST

/* Feed fd 0 from a pipe written by a child process (no mmap, no seeking possible). */
static void stdin_from_pipe(const void *data, size_t n)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[0]);
        const unsigned char *q = data;
        while (n > 0) {
            size_t step = n < 1000 ? n : 1000; /* small writes: the reader sees short reads */
            ssize_t w = write(p[1], q, step);
            if (w <= 0)
                _exit(1);
            q += w, n -= (size_t)w;
        }
        _exit(0);
    }
    close(p[1]);
    ck_assert_int_eq(dup2(p[0], 0), 0);
    close(p[0]);
}

START_TEST(test_input_stdin_plain_and_gzip)
{
    blob log = make_log(200000, 12);
    stdin_from_pipe(log.p, log.n);
    collect c = {0};
    oomscan_diag d;
    ck_assert_int_eq(scan("-", &c, &d), OOMSCAN_OK);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_str_eq(c.r[0].path, "<stdin>");
    ck_assert_str_eq(c.r[0].container, "text");
    assert_bytes(&c.r[0], log.p, log.n);
    collect_free(&c);
    wait(NULL);

    blob gz = gzip_mem(log.p, log.n, NULL);
    stdin_from_pipe(gz.p, gz.n);
    collect c2 = {0};
    ck_assert_int_eq(scan("-", &c2, &d), OOMSCAN_OK);
    ck_assert_str_eq(c2.r[0].container, "gzip");
    assert_bytes(&c2.r[0], log.p, log.n);
    collect_free(&c2);
    wait(NULL);

    /* a file dup'ed onto fd 0 works the same */
    entry ents[] = {{"a.log", LOG_A, strlen(LOG_A), 'f'}};
    write_archive(tpath("s.tar.zst"), FMT_USTAR, FLT_ZSTD, ents, 1);
    int fd = open(tpath("s.tar.zst"), O_RDONLY);
    ck_assert_int_eq(dup2(fd, 0), 0);
    close(fd);
    collect c3 = {0};
    ck_assert_int_eq(scan("-", &c3, &d), OOMSCAN_OK);
    ck_assert_uint_eq(c3.n, 1);
    ck_assert_str_eq(c3.r[0].path, "<stdin>");
    ck_assert_str_eq(c3.r[0].member, "a.log");
    ck_assert_str_eq(c3.r[0].container, "tar+zstd");
    assert_bytes(&c3.r[0], LOG_A, strlen(LOG_A));
    collect_free(&c3);
    free(log.p), free(gz.p);
}
END_TEST

START_TEST(test_input_open_fd_keeps_fd_open)
{
    blob gz = gzip_mem(LOG_A, strlen(LOG_A), NULL);
    write_file(tpath("x"), gz.p, gz.n);
    int fd = open(tpath("x"), O_RDONLY);
    collect c = {0};
    oomscan_diag d;
    diag_clear(&d);
    ck_assert_int_eq(input_open_fd(fd, "named", collect_cb, &c, &d), OOMSCAN_OK);
    ck_assert_str_eq(c.r[0].path, "named");
    assert_bytes(&c.r[0], LOG_A, strlen(LOG_A));
    ck_assert_int_ne(fcntl(fd, F_GETFD), -1);
    close(fd);
    collect_free(&c);
    free(gz.p);
}
END_TEST

START_TEST(test_input_callback_stops_and_partial_reads)
{
    entry ents[] = {
        {"a.log", LOG_A, strlen(LOG_A), 'f'}, {"b.log", LOG_B, strlen(LOG_B), 'f'}, {"c.log", LOG_C, strlen(LOG_C), 'f'}};
    write_archive(tpath("t.tar.gz"), FMT_USTAR, FLT_GZIP, ents, 3);

    /* Reading only 10 bytes of each member: the next one is still right. */
    collect c = {.chunk = 5, .read_limit = 10};
    oomscan_diag d;
    ck_assert_int_eq(scan(tpath("t.tar.gz"), &c, &d), OOMSCAN_OK);
    ck_assert_uint_eq(c.n, 3);
    assert_bytes(&c.r[2], LOG_C, 10);
    collect_free(&c);

    collect c2 = {.stop_after = 2};
    ck_assert_int_eq(scan(tpath("t.tar.gz"), &c2, &d), OOMSCAN_ERR_CANCELLED);
    ck_assert_uint_eq(c2.n, 2);
    ck_assert_str_eq(d.where, tpath("t.tar.gz"));
    collect_free(&c2);
}
END_TEST

static void teardown_readahead(void)
{
    input_set_readahead(0);
    teardown();
}

START_TEST(test_input_readahead_switch)
{
    ck_assert_int_eq(input_readahead_enabled(), 1);
    input_set_readahead(0);
    ck_assert_int_eq(input_readahead_enabled(), 0);
    input_set_readahead(1);
}
END_TEST


/* xz, zstd and bzip2 cut short deliver every byte that can be decoded before the cut, then fail with
 * the reason, as gzip does (libarchive's filters dropped their last block: a small log lost all). */
START_TEST(test_input_truncated_xz_zstd_bzip2_keep_prefix)
{
    blob log = make_log(400000, 9);
    static const struct {
        int flt;
        const char *kind;
        size_t cut;
        size_t min_kept; /* bytes that must come back: all but the block the cut fell into */
    } cases[] = {{FLT_XZ, "xz", 12, 400000}, {FLT_BZIP2, "bzip2", 4, 400000}, {FLT_ZSTD, "zstd", 12, 400000 - 131072}};
    for (size_t i = 0; i < 3; i++) {
        entry e = {"data", log.p, log.n, 'f'};
        write_archive(tpath("whole"), FMT_RAW, cases[i].flt, &e, 1);
        blob whole = read_file(tpath("whole"));
        write_file(tpath("cut"), whole.p, whole.n - cases[i].cut);
        collect c = {.chunk = 7000};
        oomscan_diag d;
        ck_assert_int_eq(scan(tpath("cut"), &c, &d), OOMSCAN_OK);
        ck_assert_uint_eq(c.n, 1);
        ck_assert_str_eq(c.r[0].container, cases[i].kind);
        ck_assert_msg(c.r[0].failed, "%s: no error", cases[i].kind);
        ck_assert(c.r[0].again_failed);
        ck_assert_msg(c.r[0].data.n >= cases[i].min_kept && c.r[0].data.n <= log.n, "%s: %zu bytes kept",
                      cases[i].kind, c.r[0].data.n);
        ck_assert_msg(memcmp(c.r[0].data.p, log.p, c.r[0].data.n) == 0, "%s: not a prefix", cases[i].kind);
        char want[128];
        snprintf(want, sizeof want, "truncated %s data (%zu bytes decoded)", cases[i].kind, c.r[0].data.n);
        ck_assert_msg(strcmp(c.r[0].err, want) == 0, "%s: \"%s\"", cases[i].kind, c.r[0].err);
        collect_free(&c);
        free(whole.p);
    }
    free(log.p);
}
END_TEST

/* Concatenated zstd frames and bzip2 streams decode as one, zero padding after them is ignored,
 * and damaged data names the decoder's reason after delivering what came before. */
START_TEST(test_input_zstd_bzip2_concatenated_and_corrupt)
{
    blob log = make_log(200000, 11);
    static const int flts[] = {FLT_ZSTD, FLT_BZIP2, FLT_XZ};
    static const char *kinds[] = {"zstd", "bzip2", "xz"};
    for (size_t i = 0; i < 3; i++) {
        entry e = {"data", log.p, log.n, 'f'};
        write_archive(tpath("one"), FMT_RAW, flts[i], &e, 1);
        blob one = read_file(tpath("one"));
        blob two = {0};
        blob_add(&two, one.p, one.n);
        blob_add(&two, one.p, one.n);
        blob_add(&two, "\0\0\0\0\0\0\0\0", 8);
        write_file(tpath("two"), two.p, two.n);
        collect c = {0};
        oomscan_diag d;
        ck_assert_int_eq(scan(tpath("two"), &c, &d), OOMSCAN_OK);
        ck_assert_msg(!c.r[0].failed, "%s: %s", kinds[i], c.r[0].err);
        ck_assert_uint_eq(c.r[0].data.n, 2 * log.n);
        collect_free(&c);
        /* garbage after the first stream: the first is kept, the reason is the decoder's */
        memset(two.p + one.n, 0x55, 64);
        write_file(tpath("two"), two.p, two.n);
        collect g = {0};
        ck_assert_int_eq(scan(tpath("two"), &g, &d), OOMSCAN_OK);
        ck_assert_msg(g.r[0].failed, "%s: garbage accepted", kinds[i]);
        ck_assert_msg(strncmp(g.r[0].err, "corrupt ", 8) == 0, "%s: \"%s\"", kinds[i], g.r[0].err);
        ck_assert_uint_ge(g.r[0].data.n, log.n);
        collect_free(&g);
        free(one.p);
        free(two.p);
    }
    free(log.p);
}
END_TEST

/* Past the decoded-bytes limit a source stops exactly at it, fails naming the limit, and no further
 * source of the input is delivered. */
START_TEST(test_input_limit_total_bytes)
{
    blob log = make_log(300000, 3);
    write_file(tpath("big.log"), log.p, log.n);
    input_limits lim = {.max_bytes = 100000};
    collect c = {.lim = &lim, .chunk = 4096};
    oomscan_diag d;
    ck_assert_int_eq(scan(tpath("big.log"), &c, &d), OOMSCAN_OK);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_uint_eq(c.r[0].data.n, 100000);
    ck_assert(c.r[0].failed);
    ck_assert_msg(strstr(c.r[0].err, "--limit bytes=100000"), "\"%s\"", c.r[0].err);
    collect_free(&c);
    /* in a tar: the member that crosses the limit fails, the next one is not delivered */
    entry e[] = {{"a.log", log.p, log.n, 'f'}, {"b.log", log.p, log.n, 'f'}};
    write_archive(tpath("two.tar"), FMT_USTAR, FLT_NONE, e, 2);
    lim.max_bytes = 400000;
    collect t = {.lim = &lim};
    ck_assert_int_eq(scan(tpath("two.tar"), &t, &d), OOMSCAN_OK);
    ck_assert_uint_eq(t.n, 2);
    ck_assert(!t.r[0].failed);
    ck_assert(t.r[1].failed);
    ck_assert_uint_eq(t.r[1].data.n, 100000);
    collect_free(&t);
    /* the defaults let it all through */
    collect all = {0};
    ck_assert_int_eq(scan(tpath("two.tar"), &all, &d), OOMSCAN_OK);
    ck_assert(!all.r[1].failed);
    collect_free(&all);
    free(log.p);
}
END_TEST

/* A compression bomb: 10 MB of zeros gzipped is ~10 KB; past ratio_after decoded bytes it may not
 * decode more than max_ratio times what was read. */
START_TEST(test_input_limit_ratio)
{
    size_t n = 10u << 20;
    unsigned char *zeros = calloc(1, n);
    blob gz = gzip_mem(zeros, n, NULL);
    write_file(tpath("zeros.gz"), gz.p, gz.n);
    input_limits lim = {.max_ratio = 100, .ratio_after = 1u << 20};
    collect c = {.lim = &lim};
    oomscan_diag d;
    ck_assert_int_eq(scan(tpath("zeros.gz"), &c, &d), OOMSCAN_OK);
    ck_assert(c.r[0].failed);
    ck_assert_msg(strstr(c.r[0].err, "--limit ratio=100") && strstr(c.r[0].err, "decompression bomb"), "\"%s\"",
                  c.r[0].err);
    ck_assert_uint_lt(c.r[0].data.n, n);
    ck_assert_uint_ge(c.r[0].data.n, 1u << 20);
    collect_free(&c);
    /* plain text is 1:1 and never trips it */
    write_file(tpath("zeros.txt"), zeros, 3u << 20);
    collect p = {.lim = &lim};
    ck_assert_int_eq(scan(tpath("zeros.txt"), &p, &d), OOMSCAN_OK);
    ck_assert(!p.r[0].failed);
    collect_free(&p);
    free(zeros);
    free(gz.p);
}
END_TEST

/* Archive entries are counted per input (directories and nested archives' entries too); past the
 * limit the input stops with OOMSCAN_ERR_LIMIT naming it, the members before are delivered. */
START_TEST(test_input_limit_members)
{
    entry e[20];
    char names[20][16];
    for (size_t i = 0; i < 20; i++) {
        snprintf(names[i], sizeof names[i], "m%02zu.log", i);
        e[i] = (entry){names[i], LOG_A, strlen(LOG_A), 'f'};
    }
    write_archive(tpath("many.tar"), FMT_USTAR, FLT_NONE, e, 20);
    input_limits lim = {.max_members = 5};
    collect c = {.lim = &lim};
    oomscan_diag d;
    ck_assert_int_eq(scan(tpath("many.tar"), &c, &d), OOMSCAN_ERR_LIMIT);
    ck_assert_uint_eq(c.n, 5);
    ck_assert_msg(strstr(d.msg, "--limit members=5") && strstr(d.where, "many.tar"), "%s: %s", d.where, d.msg);
    collect_free(&c);
    /* nested: the outer tar holds the 20-member one */
    blob inner = read_file(tpath("many.tar"));
    entry o = {"inner.tar", inner.p, inner.n, 'f'};
    write_archive(tpath("outer.tar"), FMT_USTAR, FLT_NONE, &o, 1);
    collect n = {.lim = &lim};
    ck_assert_int_eq(scan(tpath("outer.tar"), &n, &d), OOMSCAN_ERR_LIMIT);
    ck_assert_uint_eq(n.n, 4); /* the outer entry counts too */
    ck_assert_msg(strstr(d.msg, "--limit members=5"), "%s", d.msg);
    collect_free(&n);
    free(inner.p);
}
END_TEST

static Suite *input_suite(void)
{
    Suite *s = suite_create("input");
    TCase *tc = tcase_create("input");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    /* Tests that must behave the same with decompression in a read-ahead thread run in both cases. */
    const TTest *both[] = {
        test_input_gzip_large_odd_reads, test_input_gzip_concatenated_members_and_padding,
        test_input_gzip_truncated_delivers_prefix_then_error, test_input_gzip_corrupt_reports_decoder_message,
        test_input_single_compressed_zstd_xz_bzip2, test_input_archives_members_in_order,
        test_input_archive_without_libarchive_names_input_and_library,
        test_input_truncated_tar_gz, test_input_callback_stops_and_partial_reads,
        test_input_truncated_xz_zstd_bzip2_keep_prefix, test_input_zstd_bzip2_concatenated_and_corrupt,
        test_input_limit_total_bytes, test_input_limit_ratio,
    };
    tcase_add_test(tc, test_input_plain_text_exact_bytes);
    tcase_add_test(tc, test_input_empty_file_is_one_empty_source);
    tcase_add_test(tc, test_input_sniff_ignores_name_and_junk_is_text);
    tcase_add_test(tc, test_input_gzip_backend_name);
    tcase_add_test(tc, test_input_empty_zip_has_no_sources);
    tcase_add_test(tc, test_input_nested_members_are_decoded);
    tcase_add_test(tc, test_input_nesting_depth_limit);
    tcase_add_test(tc, test_input_damaged_nested_members);
    tcase_add_test(tc, test_input_corrupt_zip_keeps_earlier_members);
    tcase_add_test(tc, test_input_zip_damaged_member_then_next);
    tcase_add_test(tc, test_input_open_errors);
    tcase_add_test(tc, test_input_stdin_plain_and_gzip);
    tcase_add_test(tc, test_input_open_fd_keeps_fd_open);
    tcase_add_test(tc, test_input_limit_members);
    for (size_t i = 0; i < sizeof both / sizeof *both; i++)
        tcase_add_test(tc, both[i]);
    suite_add_tcase(s, tc);

    TCase *ra = tcase_create("input_readahead");
    tcase_add_checked_fixture(ra, setup_readahead, teardown_readahead);
    tcase_set_timeout(ra, 120);
    tcase_add_test(ra, test_input_readahead_switch);
    for (size_t i = 0; i < sizeof both / sizeof *both; i++)
        tcase_add_test(ra, both[i]);
    suite_add_tcase(s, ra);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(input_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
