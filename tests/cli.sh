#!/bin/sh
# cli.sh OOMSCAN SOURCE_DIR - the command line as users meet it. Archives are built here from the plain
# fixtures, so every container is covered without binary files in the repository.
set -u
oomscan=$1 src=$2
sample="$src/fixtures/golden/verl-log-prob-oom.log"
cascade="$src/fixtures/golden/nccl-error-after-oom.log"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0 passes=0
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
# number of findings in a JSON document
nfind() { grep -c '"pattern":' "$1"; }
# JSON key/value test, whatever the whitespace between them
has() { grep -Eq "\"$2\":[[:space:]]*$3" "$1"; }
ids() { grep -E '"id":[[:space:]]*"[0-9a-f]{16}"' "$1" | tr -d ' \t' | sort; }

"$oomscan" --format json "$sample" > "$t/plain.json"; rc=$?
[ $rc -eq 1 ] && ok || bad "plain: exit $rc, want 1"
n=$(nfind "$t/plain.json")
[ "$n" -ge 1 ] && ok || bad "plain: no finding"
has "$t/plain.json" class '"cuda_oom"' && ok || bad "plain: no cuda_oom"

# stdin, both as '-' and as a bare pipe
"$oomscan" --format json - < "$sample" > "$t/stdin.json"
[ "$(nfind "$t/stdin.json")" = "$n" ] && ok || bad "stdin: findings differ"
has "$t/stdin.json" path '"<stdin>"' && ok || bad "stdin: not named <stdin>"
cat "$sample" | "$oomscan" --format json > "$t/pipe.json"
[ "$(nfind "$t/pipe.json")" = "$n" ] && ok || bad "bare pipe: findings differ"

# Settings past a log's first 4 MiB are read around its failures (src/match/scan.h): the value echoed
# 600 KiB before the OOM, 8 MiB in (more than one read's worth), is the one the advice halves, whether
# the bytes before the failure are read again from the file (pread) or kept from a pipe or a decoder
# (the ring): the same output.
{
  echo "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8"
  awk 'BEGIN { for (i = 0; i < 200000; i++) printf "step %d | elapsed 0.51 | tokens 1234\n", i }'
  echo "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4"
  awk 'BEGIN { for (i = 0; i < 17000; i++) printf "step %d | elapsed 0.51 | tokens 1234\n", i }'
  echo 'Traceback (most recent call last):'
  echo '  File "/opt/verl/verl/workers/actor/dp_actor.py", line 410, in update_policy'
  echo '    loss.backward()'
  echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.02 GiB is free.'
} > "$t/late.log"
gzip -c "$t/late.log" > "$t/late.log.gz"
"$oomscan" "$t/late.log" > "$t/late.txt"
grep -q 'ppo_micro_batch_size_per_gpu=2  (4 -> 2)' "$t/late.txt" && ok || bad "late setting: the window before the failure not read"
"$oomscan" - < "$t/late.log" | sed "s#<stdin>#$t/late.log#" > "$t/late-pipe.txt"
cmp -s "$t/late.txt" "$t/late-pipe.txt" && ok || bad "late setting: a pipe reads other settings than the file"
"$oomscan" "$t/late.log.gz" | sed "s#late.log.gz#late.log#" > "$t/late-gz.txt"
cmp -s "$t/late.txt" "$t/late-gz.txt" && ok || bad "late setting: a gzip file reads other settings than the plain one"
# stdin a regular file that the shell had read part-way: the window is read again at the right bytes
{ IFS= read -r first; "$oomscan" --format json -; } < "$t/late.log" > "$t/late-part.txt"
tail -n +2 "$t/late.log" | "$oomscan" --format json - > "$t/late-part-pipe.txt"
cmp -s "$t/late-part.txt" "$t/late-part-pipe.txt" && ok || bad "late setting: stdin opened part-way reads other settings"

