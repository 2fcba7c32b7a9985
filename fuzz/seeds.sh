#!/bin/sh
# seeds.sh OOMSCAN OUT - seed corpora for the fuzz targets, made from fixtures/ and patterns/: OUT/<target>/.
# A target's seeds are the inputs it reads in real use: logs in every container (pipeline), pattern data
# files (patterns: first byte = the folder, see fuzz_patterns.c), state files and NDJSON records that
# oomscan itself wrote over the fixtures (state, merge), crash dumps (pickle), logs after a first byte
# that picks how they are read (scan: fuzz_scan.c).
set -eu
oomscan=$1 out=$2
src=$(cd "$(dirname "$0")/.." && pwd)
g=$src/fixtures/golden
mkdir -p "$out/pipeline" "$out/patterns" "$out/state" "$out/merge" "$out/pickle" "$out/scan"
i=0
for f in "$g"/*.log; do
  i=$((i + 1))
  cp "$f" "$out/pipeline/log$i"
  # scan: a first byte that picks the read size and the history's source (fuzz_scan.c), then the log
  { printf "\\$(printf '%03o' $(( (i * 37) % 256 )))"; cat "$f"; } > "$out/scan/log$i"
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
# scan: logs that print settings too, so that the windows have names to read
j=0
for f in $(grep -rlE 'ppo_micro_batch_size_per_gpu|gpu_memory_utilization|param_offload|max_num_seqs|gradient_accumulation_steps' \
             "$src/fixtures" --include='*.log' | sort | head -n 16); do
  j=$((j + 1))
  { printf "\\$(printf '%03o' $(( (j * 53) % 256 )))"; cat "$f"; } > "$out/scan/settings$j"
done
# scan: logs that print the job's own memory lines (src/match/telemetry.c reads them through the scanner)
k=0
for f in $(grep -rlE 'Max_MA |perf/max_memory_allocated_gb:|CPU Virtual Memory:|memory \(MB\) \| allocated:' \
             "$src/fixtures" --include='*.log' | sort | head -n 8); do
  k=$((k + 1))
  { printf "\\$(printf '%03o' $(( (k * 71) % 256 )))"; cat "$f"; } > "$out/scan/telemetry$k"
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
# dumps: sources read together, split at "--dump--" (fuzz_dumps.c): every rank's flight recorder, an
# error file, a snapshot with its log; then wrong-typed variants of the JSON ones (a list for pg_config,
# a rank that is a name, NaN and 1e300 for numbers, a string for a list)
mkdir -p "$out/dumps"
d=$src/fixtures/dumps
sep() { printf '\n--dump--\n'; } # not in $(...), which would drop its last newline
if [ -d "$d" ]; then
  { cat "$d/flight_recorder_json/nccl_trace_rank_0.json"; sep; cat "$d/flight_recorder_json/nccl_trace_rank_1.json"; } > "$out/dumps/fr_json"
  { cat "$d/flight_recorder_mismatch/nccl_trace_rank_0"; sep; cat "$d/flight_recorder_mismatch/nccl_trace_rank_1"; } > "$out/dumps/fr_pickle"
  { cat "$d/memory_snapshot/train.log"; sep; cat "$d/memory_snapshot/oom_rank-0_snapshot.pickle"; } > "$out/dumps/snapshot"
  cp "$d/torchrun/job42_sfy4zqds/attempt_0/0/error.json" "$out/dumps/error_file"
  python3 - "$d" "$out/dumps" <<'PY'
import json, sys
d, out, sep = sys.argv[1], sys.argv[2], "\n--dump--\n"
r0 = json.load(open(d + "/flight_recorder_json/nccl_trace_rank_0.json"))
r1 = open(d + "/flight_recorder_json/nccl_trace_rank_1.json").read()
ef = json.load(open(d + "/torchrun/job42_sfy4zqds/attempt_0/0/error.json"))
variants = {
    "pg_config_list": lambda x: x.__setitem__("pg_config", list(x["pg_config"].values())),
    "rank_name": lambda x: x.__setitem__("rank", "node-2"),
    "rank_nan": lambda x: x.__setitem__("rank", float("nan")),
    "seq_big": lambda x: x["entries"][0].__setitem__("collective_seq_id", 1e300),
    "time_inf": lambda x: x["entries"][-1].__setitem__("time_created_ns", "inf"),
    "entries_object": lambda x: x.__setitem__("entries", {"0": x["entries"][0]}),
    "pg_status_list": lambda x: x.__setitem__("pg_status", [1, "2"]),
    "frames_string": lambda x: x["entries"][-1].__setitem__("frames", "f"),
}
for name, f in variants.items():
    x = json.loads(json.dumps(r0))
    f(x)
    open("%s/fr_%s" % (out, name), "w").write(json.dumps(x, allow_nan=True) + sep + r1)
for name, v in {"ts_big": 1e300, "ts_inf": "inf", "ts_list": [1]}.items():
    x = json.loads(json.dumps(ef))
    x["message"]["extraInfo"]["timestamp"] = v
    open("%s/error_%s" % (out, name), "w").write(json.dumps(x))
x = json.loads(json.dumps(ef))
x["message"] = ["not", "an", "object"]
open(out + "/error_message_list", "w").write(json.dumps(x))
PY
fi
echo "seeds: $(ls "$out/pipeline" | wc -l) pipeline, $(ls "$out/patterns" | wc -l) patterns, $(ls "$out/state" | wc -l) state, $(ls "$out/merge" | wc -l) merge, $(ls "$out/pickle" | wc -l) pickle, $(ls "$out/scan" | wc -l) scan, $(ls "$out/dumps" | wc -l) dumps"
