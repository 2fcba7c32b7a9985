#!/bin/sh
# shell.sh OOMSCAN SOURCE_DIR - how the answer reaches people and programs (issue 33): a batch NDJSON run
# writes each finding once, final, and compact; nothing scanned is not "no failure"; the text report ends
# with the answer; streams behave like files; binary files are skipped by content.
set -u
oomscan=$1 src=$2
. "$(dirname "$0")/testlib.sh"
oomscan=$(abspath "$oomscan")
# jq -e on stdin or FILE, false on no input at all (jq 1.6 -e says true to nothing)
jqe() {
  n=$((n + 1)); cat ${2:+"$2"} > "$t/jqe.$n"
  [ -s "$t/jqe.$n" ] && jq -e "$1" "$t/jqe.$n" > /dev/null
}
n=0
job="$src/fixtures/realjobs/slurm_torchrun_oom"

# ---- item 9: a batch NDJSON run writes each finding once, final; compact unless asked ----------------
"$oomscan" -f ndjson "$job" > "$t/batch.ndjson"
"$oomscan" -f json "$job" > "$t/batch.json"
[ "$(jq -r .type "$t/batch.ndjson" | sort -u)" = finding ] && ok ||
  bad "batch ndjson: records other than 'finding': $(jq -r .type "$t/batch.ndjson" | sort | uniq -c | tr '\n' ' ')"
[ "$(jq -r .id "$t/batch.ndjson" | sort | uniq -d)" = "" ] && ok || bad "batch ndjson: an id written twice"
[ "$(jq -r 'select(.role=="root") | .id' "$t/batch.ndjson" | sort)" = \
  "$(jq -r '.findings[] | select(.role=="root") | .id' "$t/batch.json" | sort)" ] && ok ||
  bad "batch ndjson: jq's roots are not the document's"
[ "$(wc -l < "$t/batch.ndjson")" -eq "$(jq '.findings | length' "$t/batch.json")" ] && ok ||
  bad "batch ndjson: $(wc -l < "$t/batch.ndjson") records for $(jq '.findings | length' "$t/batch.json") findings"
jq -e -s 'length > 0 and all(.[]; .remediation.id != null and (.remediation | has("steps") | not))' "$t/batch.ndjson" > /dev/null &&
  ok || bad "batch ndjson: a record carries the whole checklist, or no checklist id"
"$oomscan" -f ndjson --full-checklist "$job" > "$t/full.ndjson"
[ "$(jq -c '[.id, .remediation.steps]' "$t/full.ndjson" | sort)" = \
  "$(jq -c '.findings[] | [.id, .remediation.steps]' "$t/batch.json" | sort)" ] && ok ||
  bad "--full-checklist: the steps differ from the JSON document's"
# merge takes the compact records and gives the same answer as the document
"$oomscan" merge -f json "$t/batch.ndjson" > "$t/merged.json"
[ "$(jq -c '.findings[] | [.id, .role, .remediation.steps]' "$t/merged.json")" = \
  "$(jq -c '.findings[] | [.id, .role, .remediation.steps]' "$t/batch.json")" ] && ok ||
  bad "merge of compact records differs from the scan"

# ---- item 11: nothing scanned is not "no failure" ---------------------------------------------------
mkdir "$t/empty"
"$oomscan" "$t/empty" > "$t/e.out" 2> "$t/e.err"; rc=$?
[ $rc -eq 2 ] && ok || bad "empty folder: exit $rc, want 2"
grep -q "empty.*no file to scan" "$t/e.err" && grep -q "nothing scanned" "$t/e.err" && ok ||
  bad "empty folder: stderr does not say what was not scanned: $(cat "$t/e.err")"
! grep -q "No failure found" "$t/e.out" && grep -q "^Nothing scanned" "$t/e.out" && ok ||
  bad "empty folder: the report says: $(cat "$t/e.out")"
"$oomscan" -f json "$t/empty" > "$t/e.json" 2> /dev/null
jqe '.inputs[0].status == "error"' "$t/e.json" && ok || bad "empty folder: not an error input in JSON"
"$oomscan" "$t/no-such-dir" > "$t/m.out" 2> "$t/m.err"; rc=$?
[ $rc -eq 2 ] && ! grep -q "No failure found" "$t/m.out" && grep -q "nothing scanned" "$t/m.err" && ok ||
  bad "missing path: exit $rc, report: $(cat "$t/m.out"), stderr: $(cat "$t/m.err")"

