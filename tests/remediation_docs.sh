#!/bin/sh
# remediation_docs.sh OOMSCAN DOCS_DIR [--update]
# docs/remediation/<id>.md is rendered from patterns/remediation/<id>.json by `oomscan --explain <id>`.
# Fails when a rendered page and the data disagree, or a page has no checklist behind it.
set -u
oomscan=$1 dir=$2 update=${3:-}
mkdir -p "$dir"
fails=0
ids=$("$oomscan" --explain list) || exit 2
for id in $ids; do
  if [ "$update" = "--update" ]; then
    "$oomscan" --explain "$id" > "$dir/$id.md"
  elif ! "$oomscan" --explain "$id" | cmp -s - "$dir/$id.md"; then
    echo "docs/remediation/$id.md differs from its data: run tests/remediation_docs.sh build/oomscan docs/remediation --update"
    fails=$((fails + 1))
  fi
done
for page in "$dir"/*.md; do
  id=$(basename "$page" .md)
  echo "$ids" | grep -qx "$id" || { echo "docs/remediation/$id.md has no checklist behind it"; fails=$((fails + 1)); }
done
[ "$fails" -eq 0 ] && echo "$(echo "$ids" | wc -l) checklist pages match their data"
[ "$fails" -eq 0 ]
