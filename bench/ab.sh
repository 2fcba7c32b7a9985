#!/usr/bin/env bash
# bench/ab.sh - two commands timed in N interleaved pairs (A, B, A, B, ...): each one's wall times
# sorted (to the millisecond, from date +%s%N) and its median user time (GNU time): for a before/after
# of one change on a shared, noisy machine, where the speed moves by a tenth from one minute to the
# next and only interleaving compares like with like.
#
#   bench/ab.sh N "command A" "command B"
# Output of the commands goes to /dev/null.
set -euo pipefail
if [ $# -ne 3 ] || ! [ "$1" -gt 0 ] 2>/dev/null; then
  echo "usage: bench/ab.sh N \"command A\" \"command B\"" >&2
  exit 2
fi
n=$1 a=$2 b=$3
t=$(mktemp)
trap 'rm -f "$t" "$t.u"' EXIT
one() { # label, command
  local s e
  s=$(date +%s%N)
  /usr/bin/time -f "%U" -o "$t.u" bash -c "$2 >/dev/null 2>&1" || true
  e=$(date +%s%N)
  echo "$1 $(( (e - s) / 1000000 )) $(cat "$t.u" | tail -1)" >> "$t"
}
for _ in $(seq "$n"); do
  one A "$a"
  one B "$b"
done
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
for k in A B; do
  walls=$(awk -v k="$k" '$1 == k {print $2}' "$t" | sort -n | tr '\n' ' ')
  med=$(awk -v k="$k" '$1 == k {print $2}' "$t" | median)
  user=$(awk -v k="$k" '$1 == k {print $3}' "$t" | median)
  echo "$k: median wall $med ms, median user $user s; walls (ms) $walls"
done
