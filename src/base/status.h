/* status.h - internal status codes and the diagnostics record.
 * Ownership: a diag is a plain struct the caller owns (stack or embedded); nothing in it is heap memory.
 * The public header re-exports these as oomscan_status / oomscan_diag. */
#ifndef OOMSCAN_STATUS_H
#define OOMSCAN_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#include "oomscan_status.h"

/* Fill `d` (if not NULL) and return `st`. `where` may be NULL. */
oomscan_status diag_set(oomscan_diag *d, oomscan_status st, const char *where, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Clear a diag to OK. */
void diag_clear(oomscan_diag *d);

/* Human name of a status ("out of memory", "I/O error", ...). */
const char *status_name(oomscan_status st);

#endif
