# bench/timing.sh - the timing both benchmark scripts share (sourced by run.sh and shapes.sh).
#
# timed RECORD OUT ERR CMD...: one run of CMD, its stdout to OUT and stderr to ERR; "seconds peakKiB"
# appended to RECORD. The seconds come from bash's EPOCHREALTIME (microseconds) around the run, not
# from GNU time, whose 10 ms steps were a sixth of the rank-file row; GNU time ($timebin) gives the
# peak RSS (its own fork and exec are in every tool's time alike). Output goes to a file, never
# /dev/null, where GNU grep stops at its first match.
timed() {
  local record="$1" out="$2" err="$3" t0 t1; shift 3
  t0=$EPOCHREALTIME
  "$timebin" -f "%M" -o "$record.rss" "$@" >"$out" 2>"$err" || true
  t1=$EPOCHREALTIME
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", b - a}') $(tail -n 1 "$record.rss")" >>"$record"
}

# median: of the numbers on standard input, one per line.
median() { sort -n | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
