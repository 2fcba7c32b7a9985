#!/usr/bin/env bash
# bench/snapshot.sh - CUDA memory snapshots of growing length read by oomscan and by Python's own
# unpickler (issue 32): CPU seconds (user + sys, the least of RUNS interleaved runs, so that a busy
# machine slows both alike) and peak RSS (/usr/bin/time %M, the most of the runs).
#
# The inputs are made into bench/data/ (gitignored; reused when present) by
# fixtures/dumps/make_trace_snapshot.py with Debian's python3-torch: the 103k-event recording of the
# issue (--events 103000, pickle.dump itself), a 30 MB one and a 1 GiB one (--bytes: one training
# step's entries repeated, as a long recording repeats them). Python's unpickler is not run on the
# 1 GiB snapshot unless --python-1g is given: it needs about nine times the file in memory.
#
#   bench/snapshot.sh [--runs N] [--python-1g]
# Environment: OOMSCAN (default build/oomscan), PYTHON (default /usr/bin/python3, which has torch).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs=3 py1g=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --python-1g) py1g=1; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "snapshot.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
oomscan="${OOMSCAN:-$root/build/oomscan}"
python="${PYTHON:-/usr/bin/python3}"
gen="$root/fixtures/dumps/make_trace_snapshot.py"
data="$root/bench/data"
mkdir -p "$data"
[ -s "$data/snap-103k.pickle" ] || "$python" "$gen" --events 103000 "$data/snap-103k.pickle" >/dev/null
[ -s "$data/snap-30m.pickle" ] || "$python" "$gen" --bytes 30000000 "$data/snap-30m.pickle" >/dev/null
[ -s "$data/snap-1g.pickle" ] || "$python" "$gen" --bytes 1073741824 "$data/snap-1g.pickle" >/dev/null

# one run: "cpu_seconds rss_kb"
measure() { /usr/bin/time -f "%U %S %M" "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%.2f %d\n", $1 + $2, $3}'; }

printf '%-18s %12s %10s %12s %12s %12s %8s\n' input bytes events "oomscan s" "oomscan RSS" "python s" ratio
for name in snap-103k snap-30m snap-1g; do
  f="$data/$name.pickle"
  best_o=999999 rss_o=0 best_p=999999 rss_p=0
  for _ in $(seq "$runs"); do
    read -r t m < <(measure "$oomscan" --format json "$f" || true)
    best_o=$(awk -v a="$best_o" -v b="$t" 'BEGIN{print (b < a) ? b : a}'); if [ "$m" -gt "$rss_o" ]; then rss_o=$m; fi
    if [ "$name" != snap-1g ] || [ "$py1g" = 1 ]; then
      read -r t m < <(measure "$python" -c "import pickle; pickle.load(open('$f', 'rb'))")
      best_p=$(awk -v a="$best_p" -v b="$t" 'BEGIN{print (b < a) ? b : a}'); if [ "$m" -gt "$rss_p" ]; then rss_p=$m; fi
    fi
  done
  events=$( { "$oomscan" --format json "$f" || true; } | "$python" -c 'import json,sys; d=json.load(sys.stdin)
print(next((x["memory"]["snapshot"]["trace"]["events"] for x in d["findings"] if "snapshot" in x.get("memory", {})), 0))')
  if [ "$best_p" = 999999 ]; then py="-" ratio="-"; else
    py="$best_p s, $((rss_p / 1024)) MiB"; ratio=$(awk -v a="$best_o" -v b="$best_p" 'BEGIN{printf "%.2f", a / b}'); fi
  printf '%-18s %12d %10d %12s %12s %12s %8s\n' "$name" "$(stat -c %s "$f")" "$events" "$best_o" \
    "$((rss_o / 1024)) MiB" "$py" "$ratio"
done
