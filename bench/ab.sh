#!/usr/bin/env bash
# bench/ab.sh - two commands timed in N interleaved pairs (A, B, A, B, ...), each one's wall times
# sorted and its median user time: for a before/after of one change on a shared, noisy machine, where
# the speed moves by a tenth from one minute to the next and only interleaving compares like with like.
#
#   bench/ab.sh N "command A" "command B"
# Output of the commands goes to /dev/null; the times come from /usr/bin/time (GNU time).
set -euo pipefail
if [ $# -ne 3 ] || ! [ "$1" -gt 0 ] 2>/dev/null; then
  echo "usage: bench/ab.sh N \"command A\" \"command B\"" >&2
  exit 2
fi
n=$1 a=$2 b=$3
t=$(mktemp)
trap 'rm -f "$t"' EXIT
for _ in $(seq "$n"); do
  /usr/bin/time -f "A %e %U" bash -c "$a >/dev/null 2>&1" 2>>"$t" || true
  /usr/bin/time -f "B %e %U" bash -c "$b >/dev/null 2>&1" 2>>"$t" || true
done
for k in A B; do
  walls=$(awk -v k="$k" '$1 == k {print $2}' "$t" | sort -n | tr '\n' ' ')
  user=$(awk -v k="$k" '$1 == k {print $3}' "$t" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
  med=$(awk -v k="$k" '$1 == k {print $2}' "$t" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
  echo "$k: median wall $med s, median user $user s; walls $walls"
done
