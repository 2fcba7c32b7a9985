/* status.c - diagnostics helpers. */
#include "base/status.h"

#include <stdio.h>
#include <string.h>

oomscan_status diag_set(oomscan_diag *d, oomscan_status st, const char *where, const char *fmt, ...)
{
    if (!d)
        return st;
    d->status = st;
    snprintf(d->where, sizeof d->where, "%s", where ? where : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
    return st;
}

void diag_clear(oomscan_diag *d)
{
    if (d)
        memset(d, 0, sizeof *d);
}

const char *status_name(oomscan_status st)
{
    switch (st) {
    case OOMSCAN_OK: return "ok";
    case OOMSCAN_ERR_NOMEM: return "out of memory";
    case OOMSCAN_ERR_IO: return "I/O error";
    case OOMSCAN_ERR_FORMAT: return "corrupt or unsupported data";
    case OOMSCAN_ERR_PATTERN: return "pattern error";
    case OOMSCAN_ERR_USAGE: return "usage error";
    case OOMSCAN_ERR_LIMIT: return "limit reached";
    case OOMSCAN_ERR_CANCELLED: return "cancelled";
    }
    return "unknown status";
}
