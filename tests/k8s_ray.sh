#!/bin/sh
# k8s_ray.sh OOMSCAN SOURCE_DIR - Kubernetes and Ray layouts (issue 17 item 5): the real golden logs,
# tagged as `kubectl logs --prefix` tags each line ([pod/POD/CONTAINER] ), give the same findings (ids,
# classes, roles, phases) as untagged, with the pod as host, the container in context and the rank
# from a PyTorchJob pod's name; a real log saved under a Ray session's names gives its Ray job and pid.
set -u
oomscan=$1 src=$2
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$oomscan")
g="$src/fixtures/golden"
# jq -e that fails on an empty file (jq 1.6 exits 0 when there is no input at all)
jq_e() { eval "last=\${$#}"; [ -s "$last" ] && jq -e "$@" > /dev/null; }
core='[.findings[] | [.id, .class, .role, .phase, .caused_by]]'

# kubectl --prefix over every single-file golden case
for f in "$g"/*.log; do
  n=$(basename "$f" .log)
  "$oomscan" -f json "$f" > "$t/$n.plain.json" 2> /dev/null
  sed 's|^|[pod/train-'"$n"'-worker-2/pytorch] |' "$f" > "$t/$n.log"
  "$oomscan" -f json "$t/$n.log" > "$t/$n.k8s.json" 2> /dev/null
  [ "$(jq -c "$core" "$t/$n.plain.json")" = "$(jq -c "$core" "$t/$n.k8s.json")" ] && ok ||
    bad "$n: tagged lines give other findings: $(jq -c "$core" "$t/$n.k8s.json")"
  jq_e --arg pod "train-$n-worker-2" '.findings | all(.context.host == $pod and .context.container == "pytorch")' \
    "$t/$n.k8s.json" > /dev/null && ok || bad "$n: pod or container not in context: $(jq -c '[.findings[].context]' "$t/$n.k8s.json")"
done
# worker-2 of a PyTorchJob is RANK 3 (the master is 0), unless torchrun's [rankN]: names the process
jq_e '.findings[0].context.rank == 3' "$t/verl-log-prob-oom.k8s.json" > /dev/null && ok ||
  bad "worker-2: rank $(jq -c '.findings[0].context.rank' "$t/verl-log-prob-oom.k8s.json"), want 3"
sed 's|^|[pod/job-master-0/pytorch] |' "$g/verl-log-prob-oom.log" | "$oomscan" -f json > "$t/m.json" 2> /dev/null
jq_e '.findings[0].context.rank == 0 and .findings[0].context.host == "job-master-0"' "$t/m.json" > /dev/null && ok ||
  bad "master-0: $(jq -c '.findings[0].context' "$t/m.json")"
sed 's|^|[pod/job-worker-0/pytorch] [rank5]: |' "$g/verl-log-prob-oom.log" | "$oomscan" -f json > "$t/r.json" 2> /dev/null
jq_e '.findings[0].context.rank == 5' "$t/r.json" > /dev/null && ok || bad "[rank5]: after the pod: $(jq -c '.findings[0].context' "$t/r.json")"
# the text report's first sentence names the pod and container (wrapped lines joined)
"$oomscan" "$t/verl-log-prob-oom.log" 2> /dev/null | sed -n '/^Root cause/,+2p' | tr -s ' \n' '  ' > "$t/first.txt"
grep -q "on rank 3 (pod train-verl-log-prob-oom-worker-2, container pytorch)" "$t/first.txt" && ok ||
  bad "text report: $(cat "$t/first.txt")"
# a Deployment's pod (replica-set hash) names no rank
sed 's|^|[pod/vllm-simulator-646cb8db6c-tgwm6/vllm-simulator] |' "$g/verl-log-prob-oom.log" | "$oomscan" -f json > "$t/d.json" 2> /dev/null
jq_e '.findings[0].context | has("rank") | not' "$t/d.json" > /dev/null && ok || bad "a Deployment pod gave a rank: $(jq -c '.findings[0].context' "$t/d.json")"

# Ray session names: the Ray job and pid from worker-<worker id>-<job id>-<pid>.err, the submission
# from job-driver-<id>.log; the story still joins them (no split into jobs)
logs="$t/session_2024-04-07_10-59-32_032714_77/logs"
mkdir -p "$logs"
cp "$g/verl-log-prob-oom.log" "$logs/worker-79a553ea91fe46f95e8384ddf8a8f0a01e3418a975ecd0af983c7bb2-01000000-23444.err"
cp "$g/ray-actor-died-fields.log" "$logs/job-driver-raysubmit_qZ8kXu2jV4yLCpWE.log"
"$oomscan" -f json "$logs" > "$t/ray.json" 2> /dev/null
jq_e '.findings | any(.class == "cuda_oom" and .context.ray_job == "01000000" and .context.pid == 23444)' "$t/ray.json" > /dev/null &&
  ok || bad "Ray worker log: $(jq -c '[.findings[] | [.class, .context]]' "$t/ray.json")"
"$oomscan" "$logs" 2> /dev/null | sed -n '/^Root cause/,+2p' | tr -s ' \n' '  ' | grep -q "in Ray job 01000000" && ok ||
  bad "text report does not name the Ray job"
jq_e '.findings | any(.context.ray_job == "raysubmit_qZ8kXu2jV4yLCpWE")' "$t/ray.json" > /dev/null && ok ||
  bad "Ray driver log: no submission id in context"
[ "$(jq '[.findings[] | select(.role == "root")] | length' "$t/ray.json")" -eq 1 ] && ok ||
  bad "Ray names split the story: roots $(jq -c '[.findings[] | select(.role == "root") | .class]' "$t/ray.json")"

finish k8s_ray
