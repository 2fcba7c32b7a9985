#!/bin/sh
# ticket-github.sh OWNER/REPO < ticket.json
# Files one oomscan ticket (a line of `oomscan --ticket-style github`) as a GitHub issue, unless an
# issue, open or closed, already carries its dedup key. Needs gh (logged in) and jq.
#   oomscan --ticket-style github logs/ | while IFS= read -r t; do
#     printf '%s\n' "$t" | sh ticket-github.sh acme/trainer; done
set -eu
repo=${1:?usage: ticket-github.sh OWNER/REPO < ticket.json}
ticket=$(cat)
# the body ends with "Dedup key: `<16 hex digits>`"
key=$(printf '%s' "$ticket" | jq -r '.body | capture("Dedup key: `(?<k>[0-9a-f]{16})`").k')
found=$(gh issue list --repo "$repo" --state all --search "$key in:body" --json number --jq length)
if [ "${found:-0}" -gt 0 ]; then
  echo "ticket-github: $key already filed in $repo" >&2
  exit 0
fi
printf '%s' "$ticket" | gh api --method POST "repos/$repo/issues" --input - --jq .html_url
