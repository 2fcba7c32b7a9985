#!/bin/sh
# markdown.sh OOMSCAN SOURCE_DIR - `--format markdown`, the report to attach: one section per job with
# its root causes first, every setting the JSON proposes printed as typed, balanced code fences, and
# nothing from a log line that a renderer or a terminal would act on (control bytes, a pipe that would
# split a table cell).
set -u
oomscan=$1 src=$2
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$oomscan")
g="$src/fixtures/golden"
command -v jq > /dev/null || { echo "markdown: jq is missing (.ci/test installs it)"; exit 1; }

for f in "$g"/*.log "$g/funasr-oom-cascade"; do
  name=$(basename "$f")
  "$oomscan" --format markdown "$f" > "$t/r.md"
  "$oomscan" --format json "$f" > "$t/r.json"
  roots=$(jq '[.findings[] | select(.role == "root")] | length' "$t/r.json")
  jobs=$(jq '[.findings[] | select(.role == "root") | (.job // .context.job_id // "" | tostring)] | unique | length' "$t/r.json")
  if [ "$roots" -eq 0 ]; then
    [ "$(head -n 1 "$t/r.md")" = "## oomscan: no failure found" ] && ok || bad "$name: no-failure heading: $(head -n 1 "$t/r.md")"
    continue
  fi
  head -n 1 "$t/r.md" | grep -q '^## oomscan: ' && ok || bad "$name: first line is not the report heading"
  [ "$(grep -c '^## oomscan: ' "$t/r.md")" -eq "$jobs" ] && ok || bad "$name: $(grep -c '^## oomscan: ' "$t/r.md") job sections for $jobs job(s)"
  [ "$(grep -c '^### Root cause: ' "$t/r.md")" -eq "$roots" ] && ok || bad "$name: root sections != $roots roots"
  [ $(( $(grep -c '^ *```' "$t/r.md") % 2 )) -eq 0 ] && ok || bad "$name: unbalanced code fences"
  # the same proposed change as the JSON: every typed setting of every root, verbatim
  jq -r '.findings[] | select(.role == "root") | .remediation.steps[]?.settings[]? | select(.form != "words") | .text' \
    "$t/r.json" > "$t/typed"
  while IFS= read -r line; do
    grep -qxF "   $line" "$t/r.md" && ok || bad "$name: markdown lacks the setting '$line'"
  done < "$t/typed"
  # each root's fingerprint is there, for the ticket's dedup
  for id in $(jq -r '.findings[] | select(.role == "root") | .id' "$t/r.json"); do
    grep -q "fingerprint: \`$id\`" "$t/r.md" && ok || bad "$name: fingerprint $id missing"
  done
done

# a hostile line: an OOM whose text carries a terminal title sequence and a pipe
printf 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.5 GiB is free. \033]0;owned\007 | x |\n' > "$t/hostile.log"
"$oomscan" --format markdown "$t/hostile.log" > "$t/h.md"
grep -q '### Root cause' "$t/h.md" && ok || bad "hostile line: no finding"
if LC_ALL=C grep -q "$(printf '[\001-\010\013-\037\177]')" "$t/h.md"; then bad "control bytes reached the markdown"; else ok; fi
# a path longer than a cell holds, of two-byte characters, at both parities (issue 35): shortened
# between characters, the report valid UTF-8 (the cut fell inside one)
e=$(printf '\303\251') # é
long=$(i=0; while [ $i -lt 120 ]; do printf '%s' "$e"; i=$((i + 1)); done)
for pre in a ab; do
  mkdir -p "$t/$pre/$long" && cp "$src/fixtures/golden/swift-interleaved-oom.log" "$t/$pre/$long/$long.log"
  (cd "$t" && "$oomscan" --format markdown "$pre/$long/$long.log" > "$t/u.md")
  grep -q '### Root cause' "$t/u.md" && python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$t/u.md" &&
    ok || bad "a long path of two-byte characters ($pre): the markdown is not valid UTF-8"
done
finish markdown