# every container, sniffed from its bytes: names deliberately lie
cp "$sample" "$t/a.log"
gzip -c "$t/a.log" > "$t/gz.txt"
cat "$t/gz.txt" "$t/gz.txt" > "$t/concat.log"
zstd -q -c "$t/a.log" > "$t/zst.log"
xz -c "$t/a.log" > "$t/xz.log"
bzip2 -c "$t/a.log" > "$t/bz2.log"
mkdir -p "$t/tree/node3/logs"
cp "$sample" "$t/tree/node3/logs/rank0.err"
gzip -c "$sample" > "$t/tree/node3/logs/rank1.err.gz"
(cd "$t/tree" && tar -cf ../b.tar node3 && tar -czf ../b.tar.gz node3 && tar -cJf ../b.tar.xz node3 &&
 tar --zstd -cf ../b.tar.zst node3 && tar -cjf ../b.tar.bz2 node3 && zip -qr ../b.zip node3)
for f in gz.txt zst.log xz.log bz2.log; do
  "$oomscan" --format json "$t/$f" > "$t/out.json"
  [ "$(nfind "$t/out.json")" = "$n" ] && ok || bad "$f: findings differ from plain"
done
"$oomscan" --format json "$t/concat.log" > "$t/out.json"
has "$t/out.json" occurrences 2 && ok || bad "concatenated gzip members: second member not read"
for f in b.tar b.tar.gz b.tar.xz b.tar.zst b.tar.bz2 b.zip; do
  "$oomscan" --format json "$t/$f" > "$t/out.json"
  has "$t/out.json" path "\"$t/$f:node3/logs/rank0.err\"" && ok || bad "$f: member not named archive:member"
  has "$t/out.json" path "\"$t/$f:node3/logs/rank1.err.gz\"" && ok || bad "$f: compressed member not opened"
  has "$t/out.json" occurrences 2 && ok || bad "$f: both members' failure not grouped"
done

# libarchive is opened only when an archive is met (src/input/archive_lib.c): plain and compressed
# text never load it, a tar does (the loader's own trace says which libraries it loads). A build
# linking it (-DOOMSCAN_ARCHIVE_DLOPEN=OFF) loads it always: nothing to check there.
if ! ldd "$oomscan" 2>/dev/null | grep -q libarchive; then
  for f in a.log gz.txt zst.log; do
    LD_DEBUG=libs "$oomscan" --format json "$t/$f" 2>&1 >/dev/null | grep -q 'libarchive\.so' &&
      bad "$f: libarchive loaded for a file that is no archive" || ok
  done
  LD_DEBUG=libs "$oomscan" --format json "$t/b.tar.gz" 2>&1 >/dev/null | grep -q 'libarchive\.so' && ok ||
    bad "b.tar.gz: libarchive not loaded (or LD_DEBUG not honoured)"
fi

# a directory: walked recursively, in sorted order
"$oomscan" --format json "$t/tree" > "$t/dir.json"
a=$(grep -n 'rank0.err"' "$t/dir.json" | head -1 | cut -d: -f1)
b=$(grep -n 'rank1.err.gz"' "$t/dir.json" | head -1 | cut -d: -f1)
[ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ] && ok || bad "directory: not walked in sorted order"

