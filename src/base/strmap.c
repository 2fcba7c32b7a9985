/* strmap.c - the string-keyed index (strmap.h). */
#include "base/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct strmap {
    char **keys;
    void **vals;
    size_t n, cap; /* cap a power of two, at most half full */
};

static uint64_t map_hash(const char *k)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211ull;
    return h;
}

strmap *strmap_new(void) { return calloc(1, sizeof(strmap)); }

void strmap_free(strmap *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    free(m);
}

static size_t map_slot(const strmap *m, const char *key)
{
    size_t i = (size_t)map_hash(key) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & (m->cap - 1);
    return i;
}

void *strmap_get(const strmap *m, const char *key)
{
    if (!m || !m->cap || !key)
        return NULL;
    size_t i = map_slot(m, key);
    return m->keys[i] ? m->vals[i] : NULL;
}

int strmap_put(strmap *m, const char *key, void *val)
{
    if (!key)
        return -1;
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        char **keys = calloc(cap, sizeof *keys);
        void **vals = calloc(cap, sizeof *vals);
        if (!keys || !vals) {
            free(keys);
            free(vals);
            return -1;
        }
        strmap g = {keys, vals, m->n, cap};
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                size_t j = map_slot(&g, m->keys[i]);
                keys[j] = m->keys[i];
                vals[j] = m->vals[i];
            }
        free(m->keys);
        free(m->vals);
        *m = g;
    }
    size_t i = map_slot(m, key);
    if (!m->keys[i]) {
        if (!(m->keys[i] = strdup(key)))
            return -1;
        m->n++;
    }
    m->vals[i] = val;
    return 0;
}

size_t strmap_count(const strmap *m) { return m ? m->n : 0; }
