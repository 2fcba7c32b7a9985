#!/bin/sh
# jira_cloud.sh OOMSCAN SOURCE_DIR - `--ticket-style jira-cloud`: Jira Cloud's REST v3 create-issue
# body, whose description must be Atlassian Document Format (a plain string is refused there), checked
# node by node against ADF's rules; `jira` stays the v2 / Data Center body with wiki markup; and the
# example poster searches Cloud with /rest/api/3/search/jql (the old search answers 410 Gone) and files
# each failure once, against a fake curl that serves a Jira Cloud on a folder.
set -u
oomscan=$1 src=$2
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$oomscan")
command -v jq > /dev/null || { echo "jira_cloud: jq is missing (.ci/test installs it)"; exit 1; }
g="$src/fixtures/golden"

# ADF's shape, as Jira Cloud validates it: doc/version 1; block and inline node types it knows; text
# nodes non-empty; marks only strong or code, code alone; lists hold listItems that start with a
# paragraph; headings with a level 1-6; code blocks hold unmarked text; no Markdown left in the text.
adf_ok='
def node_ok:
  if .type == "text" then
    (.text | type == "string" and length > 0)
    and ((.marks // []) | all(.type == "strong" or .type == "code"))
    and ((.marks // []) | (map(.type) | index("code")) as $c | $c == null or length == 1)
    and (if ((.marks // []) | length) == 0 then (.text | test("\\*\\*|^`|`$") | not) else true end)
  elif .type == "hardBreak" or .type == "rule" then true
  elif .type == "paragraph" then (.content | all(.[]; .type == "text" or .type == "hardBreak") and all(.[]; node_ok))
  elif .type == "heading" then (.attrs.level >= 1 and .attrs.level <= 6 and (.content | all(.[]; node_ok)))
  elif .type == "bulletList" or .type == "orderedList" then
    (.content | length > 0 and all(.[]; .type == "listItem" and (.content[0].type == "paragraph") and (.content | all(.[]; node_ok))))
  elif .type == "codeBlock" then ((.content // []) | all(.[]; .type == "text" and (.marks == null) and (.text | length > 0)))
  else false end;
.type == "doc" and .version == 1 and (.content | length > 0) and (.content | all(.[]; node_ok))'

n=0
for f in "$g"/*.log "$g/funasr-oom-cascade"; do
  name=$(basename "$f")
  roots=$("$oomscan" --format json "$f" | jq '[.findings[] | select(.role == "root")] | length')
  "$oomscan" --ticket-style jira-cloud --jira-project ML "$f" > "$t/cloud.ndjson"
  [ "$(wc -l < "$t/cloud.ndjson")" -eq "$roots" ] && ok || bad "$name: $(wc -l < "$t/cloud.ndjson") cloud tickets for $roots roots"
  [ "$roots" -gt 0 ] || continue
  n=$((n + 1))
  jq -e -s 'all(.[]; .fields.project.key == "ML" and (.fields.summary | length > 0 and length <= 255)
            and (.fields.issuetype.name == "Bug") and (.fields.labels | any(startswith("oomscan-"))))' "$t/cloud.ndjson" > /dev/null &&
    ok || bad "$name: cloud ticket fields"
  jq -e -s "all(.[]; .fields.description | ($adf_ok))" "$t/cloud.ndjson" > /dev/null && ok ||
    bad "$name: description is not valid ADF"
  # the same words as the v2 body: every setting the JSON proposes appears as code in the ADF
  "$oomscan" --format json "$f" | jq -r '.findings[] | select(.role == "root") | .remediation.steps[]?.settings[]?.text' |
    head -n 5 > "$t/settings"
  while IFS= read -r s; do
    jq -e -s --arg s "$s" 'any(.[]; [.fields.description | .. | objects | select(.type == "text" and (.marks // [] | any(.type == "code"))) | .text] | index($s))' \
      "$t/cloud.ndjson" > /dev/null && ok || bad "$name: ADF lacks the setting '$s'"
  done < "$t/settings"
  # v2 / Data Center stays a wiki-markup string
  "$oomscan" --ticket-style jira --jira-project ML "$f" | jq -e -s 'all(.[]; (.fields.description | type) == "string")' > /dev/null &&
    ok || bad "$name: jira (v2) description is not a string"
done
[ $n -ge 5 ] && ok || bad "only $n fixtures with roots"
"$oomscan" --ticket-style jira-cloud "$g/verl-log-prob-oom.log" > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok || bad "jira-cloud without a project: exit $rc, want 2"

# The poster against a fake Jira Cloud: curl on PATH answers from a folder of filed issues, and refuses
# the removed search endpoints with 410 as Jira Cloud does.
mkdir -p "$t/bin" "$t/jira"
cat > "$t/bin/curl" <<EOS
#!/bin/sh
url="" data="" jql=""
while [ \$# -gt 0 ]; do
  case \$1 in
    --data-urlencode) case \$2 in jql=*) jql=\${2#jql=} ;; esac; shift 2 ;;
    --data-binary) data=\$2; shift 2 ;;
    -u | -H | -X) shift 2 ;;
    http*) url=\$1; shift ;;
    *) shift ;;
  esac
done
echo "\$url" >> "$t/calls"
case \$url in
  */rest/api/3/search/jql)
    [ -e "$t/search-fails" ] && { echo "curl: (22) The requested URL returned error: 500" >&2; exit 22; }
    label=\$(printf '%s' "\$jql" | sed 's/.*"\(.*\)".*/\1/')
    n=\$(grep -l "\"\$label\"" "$t/jira"/*.json 2>/dev/null | wc -l)
    if [ "\$n" -gt 0 ]; then echo '{"issues":[{"id":"1","key":"ML-1"}]}'; else echo '{"issues":[]}'; fi ;;
  */rest/api/2/search | */rest/api/3/search) echo '{"errorMessages":["The requested API has been removed."]}'; exit 22 ;;
  */rest/api/3/issue)
    k=\$(ls "$t/jira" | wc -l); cat > "$t/jira/\$k.json"
    jq -e '.fields.description.type == "doc"' "$t/jira/\$k.json" > /dev/null || { rm "$t/jira/\$k.json"; exit 22; }
    echo "{\"key\":\"ML-\$k\"}" ;;
  *) exit 22 ;;
esac
EOS
chmod +x "$t/bin/curl"
"$oomscan" --ticket-style jira-cloud --jira-project ML "$g/funasr-oom-cascade" "$g/verl-log-prob-oom.log" > "$t/tickets"
roots=$(wc -l < "$t/tickets")
for run in 1 2; do
  while IFS= read -r tk; do
    printf '%s\n' "$tk" | PATH="$t/bin:$PATH" JIRA_URL=https://acme.atlassian.net JIRA_USER=u JIRA_TOKEN=k \
      sh "$src/docs/examples/ticket-jira.sh" > /dev/null 2>> "$t/poster.err" || bad "run $run: the poster failed: $(tail -n 1 "$t/poster.err")"
  done < "$t/tickets"
done
[ "$(ls "$t/jira" | wc -l)" -eq "$roots" ] && ok || bad "filed $(ls "$t/jira" | wc -l) issues for $roots roots over two runs"
grep -q '/rest/api/3/search/jql$' "$t/calls" && ! grep -q '/rest/api/[23]/search$' "$t/calls" && ok ||
  bad "the poster did not search with /rest/api/3/search/jql: $(sort -u "$t/calls")"
# a search that fails (HTTP 500) stops the poster: nothing is filed, exit non-zero (issue 33 item 15:
# `curl | jq` hid the failure and a duplicate was filed)
"$oomscan" --ticket-style jira-cloud --jira-project ML "$g/xid79-fallen-off-bus.log" > "$t/new.ticket"
touch "$t/search-fails"
before=$(ls "$t/jira" | wc -l)
PATH="$t/bin:$PATH" JIRA_URL=https://acme.atlassian.net JIRA_USER=u JIRA_TOKEN=k \
  sh "$src/docs/examples/ticket-jira.sh" < "$t/new.ticket" > /dev/null 2> "$t/fail.err"; rc=$?
[ $rc -ne 0 ] && [ "$(ls "$t/jira" | wc -l)" -eq "$before" ] && grep -q "search .* failed" "$t/fail.err" && ok ||
  bad "a failed search: exit $rc, $(($(ls "$t/jira" | wc -l) - before)) filed, $(cat "$t/fail.err")"
rm -f "$t/search-fails"
finish jira_cloud
