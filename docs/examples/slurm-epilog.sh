#!/bin/sh
# slurm-epilog.sh - a Slurm Epilog that scans a finished job's output with oomscan.
#
# Install on every compute node, e.g. as /etc/slurm/epilog.d/oomscan.sh, and name it in slurm.conf
# (Epilog=/etc/slurm/epilog.d/*). slurmd runs it as root when the job ends, with SLURM_JOB_ID,
# SLURM_JOB_UID and SLURMD_NODENAME set. It:
#   1. finds the job's output files: SLURM_JOB_STDOUT/SLURM_JOB_STDERR when Slurm sets them, else the
#      StdOut=/StdErr= lines of `scontrol show job $SLURM_JOB_ID`, else slurm-<id>*.out|.err in the
#      job's WorkDir; plus OOMSCAN_EXTRA_PATHS (node-local logs; %j becomes the job id);
#   2. scans them with `oomscan --job-id $SLURM_JOB_ID`, reading as the job's user, so every finding
#      carries the job id and the same failure seen from many nodes has the same id;
#   3. writes the findings as NDJSON to $OOMSCAN_SPOOL/<job>.<node>.ndjson (atomically; a shipper or
#      `oomscan merge` collects them), and, when OOMSCAN_TICKET_CMD is set, pipes each root finding's
#      ticket (one JSON object) to that command, on the batch host only.
# It never fails the epilog (a failing epilog drains the node): it always exits 0.
#
# Where its messages go. slurmd keeps an epilog's stdout and stderr only at debug log levels, so at the
# default level nothing printed there is ever seen. Every message therefore also goes to syslog through
# logger(1) (tag oomscan-epilog; problems at user.err, progress at user.info) and is appended to
# $OOMSCAN_SPOOL/epilog.log, beside the findings an admin looks at.
#
# What Slurm 22.05 gives an Epilog (slurm.schedmd.com/prolog_epilog.html, and seen under a real slurmd):
#   given:     SLURM_JOB_ID, SLURM_JOB_UID, SLURM_JOB_GID, SLURM_JOB_USER, SLURMD_NODENAME,
#              SLURM_JOB_PARTITION, SLURM_SCRIPT_CONTEXT=epilog_slurmd, the job's SPANK variables;
#   not given: PATH (for security, no search path is set: this script sets a default one below),
#              SLURM_JOB_STDOUT / SLURM_JOB_STDERR (newer releases set them for some contexts; 22.05's
#              slurmd epilog does not, so the paths come from `scontrol show job`), the job's own
#              environment, a terminal. It runs as SlurmdUser (root), in slurmd's working directory.
#
# Settings (environment, or /etc/default/oomscan, which this script sources when present):
#   OOMSCAN              the oomscan binary (default: oomscan from PATH)
#   OOMSCAN_SPOOL        spool folder (default: /var/spool/oomscan)
#   OOMSCAN_TIMEOUT      seconds oomscan may run (default: 120)
#   OOMSCAN_EXTRA_PATHS  more files or folders to scan, space-separated, %j = job id
#   OOMSCAN_TICKET_CMD   command reading one ticket on stdin, e.g. docs/examples/ticket-github.sh
#   OOMSCAN_TICKET_STYLE plain, github or jira (default: github); jira needs OOMSCAN_JIRA_PROJECT
#   OOMSCAN_TEXTFILE_DIR node exporter's textfile directory (--collector.textfile.directory): when set,
#                        the node's counters (oomscan --format openmetrics, added up over every job this
#                        node ran) are kept in DIR/oomscan.prom, replaced atomically (docs/metrics.md)
#   OOMSCAN_SYSLOG_SOCKET the syslog daemon's socket, for a node whose daemon listens elsewhere than
#                        /dev/log (a container, a private syslog-ng); default: logger's own (/dev/log)
#   SCONTROL             the scontrol binary (default: scontrol from PATH)

