/* grow.c - making room in a growing array (grow.h). */
#include "base/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int grow_room(void *arrp, size_t n, size_t *cap, size_t size, size_t first)
{
    if (n < *cap)
        return 0;
    size_t want = *cap ? *cap : (first ? first : 1);
    while (want <= n) {
        if (want > SIZE_MAX / 2)
            return -1;
        want *= 2;
    }
    if (size && want > SIZE_MAX / size)
        return -1;
    /* the array's pointer read and written as bytes: arrp points to a pointer of any object type */
    void *old;
    memcpy(&old, arrp, sizeof old);
    char *grown = realloc(old, want * size);
    if (!grown)
        return -1;
    memset(grown + *cap * size, 0, (want - *cap) * size);
    memcpy(arrp, &grown, sizeof grown);
    *cap = want;
    return 0;
}
