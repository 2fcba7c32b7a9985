/* remedy.h - what to change: the checklist for a finding (in the detected framework's settings), the
 * diagnosis worked out from the numbers the message states, and Markdown rendering for --explain and
 * docs/remediation/. No I/O.
 *
 * Ownership: functions returning cJSON give the caller a new tree. */
#ifndef OOMSCAN_REMEDY_H
#define OOMSCAN_REMEDY_H

#include <cjson/cJSON.h>

#include "oomscan.h"
#include "patterndb.h"
#include "story.h"

/* {"id", "doc", "title", "steps": [...]} for finding f under framework fw; steps with a setting for fw
 * come first. Null JSON when no checklist applies. */
cJSON *remedy_json(const pdb *db, const finding *f, int fw);

/* {"conclusions": [{"what", "arithmetic"}...]} from the finding's numbers, or NULL when nothing can be
 * concluded. */
cJSON *remedy_diagnosis_json(const finding *f);

/* Render checklist c as Markdown through fn. Returns 0, -1 when the writer failed or out of memory. */
int remedy_markdown(const pdb_checklist *c, oomscan_write_fn fn, void *ud);

#endif
