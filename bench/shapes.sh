#!/usr/bin/env bash
# bench/shapes.sh - the rows of issue 18 (speed without cliffs) as ratios, in one run; called by
# bench/run.sh (docs/performance.md shows its table). Each input ends in one CUDA OOM (the 20,000 job
# logs: one each); the last column says how many oomscan found.
#
#   bench/shapes.sh [--runs 3] [--mb 64] [--ranks 512] [--jobs 20000 | --no-jobs] [--before BIN]
# Inputs go to bench/data/ (gitignored; reused when present), built with ../shared/bench/genshapes.py:
# the metrics, nccl and settings shapes, 512 rank files of 64 KiB, an empty file, and 20,000 small
# job logs (slurm-<id>.out). Yardsticks: `grep -E -f anchor-patterns.txt` (-r for folders) with its
# output going to a file (GNU grep stops at its first match when its output is /dev/null), and the
# same with ugrep when it is installed (optional: Debian's ugrep). --before BIN also times another
# oomscan binary (an older build) in the same interleaved runs, for before/after tables.
# Environment: OOMSCAN (default build/oomscan), GENSHAPES, ANCHORS; MIXED_MBPS (bench/run.sh sets it:
# the mixed log's MiB/s) adds a line with each shape's throughput against it (issue 18: within 2x).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs=3 mb=64 nranks=512 njobs=20000 before=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --mb) mb="$2"; shift 2 ;;
    --ranks) nranks="$2"; shift 2 ;;
    --jobs) njobs="$2"; shift 2 ;;
    --before) before="$2"; shift 2 ;;
    --no-jobs) njobs=0; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "shapes.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
# ../shared/bench beside the repository (a worktree sits one level deeper: ../../shared)
shared="$root/../shared/bench"
[ -d "$shared" ] || shared="$root/../../shared/bench"
genshapes="${GENSHAPES:-$shared/genshapes.py}"
anchors="${ANCHORS:-$shared/anchor-patterns.txt}"
oomscan="${OOMSCAN:-$root/build/oomscan}"
data="$root/bench/data"
timebin=/usr/bin/time
. "$root/bench/timing.sh"
for need in "$genshapes" "$anchors" "$oomscan"; do
  [ -e "$need" ] || { echo "shapes.sh: missing $need" >&2; exit 2; }
done
[ -x "$timebin" ] || { echo "shapes.sh: needs $timebin (Debian: time)" >&2; exit 2; }
ugrep_bin="$(command -v ugrep || true)"
mkdir -p "$data"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# ---- inputs -------------------------------------------------------------------------------------
for shape in metrics nccl settings; do
  f="$data/shape-$shape-$mb.log"
  [ -s "$f" ] || { echo "generating $f" >&2; python3 "$genshapes" "$shape" "$mb" >"$f.tmp"; mv "$f.tmp" "$f"; }
done
ranks="$data/ranks-$nranks"
[ -d "$ranks" ] || { echo "generating $ranks" >&2; python3 "$genshapes" ranks "$nranks" 64 "$ranks.tmp"; mv "$ranks.tmp" "$ranks"; }
: >"$data/empty.log"
jobs="$data/jobs-$njobs"
if [ "$njobs" -gt 0 ] && [ ! -d "$jobs" ]; then
  echo "generating $jobs" >&2
  # a few metrics lines and the OOM traceback per job, as a Slurm job's output file
  python3 - "$genshapes" "$jobs.tmp" "$njobs" <<'EOF'
import importlib.util, os, random, sys
spec = importlib.util.spec_from_file_location("genshapes", sys.argv[1])
g = importlib.util.module_from_spec(spec); spec.loader.exec_module(g)
d, n = sys.argv[2], int(sys.argv[3])
os.makedirs(d, exist_ok=True)
rnd = random.Random(7)
for i in range(n):
    with open(os.path.join(d, "slurm-%d.out" % (100000 + i)), "w") as f:
        lines = g.metrics_lines(rnd)
        for _ in range(6):
            next(lines)
        f.write("(TaskRunner pid=2231) step:%d - actor/pg_loss:0.1 - timing_s/step:%.3f\n" % (i, rnd.random() * 60))
        f.write(g.OOM)
EOF
  mv "$jobs.tmp" "$jobs"
fi

# ---- measuring ----------------------------------------------------------------------------------
# run LABEL CMD...: one timed run (timing.sh); its output in $tmp/LABEL.out, "seconds peakKiB"
# appended to $tmp/LABEL.t.
run() { local label="$1"; shift; timed "$tmp/$label.t" "$tmp/$label.out" "$tmp/$label.err" "$@"; }
secs() { cut -d' ' -f1 "$tmp/$1.t" | median; }
rss() { cut -d' ' -f2 "$tmp/$1.t" | sort -n | tail -n 1 | awk '{printf "%.0f", $1/1024}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f", a / b; else printf "-" }'; }
found() { # LABEL: CUDA OOM findings (occurrences summed) in oomscan's JSON output
  python3 -c '
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    print(sum(f.get("occurrences", 1) for f in d["findings"] if f["class"] == "cuda_oom"))
except Exception:
    print("?")' "$tmp/$1.out"
}

