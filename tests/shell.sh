#!/bin/sh
# shell.sh OOMSCAN SOURCE_DIR - how the answer reaches people and programs (issue 33): a batch NDJSON run
# writes each finding once, final, and compact; nothing scanned is not "no failure"; the text report ends
# with the answer; streams behave like files; binary files are skipped by content.
set -u
oomscan=$1 src=$2
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$oomscan")
job="$src/fixtures/realjobs/slurm_torchrun_oom"

# ---- item 9: a batch NDJSON run writes each finding once, final; compact unless asked ----------------
"$oomscan" -f ndjson "$job" > "$t/batch.ndjson"
"$oomscan" -f json "$job" > "$t/batch.json"
[ "$(jq -r .type "$t/batch.ndjson" | sort -u)" = finding ] && ok ||
  bad "batch ndjson: records other than 'finding': $(jq -r .type "$t/batch.ndjson" | sort | uniq -c | tr '\n' ' ')"
[ "$(jq -r .id "$t/batch.ndjson" | sort | uniq -d)" = "" ] && ok || bad "batch ndjson: an id written twice"
[ "$(jq -r 'select(.role=="root") | .id' "$t/batch.ndjson" | sort)" = \
  "$(jq -r '.findings[] | select(.role=="root") | .id' "$t/batch.json" | sort)" ] && ok ||
  bad "batch ndjson: jq's roots are not the document's"
[ "$(wc -l < "$t/batch.ndjson")" -eq "$(jq '.findings | length' "$t/batch.json")" ] && ok ||
  bad "batch ndjson: $(wc -l < "$t/batch.ndjson") records for $(jq '.findings | length' "$t/batch.json") findings"
jq -e -s 'all(.[]; .remediation.id != null and (.remediation | has("steps") | not))' "$t/batch.ndjson" > /dev/null &&
  ok || bad "batch ndjson: a record carries the whole checklist, or no checklist id"
"$oomscan" -f ndjson --full-checklist "$job" > "$t/full.ndjson"
[ "$(jq -c '[.id, .remediation.steps]' "$t/full.ndjson" | sort)" = \
  "$(jq -c '.findings[] | [.id, .remediation.steps]' "$t/batch.json" | sort)" ] && ok ||
  bad "--full-checklist: the steps differ from the JSON document's"
# merge takes the compact records and gives the same answer as the document
"$oomscan" merge -f json "$t/batch.ndjson" > "$t/merged.json"
[ "$(jq -c '.findings[] | [.id, .role, .remediation.steps]' "$t/merged.json")" = \
  "$(jq -c '.findings[] | [.id, .role, .remediation.steps]' "$t/batch.json")" ] && ok ||
  bad "merge of compact records differs from the scan"

finish shell
