/* memsnap_site.h - (internal to src/dumps/memsnap*.c) the frames of a memory snapshot's stacks and the
 * allocation site each stack is charged to: the innermost frame of the user's own code, never an
 * allocator, unwinder, dispatcher or interpreter frame (docs/inputs.md, "Memory snapshots").
 *
 * Ownership: a site_table owns its sites (their text and frames) until site_table_clear; the refs it
 * remembers point into the pickle_doc being read, which the caller keeps alive while it reads. */
#ifndef OOMSCAN_DUMPS_MEMSNAP_SITE_H
#define OOMSCAN_DUMPS_MEMSNAP_SITE_H

#include <stdint.h>

#include "dumps/common.h"

#define SNAP_FRAMES 8
#define SNAP_MAX_SITES (1u << 16) /* distinct sites kept; beyond, "(other sites)" */

/* What a frame is, remembered by its ref for frames that stay (pickle_permanent: PyTorch shares each
 * frame dict between every stack that holds it, so most are): 1 a Python frame outside torch's
 * package, 2 one inside it, 3 not Python; 0 not known. Looking at the file name of each frame of every
 * allocation was a sixth of a long trace's reading. */
typedef struct {
    uint8_t *c;
    size_t n;
} frame_kinds;


typedef struct {
    char *key;     /* "name (file:line)", or a placeholder in parentheses */
    char *name, *file;
    double line;
    uint64_t hash;
    cJSON *frames; /* the user-side frames of the first allocation seen there */
} site_t;


/* Sites by their text (open addressing: a snapshot of 30,000 blocks at distinct sites must not
 * compare each with every other). */
typedef struct {
    site_t *s;
    size_t n, cap;
    uint32_t *slot; /* id + 1, 0 empty */
    size_t nslot;
    frame_kinds kinds; /* python_frame's memory of each shared frame */
    uint32_t *fsite;   /* the site of a shared Python frame by its ref (id + 1, 0 unknown): a site is
                        * then found without hashing and comparing its name and file at each event */
    size_t nfsite;
    /* stacks without a Python frame, by a hash of their frames' text: their site needs the machinery
     * test of every frame, which a long trace would otherwise pay at every allocation */
    uint64_t *ckey;
    uint32_t *cval; /* id + 1, 0 empty */
    size_t ncache, ccap;
} site_table;


/* The frames list of block b: its "frames", or the first "history" entry's (PyTorch 2.0). */
pickle_ref block_frames(const pickle_doc *d, pickle_ref b);

/* `frames` as [{"filename","line","name"}] (at most `max`, 0 = all), innermost first, for
 * dumps_traceback; NULL out of memory. */
cJSON *frames_json(const pickle_doc *d, pickle_ref frames, size_t max);

/* The id of the site `frames` is charged to, added to `t` when new (its frames kept as JSON): found by
 * the charged frame's name, file and line, no text formatted for a site already known. UINT32_MAX out
 * of memory. */
uint32_t site_of(site_table *t, const pickle_doc *d, pickle_ref frames);

/* Free every site of t and leave it empty. */
void site_table_clear(site_table *t);

#endif
