/* progress.c - progress line for the command (see progress.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "progress.h"

#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define REDRAW_NS 200000000LL
#define QUIET_NS 1000000000LL /* no line before a second of work: a small folder never flashes one */

static FILE *g_out;
static uint64_t g_total;
static int g_packed; /* an input is compressed or archived: its decoded bytes outgrow its size */
static atomic_uint_fast64_t g_done;
static _Atomic long long g_next_draw;
static long long g_start;
static int g_drawn;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
/* Per scanning thread: the last count its current input reported, so each call adds its delta. */
static _Thread_local uint64_t t_last;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int add_size(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)path;
    (void)ftw;
    if (type != FTW_F || !S_ISREG(sb->st_mode))
        return 0;
    g_total += (uint64_t)sb->st_size;
    if (g_packed)
        return 0;
    /* the first bytes, not the name, say compressed (gzip, zstd, xz, bzip2, zip): the done count is of
     * decoded bytes, and dividing it by sizes on disk gave "67 s left" for a 0.75 s run */
    unsigned char h[6] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && read(fd, h, sizeof h) >= 4)
        g_packed = (h[0] == 0x1f && h[1] == 0x8b) || memcmp(h, "\x28\xb5\x2f\xfd", 4) == 0 ||
                   memcmp(h, "\xfd" "7zXZ", 5) == 0 || (memcmp(h, "BZh", 3) == 0 && h[3] >= '1' && h[3] <= '9') ||
                   memcmp(h, "PK\x03\x04", 4) == 0;
    if (fd >= 0)
        close(fd);
    return 0;
}

void progress_begin(FILE *out, const char *const *paths, size_t n)
{
    g_out = out;
    g_total = 0;
    g_packed = 0;
    atomic_store(&g_done, 0);
    for (size_t i = 0; i < n; i++)
        if (strcmp(paths[i], "-") != 0)
            nftw(paths[i], add_size, 16, FTW_PHYS);
    g_start = now_ns();
    atomic_store(&g_next_draw, g_start + QUIET_NS);
    g_drawn = 0;
}

static void human(char *buf, size_t cap, double bytes)
{
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t u = 0;
    while (bytes >= 1024 && u + 1 < sizeof units / sizeof *units) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

void progress_update(void *ud, uint64_t bytes_done)
{
    (void)ud;
    if (!g_out)
        return;
    /* a smaller count than last time means the thread moved on to its next input */
    uint64_t delta = bytes_done >= t_last ? bytes_done - t_last : bytes_done;
    t_last = bytes_done;
    uint64_t done = atomic_fetch_add(&g_done, delta) + delta;
    long long t = now_ns(), next = atomic_load(&g_next_draw);
    /* one thread draws per period; the others only count */
    if (t < next || !atomic_compare_exchange_strong(&g_next_draw, &next, t + REDRAW_NS))
        return;
    double secs = (double)(t - g_start) / 1e9;
    double rate = secs > 0 ? (double)done / secs : 0;
    char d[32], tot[32], r[32], line[160];
    human(d, sizeof d, (double)done);
    human(tot, sizeof tot, (double)g_total);
    human(r, sizeof r, rate);
    if (g_total > 0 && !g_packed && done <= g_total && rate > 0)
        snprintf(line, sizeof line, "oomscan: %s of %s (%.0f%%), %s/s, %.0f s left", d, tot,
                 100.0 * (double)done / (double)g_total, r, (double)(g_total - done) / rate);
    else /* decoded bytes alone: no share of a total in another unit */
        snprintf(line, sizeof line, g_packed ? "oomscan: %s decoded, %s/s" : "oomscan: %s, %s/s", d, r);
    pthread_mutex_lock(&g_mu);
    fprintf(g_out, "\r\033[K%s", line);
    fflush(g_out);
    g_drawn = 1;
    pthread_mutex_unlock(&g_mu);
}

void progress_end(void)
{
    pthread_mutex_lock(&g_mu);
    if (g_out && g_drawn) {
        fputs("\r\033[K", g_out);
        fflush(g_out);
    }
    g_drawn = 0;
    g_out = NULL;
    pthread_mutex_unlock(&g_mu);
}
