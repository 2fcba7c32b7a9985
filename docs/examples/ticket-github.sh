#!/bin/sh
# ticket-github.sh OWNER/REPO < ticket.json
# Files one oomscan ticket (a line of `oomscan --ticket-style github`) as a GitHub issue, unless an
# issue, open or closed, already carries its dedup key. Needs gh (logged in) and jq.
#   oomscan --ticket-style github logs/ | while IFS= read -r t; do
#     printf '%s\n' "$t" | sh ticket-github.sh acme/trainer; done
set -eu
repo=${1:?usage: ticket-github.sh OWNER/REPO < ticket.json}
ticket=$(cat)
# the label oomscan-<key> (an edited body keeps it), and for issues filed before it the body's
# "Dedup key: `<16 hex digits>`"
key=$(printf '%s' "$ticket" | jq -r '.labels[] | select(startswith("oomscan-")) | ltrimstr("oomscan-")' | head -n 1)
[ -n "$key" ] || key=$(printf '%s' "$ticket" | jq -r '.body | capture("Dedup key: `(?<k>[0-9a-f]{16})`").k')
# Both searches must answer before anything is filed: a failed one stops here (exit 1), never files
# a duplicate.
by_label=$(gh issue list --repo "$repo" --state all --label "oomscan-$key" --json number --jq length) ||
  { echo "ticket-github: the search for oomscan-$key failed; nothing filed" >&2; exit 1; }
by_body=$(gh issue list --repo "$repo" --state all --search "$key in:body" --json number --jq length) ||
  { echo "ticket-github: the search for $key failed; nothing filed" >&2; exit 1; }
case "$by_label$by_body" in
  '' | *[!0-9]*) echo "ticket-github: the search for $key gave no count; nothing filed" >&2; exit 1 ;;
esac
found=$((by_label + by_body))
if [ "$found" -gt 0 ]; then
  echo "ticket-github: $key already filed in $repo" >&2
  exit 0
fi
printf '%s' "$ticket" | gh api --method POST "repos/$repo/issues" --input - --jq .html_url
