/* decode.h - streaming xz, zstd and bzip2 decoders over a read callback (liblzma, libzstd, libbz2).
 *
 * Ownership: dec_new() returns a reader the caller frees with dec_free() (NULL-safe). The reader owns
 * its input buffer and decoder state; the callback's `ud` stays the caller's.
 *
 * Why not libarchive's filters: they decode into their own block and drop it on an error, so a stream
 * cut short lost its last 64 KiB or more (a small log: everything), where the failure usually is.
 * Here every byte the decoder can produce is delivered before the error, as gz.c does for gzip:
 * concatenated streams/frames decode as one; zero bytes after the last one are ignored; a stream cut
 * short fails with "truncated <kind> data (N bytes decoded)", damaged data with "corrupt <kind> data:
 * <reason>". */
#ifndef OOMSCAN_DECODE_H
#define OOMSCAN_DECODE_H

#include <stdint.h>
#include <sys/types.h>

#include "input/gz.h" /* gz_read_fn: the same pull callback */

typedef enum { DEC_XZ, DEC_ZSTD, DEC_BZIP2 } dec_kind;

typedef struct dec_reader dec_reader;

/* A reader of kind `k` over `rd`. NULL when out of memory. */
dec_reader *dec_new(dec_kind k, gz_read_fn rd, void *ud);

/* Decode up to `cap` bytes into `buf`: >0, 0 at the clean end, -1 on error (see dec_error()); after
 * -1 every call returns -1. */
ssize_t dec_read(dec_reader *d, void *buf, size_t cap);

/* Why the last dec_read() failed, or NULL. Borrowed, valid until dec_free(). */
const char *dec_error(const dec_reader *d);

/* True when the failure came from the read callback rather than from the data. */
int dec_failed_on_read(const dec_reader *d);

/* Release the reader. NULL-safe. */
void dec_free(dec_reader *d);

#endif