# ---- item 1: the inventory in one line, the answer last; -v per input in natural order --------------
mkdir "$t/ranks"
cp "$src/fixtures/golden/nccl-error-after-oom.log" "$t/ranks/rank5.log"
cp "$src/fixtures/golden/verl-log-prob-oom.log" "$t/ranks/rank46.log"
cp "$src/fixtures/golden/slurm-oom-kill.log" "$t/ranks/rank10.log"
"$oomscan" "$t/ranks" > "$t/r.out" 2> /dev/null
! grep -q ": ok, [0-9]* lines" "$t/r.out" && ok || bad "text: an inventory line per input without -v"
head -n 1 "$t/r.out" | grep -q "^3 input(s) read ([0-9]* bytes, [0-9]* lines)" && ok ||
  bad "text: the first line is not the inventory: $(head -n 1 "$t/r.out")"
inv=$(grep -n "input(s) read" "$t/r.out" | cut -d: -f1) root=$(grep -n "^Root cause" "$t/r.out" | tail -n 1 | cut -d: -f1)
[ -n "$root" ] && [ "$inv" -lt "$root" ] && ok || bad "text: the answer is not last (inventory line $inv, last root $root)"
"$oomscan" -v "$t/ranks" > "$t/v.out" 2> /dev/null
[ "$(grep -o 'rank[0-9]*\.log: ok' "$t/v.out" | tr '\n' ' ')" = "rank5.log: ok rank10.log: ok rank46.log: ok " ] && ok ||
  bad "-v: inputs not in natural order: $(grep -o 'rank[0-9]*\.log: ok' "$t/v.out" | tr '\n' ' ')"

# ---- item 12: binary files skipped by content; --binary, --exclude, --max-filesize -------------------
mkdir "$t/run" "$t/run/ckpt"
cp "$src/fixtures/golden/verl-log-prob-oom.log" "$t/run/train.log"
# a checkpoint as safetensors writes it: an 8-byte little-endian header length, then JSON, then tensors
python3 -c 'import json,struct,sys
h = json.dumps({"w": {"dtype": "F32", "shape": [4096], "data_offsets": [0, 16384]}}).encode()
sys.stdout.buffer.write(struct.pack("<Q", len(h)) + h + bytes(16384))' > "$t/run/ckpt/model.safetensors"
"$oomscan" -f json "$t/run" > "$t/b.json" 2> /dev/null
jqe '[.inputs[] | select(.path | endswith("model.safetensors"))][0] | .container == "binary" and .lines == 0' \
  "$t/b.json" && ok || bad "a checkpoint in a folder was read: $(jq -c '.inputs' "$t/b.json")"
"$oomscan" "$t/run" 2> /dev/null | head -n 1 | grep -q "1 skipped (1 binary)" && ok ||
  bad "the summary line does not count the binary file: $("$oomscan" "$t/run" 2> /dev/null | head -n 1)"
"$oomscan" -f json --binary "$t/run" | jqe '[.inputs[] | select(.container == "binary")] | length == 0' &&
  ok || bad "--binary: the checkpoint is still skipped"
"$oomscan" -f json "$t/run/ckpt/model.safetensors" 2> /dev/null | jqe '.inputs[0].container == "text"' &&
  ok || bad "a binary file named on the command line is not read"
"$oomscan" -f json --exclude '*.safetensors' "$t/run" | jqe '.skipped.excluded == 1 and (.inputs | length) == 1' &&
  ok || bad "--exclude: the checkpoint is not left out"
"$oomscan" -f json --exclude ckpt "$t/run" | jqe '.skipped.excluded == 1 and (.inputs | length) == 1' &&
  ok || bad "--exclude of a folder: it is still walked"
"$oomscan" -f json --binary --max-filesize 8K "$t/run" | jqe '.skipped.too_large == 1 and (.inputs | length) == 1' &&
  ok || bad "--max-filesize 8K: the 16 KiB checkpoint is not left out"
