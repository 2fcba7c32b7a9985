#!/bin/sh
# summary.sh OOMSCAN SOURCE_DIR - `oomscan summary`, the fleet view: per-job NDJSON as a Slurm epilog
# spools it (the same real logs under several job ids), counted by class x phase x framework with
# distinct jobs, and fingerprints that recur across jobs; JSON documents, logs and stdin as inputs;
# a bad line is named and skipped without losing the rest.
set -u
oomscan=$1 src=$2
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$oomscan")
command -v jq > /dev/null || { echo "summary: jq is missing (.ci/test installs it)"; exit 1; }
g="$src/fixtures/golden"
verl="$g/verl-log-prob-oom.log" nccl="$g/nccl-error-after-oom.log"

mkdir -p "$t/spool"
for j in 101 102 103; do "$oomscan" --format ndjson --job-id $j "$verl" > "$t/spool/$j.node1.ndjson"; done
# job 103 seen from a second node too: still one job, the finding counted once
"$oomscan" --format ndjson --job-id 103 "$verl" > "$t/spool/103.node2.ndjson"
"$oomscan" --format ndjson --job-id 104 "$nccl" > "$t/spool/104.node1.ndjson"
verl_id=$("$oomscan" --format json "$verl" | jq -r '.findings[0].id')
verl_class=$("$oomscan" --format json "$verl" | jq -r '.findings[0].class + "/" + .findings[0].phase + "/" + .findings[0].framework')
nccl_roots=$("$oomscan" --format json "$nccl" | jq '[.findings[] | select(.role == "root")] | length')

"$oomscan" summary --format json "$t/spool" > "$t/s.json"; rc=$?
[ $rc -eq 0 ] && ok || bad "summary exited $rc"
jq -e '.jobs == 4' "$t/s.json" > /dev/null && ok || bad "jobs: $(jq .jobs "$t/s.json"), want 4"
jq -e --arg k "$verl_class" '.groups[0] | (.class + "/" + .phase + "/" + .framework) == $k and .jobs == 3 and .findings == 3' \
  "$t/s.json" > /dev/null && ok || bad "first group is not $verl_class in 3 jobs: $(jq -c '.groups[0]' "$t/s.json")"
jq -e --argjson n "$nccl_roots" '.findings == 3 + $n' "$t/s.json" > /dev/null && ok || bad "root findings: $(jq .findings "$t/s.json")"
jq -e 'all(.groups[]; has("class") and has("phase") and has("framework") and has("jobs") and has("occurrences"))' \
  "$t/s.json" > /dev/null && ok || bad "a group lacks a contract key"
# the recurring fingerprint is the id a scan that knows no job gives that failure
jq -e --arg id "$verl_id" 'any(.fingerprints[]; .id == $id and .jobs == 3 and .class == "cuda_oom" and (.first | type) == "string" and .first <= .last)' \
  "$t/s.json" > /dev/null && ok || bad "fingerprint $verl_id not reported in 3 jobs: $(jq -c .fingerprints "$t/s.json")"
jq -e 'all(.fingerprints[]; .jobs >= 2)' "$t/s.json" > /dev/null && ok || bad "a fingerprint seen in one job only is listed"

# the same NDJSON through stdin, and the text form leads with the totals
cat "$t/spool"/*.ndjson | "$oomscan" summary - > "$t/s.txt"
head -n 1 "$t/s.txt" | grep -q '^oomscan summary: 4 jobs, ' && ok || bad "text summary header: $(head -n 1 "$t/s.txt")"
grep -q "$verl_id *3 *cuda_oom" "$t/s.txt" && ok || bad "text summary lacks the recurring fingerprint"

# logs given directly are scanned first, with the same result as their NDJSON
"$oomscan" summary --format json "$verl" > "$t/logs.json"
"$oomscan" --format ndjson "$verl" | "$oomscan" summary --format json - > "$t/nd.json"
jq -e '.findings == 1 and .groups[0].jobs == 1' "$t/logs.json" > /dev/null && cmp -s "$t/logs.json" "$t/nd.json" && ok ||
  bad "logs scanned by summary differ from their NDJSON summarised: $(cat "$t/logs.json")"
# JSON documents (--format json output) count too
"$oomscan" --format json "$verl" > "$t/doc.json"
"$oomscan" summary --format json "$t/doc.json" | jq -e '.findings == 1' > /dev/null && ok || bad "a JSON document was not summarised"

# a broken line: named with its line number, skipped, exit 2, everything else kept
{ cat "$t/spool/101.node1.ndjson"; echo '{"id": "cut off'; cat "$t/spool/102.node1.ndjson"; } > "$t/broken.ndjson"
"$oomscan" summary --format json "$t/broken.ndjson" > "$t/b.json" 2> "$t/b.err"; rc=$?
[ $rc -eq 2 ] && ok || bad "broken line: exit $rc, want 2"
grep -q 'broken.ndjson: line [0-9]* is not an oomscan NDJSON record' "$t/b.err" && ok || bad "broken line not named: $(cat "$t/b.err")"
jq -e '.jobs == 2 and .bad_lines == 1' "$t/b.json" > /dev/null && ok || bad "records around a broken line lost: $(cat "$t/b.json")"

# usage errors are one line and exit 2
"$oomscan" summary > /dev/null 2> "$t/u.err"; rc=$?
[ $rc -eq 2 ] && [ "$(wc -l < "$t/u.err")" -eq 1 ] && ok || bad "no input: exit $rc, $(wc -l < "$t/u.err") lines"
"$oomscan" summary --format xml "$verl" > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok || bad "--format xml: exit $rc"

# symlinked folders are not followed (issue 35): three links back to "." never ended, the one log read
# once per path; a symlinked log is read
mkdir "$t/sl" && cp "$src/fixtures/golden/swift-interleaved-oom.log" "$t/sl/a.log" &&
  ln -s . "$t/sl/l1" && ln -s . "$t/sl/l2" && ln -s . "$t/sl/l3" && mkdir "$t/other" && ln -s ../sl/a.log "$t/other/b.log"
timeout 20 "$oomscan" summary --format json "$t/sl" > "$t/sl.json"; rc=$?
[ $rc -ne 124 ] && [ "$(jq '.findings' "$t/sl.json")" -eq 1 ] && ok || bad "symlinked folders: exit $rc, $(head -c 200 "$t/sl.json")"
timeout 20 "$oomscan" summary --format json "$t/other" > "$t/ot.json"
[ "$(jq '.findings' "$t/ot.json")" -eq 1 ] && ok || bad "a symlinked log was not read: $(head -c 200 "$t/ot.json")"

finish summary
