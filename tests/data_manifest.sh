#!/bin/sh
# Fails when patterns/files.cmake (what the build embeds) and the data files on disk disagree.
set -u
dir=$1
a=$(mktemp) b=$(mktemp)
trap 'rm -f "$a" "$b"' EXIT
sed -n 's/^  \(.*\.json\)$/\1/p' "$dir/files.cmake" | LC_ALL=C sort > "$a"
(cd "$dir" && find . -name '*.json' | sed 's|^\./||' | LC_ALL=C sort) > "$b"
if ! diff "$a" "$b"; then
    echo "patterns/files.cmake is out of date: run patterns/update-files.sh (< listed, > on disk)"
    exit 1
fi
echo "$(wc -l < "$b") data files listed and present"
