#!/bin/sh
# layering.sh SRC_DIR MAX_UP [LIBRARY.a] - the dependencies of src/ follow the pipeline's layer order,
# with no loop.
#
# Layers, lowest first: base < input < db < match < story < dumps < advice < result < emit < pipeline < cli.
# A file may include headers of its own layer or of a lower one. Including a higher layer's header is
# allowed only when the include line says why in a comment ("layering: <reason>"), and there may be at
# most MAX_UP such dependencies (a module including one higher layer, by however many lines, is one;
# issue 11 asks for two). A loop fails whatever the layers:
#  - in the include graph, between modules (a module is a .c with its .h): a.c includes b.h and b.c
#    includes a.h, or longer;
#  - in the call graph, when LIBRARY.a is given: object a calls a function defined in object b and b
#    calls one defined in a (nm tells who defines and who uses each symbol).
# src/tools/ (build-time programs) is outside the library and not checked.
# Every file of every layer, and the public headers, stays at 1,000 lines or fewer (issue 34: a file
# that grows past it is split by concern).
set -u
src=${1:?usage: layering.sh SRC_DIR MAX_UP [LIBRARY.a]}
max_up=${2:?usage: layering.sh SRC_DIR MAX_UP [LIBRARY.a]}
lib=${3:-}
order="base input db match story dumps advice result emit pipeline cli"
short="base input db match story dumps advice result emit pipeline cli ../include"

rank() { # rank LAYER -> its position, or nothing when it is not a layer
    i=0
    for l in $order; do
        [ "$l" = "$1" ] && { echo $i; return; }
        i=$((i + 1))
    done
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
cd "$src" || exit 2
for f in $(find . -path ./tools -prune -o \( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||' | sort); do
    from=${f%.*}
    fr=$(rank "${f%%/*}")
    if [ -z "$fr" ]; then
        echo "NOLAYER $f is in no layer (add its folder to the order in tests/layering.sh)"
        continue
    fi
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]*/[A-Za-z0-9_]*\.h"' "$f" | while IFS= read -r line; do
        inc=$(echo "$line" | sed 's/[^"]*"\([^"]*\)".*/\1/')
        [ -f "$inc" ] || continue
        [ "${inc%.h}" != "$from" ] && echo "$from ${inc%.h}" >>"$tmp/edges"
        tr=$(rank "${inc%%/*}")
        if [ -n "$tr" ] && [ "$tr" -gt "$fr" ]; then
            if echo "$line" | grep -q 'layering:'; then
                echo "UP $from>${inc%%/*} $f:${line%%:*} includes $inc: $(echo "$line" | sed 's/.*layering: *//; s/ *\*\/.*//')"
            else
                echo "BAD $f:${line%%:*} includes $inc: ${inc%%/*} is above ${f%%/*}, and the line gives no 'layering:' reason"
            fi
        fi
    done
done >"$tmp/report"
grep -E '^(BAD|NOLAYER) ' "$tmp/report" && fail=1
for l in $short; do
    for f in "$l"/*.c "$l"/*.h; do
        [ -f "$f" ] || continue
        n=$(wc -l < "$f")
        [ "$n" -le 1000 ] || { echo "LONG $f is $n lines: files of $l/ stay at 1,000 or fewer (split it by concern)"; fail=1; }
    done
done
# counted as dependencies: a module's includes of one higher layer are one dependency
up=$(grep '^UP ' "$tmp/report" | cut -d' ' -f2 | sort -u | wc -l)
grep '^UP ' "$tmp/report" | cut -d' ' -f1,3-
if [ "$up" -gt "$max_up" ]; then
    echo "layering: $up explained upward dependencies (module -> higher layer), at most $max_up allowed"
    fail=1
fi
touch "$tmp/edges"
if ! sort -u "$tmp/edges" | tsort >/dev/null 2>"$tmp/err"; then
    echo "layering: the include graph has a loop:"
    sed 's/^tsort: //' "$tmp/err"
    fail=1
fi
if [ -n "$lib" ]; then
    # who defines each global function or object, and who uses it
    nm -A --defined-only -g "$lib" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ { n = split($1, p, ":"); o = p[n - 1]; sub(/\.o$/, "", o); print $3, o }' | sort >"$tmp/defs"
    nm -A -u "$lib" 2>/dev/null | awk '{ n = split($1, p, ":"); o = p[n - 1]; sub(/\.o$/, "", o); print $NF, o }' | sort >"$tmp/uses"
    join "$tmp/uses" "$tmp/defs" | awk '$2 != $3 { print $2, $3 }' | sort -u >"$tmp/calls"
    [ -s "$tmp/calls" ] || { echo "layering: no calls read from $lib (nm missing?)"; fail=1; }
    if ! tsort "$tmp/calls" >/dev/null 2>"$tmp/err"; then
        echo "layering: the call graph of $lib has a loop:"
        sed 's/^tsort: //' "$tmp/err"
        fail=1
    fi
fi
[ $fail = 0 ] && echo "layering: ok ($up explained upward dependencies, at most $max_up; $(sort -u "$tmp/edges" | wc -l) include edges${lib:+, $(wc -l <"$tmp/calls") call edges})"
exit $fail
