#!/bin/sh
# seeds.sh OOMSCAN OUT - seed corpora for the fuzz targets, made from fixtures/ and patterns/: OUT/<target>/.
# A target's seeds are the inputs it reads in real use: logs in every container (pipeline), pattern data
# files (patterns: first byte = the folder, see fuzz_patterns.c), state files and NDJSON records that
# oomscan itself wrote over the fixtures (state, merge), crash dumps (pickle).
set -eu
oomscan=$1 out=$2
src=$(cd "$(dirname "$0")/.." && pwd)
g=$src/fixtures/golden
mkdir -p "$out/pipeline" "$out/patterns" "$out/state" "$out/merge" "$out/pickle"
i=0
for f in "$g"/*.log; do
  i=$((i + 1))
  cp "$f" "$out/pipeline/log$i"
  # one compressed form each, in turn, so every decoder has seeds
  case $((i % 4)) in
    0) gzip -c "$f" > "$out/pipeline/log$i.gz" ;;
    1) xz -c "$f" > "$out/pipeline/log$i.xz" ;;
    2) zstd -q -c "$f" > "$out/pipeline/log$i.zst" ;;
    3) bzip2 -c "$f" > "$out/pipeline/log$i.bz2" ;;
  esac
  # the NDJSON oomscan writes is what merge reads; a state file is what --state reads
  "$oomscan" -f ndjson "$f" > "$out/merge/rec$i" 2> /dev/null || true
  "$oomscan" -f ndjson --state "$out/state/state$i" "$f" > /dev/null 2>&1 || true
  rm -f "$out/state/state$i.lock"
done
tar -C "$g" -czf "$out/pipeline/job.tar.gz" $(cd "$g" && ls *.log | head -n 3)
(cd "$g" && zip -q "$out/pipeline/job.zip" $(ls *.log | head -n 2))
for dir in failures context remediation; do
  for f in "$src/patterns/$dir"/*.json; do
    [ -f "$f" ] || continue
    case $dir in failures) b='\000' ;; context) b='\001' ;; remediation) b='\002' ;; esac
    { printf "$b"; cat "$f"; } > "$out/patterns/$dir-$(basename "$f")"
  done
done
if [ -d "$src/fixtures/dumps" ]; then
  find "$src/fixtures/dumps" -type f -size -1M | while read -r f; do cp "$f" "$out/pickle/$(basename "$f")"; done
fi
echo "seeds: $(ls "$out/pipeline" | wc -l) pipeline, $(ls "$out/patterns" | wc -l) patterns, $(ls "$out/state" | wc -l) state, $(ls "$out/merge" | wc -l) merge, $(ls "$out/pickle" | wc -l) pickle"
