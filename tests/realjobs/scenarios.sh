# scenarios.sh - sourced by tests/realjobs/run.sh: one function per real failing job, each run in $1 (a
# fresh folder), leaving there what a real job leaves (torchrun.out, logs/<run>/attempt_0/<rank>/...), the
# files oomscan is to read; $2 (another folder) gets what is kept beside them but not scanned.
# A scenario the machine cannot run prints "cannot: <reason>" and returns 77.
#
# Debian 12's torchrun 1.13 on Python 3.11 crashes at start unless both --redirects and --tee are given,
# and only with the values 1 or 2: Std.from_str looks its value up by iterating the IntFlag, and Python
# 3.11 no longer yields the composite 3 (nor 0), so it returns None and to_map() fails on None.get.
# --redirects 1 --tee 2 gives each rank's stdout.log and stderr.log, and the ranks' stderr on the console
# (prefixed [defaultN]:), as a user's job output would show it.

PY=${REALJOBS_PYTHON:-/usr/bin/python3}
TORCHRUN=${REALJOBS_TORCHRUN:-/usr/bin/torchrun}
here=${REALJOBS_HERE:-$(cd "$(dirname "$0")" && pwd)}

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# torchrun_job OUT FAILURE [prefix command...]: 2 ranks on this host, gloo, --log_dir OUT/logs
torchrun_job() {
  out=$1 failure=$2; shift 2
  # REALJOBS_LAUNCHER_ERROR_FILE=1: torchrun gets an error file of its own, as under a scheduler that sets
  # TORCHELASTIC_ERROR_FILE: it copies the root-cause child's file there (with errorCode), or, when no
  # child wrote one, records its own ChildFailedError
  if [ "${REALJOBS_LAUNCHER_ERROR_FILE:-0}" = 1 ]; then
    TORCHELASTIC_ERROR_FILE=$out/torchrun-error.json; export TORCHELASTIC_ERROR_FILE
  fi
  # shellcheck disable=SC2086 # REALJOBS_TORCHRUN_ARGS: a scenario's own options (--max_restarts 1), split
  REALJOBS_OUT=$out timeout 120 "$@" "$TORCHRUN" ${REALJOBS_TORCHRUN_ARGS:-} --nnodes 1 --nproc_per_node 2 \
    --master_addr 127.0.0.1 --master_port "$(free_port)" --redirects 1 --tee 2 --log_dir "$out/logs" \
    "$here/train.py" "$failure" > "$out/torchrun.out" 2>&1
  echo "torchrun exit $?" > "$out/exit-status"
}

can_mount_ns() { unshare -m true 2>/dev/null || { echo "cannot: unshare -m fails here (needs CAP_SYS_ADMIN)"; return 77; }; }

scenario_backward_host_oom() {      # prlimit --as on rank 1 just before loss.backward()
  command -v prlimit > /dev/null || { echo "cannot: prlimit is missing (util-linux)"; return 77; }
  torchrun_job "$1" backward_host_oom
}

scenario_launcher_error_file() {     # backward_host_oom with torchrun's own TORCHELASTIC_ERROR_FILE set
  export REALJOBS_LAUNCHER_ERROR_FILE=1
  scenario_backward_host_oom "$@"
}

scenario_dataloader_memory_error() { # the DataLoader worker of rank 1 runs under prlimit --as
  torchrun_job "$1" dataloader_memory_error
}

scenario_dataloader_bus_error() {    # a private 1 MiB /dev/shm: the workers' batches do not fit
  can_mount_ns || return 77
  torchrun_job "$1" dataloader_bus_error \
    unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm && exec "$@"' sh
}

scenario_dataloader_semlock_shm_full() { # a private 1 MiB /dev/shm, filled before rank 1 starts its workers
  can_mount_ns || return 77
  torchrun_job "$1" dataloader_semlock_shm_full \
    unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm && exec "$@"' sh
}

scenario_segfault_optimizer() {      # SIGSEGV inside optimizer.step() of rank 1, faulthandler on
  torchrun_job "$1" segfault_optimizer
}

scenario_gloo_timeout() {            # rank 1 stalls before the all-reduce; rank 0's gloo wait times out
  export REALJOBS_GLOO_TIMEOUT=5; torchrun_job "$1" gloo_timeout
}

scenario_checkpoint_disk_full() {    # rank 0 saves a 4 MiB checkpoint into a 1 MiB tmpfs
  can_mount_ns || return 77
  mkdir -p "$1/ckpt"
  export REALJOBS_CKPT_DIR="$1/ckpt"; torchrun_job "$1" checkpoint_disk_full \
    unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs "$REALJOBS_CKPT_DIR" && exec "$@"' sh
}

