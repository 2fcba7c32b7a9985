#!/bin/sh
# run.sh OOMSCAN SOURCE_DIR MODE - oomscan's story of real failing jobs (issue 13 item 5).
#   --fixtures          read the jobs committed in fixtures/realjobs/*/job/ (fast; always runs)
#   --live [NAME...]    run the jobs here first (torchrun under Debian's python3-torch, a private Slurm), then
#                       read what they left; a job the machine cannot run is skipped with its reason
#   --record DIR        only run the jobs, leaving DIR/<scenario>/ as fixtures/realjobs/ has it
# Each story check is a row of expected-stories.tsv: a jq expression on oomscan's JSON of the job that is
# true when the story is right (scenario "*": every job, unless the job has its own row of that check). `enforced` rows fail the test; `pending` rows are stories oomscan does not
# tell yet: reported as "pending: <why>", and as "NOW PASSES" once they hold, to be flipped to enforced.
# `fixtures` rows are enforced on the committed artifacts and pending on a live run.
# A check named epilog_* reads the Slurm epilog's NDJSON of a live run; daemons_* reads the job with its
# scenario's slurmd.log (slurmd's lines of the job) scanned beside it.
# Exit: 0 every enforced check holds, 1 one does not, 77 (live) nothing could run here.
set -u
oomscan=$1 src=$2 mode=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
case $oomscan in /*) ;; *) oomscan=$(pwd)/$oomscan ;; esac
case $src in /*) ;; *) src=$(pwd)/$src ;; esac
export REALJOBS_HERE=$here
. "$here/scenarios.sh"
. "$here/slurm.sh"
table=$here/expected-stories.tsv
command -v jq > /dev/null || { echo "realjobs: jq is missing (.ci/setup installs it)"; exit 1; }

t=$(mktemp -d)
slurm_dir=""
cleanup() { [ -n "$slurm_dir" ] && slurm_down "$slurm_dir"; rm -rf "$t"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
fails=0 passes=0 pendings=0 now=0 skips=0

# Helpers for the expressions of the table.
DEFS='def roots: [.findings[] | select(.role == "root")];
def root: (roots[0] // {});
def cons: [.findings[] | select(.role == "consequence")];
def kinds: [root.sources[]?.kind] | unique;
def echo($text): any(cons[]; (.evidence // []) | join(" ") | test($text));'

# check NAME DIR: scan DIR/job, then every row for NAME (and for "*")
check() {
  name=$1 dir=$2
  json=$t/$name.json
  "$oomscan" --color never --format json "$dir/job" > "$json" 2> /dev/null
  rc=$?
  summary=$(jq -r '[.findings[] | select(.role == "root") | "\(.class)/\(.phase)"] | join(", ")' "$json" 2>/dev/null)
  echo "$name: roots [$summary]; $(jq -r '[.findings[] | select(.role == "consequence") | .class] | "consequences \(length)"' "$json" 2>/dev/null)"
  tab=$(printf '\t')
  while IFS="$tab" read -r scen chk status expr why; do
    case $scen in ''|'#'*) continue ;; esac
    [ "$scen" = "$name" ] || [ "$scen" = "*" ] || continue
    # a row for the scenario itself overrides the "*" row of the same check
    [ "$scen" = "*" ] && grep -q "^$name$tab$chk$tab" "$table" && continue
    case $chk in
      epilog_*)
        # the Slurm epilog's NDJSON of a live run (the committed one is from an older oomscan)
        # (a live run whose epilog wrote nothing is read as no finding, and fails)
        [ "$mode" = --live ] || continue
        doc=$t/$name.epilog.json
        cat "$dir/epilog.ndjson" 2>/dev/null | jq -s '{findings: .}' > "$doc" ;;
      daemons_*)
        # the job's output and slurmd's lines of the job (the scenario's slurmd.log, what a site that lets
        # its epilog read slurmd's log would add): the same kill through a second window
        doc=$t/$name.daemons.json
        "$oomscan" --color never --format json "$dir/job" "$dir/slurmd.log" > "$doc" 2> /dev/null ;;
      *) doc=$json ;;
    esac
    if jq -e --argjson rc "$rc" "$DEFS $expr" "$doc" > /dev/null 2>"$t/jq.err"; then held=1; else held=0; fi
    # `fixtures`: enforced on the committed artifacts, pending on a live run (the story holds on what a
    # real run left, but a live run on this machine does not always leave the same: see the row's why)
    [ "$status" = fixtures ] && { [ "$mode" = --live ] && status=pending || status=enforced; }
    case $status:$held in
      enforced:1) passes=$((passes + 1)) ;;
      enforced:0) echo "FAIL: $name $chk: $expr"; sed 's/^/  jq: /' "$t/jq.err"; fails=$((fails + 1)) ;;
      pending:0) echo "  pending: $name $chk: $why"; pendings=$((pendings + 1)) ;;
      pending:1) echo "  NOW PASSES (flip to enforced in expected-stories.tsv): $name $chk"; now=$((now + 1)) ;;
      *) echo "FAIL: $table: bad status '$status' for $scen $chk"; fails=$((fails + 1)) ;;
    esac
  done < "$table"
}

# runs_apart DIR...: the jobs of no id (torchrun runs, each in its own folder) scanned together, in
# three orders and groupings of their paths, tell each run the story it has alone: the same findings
# (class, phase, role, the class of the cause), each under its own `run`, no cause across runs
# (docs/taxonomy.md, "Jobs, runs and attempts").
runs_apart() {
  sig='[.findings | (map({key: .id, value: .}) | from_entries) as $by | .[]
    | "\(.run // "-")|\(.class)/\(.phase)/\(.role)/\(if .caused_by then $by[.caused_by].class + " of " + ($by[.caused_by].run // "-") else "" end)"] | .[]'
  : > "$t/alone.sig"
  for d in "$@"; do
    r=$(basename "$d")/job
    "$oomscan" --color never --format json "$d/job" 2>/dev/null |
      jq -r --arg r "$r" '[.findings | (map({key: .id, value: .class}) | from_entries) as $cls | .[]
        | "\($r)|\(.class)/\(.phase)/\(.role)/\(if .caused_by then $cls[.caused_by] + " of " + $r else "" end)"] | .[]' >> "$t/alone.sig"
  done
  sort -o "$t/alone.sig" "$t/alone.sig"
  for grouping in folders files reversed; do
    args=""
    for d in "$@"; do
      case $grouping in
        folders) args="$args $(basename "$d")/job" ;;
        *) for f in "$d"/job/*; do args="$args $(basename "$d")/job/${f##*/}"; done ;;
      esac
    done
    [ $grouping = reversed ] && args=$(printf '%s\n' $args | sort -r)
    (cd "$(dirname "$1")" && "$oomscan" --color never --format json $args 2>/dev/null) | jq -r "$sig" | sort > "$t/together.sig"
    if cmp -s "$t/alone.sig" "$t/together.sig"; then
      passes=$((passes + 1))
    elif [ "$mode" = --live ]; then
      # pending on a live run: within one run, which windows of one failure join can depend on the
      # order its files are read in (a DataLoader bus error's two lines 129 lines apart in torchrun.out,
      # joined only when the rank's own stderr.log is read first): the same with one run alone
      echo "  pending: runs_apart ($grouping): a run's windows joined in another order of its files:"
      diff "$t/alone.sig" "$t/together.sig" | sed 's/^/    /' | head -6
      pendings=$((pendings + 1))
    else
      echo "FAIL: runs_apart ($grouping): the runs scanned together do not each tell their own story:"
      diff "$t/alone.sig" "$t/together.sig" | sed 's/^/  /' | head -20
      fails=$((fails + 1))
    fi
  done
}

