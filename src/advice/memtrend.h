/* memtrend.h - the job's own memory telemetry (match/telemetry.h) given to the failures it explains:
 * memory.trend on each GPU or host out-of-memory finding whose job printed a series (the series of its
 * own job only: jobs scanned together never share one), which diagnosis.c's `memory_trend` conclusion
 * reads. No I/O.
 *
 * Ownership: the story is the caller's; the trend objects added belong to its findings. */
#ifndef OOMSCAN_ADVICE_MEMTREND_H
#define OOMSCAN_ADVICE_MEMTREND_H

#include "story/story.h"

/* Add memory.trend to every out-of-memory finding of `st` (GPU: cuda_oom; host: host_oom_kill,
 * host_memory_error) whose job has a series; `scan_job` is the job of findings that state none.
 * 0, -1 out of memory. */
int memtrend_attach(story *st, const char *scan_job);

#endif