scenario_checkpoint_disk_full_legacy() { # the same with torch.save's legacy writer (_use_new_zipfile_serialization=False)
  can_mount_ns || return 77
  mkdir -p "$1/ckpt"
  export REALJOBS_CKPT_DIR="$1/ckpt"; torchrun_job "$1" checkpoint_disk_full_legacy \
    unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs "$REALJOBS_CKPT_DIR" && exec "$@"' sh
}

scenario_checkpoint_readonly() {     # rank 0 saves into a folder mounted read-only (root ignores modes)
  can_mount_ns || return 77
  mkdir -p "$1/ckpt"
  export REALJOBS_CKPT_DIR="$1/ckpt"; torchrun_job "$1" checkpoint_readonly \
    unshare -m sh -c 'mount -t tmpfs -o ro,size=1m tmpfs "$REALJOBS_CKPT_DIR" && exec "$@"' sh
}

scenario_native_abort_forward() {    # a custom native op's assert() fails in rank 1's forward: SIGABRT
  command -v cc > /dev/null || { echo "cannot: no C compiler (cc) to build the custom op"; return 77; }
  cc -shared -fPIC -o "$2/native_op.so" "$here/native_op.c" || { echo "cannot: the custom op does not build"; return 77; }
  export REALJOBS_NATIVE_OP="$2/native_op.so"; torchrun_job "$1" native_abort_forward
}

scenario_attempts_appended() {       # torchrun --max_restarts 1: attempt 0 runs out of memory, attempt 1 segfaults
  command -v prlimit > /dev/null || { echo "cannot: prlimit is missing (util-linux)"; return 77; }
  export REALJOBS_TORCHRUN_ARGS="--max_restarts 1"; torchrun_job "$1" attempts
}

