/* rules.h - what the database's own files share (src/db only: never included from another folder).
 *
 * patterndb.c defines, makes and frees the database; rules.c parses one file; load.c (above it) finds
 * the files and loads them; compile.c (above rules.c) builds what scanning needs. Ownership as in patterndb.h: everything here belongs to the
 * pdb it is called with. */
#ifndef OOMSCAN_DB_RULES_H
#define OOMSCAN_DB_RULES_H

#include "db/patterndb.h"

/* One data file's text into the database, dispatched on its "format"; errors name the file. */
oomscan_status db_parse_doc(pdb *db, const char *file, const char *text, size_t len, oomscan_diag *diag);
/* The patterns' "in_traceback" conditions as frame hints (one bit each). */
oomscan_status db_build_hints(pdb *db, oomscan_diag *diag);
/* Every checklist's steps taken from the step library. */
oomscan_status db_resolve_checklists(pdb *db, oomscan_diag *diag);

#endif