# slurmd sets no PATH: without one, neither oomscan nor timeout, setpriv or logger would be found.
PATH=${PATH:+$PATH:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
# shellcheck disable=SC1091
[ -r /etc/default/oomscan ] && . /etc/default/oomscan
OOMSCAN=${OOMSCAN:-oomscan}
SPOOL=${OOMSCAN_SPOOL:-/var/spool/oomscan}
TIMEOUT=${OOMSCAN_TIMEOUT:-120}
SCONTROL=${SCONTROL:-scontrol}
job=${SLURM_JOB_ID:-}
node=${SLURMD_NODENAME:-$(hostname 2>/dev/null || echo node)}
mkdir -p "$SPOOL" 2>/dev/null

# say LEVEL MESSAGE: stderr (slurmd's log at debug levels), syslog, and the spool's epilog.log.
say() {
  level=$1; shift
  msg="job ${job:-?} on ${node}: $*"
  echo "oomscan-epilog: $msg" >&2
  command -v logger >/dev/null 2>&1 &&
    logger ${OOMSCAN_SYSLOG_SOCKET:+-u "$OOMSCAN_SYSLOG_SOCKET"} -t oomscan-epilog -p "user.$level" -- "$msg" 2>/dev/null
  [ -d "$SPOOL" ] && [ -w "$SPOOL" ] &&
    printf '%s %s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$level" "$msg" >> "$SPOOL/epilog.log" 2>/dev/null
  return 0
}
log() { say info "$@"; }   # progress
err() { say err "$@"; }    # a problem the admin should see
done_() { exit 0; }

[ -n "$job" ] || { err "SLURM_JOB_ID is not set: nothing to do"; done_; }
case $job in *[!0-9_]*) err "odd job id '$job': skipped"; done_ ;; esac
command -v "$OOMSCAN" >/dev/null 2>&1 || { err "$OOMSCAN not found (PATH=$PATH)"; done_; }

# `scontrol show job` prints one Key=Value group per line, StdOut= and StdErr= each on a line of their
# own, so a path with spaces comes through whole.
info=$("$SCONTROL" show job "$job" 2>/dev/null) || info=""
field() { printf '%s\n' "$info" | sed -n "s/^[[:space:]]*$1=//p" | head -n 1; }
batch_host=$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*BatchHost=\([^[:space:]]*\).*/\1/p' | head -n 1)
workdir=$(field WorkDir)
out=${SLURM_JOB_STDOUT:-$(field StdOut)}
err=${SLURM_JOB_STDERR:-$(field StdErr)}

# The job's own output lives on the batch host's view of the file system; scanning it from every node
# would report it once per node.
on_batch_host=1
[ -n "$batch_host" ] && [ "$batch_host" != "$node" ] && on_batch_host=0

