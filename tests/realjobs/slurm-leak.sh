#!/bin/sh
# slurm-leak.sh OOMSCAN SOURCE_DIR - the private Slurm of the realjobs harness dies with the harness, even
# when the harness is SIGKILLed (no trap runs): a harness brings up munged, slurmctld and slurmd as run.sh
# does (slurm.sh's slurm_up), submits a job that sleeps, and is killed with SIGKILL once the job runs.
# Then no process may be left that belongs to that private Slurm: none whose command line or working
# folder is under its folder (the daemons, slurmstepd, the job's tasks).
# Exit: 0 nothing survived, 1 something did (it is named, then ended), 77 no Slurm can run here.
set -u
oomscan=$1 src=$2
case $oomscan in /*) ;; *) oomscan=$(pwd)/$oomscan ;; esac
case $src in /*) ;; *) src=$(pwd)/$src ;; esac
here=$src/tests/realjobs
export REALJOBS_HERE=$here
. "$here/scenarios.sh"
. "$here/slurm.sh"
why=$(slurm_can) || { echo "SKIP: ${why#cannot: }"; exit 77; }

t=$(mktemp -d)
d=$t/slurm
mkdir -p "$d"
harness=""

# The processes of our private Slurm still alive: pid and command line, one a line.
ours() {
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = "$$" ] && continue
    cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
    cmd=$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null)
    case "$cwd $cmd" in *"$d"*) echo "$pid $cmd" ;; esac
  done
}

finish() {
  [ -n "$harness" ] && kill -9 "$harness" 2>/dev/null
  # whatever a failed run left is ours (it works in our folder): end it, then remove the folder
  ours | while read -r pid _; do kill -9 "$pid" 2>/dev/null; done
  rm -rf "$t"
}
trap finish EXIT
trap 'exit 1' INT TERM

# The harness: slurm_up in its own shell, as run.sh calls it, then a job that outlives it.
sh -c '
  . "$1/scenarios.sh"; . "$1/slurm.sh"
  slurm_up "$2" "$3" "$4" > "$2/up.out" || exit 77
  SLURM_CONF=$2/slurm.conf /usr/bin/sbatch --parsable -D "$2" -o "$2/job.out" --wrap "sleep 600" > "$2/job.id" || exit 1
  i=0
  until SLURM_CONF=$2/slurm.conf /usr/bin/squeue -h -o %T -j "$(cat "$2/job.id")" 2>/dev/null | grep -q RUNNING; do
    i=$((i + 1)); [ $i -gt 60 ] && exit 1; sleep 1
  done
  : > "$2/ready"
  sleep 600' sh "$here" "$d" "$oomscan" "$src" > "$t/harness.out" 2>&1 &
harness=$!

i=0
until [ -e "$d/ready" ]; do
  if ! kill -0 "$harness" 2>/dev/null; then
    wait "$harness"; st=$?; harness=""
    if [ $st = 77 ]; then echo "SKIP: slurm: $(sed 's/^cannot: //' "$d/up.out" 2>/dev/null | head -n 3)"; exit 77; fi
    echo "FAIL: the harness ended ($st) before its job ran:"; cat "$t/harness.out" "$d/up.out" 2>/dev/null | tail -n 5
    exit 1
  fi
  i=$((i + 1))
  [ $i -gt 120 ] && { echo "FAIL: the job never ran"; exit 1; }
  sleep 1
done
running=$(ours | wc -l)
kill -9 "$harness"
wait "$harness" 2>/dev/null
harness=""

# the kernel ends a namespace's processes at once, but their exit takes a moment
i=0
while [ -n "$(ours)" ] && [ $i -lt 20 ]; do sleep 0.5; i=$((i + 1)); done
left=$(ours)
if [ -n "$left" ]; then
  echo "FAIL: after the harness was SIGKILLed, its private Slurm left:"
  echo "$left" | cut -c1-160
  exit 1
fi
echo "slurm-leak: $running processes of the private Slurm while its job ran, none left after SIGKILL of the harness"
exit 0
