#!/bin/sh
# ticket-jira.sh < ticket.json
# Files one oomscan ticket through Jira's REST API, unless an issue already carries its dedup label
# oomscan-<key>. Needs curl and jq, and
#   JIRA_URL (https://acme.atlassian.net or https://jira.example.com), JIRA_USER and JIRA_TOKEN
#   (basic auth: e-mail + API token on Cloud, user + password or token on Data Center).
#   JIRA_API: 3 for Jira Cloud (the default when JIRA_URL is on atlassian.net), 2 for Data Center /
#   Server. Make the ticket to match: `oomscan --ticket-style jira-cloud` for 3 (its description is in
#   Atlassian Document Format, which v3 requires), `--ticket-style jira` for 2 (wiki markup).
# Jira Cloud removed the old search (/rest/api/2/search, /rest/api/3/search answer 410 Gone); it is
# searched with /rest/api/3/search/jql, which returns the matching issues (no total). Data Center keeps
# /rest/api/2/search.
set -eu
: "${JIRA_URL:?} ${JIRA_USER:?} ${JIRA_TOKEN:?}"
case $JIRA_URL in *.atlassian.net | *.atlassian.net/) api=${JIRA_API:-3} ;; *) api=${JIRA_API:-2} ;; esac
JIRA_URL=${JIRA_URL%/}
ticket=$(cat)
label=$(printf '%s' "$ticket" | jq -r '.fields.labels[] | select(startswith("oomscan-"))')
# The search must answer before anything is filed: a failed search (HTTP 500, a timeout) stops here.
# `curl | jq` hid it (the pipeline's status is jq's, and jq of nothing is no number), and a duplicate
# was filed. So curl's answer is taken first, and the count must be a number.
if [ "$api" = 3 ]; then
  resp=$(curl -fsS -u "$JIRA_USER:$JIRA_TOKEN" -G "$JIRA_URL/rest/api/3/search/jql" \
    --data-urlencode "jql=labels = \"$label\"" --data-urlencode "maxResults=1" --data-urlencode "fields=key") ||
    { echo "ticket-jira: the search for $label failed; nothing filed" >&2; exit 1; }
  found=$(printf '%s' "$resp" | jq '.issues | length')
else
  resp=$(curl -fsS -u "$JIRA_USER:$JIRA_TOKEN" -G "$JIRA_URL/rest/api/2/search" \
    --data-urlencode "jql=labels = \"$label\"" --data-urlencode "maxResults=0") ||
    { echo "ticket-jira: the search for $label failed; nothing filed" >&2; exit 1; }
  found=$(printf '%s' "$resp" | jq .total)
fi
case $found in
  '' | *[!0-9]*) echo "ticket-jira: the search for $label gave no count ($found); nothing filed" >&2; exit 1 ;;
esac
if [ "$found" -gt 0 ]; then
  echo "ticket-jira: $label already filed" >&2
  exit 0
fi
printf '%s' "$ticket" | curl -fsS -u "$JIRA_USER:$JIRA_TOKEN" -H 'Content-Type: application/json' \
  -X POST --data-binary @- "$JIRA_URL/rest/api/$api/issue" | jq -r .key