list=$(mktemp "${TMPDIR:-/tmp}/oomscan-epilog.XXXXXX") || { err "mktemp failed"; done_; }
trap 'rm -f "$list"' EXIT
add() { [ -n "$1" ] && [ -e "$1" ] && ! grep -qxF -- "$1" "$list" && printf '%s\n' "$1" >> "$list"; }
if [ $on_batch_host = 1 ]; then
  for f in "$out" "$err"; do
    case $f in /dev/*|"") ;; *) add "$f" ;; esac
  done
  if [ ! -s "$list" ]; then
    # no scontrol answer (or output sent to /dev/null): sbatch's default names in the work dir
    for f in "${workdir:-.}"/slurm-"$job".out "${workdir:-.}"/slurm-"$job"_*.out "${workdir:-.}"/slurm-"$job".err; do
      add "$f"
    done
  fi
fi
for p in ${OOMSCAN_EXTRA_PATHS:-}; do
  add "$(printf '%s' "$p" | sed "s/%j/$job/g")"
done
[ -s "$list" ] || { log "no output files found"; done_; }

# Run a command bounded in time and as the job's user: the paths come from the job, and root must not
# read what its user could not.
run() {
  command -v timeout >/dev/null 2>&1 && set -- timeout "$TIMEOUT" "$@"
  uid=${SLURM_JOB_UID:-}
  gid=${SLURM_JOB_GID:-$uid}
  if [ "$(id -u)" = 0 ] && [ -n "$uid" ] && [ "$uid" != 0 ] && command -v setpriv >/dev/null 2>&1; then
    set -- setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$@"
  fi
  "$@"
}
scan() { # format args...: oomscan on the listed files, stdout to stdout
  fmt=$1; shift
  # one path a line in $list, appended to "$@" so names with spaces stay whole
  while IFS= read -r f; do set -- "$@" "$f"; done < "$list"
  run "$OOMSCAN" --color never --job-id "$job" --format "$fmt" "$@"
}

dest="$SPOOL/$job.$node.ndjson"
tmp="$dest.tmp.$$"
errs="$tmp.err"
scan ndjson > "$tmp" 2> "$errs"; rc=$?
# 0: nothing found, 1: findings, 2: an input could not be read (the others' findings are written)
case $rc in
  0|1) ;;
  2) while IFS= read -r line; do err "$line"; done < "$errs" ;;
  *) err "oomscan exited with $rc (124: it ran past OOMSCAN_TIMEOUT=${TIMEOUT}s)" ;;
esac
rm -f "$errs"
if [ -s "$tmp" ]; then
  if mv -f "$tmp" "$dest"; then log "$(wc -l < "$dest") finding(s) in $dest"; else err "cannot write $dest"; fi
else
  rm -f "$tmp"
  log "no failure found"
fi

# Counters for Prometheus: this job's, added to what the node's file already holds (a counter only
# grows; one file per node, since the textfile collector refuses a series that two files both hold).
# Every job counts, a clean one too (oomscan_jobs_scanned_total by outcome), so a dashboard has the
# share of failed jobs and, in oomscan_last_run_timestamp_seconds, when the epilog last ran.
if [ -n "${OOMSCAN_TEXTFILE_DIR:-}" ]; then
  prom="$OOMSCAN_TEXTFILE_DIR/oomscan.prom"
  ptmp="$OOMSCAN_TEXTFILE_DIR/.oomscan.prom.$$" # not *.prom: the collector must never read it half-written
  if scan openmetrics > "$ptmp.job" 2> /dev/null || [ -s "$ptmp.job" ]; then
    # every series of both files, counters summed, a gauge's later value kept, each family's lines kept
    # together (the text format wants a family's samples contiguous), in order of first appearance
    awk '/^# EOF/ || NF == 0 { next }
         /^# (HELP|TYPE) / { fam = $3; if (!(fam in hdr)) { order[++nf] = fam; hdr[fam] = "" }
                             if ($2 == "TYPE" && $4 == "gauge") gauge[fam] = 1
                             if (index(hdr[fam], $2) == 0) hdr[fam] = hdr[fam] $0 "\n"; next }
         /^#/ { next }
         { name = $1; sub(/\{.*/, "", name); fam = name
           if (!(fam in hdr)) { order[++nf] = fam; hdr[fam] = "" }
           if (!($1 in val)) { ns[fam]++; ser[fam, ns[fam]] = $1 }
           if (fam in gauge) val[$1] = $NF; else val[$1] += $NF }
         END { for (i = 1; i <= nf; i++) { f = order[i]; printf "%s", hdr[f]
                 for (j = 1; j <= ns[f]; j++) print ser[f, j], val[ser[f, j]] }
               print "# EOF" }' \
      "$( [ -s "$prom" ] && echo "$prom" || echo /dev/null)" "$ptmp.job" > "$ptmp" &&
      mv -f "$ptmp" "$prom" || err "cannot write $prom"
  else
    err "oomscan --format openmetrics failed"
  fi
  rm -f "$ptmp" "$ptmp.job"
fi

if [ -n "${OOMSCAN_TICKET_CMD:-}" ] && [ $on_batch_host = 1 ] && [ -s "$dest" ]; then
  style=${OOMSCAN_TICKET_STYLE:-github}
  # from the job's NDJSON, not a third scan of its logs: merge rebuilds the same findings
  run "$OOMSCAN" merge --color never --ticket-style "$style" "$dest" | while IFS= read -r ticket; do
    printf '%s\n' "$ticket" | sh -c "$OOMSCAN_TICKET_CMD" || err "ticket command failed"
  done
fi
done_