# A memory cgroup of 256 MiB, v1 or v2, that rank 1 moves itself into before it fills it.
make_memcg() {
  name=realjobs-$$-$(date +%s)
  if [ -w /sys/fs/cgroup/memory ] && [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
    cg=/sys/fs/cgroup/memory/$name
    mkdir "$cg" 2>/dev/null && echo 256M > "$cg/memory.limit_in_bytes" && echo "$cg" && return 0
  elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null && [ -w /sys/fs/cgroup ]; then
    cg=/sys/fs/cgroup/$name
    mkdir "$cg" 2>/dev/null && echo 256M > "$cg/memory.max" && echo 0 > "$cg/memory.swap.max" 2>/dev/null
    [ -f "$cg/memory.max" ] && echo "$cg" && return 0
  fi
  [ -n "${cg:-}" ] && rmdir "$cg" 2>/dev/null
  return 1
}

# kernel_lines_after STAMP CGROUP: the kernel's lines (dmesg, uptime stamps) stamped after STAMP, without
# the oom-killer blocks of other cgroups. Lines are taken by stamp, not by count: once the ring buffer is
# full, a run adds as many lines as it drops, so counting lines found none of this run's (issue 13 item 1:
# the live kill came out with no kernel window at all). Other jobs on the same host (a concurrent run of
# this harness) may be OOM-killed meanwhile: their blocks are not this job's.
kernel_lines_after() {
  dmesg | awk -v after="$1" -v cg="/$2" '
    function stamp(l) { if (match(l, /^\[ *[0-9]+\.[0-9]+\]/)) return substr(l, RSTART + 1, RLENGTH - 2) + 0; return -1 }
    { t = stamp($0) }
    !on { if (t > after) on = 1; else next }
    /invoked oom-killer:/ { blk = $0 "\n"; inblk = 1; next }
    inblk { blk = blk $0 "\n" }
    inblk && /Killed process/ { if (index(blk, cg)) printf "%s", blk; inblk = 0; blk = ""; next }
    inblk { next }
    { print }
    END { if (inblk && index(blk, cg)) printf "%s", blk }'
}

# kernel_stamp: the stamp of the kernel's last line now (-1: none, or dmesg is not readable here)
kernel_stamp() {
  st=$(dmesg 2>/dev/null | tail -n 1 | sed -n 's/^\[ *\([0-9]*\.[0-9]*\)\].*/\1/p')
  echo "${st:--1}"
}

# keep_kernel_lines OUT KEEP CGROUP STAMP: the kernel's lines of this run (those of memory cgroup CGROUP
# after STAMP) into OUT/dmesg.log, and the same lines with dmesg -T stamps into KEEP/dmesg-T.log: kept for
# the kernel-log reader, not scanned with the job (it would be the same kernel block twice): the same
# number of last lines, -T and uptime lines being one to one (other cgroups' blocks included)
keep_kernel_lines() {
  if dmesg > /dev/null 2>&1; then
    kernel_lines_after "$4" "${3##*/}" > "$1/dmesg.log"
    n=$(dmesg | awk -v a="$4" 'on || substr($0, 2) + 0 > a { on = 1; c++ } END { print c + 0 }')
    [ "$n" -gt 0 ] && dmesg -T | tail -n "$n" > "$2/dmesg-T.log"
    [ -s "$1/dmesg.log" ] || echo "no kernel line of this run's cgroup (${3##*/}) in dmesg" > "$1/dmesg.unavailable"
  else
    echo "dmesg is not readable here: no kernel lines" > "$1/dmesg.unavailable"
  fi
}

no_memcg="cannot: no writable cgroup memory controller (v1 /sys/fs/cgroup/memory or v2 +memory)"

scenario_cgroup_oom_kill() {
  cg=$(make_memcg) || { echo "$no_memcg"; return 77; }
  before=$(kernel_stamp)
  export REALJOBS_CGROUP="$cg"; torchrun_job "$1" cgroup_oom_kill
  sleep 1
  keep_kernel_lines "$1" "$2" "$cg" "$before"
  rmdir "$cg" 2>/dev/null || true
}

# The same kill of rank 0: rank 1, waiting in the gradient all-reduce, echoes it through gloo with a
# traceback through backward; the victim itself printed nothing about a phase (issue 31: the kill took
# its phase from rank 1's echo).
scenario_cgroup_oom_kill_rank0() {
  export REALJOBS_FAIL_RANK=0
  scenario_cgroup_oom_kill "$@"
}

# A person at a shell, not a launcher: an interactive zsh (on a terminal that `script` records) runs
# train.py as one process, which moves itself into the 256 MiB cgroup and is OOM-killed there. zsh's own
# report of the kill ("zsh: killed     <command>") and the kernel's lines are the windows.
scenario_zsh_oom_kill() {
  command -v zsh > /dev/null || { echo "cannot: zsh is missing (Debian: apt-get install zsh)"; return 77; }
  command -v script > /dev/null || { echo "cannot: script is missing (util-linux)"; return 77; }
  script -q -e -c true /dev/null > /dev/null 2>&1 || { echo "cannot: script cannot open a terminal here (no pty)"; return 77; }
  cg=$(make_memcg) || { echo "$no_memcg"; return 77; }
  before=$(kernel_stamp)
  # "; :" keeps zsh from exec-ing the command (it then waits for the job and reports how it ended)
  REALJOBS_CGROUP=$cg REALJOBS_FAIL_RANK=0 RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=$(free_port) timeout 120 script -q -e -c "zsh -f -i -c '$PY $here/train.py cgroup_oom_kill; :'" \
    "$1/terminal.log" > /dev/null 2>&1
  echo "script exit $?" > "$1/exit-status"
  sleep 1
  keep_kernel_lines "$1" "$2" "$cg" "$before"
  rmdir "$cg" 2>/dev/null || true
}

# A job of two nodes whose second node never starts: torchrun on the one node waits for it at the
# rendezvous, with short timeouts so the job fails in seconds. With c10d's dynamic rendezvous the agent
# gives up after join_timeout (RendezvousTimeoutError); with the static one (--master_addr, the default)
# node 1 waits for node 0's store, which is never started, and its client socket times out.
rendezvous_job() {
  out=$1; shift
  REALJOBS_OUT=$out timeout 120 "$TORCHRUN" --nnodes 2 --nproc_per_node 2 "$@" --redirects 1 --tee 2 \
    --log_dir "$out/logs" "$here/train.py" none > "$out/torchrun.out" 2>&1
  echo "torchrun exit $?" > "$out/exit-status"
}

scenario_rendezvous_timeout() {      # node 0 of 2 (c10d rendezvous); node 1 never joins
  rendezvous_job "$1" --rdzv_backend c10d --rdzv_endpoint "127.0.0.1:$(free_port)" --rdzv_id realjobs \
    --rdzv_conf join_timeout=5,last_call_timeout=1
}

scenario_rendezvous_static_timeout() { # node 1 of 2 (static rendezvous); node 0, the store's host, never starts
  rendezvous_job "$1" --node_rank 1 --master_addr 127.0.0.1 --master_port "$(free_port)" --rdzv_conf timeout=5
}

# Node 0 of 2 on the static rendezvous; node 1 never starts. The store's timeout in --rdzv_conf does not
# bound the agent's wait for node 1's key: it gives up after TCPStore's default 300 s with a bare
# `RuntimeError: Socket Timeout` out of _rendezvous (_assign_worker_ranks, store.get). Five minutes:
# not in the default set; run it by name (run.sh --live rendezvous_master_timeout).
scenario_rendezvous_master_timeout() {
  rendezvous_job "$1" --node_rank 0 --master_addr 127.0.0.1 --master_port "$(free_port)" --rdzv_conf timeout=5
}

SCENARIOS="backward_host_oom launcher_error_file dataloader_memory_error dataloader_bus_error segfault_optimizer gloo_timeout
checkpoint_disk_full cgroup_oom_kill dataloader_semlock_shm_full zsh_oom_kill rendezvous_timeout rendezvous_static_timeout
cgroup_oom_kill_rank0 checkpoint_disk_full_legacy checkpoint_readonly
native_abort_forward attempts_appended"
