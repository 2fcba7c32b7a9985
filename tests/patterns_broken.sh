#!/bin/sh
# patterns_broken.sh OOMSCAN SRCDIR - a broken copy of patterns/ fails --check-patterns (the check the
# build runs on the shipped database), naming the file and the entry, not an index into the database.
oomscan=$1 src=$2
. "$src/tests/testlib.sh"

# expect CASE FILE ENTRY: the copy in $t/p fails with exit 2 and a message naming FILE and ENTRY.
expect() {
    "$oomscan" --check-patterns "$t/p" >"$t/out" 2>"$t/err"
    rc=$?
    if [ "$rc" -ne 2 ]; then bad "$1: exit $rc, not 2"; return; fi
    if grep -F "$2" "$t/err" | grep -qF "$3"; then ok; else bad "$1: no message naming $2 and $3:"; cat "$t/err"; fi
}
fresh() { rm -rf "$t/p"; cp -r "$src/patterns" "$t/p"; }

# the pristine copy passes
fresh
if "$oomscan" --check-patterns "$t/p" >"$t/out" 2>"$t/err"; then ok; else bad "pristine copy fails:"; cat "$t/err"; fi

# a regex that does not compile: the first pattern of failures/nccl.json
fresh
id=$(grep -m1 '"id"' "$t/p/failures/nccl.json" | sed 's/.*"id": *"\([^"]*\)".*/\1/')
sed -i '0,/"regex": "/s//"regex": "(unclosed /' "$t/p/failures/nccl.json"
expect "broken regex" "failures/nccl.json" "$id: regex error"

# an unknown phase on a frame rule: named by its kind and value
fresh
sed -i '0,/"phase": "backward"/s//"phase": "backwards"/' "$t/p/context/phases.json"
expect "unknown phase" "context/phases.json" 'frames code ".backward(": unknown or missing phase "backwards"'

# an unknown class on a failure pattern
fresh
id=$(grep -m1 '"id"' "$t/p/failures/pytorch.json" | sed 's/.*"id": *"\([^"]*\)".*/\1/')
sed -i '0,/"class": "/s//"class": "no_such_/' "$t/p/failures/pytorch.json"
expect "unknown class" "failures/pytorch.json" "$id: unknown class"

# a context rule without samples: the first marker's samples renamed away
fresh
sed -i '0,/"samples": \[/s//"old_samples": [/' "$t/p/context/phases.json"
expect "missing sample" "context/phases.json" 'no "samples"'

# a match sample another pattern wins: a plain CUDA OOM line given to torch_outofmemoryerror
fresh
sed -i '0,/"line": "torch.cuda.OutOfMemoryError: Allocation/s//"line": "RuntimeError: CUDA out of memory. OutOfMemoryError Allocation/' "$t/p/failures/pytorch.json"
expect "sample won by another" "failures/pytorch.json" "cuda_oom.torch_outofmemoryerror: scanned alone, its match sample is won by cuda_oom.torch_cuda_out_of_memory"

finish patterns_broken
