#!/bin/sh
# merge.sh OOMSCAN SOURCE_DIR - `oomscan merge`: per-node NDJSON combined equals scanning all the logs
# together (same findings, roles, causes, ids, counts, evidence), and merging is associative.
set -u
oomscan=$1 src=$2
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$oomscan") src=$(abspath "$src")
# the findings of a JSON document (inputs differ: log files versus NDJSON files)
findings() { sed -n '/"findings":/,$p' "$1"; }

# Three "nodes" of one failure, real logs: node A has the CUDA OOM inside NCCL (root), node B only
# NCCL heartbeat timeouts (alone, they look like a root), node C a SIGKILL and ChildFailedError.
mkdir -p "$t/node1" "$t/node2" "$t/node3"
cp "$src/fixtures/golden/nccl-error-after-oom.log" "$t/node1/a.log"
cp "$src/fixtures/corpus/nccl_timeout-sglang-1691.log" "$t/node2/b.log"
cp "$src/fixtures/golden/sigkill-then-childfailed.log" "$t/node3/c.log"
cd "$t" || exit 2
for n in 1 2 3; do
    "$oomscan" --format ndjson node$n/*.log > n$n.ndjson
done
"$oomscan" --format json node1/a.log node2/b.log node3/c.log > joint.json
"$oomscan" merge --format json n1.ndjson n2.ndjson n3.ndjson > merged.json; rc=$?
[ $rc -eq 1 ] && ok || bad "merge: exit $rc, want 1 (failures found)"
if findings joint.json | diff - "$(findings merged.json > m.txt; echo m.txt)" > d.txt; then ok; else
    bad "merge of three nodes differs from scanning them together:"; head -40 d.txt
fi
# B alone calls its timeouts roots; merged with A they are A's consequences: the election ran again
grep -q '"role":"root"' n2.ndjson && ok || bad "node B alone should have a root"
[ "$(grep -c '"role":	"root"' merged.json)" = "$(grep -c '"role":	"root"' joint.json)" ] && ok || bad "roots differ"
grep -q '"caused_by":	"898234c353691805"' merged.json && ok || bad "no cross-node cause elected"

# Associative: ((1 2) 3) == (1 (2 3)) == (1 2 3), byte for byte, and the result merges again unchanged.
"$oomscan" merge n1.ndjson n2.ndjson > a12.ndjson
"$oomscan" merge a12.ndjson n3.ndjson > left.ndjson
"$oomscan" merge n2.ndjson n3.ndjson > a23.ndjson
"$oomscan" merge n1.ndjson a23.ndjson > right.ndjson
"$oomscan" merge n1.ndjson n2.ndjson n3.ndjson > flat.ndjson
cmp -s left.ndjson right.ndjson && ok || bad "merge(merge(1,2),3) != merge(1,merge(2,3))"
cmp -s left.ndjson flat.ndjson && ok || bad "merge(merge(1,2),3) != merge(1,2,3)"
"$oomscan" merge flat.ndjson | cmp -s - flat.ndjson && ok || bad "merging merged output changed it"
# NDJSON on stdin, and the same as files
cat n1.ndjson n2.ndjson n3.ndjson > cat.ndjson
"$oomscan" merge < flat.ndjson | cmp -s - flat.ndjson && ok || bad "merge from stdin differs"

# One node's log split in two (two "ranks" files of one job): scanned apart and merged == together.
f="$src/fixtures/golden/nccl-error-after-oom.log"
lines=$(wc -l < "$f")
head -n $((lines / 2)) "$f" > node1/rank0.log
tail -n +$((lines / 2 + 1)) "$f" > node1/rank1.log
"$oomscan" --format ndjson node1/rank0.log > r0.ndjson
"$oomscan" --format ndjson node1/rank1.log > r1.ndjson
"$oomscan" --format json node1/rank0.log node1/rank1.log > split-joint.json
"$oomscan" merge --format json r0.ndjson r1.ndjson > split-merged.json
findings split-joint.json > sj.txt
findings split-merged.json > sm.txt
cmp -s sj.txt sm.txt && ok || { bad "split log: merge differs from joint scan"; diff sj.txt sm.txt | head -20; }

# Batch output of two inputs merges to its final state (finding + update records from a live stream:
# tests/stream.sh).
"$oomscan" --format ndjson node1/a.log node2/b.log > two.ndjson
"$oomscan" --format json node1/a.log node2/b.log > two.json
"$oomscan" merge --format json two.ndjson > two-merged.json
findings two.json > tj.txt
findings two-merged.json > tm.txt
cmp -s tj.txt tm.txt && ok || bad "merging finding+update records differs from the scan"

# A real job's folder: the kernel's kill and torchrun's -9 (a later file) of the same worker are one
# finding; its record carries both windows, so the merged story has both sources.
job="$src/fixtures/realjobs/cgroup_oom_kill/job"
"$oomscan" --format ndjson "$job" > job.ndjson
"$oomscan" --format json "$job" > job.json
"$oomscan" merge --format json job.ndjson > job-merged.json
findings job.json > jj.txt
findings job-merged.json > jm.txt
grep -q '"kind":	"launcher"' jj.txt && ok || bad "the job's kill has no launcher window"
cmp -s jj.txt jm.txt && ok || { bad "a streamed job merges to another story than its scan"; diff jj.txt jm.txt | head -20; }

# torchrun's -9 read before the kernel's kill of the same worker: the records leave one root, and merge
# to the joint story.
"$oomscan" --format ndjson "$job/torchrun.out" "$job/dmesg.log" > late.ndjson
[ "$(jq -s '[group_by(.id)[] | last | select(.role == "root")] | length' late.ndjson)" = 1 ] && ok ||
  bad "a window joined after it was reported stays a root: $(jq -c '[.id, .type, .role]' late.ndjson | tr '\n' ' ')"
"$oomscan" --format json "$job/torchrun.out" "$job/dmesg.log" > late.json
"$oomscan" merge --format json late.ndjson > late-merged.json
findings late.json > lj.txt
findings late-merged.json > lm.txt
cmp -s lj.txt lm.txt && ok || { bad "late join: merge differs from the scan"; diff lj.txt lm.txt | head -10; }

# One line in two sources of one job (the console's copy and the rank's stderr.log, --job-id as the
# epilog gives it): joined by its id, not a late window; the last records keep its one root.
sj="$src/fixtures/realjobs/slurm_torchrun_oom/job"
"$oomscan" --job-id 3 --format ndjson "$sj/slurm-3.out" "$sj/torchrun-3" > same.ndjson
[ "$(jq -s '[group_by(.id)[] | last | select(.role == "root")] | length' same.ndjson)" = 1 ] && ok ||
  bad "one failure's copies in two sources: $(jq -c '[.id, .type, .role]' same.ndjson | tr '\n' ' ')"

# Bad input is reported, the rest is still merged.
printf 'not json\n' > junk.ndjson
"$oomscan" merge n1.ndjson junk.ndjson missing.ndjson > bad.ndjson 2> bad.err; rc=$?
[ $rc -eq 2 ] && ok || bad "bad merge input: exit $rc, want 2"
grep -q 'junk.ndjson: line 1' bad.err && ok || bad "bad line not named: $(cat bad.err)"
grep -q 'missing.ndjson' bad.err && ok || bad "missing file not named"
[ "$(grep -vc '"type":"input"' bad.ndjson)" -eq "$(wc -l < n1.ndjson)" ] && ok || bad "good input lost next to bad input"
[ "$(grep -c '"type":"input"' bad.ndjson)" -eq 2 ] && ok || bad "the bad merge inputs are not input records"

finish merge
