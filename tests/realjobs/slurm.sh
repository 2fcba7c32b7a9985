# slurm.sh - sourced by tests/realjobs/run.sh after scenarios.sh: a private single-node Slurm 22.05 (munged,
# slurmctld, slurmd on this host, every file under one folder, its own ports and munge socket) and the
# jobs run on it. docs/examples/slurm-epilog.sh, copied unchanged, is the cluster's real Epilog.
#
# Traps met on the way (Slurm 22.05.8, Debian 12):
# - slurmd runs the Epilog with a bare environment: no PATH, no SLURM_CONF, and no SLURM_JOB_STDOUT (that
#   one only reaches the Prolog/Epilog from 23.02 on). The epilog's settings come from /etc/default/oomscan,
#   the one place it reads them from. Writing that file for everyone would change what other tests and
#   epilogs on the machine do, so slurmd runs in its own mount namespace (unshare -m) where /etc/default is
#   a copy holding our oomscan file; nothing outside changes.
# - slurmd keeps an Epilog's stderr to itself unless the epilog fails, so we wait for the epilog's
#   completion line in slurmd's log (SlurmdDebug=debug) rather than for its messages.
# - select/cons_tres enforces --mem only with CR_*_Memory; OverMemoryKill needs jobacct_gather/linux
#   polling often (JobAcctGatherFrequency=1) to catch a job of seconds.
# - The time limit is in minutes and slurmctld checks it every 30 s: the --time job takes 60-100 s.
# - Daemons that fork away outlive a harness that is SIGKILLed (ctest's timeout, a kill -9): no trap runs
#   then. So munged, slurmctld and slurmd run in the foreground in a PID namespace of their own, whose
#   keeper (unshare) gets SIGKILL when the harness dies (setpriv --pdeathsig) and then kills the
#   namespace's init (--kill-child); the kernel ends every process of a namespace whose init died: the
#   daemons, job steps and their tasks. The death that counts is that of the process that started the
#   keeper, so slurm_up runs in the harness's own shell, never in a $(...) subshell.

SLURM_BIN=${REALJOBS_SLURM_BIN:-/usr/sbin}

slurm_can() {
  for b in "$SLURM_BIN/slurmctld" "$SLURM_BIN/slurmd" "$SLURM_BIN/munged" /usr/bin/sbatch /usr/bin/scontrol; do
    [ -x "$b" ] || { echo "cannot: $b is missing (slurmctld, slurmd, slurm-client, munge)"; return 77; }
  done
  unshare -m true 2>/dev/null || { echo "cannot: unshare -m fails here (slurmd needs its own /etc/default)"; return 77; }
  unshare --pid --fork --kill-child --mount-proc true 2>/dev/null ||
    { echo "cannot: unshare --pid --mount-proc fails here (the daemons run in their own PID namespace)"; return 77; }
  command -v setpriv > /dev/null || { echo "cannot: setpriv is missing (util-linux)"; return 77; }
  [ "$(id -u)" = 0 ] || { echo "cannot: slurmd must run as root to run jobs as root"; return 77; }
}

