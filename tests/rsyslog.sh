#!/bin/sh
# rsyslog.sh OOMSCAN SOURCE_DIR - a real log shipper at the other end: an rsyslogd of our own (own config,
# work directory and pid file in a temporary folder, no system socket) follows a file with imfile and
# pipes every line to `oomscan --format ndjson -` with omprog. A real failing log is appended to the
# file; every finding must arrive, each once as new. Exit 77 (skipped) only when rsyslogd is absent.
set -u
oomscan=$1 src=$2
case $oomscan in /*) ;; *) oomscan=$(pwd)/$oomscan ;; esac
case $src in /*) ;; *) src=$(pwd)/$src ;; esac
rsyslogd=$(command -v rsyslogd || ls /usr/sbin/rsyslogd /sbin/rsyslogd 2>/dev/null | head -n 1)
if [ -z "$rsyslogd" ]; then
    echo "rsyslogd not installed: skipped (Debian: apt-get install rsyslog)"
    exit 77
fi
t=$(mktemp -d)
pid=""
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$t"
}
trap cleanup EXIT
fails=0 passes=0
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
dups() { grep '"type":"finding"' "$1" | cut -c8-23 | sort | uniq -d; }
ids() { cut -c8-23 "$1" | sort -u; }
g=$src/fixtures/golden c=$src/fixtures/corpus
mkdir -p "$t/work"
: > "$t/train.log"
# The documented configuration (docs/shipping.md), with this test's paths. Only imfile is loaded: no
# imuxsock, so no /dev/log; polling mode, as inotify may be missing in containers.
cat > "$t/rsyslog.conf" <<EOF
global(workDirectory="$t/work")
module(load="imfile" mode="polling" PollingInterval="1")
module(load="omprog")
template(name="oomscan_line" type="string" string="%msg%\n")
input(type="imfile" File="$t/train.log" Tag="train" ruleset="oomscan")
ruleset(name="oomscan") {
  action(type="omprog" binary="$oomscan --format ndjson -" template="oomscan_line"
         output="$t/findings.ndjson")
}
EOF
"$rsyslogd" -N1 -f "$t/rsyslog.conf" > "$t/check.out" 2>&1 && ok || { bad "rsyslogd rejects the configuration"; cat "$t/check.out"; }
"$rsyslogd" -n -f "$t/rsyslog.conf" -i "$t/rsyslogd.pid" > "$t/rsyslogd.out" 2>&1 &
pid=$!
sleep 2
kill -0 "$pid" 2>/dev/null && ok || { bad "rsyslogd did not start"; cat "$t/rsyslogd.out"; }

# A real cascade, as a job would write it: NCCL timeouts, the CUDA OOM inside NCCL behind them, a
# SIGKILL cascade, then the OOM again.
cat "$c/nccl_timeout-sglang-1691.log" "$g/nccl-error-after-oom.log" "$g/sigkill-then-childfailed.log" \
    "$g/nccl-error-after-oom.log" > "$t/job.log"
"$oomscan" --format ndjson - < "$t/job.log" > "$t/batch.ndjson"
ids "$t/batch.ndjson" > "$t/want.ids"
want=$(grep -c . "$t/want.ids")
# appended in pieces, as a training job writes
split -l 10 "$t/job.log" "$t/piece."
for p in "$t"/piece.*; do
    cat "$p" >> "$t/train.log"
    sleep 0.3
done

# Findings arrive while rsyslogd still runs (the pipe to oomscan stays open).
i=0
while [ $i -lt 600 ]; do
    [ -s "$t/findings.ndjson" ] && [ "$(ids "$t/findings.ndjson" | grep -c .)" -ge "$want" ] && break
    sleep 0.1
    i=$((i + 1))
done
[ $i -lt 600 ] && ok || bad "only $(ids "$t/findings.ndjson" 2>/dev/null | grep -c .) of $want findings arrived within 60 s"
# Stopping rsyslogd closes oomscan's stdin: it flushes and exits.
kill -TERM "$pid"
wait "$pid"
pid=""
sleep 1
[ -z "$(dups "$t/findings.ndjson")" ] && ok || bad "a finding arrived twice as new: $(dups "$t/findings.ndjson")"
ids "$t/findings.ndjson" > "$t/got.ids"
cmp -s "$t/want.ids" "$t/got.ids" && ok || { bad "findings through rsyslog differ from a direct scan"; diff "$t/want.ids" "$t/got.ids"; }
grep -v '^{"id":"[0-9a-f]\{16\}",.*}$' "$t/findings.ndjson" > "$t/other.txt"
[ ! -s "$t/other.txt" ] && ok || { bad "non-record output from oomscan under omprog:"; head -3 "$t/other.txt"; }

echo "rsyslog: $passes passed, $fails failed"
[ $fails -eq 0 ]
