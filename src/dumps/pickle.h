/* pickle.h - a small, safe reader for the subset of Python's pickle format that PyTorch's dumps use
 * (the NCCL flight recorder, CUDA memory snapshots): dicts, lists, tuples, str, bytes, ints, floats,
 * bools, None, the memo, FRAME; protocols 2 to 5.
 *
 * Nothing is ever constructed from the file and no code is run: GLOBAL, STACK_GLOBAL, REDUCE, BUILD,
 * INST, OBJ, NEWOBJ, PERSID, EXT and buffers are errors, as is anything unknown. Sizes and nesting
 * are bounded; a truncated or hostile pickle is an error with a reason and the byte offset.
 *
 * Values live in one arena (a pickle_doc) and are named by a pickle_ref. A memo fetch or DUP is a
 * second reference to the same value, never a copy, as in Python: PyTorch's snapshots share each
 * frame list between the block and its trace events, and the flight recorder's C++ pickler memoises
 * repeated strings. Values are reference-counted; when the whole input can be read twice (a file, or
 * memory) a first quick pass counts how often each memo entry is fetched, so the memo lets a value go
 * after its last fetch. Lists inside root[stream_key] can be streamed: each item is handed to a
 * callback as it is appended and then dropped, so a long CUDA memory trace is never held whole.
 *
 * Budgets count live values (max_nodes) and live bytes (max_bytes: values, item arrays, strings).
 * pickle_to_json() expands shared values into a cJSON tree (copies); it charges every node and byte
 * of that tree, refuses a value that contains itself, and is bounded further by 64 MiB plus eight
 * times the pickle's size, so a small pickle cannot ask for a large tree.
 *
 * dict -> object (keys that are not strings are written as their JSON text), list and tuple -> array,
 * str -> string, bytes -> string (kept as-is when printable, else "<N bytes>"), int -> number (exact
 * to 2^53; wider than 8 bytes: approximate), float -> number (inf/nan: null), bool, None -> null.
 *
 * Ownership: a pickle_doc belongs to whoever parsed it (pickle_doc_free, NULL-safe); pickle_refs and
 * the strings pickle_str() returns are borrowed from it and valid until it is freed (a streamed
 * item: until the callback returns). pickle_decode() and pickle_to_json() give the caller a tree to
 * free with cJSON_Delete(). */
#ifndef OOMSCAN_PICKLE_H
#define OOMSCAN_PICKLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "base/status.h"

typedef struct {
    size_t max_input;   /* bytes of pickle accepted */
    size_t max_nodes;   /* values held at once; and nodes of a tree pickle_to_json() builds */
    size_t max_bytes;   /* bytes held at once (values, item arrays, strings); and a built tree's */
    size_t max_string;  /* bytes in one str/bytes value */
    unsigned max_depth; /* nesting of containers (and of MARKs) */
} pickle_limits;

/* The limits used when `lim` is NULL: 4 GiB input, 64 M values and 1 GiB held at once, 64 MiB
 * strings, depth 64. */
extern const pickle_limits pickle_default_limits;

typedef uint32_t pickle_ref; /* 0: no value */
typedef enum { PK_INVALID = 0, PK_NONE, PK_BOOL, PK_INT, PK_FLOAT, PK_STR, PK_BYTES, PK_LIST, PK_DICT } pickle_type;
typedef struct pickle_doc pickle_doc;

/* The stream: >0 bytes read, 0 at its end, <0 an error. */
typedef ssize_t (*pickle_read_fn)(void *ud, void *buf, size_t cap);
/* The same stream again: n bytes from offset `off`, returning n, or -1. */
typedef ssize_t (*pickle_reread_fn)(void *ud, void *buf, size_t n, uint64_t off);
/* A streamed item of list number `list` (its index in root[stream_key]); non-zero stops the parse. */
typedef int (*pickle_item_fn)(void *ud, const pickle_doc *d, size_t list, pickle_ref item);

typedef struct {
    pickle_read_fn read;     /* required */
    void *read_ud;
    pickle_reread_fn reread; /* optional: with it the memo is counted first and values are let go */
    void *reread_ud;
    const char *stream_key;  /* optional: root[stream_key] is a list of lists whose items go to `item` */
    pickle_item_fn item;
    void *item_ud;
} pickle_input;

/* Parse a pickle read from `in` (the stream is read to its STOP opcode, not beyond). OOMSCAN_OK and
 * *out set; else *out NULL and `diag` says why and where ("byte 1234: GLOBAL refused: ..."):
 * OOMSCAN_ERR_FORMAT (malformed, truncated, refused opcode, a read error, a callback's stop),
 * OOMSCAN_ERR_LIMIT (a bound hit) or OOMSCAN_ERR_NOMEM. */
oomscan_status pickle_parse(const pickle_input *in, const pickle_limits *lim, pickle_doc **out, oomscan_diag *diag);

/* The same for the pickle in p[0..n) (read twice, so the memo is counted). */
oomscan_status pickle_parse_mem(const unsigned char *p, size_t n, const pickle_limits *lim, pickle_doc **out,
                                oomscan_diag *diag);

void pickle_doc_free(pickle_doc *d);

/* Bytes of pickle read (to the STOP opcode), values and bytes held at the peak. */
void pickle_doc_stats(const pickle_doc *d, uint64_t *input, size_t *peak_nodes, size_t *peak_bytes);

/* Reading values: every function takes any ref (0 or of the wrong type gives 0 / NULL / dflt). */
pickle_ref pickle_root(const pickle_doc *d);
pickle_type pickle_type_of(const pickle_doc *d, pickle_ref v);
size_t pickle_len(const pickle_doc *d, pickle_ref v);               /* list items, dict pairs, str bytes */
pickle_ref pickle_item(const pickle_doc *d, pickle_ref list, size_t i);
pickle_ref pickle_dict_key(const pickle_doc *d, pickle_ref dict, size_t i);
pickle_ref pickle_dict_value(const pickle_doc *d, pickle_ref dict, size_t i);
pickle_ref pickle_get(const pickle_doc *d, pickle_ref dict, const char *key); /* a str key */
const char *pickle_str(const pickle_doc *d, pickle_ref v);          /* str or bytes, NUL-terminated */
double pickle_num(const pickle_doc *d, pickle_ref v, double dflt);  /* int, float or bool */
/* 1 when v stays what it is until the doc is freed (the memo holds it to the end), so that a reader
 * may remember something about it by its ref; a value let go earlier may have its ref reused. */
int pickle_permanent(const pickle_doc *d, pickle_ref v);

/* v as a cJSON tree (copies of shared values), within lim's nodes and bytes and the size bound
 * above (`input` = the pickle's size). Status and diag as pickle_parse. */
oomscan_status pickle_to_json(const pickle_doc *d, pickle_ref v, const pickle_limits *lim, uint64_t input,
                              cJSON **out, oomscan_diag *diag);

/* pickle_parse_mem then pickle_to_json of the root. */
oomscan_status pickle_decode(const unsigned char *p, size_t n, const pickle_limits *lim, cJSON **out,
                             oomscan_diag *diag);

/* 1 if p[0..n) starts like a pickle of protocol 2-5 (PROTO opcode, then FRAME or a container). */
int pickle_sniff(const unsigned char *p, size_t n);

#endif
