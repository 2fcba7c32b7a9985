#!/bin/sh
# funclen.sh SRC_DIR [MAX] - every function in SRC_DIR longer than MAX lines (80 unless given) says why it
# is one function: the comment above it holds a line with "long:" and the reason ("long: one pass over
# the bytes, its states share the loop's locals"). Lists each function that is over MAX lines without
# one, as file:line name (n lines), and fails when there is any. Issue 34.
#
# A function is what the project's layout makes of one (clang-format, docs/conventions): its signature
# starts at column 0, its body opens with a "{" alone on a line and closes with a "}" alone on a line.
# Its length counts from the first line of its signature to its closing brace. "The comment above"
# is every line between the previous top-level item (a closing brace, a declaration ending in ";", a
# preprocessor line) and the signature. src/tools/ (build-time programs) is checked too.
set -u
src=${1:?usage: funclen.sh SRC_DIR [MAX]}
max=${2:-80}
[ -d "$src" ] || { echo "funclen: no folder $src"; exit 2; }
files=$(find "$src" -name '*.c' | sort)
[ -n "$files" ] || { echo "funclen: no C file under $src"; exit 2; }
# shellcheck disable=SC2086
awk -v max="$max" '
FNR == 1 { above = ""; sig = 0; body = 0 }
body {
    if ($0 ~ /^}[[:space:]]*$/) {
        n = FNR - start + 1; total++
        if (n > max) {
            if (above ~ /long:/) explained++
            else { printf "%s:%d %s (%d lines) has no \"long:\" reason in the comment above it\n", FILENAME, start, name, n; bad++ }
        }
        body = 0; above = ""; sig = 0
    }
    next
}
/^\{[[:space:]]*$/ && sig {
    body = 1
    next
}
/^[[:space:]]*$/ { if (sig) { sig = 0; above = "" } ; next }
/^#/ || /;[[:space:]]*(\/\*.*)?$/ && !/^[A-Za-z_].*\($/ && !sig && !/^[ \/]\*|^\/\// {
    if (!incomment) { above = ""; sig = 0; next }
}
{
    if (incomment || /^\/\*/ || /^\/\//) {
        above = above "\n" $0
        incomment = (incomment || /^\/\*/) && !/\*\//
        next
    }
    if (!sig && /^[A-Za-z_]/ && /\(/) { sig = 1; start = FNR; name = $0; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name); next }
    if (sig) next
    above = ""
}
END {
    if (bad) printf "funclen: %d of the %d functions over %d lines say no reason (of %d functions)\n", bad, bad + explained, max, total
    else printf "funclen: ok (%d functions over %d lines, each with its reason; %d functions)\n", explained, max, total
    exit bad ? 1 : 0
}' $files
