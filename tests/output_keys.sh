#!/bin/sh
# output_keys.sh OOMSCAN SOURCE_DIR - docs/output.md lists every key oomscan writes, and only those:
# the keys of the real JSON documents and NDJSON records over every fixture folder (plus the cases
# that add keys: an archive, an input that cannot be read, a cut line, a name that is not UTF-8, a
# finding cap, an update under --state, kubectl's prefix, a Ray worker log's name) are compared with
# the keys in the first column of the page's tables (a finding's keys written from the finding,
# `context.job_id`); `memory` keys with docs/memory-keys.md. So the page cannot drift from the
# output (issue 17).
set -u
oomscan=$1 src=$2
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$oomscan") src=$(cd "$src" && pwd)
doc="$src/docs/output.md" memdoc="$src/docs/memory-keys.md" fx="$src/fixtures"

# ---- what oomscan writes -----------------------------------------------------------------------
cd "$t" || exit 2
tar czf job.tar.gz -C "$fx/golden" verl-log-prob-oom.log nccl-error-after-oom.log
cp "$fx/golden/verl-log-prob-oom.log" "$(printf 'bad\377name').log"
{ head -c 3000000 /dev/zero | tr '\0' a; echo; cat "$fx/golden/verl-log-prob-oom.log"; } > long.log
sed 's|^|[pod/train-worker-0/pytorch] |' "$fx/golden/verl-log-prob-oom.log" > kubectl.log
cp "$fx/golden/verl-log-prob-oom.log" worker-79a553ea91fe46f95e8384ddf8a8f0a01e3418a975ecd0af983c7bb2-01000000-308.err
cp "$fx/golden/nccl-error-after-oom.log" grow.log
"$oomscan" -f ndjson --state st grow.log > /dev/null 2>&1
cat "$fx/golden/nccl-error-after-oom.log" >> grow.log
"$oomscan" -f ndjson --state st grow.log > out.updates.ndjson 2> /dev/null
# a live stream: torchrun's -9 is written before the kernel's kill of that worker joins it (joined_into)
{ cat "$fx/realjobs/cgroup_oom_kill/job/torchrun.out"; sleep 3; cat "$fx/realjobs/cgroup_oom_kill/job/dmesg.log"; } |
  "$oomscan" -f ndjson >> out.updates.ndjson 2> /dev/null
for d in "$fx/golden" "$fx/corpus" "$fx/realjobs" "$fx/dumps" "$fx/heldout" "$fx/heldout2" job.tar.gz bad*.log long.log kubectl.log worker-*.err; do
  "$oomscan" -f json "$d" >> out.json 2> /dev/null
  "$oomscan" -f ndjson "$d" >> out.ndjson 2> /dev/null
done
"$oomscan" -f json --limit findings=1 "$fx/golden/nccl-error-after-oom.log" missing.log >> out.json 2> /dev/null
# files left out by name and size: the document's skipped counts
"$oomscan" -f json --exclude '*.json' --max-filesize 2K "$fx/golden" >> out.json 2> /dev/null
[ -s out.updates.ndjson ] && jq -e -s 'any(.[]; .type == "update")' out.updates.ndjson > /dev/null && ok || bad "no update record from --state"
# every key path, arrays as [], a finding's keys (document or record) written from the finding
paths='[paths | map(if type == "number" then "[]" else . end) | join(".") | gsub("\\.\\[\\]"; "[]")] | .[]'
{ jq -r "$paths" out.json; jq -r "$paths" out.ndjson out.updates.ndjson | sed 's/^/findings[]./'; } |
  sed 's/^findings\[\]\.//; s/\(\[\]\)*$//' | grep -v -e '^merge\.scan\.votes\.' -e '^context\.versions\.' | sort -u > emitted
[ "$(wc -l < emitted)" -ge 150 ] && ok || bad "few keys read from the output: $(wc -l < emitted)"

# ---- what the pages list: backquoted names in the first cell of table rows ---------------------------
cells() { sed -n 's/^| \([^|]*\) |.*/\1/p' "$1" | grep -o '`[^` ]*`' | tr -d '`' | sed 's/\(\[\]\)*$//' | sort -u; }
cells "$doc" > listed
cells "$memdoc" > memlisted
grep -o '`[^` ]*`' "$memdoc" | tr -d '`' | tr '.' '\n' | sed 's/\[\]//g' | sort -u > memwords
grep '^memory\.' listed | sed 's/^memory\.//' >> memlisted

# every key written is listed
while IFS= read -r k; do
  case $k in
    memory) grep -qx memory listed && ok || bad "memory is not in docs/output.md" ;;
    memory.*)
      top=${k#memory.} top=${top%%.*} top=${top%%\[\]*} leaf=${k##*.} leaf=${leaf%%\[\]*}
      grep -qxF "$top" memlisted && grep -qxF "$leaf" memwords && ok ||
        bad "memory key '${k#memory.}' is written but docs/memory-keys.md does not list it" ;;
    *)
      leaf=${k##*.}
      if grep -qxF "$k" listed || { case $leaf in *_raw) grep -qxF "$leaf" listed ;; *) false ;; esac; }; then ok
      else bad "'$k' is written but docs/output.md does not list it"; fi ;;
  esac
done < emitted

# every key listed is written (memory keys are the other page's)
grep -E '^[a-z_]+(\[\])?(\.[a-z_]+(\[\])?)*$' listed | grep -v '^memory\.' | sed 's/\(\[\]\)*$//' > listed_keys
[ "$(wc -l < listed_keys)" -ge 100 ] && ok || bad "few keys read from docs/output.md: $(wc -l < listed_keys)"
while IFS= read -r k; do
  case $k in member_raw) continue ;; esac # an archive member's name that is not UTF-8: not in the fixtures
  { grep -qxF "$k" emitted || { case $k in *_raw) grep -q "\.$k\$" emitted ;; *) false ;; esac; }; } && ok ||
    bad "docs/output.md lists '$k', which no output carries"
done < listed_keys

finish output_keys
