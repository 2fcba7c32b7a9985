#!/bin/sh
# state.sh OOMSCAN SOURCE_DIR - --state: re-runs over a growing log read only the new bytes and report
# only new or changed findings; the union of the reports equals one scan of the final log; a replaced
# file starts over; two runs at once never both report a finding, and none is lost.
set -u
oomscan=$1 src=$2
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$oomscan") src=$(abspath "$src")
findings() { sed -n '/"findings":/,$p' "$1"; }
dups() { grep '"type":"finding"' "$1" | cut -c8-23 | sort | uniq -d; }
ids() { cut -c8-23 "$1" | sort -u; }
cd "$t" || exit 2
g=$src/fixtures/golden c=$src/fixtures/corpus
# Real logs of one cascade: NCCL timeouts, the CUDA OOM inside NCCL that caused them, a SIGKILL cascade,
# the OOM log again.
cat "$c/nccl_timeout-sglang-1691.log" "$g/nccl-error-after-oom.log" "$g/sigkill-then-childfailed.log" \
    "$g/nccl-error-after-oom.log" > job.log
size=$(wc -c < job.log)
b=$(wc -c < "$c/nccl_timeout-sglang-1691.log")
a=$(wc -c < "$g/nccl-error-after-oom.log")
# first cut: inside the OOM's traceback, in the middle of a line (frames before it, the error after it:
# the phase comes from frames the second run does not read again)
cut1=$((b + $(head -n 6 "$g/nccl-error-after-oom.log" | wc -c) + 20))
cut2=$((b + a + $(wc -c < "$g/sigkill-then-childfailed.log")))
"$oomscan" --format json job.log > batch.json

# 1. Growing in three steps, one run after each, and one run with nothing new.
head -c "$cut1" job.log > grow.log
"$oomscan" --format ndjson --state s1 grow.log > run1.ndjson; rc=$?
[ $rc -eq 1 ] && ok || bad "run 1: exit $rc"
"$oomscan" --format ndjson --state s1 grow.log > run2.ndjson
[ ! -s run2.ndjson ] && ok || bad "run 2 over an unchanged log reported again: $(cut -c1-80 run2.ndjson)"
tail -c +$((cut1 + 1)) job.log | head -c $((cut2 - cut1)) >> grow.log
"$oomscan" --format ndjson --state s1 grow.log > run3.ndjson
tail -c +$((cut2 + 1)) job.log >> grow.log
"$oomscan" --format ndjson --state s1 grow.log > run4.ndjson
grep -q "\"offset\":$size," s1 && ok || bad "state does not record the end of the log ($size)"
cat run1.ndjson run2.ndjson run3.ndjson run4.ndjson > runs.ndjson
[ -z "$(dups runs.ndjson)" ] && ok || bad "a finding was reported twice as new: $(dups runs.ndjson)"
# The sglang timeouts are stamped, the OOM's lines are not: another record's stamp is not the OOM's
# (issue 31), so nothing orders the timeouts after the OOM and they stay roots. A role changes when the
# cause arrives after its echo: the NCCL error the OOM below it causes (a cut between the two).
e=$(head -n 10 "$g/nccl-error-after-oom.log" | wc -c)
head -c $((e + 8)) "$g/nccl-error-after-oom.log" > echo.log
"$oomscan" --format ndjson --state s3 echo.log > echo1.ndjson
tail -c +$((e + 9)) "$g/nccl-error-after-oom.log" >> echo.log
"$oomscan" --format ndjson --state s3 echo.log > echo2.ndjson
grep -q '"class":"nccl_error".*"role":"root"' echo1.ndjson && ok || bad "the NCCL error was no root before its cause"
grep -q '"type":"update".*"changes":\["role"' echo2.ndjson && ok || bad "no role update when the cause arrived"
grep -q '"changes":\[[^]]*"occurrences"' runs.ndjson && ok || bad "no occurrences update when the OOM repeated"
"$oomscan" merge --format json runs.ndjson > runs.json
findings batch.json > b.txt
findings runs.json > r.txt
sed 's/grow\.log/job.log/' r.txt > r2.txt
cmp -s b.txt r2.txt && ok || { bad "reports of the runs do not add up to one scan of the log"; diff b.txt r2.txt | head -30; }
# the phase of the OOM cut through its traceback came from frames read by run 1
grep -q '"phase":"communication"' run3.ndjson && ok || bad "context across the cut lost (phase)"

