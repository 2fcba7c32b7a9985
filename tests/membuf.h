/* membuf.h - a scanner read callback over a string in memory, for the Check suites that feed real log
 * lines through scanner_run. The caller owns `data`; the reader only advances `pos`. */
#ifndef OOMSCAN_TEST_MEMBUF_H
#define OOMSCAN_TEST_MEMBUF_H

#include <string.h>
#include <sys/types.h>

typedef struct {
    const char *data;
    size_t len, pos;
} membuf;

static inline ssize_t mem_read(void *ud, void *buf, size_t cap)
{
    membuf *m = ud;
    size_t n = m->len - m->pos < cap ? m->len - m->pos : cap;
    memcpy(buf, m->data + m->pos, n);
    m->pos += n;
    return (ssize_t)n;
}

#endif
