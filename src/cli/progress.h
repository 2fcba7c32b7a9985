/* progress.h - the command's progress line on a terminal: bytes scanned of the total, throughput and
 * time left, drawn only after a second of work, redrawn in place on stderr at most five times a second
 * and erased when the scan ends.
 * Part of the command, not the library (the library never prints): main.c decides when it is wanted
 * (stderr is a terminal, not --quiet) and hands progress_update to oomscan_options.on_progress.
 *
 * Ownership: one process-wide display; progress_begin/progress_end bracket one scan. The update
 * function may be called from any scanning thread. */
#ifndef OOMSCAN_PROGRESS_H
#define OOMSCAN_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Start a display on `out` for a scan of these paths; the total is the sum of their sizes on disk
 * (directories walked). Compressed inputs (told by their first bytes) inflate past their size: then
 * no share or time left is shown, only decoded bytes and throughput. */
void progress_begin(FILE *out, const char *const *paths, size_t n);

/* oomscan_progress_fn: `bytes_done` is the bytes read so far of the calling thread's current input. */
void progress_update(void *ud, uint64_t bytes_done);

/* Erase the line (if one was drawn) so the report starts on a clean line. */
void progress_end(void);

#endif
