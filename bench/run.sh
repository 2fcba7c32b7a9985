#!/usr/bin/env bash
# bench/run.sh - the speed and memory benchmark of issue 6 (docs/performance.md shows its table).
#
# Builds its inputs into bench/data/ (gitignored; reused when present) with ../shared/bench/genlog.py,
# then runs oomscan and the yardsticks in turn, RUNS times each, interleaved so that a busy machine
# slows both alike, and prints medians, ratios, throughput, peak RSS (/usr/bin/time -f %M) and how many
# of the injected failures were found.
#
# Then it runs bench/shapes.sh (issue 18's log shapes, each as a ratio to grep) with the same RUNS;
# --no-shapes leaves them out, --quick passes --no-jobs (the 20,000 job logs take the longest).
#
#   bench/run.sh                    # sizes 64 256 1024 MiB, 16 files of 64 MiB, 3 runs
#   bench/run.sh --quick            # sizes 16 64, 4 files of 16 MiB, 3 runs: about a minute
#   bench/run.sh --sizes "64 256" --files 8 --file-mb 32 --runs 5
# Environment: OOMSCAN (binary; default build/oomscan, built by cmake when missing), GENLOG,
# ANCHORS (default ../shared/bench/{genlog.py,anchor-patterns.txt}).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
sizes="64 256 1024"
nfiles=16
file_mb=64
runs=3
shapes=1 shape_args=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) sizes="16 64"; nfiles=4; file_mb=16; shape_args="--no-jobs"; shift ;;
    --no-shapes) shapes=0; shift ;;
    --sizes) sizes="$2"; shift 2 ;;
    --files) nfiles="$2"; shift 2 ;;
    --file-mb) file_mb="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
genlog="${GENLOG:-$root/../shared/bench/genlog.py}"
anchors="${ANCHORS:-$root/../shared/bench/anchor-patterns.txt}"
oomscan="${OOMSCAN:-$root/build/oomscan}"
data="$root/bench/data"
timebin=/usr/bin/time
. "$root/bench/timing.sh"
for need in "$genlog" "$anchors"; do
  [ -f "$need" ] || { echo "run.sh: missing $need (set GENLOG / ANCHORS)" >&2; exit 2; }
done
[ -x "$timebin" ] || { echo "run.sh: needs $timebin (Debian: time) for peak RSS" >&2; exit 2; }
if [ ! -x "$oomscan" ]; then
  cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$root/build" -j"$(nproc)" >/dev/null
fi
mkdir -p "$data"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# ---- inputs -------------------------------------------------------------------------------------
# genlog prints the injected counts on stderr ("cuda_oom=2 host_oom_kill=1 ..."): kept beside each file.
gen() { # size_mb seed out
  if [ ! -s "$3" ] || [ ! -s "$3.counts" ]; then
    echo "generating $3 ($1 MiB)" >&2
    python3 "$genlog" "$1" "$2" >"$3.tmp" 2>"$3.counts.tmp"
    mv "$3.tmp" "$3"; mv "$3.counts.tmp" "$3.counts"
  fi
}
largest=0
for s in $sizes; do
  gen "$s" 7 "$data/log-$s.err"
  [ "$s" -gt "$largest" ] && largest=$s