# a log is not binary for a lone NUL (PyTorch's DataLoader writes one) or a crashed node's zeros after it
{ cat "$src/fixtures/golden/verl-log-prob-oom.log"; head -c 5000 /dev/zero; } > "$t/run/crashed.log"
"$oomscan" -f json "$t/run" | jqe '[.inputs[] | select(.path | endswith("crashed.log"))][0].container == "text"' &&
  ok || bad "a log followed by a crashed node's zeros was skipped as binary"
"$oomscan" -f json "$src/fixtures/realjobs/dataloader_bus_error" | jqe '[.inputs[] | select(.container == "binary")] | length == 0' && ok || bad "a log with the DataLoader's NUL was skipped as binary"
"$oomscan" "$t/run/ckpt" > "$t/o.out" 2> "$t/o.err"; rc=$?
[ $rc -eq 2 ] && grep -q "nothing scanned (1 binary" "$t/o.err" && ok ||
  bad "a folder of checkpoints only: exit $rc, $(cat "$t/o.err")"

# ---- item 10: streams behave like files ---------------------------------------------------------------
log="$src/fixtures/golden/verl-log-prob-oom.log"
"$oomscan" -f ndjson "$log" | jq -c '[.id, .class]' > "$t/file.ids"
gzip -c "$log" | "$oomscan" -f ndjson > "$t/gz.ndjson" 2> "$t/gz.err"; rc=$?
[ $rc -eq 1 ] && [ "$(jq -c '[.id, .class]' "$t/gz.ndjson")" = "$(cat "$t/file.ids")" ] && ok ||
  bad "gzip through a pipe, -f ndjson: exit $rc, $(head -c 200 "$t/gz.ndjson") $(cat "$t/gz.err")"
tar czf - -C "$src/fixtures/golden" verl-log-prob-oom.log | "$oomscan" -f ndjson | jq -e -s \
  'length > 0 and all(.[]; .source.member == "verl-log-prob-oom.log")' > /dev/null && ok ||
  bad "a tar.gz through a pipe, -f ndjson: its members are not read"
# --label names stdin, and is read as a file name is (the job of slurm-N.out)
"$oomscan" -f json --label slurm-4242.out < "$log" > "$t/l.json"
jqe '.inputs[0].path == "slurm-4242.out" and .findings[0].job == "4242"' "$t/l.json" && ok ||
  bad "--label: $(jq -c '[.inputs[0].path, .findings[0].job]' "$t/l.json")"
cat "$log" | "$oomscan" -f ndjson --label rank3.log | jqe '.source.path == "rank3.log" and .context.rank == 3' &&
  ok || bad "--label on a live stream does not name it"
