/* event.h - what the scanner tells about a source: each failure line as an event, handed to a sink the
 * caller gives it. The story implements the sink (story_sink in story/story.h); the scanner knows
 * nothing of findings beyond what the sink answers: a finding's phase so far, to join a second
 * wording of the same failure and to name a phase found below a failure.
 *
 * Ownership: an event's strings are borrowed for the call; its `memory` object belongs to the sink
 * whatever add returns. A sink is the caller's; the scanner borrows it for one run. */
#ifndef OOMSCAN_EVENT_H
#define OOMSCAN_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/taxonomy.h"
#include "base/timefmt.h"
#include "db/patterndb.h"

typedef struct {
    const pdb_pattern *pattern;
    tax_phase phase;
    const char *phase_evidence;
    int phase_weak; /* the phase is a weak inference (taxonomy.md, phase_confidence) */
    int phase_from_frames; /* read from the failure's own traceback: it outranks a marker's strong phase */
    int framework;
    const char *match;
    size_t match_len;
    const char *evidence;
    size_t evidence_len;
    cJSON *memory; /* consumed */
    size_t input;
    const char *path, *member;
    uint64_t line, offset;
    const timefmt *time; /* NULL when the line has no time */
    const char *rank, *local_rank, *pid, *host, *job_id;
    const char *container, *ray_job; /* NULL or "" when unknown */
    const char *kind;     /* static window kind of a dump ("error_file", ...); NULL: a log line, kind from its pattern */
    long repeat;          /* Ray's "[repeated Nx]": counts N more occurrences */
    long merge_into;      /* an earlier finding this line continues (same failure, other wording), or -1 */
} scan_event;

struct config_store;

#define SINK_PHASE_WEAK 1u
#define SINK_PHASE_REPLACE 2u
#define SINK_PHASE_FRAMES 4u /* read from the failure's own stack: a job's other findings never overrule it */

typedef struct {
    void *ud;
    /* Add one failure line: the index of the finding it landed in, -1 if dropped (cap or out of memory). */
    long (*add)(void *ud, const scan_event *ev);
    /* Finding i's phase so far, whether that is weak, and its values (may be NULL): 0, or -1 when
     * there is no finding i. */
    int (*phase_of)(void *ud, long i, tax_phase *phase, int *weak, const cJSON **memory);
    /* A phase found after finding i was added (its faulthandler stack, a late marker, the traceback printed
     * after it): 0, -1 out of memory. `flags`: SINK_PHASE_WEAK gives it as weak; SINK_PHASE_REPLACE
     * replaces even a strong phase (the caller's own earlier answer, which inner frames have refined);
     * SINK_PHASE_FRAMES says it was read from the failure's own stack. */
    int (*set_phase)(void *ud, long i, tax_phase phase, const char *evidence, int framework, unsigned flags);
    /* The settings store of `job` ("" when the source names none) for the settings and versions the
     * log prints (config.h, version.h); NULL out of memory. */
    struct config_store **(*settings)(void *ud, const char *job);
} scan_sink;

#endif
