/* prefilter.h - find every occurrence of a set of literals in a buffer, fast (the only code that
 * touches every byte of the input).
 *
 * Two engines give the same hits in the same order:
 * - Vectorscan (Hyperscan's portable fork), when the build found it: its literal matchers (FDR/Teddy)
 *   run the whole set over 16/32-byte vectors; measured 2.2x faster than the portable engine on the
 *   default database (docs/performance.md). Its hits come in end order; a small reorder buffer puts
 *   them back in start order.
 * - the portable engine, a skip-based search in the Wu-Manber family: a window as long as the
 *   shortest literal slides over the text, and a table keyed by the window's last three bytes says how
 *   far it may jump; only windows whose last block ends some literal's prefix are verified.
 * Matching is byte-exact (case-sensitive), as the data files' literals are written.
 *
 * Ownership: prefilter_new copies the literals; the prefilter is read-only afterwards and may be used
 * by many threads at once (Vectorscan scratch space comes from an internal locked pool). */
#ifndef OOMSCAN_PREFILTER_H
#define OOMSCAN_PREFILTER_H

#include <stddef.h>
#include <stdint.h>

typedef struct prefilter prefilter;

typedef enum {
    PREFILTER_AUTO,     /* Vectorscan when built in and it accepts the set, else portable */
    PREFILTER_PORTABLE, /* always the portable engine (tests compare the two) */
} prefilter_engine;

/* Build over `n` literals (each at least PREFILTER_MIN_LITERAL bytes). NULL if out of memory or a
 * literal is too short. */
#define PREFILTER_MIN_LITERAL 3
prefilter *prefilter_new(const char *const *lits, size_t n);
prefilter *prefilter_new_engine(const char *const *lits, size_t n, prefilter_engine engine);
void prefilter_free(prefilter *pf);

/* As prefilter_new, but first tries `blob` (prefilter_serialize's bytes, e.g. made at build time and
 * embedded): it is used only when it was made for exactly these literals, is intact, and this
 * Vectorscan's version and this CPU accept it; otherwise the set is compiled here, with the same
 * hits. Compiling the default set was a third of start-up; loading it is a copy. */
prefilter *prefilter_new_serialized(const char *const *lits, size_t n, const void *blob, size_t blob_len);

/* As prefilter_new_serialized (blob NULL: none) with `engine`, over a subset of a larger set: a hit of
 * lits[i] reports ids[i] (its index in the larger set), so that one callback serves both. The ids
 * must increase (the order of hits at one position stays the larger set's); NULL otherwise, or out
 * of memory. */
prefilter *prefilter_new_ids(const char *const *lits, const size_t *ids, size_t n, prefilter_engine engine,
                             const void *blob, size_t blob_len);

/* The Vectorscan database of `pf` as bytes for prefilter_new_serialized, in *out (free() it).
 * -1 when `pf` runs the portable engine (or out of memory). */
int prefilter_serialize(const prefilter *pf, unsigned char **out, size_t *len);

/* "vectorscan" or "portable": the engine this prefilter runs. */
const char *prefilter_engine_name(const prefilter *pf);

/* 1 when the Vectorscan database came from a serialized blob, 0 when it was compiled (or portable). */
int prefilter_from_blob(const prefilter *pf);

/* Hit callback: literal `lit` starts at `pos`. Return the position to resume from (pos + 1 to see every
 * hit, larger to skip), or SIZE_MAX to stop. */
typedef size_t (*prefilter_hit_fn)(void *ud, size_t lit, size_t pos);

/* Report every literal occurrence that starts in [from, end) of `buf`, in increasing position order
 * and, at one position, in increasing literal index; after the callback returns r, hits starting in
 * (pos, r) are not reported (other literals at the same pos still are). Bytes up to `avail` (>= end)
 * may be read to verify a literal that crosses `end`. */
void prefilter_scan(const prefilter *pf, const unsigned char *buf, size_t from, size_t end, size_t avail,
                    prefilter_hit_fn fn, void *ud);

#endif
