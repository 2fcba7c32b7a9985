/* taxonomy.h - the vocabulary of findings (shared/spec/taxonomy.md) as enums with their exact names.
 * Ownership: all strings are static. */
#ifndef OOMSCAN_TAXONOMY_H
#define OOMSCAN_TAXONOMY_H

typedef enum {
    CLS_CUDA_OOM, CLS_KV_CACHE_OOM, CLS_ILLEGAL_MEMORY_ACCESS, CLS_DEVICE_ASSERT, CLS_HOST_OOM_KILL,
    CLS_HOST_MEMORY_ERROR, CLS_SHM_EXHAUSTED, CLS_NCCL_ERROR, CLS_NCCL_TIMEOUT, CLS_GPU_HARDWARE,
    CLS_SEGFAULT, CLS_TIME_LIMIT, CLS_CHILD_FAILED,
    CLS_DISK_FULL, /* added here (docs/taxonomy.md): not in shared/spec/taxonomy.md */
    CLS__COUNT
} tax_class;

typedef enum {
    PH_MODEL_INIT, PH_ROLLOUT, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER_STEP, PH_LOG_PROBS, PH_WEIGHT_SYNC,
    PH_CHECKPOINT, PH_DATA_LOADING, PH_COMMUNICATION, PH_UNKNOWN,
    PH__COUNT
} tax_phase;

typedef enum {
    FW_VERL, FW_AREAL, FW_RELAX, FW_OPENRLHF, FW_SLIME, FW_TRL, FW_DEEPSPEED, FW_MEGATRON, FW_VLLM,
    FW_SGLANG, FW_PYTORCH, FW_JAX, FW_TENSORFLOW, FW_UNKNOWN, FW_NEMO_RL, FW_SKYRL,
    FW__COUNT
} tax_framework;

/* Name <-> enum. *_from_name returns -1 for an unknown name. */
const char *tax_class_name(tax_class c);
int tax_class_from_name(const char *name);
const char *tax_phase_name(tax_phase p);
int tax_phase_from_name(const char *name);
const char *tax_framework_name(tax_framework f);
int tax_framework_from_name(const char *name);

/* A short human description of a class ("GPU out of memory") and of a phase ("backward pass"). */
const char *tax_class_human(tax_class c);
const char *tax_phase_human(tax_phase p);

/* Classes that are usually echoes of a failure elsewhere (NCCL timeouts and errors, a supervisor's
 * report of a dead child, crashes after an abort): consequences when an earlier cause exists. */
int tax_class_is_echo(tax_class c);

/* RL frameworks outrank the engines and libraries they drive when several are detected. Higher wins. */
int tax_framework_rank(tax_framework f);

#endif
