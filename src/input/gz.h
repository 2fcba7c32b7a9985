/* gz.h - streaming gzip decoder over a read callback (ISA-L igzip when OOMSCAN_HAVE_ISAL, else zlib).
 *
 * Ownership: gz_new() returns a reader the caller frees with gz_free() (NULL-safe). The reader owns
 * its input buffer and decoder state; the callback's `ud` stays the caller's. Memory is constant
 * (one GZ_IN_BUF input buffer plus the decoder state), whatever the size of the stream.
 *
 * Behaviour: concatenated members decode as one stream; zero bytes after the last member (tape or
 * block padding) are ignored; a stream cut short delivers every byte that can be decoded and then
 * fails with "truncated gzip data (N bytes decoded)"; damaged data fails with
 * "corrupt gzip data: <decoder message>". */
#ifndef OOMSCAN_GZ_H
#define OOMSCAN_GZ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Size of the compressed-input buffer: large, so the decoder runs long stretches per call. */
#define GZ_IN_BUF (256u * 1024u)

/* Pull up to `cap` compressed bytes into `buf`: >0 bytes, 0 at end of input, -1 on a read error. */
typedef ssize_t (*gz_read_fn)(void *ud, void *buf, size_t cap);

typedef struct gz_reader gz_reader;

/* A reader over `rd`. NULL when out of memory. */
gz_reader *gz_new(gz_read_fn rd, void *ud);

/* Decode up to `cap` bytes straight into `buf`. Returns >0, 0 at the clean end of the last member,
 * -1 on error (see gz_error()); after -1 every call returns -1. A -1 from the read callback is
 * reported as "read error" (the caller knows the real reason). */
ssize_t gz_read(gz_reader *g, void *buf, size_t cap);

/* Why the last gz_read() failed, or NULL. Borrowed, valid until gz_free(). */
const char *gz_error(const gz_reader *g);

/* True when the failure came from the read callback rather than from the data. */
int gz_failed_on_read(const gz_reader *g);

/* Total decoded bytes delivered so far, across members. */
uint64_t gz_total_out(const gz_reader *g);

/* Release the reader. NULL-safe. */
void gz_free(gz_reader *g);

/* "isa-l" or "zlib". */
const char *gz_backend(void);

#endif
