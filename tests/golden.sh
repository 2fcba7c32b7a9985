#!/bin/sh
# golden.sh OOMSCAN FIXTURES_DIR CASE_FILE
# Runs oomscan --format json on one fixture (from inside the fixtures folder, so paths are relative
# and the output is the same on every machine) and compares it with CASE.expected.json.
# OOMSCAN_UPDATE_GOLDEN=1 rewrites the expected file instead (review the diff before committing).
set -u
oomscan=$1 dir=$2 file=$3
base=${file%.*}
case "$file" in *.tar.gz) base=${file%.tar.gz} ;; esac
expected="$base.expected.json"
cd "$dir" || exit 2
actual=$(mktemp)
trap 'rm -f "$actual"' EXIT
"$oomscan" --format json "$file" > "$actual"
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
    echo "oomscan exited with $rc on $file"
    exit 1
fi
if [ "${OOMSCAN_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$actual" "$expected"
    echo "updated $expected"
    exit 0
fi
if ! diff -u "$expected" "$actual"; then
    echo "golden mismatch for $file (OOMSCAN_UPDATE_GOLDEN=1 ctest -R golden rewrites after review)"
    exit 1
fi
