/* oomscan_status.h - status codes and the diagnostics record shared by the library and its callers.
 * Ownership: an oomscan_diag is a plain struct the caller owns; nothing in it is heap memory. */
#ifndef OOMSCAN_STATUS_PUBLIC_H
#define OOMSCAN_STATUS_PUBLIC_H

typedef enum {
    OOMSCAN_OK = 0,
    OOMSCAN_ERR_NOMEM,     /* an allocation failed */
    OOMSCAN_ERR_IO,        /* open/read/write failed (errno text in the diag) */
    OOMSCAN_ERR_FORMAT,    /* corrupt or truncated container, malformed data file */
    OOMSCAN_ERR_PATTERN,   /* a pattern failed to compile or a sample failed */
    OOMSCAN_ERR_USAGE,     /* bad argument from the caller */
    OOMSCAN_ERR_LIMIT,     /* a safety limit was hit (nesting depth, member count) */
    OOMSCAN_ERR_CANCELLED  /* the caller's callback asked to stop */
} oomscan_status;

#define OOMSCAN_DIAG_MSG 512

/* One error: what went wrong and where. `where` names the input, data file or pattern id. */
typedef struct {
    oomscan_status status;
    char where[256];
    char msg[OOMSCAN_DIAG_MSG];
} oomscan_diag;

#endif
