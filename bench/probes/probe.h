/* probe.h - what the probes share: a whole file read into memory, a list of lines, a clock, and a
 * Vectorscan callback that counts (probe_hits). */
#ifndef OOMSCAN_PROBE_H
#define OOMSCAN_PROBE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* The lines of `path` (at most `cap`, without their newlines, each strdup'ed) into out; their count. */
static inline int probe_read_lines(const char *path, char **out, int cap)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    int n = 0;
    while (f && n < cap && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        out[n++] = strdup(line);
    }
    if (f)
        fclose(f);
    return n;
}

/* The monotonic clock, in seconds. */
static inline double probe_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A Vectorscan match callback that only counts, in probe_hits. */
static long probe_hits;
static inline int probe_count(unsigned id, unsigned long long from, unsigned long long to, unsigned flags, void *ctx)
{
    (void)id, (void)from, (void)to, (void)flags, (void)ctx;
    probe_hits++;
    return 0;
}

#endif
