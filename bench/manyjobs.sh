#!/bin/sh
# manyjobs.sh OOMSCAN [N] [LOG]: N (default 20000) copies of one small real failed-job log (default
# fixtures/golden/sigkill-then-childfailed.log) as slurm-1000.out, slurm-1001.out, ... scanned in one
# run; prints the time and peak RSS (GNU time's %e and %M) and checks that every job got its own story:
# one root per job, every finding of job N naming job N. Fleet scale, issue 18 item 4 (docs/performance.md).
set -eu
oomscan=$1 n=${2:-20000}
here=$(cd "$(dirname "$0")/.." && pwd)
log=${3:-$here/fixtures/golden/sigkill-then-childfailed.log}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
i=0
while [ "$i" -lt "$n" ]; do
    cp "$log" "$dir/slurm-$((1000 + i)).out"
    i=$((i + 1))
done
cd "$dir"
/usr/bin/time -f "%e s, %M KiB peak RSS" -o time.txt "$oomscan" --format json . > out.json || [ $? -eq 1 ]
python3 - "$n" <<'PY'
import json, sys
n = int(sys.argv[1])
d = json.load(open("out.json"))
roots = {}
for f in d["findings"]:
    if f["role"] == "root":
        roots[f["job"]] = roots.get(f["job"], 0) + 1
ids = [f["id"] for f in d["findings"]]
ok = len(roots) == n and all(v == 1 for v in roots.values()) and len(ids) == len(set(ids))
print("%d jobs, %d findings, %d jobs with a root, one root each: %s, ids unique: %s"
      % (n, len(ids), len(roots), all(v == 1 for v in roots.values()), len(ids) == len(set(ids))))
sys.exit(0 if ok else 1)
PY
echo "$n jobs: $(cat time.txt)"
