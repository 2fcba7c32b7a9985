/* sink.h - printf-style writing to a byte sink (a write callback such as oomscan_write_fn), for the
 * writers that build their output one formatted piece at a time.
 *
 * Ownership: a sink is a plain struct the caller owns (usually on the stack); it borrows fn and ud.
 * Nothing it does is kept after a call returns. */
#ifndef OOMSCAN_SINK_H
#define OOMSCAN_SINK_H

#include <stdarg.h>
#include <stddef.h>

/* The callback's shape: oomscan_write_fn's. Nonzero means the output failed. */
typedef int (*sink_fn)(void *ud, const char *data, size_t len);

typedef struct {
    sink_fn fn;
    void *ud;
    int failed; /* the callback failed, or memory ran out: nothing more is written */
} sink;

/* Format and write the whole result, however long, in one call of fn. After a failure every call
 * is a no-op, so a writer checks `failed` once, at its end. */
void sink_printf(sink *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void sink_vprintf(sink *s, const char *fmt, va_list ap);

/* Write data[0..len) as it is (the same rules as sink_printf). */
void sink_write(sink *s, const char *data, size_t len);

#endif
