#!/bin/sh
# schema.sh OOMSCAN SOURCE_DIR - docs/oomscan.schema.json (the JSON Schema of the document and the NDJSON
# records, contract 1.2) holds for oomscan's real output (issue 33, item 13): every golden case, the
# fixture folders (memory.snapshot from the dumps, memory.trend from heldout5), the expected documents
# checked in, and the records only some runs write (input records, update records, skipped counts, a cut
# line, a finding cap). A doctored record must fail it, so the check is known to bite.
set -u
oomscan=$1 src=$2
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$oomscan") src=$(cd "$src" && pwd)
# Debian's python3-jsonschema (.ci/test installs it) is seen by Debian's own interpreter, which a
# python3 earlier on PATH (pyenv, a virtualenv) may not be: the first one that has the module is used
py=
for p in /usr/bin/python3 python3; do
  "$p" -c "import jsonschema" 2> /dev/null && { py=$p; break; }
done
[ -n "$py" ] || { bad "no python3 with the jsonschema module (Debian: python3-jsonschema)"; finish schema; exit; }
schema="$src/docs/oomscan.schema.json" check="$py $src/tests/schema_check.py" fx="$src/fixtures"
[ -s "$schema" ] || { bad "no $schema"; finish schema; exit; }
cd "$t" || exit 2

# every golden case on its own, in both forms (a .tar.gz case is built from its folder, as golden.sh does)
while read -r c; do
  case $c in
    *.tar.gz) (cd "$fx/golden/${c%.tar.gz}" && tar czf "$t/$c" -- *); in="$t/$c" ;;
    *) in="$fx/golden/$c" ;;
  esac
  "$oomscan" -f json "$in" >> golden.json 2> /dev/null
  "$oomscan" -f ndjson "$in" >> golden.ndjson 2> /dev/null
  "$oomscan" -f ndjson --full-checklist "$in" >> golden.ndjson 2> /dev/null
done <<CASES
$(sed -n 's/^  \([^ #)]\{1,\}\)$/\1/p' "$fx/golden/cases.cmake")
CASES
[ "$(jq -s length golden.json)" -ge 13 ] && ok || bad "few golden cases run: $(jq -s length golden.json)"
out=$($check "$schema" golden.json golden.ndjson "$fx"/golden/*.expected.json) && ok || bad "golden: $out"

# the folders, with the keys only they carry
for d in corpus realjobs dumps heldout heldout2 heldout5; do
  "$oomscan" -f json "$fx/$d" >> more.json 2> /dev/null
  "$oomscan" -f ndjson "$fx/$d" >> more.ndjson 2> /dev/null
done
jq -e -s 'any(.[].findings[]; .memory.trend) and any(.[].findings[]; .memory.snapshot)' more.json > /dev/null && ok ||
  bad "no memory.trend or memory.snapshot in the folders' output: the 1.2 keys go unchecked"
out=$($check "$schema" more.json more.ndjson) && ok || bad "fixture folders: $out"

# records and keys only some runs write
cp "$fx/golden/nccl-error-after-oom.log" grow.log
"$oomscan" -f ndjson --state st grow.log > /dev/null 2>&1
cat "$fx/golden/nccl-error-after-oom.log" >> grow.log
"$oomscan" -f ndjson --state st grow.log > some.ndjson 2> /dev/null
mkdir empty
"$oomscan" -f ndjson "$fx/golden/verl-log-prob-oom.log" missing.log empty >> some.ndjson 2> /dev/null
{ head -c 3000000 /dev/zero | tr '\0' a; echo; cat "$fx/golden/verl-log-prob-oom.log"; } > long.log
"$oomscan" -f json --limit findings=1 "$fx/golden/nccl-error-after-oom.log" missing.log long.log > some.json 2> /dev/null
"$oomscan" -f json --exclude '*.json' --max-filesize 2K "$fx/golden" >> some.json 2> /dev/null
jq -e -s 'any(.[]; .type == "update") and any(.[]; .type == "input")' some.ndjson > /dev/null && ok ||
  bad "no update or input record to check"
jq -e -s 'any(.[]; .skipped) and any(.[]; .findings_dropped) and any(.[].inputs[]; .lines_cut)' some.json > /dev/null && ok ||
  bad "no skipped, findings_dropped or lines_cut to check"
out=$($check "$schema" some.json some.ndjson) && ok || bad "runs' own records: $out"

# the check bites: a role the contract does not have, an id that is not 16 hex digits, a document
# without inputs, an input record with an id
head -n 1 golden.ndjson | jq -c '.role = "boss"' > doctored.1
head -n 1 golden.ndjson | jq -c '.id = "42"' > doctored.2
jq -c -s '.[0] | del(.inputs)' golden.json > doctored.3
jq -c 'select(.type == "input") | .id = "0123456789abcdef"' some.ndjson | head -n 1 > doctored.4
for i in 1 2 3 4; do
  [ -s doctored.$i ] && ! $check "$schema" doctored.$i > /dev/null && ok || bad "doctored value $i passes the schema"
done
finish schema
