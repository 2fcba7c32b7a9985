#!/bin/sh
# ticket.sh OOMSCAN SOURCE_DIR - the ticketing feed (docs/ticketing.md): golden tickets for two
# fixtures, and every style checked as JSON with the fields its API requires (jq).
# OOMSCAN_UPDATE_GOLDEN=1 rewrites the golden tickets instead (review the diff before committing).
set -u
oomscan=$1 src=$2
g="$src/fixtures/golden"
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$oomscan")
command -v jq > /dev/null || { echo "ticket: jq is missing (.ci/test installs it)"; exit 1; }

# golden: run from inside the fixtures folder so paths are relative
golden() { # expected-file oomscan-args...
  exp=$1; shift
  (cd "$g" && env -u OOMSCAN_JIRA_PROJECT -u OOMSCAN_JIRA_ISSUETYPE "$oomscan" "$@") > "$t/actual"
  if [ "${OOMSCAN_UPDATE_GOLDEN:-0}" = 1 ]; then cp "$t/actual" "$g/$exp"; echo "updated $exp"; return; fi
  diff -u "$g/$exp" "$t/actual" > "$t/diff" && ok || { cat "$t/diff"; bad "golden $exp differs"; }
}
golden nccl-error-after-oom.ticket.expected.ndjson --format ticket nccl-error-after-oom.log
golden verl-log-prob-oom.jira.expected.ndjson --ticket-style jira --jira-project OPS --job-id 4242 verl-log-prob-oom.log

cascade="$g/nccl-error-after-oom.log" sample="$g/verl-log-prob-oom.log" kill="$g/slurm-oom-kill.log"
"$oomscan" --format json "$cascade" "$sample" "$kill" > "$t/all.json"
jq -r '.findings[] | select(.role == "root") | .id' "$t/all.json" | sort > "$t/roots"
[ "$(wc -l < "$t/roots")" -ge 2 ] && ok || bad "fixtures give fewer than 2 roots"

# plain: one object per line per root finding, dedup_key = the finding's id
"$oomscan" --format ticket "$cascade" "$sample" "$kill" > "$t/plain.ndjson"; rc=$?
[ $rc -eq 1 ] && ok || bad "ticket: exit $rc, want 1"
jq -r .dedup_key "$t/plain.ndjson" | sort > "$t/keys"
cmp -s "$t/keys" "$t/roots" && ok || bad "dedup keys are not the root findings' ids"
jq -e -s 'all(.[]; (.title | type == "string" and length > 0 and length <= 255)
  and (.body | test("Root cause:") and test("### Evidence") and test("### Cascade") and test("Dedup key"))
  and (.labels | index("oomscan") and any(.[]; startswith("class:")) and any(.[]; startswith("phase:"))
       and any(.[]; startswith("framework:")))
  and (.severity | IN("critical", "high", "medium")))' "$t/plain.ndjson" > /dev/null &&
  ok || bad "plain ticket lacks a required field"
jq -e -s 'any(.[]; .body | test("### What to change") and test("\\n1\\. "))' "$t/plain.ndjson" > /dev/null && ok ||
  bad "no checklist steps in any ticket"
jq -e -s 'any(.[]; .body | test("1 consequence finding"))' "$t/plain.ndjson" > /dev/null && ok ||
  bad "the cascade is not counted"

# github: exactly the create-issue body (POST /repos/{owner}/{repo}/issues)
"$oomscan" --ticket-style github "$cascade" "$sample" "$kill" > "$t/gh.ndjson"
jq -e -s 'length >= 2 and all(.[]; (keys == ["body", "labels", "title"]) and (.labels | all(type == "string")))' \
  "$t/gh.ndjson" > /dev/null && ok || bad "github body: wrong keys"
jq -r '.body | capture("Dedup key: `(?<k>[0-9a-f]{16})`").k' "$t/gh.ndjson" | sort > "$t/ghkeys"
cmp -s "$t/ghkeys" "$t/roots" && ok || bad "github body does not carry the dedup key"

# jira: fields.project.key, summary, description, issuetype.name, labels with oomscan-<key>
OOMSCAN_JIRA_PROJECT=OPS OOMSCAN_JIRA_ISSUETYPE=Incident "$oomscan" --ticket-style jira "$cascade" "$sample" "$kill" \
  > "$t/jira.ndjson"
jq -e -s 'length >= 2 and all(.[]; (keys == ["fields"]) and .fields.project.key == "OPS"
  and (.fields.summary | length > 0 and length <= 255) and (.fields.description | test("h3\\. Evidence"))
  and .fields.issuetype.name == "Incident"
  and (.fields.labels | all(test("^[^ ]+$")) and any(test("^oomscan-[0-9a-f]{16}$"))))' "$t/jira.ndjson" > /dev/null &&
  ok || bad "jira body: a required field is missing or wrong"
jq -r '.fields.labels[] | select(startswith("oomscan-")) | ltrimstr("oomscan-")' "$t/jira.ndjson" | sort > "$t/jkeys"
cmp -s "$t/jkeys" "$t/roots" && ok || bad "jira labels do not carry the dedup keys"
"$oomscan" --ticket-style jira --jira-project KEY2 "$sample" | jq -e '.fields.project.key == "KEY2" and
  .fields.issuetype.name == "Bug"' > /dev/null && ok || bad "--jira-project / default issue type"
env -u OOMSCAN_JIRA_PROJECT "$oomscan" --ticket-style jira "$sample" > /dev/null 2> "$t/err"; rc=$?
[ $rc -eq 2 ] && grep -q "jira-project" "$t/err" && ok || bad "jira without a project: exit $rc"

# job id: given or from the file name, in the title and the body
"$oomscan" --format ticket --job-id 4242 "$sample" | jq -e '.job_id == "4242" and (.title | endswith("(job 4242)"))
  and (.body | test("Job:"))' > /dev/null && ok || bad "--job-id not in the ticket"
cp "$sample" "$t/slurm-918273.out"
"$oomscan" --format ticket "$t/slurm-918273.out" | jq -e '.job_id == "918273"' > /dev/null && ok ||
  bad "job id from slurm-<id>.out not in the ticket"

# nothing found: no ticket, exit 0; a bad style is a usage error
"$oomscan" --format ticket "$g/clean-vllm-startup.log" > "$t/none"; rc=$?
[ $rc -eq 0 ] && [ ! -s "$t/none" ] && ok || bad "clean log: exit $rc or output written"
"$oomscan" --ticket-style gitlab "$sample" > /dev/null 2>&1; [ $? -eq 2 ] && ok || bad "bad --ticket-style: not exit 2"

finish ticket
