/* jsonnum.h - JSON numbers (doubles from cJSON) to integers without undefined behaviour.
 *
 * A cast of a double that is NaN, infinite or out of the target's range is undefined in C; files
 * written by other runs (--state, merge input) are input like any other and may hold 1e999 or -1.
 * Ownership: nothing to own; pure functions. */
#ifndef OOMSCAN_JSONNUM_H
#define OOMSCAN_JSONNUM_H

#include <stdint.h>

/* `v` as an integer in [0, max]: NaN and anything below 0 give 0, anything from max up gives max,
 * fractions are cut. */
static inline uint64_t jsonnum_u64(double v, uint64_t max)
{
    if (!(v > 0))
        return 0;
    if (v >= (double)max) /* (double)UINT64_MAX rounds up to 2^64: >= keeps the cast below in range */
        return max;
    return (uint64_t)v;
}

/* True when `v` is a whole number in [lo, hi] (for fields that must be exact, like a month). */
static inline int jsonnum_in(double v, double lo, double hi)
{
    return v >= lo && v <= hi && (double)(int64_t)v == v;
}

#endif
