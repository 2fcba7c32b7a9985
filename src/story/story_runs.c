/* story_runs.c - the runs of findings of no job (docs/taxonomy.md, "Runs"): a source's run folder from
 * its name, and the runs a scan's findings fall into. */
#include "story/story.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "story/story_internal.h"

/* A folder that names one rank or node of a run (rank3, rank_3, worker-2, node12, gpu-node-3): its
 * run is the folder holding it. A bare number is not one: runs are numbered folders as often. */
static int names_member(const char *c, size_t n)
{
    static const char *const words[] = {"rank", "worker", "node"};
    for (size_t w = 0; w < sizeof words / sizeof *words; w++) {
        size_t wl = strlen(words[w]);
        if (n <= wl || strncmp(c, words[w], wl) != 0)
            continue;
        size_t k = wl + (c[wl] == '-' || c[wl] == '_');
        while (k < n && isdigit((unsigned char)c[k]))
            k++;
        if (k == n && isdigit((unsigned char)c[n - 1]))
            return 1;
    }
    for (size_t k = 0; k + 5 <= n; k++)
        if (memcmp(c + k, "-node", 5) == 0)
            return 1;
    return 0;
}

void story_run_folder(const char *path, const char *member, char *out, size_t cap, int *attempt)
{
    char name[1024];
    snprintf(name, sizeof name, "%s%s%s", path ? path : "", member ? "/" : "", member ? member : "");
    const char *comp[64];
    size_t len[64], n = 0;
    if (attempt)
        *attempt = -1;
    /* the folders of the name (its last part is the file), without "." and with ".." applied */
    for (const char *c = name;;) {
        while (*c == '/')
            c++;
        const char *e = strchr(c, '/');
        if (!e)
            break;
        size_t l = (size_t)(e - c);
        if (l == 2 && c[0] == '.' && c[1] == '.' && n > 0 && !(len[n - 1] == 2 && memcmp(comp[n - 1], "..", 2) == 0))
            n--;
        else if (!(l == 1 && c[0] == '.') && n < 64)
            comp[n] = c, len[n] = l, n++;
        c = e;
    }
    /* torchrun's log tree: <log dir>/<run id>/attempt_<n>/<local rank>/{stdout,stderr}.log, error.json;
     * the run's folder is the one holding the log dir (its console output beside it) */
    for (size_t i = n; i-- > 0;)
        if (len[i] > 8 && memcmp(comp[i], "attempt_", 8) == 0 && isdigit((unsigned char)comp[i][8]) && i >= 1) {
            size_t k = 8;
            while (k < len[i] && isdigit((unsigned char)comp[i][k]))
                k++;
            if (k != len[i])
                continue;
            if (attempt)
                *attempt = atoi(comp[i] + 8);
            n = i >= 2 ? i - 2 : 0;
            break;
        }
    while (n > 0 && names_member(comp[n - 1], len[n - 1]))
        n--;
    size_t o = 0;
    if (cap == 0)
        return;
    if (name[0] == '/' && o + 1 < cap)
        out[o++] = '/';
    for (size_t i = 0; i < n; i++) {
        if (i && o + 1 < cap)
            out[o++] = '/';
        size_t l = len[i] < cap - 1 - o ? len[i] : cap - 1 - o;
        memcpy(out + o, comp[i], l);
        o += l;
    }
    out[o] = '\0';
}

static int run_cmp(const void *a, const void *b, void *ctx)
{
    const story *s = ctx;
    return strcmp(s->f[*(const size_t *)a].run, s->f[*(const size_t *)b].run);
}

/* The runs of the findings of no job (docs/taxonomy.md, "Runs"): each source's run folder
 * (story_run_folder), taken up to the outermost run folder holding it; two of them or more (neither
 * holding the other) are runs apart, each named by its folder below the folder they share. A folder that
 * holds a log of its own and other run folders too is one run with them (nothing says which run its log
 * is of). Sets f->run ("" when the scan holds one run or less) and f->attempt.
 * long: the runs of the findings of no job, worked out from the folders in one pass over one index. */
int story_assign_runs(story *s)
{
    size_t *idx = malloc((s->n + 1) * sizeof *idx), m = 0;
    if (!idx)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        finding *f = &s->f[i];
        story_run_folder(f->first.path, f->first.member, f->run, sizeof f->run, &f->attempt);
        for (size_t k = 0; f->attempt < 0 && k < f->n_windows; k++) {
            char tmp[8];
            story_run_folder(f->windows[k].path, f->windows[k].member, tmp, sizeof tmp, &f->attempt);
        }
        if (f->attempt < 0 && f->appended_attempt > 0)
            f->attempt = f->appended_attempt - 1;
        if (!f->job[0])
            idx[m++] = i;
        else
            f->run[0] = '\0';
    }
    if (m > 1)
        qsort_r(idx, m, sizeof *idx, run_cmp, s); /* glibc's: the story is the context, no global */
    /* the distinct folders, sorted: each is taken up to the outermost of them that holds it */
    size_t *dist = malloc((m + 1) * sizeof *dist), nd = 0;
    char (*top)[sizeof s->f[0].run] = malloc((m + 1) * sizeof *top);
    if (!dist || !top) {
        free(idx);
        free(dist);
        free(top);
        return -1;
    }
    size_t *which = malloc((m + 1) * sizeof *which);
    if (!which) {
        free(idx);
        free(dist);
        free(top);
        return -1;
    }
    for (size_t k = 0; k < m; k++) {
        if (nd == 0 || strcmp(s->f[idx[k]].run, s->f[dist[nd - 1]].run) != 0)
            dist[nd++] = idx[k];
        which[k] = nd - 1;
    }
    for (size_t d = 0; d < nd; d++) {
        const char *r = s->f[dist[d]].run;
        size_t best = strlen(r);
        /* every folder above r, outermost first: the first one that is a run folder too wins */
        for (size_t l = 0; l < best; l++) {
            if (!(l == 0 || r[l] == '/'))
                continue;
            size_t cut = l == 0 && r[0] == '/' ? 1 : l;
            size_t lo = 0, hi = nd;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                const char *x = s->f[dist[mid]].run;
                int c = strncmp(x, r, cut);
                if (c == 0)
                    c = x[cut] ? 1 : 0;
                if (c < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo < nd && strlen(s->f[dist[lo]].run) == cut && strncmp(s->f[dist[lo]].run, r, cut) == 0) {
                best = cut;
                break;
            }
        }
        snprintf(top[d], sizeof *top, "%.*s", (int)best, r);
    }
    /* the runs apart (two or more), and the folder they share */
    size_t nruns = nd > 0, shared = nd > 0 ? strlen(top[0]) : 0;
    const char *first = nd > 0 ? top[0] : "";
    for (size_t d = 1; d < nd; d++) {
        if (strcmp(top[d], first) != 0)
            nruns = 2;
        size_t l = 0;
        while (l < shared && first[l] == top[d][l])
            l++;
        shared = l;
    }
    /* cut the shared part back to a whole folder */
    if (nruns > 1)
        while (shared > 0 && first[shared] != '/' && first[shared] != '\0')
            shared--;
    for (size_t k = 0; k < m; k++) {
        finding *f = &s->f[idx[k]];
        if (nruns < 2) {
            f->run[0] = '\0';
            continue;
        }
        const char *r = top[which[k]] + shared;
        while (*r == '/')
            r++;
        snprintf(f->run, sizeof f->run, "%s", *r ? r : ".");
    }
    free(idx);
    free(which);
    free(dist);
    free(top);
    return 0;
}
