/* membuf.h - output kept in memory by the command line: a scan's document to read a finding from, a
 * checklist page to render, a summary's inputs. Ownership: the caller owns `data` (free it). */
#ifndef OOMSCAN_CLI_MEMBUF_H
#define OOMSCAN_CLI_MEMBUF_H

#include <stddef.h>

typedef struct {
    char *data; /* NUL-terminated after the first write; NULL before */
    size_t len, cap;
} membuf;

/* An oomscan_write_fn appending to the membuf `ud`. Returns 0, or 1 when memory ran out. */
int membuf_write(void *ud, const char *data, size_t len);

#endif
