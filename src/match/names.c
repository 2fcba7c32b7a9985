/* names.c - Ray session log names (names.h). The forms are Ray's own (docs.ray.io, "Configure
 * logging": worker-[worker_id]-[job_id]-[pid].[out|err], python-core-worker-[worker_id]_[pid].log,
 * job-driver-[submission_id].log); real listings in ray-project/ray#58373 and #33583. */
#include "match/names.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static size_t span_of(const char *s, int (*is)(int))
{
    size_t n = 0;
    while (s[n] && is((unsigned char)s[n]))
        n++;
    return n;
}

/* "<digits>" up to `end` (".out", ".err", ".log"): copies it into out and returns 1. */
static int pid_then(const char *s, const char *const *ends, char *out, size_t cap)
{
    size_t n = span_of(s, isdigit);
    if (n == 0 || n >= cap || n > 10)
        return 0;
    for (const char *const *e = ends; *e; e++)
        if (strcmp(s + n, *e) == 0) {
            memcpy(out, s, n);
            out[n] = '\0';
            return 1;
        }
    return 0;
}

static int is_ipv4_dir(const char *s, size_t n)
{
    int dots = 0, digits = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '.') {
            if (!digits)
                return 0;
            dots++, digits = 0;
        } else if (isdigit((unsigned char)s[i]) && digits < 3)
            digits++;
        else
            return 0;
    }
    return dots == 3 && digits > 0;
}

void names_ray(const char *name, scan_source *src)
{
    static const char *const out_err[] = {".out", ".err", NULL}, *const dot_log[] = {".log", NULL};
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    char pid[24];
    if (strncmp(base, "worker-", 7) == 0) {
        /* worker-<hex worker id>-<8 hex job id>-<pid>.out|err; Ray 2.37+ writes job id ffffffff for
         * actors (ray-project/ray#58373): that names no job */
        const char *w = base + 7;
        size_t wn = span_of(w, isxdigit);
        const char *j = w + wn + 1;
        if (wn >= 16 && w[wn] == '-' && span_of(j, isxdigit) == 8 && j[8] == '-' && pid_then(j + 9, out_err, pid, sizeof pid)) {
            snprintf(src->pid, sizeof src->pid, "%s", pid);
            if (strncmp(j, "ffffffff", 8) != 0)
                snprintf(src->ray_job, sizeof src->ray_job, "%.8s", j);
        }
    } else if (strncmp(base, "python-core-worker-", 19) == 0 || strncmp(base, "python-core-driver-", 19) == 0) {
        const char *w = base + 19;
        size_t wn = span_of(w, isxdigit);
        if (wn >= 16 && w[wn] == '_' && pid_then(w + wn + 1, dot_log, pid, sizeof pid))
            snprintf(src->pid, sizeof src->pid, "%s", pid);
    } else if (strncmp(base, "job-driver-", 11) == 0) {
        /* job-driver-<submission id>.log: raysubmit_<id>, or the id the submitter chose */
        const char *id = base + 11, *dot = strrchr(id, '.');
        if (dot && strcmp(dot, ".log") == 0 && dot > id && (size_t)(dot - id) < sizeof src->ray_job)
            snprintf(src->ray_job, sizeof src->ray_job, "%.*s", (int)(dot - id), id);
    }
    /* a folder named by an IPv4 address: one node's logs gathered per node */
    for (const char *comp = name; !src->host[0];) {
        const char *slash = strchr(comp, '/');
        if (!slash)
            break;
        size_t n = (size_t)(slash - comp);
        if (n < sizeof src->host && is_ipv4_dir(comp, n))
            snprintf(src->host, sizeof src->host, "%.*s", (int)n, comp);
        comp = slash + 1;
    }
}
