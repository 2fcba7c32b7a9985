#!/bin/sh
# conventions.sh OOMSCAN SOURCE_DIR - the command line's conventions: --help fits one screen and lists
# every option of src/cli/main.c, and so do the man page (which renders without a warning) and the bash
# completion; options parse the getopt_long way; --quiet and --color do what they say.
set -u
oomscan=$1 src=$2
man1="$src/docs/oomscan.1" comp="$src/contrib/bash-completion/oomscan"
sample="$src/fixtures/golden/verl-log-prob-oom.log"
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$oomscan")

# --help: one screen of at most 24 lines of at most 80 columns, on stdout, exit 0
"$oomscan" --help > "$t/help"; rc=$?
[ $rc -eq 0 ] && ok || bad "--help: exit $rc"
lines=$(wc -l < "$t/help") cols=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$t/help")
[ "$lines" -le 24 ] && [ "$cols" -le 80 ] && ok || bad "--help is $lines lines, $cols columns (max 24 x 80)"

# every long option of the table (the "colour" alias aside) in help, man page and completion
sed -n 's/^ *{"\([a-z-]*\)", [a-z_]*, NULL, [^}]*},.*/\1/p' "$src/src/cli/main.c" | grep -vx colour > "$t/longs"
[ "$(wc -l < "$t/longs")" -ge 15 ] && ok || bad "could not read the option table of src/cli/main.c"
sed 's/\\-/-/g' "$man1" > "$t/man.txt"
while IFS= read -r o; do
  grep -q -- "--$o\\b" "$t/help" && ok || bad "--help does not list --$o"
  grep -q -- "--$o\\b" "$t/man.txt" && ok || bad "docs/oomscan.1 does not describe --$o"
  grep -q -- "--$o\\b" "$comp" && ok || bad "the bash completion does not offer --$o"
done < "$t/longs"
# every short option of the optstring in help as "-x,"
short=$(sed -n 's/.*getopt_long(argc, argv, "\([^"]*\)".*/\1/p' "$src/src/cli/main.c" | tr -d :)
[ -n "$short" ] && ok || bad "could not read the optstring of src/cli/main.c"
for c in $(printf '%s' "$short" | sed 's/./& /g'); do
  grep -q -- "-$c, --" "$t/help" && ok || bad "--help does not list -$c"
done

# the man page: renders without a warning, states the binary's version
if command -v man > /dev/null; then
  MANWIDTH=80 man --warnings -E UTF-8 -l "$man1" > "$t/man.out" 2> "$t/man.err"
  [ ! -s "$t/man.err" ] && [ -s "$t/man.out" ] && ok || bad "man -l docs/oomscan.1: $(cat "$t/man.err")"
else
  bad "man is missing (.ci/test installs man-db)"
fi
version=$("$oomscan" --version | cut -d' ' -f2)
grep -q "^\.TH OOMSCAN 1 [0-9-]* \"oomscan $version\"" "$man1" && ok || bad "docs/oomscan.1 is not for version $version"

# the completion, in bash: options, format and style values
complete_words() { # words...: what completing the last word offers
  bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _oomscan; printf "%s\n" "${COMPREPLY[@]}"' \
    sh "$comp" "$@" 2> /dev/null | sort | tr '\n' ' '
}
[ "$(complete_words oomscan --for)" = "--format " ] && ok || bad "completion of --for: $(complete_words oomscan --for)"
[ "$(complete_words oomscan -f '')" = "json markdown ndjson openmetrics text ticket " ] && ok || bad "completion of -f values"
[ "$(complete_words oomscan --ticket-style g)" = "github " ] && ok || bad "completion of --ticket-style values"
[ "$(complete_words oomscan --color n)" = "never " ] && ok || bad "completion of --color values"
[ "$(complete_words oomscan mer)" = "merge " ] && ok || bad "completion of the merge subcommand"

# getopt_long conventions: --opt=value, -ovalue, abbreviations, bundled flags, -- ends options
"$oomscan" --format json "$sample" > "$t/ref.json"
grep -q '"cuda_oom"' "$t/ref.json" && ok || bad "--format json on the sample found nothing"
for args in "--format=json" "-fjson" "-f json" "--form json"; do
  # shellcheck disable=SC2086
  "$oomscan" $args "$sample" > "$t/o.json"
  cmp -s "$t/ref.json" "$t/o.json" && ok || bad "'$args' is not the same as --format json"
done
cp "$sample" "$t/-v.log"
(cd "$t" && "$oomscan" --format json -- -v.log > o.json); rc=$?
[ $rc -eq 1 ] && grep -q '"-v.log"' "$t/o.json" && ok || bad "-- does not end the options (exit $rc)"
"$oomscan" -qv "$t/nope.log" "$sample" > /dev/null 2> "$t/err"; rc=$?
[ $rc -eq 2 ] && [ ! -s "$t/err" ] && ok || bad "-qv: exit $rc, stderr: $(cat "$t/err")"
"$oomscan" "$t/nope.log" > /dev/null 2> "$t/err"
grep -q "nope.log" "$t/err" && ok || bad "without -q an unreadable input is not reported"
# an unknown option or a missing value: one line naming it, not the whole help (issue 17)
"$oomscan" --no-such-option "$sample" > /dev/null 2> "$t/err"; rc=$?
[ $rc -eq 2 ] && [ "$(wc -l < "$t/err")" -eq 1 ] && grep -q "'--no-such-option'.*usage:" "$t/err" && ok ||
  bad "unknown option: exit $rc, stderr: $(cat "$t/err")"
