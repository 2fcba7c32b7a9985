#!/bin/sh
# hostile.sh OOMSCAN SOURCE_DIR - hostile inputs (docs/reliability.md): every one ends in bounded time
# with a message naming the input and the limit, the input marked partial, and nothing found elsewhere
# lost; damaged compressed logs keep what they held; a directory scan reads only regular files; the
# report file is replaced only by a complete one.
set -u
oomscan=$1 src=$2
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$oomscan") src=$(abspath "$src")
cd "$t" || exit 2
oom=$src/fixtures/golden/swift-interleaved-oom.log
cp "$oom" oom.log
# status and error of input $2 in JSON report $1, and the number of findings
st() { jq -r --arg p "$2" '.inputs[] | select(.path == $p) | .status' "$1"; }
nfind() { jq '.findings | length' "$1"; }

# 1. A truncated xz / zstd / bzip2 log keeps every byte decoded before the cut, so the OOM at its end is
#    still found and the input is partial (gzip did this already). zstd decodes whole blocks: the log is
#    one frame and a second frame holds the tail, cut in the middle.
xz -k oom.log && head -c $(($(wc -c < oom.log.xz) - 12)) oom.log.xz > cut.xz
bzip2 -k oom.log && head -c $(($(wc -c < oom.log.bz2) - 4)) oom.log.bz2 > cut.bz2
seq 1 20000 > tail.txt
{ zstd -q -c oom.log; zstd -q -c tail.txt; } > two.zst && head -c $(($(wc -c < two.zst) - 40)) two.zst > cut.zst
for f in cut.xz cut.bz2 cut.zst; do
  "$oomscan" -f json "$f" > "$f.json" 2> "$f.err"; rc=$?
  [ $rc -eq 2 ] && [ "$(nfind "$f.json")" -ge 1 ] && [ "$(st "$f.json" "$f")" = partial ] && ok ||
    bad "$f: exit $rc, $(nfind "$f.json") finding(s), status $(st "$f.json" "$f")"
  grep -q "^oomscan: $f: truncated .* data ([0-9]* bytes decoded)" "$f.err" && ok || bad "$f: $(cat "$f.err")"
done

# 2. A 776-byte .tar.zst whose sparse member decodes to 100 GiB: stopped by the ratio limit after the
#    first 64 MiB, the member partial, the message naming input and limit. Made here (GNU tar --sparse).
#    --binary: its zeros are a binary member, skipped unread otherwise (issue 33), and the limit untried.
if truncate -s 100G sparse.log 2> /dev/null && echo tail >> sparse.log &&
   tar --sparse -cf - sparse.log | zstd -q -19 > bomb.tar.zst 2> /dev/null; then
  rm -f sparse.log
  "$oomscan" -f json --binary bomb.tar.zst oom.log > bomb.json 2> bomb.err; rc=$?
  [ $rc -eq 2 ] && [ "$(st bomb.json bomb.tar.zst:sparse.log)" = partial ] && [ "$(nfind bomb.json)" -ge 1 ] && ok ||
    bad "zstd bomb: exit $rc, status $(st bomb.json bomb.tar.zst:sparse.log), $(nfind bomb.json) finding(s)"
  grep -q "^oomscan: bomb.tar.zst:sparse.log: stopped after .*(--limit ratio=1000)" bomb.err && ok ||
    bad "zstd bomb: $(cat bomb.err)"
else
  rm -f sparse.log
  echo "skipped: no sparse 100G file here"
fi

# 3. 10 MB of gzip holding 10 GB of zeros (a 100 MB member, concatenated 100 times): the default ratio
#    limit stops it; --limit bytes stops /dev/zero, named on the command line, at exactly that size.
head -c 100000000 /dev/zero | gzip -9 > z.gz
i=0; while [ $i -lt 100 ]; do cat z.gz; i=$((i + 1)); done > zeros.gz
"$oomscan" -f json zeros.gz oom.log > zeros.json 2> zeros.err; rc=$?
[ $rc -eq 2 ] && [ "$(st zeros.json zeros.gz)" = partial ] && [ "$(nfind zeros.json)" -ge 1 ] && ok ||
  bad "gzip of zeros: exit $rc, status $(st zeros.json zeros.gz)"
