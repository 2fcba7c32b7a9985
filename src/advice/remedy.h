/* remedy.h - the older entry points of remediation, kept for callers that have not moved to
 * advice_resolve() (advice.h, which gives diagnosis and checklist together), and Markdown rendering of
 * a checklist for --explain and docs/remediation/. No I/O.
 *
 * Ownership: functions returning cJSON give the caller a new tree. */
#ifndef OOMSCAN_REMEDY_H
#define OOMSCAN_REMEDY_H

#include <cjson/cJSON.h>

#include "oomscan.h"
#include "db/patterndb.h"
#include "story/story.h"
#include "advice/diagnosis.h"

struct config_view;

/* {"id", "doc", "title", "steps": [...]} for finding f under framework fw; steps with a setting for fw
 * come first. Null JSON when no checklist applies. */
cJSON *remedy_json(const pdb *db, const finding *f, int fw);

/* remedy_json, and each setting that `cfg` (may be NULL: the settings the log printed) knows for job
 * `job` ("" for any) gets "current", "read_at" and, when the step's rule gives one, "proposed" (or
 * "already": true). */
cJSON *remedy_json_config(const pdb *db, const finding *f, int fw, const struct config_view *cfg, const char *job);

/* diagnosis_json() (diagnosis.h) without the job's settings. */
cJSON *remedy_diagnosis_json(const pdb *db, const finding *f);

/* Render checklist c as Markdown through fn. Returns 0, -1 when the writer failed or out of memory. */
int remedy_markdown(const pdb_checklist *c, oomscan_write_fn fn, void *ud);

#endif
