/* names.h - context a file's name states beyond the Slurm job, rank and node that scan_run.c reads: a Ray
 * session's log names (worker-<worker id>-<job id>-<pid>.err, python-core-worker-<worker id>_<pid>.log,
 * job-driver-<submission id>.log) give the Ray job and the pid, and a folder named by an IPv4 address
 * (one Ray node's logs) the node. docs/inputs.md "What file names say" lists them.
 *
 * Ownership: nothing is kept; the caller's source is filled. */
#ifndef OOMSCAN_NAMES_H
#define OOMSCAN_NAMES_H

#include "match/source.h"

/* Fill src->pid, src->ray_job (and src->host when empty) from `name` (path, then "/member"); fields
 * the name does not state are left as they are. */
void names_ray(const char *name, scan_source *src);

#endif
