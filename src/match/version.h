/* version.h - the versions of frameworks and libraries a log prints (engine start-up banners,
 * environment dumps, pip lines), read by the rules of patterns/context/versions.json and kept with the
 * job's settings (config.h) as "version.<component>" entries; and the comparison advice needs ("is
 * this PyTorch older than 2.1?"). No I/O.
 *
 * Ownership: functions write into the caller's buffers or the caller's settings store. */
#ifndef OOMSCAN_VERSION_H
#define OOMSCAN_VERSION_H

#include <stddef.h>
#include <stdint.h>

#include "db/patterndb.h"
#include "match/config.h"

/* What rule `r` reads from line[0..len): named group `group` ("version", or another of the rule's
 * groups, "engine") into out (cap bytes). Returns 1 when the rule read it, 0 when not. */
int version_read(const pdb_version_rule *r, const char *line, size_t len, const char *group, char *out, size_t cap);

/* Read every named group of rule `r` from line[0..len) into *st (created on first use) for job `job`,
 * read at file:lineno: "version.<component>", "version.<component>_<group>". Returns the number of
 * values read, -1 out of memory. */
int version_capture(config_store **st, const pdb_version_rule *r, const char *line, size_t len, const char *job,
                    const char *file, uint64_t lineno);

/* The version of `component` the log printed for job `job` ("" any), or NULL. */
const config_entry *version_of(const config_view *v, const char *component, const char *job);

/* Compare two versions by their numeric release parts ("2.0.1+cu117" < "2.1"; a missing part is 0;
 * pre-release and local suffixes are ignored). <0, 0, >0 as strcmp. */
int version_cmp(const char *a, const char *b);

#endif