grep -q "^oomscan: zeros.gz: stopped after .* a decompression bomb? (--limit ratio=1000)" zeros.err && ok ||
  bad "gzip of zeros: $(cat zeros.err)"
"$oomscan" -f json --limit bytes=3M /dev/zero > devzero.json 2> devzero.err; rc=$?
[ $rc -eq 2 ] && [ "$(jq '.inputs[0].bytes' devzero.json)" = 3145728 ] && ok || bad "/dev/zero: exit $rc"
grep -q "^oomscan: /dev/zero: stopped after 3 MiB of decoded data: the limit per input (--limit bytes=3145728)" \
  devzero.err && ok || bad "/dev/zero: $(cat devzero.err)"

# 4. Many archive members: past --limit members the input stops, named, with the members before kept.
mkdir m && (cd m && i=0; while [ $i -lt 300 ]; do : > "e$i.log"; i=$((i + 1)); done) && cp oom.log m/a.log
tar -C m -czf many.tar.gz a.log $(cd m && ls e*.log)
"$oomscan" -f json --limit members=100 many.tar.gz > many.json 2> many.err; rc=$?
[ $rc -eq 2 ] && [ "$(nfind many.json)" -ge 1 ] && [ "$(jq '.inputs | length' many.json)" -eq 101 ] && ok ||
  bad "members: exit $rc, $(jq '.inputs | length' many.json) inputs"
grep -q "^oomscan: many.tar.gz: stopped after 100 archive members: the limit per input (--limit members=100)" \
  many.err && ok || bad "members: $(cat many.err)"

# 5. A directory scan reads regular files only, directly or through a symlink: a FIFO (would block
#    for ever), /dev/zero (never ends), a socket are skipped; a symlink loop or a dangling link is
#    reported once. A named FIFO is still read (<(cmd) is one).
mkdir d && cp oom.log d/a.log && mkfifo d/fifo && ln -s fifo d/to-fifo && ln -s /dev/zero d/to-zero &&
  ln -s loop1 d/loop2 && ln -s loop2 d/loop1
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' d/sock 2> /dev/null
timeout 60 "$oomscan" -f json d > d.json 2> d.err; rc=$?
[ $rc -eq 2 ] && [ "$(nfind d.json)" -ge 1 ] && ok || bad "directory with a FIFO: exit $rc"
[ "$(jq -r '[.inputs[].path] | join(" ")' d.json)" = "d/a.log d/loop1 d/loop2" ] && ok ||
  bad "directory scan read $(jq -c '[.inputs[].path]' d.json)"
[ "$(grep -c 'd/loop1: cannot open: Too many levels of symbolic links' d.err)" -eq 1 ] && ok || bad "loop: $(cat d.err)"
(cat oom.log > d/fifo &) ; timeout 60 "$oomscan" -f json d/fifo > fifo.json; rc=$?
[ $rc -eq 1 ] && ok || bad "a FIFO named on the command line: exit $rc"

# 6. "- -": stdin is read once, by one reader: every line of the pipe in one input.
seq 1 200000 | cat - oom.log | "$oomscan" -f json -j 2 - - > twice.json
[ "$(jq '.inputs | length' twice.json)" -eq 1 ] && [ "$(jq '.inputs[0].lines' twice.json)" -eq 200014 ] && ok ||
  bad "- -: $(jq -c '[.inputs[] | [.path, .lines]]' twice.json)"

# 7. Writing: stdout on a full device is exit 2 with a message; -o keeps the umask; -o on a full file
#    system leaves the previous report as it was (a private tmpfs of 12 KiB; skipped without one).
"$oomscan" oom.log > /dev/full 2> full.err; rc=$?
[ $rc -eq 2 ] && grep -q "^oomscan: standard output: write failed: No space left on device" full.err && ok ||
  bad "stdout on /dev/full: exit $rc, $(cat full.err)"
