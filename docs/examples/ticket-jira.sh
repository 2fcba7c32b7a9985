#!/bin/sh
# ticket-jira.sh < ticket.json
# Files one oomscan ticket (a line of `oomscan --ticket-style jira`) through Jira's REST API v2,
# unless an issue already has its dedup label oomscan-<key>. Needs curl and jq, and
#   JIRA_URL (https://jira.example.com), JIRA_USER and JIRA_TOKEN (basic auth: e-mail + API token).
set -eu
: "${JIRA_URL:?} ${JIRA_USER:?} ${JIRA_TOKEN:?}"
ticket=$(cat)
label=$(printf '%s' "$ticket" | jq -r '.fields.labels[] | select(startswith("oomscan-"))')
found=$(curl -fsS -u "$JIRA_USER:$JIRA_TOKEN" -G "$JIRA_URL/rest/api/2/search" \
  --data-urlencode "jql=labels = \"$label\"" --data-urlencode "maxResults=0" | jq .total)
if [ "${found:-0}" -gt 0 ]; then
  echo "ticket-jira: $label already filed" >&2
  exit 0
fi
printf '%s' "$ticket" | curl -fsS -u "$JIRA_USER:$JIRA_TOKEN" -H 'Content-Type: application/json' \
  -X POST --data-binary @- "$JIRA_URL/rest/api/2/issue" | jq -r .key
