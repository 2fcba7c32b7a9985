/* membuf.c - output kept in memory (membuf.h). */
#include "membuf.h"

#include <stdlib.h>
#include <string.h>

int membuf_write(void *ud, const char *data, size_t len)
{
    membuf *b = ud;
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + len + 1)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p)
            return 1;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = 0;
    return 0;
}
