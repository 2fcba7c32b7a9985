/* advice.h - the one entry point of remediation: for a finding, its diagnosis and its checklist,
 * resolved once and consistent with each other. Steps come in the order the diagnosis gives (a
 * request larger than the GPU, memory held by other processes, fragmentation, a large shortfall move
 * the steps they support first; the detected framework's steps before generic ones); a step whose
 * premise the diagnosis refutes moves last and says why; each setting is written as the user types
 * it (setting.h) with the job's own value when the log printed it. No I/O.
 *
 * Ownership: advice_resolve() gives the caller an advice that owns both trees; advice_free() takes
 * NULL. */
#ifndef OOMSCAN_ADVICE_H
#define OOMSCAN_ADVICE_H

#include <cjson/cJSON.h>

#include "db/patterndb.h"
#include "story/story.h"

struct config_view;

typedef struct advice {
    cJSON *remediation; /* {"id", "doc", "title", "steps": [...]}, or JSON null when no checklist applies */
    cJSON *diagnosis;   /* {"conclusions": [{"id", "what", "arithmetic"}...]}, or NULL: nothing concluded */
    cJSON *versions;    /* {"torch": "2.1.0+cu121", "vllm": "0.8.5", "vllm_engine": "V1", ...}: what the job's
                         * logs printed (version.h), or NULL when they printed none */
} advice;

/* The advice for finding f of framework fw (a tax_framework), the job's settings `cfg` (may be NULL)
 * of job `job` ("" or NULL: any). NULL only when out of memory. */
advice *advice_resolve(const pdb *db, const finding *f, int fw, const struct config_view *cfg, const char *job);

void advice_free(advice *a);

#endif