"$oomscan" -Z "$sample" > /dev/null 2> "$t/err"; rc=$?
[ $rc -eq 2 ] && [ "$(wc -l < "$t/err")" -eq 1 ] && grep -q "'-Z'" "$t/err" && ok || bad "-Z: exit $rc, stderr: $(cat "$t/err")"
"$oomscan" "$sample" --format > /dev/null 2> "$t/err"; rc=$?
[ $rc -eq 2 ] && [ "$(wc -l < "$t/err")" -eq 1 ] && grep -q "needs a value" "$t/err" && ok ||
  bad "--format without a value: exit $rc, stderr: $(cat "$t/err")"
# -q as grep's: nothing on stdout or stderr, only the exit status
"$oomscan" -q "$sample" > "$t/out" 2> "$t/err"; rc=$?
[ $rc -eq 1 ] && [ ! -s "$t/out" ] && [ ! -s "$t/err" ] && ok || bad "-q: exit $rc, $(wc -c < "$t/out") bytes written"
for f in json ndjson markdown openmetrics ticket; do
  "$oomscan" -q --format $f "$sample" "$t/nope.log" > "$t/out" 2> "$t/err"; rc=$?
  [ $rc -eq 2 ] && [ ! -s "$t/out" ] && [ ! -s "$t/err" ] && ok || bad "-q --format $f: exit $rc, $(wc -c < "$t/out") bytes out, $(cat "$t/err")"
done
# -q with -o: the report asked for still goes to its file, nothing to stdout or stderr
"$oomscan" -q -f json -o "$t/q.json" "$sample" > "$t/out" 2> "$t/err"; rc=$?
[ $rc -eq 1 ] && [ ! -s "$t/out" ] && [ ! -s "$t/err" ] && [ -s "$t/q.json" ] && jq -e '.findings | length > 0' "$t/q.json" > /dev/null && ok ||
  bad "-q -o: exit $rc, $(wc -c < "$t/out") bytes out, file: $(head -c 100 "$t/q.json" 2>&1)"
# the text report fits 80 columns when not a terminal, COLUMNS when set; evidence is cut with an ellipsis
# past the width only what cannot be broken and pasted: a setting or command line (seven-space indent),
# a single word such as a path, or a quoted line finishing a number with its unit (up to 24 columns past)
# (columns, not bytes: a bar's block characters are three bytes of UTF-8 and one column)
prose_past() { LC_ALL=C sed 's/\xe2[\x80-\xbf][\x80-\xbf]/#/g' "$2" |
  awk -v w="$1" 'length($0) > w && !/^       [^ ]/ && !/^ *[^ ]+$/ && !(/^ *> / && length($0) <= w + 24)'; }
"$oomscan" -v "$sample" > "$t/out"
[ -z "$(prose_past 80 "$t/out")" ] && ok || bad "not a terminal: prose lines past 80 columns: $(prose_past 80 "$t/out")"
grep -q '^  > .*…$' "$t/out" && ok || bad "the evidence is not cut with an ellipsis"
COLUMNS=50 "$oomscan" -v "$sample" > "$t/out"
[ -z "$(prose_past 50 "$t/out")" ] && ok || bad "COLUMNS=50: prose lines past 50 columns: $(prose_past 50 "$t/out")"
grep -q '^       actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu' "$t/out" || grep -q 'log_prob_micro_batch_size_per_gpu$' "$t/out" &&
  ok || bad "COLUMNS=50: a setting was broken"
# colour by default only on a terminal that shows it: not with TERM=dumb, not with NO_COLOR
if command -v script > /dev/null; then
  TERM=xterm script -qec "'$oomscan' '$sample' 2>/dev/null" /dev/null > "$t/tty" 2>&1
  grep -q "$(printf '\033')" "$t/tty" && ok || bad "a terminal: no colour"
  TERM=dumb script -qec "'$oomscan' '$sample' 2>/dev/null" /dev/null > "$t/tty" 2>&1
  grep -q "$(printf '\033')" "$t/tty" && bad "TERM=dumb: colour written" || ok
  NO_COLOR=1 TERM=xterm script -qec "'$oomscan' '$sample' 2>/dev/null" /dev/null > "$t/tty" 2>&1
  grep -q "$(printf '\033')" "$t/tty" && bad "NO_COLOR on a terminal: colour written" || ok
else
  bad "script (util-linux) is missing"
fi
"$oomscan" --color sometimes "$sample" > /dev/null 2>&1; [ $? -eq 2 ] && ok || bad "--color sometimes: not exit 2"
"$oomscan" --color=never "$sample" | grep -q "$(printf '\033')" && bad "--color=never: colour written" || ok
NO_COLOR=1 "$oomscan" --color=always "$sample" | grep -q "$(printf '\033')" && ok || bad "--color=always loses to NO_COLOR"
"$oomscan" --job-id '' "$sample" > /dev/null 2>&1; [ $? -eq 2 ] && ok || bad "--job-id '': not exit 2"

finish conventions
