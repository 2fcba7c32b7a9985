/* diagnosis.h - what a failure's own numbers let oomscan conclude (shortfall, fragmentation, memory
 * held by other processes, a request larger than the GPU, a host's memory against its limit) and what
 * the log rules out (loader workers, error files). The arithmetic is here; the wording of each
 * conclusion, and which step premises it supports or refutes, are data
 * (patterns/remediation/diagnosis.json). No I/O.
 *
 * Ownership: diagnosis_json() gives the caller a new tree. */
#ifndef OOMSCAN_ADVICE_DIAGNOSIS_H
#define OOMSCAN_ADVICE_DIAGNOSIS_H

#include <cjson/cJSON.h>

#include "db/patterndb.h"
#include "story/story.h"

struct config_view;

/* {"conclusions": [{"id", "what", "arithmetic"}...]} for finding f, the job's settings `cfg` (may be
 * NULL) of job `job` ("" for any) consulted for what the log rules out; NULL when nothing can be
 * concluded or out of memory. */
cJSON *diagnosis_json(const pdb *db, const finding *f, const struct config_view *cfg, const char *job);

/* 1 when conclusion `id` (an "id" of a diagnosis_json() conclusion) refutes premise `premise`
 * (`key` "refutes") or supports it (`key` "supports"), per the data. */
int diagnosis_says(const pdb *db, const char *id, const char *key, const char *premise);

#endif
