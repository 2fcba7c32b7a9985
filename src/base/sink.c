/* sink.c - printf-style writing to a byte sink. */
#include "base/sink.h"

#include <stdio.h>
#include <stdlib.h>

void sink_write(sink *s, const char *data, size_t len)
{
    if (!s->failed && s->fn(s->ud, data, len) != 0)
        s->failed = 1;
}

void sink_vprintf(sink *s, const char *fmt, va_list ap)
{
    if (s->failed)
        return;
    /* Most pieces are a line or less: a stack buffer; a longer one is formatted again on the heap
     * rather than cut, since a cut piece would silently lose the end of a report line. */
    char buf[1024];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    if (n < 0) {
        va_end(again);
        return; /* an encoding error writes nothing, as the copies this replaces did */
    }
    if ((size_t)n < sizeof buf) {
        va_end(again);
        sink_write(s, buf, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        va_end(again);
        s->failed = 1;
        return;
    }
    vsnprintf(big, (size_t)n + 1, fmt, again);
    va_end(again);
    sink_write(s, big, (size_t)n);
    free(big);
}

void sink_printf(sink *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sink_vprintf(s, fmt, ap);
    va_end(ap);
}