(umask 022 && "$oomscan" -o r644.txt oom.log); [ "$(stat -c %a r644.txt)" = 644 ] && ok || bad "-o ignores umask 022"
(umask 077 && "$oomscan" -o r600.txt oom.log); [ "$(stat -c %a r600.txt)" = 600 ] && ok || bad "-o ignores umask 077"
mkdir mnt
if unshare -m sh -c "mount -t tmpfs -o size=12k tmpfs mnt" 2> /dev/null; then
  unshare -m sh -c "mount -t tmpfs -o size=12k tmpfs mnt && echo OLD > mnt/r.json &&
    head -c 8192 /dev/zero > mnt/fill; '$oomscan' -f json -o mnt/r.json oom.log 2> full-o.err; echo \$? > full-o.rc;
    cat mnt/r.json > full-o.kept; ls mnt > full-o.ls"
  [ "$(cat full-o.rc)" = 2 ] && [ "$(cat full-o.kept)" = OLD ] && [ "$(cat full-o.ls | tr '\n' ' ')" = "fill r.json " ] &&
    ok || bad "-o on a full disk: exit $(cat full-o.rc), report now '$(head -c 40 full-o.kept)', left $(cat full-o.ls)"
  grep -q "^oomscan: mnt/r.json: write failed: No space left on device; the previous report is unchanged" full-o.err &&
    ok || bad "-o on a full disk: $(cat full-o.err)"
else
  echo "skipped: -o on a full file system (cannot mount a private tmpfs here: not root)"
fi

# 7b. A user pattern with catastrophic backtracking, (a+)+$, on lines where it fails: each line costs
#    PCRE2's whole match limit; past the per-input budget the pattern is skipped there, and said so.
mkdir evil && printf '%s\n' '{"format":"oomscan-patterns/1","family":"evil","patterns":[' \
  ' {"id":"cuda_oom.evil","class":"cuda_oom","literals":["aaaa"],"regex":"(a+)+$"}]}' > evil/evil.json
i=0; while [ $i -lt 500 ]; do echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaab; i=$((i + 1)); done > evil.log
cat oom.log >> evil.log
"$oomscan" -f json --patterns evil evil.log > evil.json 2> evil.err; rc=$?
[ $rc -eq 2 ] && [ "$(st evil.json evil.log)" = partial ] && [ "$(nfind evil.json)" -ge 1 ] && ok ||
  bad "(a+)+\$: exit $rc, status $(st evil.json evil.log)"
grep -q "^oomscan: evil.log: regex work limit: 64 lines hit PCRE2's match limit; pattern cuda_oom.evil skipped.*(--limit regex=64)" \
  evil.err && ok || bad "(a+)+\$: $(cat evil.err)"

# 8. Numbers out of range in --state and merge input (1e999 is infinity to strtod): clamped or refused,
#    never cast as they are (undefined behaviour; the ASan+UBSan build runs this and would say so).
"$oomscan" -f ndjson oom.log > rec.ndjson
sed -e 's/"input":0/"input":1e999/; s/"occurrences":[0-9]*/"occurrences":1e999/; s/"line":[0-9]*/"line":1e300/' \
    -e 's/"inputs":1/"inputs":1e999/; s/"dropped":0/"dropped":-1e999/; s/"ranks_dropped":0/"ranks_dropped":1e999/' \
    -e 's/"votes":{}/"votes":{"pytorch":1e999}/; s/"first_time":null/"first_time":"1 0 1 0 99999999999 1 1 0 0 0 0 1e999"/' \
    rec.ndjson > huge.ndjson
"$oomscan" merge huge.ndjson rec.ndjson > merged.ndjson 2> merged.err; rc=$?
[ $rc -le 2 ] && ! grep -q "runtime error" merged.err && [ -s merged.ndjson ] && ok ||
  bad "merge of out-of-range numbers: exit $rc, $(head -c 300 merged.err)"
