#!/bin/sh
# stream.sh OOMSCAN SOURCE_DIR - live streams: NDJSON from a slow pipe arrives before the end of input,
# updates carry later changes, the final state equals a batch scan; SIGTERM flushes and exits cleanly;
# --follow survives appends, rotation and truncation.
set -u
oomscan=$1 src=$2
case $oomscan in /*) ;; *) oomscan=$(pwd)/$oomscan ;; esac
case $src in /*) ;; *) src=$(pwd)/$src ;; esac
t=$(mktemp -d)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    rm -rf "$t"
}
trap cleanup EXIT
fails=0 passes=0
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
findings() { sed -n '/"findings":/,$p' "$1"; }
# distinct ids in an NDJSON file, and ids written more than once as a new "finding"
nids() { cut -c8-23 "$1" | sort -u | grep -c .; }
dups() { grep '"type":"finding"' "$1" | cut -c8-23 | sort | uniq -d; }
# wait (up to $3 seconds) until NDJSON file $2 holds $1 distinct ids
waitfor() {
    i=0
    while [ "$i" -lt $(($3 * 10)) ]; do
        [ -s "$2" ] && [ "$(nids "$2")" -ge "$1" ] && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}
cd "$t" || exit 2
g=$src/fixtures/golden c=$src/fixtures/corpus
# Real logs, in an order that makes roles change: NCCL timeouts first (alone, a root), then the CUDA OOM
# that caused them, then a SIGKILL cascade, then the OOM log again (more occurrences).
set -- "$c/nccl_timeout-sglang-1691.log" "$g/nccl-error-after-oom.log" "$g/sigkill-then-childfailed.log" \
    "$g/nccl-error-after-oom.log"
cat "$@" > job.log
"$oomscan" --format json - < job.log > batch.json
want=$(grep -c '"pattern":' batch.json)
[ "$want" -ge 5 ] && ok || bad "fixture should give at least 5 findings, got $want"

# 1. A slow pipe: lines trickle in; the writer keeps the pipe open until every finding has arrived
#    (or 30 s passed), so records that arrive were written before the end of input.
mkfifo pipe
"$oomscan" --format ndjson < pipe > live.ndjson 2> live.err &
pid=$!
pids="$pids $pid"
{
    # line by line, with a pause after each log (longer than the 2 s flush) so that findings go out
    # before the next log changes them
    for part in "$@"; do
        while IFS= read -r line; do
            printf '%s\n' "$line"
            sleep 0.02
        done < "$part"
        sleep 3
    done
    if waitfor "$want" live.ndjson 30; then echo early > early; fi
} > pipe
wait "$pid"; rc=$?
[ $rc -eq 1 ] && ok || bad "pipe: exit $rc, want 1 ($(cat live.err))"
[ -f early ] && ok || bad "pipe: records did not arrive before the end of input ($(nids live.ndjson) of $want)"
[ -z "$(dups live.ndjson)" ] && ok || bad "pipe: a finding was written twice as new: $(dups live.ndjson)"
grep -q '"type":"update"' live.ndjson && ok || bad "pipe: no update record although findings changed"
grep -q '"changes":\[[^]]*"occurrences"' live.ndjson && ok || bad "pipe: no occurrences update"
"$oomscan" merge --format json live.ndjson > live.json
findings batch.json > b.txt
findings live.json > l.txt
cmp -s b.txt l.txt && ok || { bad "pipe: final state differs from the batch scan"; diff b.txt l.txt | head -20; }

# 2. SIGTERM while the writer still holds the pipe open: what was written is scanned and flushed at once.
mkfifo pipe2
"$oomscan" --format ndjson < pipe2 > term.ndjson 2> term.err &
pid=$!
pids="$pids $pid"
exec 3> pipe2
cat job.log >&3
sleep 1
kill -TERM "$pid"
wait "$pid"; rc=$?
exec 3>&-
[ $rc -eq 1 ] && ok || bad "SIGTERM: exit $rc, want 1 ($(cat term.err))"
"$oomscan" merge --format json term.ndjson > term.json
findings term.json > tt.txt
cmp -s b.txt tt.txt && ok || bad "SIGTERM: not everything written was flushed ($(nids term.ndjson) of $want ids)"

# 3. --follow: appended, rotated (a new file at the path), truncated.
: > f.log
"$oomscan" --format ndjson --follow f.log > follow.ndjson 2> follow.err &
pid=$!
pids="$pids $pid"
cat "$g/nccl-error-after-oom.log" >> f.log
waitfor 2 follow.ndjson 30 && ok || bad "follow: appended findings did not arrive"
grep -q '"class":"cuda_oom"' follow.ndjson && ok || bad "follow: no cuda_oom after append"
mv f.log f.log.1
cp "$c/nccl_timeout-sglang-1691.log" f.log
waitfor 4 follow.ndjson 30 && ok || bad "follow: nothing after rotation ($(nids follow.ndjson) ids)"
grep -q '"class":"nccl_timeout"' follow.ndjson && ok || bad "follow: rotated file not read"
: > f.log
cat "$g/sigkill-then-childfailed.log" >> f.log
waitfor 6 follow.ndjson 30 && ok || bad "follow: nothing after truncation ($(nids follow.ndjson) ids)"
grep -q '"class":"host_oom_kill"' follow.ndjson && ok || bad "follow: truncated file not read again"
kill -TERM "$pid"
wait "$pid"; rc=$?
[ $rc -eq 1 ] && ok || bad "follow: exit $rc after SIGTERM, want 1 ($(cat follow.err))"
[ -z "$(dups follow.ndjson)" ] && ok || bad "follow: a finding was written twice as new"
grep -q '"role":"consequence"' follow.ndjson && ok || bad "follow: no consequence across the rotated files"

# 4. Compressed data on a pipe is a file, not a live log: decoded, as a path would be (issue 33).
gzip -c "$g/nccl-error-after-oom.log" | "$oomscan" --format ndjson > gz.ndjson 2> gz.err; rc=$?
[ $rc -eq 1 ] && ok || bad "gzip on a pipe: exit $rc, want 1 ($(cat gz.err))"
"$oomscan" --format ndjson "$g/nccl-error-after-oom.log" > gzf.ndjson
[ "$(nids gz.ndjson)" = "$(nids gzf.ndjson)" ] && ok || bad "gzip on a pipe: $(nids gz.ndjson) findings, as a file $(nids gzf.ndjson)"

# 5. The stream sniffs with input.c's sniffer: a log whose first line starts with "BZh" (not bzip2's
#    "BZh" plus a block-size digit) scans on a pipe as it does as a file (it used to be refused as
#    compressed).
{ echo "BZhang trainer: starting run"; cat "$g/nccl-error-after-oom.log"; } > bzh.log
"$oomscan" --format ndjson bzh.log > bzh.file.ndjson 2>/dev/null
cat bzh.log | "$oomscan" --format ndjson > bzh.pipe.ndjson 2> bzh.err; rc=$?
[ $rc -eq 1 ] && ok || bad "BZh text on a pipe: exit $rc, want 1 ($(cat bzh.err))"
[ "$(nids bzh.pipe.ndjson)" = "$(nids bzh.file.ndjson)" ] && [ "$(nids bzh.file.ndjson)" -gt 0 ] && ok ||
    bad "BZh text on a pipe: $(nids bzh.pipe.ndjson) findings, as a file $(nids bzh.file.ndjson)"

# 6. --follow implies NDJSON: no --format needed (issue 17).
cp "$g/xid79-fallen-off-bus.log" implied.log
"$oomscan" --follow implied.log > implied.ndjson 2> implied.err &
pid=$!; pids="$pids $pid"
waitfor 1 implied.ndjson 20
kill -TERM "$pid"; wait "$pid"; rc=$?
[ $rc -eq 1 ] && grep -q '"type":"finding"' implied.ndjson && ok || bad "--follow without --format: exit $rc, $(head -c 200 implied.ndjson) $(cat implied.err)"

# 7. Many inputs are a batch, not a stream (issue 33): nothing is written while a later input (here a
#    FIFO whose writer has not come yet) is still being read, then each finding once, final.
mkfifo later
"$oomscan" --format ndjson --job-id 77 -j 2 "$g/xid79-fallen-off-bus.log" later > many.ndjson 2> many.err &
pid=$!; pids="$pids $pid"
sleep 1
[ ! -s many.ndjson ] && ok || bad "a batch wrote a record before its last input was read"
: > later
wait "$pid"; rc=$?
[ $rc -eq 1 ] && ok || bad "many inputs: exit $rc ($(cat many.err))"
[ "$(grep -c '"type":"finding"' many.ndjson)" -ge 1 ] && ! grep -q '"type":"update"' many.ndjson && ok ||
  bad "many inputs: not each finding once: $(jq -c '[.id, .type]' many.ndjson | tr '\n' ' ')"

echo "stream: $passes passed, $fails failed"
[ $fails -eq 0 ]
