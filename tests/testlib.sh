# testlib.sh - sourced by the shell tests of the pipeline and packaging (ticket.sh, epilog.sh,
# conventions.sh, install.sh, merge.sh, state.sh): a temporary folder $t removed on exit, ok/bad counters, and
# `finish NAME` printing the closing "N passed, N failed" line and giving the exit status.
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0 passes=0
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
# an absolute path: the tests change folders, ctest may pass a relative one
abspath() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
finish() { echo "$1: $passes passed, $fails failed"; [ "$fails" -eq 0 ]; }
