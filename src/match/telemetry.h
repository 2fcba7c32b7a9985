/* telemetry.h - the memory figures a training job prints about itself, read as series.
 *
 * Lines of four stacks are read, each found by a literal through the scanner's prefilter
 * (PDB_TELEMETRY_LITERALS, LIT_TELEMETRY targets: a log without them costs nothing more):
 *   verl      "step:N - ... - perf/max_memory_allocated_gb:X - perf/max_memory_reserved_gb:X -
 *             perf/cpu_memory_used_gb:X ..." (verl's workers: torch.cuda.max_memory_allocated() /
 *             1024**3, so GiB)
 *   DeepSpeed see_memory_usage: "MA X GB  Max_MA X GB  CA X GB  Max_CA X GB" and
 *             "CPU Virtual Memory:  used = X GB, percent = P%" (deepspeed/runtime/utils.py: / 1024**3)
 *   Megatron  "[Rank R] (after N iterations) memory (MB) | allocated: X | max allocated: X |
 *             reserved: X | max reserved: X" (megatron/training/utils.py report_memory: / 1024**2)
 *   slime     "[Rank R] Memory-Usage MSG: {'gpu': ..., 'allocated_GB': X, 'reserved_GB': X, ...,
 *             'host_used_GB': X, ...}" and "[Rank R] Peak-Memory PHASE: max_allocated_GB=X,
 *             max_reserved_GB=X" (slime/utils/memory_utils.py print_memory, report_peak_memory: GiB)
 * A line gives samples: a metric, the step it states (verl's step, Megatron's iterations; DeepSpeed
 * states none, so its lines are numbered in order), a value in bytes, and the rank when the line says.
 *
 * The samples of one job are kept as series in that job's settings store (config.h, as versions are),
 * one entry per metric and rank, so that jobs scanned together never share a series; the last
 * TELEMETRY_POINTS points of each are kept. telemetry_trend() reads a series back and says whether it
 * climbed before the failure.
 *
 * Ownership: nothing is kept between calls; telemetry_trend() gives the caller a new tree. */
#ifndef OOMSCAN_TELEMETRY_H
#define OOMSCAN_TELEMETRY_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

struct config_store;
struct config_view;

#define TELEMETRY_POINTS 256

typedef struct {
    const char *metric; /* static: "gpu_max_allocated", "gpu_max_reserved", "gpu_allocated", "gpu_reserved", "host_used" */
    double x;           /* the step the line states, or -1: number it in order */
    double bytes;
    char rank[16];      /* "" when the line does not say */
} telemetry_sample;

/* The samples line s[0..n) states, into out[0..max): how many (0: not a memory line). */
size_t telemetry_parse(const char *s, size_t n, telemetry_sample *out, size_t max);

/* Read line s[0..n) (its rank from the source when the line names none: `rank`, may be "") into the
 * store of job `job` at once. 0, -1 out of memory. Each call rewrites the series (up to
 * TELEMETRY_POINTS points): for a few lines; a scan gathers a source's lines in a telemetry_acc. */
int telemetry_capture(struct config_store **st, const char *s, size_t n, const char *job, const char *rank,
                      const char *file, uint64_t line);

/* A source's series, gathered line by line in constant time each (the last TELEMETRY_POINTS points
 * of each series, in a ring) and written into the job's store once, when the source ends: a log that
 * prints a memory line every step must cost no more to scan than one that does not. */
typedef struct telemetry_acc telemetry_acc;
telemetry_acc *telemetry_acc_new(void);
void telemetry_acc_free(telemetry_acc *a);
/* Forget what was gathered (a new source). */
void telemetry_acc_reset(telemetry_acc *a);
/* Line s[0..n) of the source; rank as telemetry_capture. 0, -1 out of memory. */
int telemetry_acc_line(telemetry_acc *a, const char *s, size_t n, const char *rank, uint64_t line);
/* Nonzero when something was gathered since the last reset. */
int telemetry_acc_any(const telemetry_acc *a);
/* Write the gathered series into the store of job `job` (after the points an earlier source of the job
 * left there), then reset. 0, -1 out of memory. */
int telemetry_acc_flush(telemetry_acc *a, struct config_store **st, const char *job, const char *file);

/* The trend of job `job` for a failure of rank `rank` ("" any): the series of the metric that fits the
 * failure (`host`: host memory, else the GPU's, its peak allocated first), of that rank when one
 * exists, else of the first rank with one. {"metric", "unit": "bytes", "rank", "points": [[x, v]...],
 * "slope_per_step", "verdict": "growth"|"flat", "first", "last", "steps"}; NULL when there is no series
 * of 3 points or more (or out of memory). */
cJSON *telemetry_trend(const struct config_view *cfg, const char *job, const char *rank, int host);

#endif