finish() {
  echo "realjobs $mode: $passes passed, $fails failed, $pendings pending, $now pending now passing, $skips skipped"
  [ "$fails" -eq 0 ]
}

case $mode in
  --fixtures)
    n=0
    for d in "$src"/fixtures/realjobs/*/; do
      [ -d "$d/job" ] || continue
      check "$(basename "$d")" "$d"; n=$((n + 1))
    done
    [ $n -ge 10 ] || { echo "FAIL: only $n jobs under fixtures/realjobs"; fails=$((fails + 1)); }
    set --
    for d in "$src"/fixtures/realjobs/*/; do
      [ -f "$d/job/torchrun.out" ] && set -- "$@" "${d%/}"
    done
    runs_apart "$@"
    finish; exit $? ;;
  --live|--record) ;;
  *) echo "usage: run.sh OOMSCAN SOURCE_DIR --fixtures | --live [NAME...] | --record DIR"; exit 2 ;;
esac

out=$t/jobs
if [ "$mode" = --record ]; then out=$1; shift; mkdir -p "$out"; fi
wanted=${*:-$SCENARIOS slurm}
have_torch=1
if ! [ -x "$TORCHRUN" ] || ! "$PY" -c 'import torch' 2> /dev/null; then
  have_torch=0
  echo "SKIP: the torchrun jobs: $TORCHRUN or $PY's torch is missing (Debian: apt-get install python3-torch)"
