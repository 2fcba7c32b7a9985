/* values.h - turning captured text into typed values: sizes with units into bytes, integers, numbers.
 * Ownership: functions return new cJSON items owned by the caller (or NULL when out of memory). */
#ifndef OOMSCAN_VALUES_H
#define OOMSCAN_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Parse a size such as "20.00 MiB", "1.5GB", "0 bytes", "512 KiB", "4kB", "123" into bytes.
 * KB/MB/GB/TB and KiB/... are powers of 1024, as PyTorch, the kernel and Slurm mean them.
 * `default_unit` (may be NULL) applies when the text has no unit. Returns 0 on success. */
int values_parse_size(const char *s, size_t n, const char *default_unit, double *bytes);

/* Convert capture `name` = text[0..n) into a JSON value by the naming rules of docs/data-formats.md:
 * `*_bytes` -> integer bytes, plain integer -> integer, decimal -> number, else string.
 * `unit` is the pattern's declared unit for this capture or NULL. */
cJSON *values_convert(const char *name, const char *text, size_t n, const char *unit);

/* Read a CUDA out-of-memory message clause by clause into `memory`, adding only the keys the
 * pattern's captures did not give: requested, GPU index (absent when printed empty), total, free,
 * any number of "Process N has X memory in use" (other_processes, only when no capture gave them),
 * this process's in-use, allocated, reserved and reserved-unallocated, in any order and whatever the
 * PyTorch version, across hard-wrapped text (whitespace inside a phrase is ignored). A figure of
 * 1 PiB or more is kept as printed, as a string, with its key in memory.absurd. */
void values_cuda_oom_clauses(const char *text, size_t n, cJSON *memory);

/* Format bytes for people: "12.8 GiB", "512 MiB", "0 B". `buf` gets at most `cap` bytes. */
void values_human_bytes(double bytes, char *buf, size_t cap);

#endif
