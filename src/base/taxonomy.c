/* taxonomy.c - names from shared/spec/taxonomy.md, exactly, and the ones added by this project after
 * them (docs/taxonomy.md lists each addition and why). */
#include "base/taxonomy.h"

#include <string.h>

static const char *const class_names[CLS__COUNT] = {
    "cuda_oom", "kv_cache_oom", "illegal_memory_access", "device_assert", "host_oom_kill",
    "host_memory_error", "shm_exhausted", "nccl_error", "nccl_timeout", "gpu_hardware",
    "segfault", "time_limit", "child_failed", "disk_full",
};
static const char *const class_human[CLS__COUNT] = {
    "GPU out of memory", "inference engine KV cache out of memory", "illegal GPU memory access",
    "device-side assertion", "process killed for host memory", "host memory allocation failed",
    "shared memory (/dev/shm) exhausted", "NCCL error", "NCCL collective timeout", "GPU hardware fault",
    "process crashed on a signal", "job hit its time limit", "a worker process died",
    "disk full (no space left to write)",
};
static const char *const phase_names[PH__COUNT] = {
    "model_init", "rollout", "forward", "backward", "optimizer_step", "log_probs", "weight_sync",
    "checkpoint", "data_loading", "communication", "unknown",
};
static const char *const phase_human[PH__COUNT] = {
    "model initialisation", "rollout generation", "the training forward pass", "the backward pass",
    "the optimizer step", "log-prob computation", "weight sync to the inference engine",
    "checkpointing", "data loading", "a collective", "an unknown phase",
};
static const char *const fw_names[FW__COUNT] = {
    "verl", "areal", "relax", "openrlhf", "slime", "trl", "deepspeed", "megatron", "vllm",
    "sglang", "pytorch", "jax", "tensorflow", "unknown", "nemo_rl", "skyrl", /* added after unknown: docs/taxonomy.md */
};

static int lookup(const char *const *names, int n, const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

const char *tax_class_name(tax_class c) { return (unsigned)c < CLS__COUNT ? class_names[c] : "unknown"; }
int tax_class_from_name(const char *name) { return lookup(class_names, CLS__COUNT, name); }
const char *tax_phase_name(tax_phase p) { return (unsigned)p < PH__COUNT ? phase_names[p] : "unknown"; }
int tax_phase_from_name(const char *name) { return lookup(phase_names, PH__COUNT, name); }
const char *tax_framework_name(tax_framework f) { return (unsigned)f < FW__COUNT ? fw_names[f] : "unknown"; }
int tax_framework_from_name(const char *name) { return lookup(fw_names, FW__COUNT, name); }
const char *tax_class_human(tax_class c) { return (unsigned)c < CLS__COUNT ? class_human[c] : "failure"; }
const char *tax_phase_human(tax_phase p) { return (unsigned)p < PH__COUNT ? phase_human[p] : "an unknown phase"; }

int tax_class_is_echo(tax_class c)
{
    return c == CLS_NCCL_TIMEOUT || c == CLS_NCCL_ERROR || c == CLS_CHILD_FAILED || c == CLS_SEGFAULT;
}

int tax_framework_rank(tax_framework f)
{
    switch (f) {
    case FW_VERL: case FW_AREAL: case FW_RELAX: case FW_OPENRLHF: case FW_SLIME: case FW_TRL: case FW_NEMO_RL: case FW_SKYRL:
        return 4;
    case FW_DEEPSPEED: case FW_MEGATRON:
        return 3;
    case FW_VLLM: case FW_SGLANG:
        return 2;
    case FW_PYTORCH: case FW_JAX: case FW_TENSORFLOW:
        return 1;
    default:
        return 0;
    }
}
