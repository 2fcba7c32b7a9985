/* source.h - one source being scanned (a file, an archive member, a live stream): its names, the
 * context they give (job id, rank, host), and where a resumed scan starts.
 *
 * Ownership: the caller's; the scanner and classifier borrow it for a run. */
#ifndef OOMSCAN_SOURCE_H
#define OOMSCAN_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/timefmt.h"

typedef struct {
    const char *path;   /* outer input name */
    const char *member; /* archive member or NULL */
    size_t input;       /* top-level input index (ordering) */
    char job_id[32];    /* from the name (slurm-<job>.out, %A_%a) or "" */
    char rank[16];      /* from the name (rank3.log) or "" */
    char host[96];      /* from the name (node12/..., a Ray node's IP folder) or "" */
    char pid[24];       /* from the name (a Ray worker's log) or "" */
    char ray_job[48];   /* from the name: a Ray job id or submission id, or "" */
    /* Resuming part-way (stream.c, state.c); all zero for a whole source. */
    uint64_t base_offset, base_line; /* stream offset and lines before the first byte read */
    const timefmt *time0; /* the last stamp seen before base_offset, or NULL */
    uint64_t time0_end;   /* stream offset of the end of time0's line: it is lent past the cut only to a
                           * record that line begins (classify.c) */
    int eager;          /* a live stream: scan after every read instead of filling a large chunk */
    int decoder_thread; /* its bytes are decoded in a thread of their own (input_source_info): that
                         * thread takes a core the scanner's helper would otherwise have */
    int keep_time;      /* the caller reads scan_result.last_time (a resumed scan's context, state.c):
                         * the stamps of the lines after the last failure are read too. Otherwise they
                         * are not: nothing would use them (in a rank file with no failure and no
                         * stamp, reading them was a sixth of its cost) */
    /* Read n bytes of the source again from stream offset `off` into buf: n, or -1 when they cannot
     * be had (input_pread). A regular file's: the settings windows then read the bytes before a
     * failure from it instead of keeping a copy of them (scan_windows.c, window_read). NULL: none. */
    ssize_t (*reread)(void *ud, void *buf, size_t n, uint64_t off);
    void *reread_ud;
} scan_source;

#endif