# bad inputs: reported, named, the rest goes on, exit 2
: > "$t/empty.log"
"$oomscan" --format json "$t/empty.log" > "$t/out.json"; rc=$?
[ $rc -eq 0 ] && ok || bad "empty file: exit $rc, want 0"
"$oomscan" --format json "$t/nope.log" "$sample" > "$t/out.json" 2> "$t/err"; rc=$?
[ $rc -eq 2 ] && ok || bad "missing file: exit $rc, want 2"
grep -q "nope.log" "$t/err" && ok || bad "missing file: stderr does not name it"
[ "$(nfind "$t/out.json")" = "$n" ] && ok || bad "missing file: other input's findings lost"
has "$t/out.json" status '"error"' && ok || bad "missing file: no error status"
# truncated gzip: keep what was read before the damage
{ cat "$t/a.log"; head -c 20000 /dev/urandom | base64; } | gzip -c > "$t/big.gz"
size=$(wc -c < "$t/big.gz")
head -c $((size - 3000)) "$t/big.gz" > "$t/trunc.gz"
"$oomscan" --format json "$t/trunc.gz" > "$t/out.json" 2> "$t/err"; rc=$?
[ $rc -eq 2 ] && ok || bad "truncated gzip: exit $rc, want 2"
has "$t/out.json" status '"partial"' && ok || bad "truncated gzip: not partial"
[ "$(nfind "$t/out.json")" = "$n" ] && ok || bad "truncated gzip: findings before the damage lost"
grep -q "trunc.gz" "$t/err" && ok || bad "truncated gzip: stderr does not name it"
# corrupt zip
cp "$t/b.zip" "$t/corrupt.zip"
printf 'garbage garbage garbage garbage' | dd of="$t/corrupt.zip" bs=1 seek=40 conv=notrunc 2>/dev/null
"$oomscan" --format json "$t/corrupt.zip" > "$t/out.json" 2> "$t/err"; rc=$?
[ $rc -eq 2 ] && ok || bad "corrupt zip: exit $rc, want 2"
grep -q "corrupt.zip" "$t/err" && ok || bad "corrupt zip: stderr does not name it"

# output file written atomically, nothing left behind
"$oomscan" --format json -o "$t/report.json" "$sample"; rc=$?
[ $rc -eq 1 ] && [ "$(nfind "$t/report.json")" = "$n" ] && ok || bad "-o: report missing or wrong"
[ "$(ls "$t" | grep -c 'report.json.')" = 0 ] && ok || bad "-o: temporary file left behind"

# NDJSON: one object per line, nothing else on stdout
"$oomscan" --format ndjson "$cascade" > "$t/out.ndjson"
lines=$(wc -l < "$t/out.ndjson")
objs=$(grep -c '^{"id":"[0-9a-f]\{16\}",.*}$' "$t/out.ndjson")
[ "$lines" -ge 2 ] && [ "$lines" = "$objs" ] && ok || bad "ndjson: $lines lines, $objs finding objects"

# colour only on request, never with NO_COLOR
"$oomscan" --color always "$sample" | grep -q "$(printf '\033')" && ok || bad "--color always: no colour"
NO_COLOR=1 "$oomscan" "$sample" | grep -q "$(printf '\033')" && bad "NO_COLOR: colour written" || ok
"$oomscan" "$sample" | grep -q "$(printf '\033')" && bad "not a terminal: colour written" || ok

# a closed pipe ends quietly
"$oomscan" --format json "$t/tree" "$sample" "$cascade" 2> "$t/err" | head -c 10 > /dev/null
[ ! -s "$t/err" ] && ok || bad "closed pipe: stderr not quiet: $(cat "$t/err")"

# determinism: -j 1 and -j 2 agree; ids do not depend on input order
"$oomscan" --format json -j 1 "$t/tree" "$cascade" "$sample" > "$t/j1.json"
"$oomscan" --format json -j 2 "$t/tree" "$cascade" "$sample" > "$t/j2.json"
cmp -s "$t/j1.json" "$t/j2.json" && ok || bad "-j 2 output differs from -j 1"
"$oomscan" --format json "$sample" "$cascade" > "$t/o1.json"
"$oomscan" --format json "$cascade" "$sample" > "$t/o2.json"
[ "$(ids "$t/o1.json")" = "$(ids "$t/o2.json")" ] && ok || bad "ids depend on input order"
# the multi-file cascade (one rank's OOM, other ranks' NCCL timeouts, the launcher): same ids and the
# same root in any file order, and the archive of the same files gives the same ids
mc="$src/fixtures/golden/funasr-oom-cascade"
"$oomscan" --format json "$mc/rank2.log" "$mc/rank5.log" "$mc/rank7.log" "$mc/torchrun.log" > "$t/m1.json"
"$oomscan" --format json "$mc/torchrun.log" "$mc/rank7.log" "$mc/rank5.log" "$mc/rank2.log" > "$t/m2.json"
[ "$(ids "$t/m1.json")" = "$(ids "$t/m2.json")" ] && ok || bad "cascade: ids depend on file order"
[ "$(grep -c '"role":[[:space:]]*"root"' "$t/m2.json")" = 1 ] && ok || bad "cascade: not exactly one root in reverse order"
root=$(grep -E -m1 '"id":[[:space:]]*"[0-9a-f]{16}"' "$t/m2.json" | tr -dc '0-9a-f' | tail -c 16)
[ "$(grep -c "\"caused_by\":[[:space:]]*\"$root\"" "$t/m2.json")" = 3 ] && ok || bad "cascade: echoes do not name the root"
(cd "$mc" && tar -czf "$t/mc.tar.gz" torchrun.log rank7.log rank5.log rank2.log)
"$oomscan" --format json "$t/mc.tar.gz" > "$t/m3.json"
[ "$(ids "$t/m1.json")" = "$(ids "$t/m3.json")" ] && ok || bad "cascade: archive members give other ids"

