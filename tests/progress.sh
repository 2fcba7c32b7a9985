#!/bin/sh
# progress.sh OOMSCAN SOURCE_DIR - the progress line shows on a terminal's stderr and nowhere else.
set -eu
bin="$1"
src="$2"
log="$src/fixtures/golden/verl-log-prob-oom.log"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# stderr to a file: not a word of progress, and the JSON is unchanged
"$bin" --format json "$log" >"$tmp/plain.json" 2>"$tmp/plain.err" || [ $? -eq 1 ]
[ ! -s "$tmp/plain.err" ] || fail "progress written to a non-terminal stderr: $(cat "$tmp/plain.err")"

command -v script >/dev/null 2>&1 || { echo "SKIP: no script(1) for a pseudo-terminal"; exit 77; }
# stderr on a pseudo-terminal (stdout to a file): the line is drawn, then erased
script -qec "'$bin' --format json '$log' >'$tmp/tty.json'" /dev/null >"$tmp/tty.out" 2>&1 || true
grep -q "oomscan: .* of .*B (100%)" "$tmp/tty.out" || fail "no progress line on the terminal: $(cat -v "$tmp/tty.out")"
tail -c 8 "$tmp/tty.out" | od -c | grep -q '\\r' || fail "progress line not erased at the end"
cmp -s "$tmp/plain.json" "$tmp/tty.json" || fail "the JSON differs when stderr is a terminal"
# --quiet: nothing on the terminal either
script -qec "'$bin' -q --format json '$log' >/dev/null" /dev/null >"$tmp/quiet.out" 2>&1 || true
[ ! -s "$tmp/quiet.out" ] || fail "progress shown with --quiet: $(cat -v "$tmp/quiet.out")"
echo "progress: ok"