# slurm_up DIR OOMSCAN SRC: start the three daemons in their own PID and mount namespaces (see above);
# SLURM_CONF is exported for the clients, SLURM_NS_PID is the namespace's keeper (unshare). Call it in the
# harness's own shell, not in $(...) (see above); it prints why when it cannot.
slurm_up() {
  d=$1 oomscan=$2 src=$3
  mkdir -p "$d/state" "$d/spool" "$d/munge" "$d/epilog" "$d/oomscan-spool" "$d/jobs"
  chmod 700 "$d/munge"
  dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 2>/dev/null && chmod 400 "$d/munge/munge.key"
  cp "$src/docs/examples/slurm-epilog.sh" "$d/epilog/oomscan.sh" && chmod 755 "$d/epilog/oomscan.sh"
  port=$(free_port); port2=$(free_port)
  host=$(hostname -s)
  cat > "$d/slurm.conf" <<EOF
ClusterName=realjobs
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$port2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.socket
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
SlurmctldDebug=info
SlurmdDebug=debug
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=1
JobAcctGatherParams=OverMemoryKill
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=600
Epilog=$d/epilog/oomscan.sh
NodeName=$host NodeAddr=127.0.0.1 CPUs=2 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  mkdir -p "$d/etc-default" && cp -a /etc/default/. "$d/etc-default/" 2>/dev/null
  cat > "$d/etc-default/oomscan" <<EOF
# written by oomscan tests/realjobs/slurm.sh, seen by this test's slurmd only
OOMSCAN=$oomscan
OOMSCAN_SPOOL=$d/oomscan-spool
OOMSCAN_EXTRA_PATHS=$d/jobs/torchrun-%j
SCONTROL=/usr/bin/scontrol
SLURM_CONF=$d/slurm.conf
export SLURM_CONF
EOF
  export SLURM_CONF="$d/slurm.conf"
  # The namespace's init runs the three daemons in the foreground, as its children, with our
  # /etc/default; munged must listen before the others start.
  setpriv --pdeathsig KILL unshare --pid --kill-child --mount-proc sh -c '
    d=$1 bin=$2 host=$3
    mount --bind "$d/etc-default" /etc/default || exit 1
    "$bin/munged" --foreground --force --key-file="$d/munge/munge.key" --socket="$d/munge/munge.socket" \
      --pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" --seed-file="$d/munge/seed" &
    i=0
    until [ -S "$d/munge/munge.socket" ]; do i=$((i + 1)); [ $i -gt 100 ] && exit 1; sleep 0.1; done
    "$bin/slurmctld" -D -i -f "$d/slurm.conf" > "$d/slurmctld.out" 2>&1 &
    "$bin/slurmd" -D -f "$d/slurm.conf" -N "$host" > "$d/slurmd.out" 2>&1 &
    wait' sh "$d" "$SLURM_BIN" "$host" > "$d/namespace.out" 2>&1 &
  SLURM_NS_PID=$!
  i=0
  until /usr/bin/sinfo -h -o %T 2>/dev/null | grep -q idle; do
    i=$((i + 1))
    if [ $i -gt 30 ] || ! kill -0 "$SLURM_NS_PID" 2>/dev/null; then
      echo "cannot: the node never became idle"
      tail -n 3 "$d/namespace.out" "$d/slurmd.log" "$d/slurmctld.log" 2>/dev/null
      slurm_down "$d"
      return 77
    fi
    sleep 1
  done
}

# slurm_down DIR: cancel our jobs, then end the namespace (and so every daemon, step and task in it)
slurm_down() {
  d=$1
  if [ -n "${SLURM_NS_PID:-}" ] && kill -0 "$SLURM_NS_PID" 2>/dev/null; then
    # cancel what still runs (our controller only: SLURM_CONF names it), give the epilogs time to end
    SLURM_CONF=$d/slurm.conf /usr/bin/scancel --quiet --user="$(id -un)" 2>/dev/null
    i=0
    while [ $i -lt 15 ] && SLURM_CONF=$d/slurm.conf /usr/bin/squeue -h 2>/dev/null | grep -q .; do
      sleep 1; i=$((i + 1))
    done
    # the keeper's death kills the namespace's init, whose death kills everything in the namespace
    # (SIGKILL: unshare ignores SIGTERM and SIGINT while it waits for its child)
    kill -KILL "$SLURM_NS_PID" 2>/dev/null
    wait "$SLURM_NS_PID" 2>/dev/null
  fi
  SLURM_NS_PID=""
  return 0
}

# slurm_submit DIR NAME SBATCH-ARGS...: submit a batch script whose body is $REALJOBS_BODY; prints the job id
slurm_submit() {
  d=$1 name=$2; shift 2
  printf '#!/bin/sh\n%s\n' "$REALJOBS_BODY" > "$d/jobs/$name.sh"
  /usr/bin/sbatch --parsable -J "$name" -D "$d/jobs" -o "$d/jobs/slurm-%j.out" "$@" "$d/jobs/$name.sh"
}