# an unchanged --state re-run has nothing new: exit 0 (docs/streaming.md)
"$oomscan" -f ndjson --state "$t/st" "$log" > /dev/null; rc1=$?
"$oomscan" -f ndjson --state "$t/st" "$log" > "$t/again.ndjson"; rc2=$?
[ $rc1 -eq 1 ] && [ $rc2 -eq 0 ] && [ ! -s "$t/again.ndjson" ] && ok || bad "--state re-run: exit $rc1 then $rc2"
# unreadable inputs are records too, so NDJSON alone tells what was not scanned
"$oomscan" -f ndjson "$log" "$t/no-such.log" "$t/empty" > "$t/in.ndjson" 2> /dev/null; rc=$?
[ $rc -eq 2 ] && [ "$(jq -r 'select(.type == "input") | [.path, .status] | join(" ")' "$t/in.ndjson" | sed "s|$t/||")" = \
  "no-such.log error
empty error" ] && ok || bad "input records: exit $rc, $(jq -c 'select(.type == "input")' "$t/in.ndjson")"
"$oomscan" merge -f json "$t/in.ndjson" | jqe '.findings | length == 1' && ok ||
  bad "merge does not skip input records"

# the summary counts the input records: a spool of three jobs, one pointed at an empty folder
mkdir "$t/spool" "$t/spool-empty"
"$oomscan" -f ndjson "$t/spool-empty" > "$t/spool/101.node1.ndjson" 2> /dev/null
"$oomscan" -f ndjson "$log" "$t/no-such.log" > "$t/spool/102.node1.ndjson" 2> /dev/null
"$oomscan" -f ndjson "$src/fixtures/golden/slurm-oom-kill.log" > "$t/spool/103.node1.ndjson"
"$oomscan" summary --format json "$t/spool" | jqe '.jobs == 2 and .inputs_not_read == 2 and .inputs_partial == 0 and .jobs_not_scanned == 1' &&
  ok || bad "summary of input records: $("$oomscan" summary --format json "$t/spool" | jq -c '{jobs, inputs_not_read, inputs_partial, jobs_not_scanned}')"
"$oomscan" summary "$t/spool" | grep -q "^Inputs not scanned: 2 not read, 0 read in part; 1 job with nothing found had an input not read$" &&
  ok || bad "the text summary does not count the inputs not read"
"$oomscan" -f json "$log" "$t/no-such.log" > "$t/spool-doc.json" 2> /dev/null
"$oomscan" summary --format json "$t/spool-doc.json" | jqe '.inputs_not_read == 1 and .jobs_not_scanned == 0' && ok ||
  bad "summary of a JSON document does not count its unread input"

# ---- item 16: .ci/setup installs what building and running needs; the tests' world is .ci/test's -----
setup="$src/.ci/setup" citest="$src/.ci/test"
for p in slurmd munge rsyslog prometheus python3-torch clang check jq zsh; do
  ! grep -v '^ *#' "$setup" | grep -Eq "(^|[ (])$p([ )\`]|-|$)" && ok || bad ".ci/setup installs $p, which only the tests need"
  grep -Eq "(^|[ (])$p([ )\`]|-|$)" "$citest" && ok || bad ".ci/test does not install $p"
done
grep -q -- '-DOOMSCAN_TESTS=OFF' "$setup" && ok || bad ".ci/setup builds the test suite (it needs Check)"
[ "$(grep -o 'bash \.ci/[a-z]*' "$src/.ci/run" | tr '\n' ' ')" = "bash .ci/setup bash .ci/test " ] && ok ||
  bad ".ci/run is not setup then test"
grep -q 'DOOMSCAN_TESTS=OFF' "$src/README.md" && ok || bad "the README gives no build-only line"

# ---- item 5: the quote keeps the class and the numbers; the rank that failed; the other windows ------
"$oomscan" "$job" > "$t/q.out" 2> /dev/null
grep -q "^  > .*DefaultCPUAllocator: can't allocate memory: you tried to allocate 268435456 bytes" "$t/q.out" && ok ||
  bad "the quote lost the class and the size: $(grep '^  > ' "$t/q.out")"
tr -s ' \n' '  ' < "$t/q.out" | grep -q "during the backward pass on local rank 1" && ok ||
  bad "the single-node torchrun rank ([default1]:) is not named: $(sed -n '/^Root cause/,+1p' "$t/q.out")"
tr -s ' \n' '  ' < "$t/q.out" > "$t/q.joined"
grep -q "also error_file: [^ ]*attempt_0/1/error.json:1 also log: [^ ]*attempt_0/1/stderr.log:13" "$t/q.joined" &&
  ok || bad "the other windows are not listed: $(sed -n '/^Root cause/,+8p' "$t/q.out")"

# ---- item 7: --explain suggests the closest id; its list has titles on a terminal --------------------
"$oomscan" --explain cuda_oom_log_probs > /dev/null 2> "$t/x.err"; rc=$?
[ $rc -eq 2 ] && grep -q "did you mean cuda_oom-log_probs?" "$t/x.err" && ok || bad "--explain near-miss: exit $rc, $(cat "$t/x.err")"
"$oomscan" --explain list | grep -qx "cuda_oom-backward" && ok || bad "--explain list into a pipe is not ids alone"
if command -v script > /dev/null; then
  script -qec "'$oomscan' --explain list" /dev/null | tr -d '\r' | grep -q "^cuda_oom-backward  *GPU out of memory in the backward pass" &&
    ok || bad "--explain list on a terminal lists no titles"
fi

# --explain rendered for a person (a terminal, or -f text): no Markdown, no internal source tags, prose
# within the width, a setting whole on its own line
COLUMNS=80 "$oomscan" --explain cuda_oom-backward -f text > "$t/xt.out"; rc=$?
[ $rc -eq 0 ] && grep -q "^[0-9]*\. Turn on gradient checkpointing" "$t/xt.out" && ok || bad "--explain -f text: exit $rc, no step 1"
# a step listed for one cause only says so (the leak steps: only when the diagnosis supports memory_leak)
grep -q "^   Listed only when the diagnosis supports: memory_leak" "$t/xt.out" && ok || bad "--explain -f text: the leak step does not say when it is listed"
! grep -Eq '^#|^\||^Source:|seed:|`' "$t/xt.out" && ok ||
  bad "--explain -f text: Markdown or source tags left: $(grep -E '^#|^\||^Source:|seed:|`' "$t/xt.out" | head -n 3)"
grep -qx "      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity=full" "$t/xt.out" && ok ||
  bad "--explain -f text: the long setting is not whole on its own line"
[ "$(grep -v '^      [^ ]' "$t/xt.out" | awk 'length > 80' | wc -l)" -eq 0 ] && ok ||
  bad "--explain -f text: prose past 80 columns: $(grep -v '^      [^ ]' "$t/xt.out" | awk 'length > 80' | head -n 2)"
"$oomscan" --explain cuda_oom-backward | grep -q '^## 1\.' && ok || bad "--explain into a pipe is not the Markdown page"
if command -v script > /dev/null; then
  script -qec "'$oomscan' --explain cuda_oom-backward" /dev/null | tr -d '\r' | sed 's/\x1b\[[0-9;]*m//g' > "$t/xtty.out"
  grep -q "^[0-9]*\. Turn on" "$t/xtty.out" && ! grep -q '^## ' "$t/xtty.out" && ok || bad "--explain on a terminal prints Markdown"
fi
# a finding's id: the PATHs are scanned and that finding's own checklist is explained, values filled in
fid=$("$oomscan" -f json "$log" | jq -r '.findings[0].id')
"$oomscan" --explain "$fid" "$log" > "$t/xf.out" 2> "$t/xf.err"; rc=$?
[ $rc -eq 0 ] && grep -q "^GPU out of memory during log-prob computation" "$t/xf.out" &&
  grep -q "^  at .*verl-log-prob-oom.log:13" "$t/xf.out" && grep -q "Ruled out by the diagnosis: only 6.77 GiB" "$t/xf.out" &&
  ok || bad "--explain FINDING-ID: exit $rc, $(head -n 3 "$t/xf.out") $(cat "$t/xf.err")"
"$oomscan" --explain "$fid" -f json "$log" | jqe ".id == \"$fid\" and (.remediation.steps | length) > 0" && ok ||
  bad "--explain FINDING-ID -f json is not the finding's object"
"$oomscan" --explain 0123456789abcdef "$log" > /dev/null 2> "$t/xn.err"; rc=$?
[ $rc -eq 2 ] && grep -q "0123456789abcdef: no finding with this id" "$t/xn.err" && ok || bad "--explain unknown finding: exit $rc, $(cat "$t/xn.err")"

# ---- item 13: filters people reach for: --roots, --class, --job ------------------------------------
casc="$src/fixtures/golden/funasr-oom-cascade"
"$oomscan" -f json --roots "$casc" | jqe '(.findings | length) == 1 and .findings[0].role == "root"' && ok ||
  bad "--roots: $("$oomscan" -f json --roots "$casc" | jq -c '[.findings[] | .role]')"
"$oomscan" -f ndjson --class nccl_timeout,segfault "$casc" > "$t/c.ndjson"
jq -e -s 'length == 3 and all(.[]; .class == "nccl_timeout" or .class == "segfault")' "$t/c.ndjson" > /dev/null && ok ||
  bad "--class: $(jq -c '.class' "$t/c.ndjson" | tr '\n' ' ')"
"$oomscan" --class disk_full "$casc" > /dev/null 2>&1; rc=$?
[ $rc -eq 0 ] && ok || bad "--class with nothing of that class: exit $rc, want 0"
"$oomscan" --class no_such "$casc" > /dev/null 2> "$t/cl.err"; rc=$?
[ $rc -eq 2 ] && grep -q "no class 'no_such'" "$t/cl.err" && ok || bad "--class no_such: exit $rc, $(cat "$t/cl.err")"
mkdir "$t/jobs"
cp "$log" "$t/jobs/slurm-777.out"
cp "$src/fixtures/golden/nccl-error-after-oom.log" "$t/jobs/slurm-888.out"
"$oomscan" -f json --job 777 "$t/jobs" | jqe '(.findings | length) > 0 and all(.findings[]; .job == "777")' && ok ||
  bad "--job 777: $("$oomscan" -f json --job 777 "$t/jobs" | jq -c '[.findings[] | .job]')"
"$oomscan" -f json "$t/jobs" | jqe 'any(.findings[]; .job == "888")' && ok || bad "the two-job folder has no job 888"

# ---- item 4: the values the finding carries fill the commands it is told to run -----------------------
"$oomscan" -f json "$src/fixtures/realjobs/slurm_mem_limit" |
  jqe '[.findings[].remediation.steps[]?.settings[]?.text] | any(. == "sacct -j 2 --format=JobID,State,MaxRSS,ReqMem")' &&
  ok || bad "sacct -j <jobid> printed for a job whose id is known"
"$oomscan" -f json "$src/fixtures/golden/xid79-fallen-off-bus.log" |
  jqe '[.findings[].remediation.steps[]?.settings[]?.text] | any(test("reason=Xid_79$"))' && ok || bad "the Xid is not filled in"

# a setting the log never printed gets the framework's documented default, and says it is a suggestion
"$oomscan" -f json "$log" > "$t/d.json"
jqe '[.findings[].remediation.steps[].settings[] | select(.key == "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu")][0] |
  .default == "16384" and .suggested == "12288" and (.default_source | test("^volcengine/verl:")) and (has("current") | not)' "$t/d.json" &&
  ok || bad "no suggestion from verl's default: $(jq -c '[.findings[].remediation.steps[].settings[] | select(.key | test("log_prob_max_token"))]' "$t/d.json")"
"$oomscan" "$log" | grep -q "^ *actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=12288  (a suggestion: the default is 16384; the log did not print this job's value)$" &&
  ok || bad "the text report does not print the suggested value"
# a job that printed its value gets current -> proposed, and no default (the override line is built here,
# as a launch command prints it; it is not a real log line)
{ echo "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=4096"; cat "$log"; } > "$t/printed.log"
"$oomscan" -f json "$t/printed.log" | jqe '[.findings[].remediation.steps[].settings[] | select(.key == "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu")][0] |
  .current == "4096" and .proposed == "3072" and (has("default") | not) and (has("suggested") | not)' && ok ||
  bad "a printed value does not win over the default"

# ---- item 6 (in part): a step the diagnosis rules out is marked so in Markdown too -------------------
"$oomscan" -f markdown "$log" > "$t/r.md"
n_ruled=$("$oomscan" -f json "$log" | jq '[.findings[].remediation.steps[]? | select(.premise_refuted)] | length')
[ "$n_ruled" -ge 1 ] && [ "$(grep -c '^[0-9]*\. \*\*Ruled out by the diagnosis\*\* (only 6.77 GiB' "$t/r.md")" -eq "$n_ruled" ] &&
  ok || bad "Markdown shows a ruled-out step as a normal one ($n_ruled ruled out)"

# advice by framework and version: a JAX or TensorFlow OOM gets its own allocator's settings, not PyTorch's
# allocator or an inference engine's share; PyTorch 0.4-1.3's message rules out its memory history step
steps_of() { "$oomscan" -f json "$1" | jq -c '[.findings[] | select(.role == "root") | .remediation.steps[] |
  {id, refuted: (.premise_refuted.conclusion // null), set: [.settings[]?.text]}]'; }
steps_of "$src/fixtures/corpus/cuda_oom-jax-13428.log" > "$t/jax.steps"
jq -e '.[0].id == "xla_preallocation" and (.[0].set | any(test("^export XLA_PYTHON_CLIENT_PREALLOCATE=false$"))) and
  (.[0].set | any(test("^export XLA_PYTHON_CLIENT_MEM_FRACTION="))) and
  ([.[].set[]] | all(test("PYTORCH_CUDA_ALLOC_CONF|inference engine") | not))' "$t/jax.steps" > /dev/null && ok ||
  bad "a JAX OOM's advice: $(head -c 400 "$t/jax.steps")"
steps_of "$src/fixtures/corpus/cuda_oom-text-classification-models-tf-4.log" > "$t/tf.steps"
jq -e '.[0].id == "tf_memory_growth" and (.[0].set[0] | test("set_memory_growth\\(gpu, True\\)")) and
  ([.[].set[]] | all(test("PYTORCH_CUDA_ALLOC_CONF|XLA_PYTHON") | not))' "$t/tf.steps" > /dev/null && ok ||
  bad "a TensorFlow OOM's advice: $(head -c 400 "$t/tf.steps")"
steps_of "$src/fixtures/corpus/cuda_oom-pytorch-18853.log" > "$t/v0.steps"
jq -e '(map(select(.id == "memory_snapshot"))[0].refuted == "torch_v0_no_history") and
  ([.[] | select(.refuted == null) | .set[]] | all(test("_record_memory_history|expandable_segments") | not))' "$t/v0.steps" > /dev/null && ok ||
  bad "a PyTorch 0.4-1.3 OOM is told to record memory history: $(head -c 600 "$t/v0.steps")"

# a finding read from flight-recorder dumps is not told to turn the recorder on, nor to find the rank
# that failed first: both steps are ruled out, with the rank the dumps name
"$oomscan" -f json "$src/fixtures/dumps/flight_recorder" > "$t/fr.json" 2> /dev/null
jqe '[.findings[] | select(.first.kind == "flight_recorder")][0] | ([.remediation.steps[] | select(.premise_refuted.conclusion == "flight_recorder_read") | .id] | sort) == ["first_failing_rank", "flight_recorder"] and
  (.diagnosis.conclusions | any(.what | test("rank 6")))' "$t/fr.json" && ok ||
  bad "flight-recorder finding: $(jq -c '[.findings[0].remediation.steps[] | [.id, .premise_refuted.conclusion]]' "$t/fr.json")"
"$oomscan" -f markdown "$src/fixtures/dumps/flight_recorder" 2> /dev/null | grep -q '^[0-9]*\. \*\*Ruled out by the diagnosis\*\* (this finding was read from the NCCL flight recorder' &&
  ok || bad "Markdown does not mark the flight recorder step as ruled out"

# a prlimit refusal in backward (the training process, no DataLoader worker) gets the process's limits
# first, not the loader's workers; a DataLoader worker's own MemoryError keeps the loader step first
"$oomscan" -f json "$src/fixtures/realjobs/backward_host_oom" 2> /dev/null |
  jqe '[.findings[] | select(.role == "root")][0] | .remediation.steps[0].id == "address_space_limits" and
    .remediation.steps[0].first_because.conclusion == "main_process_refused"' && ok ||
  bad "backward host OOM: first step $("$oomscan" -f json "$src/fixtures/realjobs/backward_host_oom" 2> /dev/null | jq -c '[.findings[] | select(.role == "root")][0].remediation.steps[0].id')"
"$oomscan" -f json "$src/fixtures/realjobs/dataloader_memory_error" 2> /dev/null |
  jqe '[.findings[] | select(.role == "root")][0].remediation.steps[0].id == "fewer_loader_workers"' && ok ||
  bad "a DataLoader worker's MemoryError lost the loader step first"

# --since / --until: log time of the first occurrence (the kernel's 2019-03-14T01:57:54 kill)
kern="$src/fixtures/golden/kernel-oom-legacy-pair.log"
"$oomscan" -f json --since 2019-03-14T00:00:00 --until "2019-03-14 02:00:00" "$kern" | jqe '(.findings | length) == 1' &&
  ok || bad "--since/--until around the stamp leave the finding out"
"$oomscan" -f json --since 2019-03-15T00:00:00 "$kern" | jqe '(.findings | length) == 0' && ok || bad "--since after the stamp keeps it"
"$oomscan" --since yesterday "$kern" > /dev/null 2>&1; [ $? -eq 2 ] && ok || bad "--since yesterday: not a usage error"

finish shell
