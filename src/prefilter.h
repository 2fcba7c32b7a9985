/* prefilter.h - find every occurrence of a set of literals in a buffer, fast (the only code that
 * touches every byte of the input). A skip-based multi-literal search in the Wu-Manber family: a
 * window as long as the shortest literal slides over the text, and a table keyed by the window's last
 * three bytes says how far it may jump; only windows whose last block ends some literal's prefix are
 * verified with memcmp. Logs rarely contain the failure literals, so most windows jump.
 *
 * Ownership: prefilter_new copies the literals; the prefilter is read-only afterwards and may be used
 * by many threads at once. */
#ifndef OOMSCAN_PREFILTER_H
#define OOMSCAN_PREFILTER_H

#include <stddef.h>
#include <stdint.h>

typedef struct prefilter prefilter;

/* Build over `n` literals (each at least PREFILTER_MIN_LITERAL bytes). NULL if out of memory or a
 * literal is too short. */
#define PREFILTER_MIN_LITERAL 3
prefilter *prefilter_new(const char *const *lits, size_t n);
void prefilter_free(prefilter *pf);

/* Hit callback: literal `lit` starts at `pos`. Return the position to resume from (pos + 1 to see every
 * hit, larger to skip), or SIZE_MAX to stop. */
typedef size_t (*prefilter_hit_fn)(void *ud, size_t lit, size_t pos);

/* Report, in increasing position order, every literal occurrence that starts in [from, end) of
 * `buf`. Bytes up to `avail` (>= end) may be read to verify a literal that crosses `end`. */
void prefilter_scan(const prefilter *pf, const unsigned char *buf, size_t from, size_t end, size_t avail,
                    prefilter_hit_fn fn, void *ud);

#endif
