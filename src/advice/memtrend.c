/* memtrend.c - memory.trend from the job's own telemetry (memtrend.h). */
#include "advice/memtrend.h"

#include <stdlib.h>

#include "match/config.h"
#include "match/telemetry.h"

int memtrend_attach(story *st, const char *scan_job)
{
    for (size_t i = 0; i < st->n; i++) {
        finding *f = &st->f[i];
        int host = f->cls == CLS_HOST_OOM_KILL || f->cls == CLS_HOST_MEMORY_ERROR;
        if (!host && f->cls != CLS_CUDA_OOM)
            continue;
        if (f->memory && cJSON_HasObjectItem(f->memory, "trend"))
            continue;
        const char *job = f->job[0] ? f->job : f->job_id[0] ? f->job_id : scan_job ? scan_job : "";
        config_view cfg;
        story_settings_view(st, job, &cfg);
        cJSON *t = telemetry_trend(&cfg, job, f->rank, host);
        if (!t)
            continue;
        if (!f->memory && !(f->memory = cJSON_CreateObject())) {
            cJSON_Delete(t);
            return -1;
        }
        cJSON_AddItemToObject(f->memory, "trend", t);
        f->version++;
    }
    return 0;
}
