/* input_readahead.h - an optional read-ahead thread for compressed inputs: the decoder runs in its own
 * thread and hands decoded bytes to the reader through a small ring of buffers, so decompression and
 * scanning overlap on two cores.
 *
 * Ownership: input_ra_start() returns a handle the caller ends with input_ra_stop() (NULL-safe),
 * which also joins the thread. The pull function and its `ud` stay the caller's; after start they are
 * used only by the read-ahead thread, until input_ra_stop() returns. */
#ifndef OOMSCAN_INPUT_READAHEAD_H
#define OOMSCAN_INPUT_READAHEAD_H

#include <stddef.h>
#include <sys/types.h>

#define READAHEAD_SLOTS 4
#define READAHEAD_SLOT_SIZE (128u * 1024u) /* 512 KiB in all: the peak RSS budget is 16 MiB */

/* Process-wide switch, on by default; set it once before scanning (e.g. from the CLI). Thread-safe. */
void input_set_readahead(int on);
int input_readahead_enabled(void);

/* Pull up to `cap` bytes: >0, 0 at the end, -1 on error with the reason in err[0..errcap). */
typedef ssize_t (*input_ra_pull_fn)(void *ud, void *buf, size_t cap, char *err, size_t errcap);

typedef struct input_ra input_ra;

/* Start a thread that calls `pull` until the end, an error or input_ra_stop(). NULL when memory or a
 * thread cannot be had: the caller then reads synchronously. */
input_ra *input_ra_start(input_ra_pull_fn pull, void *ud);

/* Same contract as the pull function, served from the ring: bytes come out in order, then the end or
 * the error exactly as the pull function reported it. */
ssize_t input_ra_read(input_ra *r, void *buf, size_t cap, char *err, size_t errcap);

/* Stop the thread (it finishes its current pull first), join it, free everything. NULL-safe. */
void input_ra_stop(input_ra *r);

#endif