done
big="$data/log-$largest.err"
if [ ! -s "$big.gz" ]; then echo "compressing $big" >&2; gzip -kf "$big"; fi
many="$data/many-$nfiles-$file_mb"
mkdir -p "$many"
for i in $(seq -w 1 "$nfiles"); do gen "$file_mb" "$((100 + 10#$i))" "$many/rank$i.err"; done
if [ ! -s "$many.tar.gz" ]; then
  echo "packing $many.tar.gz" >&2
  (cd "$many" && tar -czf "$many.tar.gz" ./*.err)
fi

# ---- measuring ----------------------------------------------------------------------------------
# run LABEL CMD...: one timed run (timing.sh); its output in $tmp/LABEL.out, "seconds peakKiB"
# appended to $tmp/LABEL.
run() { local label="$1"; shift; timed "$tmp/$label" "$tmp/$label.out" "$tmp/$label.err" "$@"; }
secs() { cut -d' ' -f1 "$tmp/$1" | median; }
rss() { cut -d' ' -f2 "$tmp/$1" | sort -n | tail -n 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", (b > 0) ? a / b : 0}'; }
mbps() { awk -v mb="$1" -v s="$2" 'BEGIN{printf "%.0f", (s > 0) ? mb / s : 0}'; }
# found LABEL COUNTS...: injected failures found (summed occurrences per injected class, capped at
# the injected number) over injected, from the last JSON output of LABEL.
found() {
  local label="$1"; shift
  python3 - "$tmp/$label.out" "$@" <<'EOF'
import json, sys
want = {}
for path in sys.argv[2:]:
    for kv in open(path).read().split():
        k, v = kv.split("=")
        want[k] = want.get(k, 0) + int(v)
got = {}
try:
    for f in json.load(open(sys.argv[1]))["findings"]:
        got[f["class"]] = got.get(f["class"], 0) + f.get("occurrences", 1)
except (ValueError, KeyError):
    pass
print("%d/%d" % (sum(min(got.get(k, 0), v) for k, v in want.items()), sum(want.values())))
EOF
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "oomscan: $("$oomscan" --version)"
echo "runs: $runs each, interleaved; medians; peak RSS is the largest of the runs"
echo

echo "| input | oomscan s | yardstick | yardstick s | ratio | oomscan MB/s | peak RSS MiB | found/injected |"
echo "| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |"
for s in $sizes; do
  f="$data/log-$s.err"
  for _ in $(seq "$runs"); do
    run "o$s" "$oomscan" --format json "$f"
    run "g$s" grep -c -E -f "$anchors" "$f"
  done
  o=$(secs "o$s"); g=$(secs "g$s")
  mixed_mbps=$(mbps "$s" "$o") # the largest size's, for the shapes' own throughput check
  echo "| $s MiB text | $o | grep -c -E -f anchors | $g | $(ratio "$o" "$g") | $(mbps "$s" "$o") |" \
       "$(awk -v k="$(rss "o$s")" 'BEGIN{printf "%.1f", k/1024}') | $(found "o$s" "$f.counts") |"
done

for _ in $(seq "$runs"); do
  run ogz "$oomscan" --format json "$big.gz"
  # shellcheck disable=SC2016 # $1 is the inner shell's
  run zcat sh -c 'zcat "$1" >/dev/null' sh "$big.gz"
done
o=$(secs ogz); z=$(secs zcat)
echo "| $largest MiB gzip | $o | zcat >/dev/null | $z | $(ratio "$o" "$z") | $(mbps "$largest" "$o") |" \
     "$(awk -v k="$(rss ogz)" 'BEGIN{printf "%.1f", k/1024}') | $(found ogz "$big.counts") |"

for _ in $(seq "$runs"); do
  run j1 "$oomscan" --format json -j 1 "$many"
  run j2 "$oomscan" --format json -j 2 "$many"
done
j1=$(secs j1); j2=$(secs j2)
total_mb=$((nfiles * file_mb))
echo "| $nfiles x $file_mb MiB, -j 2 | $j2 | same, -j 1 | $j1 | $(ratio "$j2" "$j1") (speed-up $(ratio "$j1" "$j2")x) |" \
     "$(mbps "$total_mb" "$j2") | $(awk -v k="$(rss j2)" 'BEGIN{printf "%.1f", k/1024}') | $(found j2 "$many"/*.counts) |"
if cmp -s "$tmp/j1.out" "$tmp/j2.out"; then det="identical"; else det="DIFFERENT"; fi

for _ in $(seq "$runs"); do run tgz "$oomscan" --format json "$many.tar.gz"; done
o=$(secs tgz)
echo "| tar.gz, $nfiles x $file_mb MiB | $o | | | | $(mbps "$total_mb" "$o") |" \
     "$(awk -v k="$(rss tgz)" 'BEGIN{printf "%.1f", k/1024}') | $(found tgz "$many"/*.counts) |"
echo
echo "-j 1 and -j 2 JSON: $det"

# every log shape's ratio to grep (issue 18), so one command shows whether any shape got slower
if [ "$shapes" -eq 1 ]; then
  echo
  # shellcheck disable=SC2086
  OOMSCAN="$oomscan" MIXED_MBPS="$mixed_mbps" "$root/bench/shapes.sh" --runs "$runs" $shape_args
fi
