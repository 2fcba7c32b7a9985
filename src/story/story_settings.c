/* story_settings.c - what each job's logs said about it, kept per job: the settings the scanner read
 * (config.h stores) and the framework votes of its inputs; and what advice may read for a finding. */
#include "story/story.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match/config.h"
#include "story/story_internal.h"

#define VOTE_BUCKETS 1024

#define SETTINGS_BUCKETS 1024

static long settings_find(const story *s, const char *job)
{
    if (!s->sbucket)
        return -1;
    for (long i = s->sbucket[fnv1a(job, FNV_BASIS) % SETTINGS_BUCKETS]; i >= 0; i = s->snext[i])
        if (strcmp(s->settings_job[i], job) == 0)
            return i;
    return -1;
}

config_store **story_job_settings(story *s, const char *job)
{
    char key[32]; /* the job cut as snprintf would, without its cost: asked for every setting a log prints */
    size_t kn = job ? strnlen(job, sizeof key - 1) : 0;
    if (kn)
        memcpy(key, job, kn);
    key[kn] = '\0';
    long i = settings_find(s, key);
    if (i >= 0)
        return &s->settings[i];
    if (!s->sbucket) {
        if (!(s->sbucket = malloc(SETTINGS_BUCKETS * sizeof *s->sbucket)))
            return NULL;
        for (size_t k = 0; k < SETTINGS_BUCKETS; k++)
            s->sbucket[k] = -1;
    }
    if (s->n_settings == s->cap_settings) {
        size_t cap = s->cap_settings ? s->cap_settings * 2 : 4;
        config_store **g = realloc(s->settings, cap * sizeof *g);
        if (g)
            s->settings = g;
        char(*gj)[32] = realloc(s->settings_job, cap * sizeof *gj);
        if (gj)
            s->settings_job = gj;
        long *gn = realloc(s->snext, cap * sizeof *gn);
        if (gn)
            s->snext = gn;
        if (!g || !gj || !gn)
            return NULL;
        s->cap_settings = cap;
    }
    if (!(s->settings[s->n_settings] = config_store_new(&s->settings_clock)))
        return NULL;
    i = (long)s->n_settings++;
    memcpy(s->settings_job[i], key, sizeof key);
    size_t b = fnv1a(key, FNV_BASIS) % SETTINGS_BUCKETS;
    s->snext[i] = s->sbucket[b];
    s->sbucket[b] = i;
    return &s->settings[i];
}

void story_settings_view(const story *s, const char *job, config_view *out)
{
    memset(out, 0, sizeof *out);
    if (!job || !*job) {
        /* a finding of no job matched every job's settings when one store held them all */
        out->all = (const config_store *const *)s->settings;
        out->n_all = s->n_settings;
        return;
    }
    long own = settings_find(s, job), shared = settings_find(s, "");
    out->own = own >= 0 ? s->settings[own] : NULL;
    /* Settings read from a source naming no job (a batch script beside several jobs' outputs) are
     * that job's only when the scan holds one job: with several, nothing ties them to this one, and
     * another job's --mem was given as this one's current value (issue 31). */
    out->shared = shared >= 0 && s->n_jobs <= 1 ? s->settings[shared] : NULL;
    /* ... and the user is told so, who can tie them: --job-id, or the job's output with its script alone */
    out->withheld = shared >= 0 && s->n_jobs > 1 && s->settings[shared]->n ? s->settings[shared] : NULL;
}

static long votes_find(const story *s, const char *job)
{
    if (!s->vbucket)
        return -1;
    for (long i = s->vbucket[fnv1a(job, FNV_BASIS) % VOTE_BUCKETS]; i >= 0; i = s->votes[i].next)
        if (strcmp(s->votes[i].job, job) == 0)
            return i;
    return -1;
}

int story_note_votes(story *s, const char *job, const uint32_t *votes)
{
    job = job ? job : "";
    if (!s->vbucket) {
        if (!(s->vbucket = malloc(VOTE_BUCKETS * sizeof *s->vbucket)))
            return -1;
        for (size_t k = 0; k < VOTE_BUCKETS; k++)
            s->vbucket[k] = -1;
    }
    long i = votes_find(s, job);
    if (i < 0) {
        if (s->n_votes == s->cap_votes) {
            size_t cap = s->cap_votes ? s->cap_votes * 2 : 4;
            struct story_jobvotes *g = realloc(s->votes, cap * sizeof *g);
            if (!g)
                return -1;
            s->votes = g;
            s->cap_votes = cap;
        }
        i = (long)s->n_votes++;
        memset(&s->votes[i], 0, sizeof s->votes[i]);
        snprintf(s->votes[i].job, sizeof s->votes[i].job, "%s", job);
        size_t b = fnv1a(s->votes[i].job, FNV_BASIS) % VOTE_BUCKETS;
        s->votes[i].next = s->vbucket[b];
        s->vbucket[b] = i;
    }
    for (int k = 0; k < FW__COUNT; k++)
        s->votes[i].votes[k] += votes[k];
    return 0;
}

const uint32_t *story_job_votes(const story *s, const char *job)
{
    long i = votes_find(s, job ? job : "");
    if (i < 0)
        i = votes_find(s, "");
    return i < 0 ? NULL : s->votes[i].votes;
}