# 2. Replaced by another file (rotation): starts over, reports only what is new to the state.
cp "$g/verl-log-prob-oom.log" grow.log.new
mv grow.log.new grow.log
"$oomscan" --format ndjson --state s1 grow.log > run5.ndjson
grep -q '"class":"cuda_oom"' run5.ndjson && ok || bad "rotated file not read from the start"
[ -z "$(cat run1.ndjson run3.ndjson run4.ndjson run5.ndjson | dups /dev/stdin)" ] && ok || bad "rotation re-reported old findings"

# 3. A broken state file is a warning, not a failure; the run reads everything.
echo '{"schema":' > s2
"$oomscan" --format ndjson --state s2 job.log > broken.ndjson 2> broken.err; rc=$?
[ $rc -eq 1 ] && ok || bad "broken state: exit $rc, want 1"
grep -q 'starting afresh' broken.err && ok || bad "broken state: no warning: $(cat broken.err)"
[ "$(ids broken.ndjson | grep -c .)" -eq "$(grep -c '"pattern":' batch.json)" ] && ok || bad "broken state: findings missing"

# 4. Two runs at once, over and over, while the log grows in uneven pieces: each finding reported once
#    as new, none lost. Runs take turns on the lock, so their records never interleave in all.ndjson.
: > live.log
(
    off=0
    for n in 700 300 1200 450 2000 800 5000 600 9000; do
        [ $off -ge "$size" ] && break
        tail -c +$((off + 1)) job.log | head -c "$n" >> live.log
        off=$((off + n))
        sleep 0.2
    done
    [ $off -lt "$size" ] && tail -c +$((off + 1)) job.log >> live.log
    touch writer.done
) &
writer=$!
runner() {
    while [ ! -f writer.done ]; do
        "$oomscan" --format ndjson --state s3 live.log >> all.ndjson 2>> runner.err
    done
}
runner &
r1=$!
runner &
r2=$!
wait "$writer" "$r1" "$r2"
"$oomscan" --format ndjson --state s3 live.log >> all.ndjson 2>> runner.err
cmp -s live.log job.log && ok || bad "writer did not produce the whole log"
[ ! -s runner.err ] && ok || bad "concurrent runs complained: $(head -3 runner.err)"
[ -z "$(dups all.ndjson)" ] && ok || bad "concurrent runs reported a finding twice: $(dups all.ndjson)"
sed -n 's/^[[:space:]]*"id":[[:space:]]*"\([0-9a-f]\{16\}\)".*/\1/p' batch.json | sort -u > want.ids
ids all.ndjson > got.ids
cmp -s want.ids got.ids && ok || { bad "concurrent runs lost or invented findings"; diff want.ids got.ids; }
lines=$(wc -l < all.ndjson)
good=$(grep -c '^{"id":"[0-9a-f]\{16\}",.*}$' all.ndjson)
[ "$lines" = "$good" ] && ok || bad "interleaved or broken records in the concurrent output"

# 5. The job's memory series survive a re-run (issue 32): DeepSpeed's see_memory_usage lines (a real
# log, deepspeedai/DeepSpeed#3606) read by run 1, the same lines again and a real CUDA OOM appended and
# read by run 2 alone; the OOM's trend has all four points (run 2 alone has two: no trend at all).
d=$src/fixtures/clean/deepspeed-see-memory-usage-deepspeed-3606.log
cat "$d" > tel.log
"$oomscan" --format ndjson --state s9 tel.log > tel1.ndjson 2>&1
cat "$d" "$g/nccl-error-after-oom.log" >> tel.log
"$oomscan" --format ndjson --state s9 tel.log > tel2.ndjson 2>&1
grep -q '"trend":{"metric":"gpu_max_allocated",[^}]*"from_step":1,"to_step":4,' tel2.ndjson && ok ||
  bad "the re-run's trend lost run 1's points: $(grep -o '"trend":{[^}]*}' tel2.ndjson | head -1)"

finish state
