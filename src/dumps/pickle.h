/* pickle.h - a small, safe reader for the subset of Python's pickle format that PyTorch's dumps use
 * (the NCCL flight recorder, CUDA memory snapshots): dicts, lists, tuples, str, bytes, ints, floats,
 * bools, None, the memo, FRAME; protocols 2 to 5.
 *
 * Nothing is ever constructed from the file and no code is run: GLOBAL, STACK_GLOBAL, REDUCE, BUILD,
 * INST, OBJ, NEWOBJ, PERSID, EXT and buffers are errors, as is anything unknown. Sizes (input, nodes,
 * strings) and nesting depth are bounded; a truncated or hostile pickle is an error with a reason and
 * the byte offset.
 *
 * Values become a cJSON tree: dict -> object (keys that are not strings are written as their JSON
 * text), list and tuple -> array, str -> string, bytes -> string (bytes as Latin-1 code points are not
 * needed: they are kept as-is when printable, else "<N bytes>"), int -> number (exact to 2^53),
 * float -> number, bool -> true/false, None -> null. A memo GET copies the memoised value (the node
 * budget bounds the copies).
 *
 * Ownership: pickle_decode() gives the caller a tree to free with cJSON_Delete(); nothing else is kept. */
#ifndef OOMSCAN_PICKLE_H
#define OOMSCAN_PICKLE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/status.h"

typedef struct {
    size_t max_input;  /* bytes of pickle accepted */
    size_t max_nodes;  /* values created in all (copies included) */
    size_t max_string; /* bytes in one str/bytes value */
    unsigned max_depth; /* nesting of containers (and of MARKs) */
} pickle_limits;

/* The limits used when `lim` is NULL: 256 MiB input, 16 M nodes, 64 MiB strings, depth 64. */
extern const pickle_limits pickle_default_limits;

/* Decode the pickle in p[0..n). OOMSCAN_OK and *out set; else *out NULL, `diag` says why and where
 * ("byte 1234: GLOBAL refused: ..."), status OOMSCAN_ERR_FORMAT (malformed, truncated, refused
 * opcode), OOMSCAN_ERR_LIMIT (a bound hit) or OOMSCAN_ERR_NOMEM. */
oomscan_status pickle_decode(const unsigned char *p, size_t n, const pickle_limits *lim, cJSON **out,
                             oomscan_diag *diag);

/* 1 if p[0..n) starts like a pickle of protocol 2-5 (PROTO opcode, then FRAME or a container). */
int pickle_sniff(const unsigned char *p, size_t n);

#endif