# an AReaL job's log: the framework comes from AReaL's own record header (a real line of
# areal-project/AReaL#1065) and the checklist names AReaL's settings first. The OOM below it is a real
# plain-PyTorch excerpt (corpus cuda_oom-pytorch-18853); the two are joined here, not in one real log.
{ echo "(AReaL) 20260320-11:19:29.153 PPOActor INFO: Training Parameters:"
  cat "$src/fixtures/corpus/cuda_oom-pytorch-18853.log"; } > "$t/areal.log"
"$oomscan" --format json "$t/areal.log" > "$t/areal.json"
grep -q '"framework":[[:space:]]*"areal"' "$t/areal.json" && ok || bad "AReaL header: framework not areal"
grep -q 'actor.mb_spec.max_tokens_per_mb' "$t/areal.json" && ok || bad "AReaL: steps do not name max_tokens_per_mb"

# usage errors
"$oomscan" --format xml "$sample" > /dev/null 2>&1; [ $? -eq 2 ] && ok || bad "bad --format: not exit 2"
"$oomscan" --explain no-such-checklist > /dev/null 2>&1; [ $? -eq 2 ] && ok || bad "bad --explain: not exit 2"
"$oomscan" --explain cuda_oom-backward | grep -q '^## 1\.' && ok || bad "--explain: no steps"
"$oomscan" --list-patterns | grep -q 'cuda_oom' && ok || bad "--list-patterns: no cuda_oom"

# oomscan's own output beside the logs (an epilog spool, a saved report) is not read as a log: its
# quoted evidence would make every failure twice; -v names it, and merge still reads it
mkdir -p "$t/job"
cp "$sample" "$t/job/rank0.err"
"$oomscan" --format ndjson "$t/job" > "$t/job/oomscan.ndjson"
"$oomscan" --format json "$t/job" > "$t/job/report.json"
"$oomscan" --format json "$t/job/rank0.err" > "$t/one.json"
"$oomscan" --format json "$t/job" > "$t/again.json"
[ "$(nfind "$t/again.json")" = "$(nfind "$t/one.json")" ] && ok ||
    bad "own output: $(nfind "$t/again.json") findings with the spool and report beside the log, want $(nfind "$t/one.json")"
[ "$(grep -E '"occurrences"' "$t/again.json")" = "$(grep -E '"occurrences"' "$t/one.json")" ] && ok ||
    bad "own output: occurrences counted from the spool and the report too"
has "$t/again.json" container '"oomscan"' && ok || bad "own output: its container not said"
"$oomscan" -v "$t/job" 2>&1 | tr '\n' ' ' | grep -q "oomscan.ndjson: ok, 0 lines.*oomscan's own output" && ok ||
    bad "own output: -v does not say why oomscan.ndjson was not read"
"$oomscan" merge --format json "$t/job/oomscan.ndjson" > "$t/merged.json"
[ "$(nfind "$t/merged.json")" = "$(nfind "$t/one.json")" ] && ok || bad "own output: merge no longer reads it"

echo "cli: $passes passed, $fails failed"
[ $fails -eq 0 ]
