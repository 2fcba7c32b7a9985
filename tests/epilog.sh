#!/bin/sh
# epilog.sh OOMSCAN SOURCE_DIR - runs docs/examples/slurm-epilog.sh as slurmd would, in a fake job
# environment: a fake `scontrol` on PATH prints `scontrol show job` in Slurm's own layout (taken from
# tdegeus/GooseSLURM#32, paths replaced), the job's output files are fixture logs, and a fake `gh`
# stands in for GitHub so ticket filing and its dedup check run for real.
set -u
oomscan=$1 src=$2
epilog="$src/docs/examples/slurm-epilog.sh"
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$oomscan")
command -v jq > /dev/null || { echo "epilog: jq is missing (.ci/test installs it)"; exit 1; }

mkdir -p "$t/bin" "$t/work dir" "$t/gh"
# StdOut named without the job id, and with a space: the id must come from the epilog, the path whole
cp "$src/fixtures/golden/nccl-error-after-oom.log" "$t/work dir/train log.out"
cp "$src/fixtures/golden/verl-log-prob-oom.log" "$t/work dir/train.err"
cat > "$t/bin/scontrol" <<EOS
#!/bin/sh
[ "\$1 \$2 \$3" = "show job 4242" ] || { echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; }
cat <<'EOJ'
JobId=4242 JobName=velocity_python_PinAndTrigger.py-00
   UserId=tdegeus(177478) GroupId=pcsl(10532) MCS_label=N/A
   Priority=5487 Nice=0 Account=pcsl QOS=normal
   JobState=COMPLETING Reason=None Dependency=(null)
   Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=1:0
   RunTime=20:27:30 TimeLimit=2-00:00:00 TimeMin=N/A
   SubmitTime=2021-08-09T14:30:17 EligibleTime=2021-08-09T14:30:17
   AccrueTime=2021-08-09T14:30:17
   StartTime=2021-08-09T14:30:18 EndTime=2021-08-11T14:30:18 Deadline=N/A
   Partition=serial AllocNode:Sid=fidis:20733
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=gpu-node-[1-2]
   BatchHost=gpu-node-1
   NumNodes=2 NumCPUs=2 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=2,mem=8G,node=2,billing=2
   Command=$t/work dir/train.slurm
   WorkDir=$t/work dir
   StdErr=$t/work dir/train.err
   StdIn=/dev/null
   StdOut=$t/work dir/train log.out
   Power=
