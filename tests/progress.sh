#!/bin/sh
# progress.sh OOMSCAN SOURCE_DIR - the progress line shows on a terminal's stderr and nowhere else, only
# after a second of work, never on TERM=dumb or with --no-progress, and in one unit (issue 33 item 8).
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
# a small log on a terminal: done in well under a second, so no line flashes
TERM=xterm script -qec "'$bin' --format json '$log' >'$tmp/tty.json'" /dev/null >"$tmp/tty.out" 2>&1 || true
[ ! -s "$tmp/tty.out" ] || fail "a progress line for a small log: $(cat -v "$tmp/tty.out")"
cmp -s "$tmp/plain.json" "$tmp/tty.json" || fail "the JSON differs when stderr is a terminal"

# slow() OPTIONS...: scan a gzip file and a FIFO whose writer pauses 2 s, stderr on a terminal
gzip -c "$log" > "$tmp/packed.log.gz"
slow() {
  rm -f "$tmp/fifo"; mkfifo "$tmp/fifo"
  { cat "$log"; sleep 2; cat "$log"; } > "$tmp/fifo" &
  script -qec "'$bin' $* --format json '$tmp/packed.log.gz' '$tmp/fifo' >/dev/null" /dev/null >"$tmp/slow.out" 2>&1 || true
  wait
}
# past a second the line is drawn, then erased; with a compressed input no share or time left is
# computed from sizes on disk (decoded bytes over compressed ones): decoded bytes and throughput only
TERM=xterm slow
grep -q "oomscan: .* decoded, .*/s" "$tmp/slow.out" || fail "no progress line after a second: $(cat -v "$tmp/slow.out")"
! grep -q "left\|%" "$tmp/slow.out" || fail "a share or time left across units: $(cat -v "$tmp/slow.out")"
tail -c 8 "$tmp/slow.out" | od -c | grep -q '\\r' || fail "progress line not erased at the end"
# TERM=dumb cannot erase a line: no progress at all; --no-progress: none either
TERM=dumb slow
! grep -q "$(printf '\033')\[K" "$tmp/slow.out" && ! grep -q "oomscan: " "$tmp/slow.out" ||
  fail "progress drawn on TERM=dumb: $(cat -v "$tmp/slow.out")"
TERM=xterm slow --no-progress
! grep -q "oomscan: " "$tmp/slow.out" || fail "progress drawn with --no-progress: $(cat -v "$tmp/slow.out")"
# --quiet: nothing on the terminal either
TERM=xterm script -qec "'$bin' -q --format json '$log' >/dev/null" /dev/null >"$tmp/quiet.out" 2>&1 || true
[ ! -s "$tmp/quiet.out" ] || fail "progress shown with --quiet: $(cat -v "$tmp/quiet.out")"
echo "progress: ok"