slurm_wait() { # DIR JOBID MAXSECONDS: until the job has left the queue and its epilog has run
  d=$1 id=$2 max=$3 i=0
  while /usr/bin/squeue -h -j "$id" 2>/dev/null | grep -q .; do
    i=$((i + 1)); [ $i -gt "$max" ] && return 1; sleep 1
  done
  i=0
  until grep -q "completed epilog for jobid $id\$" "$d/slurmd.log" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 30 ] && return 1; sleep 1
  done
}

# The jobs. Each body is a real job script; the torchrun one keeps its rank logs in torchrun-<jobid>/, which
# the epilog scans too (OOMSCAN_EXTRA_PATHS, %j = job id).
BODY_TIME_LIMIT='srun /usr/bin/python3 -u -c "
import time
for step in range(100000):
    print(f\"step {step}\", flush=True)
    time.sleep(1)"'
BODY_MEM='srun /usr/bin/python3 -u -c "
import time, torch
held = []
for step in range(40):  # at most 1.25 GiB, should OverMemoryKill fail to act
    held.append(torch.ones(8 << 20))  # 32 MiB of touched pages a step
    print(f\"step {step}: holding {len(held) * 32} MiB\", flush=True)
    time.sleep(0.2)
time.sleep(30)"'
BODY_TORCHRUN='srun /usr/bin/torchrun --nnodes 1 --nproc_per_node 2 --master_addr 127.0.0.1 --master_port $PORT \
  --redirects 1 --tee 2 --log_dir $PWD/torchrun-$SLURM_JOB_ID $TRAIN backward_host_oom'

SLURM_SCENARIOS="slurm_time_limit slurm_mem_limit slurm_torchrun_oom"

# slurm_submit_all DIR: submit the three jobs at once (job ids 1, 2, 3 on a fresh controller)
slurm_submit_all() {
  d=$1
  REALJOBS_BODY=$BODY_TIME_LIMIT; id_time_limit=$(slurm_submit "$d" time_limit -t 1 -c 1 --mem=200M) || return 1
  REALJOBS_BODY=$BODY_MEM; id_mem_limit=$(slurm_submit "$d" mem_limit -c 1 --mem=400M) || return 1
  REALJOBS_BODY=$(printf '%s' "$BODY_TORCHRUN" | sed "s|[$]PORT|$(free_port)|; s|[$]TRAIN|$here/train.py|")
  id_torchrun_oom=$(slurm_submit "$d" torchrun_oom -c 1 --mem=2500M) || return 1
}

# slurm_collect DIR OUT: wait for each job and its epilog, copy what it left to OUT/slurm_<name>/
slurm_collect() {
  d=$1 out=$2
  for j in "mem_limit ${id_mem_limit:?} 120" "torchrun_oom ${id_torchrun_oom:?} 180" "time_limit ${id_time_limit:?} 200"; do
    set -- $j
    slurm_wait "$d" "$2" "$3" || { echo "job $1 ($2) did not finish in $3 s"; return 1; }
    # job/: what the job left (what the epilog scanned); beside it the script, the epilog's NDJSON and
    # the daemons' lines
    rm -rf "${out:?}/slurm_$1"; mkdir -p "$out/slurm_$1/job"
    cp "$d/jobs/slurm-$2.out" "$out/slurm_$1/job/"
    [ -d "$d/jobs/torchrun-$2" ] && cp -r "$d/jobs/torchrun-$2" "$out/slurm_$1/job/"
    cp "$d/jobs/$1.sh" "$out/slurm_$1/"
    cp "$d/oomscan-spool/$2".*.ndjson "$out/slurm_$1/epilog.ndjson" 2>/dev/null
    # the daemons' lines about this job, without debug chatter
    grep -E "(JobId=|jobid |job_id[ =]|StepId=|\[)$2([^0-9]|\$)" "$d/slurmctld.log" | grep -v '\] debug' > "$out/slurm_$1/slurmctld.log"
    grep -E "(JobId=|jobid |job_id[ =]|StepId=|\[)$2([^0-9]|\$)" "$d/slurmd.log" | grep -v '\] debug' > "$out/slurm_$1/slurmd.log"
  done
}
