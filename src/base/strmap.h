/* strmap.h - a string-keyed hash index (open addressing, FNV-1a): what the readers of input look up by
 * name (a flight recorder's process groups, a snapshot's allocation sites, merge's record ids). A
 * lookup in a cJSON object, or a scan of an array, walks every member: with input that names tens of
 * thousands of things that was quadratic.
 *
 * Ownership: the map copies its keys and owns them; values are borrowed pointers it never frees. */
#ifndef OOMSCAN_STRMAP_H
#define OOMSCAN_STRMAP_H

#include <stddef.h>

typedef struct strmap strmap;

strmap *strmap_new(void);
void strmap_free(strmap *m); /* NULL-safe */

/* The value under `key`, NULL when there is none (or `m` or `key` is NULL). */
void *strmap_get(const strmap *m, const char *key);

/* Set `key` to `val`, replacing a value it had. 0, -1 out of memory or a NULL key. */
int strmap_put(strmap *m, const char *key, void *val);

/* How many keys it holds (0 for NULL). */
size_t strmap_count(const strmap *m);

#endif
