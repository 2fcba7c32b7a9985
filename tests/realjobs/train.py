"""A tiny data-parallel training job (CPU, gloo) that fails on purpose in one known way.

Run it under torchrun; the first argument names the failure (see FAILURES). Each failure is made the way it
happens in real jobs - a real allocation failure, a real signal, a real timeout - never by printing the
message. tests/realjobs/run.sh drives it; fixtures/realjobs/*/README.md say what each run left.
"""
import ctypes
import datetime
import faulthandler
import os
import resource
import subprocess
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.utils.data import DataLoader, Dataset

FAILURES = ("backward_host_oom", "dataloader_memory_error", "dataloader_bus_error", "segfault_optimizer",
            "gloo_timeout", "checkpoint_disk_full", "cgroup_oom_kill", "dataloader_semlock_shm_full", "none",
            "checkpoint_disk_full_legacy", "checkpoint_readonly", "native_abort_forward", "attempts")

RANK = int(os.environ.get("RANK", "0"))
FAIL_RANK = int(os.environ.get("REALJOBS_FAIL_RANK", "1"))


def log(msg):
    print(f"[rank{RANK}] {msg}", flush=True)


class Samples(Dataset):
    """Random samples; `payload` floats ride along so a batch crosses shared memory at a chosen size."""

    def __init__(self, n=64, payload=0, fail_in_worker=False):
        self.n, self.payload, self.fail_in_worker = n, payload, fail_in_worker

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.fail_in_worker and i >= 8:
            # a decode buffer far larger than the worker's address-space limit: a real MemoryError
            buf = bytearray(512 << 20)
            del buf
        x = torch.randn(16)
        extra = torch.zeros(self.payload) if self.payload else torch.zeros(1)
        return x, x.sum(dim=0, keepdim=True), extra


def limit_address_space(pid, extra_bytes):
    """prlimit --as on one process only: its current size plus a margin, so later big allocations fail."""
    with open(f"/proc/{pid}/status") as f:
        vm = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))
    lim = vm + extra_bytes
    subprocess.run(["prlimit", f"--pid={pid}", f"--as={lim}:{lim}"], check=True)
    return lim


def worker_limit(_worker_id):
    limit_address_space(os.getpid(), 64 << 20)


class SGDWithNativeHook(torch.optim.SGD):
    """An optimizer whose step calls into native code that dereferences NULL: a real SIGSEGV mid-step."""

    def step(self, closure=None):
        loss = super().step(closure)
        if RANK == FAIL_RANK:
            ctypes.string_at(0)  # reads address 0: SIGSEGV inside the optimizer step
        return loss


def fill_dev_shm():
    """Fill /dev/shm to its last byte, as another job's leftovers fill a shared node's."""
    fd = os.open("/dev/shm/realjobs-leftover", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"\0" * 65536):
            pass
    except OSError:
        log("the leftovers fill /dev/shm")  # (not the error's text: this job's log must not print its failure)
    finally:
        os.close(fd)


def fill_cgroup_memory():
    """Move this rank into the memory cgroup the harness made, then touch memory until the kernel kills it."""
    cg = os.environ["REALJOBS_CGROUP"]
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))
    hog = []
    for _ in range(64):  # bounded (2 GiB): a cgroup that does not enforce its limit must not take the host
        hog.append(torch.ones(8 << 20))  # 32 MiB of touched pages at a time
    sys.exit("the memory cgroup's limit was not enforced")


def save_checkpoint(model, opt, step, failure):
    """Rank 0 saves a 4 MiB state into REALJOBS_CKPT_DIR: a full disk, or a folder mounted read-only."""
    path = os.path.join(os.environ["REALJOBS_CKPT_DIR"], f"step{step}.pt")
    log(f"saving checkpoint {path}")
    big = {"model": model.state_dict(), "optimizer": opt.state_dict(),
           "ema": torch.randn(1 << 20)}  # 4 MiB: more than the checkpoint disk holds
    # the legacy (pre-1.6) writer, which some code still asks for: it writes through the file's fd
    torch.save(big, path, _use_new_zipfile_serialization=(failure != "checkpoint_disk_full_legacy"))


