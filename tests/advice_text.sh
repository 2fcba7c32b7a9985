#!/bin/sh
# advice_text.sh OOMSCAN ROOT
# Advice is printed as the user types it (issue 14): over every fixture log's text, JSON and ticket
# output, and over the rendered checklist pages, no line may carry the data files' rule syntax
# ("set:<value>"), which only oomscan reads. A failing line is printed with its fixture and format.
set -u
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$1") root=$2
rule='(^|[^A-Za-z_])set:'
cd "$root" || exit 2
n=0
for f in $(find fixtures -name '*.log' | LC_ALL=C sort); do
  for fmt in text json ticket; do
    "$oomscan" --color never -f "$fmt" "$f" > "$t/out" 2>/dev/null
    if grep -qE "$rule" "$t/out"; then
      bad "$f ($fmt): $(grep -m1 -E "$rule" "$t/out" | cut -c1-200)"
    else
      ok
    fi
  done
  n=$((n + 1))
done
for page in docs/remediation/*.md; do
  if grep -qE "$rule" "$page"; then bad "$page: $(grep -m1 -E "$rule" "$page" | cut -c1-200)"; else ok; fi
done
[ "$n" -gt 200 ] || bad "only $n fixture logs found under $root/fixtures"
finish advice_text