EOJ
EOS
# fake gh: "issue list --search KEY..." counts filed bodies holding KEY; "api" files one (stdin)
cat > "$t/bin/gh" <<EOS
#!/bin/sh
if [ "\$1 \$2" = "issue list" ]; then
  key="" label=""
  while [ \$# -gt 0 ]; do [ "\$1" = --search ] && key=\${2%% *}; [ "\$1" = --label ] && label=\$2; shift; done
  [ -e "$t/gh-search-fails" ] && { echo "HTTP 502: Bad Gateway" >&2; exit 1; }
  if [ -n "\$label" ]; then grep -l "\"\$label\"" "$t/gh"/*.json 2>/dev/null | wc -l
  else grep -l "\$key" "$t/gh"/*.json 2>/dev/null | wc -l; fi
elif [ "\$1" = api ]; then
  n=\$(ls "$t/gh" | wc -l)
  cat > "$t/gh/\$n.json"
  echo "https://github.com/acme/trainer/issues/\$n"
fi
EOS
# fake logger: records "priority message" a line, as syslog would receive it
cat > "$t/bin/logger" <<EOS
#!/bin/sh
while [ \$# -gt 0 ]; do case \$1 in -p) pri=\$2; shift 2 ;; -t) shift 2 ;; --) shift; break ;; *) break ;; esac; done
echo "\$pri \$*" >> "$t/syslog"
EOS
chmod +x "$t/bin/scontrol" "$t/bin/gh" "$t/bin/logger"

run_epilog() { # node job [VAR=value...]: run as slurmd does, in a clean environment
  node=$1 job=$2; shift 2
  (cd "$t/work dir" && env -i PATH="$t/bin:/usr/bin:/bin" SLURM_JOB_ID="$job" SLURMD_NODENAME="$node" \
    OOMSCAN="$oomscan" OOMSCAN_SPOOL="$t/spool" "$@" sh "$epilog") 2> "$t/epilog.err"
}

# on the batch host: both files scanned, every finding with the job id, nothing else in the spool
run_epilog gpu-node-1 4242; rc=$?
[ $rc -eq 0 ] && ok || bad "epilog exited $rc"
spool="$t/spool/4242.gpu-node-1.ndjson"
[ -s "$spool" ] && ok || bad "no spool file: $(cat "$t/epilog.err")"
"$oomscan" --format ndjson --job-id 4242 "$t/work dir/train log.out" "$t/work dir/train.err" > "$t/direct.ndjson"
[ "$(wc -l < "$spool")" -eq "$(wc -l < "$t/direct.ndjson")" ] && ok || bad "spool has $(wc -l < "$spool") lines, direct scan $(wc -l < "$t/direct.ndjson")"
jq -e -s 'length > 0 and all(.[]; .context.job_id == "4242")' "$spool" > /dev/null && ok || bad "a finding lacks job 4242"
jq -e -s 'any(.[]; .source.path | endswith("train log.out")) and any(.[]; .source.path | endswith("train.err"))' \
  "$spool" > /dev/null && ok || bad "not both StdOut (with a space) and StdErr scanned"
[ "$(ls "$t/spool" | grep -vx epilog.log)" = "4242.gpu-node-1.ndjson" ] && ok || bad "spool holds more: $(ls "$t/spool")"
grep -q '^user.info job 4242 on gpu-node-1: .* finding(s) in ' "$t/syslog" && ok || bad "progress not sent to syslog: $(cat "$t/syslog" 2>/dev/null)"

# another node of the job: the batch host's output is not scanned twice
run_epilog gpu-node-2 4242
[ ! -e "$t/spool/4242.gpu-node-2.ndjson" ] && ok || bad "second node scanned the batch host's output"
# ... but its node-local logs are, with %j replaced
mkdir -p "$t/local/4242"
cp "$src/fixtures/golden/slurm-oom-kill.log" "$t/local/4242/rank1.log"
run_epilog gpu-node-2 4242 OOMSCAN_EXTRA_PATHS="$t/local/%j"
jq -e -s 'length > 0 and all(.[]; .context.job_id == "4242")' "$t/spool/4242.gpu-node-2.ndjson" > /dev/null 2>&1 &&
  ok || bad "node-local logs (OOMSCAN_EXTRA_PATHS) not scanned with the job id"

# scontrol does not know the job: sbatch's default slurm-<id>.out in the work dir
cp "$src/fixtures/golden/verl-log-prob-oom.log" "$t/work dir/slurm-777.out"
run_epilog gpu-node-1 777; rc=$?
[ $rc -eq 0 ] && jq -e -s 'length > 0 and all(.[]; .context.job_id == "777")' "$t/spool/777.gpu-node-1.ndjson" > /dev/null 2>&1 &&
  ok || bad "fallback to slurm-777.out failed"

# never fails the epilog: no oomscan, no job id, nothing to scan
run_epilog gpu-node-1 4242 OOMSCAN=/nonexistent/oomscan; rc=$?
[ $rc -eq 0 ] && grep -q "not found" "$t/epilog.err" && ok || bad "missing oomscan: exit $rc or not logged"
# ... and an admin sees it at slurmd's default log level: in syslog as an error, and in the spool
grep -q '^user.err job 4242 on gpu-node-1: /nonexistent/oomscan not found' "$t/syslog" && ok ||
  bad "missing oomscan not sent to syslog as an error: $(tail -n 3 "$t/syslog")"
grep -q ' err job 4242 on gpu-node-1: /nonexistent/oomscan not found' "$t/spool/epilog.log" && ok ||
  bad "missing oomscan not written to the spool's epilog.log"
# an input oomscan cannot read: its own message reaches syslog, the other inputs are still scanned
printf '\037\213\010\000garbage' > "$t/local/4242/broken.log.gz"
run_epilog gpu-node-2 4242 OOMSCAN_EXTRA_PATHS="$t/local/%j"; rc=$?
[ $rc -eq 0 ] && grep -q '^user.err job 4242 on gpu-node-2: .*broken.log.gz' "$t/syslog" && ok ||
  bad "oomscan's error about an unreadable input not sent to syslog: $(tail -n 3 "$t/syslog")"
[ -s "$t/spool/4242.gpu-node-2.ndjson" ] && ok || bad "the readable node-local log was not scanned beside the broken one"
# slurmd gives the epilog no PATH at all: it must still run (its own default PATH)
(cd "$t/work dir" && env -i SLURM_JOB_ID=4242 SLURMD_NODENAME=gpu-node-1 OOMSCAN="$oomscan" \
  OOMSCAN_SPOOL="$t/spool-nopath" SCONTROL="$t/bin/scontrol" /bin/sh "$epilog") 2> "$t/epilog.err"
[ -s "$t/spool-nopath/4242.gpu-node-1.ndjson" ] && ok || bad "no PATH: nothing scanned: $(cat "$t/epilog.err")"
run_epilog gpu-node-1 ""; rc=$?
[ $rc -eq 0 ] && ok || bad "no job id: exit $rc"
run_epilog gpu-node-1 999; rc=$?
[ $rc -eq 0 ] && grep -q "no output files" "$t/epilog.err" && ok || bad "nothing to scan: exit $rc or not logged"

# tickets, twice: each root failure filed once (the dedup key search finds the first filing)
roots=$("$oomscan" --format ticket --job-id 4242 "$t/work dir/train log.out" "$t/work dir/train.err" | wc -l)
for i in 1 2; do
  run_epilog gpu-node-1 4242 OOMSCAN_TICKET_CMD="sh '$src/docs/examples/ticket-github.sh' acme/trainer"
done
filed=$(ls "$t/gh" | wc -l)
[ "$roots" -ge 2 ] && [ "$filed" -eq "$roots" ] && ok || bad "tickets: $filed filed for $roots root finding(s) over two runs"
jq -e -s 'all(.[]; (.title | test("job 4242")) and (.labels | index("oomscan")))' "$t/gh"/*.json > /dev/null 2>&1 &&
  ok || bad "filed tickets lack the job id or labels"
# GitHub gets the dedup key as a label too (an edited body keeps it); a failed search files nothing
jq -e -s 'length > 0 and all(.[]; .labels | any(test("^oomscan-[0-9a-f]{16}$")))' "$t/gh"/*.json > /dev/null 2>&1 &&
  ok || bad "filed GitHub tickets carry no oomscan-<key> label"
rm -f "$t/gh"/*.json
touch "$t/gh-search-fails"
run_epilog gpu-node-1 4242 OOMSCAN_TICKET_CMD="sh '$src/docs/examples/ticket-github.sh' acme/trainer"
[ "$(ls "$t/gh" | wc -l)" -eq 0 ] && ok || bad "a failed search filed $(ls "$t/gh" | wc -l) ticket(s)"
rm -f "$t/gh-search-fails"

# the real other end (issue 17 item 7): a private rsyslogd listening on a socket of its own (imuxsock,
# as on a node's /dev/log) and the real logger(1) instead of the fake one: an admin's syslog gets the
# epilog's error at user.err and its progress at user.info, under the tag oomscan-epilog
rsyslogd=$(command -v rsyslogd || ls /usr/sbin/rsyslogd 2> /dev/null | head -n 1)
if [ -n "$rsyslogd" ] && [ -x /usr/bin/logger ]; then
  mkdir -p "$t/rs"
  cat > "$t/rs/conf" <<EOS
global(workDirectory="$t/rs")
module(load="imuxsock" SysSock.Use="off")
input(type="imuxsock" Socket="$t/rs/log")
template(name="t" type="string" string="%syslogseverity-text% %syslogfacility-text% %programname%: %msg:2:\$%\\n")
*.* action(type="omfile" file="$t/rs/messages" template="t")
EOS
  "$rsyslogd" -n -f "$t/rs/conf" -i "$t/rs/pid" > "$t/rs/out" 2>&1 &
  rs=$!
  trap 'kill $rs 2> /dev/null; rm -rf "$t"' EXIT
  i=0; while [ ! -S "$t/rs/log" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  rm -f "$t/bin/logger"
  run_epilog gpu-node-3 4242 OOMSCAN=/nonexistent/oomscan OOMSCAN_SYSLOG_SOCKET="$t/rs/log"
  run_epilog gpu-node-1 4242 OOMSCAN_SYSLOG_SOCKET="$t/rs/log"
  i=0; while [ "$(grep -c oomscan-epilog "$t/rs/messages" 2> /dev/null || echo 0)" -lt 2 ] && [ $i -lt 50 ]; do
    sleep 0.1; i=$((i + 1)); done
  grep -q '^err user oomscan-epilog: job 4242 on gpu-node-3: /nonexistent/oomscan not found' "$t/rs/messages" && ok ||
    bad "rsyslogd did not get the missing oomscan at user.err: $(cat "$t/rs/messages" "$t/rs/out" 2>&1 | tail -n 5)"
  grep -q '^info user oomscan-epilog: job 4242 on gpu-node-1: .* finding(s) in ' "$t/rs/messages" && ok ||
    bad "rsyslogd did not get the progress at user.info: $(tail -n 5 "$t/rs/messages" 2>&1)"
  kill $rs 2> /dev/null; wait $rs 2> /dev/null
else
  bad "rsyslogd or logger is missing (.ci/test installs rsyslog)"
fi
finish epilog
