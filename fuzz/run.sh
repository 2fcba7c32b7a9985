#!/bin/sh
# run.sh BUILD SECONDS [TARGET...] - run each fuzz target of BUILD (configured with -DOOMSCAN_FUZZ=ON)
# for SECONDS from the seed corpora (fuzz/seeds.sh, and fuzz/corpus/<target> when committed), keeping what it finds in BUILD/fuzz/corpus/<target>.
# A target with a dictionary (fuzz/<target>.dict) is given it.
# Exit 1 on the first crash, leak or sanitizer report (libFuzzer writes the input as crash-*/leak-*).
# CI runs it for a short smoke (.ci/test); docs/reliability.md has the long run and its result.
set -eu
build=$(cd "$1" && pwd) secs=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
targets=${*:-$(cd "$build/fuzz" && ls fuzz_* | sed 's/^fuzz_//' | grep -v '\.')}
seeds=$build/fuzz/seeds
[ -d "$seeds" ] || sh "$here/seeds.sh" "$build/oomscan" "$seeds"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in $targets; do
  corpus=$build/fuzz/corpus/$t
  mkdir -p "$corpus" "$build/fuzz/artifacts"
  echo "== fuzz_$t: $secs s"
  if ! (cd "$build/fuzz/artifacts" && "$build/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
          -max_len=262144 -print_final_stats=1 $(ls "$here/$t.dict" 2> /dev/null | sed 's/^/-dict=/') \
          "$corpus" "$seeds/$t" $(ls -d "$here/corpus/$t" 2> /dev/null) \
          > "$build/fuzz/$t.log" 2>&1); then
    tail -n 40 "$build/fuzz/$t.log"
    echo "fuzz_$t FAILED (input in $build/fuzz/artifacts)"
    exit 1
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+ *DONE" "$build/fuzz/$t.log" | tr '\n' ' '
  echo
done
