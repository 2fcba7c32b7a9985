/* grow.h - the one way the library makes room in a growing array: GROW doubles the array's capacity
 * (from a first size) when the next element would not fit, zeroes the new room, and says whether it
 * worked. It returns, it never jumps: the caller decides what out of memory means where it is (a
 * status, a diagnostic naming the file, a flag), so no return hides in a macro.
 *
 * Ownership: the array stays the caller's; on failure it is left as it was (still to be freed by the
 * caller), its capacity unchanged. */
#ifndef OOMSCAN_GROW_H
#define OOMSCAN_GROW_H

#include <stddef.h>

/* Room for element n of the array *arrp points to (a pointer to any object type; *cap elements of
 * `size` bytes allocated): when n >= *cap, the array is reallocated to twice *cap (`first` when 0,
 * and at least n + 1), the new elements zeroed, *cap updated. 0 on success, -1 out of memory or
 * when the size would overflow. Out of line: the common case is GROW's inline compare. */
int grow_room(void *arrp, size_t n, size_t *cap, size_t size, size_t first);

/* Room for arr[n] (arr an lvalue pointer, cap its size_t capacity in elements): 0, or -1 out of memory. */
#define GROW(arr, n, cap, first) ((size_t)(n) < (cap) ? 0 : grow_room(&(arr), (n), &(cap), sizeof *(arr), (first)))

#endif