grep -q "^oomscan: huge.ndjson" merged.err && ok || bad "a record with a year 99999999999 was not refused"
"$oomscan" -f ndjson --state st oom.log > /dev/null
sed -e 's/"offset":[0-9]*/"offset":1e999/; s/"marker":-1/"marker":1e999/; s/"size":[0-9]*/"size":1e999/' \
    -e 's/"inputs":1/"inputs":-1e999/; s/"occurrences":[0-9]*/"occurrences":1e999/' st > st2 && mv st2 st
"$oomscan" -f ndjson --state st oom.log > st.out 2> st.err; rc=$?
[ $rc -le 2 ] && ! grep -q "runtime error" st.err && ok || bad "--state with out-of-range numbers: exit $rc, $(head -c 300 st.err)"

# 9. --state: a run holding the lock longer than --limit lock-wait makes the next one give up with a
#    message instead of waiting for ever; a state file over --limit state is ignored with a warning.
"$oomscan" -f ndjson --state lk oom.log > /dev/null
(flock 9 && exec sleep 8) 9> lk.lock & holder=$!  # exec: killing $holder releases the lock
sleep 0.5
"$oomscan" -f ndjson --state lk --limit lock-wait=1 oom.log > lk.out 2> lk.err; rc=$?
kill $holder 2> /dev/null; wait $holder 2> /dev/null
[ $rc -eq 2 ] && grep -q "^oomscan: lk.lock: another run has held the lock for 1 s: giving up (--limit lock-wait=1)" lk.err &&
  ok || bad "lock wait: exit $rc, $(cat lk.err)"
"$oomscan" -f ndjson --state lk --limit state=100 oom.log > big.out 2> big.err; rc=$?
[ $rc -eq 1 ] && [ -s big.out ] && grep -q "^oomscan: lk: [0-9]* bytes, more than the limit (--limit state=100): starting afresh" big.err &&
  ok || bad "state size: exit $rc, $(cat big.err)"

# 10. Findings in the whole run: past --limit findings the new ones are counted (findings_dropped), not
#     kept, said once on the input where it happened, which is partial.
g=$src/fixtures/golden
"$oomscan" -f json --limit findings=2 "$g/swift-interleaved-oom.log" "$g/kernel-oom-legacy-pair.log" \
  "$g/sigkill-then-childfailed.log" "$g/nccl-error-after-oom.log" > capped.json 2> capped.err; rc=$?
[ $rc -eq 2 ] && [ "$(nfind capped.json)" -eq 2 ] && [ "$(jq '.findings_dropped' capped.json)" -ge 1 ] &&
  [ "$(st capped.json "$g/sigkill-then-childfailed.log")" = partial ] && ok ||
  bad "findings limit: exit $rc, $(nfind capped.json) findings, $(jq -c '[.inputs[].status]' capped.json)"
[ "$(grep -c "findings kept: the limit of the run; .*(--limit findings=2)" capped.err)" -eq 1 ] && ok ||
  bad "findings limit: $(cat capped.err)"

# 11. SIGTERM / SIGINT during a scan: the report is written whole with what was found, the input being
#     read is partial ("interrupted"), the inputs not begun are listed as not read. A pipe that stays
#     open (a hung job) is where it matters; the pipe's writer here ends on its own a little later.
for sig in TERM INT; do
  (cat oom.log; sleep 4) | "$oomscan" -f json -j 1 - oom.log > sig.json 2> sig.err & pid=$!
  sleep 1; kill -$sig $pid; wait $pid; rc=$?
  [ $rc -eq 2 ] && [ "$(nfind sig.json)" -ge 1 ] && [ "$(st sig.json '<stdin>')" = partial ] &&
    [ "$(jq -r '.inputs[1].error' sig.json)" = "not read: interrupted before this input" ] && ok ||
    bad "SIG$sig: exit $rc, $(jq -c '[.inputs[] | [.path, .status, .error]]' sig.json 2>&1 | head -c 300)"
done
wait

finish hostile