class NativeOpModel(torch.nn.Module):
    """A model whose forward calls a custom native op (REALJOBS_NATIVE_OP, built from native_op.c), as
    a C extension's op is called; at step 2 rank FAIL_RANK passes it a size its assert() rejects."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.op = ctypes.CDLL(os.environ["REALJOBS_NATIVE_OP"])
        self.step = 0

    def forward(self, x):
        n = 0 if (RANK == FAIL_RANK and self.step == 2) else x.shape[0]
        self.step += 1
        self.op.realjobs_scale(n)
        return self.inner(x)


@record
def main():
    failure = sys.argv[1] if len(sys.argv) > 1 else "none"
    if failure not in FAILURES:
        sys.exit(f"unknown failure {failure!r}; one of {', '.join(FAILURES)}")
    if failure == "attempts":
        # torchrun --max_restarts 1: the first attempt runs out of host memory in backward, the restarted
        # one (TORCHELASTIC_RESTART_COUNT=1) segfaults in its optimizer step; both print to one console
        attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
        failure = "backward_host_oom" if attempt == 0 else "segfault_optimizer"
        log(f"attempt {attempt}: {failure}")
    timeout = datetime.timedelta(seconds=int(os.environ.get("REALJOBS_GLOO_TIMEOUT", "30")))
    dist.init_process_group("gloo", timeout=timeout)
    world = dist.get_world_size()
    torch.manual_seed(RANK)
    if failure == "segfault_optimizer" and RANK == FAIL_RANK:
        # faulthandler to stderr and to its own file at once: a tee child copies the dump to both
        path = os.path.join(os.environ.get("REALJOBS_OUT", "."), f"faulthandler.rank{RANK}.log")
        tee = subprocess.Popen(["tee", "-a", path], stdin=subprocess.PIPE, stdout=sys.stderr)
        faulthandler.enable(file=tee.stdin, all_threads=True)

    model = torch.nn.Sequential(torch.nn.Linear(16, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
    if failure == "native_abort_forward":
        faulthandler.enable(all_threads=True)  # the job's own choice: its stack goes to stderr
        model = NativeOpModel(model)
    model = torch.nn.parallel.DistributedDataParallel(model)
    opt_cls = SGDWithNativeHook if failure == "segfault_optimizer" else torch.optim.SGD
    opt = opt_cls(model.parameters(), lr=0.01)

    loader_kw = {}
    if failure == "dataloader_memory_error":
        loader_kw = dict(num_workers=1, worker_init_fn=worker_limit)
        data = Samples(fail_in_worker=(RANK == FAIL_RANK))
    elif failure == "dataloader_bus_error":
        # only rank 1 uses workers, so one rank fails (both share the small /dev/shm)
        loader_kw = dict(num_workers=2) if RANK == FAIL_RANK else {}
        data = Samples(payload=(1 << 20) // 4)  # 1 MiB per sample: more than /dev/shm holds
    elif failure == "dataloader_semlock_shm_full":
        # rank 1 starts two workers in a /dev/shm that is already full: the queues DataLoader makes for
        # them need a semaphore each, and a POSIX semaphore is a file in /dev/shm
        loader_kw = dict(num_workers=2) if RANK == FAIL_RANK else {}
        if RANK == FAIL_RANK:
            fill_dev_shm()
        data = Samples()
    else:
        data = Samples()
    loader = DataLoader(data, batch_size=4, **loader_kw)
    log(f"world {world}, failure {failure}")

    for step, (x, y, _extra) in enumerate(loader):
        if failure == "gloo_timeout" and RANK == FAIL_RANK and step == 2:
            log("stalling before the gradient all-reduce")
            time.sleep(3600)
        if failure == "cgroup_oom_kill" and RANK == FAIL_RANK and step == 2:
            fill_cgroup_memory()
        opt.zero_grad()
        out = model(x)
        if failure == "backward_host_oom" and step == 2:
            # a wide activation whose gradient needs far more than the rank may map
            out = out.expand(x.shape[0], 1 << 24).contiguous() if RANK == FAIL_RANK else out
        loss = torch.nn.functional.mse_loss(out, y.expand_as(out))
        if failure == "backward_host_oom" and step == 2 and RANK == FAIL_RANK:
            limit_address_space(os.getpid(), 64 << 20)
        loss.backward()
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")
        if failure.startswith("checkpoint_") and step == 2:
            if RANK == 0:
                save_checkpoint(model, opt, step, failure)
            dist.barrier()
        if step == 5:
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