# row NAME WANT OOMSCAN-ARGS -- GREP-ARGS: interleaved runs of oomscan (and --before), grep, ugrep
row() {
  local name="$1" want="$2"; shift 2
  local oargs=() gargs=()
  while [ "$1" != "--" ]; do oargs+=("$1"); shift; done
  shift
  gargs=("$@")
  for _ in $(seq "$runs"); do
    run o "$oomscan" --format json "${oargs[@]}"
    [ -n "$before" ] && run b "$before" --format json "${oargs[@]}"
    run g grep "${gargs[@]}"
    [ -n "$ugrep_bin" ] && run u "$ugrep_bin" "${gargs[@]}"
  done
  local o g u="-" b="-" br="-"
  o=$(secs o); g=$(secs g)
  [ -n "$ugrep_bin" ] && u=$(secs u)
  if [ -n "$before" ]; then b=$(secs b); br=$(ratio "$b" "$g"); fi
  last_o=$o
  echo "| $name | $br | $(ratio "$o" "$g") | $(ratio "$o" "$u") | $b | $o | $g | $u | $(rss o) | $(found o)/$want |"
  rm -f "$tmp"/?.t
}

# startup_row: an empty file, where /usr/bin/time's 10 ms steps are the whole answer: each command run
# 20 times in a row, timed as a batch (bash's EPOCHREALTIME), in 10 interleaved rounds; the median
# batch over 20 is the time of one start (the shell's fork and exec included, alike for every tool).
startup_row() {
  local e="$data/empty.log" r lab t0 t1 n=20
  local -A cmd=([o]="$oomscan --format json $e" [g]="grep -E -f $anchors $e")
  [ -n "$before" ] && cmd[b]="$before --format json $e"
  [ -n "$ugrep_bin" ] && cmd[u]="$ugrep_bin -E -f $anchors $e"
  for r in $(seq 10); do
    for lab in o b g u; do
      [ -n "${cmd[$lab]:-}" ] || continue
      t0=$EPOCHREALTIME
      for _ in $(seq $n); do ${cmd[$lab]} >/dev/null 2>&1 || true; done
      t1=$EPOCHREALTIME
      awk -v a="$t0" -v b="$t1" -v n=$n 'BEGIN{printf "%.5f 0\n", (b - a) / n}' >>"$tmp/$lab.t"
    done
  done
  "$timebin" -f "%e %M" -o "$tmp/one" $oomscan --format json "$e" >"$tmp/o.out" 2>/dev/null || true
  local o g u="-" b="-" br="-"
  o=$(secs o); g=$(secs g)
  [ -n "$ugrep_bin" ] && u=$(secs u)
  if [ -n "$before" ]; then b=$(secs b); br=$(ratio "$b" "$g"); fi
  echo "| empty file (start-up, 200 starts each) | $br | $(ratio "$o" "$g") | $(ratio "$o" "$u") | $b | $o | $g | $u | $(awk '{printf "%.0f", $2/1024}' "$tmp/one") | $(found o)/0 |"
  rm -f "$tmp"/?.t
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "oomscan: $oomscan ($("$oomscan" --version))${before:+; before: $before}"
echo "yardsticks: $(grep --version | head -n1)${ugrep_bin:+; $(ugrep --version | head -n1 | cut -d' ' -f1-2)}"
echo "runs: $runs each, interleaved; medians; ratios are oomscan's time over the yardstick's"
echo
echo "| input | before / grep | oomscan / grep | oomscan / ugrep | before s | oomscan s | grep s | ugrep s | oomscan peak MiB | OOM found |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
declare -A shape_s=()
for shape in metrics nccl settings; do
  f="$data/shape-$shape-$mb.log"
  row "$mb MiB $shape" 1 "$f" -- -E -f "$anchors" "$f"
  shape_s[$shape]=$last_o
done
row "$nranks rank files of 64 KiB (grep -r)" 1 "$ranks" -- -r -E -f "$anchors" "$ranks"
startup_row
[ "$njobs" -gt 0 ] && row "$njobs small job logs (grep -r)" "$njobs" "$jobs" -- -r -E -f "$anchors" "$jobs"
if [ -n "${MIXED_MBPS:-}" ]; then
  line="the mixed log's MiB/s ($MIXED_MBPS) over each shape's (within 2x):"
  for shape in metrics nccl settings; do
    line="$line $shape $(awk -v m="$MIXED_MBPS" -v mb="$mb" -v s="${shape_s[$shape]}" \
      'BEGIN{ printf "%.2f (%.0f MiB/s)", (s > 0) ? m / (mb / s) : 0, (s > 0) ? mb / s : 0 }'),"
  done
  echo
  echo "${line%,}"
fi
exit 0