fi
ran=0 submitted=0

# Slurm first: its time-limit job waits a minute, the torchrun jobs run meanwhile.
case " $(echo $wanted) " in *" slurm "*)
  if why=$(slurm_can); then
    slurm_dir=$t/slurm
    mkdir -p "$slurm_dir"
    # in this shell, not in $(...): the daemons die with the shell that started them (slurm.sh)
    if slurm_up "$slurm_dir" "$oomscan" "$src" > "$t/slurm-up.out"; then
      export SLURM_CONF="$slurm_dir/slurm.conf"
      if slurm_submit_all "$slurm_dir"; then submitted=1; else echo "FAIL: cannot submit the Slurm jobs"; fails=$((fails + 1)); fi
    else
      why=$(cat "$t/slurm-up.out")
      echo "SKIP: slurm: ${why#cannot: }"; skips=$((skips + 1)); slurm_dir=""
    fi
  else
    echo "SKIP: slurm: ${why#cannot: }"; skips=$((skips + 1))
  fi ;;
esac

for s in $wanted; do
  [ "$s" = slurm ] && continue
  [ $have_torch = 1 ] || { skips=$((skips + 1)); continue; }
  rm -rf "${out:?}/$s"; mkdir -p "$out/$s/job"
  why=$( (scenario_"$s" "$out/$s/job" "$out/$s") ); st=$?
  if [ $st = 77 ]; then
    echo "SKIP: $s: ${why#cannot: }"; skips=$((skips + 1)); rm -rf "${out:?}/$s"; continue
  fi
  mv "$out/$s/job/exit-status" "$out/$s/" 2>/dev/null
  ran=$((ran + 1))
  [ "$mode" = --live ] && check "$s" "$out/$s"
done

if [ $submitted = 1 ]; then
  if slurm_collect "$slurm_dir" "$out"; then
    for s in $SLURM_SCENARIOS; do
      ran=$((ran + 1))
      [ "$mode" = --live ] && check "$s" "$out/$s"
    done
  else
    echo "FAIL: the Slurm jobs did not finish"; fails=$((fails + 1))
  fi
fi

[ $ran -gt 0 ] || { echo "realjobs: no job could run here (see SKIP lines)"; exit 77; }
if [ "$mode" = --live ]; then
  # the runs of this live set scanned together tell each its own story, as the committed ones do
  set --
  for d in "$out"/*/; do
    [ -f "$d/job/torchrun.out" ] && set -- "$@" "${d%/}"
  done
  [ $# -ge 2 ] && runs_apart "$@"
fi
if [ "$mode" = --record ]; then echo "recorded $ran jobs in $out"; exit 0; fi
finish
