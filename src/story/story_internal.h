/* story_internal.h - what the story's own files share, and no other module: the framework-vote record,
 * the hash, string and time comparisons, and the helpers one file defines for another (story.c the
 * grouping and findings, story_settings.c what each job's logs said, story_runs.c the runs of findings of
 * no job, story_cause.c jobs, joins and causes).
 *
 * Ownership: as story.h; every helper here borrows what it is given, and story_set_add() copies its value. */
#ifndef OOMSCAN_STORY_INTERNAL_H
#define OOMSCAN_STORY_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "story/story_types.h"

struct story_jobvotes {
    char job[32];
    uint32_t votes[FW__COUNT];
    long next; /* chain of the same hash bucket */
};

#define FNV_BASIS 0xcbf29ce484222325ULL

/* FNV-1a of string s, continuing from h (FNV_BASIS to start): the index's and the tables' hash. */
static inline uint64_t fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Two optional strings are the same: both NULL, or equal. */
static inline int same_str(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

/* Order two locations by their stamps: -1, 0, 1, or TIMEFMT_INCOMPARABLE. Uptimes count only within
 * one input: two hosts' boots are unrelated. */
static inline int time_cmp_slack(const story_loc *a, const story_loc *b, double slack)
{
    if (!a->has_time || !b->has_time)
        return TIMEFMT_INCOMPARABLE;
    if ((a->time.uptime_only || b->time.uptime_only) && a->input != b->input)
        return TIMEFMT_INCOMPARABLE;
    return timefmt_cmp_slack(&a->time, &b->time, slack);
}

static inline int time_cmp(const story_loc *a, const story_loc *b) { return time_cmp_slack(a, b, 0.0); }

/* A Ray job id as worker log names carry it (8 hex digits); a submission id is not one. */
int story_is_ray_job(const char *r);

/* The kind of window ("kernel", "slurm", "launcher", "log") a line of pattern p is seen through. */
const char *story_pattern_kind(const pdb_pattern *p);

/* Add a copy of v to set s unless it is there or empty; past STORY_MAX_SET it is counted in s->dropped.
 * 0, -1 out of memory. */
int story_set_add(story_set *s, const char *v);

/* qsort order of a set's items: numbers as numbers, else by bytes. */
int story_set_cmp(const void *a, const void *b);

/* Fill keys missing from `dst` with those of `src` (a later line of the same failure may state more). */
void story_merge_memory(cJSON *dst, const cJSON *src);

/* The runs of the findings of no job (story_runs.c): sets every finding's run and attempt. 0, -1 out
 * of memory. */
int story_assign_runs(story *s);

#endif
