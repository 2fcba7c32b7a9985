#!/bin/sh
# golden.sh OOMSCAN FIXTURES_DIR CASE
# Runs oomscan --format json on one golden case and compares the output with its expected JSON. Paths
# are relative, so the output is the same on every machine. A case is one of:
#   NAME.<ext>   a single log file; expected output in NAME.expected.json
#   NAME         a folder of log files (one job's logs from several ranks or nodes), scanned as a
#                directory; expected output in NAME.expected.json. The files are also given in reverse
#                order on the command line: ids, roles and causes must not change with input order.
#   NAME.tar.gz  an archive built here, at test time, from the folder NAME (its files become the
#                members, sorted by name); expected output in NAME.tar.gz.expected.json
# OOMSCAN_UPDATE_GOLDEN=1 rewrites the expected file instead (review the diff before committing).
set -u
oomscan=$1 dir=$2 case=$3
cd "$dir" || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run_dir=$dir
case "$case" in
*.tar.gz)
    folder=${case%.tar.gz}
    expected="$dir/$case.expected.json"
    [ -d "$folder" ] || { echo "no folder $folder to build $case from"; exit 2; }
    # fixed owner and times so the archive does not depend on the checkout; members sorted by name
    (cd "$folder" && tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -czf "$tmp/$case" -- *) ||
        { echo "could not build $case"; exit 2; }
    run_dir=$tmp
    ;;
*)
    if [ -d "$case" ]; then
        expected="$dir/$case.expected.json"
    else
        expected="$dir/${case%.*}.expected.json"
    fi
    ;;
esac
(cd "$run_dir" && "$oomscan" --format json "$case") > "$tmp/actual.json"
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
    echo "oomscan exited with $rc on $case"
    exit 1
fi
if [ "${OOMSCAN_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$tmp/actual.json" "$expected"
    echo "updated $expected"
    exit 0
fi
if ! diff -u "$expected" "$tmp/actual.json"; then
    echo "golden mismatch for $case (OOMSCAN_UPDATE_GOLDEN=1 ctest -R golden rewrites after review)"
    exit 1
fi

# One line per finding: its id, role and cause (a finding's own id is the only 16-hex "id").
story() {
    grep -E '"id":[[:space:]]*"[0-9a-f]{16}"|"role":|"caused_by":' "$1" | tr -d ' \t,' | paste -d' ' - - - | sort
}
if [ -d "$case" ]; then
    find "$case" -type f | LC_ALL=C sort > "$tmp/files"
    # shellcheck disable=SC2046 # fixture file names have no blanks
    "$oomscan" --format json $(LC_ALL=C sort -r "$tmp/files") > "$tmp/reversed.json"
    # shellcheck disable=SC2046
    "$oomscan" --format json $(cat "$tmp/files") > "$tmp/forward.json"
    if [ "$(story "$tmp/forward.json")" != "$(story "$tmp/reversed.json")" ]; then
        echo "ids, roles or causes depend on input order for $case:"
        diff "$tmp/forward.json" "$tmp/reversed.json" | head -40
        exit 1
    fi
    [ -n "$(story "$tmp/forward.json")" ] || { echo "no finding in $case"; exit 1; }
fi
exit 0
