/* probe.h - what the probes share: a whole file read into memory. */
#ifndef OOMSCAN_PROBE_H
#define OOMSCAN_PROBE_H

#include <stdio.h>
#include <stdlib.h>

/* The bytes of `path` and `pad` zero bytes after them (for vector loads past the end), their count in
 * *size; NULL (with a message) when it cannot be read. The caller frees it. */
static inline unsigned char *probe_slurp(const char *path, size_t pad, long *size)
{
    FILE *in = fopen(path, "rb");
    unsigned char *buf = NULL;
    if (in && fseek(in, 0, SEEK_END) == 0 && (*size = ftell(in)) >= 0 && fseek(in, 0, SEEK_SET) == 0 &&
        (buf = calloc((size_t)*size + pad, 1)) && fread(buf, 1, (size_t)*size, in) != (size_t)*size) {
        free(buf);
        buf = NULL;
    }
    if (!buf)
        perror(path);
    if (in)
        fclose(in);
    return buf;
}

#endif
