/* state.h - --state: incremental re-runs over growing logs (the public half is in oomscan.h).
 *
 * Ownership: the oomscan_state owns the loaded document, the lock and the per-input plan; a scan that
 * uses it borrows it (the table of reported ids moves into the scan). */
#ifndef OOMSCAN_STATE_H
#define OOMSCAN_STATE_H

#include <stddef.h>

#include "match/phase.h"
#include "match/scan.h"

struct oomscan_scan;

/* After the inputs are known (directories expanded), before scanning: decide per input whether it is
 * read from where the last run stopped, and if every input can, restore what was found before. */
oomscan_status state_plan(struct oomscan_scan *s);

/* Scan unit i the state's way (plain files: only new complete lines, context replayed from before
 * the cut). Returns 1 when done here, 0 when the unit is for the ordinary reader (stdin, containers).
 * Thread-safe for distinct units. */
int state_run_unit(struct oomscan_scan *s, size_t i, scanner *sc, phase_state *ps);

#endif
