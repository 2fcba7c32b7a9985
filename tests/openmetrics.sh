#!/bin/sh
# openmetrics.sh OOMSCAN SOURCE_DIR - `--format openmetrics` against its real consumers: Debian's
# promtool checks the exposition, the counters add up to the findings of the JSON document, and a real
# prometheus-node-exporter serves what the Slurm epilog example writes into its textfile directory, read
# back over HTTP on localhost. Exit 77 (skip) with the reason when promtool or the exporter is missing.
set -u
oomscan=$1 src=$2
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$oomscan")
g="$src/fixtures/golden"
for tool in promtool prometheus-node-exporter curl jq; do
  command -v $tool > /dev/null || { echo "openmetrics: SKIP: $tool is missing (.ci/test installs it)"; exit 77; }
done

n=0
for f in "$g"/*.log "$g/funasr-oom-cascade"; do
  "$oomscan" --format openmetrics "$f" > "$t/m.prom"
  promtool check metrics < "$t/m.prom" > "$t/lint" 2>&1 && ok || bad "promtool on $(basename "$f"): $(cat "$t/lint")"
  [ "$(tail -n 1 "$t/m.prom")" = "# EOF" ] && ok || bad "$(basename "$f"): no '# EOF' at the end"
  # the findings counter adds up to the document's findings, roots to its roots
  want=$("$oomscan" --format json "$f" | jq -r '"\(.findings | length) \([.findings[] | select(.role == "root")] | length)"')
  got=$(awk '/^oomscan_findings_total/ { a += $NF; if ($0 ~ /role="root"/) r += $NF } END { print a + 0, r + 0 }' "$t/m.prom")
  [ "$got" = "$want" ] && ok || bad "$(basename "$f"): counters say $got findings/roots, JSON $want"
  n=$((n + 1))
done
[ $n -ge 5 ] && ok || bad "only $n fixtures checked"
# same logs, same bytes (series in a fixed order)
SOURCE_DATE_EPOCH=1700000000 "$oomscan" --format openmetrics "$g/funasr-oom-cascade" > "$t/a.prom"
SOURCE_DATE_EPOCH=1700000000 "$oomscan" --format openmetrics "$g/funasr-oom-cascade" > "$t/b.prom"
cmp -s "$t/a.prom" "$t/b.prom" && ok || bad "two runs over the same logs wrote different metrics"

# The epilog writes the node's counters (added up over jobs) into a textfile directory, and a real
# node exporter serves them.
mkdir -p "$t/bin" "$t/work" "$t/textfile"
printf '#!/bin/sh\nexit 1\n' > "$t/bin/scontrol"; chmod +x "$t/bin/scontrol"
cp "$g/verl-log-prob-oom.log" "$t/work/slurm-501.out"
cp "$g/verl-log-prob-oom.log" "$t/work/slurm-502.out"
cp "$g/clean-vllm-startup.log" "$t/work/slurm-503.out"
for j in 501 502 503; do
  (cd "$t/work" && env -i PATH="$t/bin:/usr/bin:/bin" SLURM_JOB_ID=$j SLURMD_NODENAME=n1 OOMSCAN="$oomscan" \
    OOMSCAN_SPOOL="$t/spool" OOMSCAN_TEXTFILE_DIR="$t/textfile" sh "$src/docs/examples/slurm-epilog.sh") 2> "$t/epilog.err"
done
prom="$t/textfile/oomscan.prom"
[ -s "$prom" ] && ok || bad "the epilog wrote no $prom: $(cat "$t/epilog.err")"
promtool check metrics < "$prom" > "$t/lint" 2>&1 && ok || bad "promtool on the epilog's file: $(cat "$t/lint")"
grep -q '^oomscan_findings_total{class="cuda_oom",phase="log_probs",framework="verl",role="root"} 2$' "$prom" && ok ||
  bad "the epilog did not add two jobs' counters: $(grep findings_total "$prom")"
[ "$(ls "$t/textfile")" = "oomscan.prom" ] && ok || bad "temporary files left in the textfile directory: $(ls "$t/textfile")"
# every job counts, the clean one too, and the last run's time is a gauge, not a sum (issue 33 item 14)
grep -q '^oomscan_jobs_scanned_total{outcome="failure"} 2$' "$prom" && grep -q '^oomscan_jobs_scanned_total{outcome="no_failure"} 1$' "$prom" &&
  ok || bad "jobs scanned by outcome: $(grep jobs_scanned "$prom")"
last=$(sed -n 's/^oomscan_last_run_timestamp_seconds //p' "$prom") now=$(date +%s)
[ -n "$last" ] && [ "$last" -le "$now" ] && [ "$last" -gt $((now - 600)) ] && ok || bad "last run time: '$last', now $now"
"$oomscan" --format openmetrics "$t/work/no-such-dir" 2> /dev/null | grep -q '^oomscan_jobs_scanned_total{outcome="not_scanned"} 1$' &&
  ok || bad "a run that read nothing is not counted as not_scanned"

# a real node exporter on a free localhost port, only its textfile collector
port=$(( 20000 + $$ % 20000 ))
prometheus-node-exporter --web.listen-address="127.0.0.1:$port" --collector.disable-defaults --collector.textfile \
  --collector.textfile.directory="$t/textfile" > "$t/ne.log" 2>&1 &
ne=$!
trap 'kill $ne 2>/dev/null; rm -rf "$t"' EXIT
got=""
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  got=$(curl -sf "http://127.0.0.1:$port/metrics" 2>/dev/null) && break
  sleep 0.5
done
printf '%s\n' "$got" | grep -q '^oomscan_findings_total{class="cuda_oom",framework="verl",phase="log_probs",role="root"} 2$' && ok ||
  bad "node exporter does not serve the counter: $(printf '%s\n' "$got" | grep oomscan | head -n 3) $(tail -n 3 "$t/ne.log")"
printf '%s\n' "$got" | grep -q 'node_textfile_scrape_error 0' && ok || bad "node exporter could not parse the textfile: $(printf '%s\n' "$got" | grep textfile)"
kill $ne 2>/dev/null
finish openmetrics
