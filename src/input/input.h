/* input.h - opening log containers as streams of decoded bytes, one "source" at a time.
 *
 * A path (or stdin) is sniffed from its first bytes, never its name: plain text; gzip (concatenated
 * members too); zstd, xz, bzip2; tar in any of those compressions; zip. Each archive member is its own
 * source; a compressed file inside an archive is decoded too (bounded nesting). Everything streams:
 * memory does not depend on input size. Work is bounded too (input_limits): past a limit the source
 * fails with a message naming the limit, and what was read before stays.
 *
 * Ownership: input_open_path() returns nothing to free; it calls `fn` once per source with a borrowed
 * stream that is valid only during the call. The callback reads the stream to the end (or stops early)
 * and returns; the input module closes it. Directories are NOT handled here (the caller walks them). */
#ifndef OOMSCAN_INPUT_H
#define OOMSCAN_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#include "base/status.h"

typedef struct input_stream input_stream;

typedef struct {
    const char *path;      /* the outer input as the user named it ("-" is shown as "<stdin>") */
    const char *member;    /* path inside the archive, NULL for a plain or singly compressed file */
    const char *container; /* what was sniffed: "text", "gzip", "zstd", "xz", "bzip2", "tar", "tar+gzip", "zip", ... */
    int decoder_thread;    /* its bytes are decoded in a thread of their own (a compressed regular file's
                            * read-ahead), which keeps a core busy while the source is read */
} input_source_info;

/* Bounds on the work one input may cause (docs/reliability.md). 0 in a field means its default. */
typedef struct {
    uint64_t max_bytes;   /* decoded bytes delivered from one input; default 64 GiB */
    uint64_t max_ratio;   /* decoded bytes per byte read, checked past ratio_after; default 1000 */
    uint64_t ratio_after; /* default 64 MiB: small bombs are cheap, real logs compress ~10-50:1 */
    uint64_t max_members; /* archive entries in one input, nested ones included; default 100000 */
    unsigned max_depth;   /* archives inside archives; a deeper one is scanned as raw bytes; default 3 */
    /* Set (from a signal handler) to stop: the source being read fails with "interrupted", a blocked
     * read() that a signal interrupts returns, and no further source is delivered. NULL: none. */
    const volatile sig_atomic_t *stop;
} input_limits;

#define INPUT_MAX_BYTES_DEFAULT (64ull << 30)
#define INPUT_MAX_RATIO_DEFAULT 1000u
#define INPUT_RATIO_AFTER_DEFAULT (64ull << 20)
#define INPUT_MAX_MEMBERS_DEFAULT 100000u
#define INPUT_MAX_DEPTH_DEFAULT 3u

/* Per-source callback. Return 0 to go on with the next member, non-zero to stop the whole input
 * (input_open_path then returns OOMSCAN_ERR_CANCELLED). */
typedef int (*input_source_fn)(void *ud, const input_source_info *info, input_stream *s);

/* Read up to `cap` decoded bytes. Returns >0 bytes, 0 at the clean end of the source, -1 on error
 * (truncated or corrupt data, read error): the reason is then in input_stream_error(). Bytes delivered
 * before an error stay valid; after -1 every further call returns -1. */
ssize_t input_read(input_stream *s, void *buf, size_t cap);

/* The reason for the last -1 from input_read(), or NULL. Borrowed, valid until the stream is closed. */
const char *input_stream_error(const input_stream *s);

/* Why this source, though read without error, was not read as what it is (an archive nested past the
 * depth limit is scanned as raw bytes), or NULL. Borrowed, valid until the stream is closed. */
const char *input_stream_note(const input_stream *s);

/* Whether the source's bytes can be read again by offset: a regular file read as plain text (not a
 * pipe, not a decoded or archived source). input_pread then reads n bytes from stream offset `off`
 * (the file's own) into buf and returns n; -1 on an error or when fewer bytes are there (the file
 * shrank), and always for a source that input_can_pread refuses. */
int input_can_pread(const input_stream *s);
ssize_t input_pread(input_stream *s, void *buf, size_t n, uint64_t off);

/* Open `path` ("-" = standard input) and call `fn` for each source in it, in archive order.
 * Errors that stop the whole input (cannot open, corrupt archive header, unsupported format) are
 * returned with `diag` filled: `where` is the path, `msg` the reason. An error inside one member is
 * reported through that member's stream (input_read -1) and the next member is still tried when the
 * container allows it. A directory path is an error (OOMSCAN_ERR_USAGE). */
oomscan_status input_open_path(const char *path, input_source_fn fn, void *ud, oomscan_diag *diag);

/* input_open_path under `lim` (NULL: the defaults). A limit that stops the whole input (too many
 * members) returns OOMSCAN_ERR_LIMIT with `diag` naming it; one that stops a source's bytes fails that
 * source's stream (input_read -1) with the limit in input_stream_error(), and no further source of the
 * input is delivered. */
oomscan_status input_open_limited(const char *path, const input_limits *lim, input_source_fn fn, void *ud,
                                  oomscan_diag *diag);

/* Same for an already open file descriptor, named `name` in messages; the fd is not closed. */
oomscan_status input_open_fd(int fd, const char *name, input_source_fn fn, void *ud, oomscan_diag *diag);

/* input_open_fd under `lim` (NULL: the defaults) when the caller already read the first `n` bytes of
 * fd into `head` (borrowed for the call): they are delivered first, then the rest of fd. For a live
 * stream that found compressed data in its first read (a gzip file through a pipe). */
oomscan_status input_open_fd_after(int fd, const char *name, const void *head, size_t n, const input_limits *lim,
                                   input_source_fn fn, void *ud, oomscan_diag *diag);

/* What the first `n` bytes of a source announce: "text" (none of the below), "gzip", "zstd", "xz",
 * "bzip2", "tar" (needs 512 bytes) or "zip". The sniffer input_open_path uses, for callers that read
 * bytes themselves (a live stream, --state's check for a plain file). */
const char *input_sniff(const void *head, size_t n);

/* The gzip implementation compiled in: "isa-l" or "zlib". */
const char *input_gzip_backend(void);

/* open(2) that also reaches a path longer than PATH_MAX (ENAMETOOLONG), one folder at a time with
 * openat: a log under deep folders was skipped. `flags` as open's; the fd is the caller's. -1 with errno
 * on failure. */
int input_open_long(const char *path, int flags);

/* stat(2), or lstat(2) when `nofollow`, of a path longer than PATH_MAX too (its folder opened with
 * input_open_long, then fstatat). 0, or -1 with errno. */
struct stat;
int input_stat_long(const char *path, struct stat *sb, int nofollow);

#endif
